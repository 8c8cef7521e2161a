import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it, type TestContext } from "vitest";
import type { Changes, ChangesQuery, ClaimInput, ClaimStore, Store } from "../../src/store/types.js";

// The part that needs OS processes, in a file of its own: every store two processes can share runs it too.
export { testStoreAcrossProcesses } from "./contract-processes.js";

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

/** What a store can do besides claiming: the capability flags of the suite (unstorage's `testDriver` options). */
export interface ContractOptions {
  /** Why the suite is skipped (a server that is unreachable outside CI); the store then runs nothing. */
  skip?: string;
  /** The store lists live records in key order, filtered and paged (`list`). @default true */
  list?: boolean;
  /** The store removes expired records in bounded batches (`purge`). @default true */
  purge?: boolean;
  /**
   * The store answers what changed since a time (`changes`). `true` fails the part when the store has no
   * `changes`; `false` reports it as skipped by name.
   * @default run when the store has `changes`, reported as skipped (with the reason) when it has not
   */
  changes?: boolean;
}

/** A store's part of the suite: the store under test, its clock and the helpers every part shares. */
interface Part {
  clock: TestClock;
  /** The store the factory made, opened before the first test (calls before that throw). */
  store: Store;
  /** The store's own `changes`, or `undefined` when it has none. */
  changes(): Store["changes"];
  key(): string;
  claimInput(overrides?: Partial<ClaimInput>): ClaimInput;
}

/**
 * The one suite every store passes unchanged (memory, SQLite, PostgreSQL, Redis): a claim part every store runs
 * (claim, get, update, delete), then a listing part (list, purge) behind capability flags, so that a store that
 * cannot list keys in order still proves what claiming needs. A store that needs a server passes `skip` with the
 * reason when the server is unreachable outside CI. A store without `list` or `purge` (a `ClaimStore`) passes
 * `{ list: false, purge: false }`: the parts it cannot run are reported as skipped, by name.
 */
export function testStore(
  name: string,
  factory: StoreFactory,
  options?: ContractOptions & { list?: true; purge?: true },
): void;
export function testStore(
  name: string,
  factory: (clock: TestClock) => ClaimStore | Promise<ClaimStore>,
  options: ContractOptions & ({ list: false } | { purge: false }),
): void;
export function testStore(
  name: string,
  factory: (clock: TestClock) => ClaimStore | Promise<ClaimStore>,
  options: ContractOptions = {},
): void {
  const suite = options.skip ? describe.skip : describe;
  suite(`store contract: ${name}`, () => {
    const clock = testClock();
    let opened: Store | undefined;
    const open = () => {
      if (!opened) throw new Error("the store is opened in beforeAll");
      return opened;
    };
    const part: Part = {
      clock,
      store: {
        claim: (k, input) => open().claim(k, input),
        get: (k) => open().get(k),
        update: (k, expect, patch) => open().update(k, expect, patch),
        delete: (k, expect) => open().delete(k, expect),
        list: (query) => open().list(query),
        purge: (purge) => open().purge(purge),
        close: () => open().close(),
      },
      changes: () => open().changes?.bind(open()),
      key: () => `contract:${randomUUID()}`,
      claimInput: (overrides = {}) => ({
        fingerprint: "fp-1",
        token: randomUUID(),
        leaseMs: 1_000,
        ttlMs: 60_000,
        ...overrides,
      }),
    };

    beforeAll(async () => {
      // A ClaimStore's missing methods are never called: the parts that call them are not registered.
      opened = (await factory(clock)) as Store;
    });
    afterAll(async () => {
      await opened?.close();
    });

    claimPart(part);
    if (options.list === false) it.skip(`lists records: not run, ${name} declares list: false`);
    else listPart(part);
    if (options.purge === false) it.skip(`purges expired records: not run, ${name} declares purge: false`);
    else purgePart(part);
    if (options.changes === false) it.skip(`reads changes: not run, ${name} declares changes: false`);
    else changesPart(part, name, options.changes === true);
  });
}

/** What claiming needs: claim, get, update and delete, under leases and expiry. */
function claimPart({ clock, store, key, claimInput }: Part): void {
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
}

