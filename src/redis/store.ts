import { StoreLayoutError } from "../errors/store-layout-error.js";
import { guardStore } from "../store/guard.js";
import { applyPatch, decideClaim, newRecord, resent } from "../store/record.js";
import type { ClaimResult, Expect, RecordPatch, Store, StoreOptions, StoreRecord } from "../store/types.js";
import { type RedisClientLike, script, scriptRunner } from "./client.js";
import { LAYOUT, layoutCheck } from "./layout.js";
import { CLAIM, DELETE, FIELDS, GET, LIST, NOW, PURGE, UPDATE } from "./scripts.js";

export interface RedisStoreOptions extends StoreOptions {
  /**
   * Replaces Redis's clock for tests. By default every lease and expiry is decided inside the scripts on Redis's own
   * clock (`TIME`), so that processes whose clocks disagree still agree on whether a lease has lapsed.
   * @default Redis's TIME
   */
  clock?: () => number;
  /**
   * Put before every Redis key the store writes: records (hashes) under `<prefix>r:<key>`, two index sorted sets,
   * `<prefix>expiries` and `<prefix>keys`, and the layout marker `<prefix>layout`. The braces make it a Redis Cluster hash tag, which puts a store's keys in
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

/** Index entries one list script looks at, at most. */
const LIST_SCAN = 500;

const scripts = {
  claim: script(CLAIM),
  update: script(UPDATE),
  delete: script(DELETE),
  get: script(GET),
  list: script(LIST),
  purge: script(PURGE),
  now: script(NOW),
};

/**
 * A store in Redis, shared by every process that reaches the server, through the ioredis or node-redis client you
 * already have (never opened or closed by the store). A claim is a Lua script that creates the record when there is
 * none, replaces an expired one or takes over an expired lease; completing, renewing, updating and deleting are Lua
 * scripts that compare the token (or state) and write in one atomic step, so a worker whose lease was taken over can
 * never overwrite the new owner's record.
 *
 * Each record is a Redis hash of its fields (layout 2, see scripts.ts), so that a script reads and writes only the
 * fields it needs. Records of idemkey's earlier layout 1 (one JSON string each) are refused with a
 * `StoreLayoutError`, never misread: let the version that wrote them finish and delete the prefix's keys, or give this
 * store another prefix.
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
  const layout = layoutCheck(redis, prefix);
  const ttl = (ttlMs: number) => `${Math.max(1, ttlMs + ttlMarginMs)}`;
  /** The `now` a script is given: '' lets it read Redis's TIME; the `clock` option (tests) decides otherwise. */
  const given = () => (clock ? `${clock()}` : "");
  const serverNow = async () => String(await redis.run(scripts.now, [], []));

  function guard<T>(operation: string, key: string | undefined, run: () => Promise<T>): Promise<T> {
    return guardStore("redis", operation, key, async () => {
      if (!layout.done) await layout.check();
      return run().catch(refuseLayout);
    });
  }

  /** A process of layout 1 wrote this record after the prefix was marked: refuse rather than misread it. */
  function refuseLayout(error: unknown): never {
    if (String((error as Error)?.message).startsWith("IDEMKEY_LAYOUT")) {
      throw new StoreLayoutError("redis", prefix, 1, LAYOUT, { cause: error });
    }
    throw error;
  }

