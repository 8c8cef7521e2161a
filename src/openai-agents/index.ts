export { idemkeyContext } from "./context.js";
export { type IdempotencyOptions, idempotentTool } from "./tool.js";
