import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { idempotentFetch } from "../../src/fetch/index.js";
import { createHarness, defineTool } from "../../src/harness/index.js";
import { idempotencyKey } from "../../src/key/index.js";
import { sqliteStore } from "../../src/sqlite/index.js";
import { memoryStore } from "../../src/store/memory.js";
import type { Store } from "../../src/store/types.js";
import { type Fault, type LoopbackOwner, loopbackOwner } from "./loopback.js";

type ChargeArgs = { amount: number; currency: string };

let owner: LoopbackOwner | undefined;
let ownerStore: Store | undefined;
let dir: string | undefined;
afterEach(async () => {
  await owner?.close();
  await ownerStore?.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
  owner = ownerStore = dir = undefined;
});

async function start(fault: (attempt: number) => Fault): Promise<LoopbackOwner> {
  dir = mkdtempSync(join(tmpdir(), "idemkey-e2e-"));
  ownerStore = sqliteStore(join(dir, "owner.db"));
  owner = await loopbackOwner(ownerStore, (attempt) => fault(attempt));
  return owner;
}

const chargeTool = (url: string) =>
  defineTool({
    name: "createCharge",
    effect: "keyed",
    run: async (args: ChargeArgs, ctx) =>
      (await (await idempotentFetch(`${url}/charges`, { method: "POST", body: args }, ctx)).json()) as {
        id: string;
      },
  });

const harnessOptions = { retry: { minDelayMs: 10, maxDelayMs: 50, jitter: false } };

describe("end to end: a keyed harness tool, idempotentFetch and the Express middleware over loopback", () => {
  it("takes effect once when the response is lost after the owner ran the effect, and the harness retries", async () => {
    const { url, log } = await start((attempt) => (attempt === 1 ? "drop-after-effect" : undefined));
    const harness = createHarness({ store: memoryStore(), ...harnessOptions });
    const args = { amount: 2500, currency: "eur" };

    const result = await harness.call("task-1", chargeTool(url), args);

    // idempotentFetch sends the draft's sf-string form; the log keeps the field as it came.
    const key = `"${idempotencyKey("task-1", "createCharge", args)}"`;
    // The first answer never left (its socket was destroyed); the retry got the saved response.
    expect(log.attempts).toEqual([
      { key, path: "/charges" },
      { key, path: "/charges", status: 200, replayed: true },
    ]);
    expect(log.effects).toEqual([{ key, body: args }]);
    expect(result).toMatchObject({ id: "ch_1", amount: 2500 });
  });

  it("replays to a second harness that lost its ledger (a crash before it recorded the result)", async () => {
    const { url, log } = await start((attempt) => (attempt === 1 ? "drop-after-effect" : undefined));
    const args = { amount: 100, currency: "usd" };
    const crashed = createHarness({ store: memoryStore(), retry: { retries: 0 } });
    await expect(crashed.call("task-2", chargeTool(url), args)).rejects.toThrow();
    expect(log.effects).toHaveLength(1);

    const restarted = createHarness({ store: memoryStore(), ...harnessOptions });
    expect(await restarted.call("task-2", chargeTool(url), args)).toMatchObject({ id: "ch_1" });
    expect(log.effects).toHaveLength(1);
    expect(log.attempts).toHaveLength(2);
  });

  it("retries through an outage and a failing handler, then waits out an in-flight duplicate", async () => {
    const faults: Fault[] = ["unavailable", "throw", "slow"];
    const { url, log } = await start((attempt) => faults[attempt - 1]);
    const harness = createHarness({ store: memoryStore(), ...harnessOptions });
    const tool = chargeTool(url);
    const args = { amount: 7, currency: "eur" };
    // The third attempt is held in the handler; a second harness call with the same task (another process, its own
    // ledger) hits the owner meanwhile and gets 409 until the first is done, then the replay.
    const first = harness.call("task-3", tool, args);
    while (log.attempts.length < 3) await new Promise((resolve) => setTimeout(resolve, 5));
    const other = createHarness({ store: memoryStore(), ...harnessOptions });
    const [a, b] = await Promise.all([first, other.call("task-3", tool, args)]);
    expect(a).toEqual(b);
    expect(log.effects).toHaveLength(1);
    expect(log.attempts.map((x) => x.status)).toEqual([503, 500, 200, 409, 200]);
    expect(log.attempts.map((x) => x.replayed)).toEqual([false, false, false, false, true]);
    expect(new Set(log.attempts.map((x) => x.key)).size).toBe(1);
  });
});
