export type { StepIdentity } from "../engines/call-in-step.js";
export { callTool, retryUnlessOutcomeUnknown, runStep, stepIdentity } from "./step.js";
