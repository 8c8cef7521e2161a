import { setTimeout as sleep } from "node:timers/promises";
import { StoreLayoutError } from "../errors/store-layout-error.js";
import { checkNumber } from "../options/number-option.js";
import { storeFailure } from "../store/guard.js";
import { keyRange } from "../store/range.js";
import { applyPatch, decideClaim, newRecord, resent } from "../store/record.js";
import { sinceMs } from "../store/since.js";
import type {
  Changes,
  ClaimInput,
  ClaimResult,
  Expect,
  RecordPatch,
  Store,
  StoreOptions,
  StoreRecord,
} from "../store/types.js";
import { type RedisClientLike, scriptRunner } from "./client.js";
import { checkClusterPrefix, refuseConfig } from "./cluster.js";
import { redisDriver } from "./description.js";
import { LAYOUT, layoutCheck, layoutOption } from "./layout.js";
import { leanStore } from "./lean-store.js";
import { LEAN_LAYOUT } from "./lean-value.js";
import { library, scripts } from "./library.js";
import { isRefused, nextRefusedDelay } from "./refused.js";
import { FIELDS } from "./scripts.js";

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
  /**
   * How long, in milliseconds, one operation keeps trying again while Redis refuses it without running it: a
   * reshard of the store's slot (`TRYAGAIN`, `ASK`), a Redis Cluster failover under way (`CLUSTERDOWN`, `MOVED`), a
   * node loading its data (`LOADING`), a replica or a master short of replicas (`READONLY`, `NOREPLICAS`). Such a
   * reply proves the script never ran, so trying again is always safe; make the budget longer than a failover takes
   * (about `cluster-node-timeout` plus a second or two). Once it is spent the operation fails with a `StoreError`
   * carrying the last refusal. Errors that leave the outcome unknown (a connection lost mid-command) are not retried
   * here.
   * @default 10000
   */
  refusedRetryMs?: number;
  /**
   * Keep the two indexes that `list` and `purge` read (and `changes`, which the inspector's live view uses). With
   * `false` the store keeps each record as one string (layout 3) and no index: a new key is claimed by a plain
   * `SET key value PX ttl NX GET`, no script, and a replay of a completed key is answered by that same command; its
   * completion is one small compare-and-set script. Measured at about half the Redis time and two-thirds of the
   * latency of a fresh key with indexes (bench/HISTORY.md, "Issue 15, PostgreSQL and Redis stores"). Same token
   * compare-and-set, resend rule, leases and retention on Redis's clock; what it gives up: `list()` and `purge()`
   * reject with a `TypeError` (so do `harness.list()`, `harness.purge()`, the middleware's `purge()` and the
   * inspector), and Redis deletes each record itself when its retention ends, as its expiry (`ttlMarginMs` does not
   * apply). Needs Redis 7.0 or later (`SET ... NX GET`, `PEXPIRETIME`) and a client with `set`. A prefix holds one
   * kind of store: each refuses the other's with a `StoreLayoutError`.
   * @default true
   */
  indexes?: boolean;
}

