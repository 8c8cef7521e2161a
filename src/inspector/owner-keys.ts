import { JSONRPC_ERROR_SAVED } from "../mcp/meta.js";
import type { OwnerEvent } from "../owner/audit.js";
import { decodeSaved } from "../owner/saved-response.js";
import { StorePrefix } from "../store/scoped-key.js";
import type { RecordState, Store, StoreRecord } from "../store/types.js";
import type { KeyedId } from "./keyed-id.js";
import { REDACTED, type Redactor } from "./redact.js";
import { holderOf } from "./snapshot.js";
import type { RecordProgress } from "./views.js";

// The owner's half of the store: the keys an HTTP API (the middleware, `idemkey gateway http`), an MCP server
// (`mcpDedupe`, `idemkey gateway mcp`) and an A2A agent (`idempotentExecutor`) were sent, one row per (scope, key).
// The gateway writes the records the middleware and mcpDedupe write, so one reader lists them all alike.

/** Which owner wrote the record: an HTTP API (`http:`), an MCP server (`mcp:`) or an A2A agent (`a2a:`). */
export type KeyKind = "http" | "mcp" | "a2a";

/** The kinds, in the order they are listed. */
export const KEY_KINDS: readonly KeyKind[] = ["http", "mcp", "a2a"];

/**
 * What the owner answered, as recorded: a saved HTTP response, an MCP tool result or JSON-RPC error, or the A2A
 * message or task an agent's execution ended with (a `raw` part's bytes as `{ "dev.idemkey/bytes": "<base64>" }`).
 */
export type RecordedAnswer =
  | { status: number; headers: [string, string][]; body: unknown; bodyEncoding?: "base64" }
  | { status: number; notSaved: string }
  | { toolResult: unknown }
  | { jsonrpcError: unknown }
  | { a2aAnswer: unknown };

export interface KeySummary extends RecordProgress {
  kind: KeyKind;
  /**
   * The record's name: its store key (`http:` and a SHA-256 of scope and key) while scopes are shown; while they
   * are masked, the kind's prefix and a keyed hash of that store key instead, since from a guessed scope and the
   * key shown anyone could compute the store key and so confirm the guess.
   */
  id: string;
  /**
   * Whose key it is, as the owner's scope named the caller (an API key header, a client certificate, a stdio
   * client's fixed scope). Masked while any field is redacted, since a scope taken from an API key header is that
   * key; `scopeId` tells callers apart either way.
   */
  scope: string;
  /**
   * 12 hex digits of an HMAC-SHA-256 of the scope under the inspector's secret (its `secret` option): groups one
   * caller's keys without showing the scope, and confirms no guess of it to anyone without the secret. The same
   * scope has the same id while the inspector runs, and across inspectors given the same secret.
   */
  scopeId: string;
  /** The idempotency key the caller sent (or the gateway derived). */
  key: string;
  /** The MCP tool called, for `mcp` keys; `a2a message` for `a2a` keys. */
  tool?: string;
  /** The request's method and target (path and query), for `http` keys. */
  method?: string;
  target?: string;
  /** What a completed key answered, as a retry replays it (masked like ledger results). */
  result?: RecordedAnswer;
  /**
   * The key's audit trail, when it has one: `taken_over` (a retry found the lease lapsed and recorded the outcome
   * unknown), then `resolved` with `how: "late_completion"` when the request taken over saved its answer after all.
   */
  events?: OwnerEvent[];
}

/** How the owner's keys are shown: one redaction, whether scopes are masked, and the keyed ids. */
export interface KeyView {
  redact: Redactor;
  maskScope: boolean;
  id: KeyedId;
}

/**
 * A record under `http:`, `mcp:` or `a2a:` as a row, as shown (every string through the redaction), or `undefined`
 * for one idemkey did not write.
 */
export function toKeySummary(record: StoreRecord, view: KeyView): KeySummary | undefined {
  const { redact, maskScope, id } = view;
  const kind = KEY_KINDS.find((k) => record.key.startsWith(StorePrefix[k]));
  if (kind === undefined) return undefined;
  let data: Record<string, unknown>;
  try {
    data = JSON.parse(record.data ?? "null") as Record<string, unknown>;
  } catch {
    return undefined;
  }
  if (
    typeof data !== "object" ||
    data === null ||
    typeof data.scope !== "string" ||
    typeof data.key !== "string"
  )
    return undefined;
  const out: KeySummary = {
    kind,
    id: maskScope ? StorePrefix[kind] + id(record.key, 32) : record.key,
    scope: maskScope ? REDACTED : data.scope,
    scopeId: id(data.scope, 12),
    key: data.key,
    state: record.state,
    attempts: record.attempts,
    holder: record.state === "pending" ? holderOf(record.token, id) : null,
    leaseUntil: record.leaseUntil,
    createdAt: record.createdAt,
    updatedAt: record.updatedAt,
    expiresAt: record.expiresAt,
  };
  if (kind === "http") {
    out.method = String(data.method);
    out.target = String(data.target);
  } else out.tool = String(data.tool);
  if (Array.isArray(data.events)) out.events = data.events as OwnerEvent[];
  // Every string of the row through the redaction; the answer, written by the owner's code, masked as results are.
  const shown = redact.strings(out);
  if (record.state === "completed" && record.result !== null) {
    const answer = ANSWERS[kind](record.result);
    if (answer !== undefined) shown.result = redact(answer) as RecordedAnswer;
  }
  return shown;
}

