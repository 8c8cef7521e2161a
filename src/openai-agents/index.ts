export { idemkeyContext } from "./context.js";
export { type IdempotencyOptions, idempotentTool, type OpenAIIdempotentToolOptions } from "./tool.js";