/** Listing: live records in key order, filtered and paged by key bounds. */
function listPart({ clock, store, claimInput }: Part): void {
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

  it("orders keys by code point, which is UTF-8 byte order (U+E000..U+FFFF before emoji), and pages in it", async () => {
    // JavaScript's own string order (UTF-16 code units) puts an emoji (a surrogate pair, 0xD83D...) before U+E000;
    // SQLite, PostgreSQL (COLLATE "C") and Redis compare UTF-8 bytes, where U+1F600 comes after U+FFFD.
    const p = `points:${randomUUID()}:`;
    const inOrder = ["z", "\uE000", "\uFFFD", "\u{1F600}", "\u{10FFFF}"];
    for (const suffix of [...inOrder].reverse()) await store.claim(p + suffix, claimInput());
    const keys = async (query: Parameters<Store["list"]>[0]) => (await store.list(query)).map((r) => r.key);
    expect(await keys({ prefix: p })).toEqual(inOrder.map((s) => p + s));
    expect(await keys({ prefix: p, after: `${p}\uFFFD` })).toEqual([`${p}\u{1F600}`, `${p}\u{10FFFF}`]);
    expect(await keys({ prefix: p, after: `${p}\u{1F600}`, limit: 1 })).toEqual([`${p}\u{10FFFF}`]);
  });

  it("pages by key bounds: after below, inside and past a prefix, and prefixes beside their successors", async () => {
    const p = `range:${randomUUID()}:`;
    const suffixes = ["a", "ab", "a~", "b", "é", "é\u{10ffff}", "😀"];
    for (const suffix of [...suffixes].reverse()) await store.claim(p + suffix, claimInput());
    const keys = async (query: Parameters<Store["list"]>[0]) => (await store.list(query)).map((r) => r.key);
    expect(await keys({ prefix: `${p}a` })).toEqual([`${p}a`, `${p}ab`, `${p}a~`]);
    expect(await keys({ prefix: `${p}a`, after: p })).toEqual([`${p}a`, `${p}ab`, `${p}a~`]);
    expect(await keys({ prefix: `${p}a`, after: `${p}ab` })).toEqual([`${p}a~`]);
    expect(await keys({ prefix: `${p}a`, after: `${p}c` })).toEqual([]);
    expect(await keys({ prefix: `${p}é` })).toEqual([`${p}é`, `${p}é\u{10ffff}`]);
    expect(await keys({ prefix: `${p}é\u{10ffff}` })).toEqual([`${p}é\u{10ffff}`]);
    const paged: string[] = [];
    let after: string | undefined;
    for (;;) {
      const page = await keys({ prefix: p, after, limit: 2 });
      if (page.length === 0) break;
      paged.push(...page);
      after = page.at(-1);
    }
    expect(paged).toEqual(suffixes.map((s) => p + s));
  });
}

/** Purging: expired records removed in bounded batches. */
function purgePart({ clock, store, claimInput }: Part): void {
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
  it("purges no record whose update moved its expiry past the one it was claimed with", async () => {
    const prefix = `purge:${randomUUID()}:`;
    clock.advance(120_000);
    while ((await store.purge({ limit: 1000 })) > 0) {}
    await store.claim(`${prefix}extended`, claimInput({ ttlMs: 10 }));
    await store.update(
      `${prefix}extended`,
      {},
      { state: "completed", leaseMs: null, result: "1", ttlMs: 60_000 },
    );
    await store.claim(`${prefix}old`, claimInput({ ttlMs: 10 }));
    clock.advance(10);
    expect(await store.purge({ limit: 10 })).toBe(1);
    expect((await store.get(`${prefix}extended`))?.state).toBe("completed");
    expect(await store.get(`${prefix}old`)).toBeUndefined();
    clock.advance(60_000);
    expect(await store.purge({ limit: 10 })).toBe(1);
    expect(await store.get(`${prefix}extended`)).toBeUndefined();
  });

  it("purges a record by the expiry its completion set, when an earlier purge met it pending", async () => {
    const key = `purge:${randomUUID()}`;
    clock.advance(120_000);
    while ((await store.purge({ limit: 1000 })) > 0) {}
    await store.claim(key, claimInput({ leaseMs: 1_000, ttlMs: 60_000 }));
    clock.advance(10);
    expect(await store.purge({ limit: 10 })).toBe(0);
    clock.advance(490);
    // Completed within its lease, kept for less than the claim was: gone 2 s from now, not at the claim's expiry.
    await store.update(key, {}, { state: "completed", leaseMs: null, result: "1", ttlMs: 2_000 });
    clock.advance(1_999);
    expect(await store.purge({ limit: 10 })).toBe(0);
    clock.advance(1);
    expect(await store.purge({ limit: 10 })).toBe(1);
    expect(await store.get(key)).toBeUndefined();
  });
}

