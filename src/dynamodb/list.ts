import { keyRange } from "../store/range.js";
import { sinceMs } from "../store/since.js";
import type { Changes, ChangesQuery, ListQuery, StoreRecord } from "../store/types.js";
import { commands } from "./commands.js";
import type { DynamoContext } from "./context.js";
import { fromItem, type Item, KEY, keyOf, LIST_PARTITION, LIST_PARTITION_VALUE } from "./item.js";
import { LIST_INDEX } from "./layout.js";

/** BatchGetItem's most keys per request. */
const BATCH = 100;

/**
 * `Store.list`: the keys in order from the list index (one `Query` per page, on a sort key DynamoDB orders by UTF-8
 * bytes, as the other stores order keys), then the records themselves by a strongly consistent `BatchGetItem`,
 * since the index holds keys only and is eventually consistent: a key created a moment ago may be missing from a
 * page, but a record shown is the record as it stands. Expired records and other states are dropped here, so a page
 * with a `state` filter may read several index pages.
 */
export async function listRecords(context: DynamoContext, query: ListQuery): Promise<StoreRecord[]> {
  const limit = query.limit ?? 100;
  const { lower } = keyRange(query.prefix, query.after);
  const prefix = query.prefix ?? "";
  const values: Record<string, { S: string }> = { ":lp": { S: LIST_PARTITION_VALUE } };
  let condition = `${LIST_PARTITION} = :lp`;
  if (lower) {
    condition += ` AND ${KEY} ${lower.inclusive ? ">=" : ">"} :lower`;
    values[":lower"] = { S: lower.key };
  }
  const records: StoreRecord[] = [];
  let start: Item | undefined;
  for (;;) {
    const page = await context.send(
      new commands.QueryCommand({
        TableName: context.table,
        IndexName: LIST_INDEX,
        KeyConditionExpression: condition,
        ExpressionAttributeValues: values,
        Limit: Math.max(limit - records.length, 1),
        ExclusiveStartKey: start,
      }),
    );
    const keys = (page.Items as Item[]).map((item) => item[KEY]!.S!);
    // Keys run in byte order from the lower bound: the first one outside the prefix ends the listing.
    const inside = keys.filter((key) => key.startsWith(prefix));
    const now = context.clock();
    for (const record of await readMany(context, inside)) {
      if (record.expiresAt <= now) continue;
      if (query.state !== undefined && record.state !== query.state) continue;
      records.push(record);
    }
    start = page.LastEvaluatedKey;
    if (records.length >= limit || inside.length < keys.length || start === undefined) {
      return records.slice(0, limit);
    }
  }
}

/**
 * `Store.changes`: every record of the prefix, read as `list` reads them (the index's keys, then the records
 * strongly consistent), to count the live ones and keep those updated at or after `since`. DynamoDB has no index on
 * `updatedAt` that a prefix could use, and one would be written on every update; so a watcher's poll costs what
 * listing the prefix costs, which is what a watcher of a store without `changes` pays anyway.
 */
export async function changedRecords(context: DynamoContext, query: ChangesQuery): Promise<Changes> {
  const since = sinceMs(query.since);
  const limit = query.limit ?? 100;
  const prefix = query.prefix ?? "";
  const now = context.clock();
  const records: StoreRecord[] = [];
  let live = 0;
  let start: Item | undefined;
  const values: Record<string, { S: string }> = { ":lp": { S: LIST_PARTITION_VALUE } };
  let condition = `${LIST_PARTITION} = :lp`;
  if (prefix !== "") {
    condition += ` AND begins_with(${KEY}, :prefix)`;
    values[":prefix"] = { S: prefix };
  }
  do {
    const page = await context.send(
      new commands.QueryCommand({
        TableName: context.table,
        IndexName: LIST_INDEX,
        KeyConditionExpression: condition,
        ExpressionAttributeValues: values,
        ExclusiveStartKey: start,
      }),
    );
    const keys = (page.Items as Item[]).map((item) => item[KEY]!.S!).filter((key) => key.startsWith(prefix));
    for (const record of await readMany(context, keys)) {
      if (record.expiresAt <= now) continue;
      live++;
      if (record.updatedAt >= since && records.length < limit) records.push(record);
    }
    start = page.LastEvaluatedKey;
  } while (start !== undefined);
  return { records, live, now };
}

/** The records for `keys`, in their order, read strongly consistent; keys deleted since the index listed them are left out. */
async function readMany(context: DynamoContext, keys: string[]): Promise<StoreRecord[]> {
  const found = new Map<string, StoreRecord>();
  for (let i = 0; i < keys.length; i += BATCH) {
    let pending: Item[] | undefined = keys.slice(i, i + BATCH).map(keyOf);
    while (pending !== undefined && pending.length > 0) {
      const { Responses, UnprocessedKeys } = await context.send(
        new commands.BatchGetItemCommand({
          RequestItems: { [context.table]: { Keys: pending, ConsistentRead: true } },
        }),
      );
      for (const item of (Responses?.[context.table] ?? []) as Item[]) {
        const record = fromItem(item);
        found.set(record.key, record);
      }
      // Keys DynamoDB left for later (capacity): asked again, as its documentation says to.
      pending = UnprocessedKeys?.[context.table]?.Keys as Item[] | undefined;
    }
  }
  return keys.flatMap((key) => found.get(key) ?? []);
}
