import type { Store } from "../store/types.js";
import { keyedId, randomSecret } from "./keyed-id.js";
import { KEY_KINDS, type KeySummary, listKeys } from "./owner-keys.js";
import { DEFAULT_REDACT, redactor } from "./redact.js";
import { scanner } from "./snapshot.js";
import { type CallSummary, listCalls } from "./views.js";

/** One line of `idemkey inspect --list`: a ledger call (`kind: "call"`) or an owner's key (`http`, `mcp`, `a2a`). */
export type ListedRecord = ({ kind: "call" } & CallSummary) | KeySummary;

/**
 * Everything the inspector shows, read once and newest first within each part: the ledger's calls, then the
 * owner's keys (the middleware's, mcpDedupe's, the gateway's and idempotentExecutor's records), masked as the page
 * masks them. `secret` keys the ids derived from what is masked (`scopeId`, `holder`), as the inspector's option
 * of that name does: without it they are new for each listing.
 */
export async function listRecords(
  store: Store,
  options: { redact?: readonly string[]; maxRecords?: number; secret?: string } = {},
): Promise<{ records: ListedRecord[]; truncated: boolean }> {
  const fields = options.redact ?? DEFAULT_REDACT;
  const maxRecords = options.maxRecords ?? 10_000;
  const secret = options.secret ?? randomSecret();
  if (typeof secret !== "string" || secret.length < 16) {
    throw new TypeError("options.secret must be a string of at least 16 characters");
  }
  const redact = redactor(fields);
  const id = keyedId(secret);
  const snapshot = await scanner(store, maxRecords, Date.now, id).latest(0);
  const calls = listCalls(snapshot, {}, 0, maxRecords, redact);
  const keys = await listKeys(
    store,
    { redact, maskScope: fields.length > 0, id },
    {},
    0,
    KEY_KINDS.length * maxRecords,
    maxRecords,
  );
  // Through the redaction once more on the way out, as every answer of the inspector's API is.
  const records = [...calls.calls.map((call) => ({ kind: "call" as const, ...call })), ...keys.keys];
  return { records: redact.strings(records), truncated: calls.truncated || keys.truncated };
}
