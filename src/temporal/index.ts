export type { StepIdentity } from "../engines/call-in-step.js";
export { activityIdentity, callTool, type TemporalCallOptions } from "./activity.js";
