// The harness side: keys, tools, the harness and its ledger. The owner's engine is on `idemkey/owner`.
export * from "./errors/index.js";
export * from "./harness/index.js";
export * from "./key/index.js";
export * from "./store/index.js";
