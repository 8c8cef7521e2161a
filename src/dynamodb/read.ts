import type { StoreRecord } from "../store/types.js";
import { commands } from "./commands.js";
import type { DynamoContext } from "./context.js";
import { fromItem, type Item, keyOf } from "./item.js";

/**
 * The item for `key` as DynamoDB holds it now: a strongly consistent `GetItem` (an eventually consistent read could
 * answer from before the last write, and a claim deciding on it would take a completed key for a pending one).
 * Expired or not: the caller compares `expiresAt` with its clock.
 */
export async function readRecord(context: DynamoContext, key: string): Promise<StoreRecord | undefined> {
  const { Item } = await context.send(
    new commands.GetItemCommand({ TableName: context.table, Key: keyOf(key), ConsistentRead: true }),
  );
  return Item === undefined ? undefined : fromItem(Item as Item);
}
