export type { StepIdentity } from "../engines/call-in-step.js";
export { type InngestContext, type InngestRunOptions, run } from "./run.js";
