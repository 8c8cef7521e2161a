import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { ClaimInput, Store } from "../../src/store/types.js";

/** A clock the suite moves by hand, so that leases and expiry are tested without sleeping. */
export interface TestClock {
  (): number;
  advance(ms: number): void;
}

export function testClock(start = 1_700_000_000_000): TestClock {
  let now = start;
  const clock = (() => now) as TestClock;
  clock.advance = (ms: number) => {
    now += ms;
  };
  return clock;
}

/** Makes a store on the given clock; each call may share the backing engine, keys are unique per test. */
export type StoreFactory = (clock: TestClock) => Store | Promise<Store>;

/**
 * The one suite every store passes unchanged (memory, SQLite, PostgreSQL, Redis). A store that needs a server
 * passes `skip` with the reason when the server is unreachable outside CI.
 */
export function testStore(name: string, factory: StoreFactory, options: { skip?: string } = {}): void {
  const suite = options.skip ? describe.skip : describe;
  suite(`store contract: ${name}`, () => {
    const clock = testClock();
    let store: Store;
    const key = () => `contract:${randomUUID()}`;
    const claimInput = (overrides: Partial<ClaimInput> = {}): ClaimInput => ({
      fingerprint: "fp-1",
      token: randomUUID(),
      leaseMs: 1_000,
      ttlMs: 60_000,
      ...overrides,
    });

    beforeAll(async () => {
      store = await factory(clock);
    });
    afterAll(async () => {
      await store?.close();
    });

    it("claims a new key once and reports the existing record to the next claimant", async () => {
      const k = key();
      const first = await store.claim(k, claimInput({ data: '{"task":"t"}' }));
      expect(first.status).toBe("claimed");
      expect(first.record).toMatchObject({ key: k, state: "pending", fingerprint: "fp-1", attempts: 0 });
      expect(first.record.data).toBe('{"task":"t"}');
      expect(first.record.leaseUntil).toBe(clock() + 1_000);
      expect(first.record.expiresAt).toBe(clock() + 60_000);
      const second = await store.claim(k, claimInput());
      expect(second.status).toBe("exists");
      expect(second.record.token).toBe(first.record.token);
    });

    it("lets exactly one of many concurrent claims win", async () => {
      const k = key();
      const results = await Promise.all(Array.from({ length: 20 }, () => store.claim(k, claimInput())));
      expect(results.filter((r) => r.status === "claimed")).toHaveLength(1);
      expect(results.filter((r) => r.status === "exists")).toHaveLength(19);
    });

    it("takes over a pending claim whose lease expired, with a new token, once", async () => {
      const k = key();
      const first = await store.claim(k, claimInput());
      clock.advance(999);
      expect((await store.claim(k, claimInput())).status).toBe("exists");
      clock.advance(1);
      const results = await Promise.all([store.claim(k, claimInput()), store.claim(k, claimInput())]);
      const taken = results.filter((r) => r.status === "taken_over");
      expect(taken).toHaveLength(1);
      const takeover = taken[0]!;
      if (takeover.status !== "taken_over") throw new Error("unreachable");
      expect(takeover.previous.token).toBe(first.record.token);
      expect(takeover.record.token).not.toBe(first.record.token);
      expect(takeover.record.leaseUntil).toBe(clock() + 1_000);
      expect(takeover.record.createdAt).toBe(first.record.createdAt);
    });

    it("answers a claim resent with the same token as its first arrival decided (the resend rule)", async () => {
      const fresh = key();
      const input = claimInput();
      expect((await store.claim(fresh, input)).status).toBe("claimed");
      const again = await store.claim(fresh, input);
      expect(again).toMatchObject({ status: "claimed", record: { token: input.token } });

      // A takeover whose reply was lost and resent: still a takeover, with the started mark of the holder it replaced.
      const k = key();
      const first = await store.claim(k, claimInput());
      await store.update(k, { token: first.record.token!, state: "pending" }, { attempts: 1 });
      clock.advance(1_000);
      const taker = claimInput();
      const takeover = await store.claim(k, taker);
      expect(takeover.status).toBe("taken_over");
      clock.advance(10);
      const resent = await store.claim(k, taker);
      expect(resent.status).toBe("taken_over");
      if (resent.status !== "taken_over") throw new Error("unreachable");
      expect(resent.previous.attempts).toBe(1);
      expect(resent.record).toMatchObject({ token: taker.token, state: "pending", attempts: 1 });
      // The resend changed nothing: the lease is the one the takeover set.
      expect(resent.record.leaseUntil).toBe(takeover.record.leaseUntil);
    });

    it("never takes over a pending claim for another fingerprint", async () => {
      const k = key();
      await store.claim(k, claimInput());
      clock.advance(5_000);
      const other = await store.claim(k, claimInput({ fingerprint: "fp-2" }));
      expect(other.status).toBe("exists");
      expect(other.record.fingerprint).toBe("fp-1");
    });

    it("does not take over a completed record however old its lease", async () => {
      const k = key();
      const { record } = await store.claim(k, claimInput());
      await store.update(k, { token: record.token! }, { state: "completed", result: "42", leaseMs: null });
      clock.advance(10_000);
      const again = await store.claim(k, claimInput());
      expect(again.status).toBe("exists");
      expect(again.record).toMatchObject({ state: "completed", result: "42", leaseUntil: null });
    });

    it("completes only with the current token, so a worker whose lease was taken over cannot overwrite", async () => {
      const k = key();
      const first = await store.claim(k, claimInput());
      clock.advance(1_000);
      const second = await store.claim(k, claimInput());
      expect(second.status).toBe("taken_over");
      const stale = await store.update(
        k,
        { token: first.record.token! },
        { state: "completed", result: '"old"' },
      );
      expect(stale).toBeUndefined();
      const fresh = await store.update(
        k,
        { token: second.record.token! },
        { state: "completed", result: '"new"', leaseMs: null },
      );
      expect(fresh).toMatchObject({ state: "completed", result: '"new"', leaseUntil: null });
      expect((await store.get(k))?.result).toBe('"new"');
    });

    it("renews a lease for the token holder only", async () => {
      const k = key();
      const { record } = await store.claim(k, claimInput());
      clock.advance(800);
      expect(await store.update(k, { token: "someone-else" }, { leaseMs: 1_000 })).toBeUndefined();
      const renewed = await store.update(k, { token: record.token!, state: "pending" }, { leaseMs: 1_000 });
      expect(renewed?.leaseUntil).toBe(clock() + 1_000);
      clock.advance(900);
      expect((await store.claim(k, claimInput())).status).toBe("exists");
    });

    it("updates on state alone (approval) and applies every patch field", async () => {
      const k = key();
      await store.claim(k, claimInput({ state: "awaiting_approval" }));
      const parked = await store.get(k);
      expect(parked).toMatchObject({ state: "awaiting_approval", leaseUntil: null });
      expect(await store.update(k, { state: "pending" }, { state: "approved" })).toBeUndefined();
      clock.advance(10);
      const approved = await store.update(
        k,
        { state: "awaiting_approval" },
        { state: "approved", token: null, attempts: 3, data: '{"by":"ana"}', ttlMs: 5_000 },
      );
      expect(approved).toMatchObject({
        state: "approved",
        token: null,
        attempts: 3,
        data: '{"by":"ana"}',
        expiresAt: clock() + 5_000,
        updatedAt: clock(),
      });
      expect(approved!.createdAt).toBeLessThan(approved!.updatedAt);
    });

    it("keeps text fields byte for byte", async () => {
      const k = key();
      const text = JSON.stringify({ s: 'é€😀\u0000\n"\\', n: 1e21 });
      const { record } = await store.claim(k, claimInput({ data: text }));
      await store.update(k, { token: record.token! }, { state: "completed", result: text });
      const read = await store.get(k);
      expect(read?.result).toBe(text);
      expect(read?.data).toBe(text);
    });

    it("deletes only a matching record, and a deleted key can be claimed again", async () => {
      const k = key();
      const { record } = await store.claim(k, claimInput());
      expect(await store.delete(k, { token: "other" })).toBe(false);
      expect(await store.delete(k, { token: record.token!, state: "pending" })).toBe(true);
      expect(await store.get(k)).toBeUndefined();
      expect((await store.claim(k, claimInput())).status).toBe("claimed");
    });

    it("treats an expired record as absent and lets the key be claimed anew", async () => {
      const k = key();
      const { record } = await store.claim(k, claimInput({ ttlMs: 2_000 }));
      await store.update(k, { token: record.token! }, { state: "completed", result: "1" });
      clock.advance(1_999);
      expect(await store.get(k)).toBeDefined();
      clock.advance(1);
      expect(await store.get(k)).toBeUndefined();
      expect(await store.update(k, {}, { result: "2" })).toBeUndefined();
      const again = await store.claim(k, claimInput({ fingerprint: "fp-other" }));
      expect(again.status).toBe("claimed");
      expect(again.record).toMatchObject({ fingerprint: "fp-other", result: null, state: "pending" });
    });

    it("lists live records in key order, filtered and paged", async () => {
      const prefix = `list:${randomUUID()}:`;
      for (const suffix of ["c", "a", "b", "d"]) {
        await store.claim(
          prefix + suffix,
          claimInput({ state: suffix === "d" ? "awaiting_approval" : "pending" }),
        );
      }
      const expiring = `${prefix}e`;
      await store.claim(expiring, claimInput({ ttlMs: 1 }));
      clock.advance(1);
      const all = await store.list({ prefix });
      expect(all.map((r) => r.key)).toEqual(["a", "b", "c", "d"].map((s) => prefix + s));
      const page = await store.list({ prefix, after: `${prefix}a`, limit: 2 });
      expect(page.map((r) => r.key)).toEqual([`${prefix}b`, `${prefix}c`]);
      const parked = await store.list({ prefix, state: "awaiting_approval" });
      expect(parked.map((r) => r.key)).toEqual([`${prefix}d`]);
    });

    it("purges expired records in bounded batches and leaves live ones", async () => {
      const prefix = `purge:${randomUUID()}:`;
      // Drain whatever earlier tests left expired, so the counts below are this test's own.
      clock.advance(120_000);
      while ((await store.purge({ limit: 1000 })) > 0) {}
      for (let i = 0; i < 5; i++) await store.claim(`${prefix}old${i}`, claimInput({ ttlMs: 10 }));
      await store.claim(`${prefix}live`, claimInput({ ttlMs: 60_000 }));
      clock.advance(10);
      expect(await store.purge({ limit: 2 })).toBe(2);
      expect(await store.purge({ limit: 2 })).toBe(2);
      expect(await store.purge({ limit: 2 })).toBe(1);
      expect(await store.purge({ limit: 2 })).toBe(0);
      expect((await store.get(`${prefix}live`))?.state).toBe("pending");
    });
  });
}
