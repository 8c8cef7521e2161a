export type { StepIdentity } from "../engines/call-in-step.js";
export { callTool, stepIdentity } from "./step.js";
