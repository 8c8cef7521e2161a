export type { StepIdentity } from "../engines/call-in-step.js";
export { type RestateRunOptions, run } from "./run.js";
