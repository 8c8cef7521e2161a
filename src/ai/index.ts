export { idemkeyContext } from "./context.js";
export { type IdempotentToolsOptions, idempotentTools, type ToolPolicy } from "./tools.js";
