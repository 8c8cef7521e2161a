export * from "./errors/index.js";
export * from "./harness/index.js";
export * from "./key/index.js";
export * from "./owner/index.js";
export * from "./store/index.js";
