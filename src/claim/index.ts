export { claimKey } from "./claim.js";
export { holdClaim } from "./hold.js";
export { unknownAfterTakeover } from "./late.js";
export type { Claim, ClaimSpec, Hold, Pause, SaveOptions, Schedule } from "./types.js";
