import { randomUUID } from "node:crypto";
import type { AttributeValue } from "@aws-sdk/client-dynamodb";
import type { Expect, RecordPatch, StoreRecord } from "../store/types.js";
import { isConditionFailed } from "./client.js";
import { commands } from "./commands.js";
import type { DynamoContext } from "./context.js";
import { fromItem, type Item, KEY, keyOf, TTL, ttlSeconds, WRITE_ID } from "./item.js";

/**
 * The condition every update and delete carries: the item is live on the caller's clock and matches `expect`.
 * A `ConditionalCheckFailedException` is then DynamoDB's own "no match", never an unknown.
 */
function matching(expect: Expect, values: Record<string, AttributeValue>): string {
  let condition = `attribute_exists(${KEY}) AND x > :now`;
  if (expect.token !== undefined) {
    condition += " AND tok = :etok";
    values[":etok"] = { S: expect.token };
  }
  if (expect.state !== undefined) {
    condition += " AND s = :es";
    values[":es"] = { S: expect.state };
  }
  return condition;
}

/**
 * `Store.update`: one `UpdateItem`, a compare-and-set on the token and the state. Every value is computed here, once
 * (the times on this store's clock), so the request is the same bytes however often it is sent; it writes its own id,
 * and its condition also holds where that id is already there. So when the SDK sends it again after a reply it lost
 * (a timeout after DynamoDB applied it), the second arrival finds its own write and answers the record, instead of
 * "no match", which would tell a holder whose completion landed that its claim was lost.
 */
export async function updateRecord(
  context: DynamoContext,
  key: string,
  expect: Expect,
  patch: RecordPatch,
): Promise<StoreRecord | undefined> {
  const now = context.clock();
  const values: Record<string, AttributeValue> = {
    ":now": { N: String(now) },
    ":w": { S: randomUUID() },
  };
  const sets = ["u = :now", `${WRITE_ID} = :w`];
  const removes: string[] = [];
  const assign = (name: string, value: AttributeValue | null) => {
    if (value === null) {
      removes.push(name);
      return;
    }
    const placeholder = `:${name.replace("#", "")}`;
    values[placeholder] = value;
    sets.push(`${name} = ${placeholder}`);
  };
  if (patch.state !== undefined) assign("s", { S: patch.state });
  if (patch.token !== undefined) assign("tok", patch.token === null ? null : { S: patch.token });
  if (patch.leaseMs !== undefined) {
    assign("lu", patch.leaseMs === null ? null : { N: String(now + patch.leaseMs) });
  }
  if (patch.attempts !== undefined) assign("a", { N: String(patch.attempts) });
  if (patch.result !== undefined) assign("r", patch.result === null ? null : { S: patch.result });
  if (patch.data !== undefined) assign("d", patch.data === null ? null : { S: patch.data });
  if (patch.ttlMs !== undefined) {
    const expiresAt = now + patch.ttlMs;
    assign("x", { N: String(expiresAt) });
    // `ttl` is one of DynamoDB's reserved words: named through a placeholder.
    assign("#ttl", { N: String(ttlSeconds(expiresAt)) });
  }
  const condition = `(${matching(expect, values)}) OR ${WRITE_ID} = :w`;
  try {
    const { Attributes } = await context.send(
      new commands.UpdateItemCommand({
        TableName: context.table,
        Key: keyOf(key),
        UpdateExpression: `SET ${sets.join(", ")}${removes.length > 0 ? ` REMOVE ${removes.join(", ")}` : ""}`,
        ConditionExpression: condition,
        ExpressionAttributeValues: values,
        ...(patch.ttlMs !== undefined ? { ExpressionAttributeNames: { "#ttl": TTL } } : {}),
        ReturnValues: "ALL_NEW",
      }),
    );
    return fromItem(Attributes as Item);
  } catch (error) {
    if (isConditionFailed(error)) return undefined;
    throw error;
  }
}

/** `Store.delete`: one `DeleteItem` under the same condition; `false` is DynamoDB's "no match". */
export async function deleteRecord(context: DynamoContext, key: string, expect: Expect): Promise<boolean> {
  const values: Record<string, AttributeValue> = { ":now": { N: String(context.clock()) } };
  try {
    await context.send(
      new commands.DeleteItemCommand({
        TableName: context.table,
        Key: keyOf(key),
        ConditionExpression: matching(expect, values),
        ExpressionAttributeValues: values,
      }),
    );
    return true;
  } catch (error) {
    if (isConditionFailed(error)) return false;
    throw error;
  }
}
