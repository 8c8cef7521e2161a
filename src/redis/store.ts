import { guardStore } from "../store/guard.js";
import type { ClaimResult, Expect, RecordPatch, Store, StoreOptions, StoreRecord } from "../store/types.js";
import { type RedisClientLike, script, scriptRunner } from "./client.js";
import { CLAIM, DELETE, LIST, PURGE, UPDATE } from "./scripts.js";

export interface RedisStoreOptions extends StoreOptions {
  /**
   * Put before every Redis key the store writes: records under `<prefix>r:<key>`, and two index sorted sets,
   * `<prefix>expiries` and `<prefix>keys`. The braces make it a Redis Cluster hash tag, which puts a store's keys in
   * one slot, as its scripts require; keep a `{...}` part in a prefix of your own if you run a cluster.
   * @default "{idemkey}:"
   */
  prefix?: string;
  /**
   * How long Redis keeps a record, in milliseconds, after its logical expiry (`expiresAt`, on the store's clock)
   * before deleting it itself. Logical expiry decides what is live; the physical TTL only reclaims memory, and the
   * margin keeps a record from vanishing early for a process whose clock runs behind Redis's.
   * @default 60000
   */
  ttlMarginMs?: number;
}

/** The record as stored: JSON whose numbers are decimal strings (see scripts.ts). */
interface Stored {
  state: StoreRecord["state"];
  fingerprint: string;
  token: string | null;
  leaseUntil: string | null;
  attempts: string;
  result: string | null;
  data: string | null;
  createdAt: string;
  updatedAt: string;
  expiresAt: string;
}

/** Index entries one list script looks at, at most. */
const LIST_SCAN = 500;

const scripts = {
  claim: script(CLAIM),
  update: script(UPDATE),
  delete: script(DELETE),
  list: script(LIST),
  purge: script(PURGE),
};

/**
 * A store in Redis, shared by every process that reaches the server, through the ioredis or node-redis client you
 * already have (never opened or closed by the store). A claim is `SET NX PX` inside a Lua script that also replaces
 * an expired record or takes over an expired lease; completing, renewing, updating and deleting are Lua scripts
 * that compare the token (or state) and write in one atomic step, so a worker whose lease was taken over can never
 * overwrite the new owner's record.
 *
 * Durability is Redis's: the guarantees assume persistence with the append-only file (`appendonly yes`, with
 * `appendfsync everysec`, which may lose the last second of writes if the server's machine fails, or `always`).
 * With RDB snapshots alone, or none, a restart forgets every key written since the last snapshot (or all of them),
 * so a call may run again: the ledger is a cache, and the owner's idempotency key is what stops a duplicate effect.
 * Replication is asynchronous, so a failover may lose the latest writes the same way.
 *
 * @example
 * const store = redisStore(new Redis(process.env.REDIS_URL));
 */
export function redisStore(client: RedisClientLike, options: RedisStoreOptions = {}): Store {
  const redis = scriptRunner(client);
  const { clock, prefix, ttlMarginMs } = resolveOptions(options);
  const recordKey = (key: string) => `${prefix}r:${key}`;
  const expiries = `${prefix}expiries`;
  const keys = `${prefix}keys`;
  const margin = `${ttlMarginMs}`;

  return {
    claim: (key, input) =>
      guard("claim", key, async () => {
        const now = clock();
        const state = input.state ?? "pending";
        const fresh: Stored = {
          state,
          fingerprint: input.fingerprint,
          token: input.token,
          leaseUntil: state === "pending" ? `${now + input.leaseMs}` : null,
          attempts: "0",
          result: null,
          data: input.data ?? null,
          createdAt: `${now}`,
          updatedAt: `${now}`,
          expiresAt: `${now + input.ttlMs}`,
        };
        const reply = (await redis.run(
          scripts.claim,
          [recordKey(key), expiries, keys],
          [
            key,
            `${now}`,
            JSON.stringify(fresh),
            fresh.expiresAt,
            `${Math.max(1, input.ttlMs + ttlMarginMs)}`,
            input.fingerprint,
            input.token,
            `${now + input.leaseMs}`,
            margin,
          ],
        )) as [ClaimResult["status"], string, string?];
        const [status, json, previous] = reply;
        return status === "taken_over"
          ? { status, record: parse(key, json), previous: parse(key, previous!) }
          : { status, record: parse(key, json) };
      }),
    get: (key) =>
      guard("get", key, async () => {
        const json = await redis.get(recordKey(key));
        const record = json === null ? undefined : parse(key, json);
        return record && record.expiresAt > clock() ? record : undefined;
      }),
    update: (key, expect, patch) =>
      guard("update", key, async () => {
        const now = clock();
        const json = await redis.run(
          scripts.update,
          [recordKey(key), expiries],
          [key, `${now}`, expectation(expect), changes(patch, now), margin],
        );
        return typeof json === "string" ? parse(key, json) : undefined;
      }),
    delete: (key, expect) =>
      guard("delete", key, async () => {
        const deleted = await redis.run(
          scripts.delete,
          [recordKey(key), expiries, keys],
          [key, `${clock()}`, expectation(expect)],
        );
        return Number(deleted) === 1;
      }),
    list: (query = {}) =>
      guard("list", undefined, async () => {
        const limit = query.limit ?? 100;
        const now = `${clock()}`;
        const records: StoreRecord[] = [];
        // Page through the key index a bounded slice per script, so that no single call holds Redis for long.
        let start = rangeStart(query.prefix, query.after);
        while (records.length < limit && start !== "") {
          const [next, ...found] = (await redis.run(
            scripts.list,
            [keys],
            [
              recordKey(""),
              now,
              start,
              query.prefix ?? "",
              query.state ?? "",
              `${limit - records.length}`,
              `${LIST_SCAN}`,
            ],
          )) as string[];
          for (let i = 0; i < found.length; i += 2) records.push(parse(found[i]!, found[i + 1]!));
          start = next!;
        }
        return records;
      }),
    purge: ({ limit = 1000 } = {}) =>
      guard("purge", undefined, async () =>
        Number(await redis.run(scripts.purge, [expiries, keys], [recordKey(""), `${clock()}`, `${limit}`])),
      ),
    // The client belongs to the caller, who closes it.
    async close() {},
  };
}

