export { type MemoryStoreOptions, memoryStore } from "./memory.js";
export {
  type ClaimInput,
  type ClaimResult,
  type Expect,
  type ListQuery,
  type RecordPatch,
  RecordState,
  type Store,
  type StoreOptions,
  type StoreRecord,
} from "./types.js";
