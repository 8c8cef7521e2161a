export { createHarness } from "./create-harness.js";
export { defineTool } from "./define-tool.js";
export {
  defaultModelTexts,
  type ModelTextContext,
  type ModelTexts,
  modelTextsOf,
  type OutcomeUnknownContext,
  outcomeUnknownText,
} from "./model-texts.js";
export type { HarnessOptions, WaitOptions } from "./options.js";
export type { LedgerData, LedgerDataV2, LedgerVersion } from "./record/types.js";
export { isFinal, type NoEffect, type RetryContext, type RetryOptions } from "./retry.js";
export type { Sleep } from "./sleep.js";
export type {
  ActionOptions,
  CallOptions,
  CallOutcome,
  Harness,
  HarnessEvent,
  HarnessEventType,
  HarnessPurgeOptions,
  LedgerEntry,
  LedgerEvent,
  ReconcileResult,
  Resolution,
  Tool,
  ToolContext,
  ToolDefinition,
} from "./types.js";
export { Effect } from "./types.js";
