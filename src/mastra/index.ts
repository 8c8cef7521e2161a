export type { ApprovalDecision, ApprovalRequest } from "../approval/index.js";
export { idemkeyContext } from "./context.js";
export { type IdempotentMastraToolOptions, idempotentMastraTool } from "./tool.js";
