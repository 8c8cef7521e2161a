export type { StepIdentity } from "../engines/call-in-step.js";
export { callTool, retryUnlessFinal, retryUnlessOutcomeUnknown, runStep, stepIdentity } from "./step.js";
