export {
  type McpArguments,
  type McpCallClient,
  type McpCallParams,
  type McpToolOptions,
  mcpTool,
} from "./client-tool.js";
export { type McpDedupe, mcpDedupe } from "./dedupe.js";
export type { McpDedupeOptions, McpHandlerExtra } from "./dedupe-options.js";
export { InvalidIdempotencyKeyError } from "./invalid-key-error.js";
export {
  annotatedEffect,
  type McpListClient,
  type McpListedTool,
  type McpToolsOptions,
  mcpTools,
} from "./list-tools.js";
export { IDEMPOTENCY_KEY_META, REFUSAL_META, REPLAYED_META, Refusal } from "./meta.js";
export { idempotencyKeyOf } from "./read-key.js";
export { McpToolError } from "./tool-error.js";
export type { McpCallToolResult, McpContent, McpToolAnnotations, McpToolDefinition } from "./types.js";
