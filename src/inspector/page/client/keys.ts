import type { KeyList, KeySummary } from "../../owner-keys.js";
import { $, copyButton, el } from "./dom.js";
import { clock, iso, shortKey } from "./format.js";
import { badge } from "./render.js";

// The owner's keys: what the HTTP middleware, mcpDedupe, the gateway and idempotentExecutor recorded in the same
// store, listed alike.

const KIND_LABELS = { http: "HTTP", mcp: "MCP", a2a: "A2A" } as const;

function call(row: KeySummary): string {
  return row.kind === "http" ? `${row.method ?? ""} ${row.target ?? ""}` : (row.tool ?? "");
}

function answer(row: KeySummary): string {
  const result = row.result;
  if (result === undefined) return row.state === "outcome_unknown" ? "unknown: never sent again" : "—";
  if ("status" in result)
    return "notSaved" in result ? `${result.status} (not saved)` : String(result.status);
  if ("jsonrpcError" in result) return "JSON-RPC error";
  if ("a2aAnswer" in result) {
    const answer = result.a2aAnswer as { kind?: string } | null;
    return answer?.kind === "task" ? "task" : "message";
  }
  const value = result.toolResult as { isError?: boolean } | null;
  return value?.isError === true ? "error result" : "tool result";
}

export function renderKeys(list: KeyList): void {
  $("keys-panel").hidden = list.total === 0;
  $("keys-note").textContent = `${list.total} key${list.total === 1 ? "" : "s"}${
    list.total > list.keys.length ? `, the newest ${list.keys.length} shown` : ""
  }${list.truncated ? " (--max-records reached)" : ""}`;
  $("keys")
    .querySelector("tbody")!
    .replaceChildren(
      ...list.keys.map((row) =>
        el(
          "tr",
          { "data-key": row.id, title: row.result === undefined ? "" : JSON.stringify(row.result, null, 2) },
          el("td", { text: KIND_LABELS[row.kind] }),
          el("td", { title: `scope id ${row.scopeId}` }, el("code", { text: row.scope })),
          el(
            "td",
            {},
            el("code", { text: row.key.length > 24 ? shortKey(row.key) : row.key }),
            copyButton(row.key),
          ),
          el("td", {}, badge(row.state)),
          el("td", { text: call(row) }),
          el("td", { text: answer(row) }),
          el("td", { title: iso(row.createdAt), text: clock(row.createdAt) }),
        ),
      ),
    );
}
