import { LedgerStateError } from "../errors/ledger-state-error.js";
import { canonicalizeAt, DEFAULT_MAX_DEPTH } from "../key/canonicalize.js";
import type { Expect, RecordPatch, RecordState } from "../store/types.js";
import { type Core, notify } from "./call.js";
import { decodeData, PREFIX, toEntry, withEvent } from "./ledger.js";
import type { LedgerCall } from "./record/types.js";
import type { ActionOptions, Harness, HarnessEvent, LedgerEntry, LedgerEvent } from "./types.js";

type Admin = Pick<Harness, "get" | "list" | "approve" | "deny" | "resolve">;

/** The ledger's actions for people and inspectors: read entries, approve, deny, resolve. Each records who and when. */
export function ledgerAdmin(core: Core): Admin {
  /**
   * Moves a record from the state `from` with a compare-and-set that also pins its token, so that a record that
   * changed hands (or expired and was claimed anew) between the read and the write is never touched.
   */
  async function act(
    key: string,
    from: RecordState,
    verb: string,
    change: (data: LedgerCall, at: number) => { patch: RecordPatch; event: LedgerEvent },
    announce: () => object,
  ): Promise<LedgerEntry> {
    checkKey(key);
    const started = core.clock();
    const record = await core.store.get(PREFIX + key);
    if (record?.state !== from) {
      throw new LedgerStateError({
        key,
        state: record?.state,
        reason: "wrong-state",
        action: verb,
        expected: from,
      });
    }
    const data = decodeData(record);
    const { patch, event } = change(data, core.clock());
    const expect: Expect = { state: from };
    if (record.token !== null) expect.token = record.token;
    const updated = await core.store.update(PREFIX + key, expect, {
      ...patch,
      data: withEvent(data, event, core.ledgerVersion),
    });
    if (updated === undefined) {
      throw new LedgerStateError({ key, state: undefined, reason: "changed", action: verb });
    }
    if (core.onEvent) {
      notify(core.onEvent, {
        key,
        taskId: data.taskId,
        tool: data.tool,
        attempt: updated.attempts,
        durationMs: core.clock() - started,
        ...announce(),
      } as HarnessEvent);
    }
    return toEntry(updated);
  }

  return {
    async get(key) {
      checkKey(key);
      const record = await core.store.get(PREFIX + key);
      return record && toEntry(record);
    },
    async list(query = {}) {
      const { state, after, limit } = query;
      const records = await core.store.list({
        prefix: PREFIX,
        ...(state === undefined ? {} : { state }),
        ...(after === undefined ? {} : { after: PREFIX + after }),
        ...(limit === undefined ? {} : { limit }),
      });
      return records.map(toEntry);
    },
    async approve(key, options) {
      const by = checkBy(options);
      return act(
        key,
        "awaiting_approval",
        "approve",
        (_, at) => ({
          patch: { state: "approved", token: null },
          event: withBy({ type: "approved", at }, by),
        }),
        () => ({ type: "approved", by }),
      );
    },
    async deny(key, reason, options) {
      const by = checkBy(options);
      if (typeof reason !== "string" || reason.length === 0) {
        throw new TypeError(`reason must be a non-empty string, got ${typeof reason}`);
      }
      return act(
        key,
        "awaiting_approval",
        "deny",
        (_, at) => ({
          patch: { state: "denied", token: null },
          event: withBy({ type: "denied", at, reason }, by),
        }),
        () => ({ type: "denied", by, reason }),
      );
    },
    async resolve(key, resolution, options) {
      const by = checkBy(options);
      const r = resolution as Partial<{ result: unknown; retry: unknown }> | null;
      const retry = typeof r === "object" && r !== null && r.retry === true && !("result" in r);
      if (!retry && (typeof r !== "object" || r === null || !("result" in r) || "retry" in r)) {
        throw new TypeError("resolution must be { result } (it took effect) or { retry: true } (it did not)");
      }
      // Checked before the write, so that a result the ledger cannot replay is never recorded.
      const result = retry ? undefined : canonicalizeAt(r!.result, "$.result", DEFAULT_MAX_DEPTH);
      const how = retry ? "retry" : "result";
      return act(
        key,
        "outcome_unknown",
        "resolve",
        (_, at) => ({
          patch: retry
            ? { state: "approved", token: null }
            : { state: "completed", token: null, result: result!, ttlMs: core.retentionMs },
          event: withBy({ type: "resolved", at, how }, by),
        }),
        () => ({ type: "resolved", by, how }),
      );
    },
  };
}

function withBy<E extends LedgerEvent>(event: E, by: string | undefined): E {
  return by === undefined ? event : { ...event, by };
}

function checkKey(key: unknown): asserts key is string {
  if (typeof key !== "string" || key.length === 0) {
    throw new TypeError(`key must be a non-empty string (an idempotency key), got ${typeof key}`);
  }
}

function checkBy(options: ActionOptions | undefined): string | undefined {
  const by = options?.by;
  if (by !== undefined && (typeof by !== "string" || by.length === 0)) {
    throw new TypeError(`options.by must be a non-empty string, got ${typeof by}`);
  }
  return by;
}
