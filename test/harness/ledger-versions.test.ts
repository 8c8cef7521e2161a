import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import {
  canonicalize,
  createHarness,
  defineTool,
  type Harness,
  LedgerStateError,
  memoryStore,
  OutcomeUnknownError,
  type Store,
  WaitTimeoutError,
} from "../../src/index.js";
import { sqliteStore } from "../../src/sqlite/index.js";
import { fakeOwner } from "./support.js";

// A rollout of the ledger format: every process reads v1 and v2, and writes what `ledgerVersion` says. Two harnesses
// on one SQLite file stand for two processes of a fleet; each has a store connection of its own.
const dirs: string[] = [];
const opened: Store[] = [];
afterEach(async () => {
  for (const store of opened.splice(0)) await store.close();
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

function fleet() {
  const dir = mkdtempSync(join(tmpdir(), "idemkey-ledger-versions-"));
  dirs.push(dir);
  const file = join(dir, "ledger.db");
  const owner = fakeOwner();
  // The test reads the raw records through a connection of its own.
  const open = () => {
    const store = sqliteStore(file);
    opened.push(store);
    return store;
  };
  const look = open();
  const process = (ledgerVersion?: 1 | 2): Harness =>
    createHarness({
      store: open(),
      ...(ledgerVersion === undefined ? {} : { ledgerVersion }),
      approvalTimeoutMs: 0,
      retry: { retries: 0 },
    });
  // The owner ignores keys, so any second run of a call shows in its own count as a second effect.
  const book = defineTool({
    name: "book",
    effect: "keyed",
    run: (args: { room: string; note?: string }, ctx) => owner.unguarded(ctx.idempotencyKey, args),
  });
  const transfer = defineTool({
    name: "transfer",
    effect: "keyed",
    requiresApproval: true,
    run: (args: { to: string; cents: number }, ctx) => owner.unguarded(ctx.idempotencyKey, args),
  });
  let mailFails = true;
  const mail = defineTool({
    name: "mail",
    effect: "unguarded",
    run: (args: { to: string }, ctx) => {
      owner.unguarded(ctx.idempotencyKey, args);
      if (mailFails) throw new Error("socket hang up after the request was sent");
      return "sent";
    },
  });
  const raw = async (key: string) => {
    const record = await look.get(`call:${key}`);
    return JSON.parse(record!.data!) as { v: number; args: unknown; events: { type: string }[] };
  };
  return {
    owner,
    process,
    raw,
    book,
    transfer,
    mail,
    stopFailing: () => {
      mailFails = false;
    },
  };
}

describe("a fleet that moves from ledger format v1 to v2", () => {
  it("writes v1 by default, and v1 exactly as before the upgrade", async () => {
    const f = fleet();
    const a = f.process();
    const args = { room: "r1", note: 'say "hi"' };
    await a.call("t", f.book, args);
    const data = await f.raw(a.key("t", f.book, args));
    expect(data.v).toBe(1);
    expect(data.args).toBe('{"note":"say \\"hi\\"","room":"r1"}');
  });

  it("lets a v1 writer and a v2 writer read each other's records, with every effect once", async () => {
    const f = fleet();
    const old = f.process(1);
    const upgraded = f.process(2);

    // A call recorded by the v1 writer replays in the v2 writer, and the other way round.
    const a1 = { room: "r1", note: 'say "hi"' };
    const b1 = { room: "r2" };
    expect(await old.call("t1", f.book, a1)).toEqual({ id: 1 });
    expect(await upgraded.call("t2", f.book, b1)).toEqual({ id: 2 });
    expect((await f.raw(old.key("t1", f.book, a1))).v).toBe(1);
    const v2 = await f.raw(upgraded.key("t2", f.book, b1));
    expect(v2.v).toBe(2);
    // v2 keeps the arguments as JSON, not as a string of JSON.
    expect(v2.args).toEqual({ room: "r2" });
    expect(await upgraded.call("t1", f.book, a1)).toEqual({ id: 1 });
    expect(await old.call("t2", f.book, b1)).toEqual({ id: 2 });
    expect(await old.get(upgraded.key("t2", f.book, b1))).toEqual(
      await upgraded.get(upgraded.key("t2", f.book, b1)),
    );

    // A call parked by the v2 writer is approved by the v1 writer, which writes the record back as v1 (some
    // processes read only v1 while the fleet is configured for it), keeping the audit trail.
    const pay = { to: "acct-1", cents: 500 };
    const payKey = upgraded.key("t3", f.transfer, pay);
    await expect(upgraded.call("t3", f.transfer, pay)).rejects.toBeInstanceOf(WaitTimeoutError);
    expect((await f.raw(payKey)).v).toBe(2);
    await old.approve(payKey, { by: "ana" });
    const approved = await f.raw(payKey);
    expect(approved.v).toBe(1);
    expect(approved.events.map((e) => e.type)).toEqual(["approval_requested", "approved"]);
    expect(await upgraded.call("t3", f.transfer, pay)).toEqual({ id: 3 });
    expect(await old.call("t3", f.transfer, pay)).toEqual({ id: 3 });

    // An unknown outcome marked by the v2 writer is resolved by the v1 writer; both then replay the result.
    const to = { to: "ana@example.com" };
    const mailKey = upgraded.key("t4", f.mail, to);
    await expect(upgraded.call("t4", f.mail, to)).rejects.toBeInstanceOf(OutcomeUnknownError);
    expect((await f.raw(mailKey)).v).toBe(2);
    await expect(old.call("t4", f.mail, to)).rejects.toBeInstanceOf(OutcomeUnknownError);
    const unknown = await old.get(mailKey);
    expect(unknown?.events.map((e) => e.type)).toEqual(["outcome_unknown"]);
    await old.resolve(mailKey, { result: "sent" }, { by: "ops" });
    expect(await upgraded.call("t4", f.mail, to)).toBe("sent");
    expect(await old.call("t4", f.mail, to)).toBe("sent");

    // The owner's own count: four calls, four effects, every replay answered by the ledger.
    expect(f.owner.effects.map((e) => e.args)).toEqual([a1, b1, pay, to]);

    // Then every process on v2: the records of both formats still replay, and a v1 record that changes is
    // written as v2.
    const next = [f.process(2), f.process(2)] as const;
    for (const h of next) {
      expect(await h.call("t1", f.book, a1)).toEqual({ id: 1 });
      expect(await h.call("t2", f.book, b1)).toEqual({ id: 2 });
      expect(await h.call("t3", f.transfer, pay)).toEqual({ id: 3 });
      expect(await h.call("t4", f.mail, to)).toBe("sent");
    }
    const late = { to: "acct-2", cents: 700 };
    const lateKey = old.key("t5", f.transfer, late);
    await expect(old.call("t5", f.transfer, late)).rejects.toBeInstanceOf(WaitTimeoutError);
    expect((await f.raw(lateKey)).v).toBe(1);
    await next[0].deny(lateKey, "over the limit");
    const denied = await f.raw(lateKey);
    expect(denied.v).toBe(2);
    expect(denied.events.map((e) => e.type)).toEqual(["approval_requested", "denied"]);
    await expect(next[1].call("t5", f.transfer, late)).rejects.toThrow("over the limit");
    f.stopFailing();
    const again = { to: "bo@example.com" };
    expect(await next[1].call("t6", f.mail, again)).toBe("sent");
    expect(await next[0].call("t6", f.mail, again)).toBe("sent");
    expect(f.owner.effects.map((e) => e.args)).toEqual([a1, b1, pay, to, again]);
    expect(f.owner.requests).toHaveLength(5);
  });

  it("keeps the arguments' canonical text through v2 and back to v1, where JSON.stringify would reorder them", async () => {
    const store = memoryStore();
    const upgraded = createHarness({ store, ledgerVersion: 2, approvalTimeoutMs: 0 });
    const old = createHarness({ store, ledgerVersion: 1, approvalTimeoutMs: 0 });
    const tool = defineTool({ name: "put", effect: "keyed", requiresApproval: true, run: () => "ok" });
    // Integer-like names come first in a JS object, so JSON.stringify writes "9" before "10"; RFC 8785 sorts "10"
    // first. A format that lost the canonical text would record other arguments than the key was derived from.
    const args = { 9: "nine", 10: "ten", b: [1.5, "\u2028", { "": null }], a: 1e21 };
    const key = upgraded.key("t", tool, args);
    await expect(upgraded.call("t", tool, args)).rejects.toBeInstanceOf(WaitTimeoutError);
    await old.approve(key);
    const record = await store.get(`call:${key}`);
    const data = JSON.parse(record!.data!) as { v: number; args: string };
    expect(data.v).toBe(1);
    expect(data.args).toBe(canonicalize(args));
    expect(JSON.stringify(args)).not.toBe(canonicalize(args));
    expect((await upgraded.get(key))?.args).toEqual(args);
  });
});

describe("a takeover across formats", () => {
  it("takes over the claim of a process that died writing the other format, once, and records it", async () => {
    for (const [dead, taker] of [
      [1, 2],
      [2, 1],
    ] as const) {
      let now = 1_800_000_000_000;
      const clock = () => now;
      const store = memoryStore({ clock });
      const owner = fakeOwner();
      const tool = defineTool({
        name: "book",
        effect: "keyed",
        run: (args: { room: string }, ctx) => owner.keyed(ctx.idempotencyKey, args),
      });
      const harness = createHarness({ store, clock, leaseMs: 1_000, ledgerVersion: taker });
      const args = { room: "r1" };
      const key = harness.key("t", tool, args);
      // The dead process had reached the owner with the key before it died.
      owner.keyed(key, args);
      const call = { taskId: "t", tool: "book", effect: "keyed", argsHash: "h", events: [] };
      const data = dead === 1 ? { v: 1, ...call, args: '{"room":"r1"}' } : { v: 2, ...call, args };
      await store.claim(`call:${key}`, {
        fingerprint: key,
        token: "dead",
        leaseMs: 1_000,
        ttlMs: 60_000,
        data: JSON.stringify(data),
      });
      now += 5_000;
      expect(await harness.call("t", tool, args)).toEqual({ id: 1 });
      const after = JSON.parse((await store.get(`call:${key}`))!.data!) as {
        v: number;
        events: { type: string }[];
      };
      expect(after.v).toBe(taker);
      expect(after.events.map((e) => e.type)).toEqual(["taken_over"]);
      expect(owner.effects, `a v${taker} process after a v${dead} one`).toHaveLength(1);
      expect(owner.requests).toHaveLength(2);
    }
  });
});

describe("what each format keeps", () => {
  async function parked(data: object) {
    const store = memoryStore();
    const tool = defineTool({ name: "x", effect: "keyed", requiresApproval: true, run: () => 1 });
    const key = createHarness({ store }).key("t", tool, { n: 1 });
    await store.claim(`call:${key}`, {
      fingerprint: key,
      token: "parked",
      leaseMs: 60_000,
      state: "awaiting_approval",
      ttlMs: 60_000,
      data: JSON.stringify(data),
    });
    return { store, key, tool };
  }

  it("writes back members a newer writer added, in either format", async () => {
    for (const ledgerVersion of [1, 2] as const) {
      const { store, key } = await parked({
        v: 1,
        taskId: "t",
        tool: "x",
        effect: "keyed",
        argsHash: "h",
        args: '{"n":1}',
        events: [],
        origin: { host: "worker-7" },
      });
      await createHarness({ store, ledgerVersion }).approve(key);
      const data = JSON.parse((await store.get(`call:${key}`))!.data!) as Record<string, unknown>;
      expect(data.v).toBe(ledgerVersion);
      expect(data.origin).toEqual({ host: "worker-7" });
    }
  });

  it("reads a v2 record whose members another tool reordered, and runs it with the arguments it recorded", async () => {
    const { store, key, tool } = await parked({
      events: [{ type: "approval_requested", at: 1 }],
      args: { n: 1 },
      argsHash: "h",
      effect: "keyed",
      tool: "x",
      taskId: "t",
      v: 2,
    });
    const harness = createHarness({ store, ledgerVersion: 1 });
    expect(await harness.get(key)).toMatchObject({
      args: { n: 1 },
      events: [{ type: "approval_requested" }],
    });
    await harness.approve(key);
    expect(await harness.call("t", tool, { n: 1 })).toBe(1);
    const data = JSON.parse((await store.get(`call:${key}`))!.data!) as Record<string, unknown>;
    expect(data).toMatchObject({ v: 1, args: '{"n":1}' });
  });
});

describe("ledger records of an unknown format", () => {
  it("throw LedgerStateError naming the versions this idemkey reads, and what to do", async () => {
    const store = memoryStore();
    const harness = createHarness({ store });
    const tool = defineTool({ name: "x", effect: "keyed", run: () => 1 });
    const key = harness.key("t", tool, {});
    await store.claim(`call:${key}`, {
      fingerprint: key,
      token: "newer",
      leaseMs: 60_000,
      ttlMs: 60_000,
      data: JSON.stringify({
        v: 3,
        taskId: "t",
        tool: "x",
        effect: "keyed",
        argsHash: "h",
        args: {},
        events: [],
      }),
    });
    const error = await harness.get(key).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(LedgerStateError);
    expect((error as Error).message).toMatch(/format v3.*reads v1 and v2.*upgrade/);
  });

  it("throw LedgerStateError on a replay of a completed record whose data is in a newer format or unreadable", async () => {
    const store = memoryStore();
    const harness = createHarness({ store });
    const tool = defineTool({ name: "x", effect: "keyed", run: () => 1 });
    expect(await harness.call("t", tool, { n: 1 })).toBe(1);
    expect(await harness.call("t", tool, { n: 1 })).toBe(1);
    const stored = `call:${harness.key("t", tool, { n: 1 })}`;
    const newer = JSON.stringify({ ...JSON.parse((await store.get(stored))!.data!), v: 3 });
    await store.update(stored, { state: "completed" }, { data: newer });
    const error = await harness.call("t", tool, { n: 1 }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(LedgerStateError);
    expect((error as Error).message).toMatch(/format v3/);
    await store.update(stored, { state: "completed" }, { data: "{not json" });
    expect(await harness.call("t", tool, { n: 1 }).catch((e: unknown) => e)).toBeInstanceOf(LedgerStateError);
  });

  it("refuse a ledgerVersion other than 1 or 2, naming the option", () => {
    expect(() => createHarness({ ledgerVersion: 3 as 1 })).toThrow(
      new TypeError("options.ledgerVersion must be 1 or 2, got 3"),
    );
  });
});
