import { SELF } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { idempotencyKey } from "../../src/index.js";
import type { CallAnswer, CallRequest } from "./worker.js";

// One D1 table per run, shared by the invocations of a test as they would share env.DB.
const table = `race_${crypto.randomUUID().replaceAll("-", "")}`;
const effects = () => env.EFFECTS.get(env.EFFECTS.idFromName("effects"));

/** One invocation of the Worker's fetch handler, through workerd's own request path. */
async function invoke(request: CallRequest): Promise<{ status: number; body: CallAnswer }> {
  const response = await SELF.fetch("https://worker.test/call", {
    method: "POST",
    body: JSON.stringify(request),
  });
  return { status: response.status, body: (await response.json()) as CallAnswer };
}

describe("two Worker invocations on one key, with d1Store", () => {
  it("give one effect: one runs it, the other waits for it and replays its result", async () => {
    const task = `race-${crypto.randomUUID()}`;
    const args = { cents: 500 };
    const key = idempotencyKey(task, "charge", args);
    const both = Promise.all([
      invoke({ task, args, table, mode: "race" }),
      invoke({ task, args, table, mode: "race" }),
    ]);
    // One holds the key with its effect not yet answered; the other has found it held and waits.
    await effects().untilWaiting(key);
    expect(await effects().count(key)).toBe(1);
    await effects().release(key);
    const [a, b] = await both;
    expect([a.status, b.status]).toEqual([200, 200]);
    expect(await effects().count(key)).toBe(1);
    const value = { charged: 500, key };
    expect([a.body, b.body]).toEqual(
      expect.arrayContaining([
        { value, replayed: false },
        { value, replayed: true },
      ]),
    );
  });

  it("after an invocation died past its effect: the next does not repeat it, and says the outcome is unknown", async () => {
    const task = `crash-${crypto.randomUUID()}`;
    const args = { cents: 7 };
    const key = idempotencyKey(task, "email", args);
    expect((await invoke({ task, args, table, mode: "crash" })).status).toBe(200);
    expect(await effects().count(key)).toBe(1);
    // Five seconds on, the 1 s lease has lapsed: the next invocation takes the key over and finds the attempt
    // started, so it may have happened; an unguarded tool is never run again on a guess.
    for (const laterMs of [5_000, 10_000]) {
      const next = await invoke({ task, args, table, mode: "after", laterMs });
      expect(next.status).toBe(409);
      expect(next.body).toMatchObject({ error: "OutcomeUnknownError" });
    }
    expect(await effects().count(key)).toBe(1);
  });
});