/** Index entries one list script looks at, at most. */
const LIST_SCAN = 500;
/** Index entries the changes script reads per ZRANGEBYLEX while it walks a prefix. */
const CHANGES_PAGE = 500;

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
  const { clock, prefix, ttlMarginMs, refusedRetryMs, indexes } = resolveOptions(options);
  // The indexed store's scripts as Redis 7 functions where the server allows (client.ts decides, once).
  const redis = scriptRunner(client, indexes ? library : undefined);
  checkClusterPrefix(client, prefix);
  const recordKey = (key: string) => `${prefix}r:${key}`;
  const expiries = `${prefix}expiries`;
  const keys = `${prefix}keys`;
  const layout = layoutCheck(redis, prefix, indexes ? LAYOUT : LEAN_LAYOUT);
  const ttl = (ttlMs: number) => `${Math.max(1, ttlMs + ttlMarginMs)}`;
  /** The `now` a script is given: '' lets it read Redis's TIME; the `clock` option (tests) decides otherwise. */
  const given = () => (clock ? `${clock()}` : "");
  const serverNow = async () => String(await redis.run(scripts.now, [], []));

  /**
   * Every operation's one wrapper (issue 44: four nested ones cost ~12 µs each): the layout check once per store,
   * the operation, and on failure, in this order, a record of another layout refused (`refuseLayout`), a refusal
   * retried within `refusedRetryMs` (see refused.ts), a cross-slot prefix refused (`refuseConfig`), and anything
   * else from the driver made a `StoreError` (guard.ts).
   */
  async function guard<T>(operation: string, key: string | undefined, run: () => Promise<T>): Promise<T> {
    const deadline = Date.now() + refusedRetryMs;
    for (let delay = 25; ; delay = nextRefusedDelay(delay)) {
      let failure: unknown;
      try {
        if (!layout.done) await layout.check();
        try {
          return await run();
        } catch (error) {
          refuseLayout(error);
        }
      } catch (error) {
        failure = error;
      }
      if (isRefused(failure)) {
        const left = deadline - Date.now();
        if (left > 0) {
          await sleep(Math.min(delay, left));
          continue;
        }
      }
      try {
        refuseConfig(failure, prefix);
      } catch (error) {
        throw storeFailure(redisDriver, operation, key, error);
      }
    }
  }

  /** A process of another layout wrote this record after the prefix was marked: refuse rather than misread it. */
  function refuseLayout(error: unknown): never {
    if (String((error as Error)?.message).startsWith("IDEMKEY_LAYOUT")) {
      throw new StoreLayoutError({
        store: "redis",
        location: prefix,
        // What a script meets where it expects its own type: a JSON string of layout 1, or the indexed store's
        // hash under a prefix of the store without indexes.
        found: indexes ? 1 : LAYOUT,
        supported: indexes ? LAYOUT : LEAN_LAYOUT,
        option: indexes ? undefined : layoutOption(LAYOUT),
        cause: error,
      });
    }
    throw error;
  }

  if (!indexes) {
    const { setNew } = redis;
    if (setNew === undefined) {
      throw new TypeError(
        "redisStore: options.indexes false needs a client with set() (ioredis or node-redis)",
      );
    }
    return leanStore({ redis: { ...redis, setNew }, clock, recordKey, guard });
  }

  return {
    claim: (key, input) =>
      guard("claim", key, async () => {
        const state = input.state ?? "pending";
        const reply = (await redis.run(
          scripts.claim,
          [recordKey(key), expiries, keys],
          claimArgs(key, given(), state, input, ttl(input.ttlMs)),
        )) as string | [ClaimResult["status"] | "resent_takeover", string, ...Field[]];
        // A fresh record: the script replied with its `now` alone.
        if (typeof reply === "string")
          return { status: "claimed", record: newRecord(key, input, Number(reply)) };
        const [status, stamp, ...fields] = reply;
        const record = fromFields(key, fields);
        if (status === "resent_takeover") return resent(record);
        if (status !== "taken_over") return { status, record };
        return { status, record: decideClaim(key, record, input, Number(stamp)).record, previous: record };
      }),
    get: (key) =>
      guard("get", key, async () => {
        const fields = (await redis.run(scripts.get, [recordKey(key)], [given()])) as Field[] | null;
        return fields ? fromFields(key, fields) : undefined;
      }),
    update: (key, expect, patch) =>
      guard("update", key, async () => {
        const { args, asked } = updateArgs(key, given(), expect, patch, ttl);
        const reply = (await redis.run(scripts.update, [recordKey(key), expiries], args)) as Field[] | null;
        if (!reply) return undefined;
        return applyPatch(askedRecord(key, reply, asked), patch, Number(reply[0]));
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
    // One script, so that the count, the records and `now` agree. It walks the prefix's range of the key index
    // inside Redis and returns only what changed: about 1.7 µs of Redis's time per record of the prefix, in one
    // atomic step (17 ms for 10,000 on a shared 2-core machine), where listing them took 46-56 ms of Redis's time
    // in 2 ms steps and copied every record to the process. The inspector calls it at most once a second and only
    // while its ledger is under maxRecords (it lists the first ones past that), which bounds that step.
    changes: (query) =>
      guard("changes", undefined, async () => {
        const { lower, upper } = keyRange(query.prefix, undefined);
        const [stamp, live, ...found] = (await redis.run(
          scripts.changes,
          [keys],
          [
            recordKey(""),
            given(),
            lower ? `[${lower.key}` : "-",
            upper === undefined ? "+" : `(${upper}`,
            query.prefix ?? "",
            `${sinceMs(query.since)}`,
            `${query.limit ?? 100}`,
            `${CHANGES_PAGE}`,
          ],
        )) as Field[];
        const changes: Changes = { records: [], live: Number(live), now: Number(stamp) };
        const stride = 1 + FIELDS.length;
        for (let i = 0; i < found.length; i += stride) {
          changes.records.push(fromFields(found[i]!, found.slice(i + 1, i + stride)));
        }
        return changes;
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

/** The claim script's ARGV (see scripts.ts CLAIM), in one array literal. */
function claimArgs(key: string, now: string, state: string, input: ClaimInput, physical: string): string[] {
  const lease = state === "pending" ? String(input.leaseMs) : "";
  const ttlMs = String(input.ttlMs);
  return input.data == null
    ? [key, now, state, input.fingerprint, input.token, lease, ttlMs, physical]
    : [key, now, state, input.fingerprint, input.token, lease, ttlMs, physical, "data", input.data];
}

/** A field the update script reads back, at its place in FIELDS (the reply's order after now and the checks). */
type Asked = "fingerprint" | "leaseUntil" | "attempts" | "result" | "data" | "createdAt";

/**
 * The update script's ARGV: key, now, the expectation (`=token` or '' for any token, '=' keeping an empty token
 * apart from none; the state or ''), the new ttlMs ('' when the expiry stays) and its physical TTL, the new leaseMs
 * ('' when unchanged: the script adds it to its own `now`, so that the store's clock decides every time), the fields
 * to read back (those the patch does not decide), the pairs to set, then the fields to clear.
 */
function updateArgs(
  key: string,
  now: string,
  expect: Expect,
  patch: RecordPatch,
  ttl: (ttlMs: number) => string,
): { args: string[]; asked: Asked[] } {
  const asked: Asked[] = ["fingerprint", "createdAt"];
  const set: string[] = [];
  const clear: string[] = [];
  const put = (field: Asked | "state" | "token", value: string | null | undefined) => {
    if (value === undefined) {
      if (field !== "state" && field !== "token") asked.push(field);
    } else if (value === null) clear.push(field);
    else set.push(field, value);
  };
  put("state", patch.state);
  put("token", patch.token);
  put("attempts", patch.attempts === undefined ? undefined : String(patch.attempts));
  put("result", patch.result);
  put("data", patch.data);
  if (patch.leaseMs === undefined) asked.push("leaseUntil");
  else if (patch.leaseMs === null) clear.push("leaseUntil");
  const args = [
    key,
    now,
    expect.token === undefined ? "" : `=${expect.token}`,
    expect.state ?? "",
    patch.ttlMs === undefined ? "" : String(patch.ttlMs),
    patch.ttlMs === undefined ? "" : ttl(patch.ttlMs),
    patch.leaseMs == null ? "" : String(patch.leaseMs),
    String(asked.length),
    ...asked,
    String(set.length / 2),
    ...set,
    ...clear,
  ];
  return { args, asked };
}

/**
 * The record as it was, from the update script's reply {now, expiresAt, token, state, asked...}: the fields not
 * asked for are the ones the patch decides, so `applyPatch` overwrites each of them (left at a placeholder here).
 */
function askedRecord(key: string, reply: Field[], asked: Asked[]): StoreRecord {
  const record: StoreRecord = {
    key,
    state: reply[3] as StoreRecord["state"],
    fingerprint: "",
    token: reply[2] ?? null,
    leaseUntil: null,
    attempts: 0,
    result: null,
    data: null,
    createdAt: 0,
    updatedAt: 0,
    expiresAt: Number(reply[1]),
  };
  for (let i = 0; i < asked.length; i++) {
    const value = reply[4 + i] ?? null;
    const field = asked[i]!;
    if (field === "fingerprint") record.fingerprint = value!;
    else if (field === "result" || field === "data") record[field] = value;
    else if (field === "leaseUntil") record.leaseUntil = value == null ? null : Number(value);
    else record[field] = Number(value);
  }
  return record;
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
  const {
    clock,
    prefix = "{idemkey}:",
    ttlMarginMs = 60_000,
    refusedRetryMs = 10_000,
    indexes = true,
  } = options;
  if (typeof indexes !== "boolean") {
    throw new TypeError(`redisStore: options.indexes must be a boolean, got ${typeof indexes}`);
  }
  if (!indexes && options.ttlMarginMs !== undefined) {
    throw new TypeError(
      "redisStore: options.ttlMarginMs does not apply with options.indexes false, whose records expire in Redis " +
        "exactly when their retention ends",
    );
  }
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
  checkNumber("redisStore: options.ttlMarginMs", ttlMarginMs, { integer: true });
  checkNumber("redisStore: options.refusedRetryMs", refusedRetryMs, { integer: true });
  return { clock, prefix, ttlMarginMs, refusedRetryMs, indexes };
}