function httpAnswer(text: string): RecordedAnswer | undefined {
  let saved: ReturnType<typeof decodeSaved>;
  try {
    saved = decodeSaved(text);
  } catch {
    return undefined;
  }
  if (!saved.saved) return { status: saved.status, notSaved: saved.reason };
  const { status, body } = saved.response;
  const headers = saved.response.headers.map(([name, value]): [string, string] => [name, value]);
  const type = headers.find(([name]) => name.toLowerCase() === "content-type")?.[1] ?? "";
  let decoded: string;
  try {
    decoded = new TextDecoder("utf-8", { fatal: true }).decode(body);
  } catch {
    return { status, headers, body: Buffer.from(body).toString("base64"), bodyEncoding: "base64" };
  }
  if (/[/+]json\b/i.test(type)) {
    try {
      return { status, headers, body: JSON.parse(decoded) };
    } catch {
      // Said JSON and is not: shown as the text it is.
    }
  }
  return { status, headers, body: decoded };
}

function mcpAnswer(text: string): RecordedAnswer | undefined {
  let saved: unknown;
  try {
    saved = JSON.parse(text);
  } catch {
    return undefined;
  }
  if (typeof saved === "object" && saved !== null && JSONRPC_ERROR_SAVED in saved) {
    return { jsonrpcError: (saved as Record<string, unknown>)[JSONRPC_ERROR_SAVED] };
  }
  return { toolResult: saved };
}

function a2aAnswer(text: string): RecordedAnswer | undefined {
  try {
    return { a2aAnswer: JSON.parse(text) };
  } catch {
    return undefined;
  }
}

const ANSWERS: Record<KeyKind, (text: string) => RecordedAnswer | undefined> = {
  http: httpAnswer,
  mcp: mcpAnswer,
  a2a: a2aAnswer,
};

/** What `/api/keys` filters on: each as shown, never as recorded, so that no filter confirms a masked scope. */
export interface KeyFilter {
  kind?: KeyKind;
  state?: RecordState;
  /** Only the keys whose scope shows as this (a masked scope shows as `[redacted]`, whatever it is). */
  scope?: string;
  /** Only the keys of this `scopeId`: one caller's, whether its scope is shown or not. */
  scopeId?: string;
}

/**
 * The owner's keys (`http:`, `mcp:` and `a2a:` records, up to `maxRecords` of each), newest first, filtered on
 * the rows as shown and paged.
 */
export async function listKeys(
  store: Store,
  view: KeyView,
  filter: KeyFilter,
  offset: number,
  limit: number,
  maxRecords: number,
) {
  const rows: KeySummary[] = [];
  let truncated = false;
  let unreadable = 0;
  for (const kind of KEY_KINDS) {
    if (filter.kind !== undefined && filter.kind !== kind) continue;
    const read = await readPrefix(store, StorePrefix[kind], maxRecords);
    truncated ||= read.truncated;
    for (const record of read.records) {
      const row = toKeySummary(record, view);
      if (row === undefined) unreadable++;
      else rows.push(row);
    }
  }
  const matching = rows
    .filter(
      (row) =>
        (filter.state === undefined || row.state === filter.state) &&
        (filter.scope === undefined || row.scope === filter.scope) &&
        (filter.scopeId === undefined || row.scopeId === filter.scopeId),
    )
    .sort((a, b) => b.createdAt - a.createdAt || (a.id < b.id ? -1 : 1));
  return {
    total: matching.length,
    offset,
    limit,
    truncated,
    unreadable,
    keys: matching.slice(offset, offset + limit),
  };
}

/** What `/api/keys` answers. */
export type KeyList = Awaited<ReturnType<typeof listKeys>>;

async function readPrefix(store: Store, prefix: string, max: number) {
  const records: StoreRecord[] = [];
  let after: string | undefined;
  for (;;) {
    const limit = Math.min(500, max - records.length + 1);
    const page = await store.list({ prefix, limit, ...(after === undefined ? {} : { after }) });
    for (const record of page) {
      if (records.length === max) return { records, truncated: true };
      records.push(record);
    }
    if (page.length < limit) return { records, truncated: false };
    after = page[page.length - 1]!.key;
  }
}
