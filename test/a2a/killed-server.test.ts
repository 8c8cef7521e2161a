import { type ChildProcessWithoutNullStreams, spawn } from "node:child_process";
import { appendFileSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Task } from "@a2a-js/sdk";
import { afterEach, describe, expect, it } from "vitest";
import { a2aTool, keyedMessage } from "../../src/a2a/index.js";
import { OutcomeUnknownError } from "../../src/errors/outcome-unknown-error.js";
import { createHarness } from "../../src/harness/create-harness.js";
import { sqliteStore } from "../../src/sqlite/index.js";
import { faultProxy } from "../support/fault-proxy.js";
import { freePort } from "../support/free-port.js";
import { lineReader } from "../support/lines.js";
import { tsChildArgs } from "../support/ts-child.js";
import { bookings, bookingText, clientFor } from "./support.js";

const child = new URL("./fixtures/agent-child.ts", import.meta.url);
const LEASE_MS = 300;

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

function files() {
  const dir = mkdtempSync(join(tmpdir(), "idemkey-a2a-kill-"));
  cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
  const effects = join(dir, "bookings.log");
  appendFileSync(effects, "");
  return { db: join(dir, "a2a.db"), effects };
}

/** The agent in a child process on `port`; its stderr kept, and shown only when the test fails. */
async function startChild(db: string, effects: string, port: number, mode: "hold" | "answer") {
  const agent: ChildProcessWithoutNullStreams = spawn(
    process.execPath,
    [...tsChildArgs(child), db, effects, String(port), String(LEASE_MS), mode],
    { stdio: ["pipe", "pipe", "pipe"] },
  );
  let stderr = "";
  agent.stderr.on("data", (chunk) => {
    stderr += String(chunk);
  });
  const exited = new Promise<void>((resolve) => agent.on("exit", () => resolve()));
  const kill = async () => {
    if (agent.exitCode === null && agent.signalCode === null) agent.kill("SIGKILL");
    await exited;
  };
  cleanups.push(kill);
  const next = lineReader(agent.stdout);
  const first = await Promise.race([next(), exited.then(() => `exited: ${stderr}`)]);
  if (first !== "listening") throw new Error(`the agent did not start: ${first}`);
  return { next, kill, stderr: () => stderr };
}

const harness = () => createHarness({ retry: { retries: 0 } });

describe("idemkey/a2a: the agent's process killed (SIGKILL) after the booking, restarted on the same SQLite file", () => {
  it("killed before it answered: the retry is refused as outcome_unknown (OutcomeUnknownError), never run again", async () => {
    const { db, effects } = files();
    const port = await freePort();
    const url = `http://127.0.0.1:${port}/a2a`;
    const first = await startChild(db, effects, port, "hold");
    const book = a2aTool(await clientFor(url), { name: "book", effect: "keyed" });
    const args = { text: "table for two at 8" };
    const key = createHarness().key("trip-k1", book, args);

    // The same message the harness would send, sent once by hand so that its failure is only seen, not retried.
    const sent = (await clientFor(url)).sendMessage({ message: keyedMessage(key, args) } as never);
    const failed = sent.then(
      () => "answered",
      () => "failed",
    );
    expect((await first.next()).startsWith("effect ")).toBe(true);
    await first.kill();
    expect(await failed).toBe("failed");

    await startChild(db, effects, port, "answer");
    const retried = harness().call("trip-k1", book, args);
    await expect(retried).rejects.toBeInstanceOf(OutcomeUnknownError);
    await expect(retried).rejects.toMatchObject({ key });
    expect(bookings(effects)).toHaveLength(1);
  });

  it("killed after it answered, the answer lost on the way: the retry gets the recorded task, one booking", async () => {
    const { db, effects } = files();
    const port = await freePort();
    const first = await startChild(db, effects, port, "answer");
    const proxy = await faultProxy(port);
    cleanups.push(() => proxy.close());
    const url = `http://127.0.0.1:${proxy.port}/a2a`;
    const book = a2aTool(await clientFor(url), { name: "book", effect: "keyed" });
    const args = { text: "table for six" };

    const dropped = proxy.dropNextReply();
    await expect(harness().call("trip-k2", book, args)).rejects.toThrow();
    await dropped;
    // The answer went out (and was lost) as the execution was recorded; wait until the record is on the file.
    const store = sqliteStore(db);
    cleanups.push(() => store.close());
    await expect
      .poll(async () => (await store.list({ prefix: "a2a:" })).map((r) => r.state), { timeout: 10_000 })
      .toEqual(["completed"]);
    await first.kill();

    await startChild(db, effects, port, "answer");
    const task = (await harness().call("trip-k2", book, args)) as Task;
    const made = bookings(effects);
    expect(made).toHaveLength(1);
    expect(bookingText(task)).toBe(`booked ${made[0]?.id}`);
    expect(task.status?.state).toBe(3); // TASK_STATE_COMPLETED
  });
});