function parse(key: string, json: string): StoreRecord {
  const s = JSON.parse(json) as Stored;
  return {
    key,
    state: s.state,
    fingerprint: s.fingerprint,
    token: s.token,
    leaseUntil: s.leaseUntil === null ? null : Number(s.leaseUntil),
    attempts: Number(s.attempts),
    result: s.result,
    data: s.data,
    createdAt: Number(s.createdAt),
    updatedAt: Number(s.updatedAt),
    expiresAt: Number(s.expiresAt),
  };
}

const expectation = (expect: Expect) => JSON.stringify({ token: expect.token, state: expect.state });

/** The fields a patch sets, with every new time computed here on the store's clock. */
function changes(patch: RecordPatch, now: number): string {
  const set: Partial<Stored> = {};
  if (patch.state !== undefined) set.state = patch.state;
  if (patch.token !== undefined) set.token = patch.token;
  if (patch.leaseMs !== undefined) set.leaseUntil = patch.leaseMs === null ? null : `${now + patch.leaseMs}`;
  if (patch.attempts !== undefined) set.attempts = `${patch.attempts}`;
  if (patch.result !== undefined) set.result = patch.result;
  if (patch.data !== undefined) set.data = patch.data;
  if (patch.ttlMs !== undefined) set.expiresAt = `${now + patch.ttlMs}`;
  return JSON.stringify(set);
}

/** ZRANGEBYLEX compares bytes; so does `Buffer.compare`, which picks the later of the two lower bounds. */
function rangeStart(prefix: string | undefined, after: string | undefined): string {
  if (
    after !== undefined &&
    (prefix === undefined || Buffer.compare(Buffer.from(after), Buffer.from(prefix)) >= 0)
  ) {
    return `(${after}`;
  }
  return prefix === undefined ? "-" : `[${prefix}`;
}

function resolveOptions(options: RedisStoreOptions) {
  if (typeof options !== "object" || options === null)
    throw new TypeError("redisStore: options must be an object");
  const { clock = Date.now, prefix = "{idemkey}:", ttlMarginMs = 60_000 } = options;
  if (typeof clock !== "function") {
    throw new TypeError(
      `redisStore: options.clock must be a function returning epoch ms, got ${typeof clock}`,
    );
  }
  if (typeof prefix !== "string" || prefix === "") {
    throw new TypeError(
      `redisStore: options.prefix must be a non-empty string, got ${JSON.stringify(prefix)}`,
    );
  }
  if (!Number.isSafeInteger(ttlMarginMs) || ttlMarginMs < 0) {
    throw new TypeError(`redisStore: options.ttlMarginMs must be a non-negative integer, got ${ttlMarginMs}`);
  }
  return { clock, prefix, ttlMarginMs };
}

function guard<T>(operation: string, key: string | undefined, run: () => Promise<T>): Promise<T> {
  return guardStore("redis", operation, key, run);
}
