import { isConditionFailed } from "./client.js";
import { commands } from "./commands.js";
import type { DynamoContext } from "./context.js";
import { type Item, KEY, keyOf } from "./item.js";

/**
 * `Store.purge`: a `Scan` for items expired on this store's clock, page by page, each deleted by a `DeleteItem`
 * whose condition says it is still expired (a claim may have replaced it since the scan read it), until `limit` are
 * deleted or the table ends. Bounded in what it deletes, not in what it reads: DynamoDB's TTL deletes expired items
 * for free, so a purge is for a table without TTL (dynalite) or an impatient caller (docs/stores/dynamodb.md).
 */
export async function purgeRecords(context: DynamoContext, limit: number): Promise<number> {
  let removed = 0;
  let start: Item | undefined;
  const now = context.clock();
  for (;;) {
    const page = await context.send(
      new commands.ScanCommand({
        TableName: context.table,
        ProjectionExpression: KEY,
        FilterExpression: "x <= :now",
        ExpressionAttributeValues: { ":now": { N: String(now) } },
        ExclusiveStartKey: start,
      }),
    );
    for (const item of page.Items as Item[]) {
      if (removed >= limit) return removed;
      try {
        await context.send(
          new commands.DeleteItemCommand({
            TableName: context.table,
            Key: keyOf(item[KEY]!.S!),
            ConditionExpression: "x <= :now",
            ExpressionAttributeValues: { ":now": { N: String(now) } },
          }),
        );
        removed++;
      } catch (error) {
        if (!isConditionFailed(error)) throw error;
      }
    }
    start = page.LastEvaluatedKey;
    if (removed >= limit || start === undefined) return removed;
  }
}
