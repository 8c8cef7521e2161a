import type { Store } from "../store/types.js";
import { KEY_KINDS, type KeySummary, listKeys } from "./owner-keys.js";
import { DEFAULT_REDACT, redactor } from "./redact.js";
import { scanner } from "./snapshot.js";
import { type CallSummary, listCalls } from "./views.js";

/** One line of `idemkey inspect --list`: a ledger call (`kind: "call"`) or an owner's key (`http`, `mcp`, `a2a`). */
export type ListedRecord = ({ kind: "call" } & CallSummary) | KeySummary;

/**
 * Everything the inspector shows, read once and newest first within each part: the ledger's calls, then the
 * owner's keys (the middleware's, mcpDedupe's, the gateway's and idempotentExecutor's records), masked as the page masks them.
 */
export async function listRecords(
  store: Store,
  options: { redact?: readonly string[]; maxRecords?: number } = {},
): Promise<{ records: ListedRecord[]; truncated: boolean }> {
  const fields = options.redact ?? DEFAULT_REDACT;
  const maxRecords = options.maxRecords ?? 10_000;
  const redact = redactor(fields);
  const snapshot = await scanner(store, maxRecords, Date.now).latest(0);
  const calls = listCalls(snapshot, {}, 0, maxRecords, redact.text);
  const keys = await listKeys(
    store,
    redact,
    fields.length > 0,
    {},
    0,
    KEY_KINDS.length * maxRecords,
    maxRecords,
  );
  return {
    records: [...calls.calls.map((call) => ({ kind: "call" as const, ...call })), ...keys.keys],
    truncated: calls.truncated || keys.truncated,
  };
}
