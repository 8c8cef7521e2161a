export { createHarness } from "./create-harness.js";
export { defineTool } from "./define-tool.js";
export type { LedgerData } from "./ledger.js";
export type { HarnessOptions, WaitOptions } from "./options.js";
export type { RetryContext, RetryOptions } from "./retry.js";
export type { Sleep } from "./sleep.js";
export type {
  ActionOptions,
  CallOptions,
  Harness,
  HarnessEvent,
  HarnessEventType,
  LedgerEntry,
  LedgerEvent,
  ReconcileResult,
  Resolution,
  Tool,
  ToolContext,
  ToolDefinition,
} from "./types.js";
export { Effect } from "./types.js";
