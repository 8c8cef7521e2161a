export { Attr, KEY_BAGGAGE, Outcome } from "./attributes.js";
export { tracedEvents } from "./events.js";
export { tracedExpress } from "./express.js";
export { tracedHarness } from "./harness.js";
export { tracedHono } from "./hono.js";
export type { TelemetryOptions } from "./instruments.js";
export { tracedMcpDedupe } from "./mcp.js";
export { type ReconcilerTelemetryOptions, tracedReconciler } from "./reconciler.js";
