export { claimKey } from "./claim.js";
export { holdClaim } from "./hold.js";
export type { Claim, ClaimSpec, Hold, Pause, Schedule } from "./types.js";
