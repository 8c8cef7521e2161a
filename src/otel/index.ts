export { Attr, KEY_BAGGAGE, Outcome } from "./attributes.js";
export { tracedHarness } from "./harness.js";
export type { TelemetryOptions } from "./instruments.js";
export { tracedMcpDedupe } from "./mcp.js";
