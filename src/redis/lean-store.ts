import { decideClaim, newRecord, resent } from "../store/record.js";
import type { ClaimResult, Expect, RecordPatch, Store } from "../store/types.js";
import { type ScriptRunner, script } from "./client.js";
import { LEAN_CLAIM, LEAN_DELETE, LEAN_GET, LEAN_UPDATE } from "./lean-scripts.js";
import { freshValue, fromValue, LINE, text } from "./lean-value.js";

const scripts = {
  claim: script(LEAN_CLAIM),
  update: script(LEAN_UPDATE),
  delete: script(LEAN_DELETE),
  get: script(LEAN_GET),
};

/** What the indexed store hands over: its runner, its options resolved, and its guard (layout, refusals, errors). */
export interface LeanContext {
  redis: ScriptRunner & Required<Pick<ScriptRunner, "setNew">>;
  clock: (() => number) | undefined;
  recordKey(key: string): string;
  guard<T>(operation: string, key: string | undefined, run: () => Promise<T>): Promise<T>;
}

/**
 * `redisStore(client, { indexes: false })`: records as strings (layout 3, lean-value.ts) and no index, so that a
 * new key costs one plain `SET ... NX GET` and its completion one small compare-and-set script. The token CAS, the
 * resend rule, leases and expiry on Redis's clock, and retention are the indexed store's; `list` and `purge` are
 * what it gives up (Redis expires each record itself when its retention ends).
 */
export function leanStore({ redis, clock, recordKey, guard }: LeanContext): Store {
  const given = () => (clock ? `${clock()}` : "");
  const unsupported = (what: string) => () =>
    Promise.reject(
      new TypeError(
        `redisStore: ${what} needs the store's indexes, which this store was made without (options.indexes: ` +
          "false); Redis deletes each record itself when its retention ends",
      ),
    );

  /** A claim the plain `SET` could not answer: decided in one script, on Redis's clock. */
  async function claimByScript(key: string, state: string, input: Parameters<Store["claim"]>[1]) {
    const reply = (await redis.run(
      scripts.claim,
      [recordKey(key)],
      [
        given(),
        state,
        text(input.token),
        text(input.fingerprint),
        state === "pending" ? String(input.leaseMs) : "",
        String(input.ttlMs),
        text(input.data),
      ],
    )) as string | [ClaimResult["status"] | "resent", string, string];
    if (typeof reply === "string")
      return { status: "claimed", record: newRecord(key, input, Number(reply)) } as const;
    const [status, stamp, value] = reply;
    const record = fromValue(key, value)!;
    if (status === "resent") return resent(record);
    if (status !== "taken_over") return { status, record };
    return { status, record: decideClaim(key, record, input, Number(stamp)).record, previous: record };
  }

  return {
    claim: (key, input) =>
      guard("claim", key, async (): Promise<ClaimResult> => {
        const state = input.state ?? "pending";
        const now = clock?.();
        const old = await redis
          .setNew(recordKey(key), freshValue(state, input, now), Math.max(1, input.ttlMs))
          .catch((error: unknown) => {
            // The scripts' own refusal (lean-scripts.ts), for the guard to turn into a StoreLayoutError.
            if (!String((error as Error)?.message).includes("WRONGTYPE")) throw error;
            throw new Error(`IDEMKEY_LAYOUT ${recordKey(key)} is not a string`, { cause: error });
          });
        // Created. Its times were Redis's when the SET ran; this process's clock is as close as one round trip.
        if (old === null) return { status: "claimed", record: newRecord(key, input, now ?? Date.now()) };
        // A record that is neither pending nor relative needs no clock to answer: a key that exists is live (its
        // physical expiry is its logical one, unless the `clock` option decides, checked here), and only a pending
        // record can be taken over or be this very claim resent. A retention of 0 ms leaves no such margin.
        const record = fromValue(key, old);
        if (
          record !== undefined &&
          record.state !== "pending" &&
          record.expiresAt > record.updatedAt &&
          (now === undefined || record.expiresAt > now)
        ) {
          return { status: "exists", record };
        }
        return claimByScript(key, state, input);
      }),
    get: (key) =>
      guard("get", key, async () => {
        const value = (await redis.run(scripts.get, [recordKey(key)], [given()])) as string | null;
        return value === null ? undefined : fromValue(key, value);
      }),
    update: (key, expect, patch) =>
      guard("update", key, async () => {
        const reply = (await redis.run(
          scripts.update,
          [recordKey(key)],
          updateArgs(given(), expect, patch),
        )) as [string, string] | null;
        return reply ? fromValue(key, reply[1]) : undefined;
      }),
    delete: (key, expect) =>
      guard("delete", key, async () => {
        const deleted = await redis.run(scripts.delete, [recordKey(key)], [given(), ...expectation(expect)]);
        return Number(deleted) === 1;
      }),
    list: unsupported("list()"),
    purge: unsupported("purge()"),
    async close() {},
  };
}

/** `=` and the token's line ('=' alone for a null token), or '' for any; then the state or ''. */
const expectation = (expect: Expect) => [
  expect.token === undefined ? "" : `=${text(expect.token)}`,
  expect.state ?? "",
];

/** LEAN_UPDATE's ARGV: now, the expectation, ttlMs, leaseMs, then line/value pairs ('' clears). */
function updateArgs(now: string, expect: Expect, patch: RecordPatch): string[] {
  const args = [
    now,
    ...expectation(expect),
    patch.ttlMs === undefined ? "" : String(patch.ttlMs),
    patch.leaseMs == null ? "" : String(patch.leaseMs),
  ];
  if (patch.state !== undefined) args.push(`${LINE.state}`, patch.state);
  if (patch.token !== undefined) args.push(`${LINE.token}`, text(patch.token));
  if (patch.leaseMs === null) args.push(`${LINE.leaseUntil}`, "");
  if (patch.attempts !== undefined) args.push(`${LINE.attempts}`, String(patch.attempts));
  if (patch.result !== undefined) args.push(`${LINE.result}`, text(patch.result));
  if (patch.data !== undefined) args.push(`${LINE.data}`, text(patch.data));
  return args;
}
