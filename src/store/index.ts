export { type MemoryStoreOptions, memoryStore } from "./memory.js";
export {
  type Changes,
  type ChangesQuery,
  type ClaimInput,
  type ClaimResult,
  type ClaimStore,
  type Expect,
  type ListQuery,
  type RecordPatch,
  RecordState,
  type Store,
  type StoreOptions,
  type StoreRecord,
} from "./types.js";
