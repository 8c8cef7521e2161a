export { idemkeyContext } from "./context.js";
export { type IdempotentSdkToolOptions, idempotentSdkTool } from "./tool.js";
