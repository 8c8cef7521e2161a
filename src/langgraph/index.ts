export type { ApprovalDecision, ApprovalRequest } from "../approval/index.js";
export { idemkeyContext } from "./context.js";
export { defaultTaskId } from "./task-id.js";
export { type IdempotentToolOptions, idempotentTool } from "./tool.js";
