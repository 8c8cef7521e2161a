// One subpath, two sides: client/ wraps a connected client's tools for the harness, server/ dedupes a server's
// handlers; meta.ts (the _meta field names) and types.ts (the result shapes) are the wire both sides speak.
export {
  type McpArguments,
  type McpCallClient,
  type McpCallParams,
  type McpToolOptions,
  mcpTool,
} from "./client/client-tool.js";
export { isMcpListError, McpListError, type McpListStop } from "./client/list-error.js";
export {
  annotatedEffect,
  type McpListClient,
  type McpListedTool,
  type McpToolsOptions,
  mcpTools,
} from "./client/list-tools.js";
export { type McpLookupReconcileOptions, mcpLookupReconcile } from "./client/lookup-reconcile.js";
export { isMcpToolError, McpToolError, type McpToolErrorOptions } from "./client/tool-error.js";
export {
  IDEMPOTENCY_KEY_META,
  LOOKUP_META,
  LOOKUP_STATE_META,
  LookupState,
  NO_EFFECT_META,
  REFUSAL_META,
  REPLAYED_META,
  Refusal,
} from "./meta.js";
export { type McpDedupe, mcpDedupe } from "./server/dedupe.js";
export type { McpDedupeOptions, McpErrorEvent, McpHandlerExtra } from "./server/dedupe-options.js";
export { InvalidIdempotencyKeyError } from "./server/invalid-key-error.js";
export { idempotencyKeyOf } from "./server/read-key.js";
export type { McpCallToolResult, McpContent, McpToolAnnotations, McpToolDefinition } from "./types.js";
