export type { StepIdentity } from "../engines/call-in-step.js";
export { activityIdentity, callTool } from "./activity.js";