  return {
    claim: (key, input) =>
      guard("claim", key, async () => {
        const state = input.state ?? "pending";
        const args = [
          key,
          given(),
          state,
          input.fingerprint,
          input.token,
          state === "pending" ? `${input.leaseMs}` : "",
          `${input.ttlMs}`,
          ttl(input.ttlMs),
        ];
        if (input.data != null) args.push(input.data);
        const [status, stamp, ...fields] = (await redis.run(
          scripts.claim,
          [recordKey(key), expiries, keys],
          args,
        )) as [ClaimResult["status"] | "resent_takeover", string, ...Field[]];
        const now = Number(stamp);
        if (fields.length === 0) return { status: "claimed", record: newRecord(key, input, now) };
        const record = fromFields(key, fields);
        if (status === "resent_takeover") return resent(record);
        if (status !== "taken_over") return { status, record };
        return { status, record: decideClaim(key, record, input, now).record, previous: record };
      }),
    get: (key) =>
      guard("get", key, async () => {
        const fields = (await redis.run(scripts.get, [recordKey(key)], [given()])) as Field[] | null;
        return fields ? fromFields(key, fields) : undefined;
      }),
    update: (key, expect, patch) =>
      guard("update", key, async () => {
        const reply = (await redis.run(
          scripts.update,
          [recordKey(key), expiries],
          [key, given(), ...expectation(expect), ...changes(patch, ttl)],
        )) as [string, ...Field[]] | null;
        if (!reply) return undefined;
        const [stamp, ...fields] = reply;
        return applyPatch(fromFields(key, fields), patch, Number(stamp));
      }),
    delete: (key, expect) =>
      guard("delete", key, async () => {
        const deleted = await redis.run(
          scripts.delete,
          [recordKey(key), expiries, keys],
          [key, given(), ...expectation(expect)],
        );
        return Number(deleted) === 1;
      }),
    list: (query = {}) =>
      guard("list", undefined, async () => {
        const limit = query.limit ?? 100;
        // One instant for the whole listing, so that its pages agree on what is live.
        const now = clock ? `${clock()}` : await serverNow();
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
          )) as Field[];
          const stride = 1 + FIELDS.length;
          for (let i = 0; i < found.length; i += stride) {
            records.push(fromFields(found[i]!, found.slice(i + 1, i + stride)));
          }
          start = next!;
        }
        return records;
      }),
    purge: ({ limit = 1000 } = {}) =>
      guard("purge", undefined, async () =>
        Number(await redis.run(scripts.purge, [expiries, keys], [recordKey(""), given(), `${limit}`])),
      ),
    // The client belongs to the caller, who closes it.
    async close() {},
  };
}

/** A reply's string or nil (an absent field): node-redis and ioredis both give `null` for nil. */
type Field = string | null;

/** A record from its fields in FIELDS order. */
function fromFields(key: string, f: Field[]): StoreRecord {
  return {
    key,
    state: f[0] as StoreRecord["state"],
    fingerprint: f[1]!,
    token: f[2] ?? null,
    leaseUntil: f[3] == null ? null : Number(f[3]),
    attempts: Number(f[4]),
    result: f[5] ?? null,
    data: f[6] ?? null,
    createdAt: Number(f[7]),
    updatedAt: Number(f[8]),
    expiresAt: Number(f[9]),
  };
}

/** `=token` or '' (any token; '=' keeps an empty token apart from none), then the state or ''. */
const expectation = (expect: Expect) => [
  expect.token === undefined ? "" : `=${expect.token}`,
  expect.state ?? "",
];

/**
 * The update script's ARGV after the expectation: the new ttlMs ('' when the expiry stays) and its physical TTL,
 * the number of fields to set, those fields and values, then the fields to clear. A new lease goes as '+leaseMs':
 * the script adds it to its own `now`, so that the store's clock decides every time.
 */
function changes(patch: RecordPatch, ttl: (ttlMs: number) => string): string[] {
  const set: string[] = [];
  const clear: string[] = [];
  const put = (field: string, value: string | null | undefined) => {
    if (value === undefined) return;
    if (value === null) clear.push(field);
    else set.push(field, value);
  };
  put("state", patch.state);
  put("token", patch.token);
  put("leaseUntil", patch.leaseMs == null ? patch.leaseMs : `+${patch.leaseMs}`);
  put("attempts", patch.attempts === undefined ? undefined : `${patch.attempts}`);
  put("result", patch.result);
  put("data", patch.data);
  return [
    patch.ttlMs === undefined ? "" : `${patch.ttlMs}`,
    patch.ttlMs === undefined ? "" : ttl(patch.ttlMs),
    `${set.length / 2}`,
    ...set,
    ...clear,
  ];
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
  const { clock, prefix = "{idemkey}:", ttlMarginMs = 60_000 } = options;
  if (clock !== undefined && typeof clock !== "function") {
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
