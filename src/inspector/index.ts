export { driverFor, registerDriver, storeDrivers } from "../drivers/list.js";
export {
  type DriverName,
  type DriverPeer,
  defineDriver,
  type StoreDriver,
  type StoreUrlContext,
  type StoreUrlFields,
} from "../store/driver.js";
export { readFileUrl, readServerUrl, type ServerUrlOptions } from "../store/driver-url.js";
export { TOKEN_HEADER } from "./guard.js";
export { createInspector, type Inspector } from "./inspector.js";
export { type ListedRecord, listRecords } from "./list.js";
export { isLoopback } from "./loopback.js";
export type { InspectorOptions } from "./options.js";
export type { KeyKind, KeyList, KeySummary, RecordedAnswer } from "./owner-keys.js";
export { DEFAULT_REDACT, REDACTED, redactor } from "./redact.js";
export { PROBLEM_BASE } from "./respond.js";
export { type ServedInspector, type ServeOptions, serveInspector } from "./serve.js";
export type { Observation } from "./snapshot.js";
export { type OpenedStore, openStore, parseStoreUrl, type StoreUrl } from "./store-url.js";
export { StoreUrlError } from "./store-url-error.js";
export type { CallDetail, CallSummary } from "./views.js";
