export { idemkeyContext } from "../langgraph/context.js";
export { type IdempotencyMiddlewareOptions, idempotencyMiddleware, type ToolPolicy } from "./middleware.js";