/**
 * Watching: the live records of a prefix changed at or after a time, in key order, the prefix's live count and the
 * store's clock, as `Changes` promises. Run when the store has `changes` (or must have it: `required`).
 */
function changesPart({ clock, store, changes, claimInput }: Part, name: string, required: boolean): void {
  const read = (ctx: TestContext, query: ChangesQuery): Promise<Changes> => {
    const own = changes();
    if (own === undefined) {
      if (required) throw new Error(`${name} declares changes: true and has no changes()`);
      ctx.skip(`${name} has no changes()`);
    }
    return own(query);
  };
  const keysOf = (found: Changes) => found.records.map((r) => r.key);

  it("reads the live records of a prefix updated at or after since, in key order, with the live count", async (ctx) => {
    const base = `changes:${randomUUID()}`;
    const p = `${base}:`;
    // In code point order, as every store orders keys: "B" before "a" (a locale's collation puts it after).
    for (const suffix of ["b", "é", "B", "a"]) await store.claim(p + suffix, claimInput());
    await store.claim(`${p}gone`, claimInput({ ttlMs: 50 }));
    const from = clock();
    clock.advance(100);
    const since = clock();
    const { record } = await store.claim(`${p}c`, claimInput());
    const renewed = await store.update(`${p}a`, {}, { attempts: 1 });
    // Changed now too, but outside the prefix: just before its range and just after it.
    await store.claim(base, claimInput());
    await store.claim(`${base};`, claimInput());

    const found = await read(ctx, { prefix: p, since });
    expect(keysOf(found)).toEqual([`${p}a`, `${p}c`]);
    // Whole records, as get() reads them.
    expect(found.records).toEqual([renewed, record]);
    // ${p}gone expired at from + 50: neither read nor counted.
    expect(found.live).toBe(5);
    expect(found.now).toBe(clock());

    expect(keysOf(await read(ctx, { prefix: p, since: from }))).toEqual(
      ["B", "a", "b", "c", "é"].map((s) => p + s),
    );
    // A watcher that has seen nothing yet asks from -Infinity.
    expect(keysOf(await read(ctx, { prefix: p, since: Number.NEGATIVE_INFINITY }))).toHaveLength(5);
    // At or after: a record updated at `since` is in, one updated before it is not.
    expect(keysOf(await read(ctx, { prefix: p, since: since + 1 }))).toEqual([]);
    expect(keysOf(await read(ctx, { prefix: `${p}c`, since: record.updatedAt }))).toEqual([`${p}c`]);
  });

  it("stops at limit in key order and still counts every live record of the prefix", async (ctx) => {
    const p = `changes-limit:${randomUUID()}:`;
    const since = clock();
    for (const suffix of ["e", "c", "a", "d", "b"]) await store.claim(p + suffix, claimInput());
    const found = await read(ctx, { prefix: p, since, limit: 2 });
    expect(keysOf(found)).toEqual([`${p}a`, `${p}b`]);
    expect(found.live).toBe(5);
    expect(keysOf(await read(ctx, { prefix: p, since }))).toHaveLength(5);
  });

  it("counts a record that expired or was deleted no more, and reads it no more", async (ctx) => {
    const p = `changes-gone:${randomUUID()}:`;
    const since = clock();
    const { record } = await store.claim(`${p}deleted`, claimInput());
    await store.claim(`${p}expiring`, claimInput({ ttlMs: 1_000 }));
    await store.claim(`${p}kept`, claimInput());
    expect((await read(ctx, { prefix: p, since })).live).toBe(3);
    expect(await store.delete(`${p}deleted`, { token: record.token! })).toBe(true);
    clock.advance(1_000);
    const found = await read(ctx, { prefix: p, since });
    expect(keysOf(found)).toEqual([`${p}kept`]);
    expect(found.live).toBe(1);
    expect(found.now).toBe(clock());
  });
}
