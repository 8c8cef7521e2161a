export type { DynamoClient } from "./client.js";
export { dynamoDriver } from "./description.js";
export { type CreatedTable, createDynamoTable } from "./layout.js";
export { type DynamoStoreOptions, dynamoStore } from "./store.js";
