import { describe, expect, it } from "vitest";
import { type Command, coalesced } from "../../src/redis/coalesce.js";

/** A client that records what it was sent and answers each command by `answer`, or fails the whole exec. */
function fakeClient(answer: (command: Command) => [Error | null, unknown], execFails?: Error) {
  const pipelines: Command[][] = [];
  const direct: Command[] = [];
  return {
    pipelines,
    direct,
    client: {
      pipeline: (commands: Command[]) => {
        pipelines.push(commands);
        return {
          exec: async () => {
            if (execFails) throw execFails;
            return commands.map(answer);
          },
        };
      },
    },
    send: async (command: Command) => {
      direct.push(command);
      const [error, reply] = answer(command);
      if (error) throw error;
      return reply;
    },
  };
}

const fcall = (key: string): Command => ["fcall", "idemkey_claim", 1, key];

describe("coalesced", () => {
  it("sends the commands of one turn in one pipeline, in order, each settling with its own reply or error", async () => {
    const fake = fakeClient(([, , , key]) =>
      key === "b" ? [new Error("ERR b"), null] : [null, `ok ${key}`],
    );
    const send = coalesced(fake.client, fake.send);
    const results = await Promise.allSettled([send(fcall("a")), send(fcall("b")), send(fcall("c"))]);
    expect(fake.pipelines).toEqual([[fcall("a"), fcall("b"), fcall("c")]]);
    expect(fake.direct).toEqual([]);
    expect(results).toEqual([
      { status: "fulfilled", value: "ok a" },
      { status: "rejected", reason: new Error("ERR b") },
      { status: "fulfilled", value: "ok c" },
    ]);
  });

  it("sends a lone command directly, and the next turn's commands in a pipeline of their own", async () => {
    const fake = fakeClient(([, , , key]) => [null, key]);
    const send = coalesced(fake.client, fake.send);
    expect(await send(fcall("a"))).toBe("a");
    expect(await Promise.all([send(fcall("b")), send(fcall("c"))])).toEqual(["b", "c"]);
    expect(fake.direct).toEqual([fcall("a")]);
    expect(fake.pipelines).toEqual([[fcall("b"), fcall("c")]]);
  });

  it("rejects every command of a pipeline whose exec fails (a connection lost), each sent once", async () => {
    const lost = new Error("Connection is closed.");
    const fake = fakeClient(() => [null, "never"], lost);
    const send = coalesced(fake.client, fake.send);
    const results = await Promise.allSettled([send(fcall("a")), send(fcall("b"))]);
    expect(results.map((r) => r.status === "rejected" && r.reason)).toEqual([lost, lost]);
    expect(fake.pipelines).toHaveLength(1);
    expect(fake.direct).toEqual([]);
  });
});
