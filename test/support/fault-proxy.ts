// The proxy lives with the chaos machinery, which uses it for its store-fault mode; the tests use the same one.
export { type FaultProxy, faultProxy } from "../../demo/faults/proxy.js";
