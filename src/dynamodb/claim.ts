import { StoreError } from "../errors/store-error.js";
import type { RecentClaims } from "../store/recent-claims.js";
import { decideClaim, newRecord, resent } from "../store/record.js";
import type { ClaimInput, ClaimResult, StoreRecord } from "../store/types.js";
import { isConditionFailed } from "./client.js";
import { commands } from "./commands.js";
import type { DynamoContext } from "./context.js";
import { fromItem, type Item, KEY, keyOf, TTL, toItem, ttlSeconds } from "./item.js";
import { readRecord } from "./read.js";

/** A claim that keeps losing to other writers (a renewal, a delete, a claim) between its read and its write. */
const ATTEMPTS = 5;

/**
 * `Store.claim` on conditional writes. Each write is decided by DynamoDB on the item as it stands, so two claimants
 * can never both win: a fresh claim is a `PutItem` whose condition says there is no live item (absent, or expired on
 * the claimant's clock); a takeover is an `UpdateItem` whose condition names the token and the lease it found
 * lapsed. A "no" from a condition is DynamoDB's decision, so the claim reads what is there and decides again.
 *
 * Which comes first follows what recent claims met (as the SQL stores do): a read while they met records (a replay
 * costs one strongly consistent `GetItem` and writes nothing), the `PutItem` while they made new ones (a fresh call
 * costs the put and the completion). Where DynamoDB returns the item a failed condition met
 * (`ReturnValuesOnConditionCheckFailure`), no read follows the put; dynalite does not, so a read does.
 */
export async function claimRecord(
  context: DynamoContext,
  recent: RecentClaims,
  key: string,
  input: ClaimInput,
): Promise<ClaimResult> {
  let readFirst = recent.readFirst();
  for (let attempt = 0; attempt < ATTEMPTS; attempt++) {
    const now = context.clock();
    let found: StoreRecord | undefined;
    if (readFirst) {
      found = await readRecord(context, key);
      recent.saw(found !== undefined && found.expiresAt > now);
    }
    if (found === undefined || found.expiresAt <= now) {
      const put = await putNew(context, key, input, now);
      if (put.status === "claimed") {
        if (!readFirst) recent.saw(false);
        return put;
      }
      if (!readFirst) recent.saw(true);
      found = put.existing ?? (await readRecord(context, key));
      // Gone again between the put and the read (deleted, or expired on this clock): put again.
      if (found === undefined || found.expiresAt <= now) {
        readFirst = false;
        continue;
      }
    }
    // The resend rule: this very claim arrived before (its reply was lost); answer what that arrival decided.
    if (found.state === "pending" && found.token === input.token) return resent(found);
    const decided = decideClaim(key, found, input, now);
    if (decided.status !== "taken_over") return decided;
    const taken = await takeOver(context, found, input, now);
    if (taken) return { status: "taken_over", record: taken, previous: found };
    // Renewed, completed or taken by another between the read and the write: read again and decide again.
    readFirst = true;
  }
  throw new StoreError({ store: "dynamodb", operation: "claim", key, reason: "contention" });
}

/**
 * The fresh claim: one `PutItem` whose condition holds only where there is no live item. Its "no" carries the item
 * it met where the service returns it.
 */
async function putNew(
  context: DynamoContext,
  key: string,
  input: ClaimInput,
  now: number,
): Promise<{ status: "claimed"; record: StoreRecord } | { status: "exists"; existing?: StoreRecord }> {
  const record = newRecord(key, input, now);
  try {
    await context.send(
      new commands.PutItemCommand({
        TableName: context.table,
        Item: toItem(record),
        ConditionExpression: `attribute_not_exists(${KEY}) OR x <= :now`,
        ExpressionAttributeValues: { ":now": { N: String(now) } },
        ReturnValuesOnConditionCheckFailure: "ALL_OLD",
      }),
    );
    return { status: "claimed", record };
  } catch (error) {
    if (!isConditionFailed(error)) throw error;
    const item = (error as { Item?: Item }).Item;
    return item === undefined ? { status: "exists" } : { status: "exists", existing: fromItem(item) };
  }
}

/**
 * The takeover of a pending record whose lease lapsed: an `UpdateItem` conditioned on the token and the lease the
 * claimant found, so that a renewal, a completion or another takeover in between makes it fail. `undefined` when it
 * did. Keeps `attempts` (the started mark) and `createdAt`, as the protocol says.
 */
async function takeOver(
  context: DynamoContext,
  found: StoreRecord,
  input: ClaimInput,
  now: number,
): Promise<StoreRecord | undefined> {
  const expiresAt = Math.max(found.expiresAt, now + input.ttlMs);
  try {
    const { Attributes } = await context.send(
      new commands.UpdateItemCommand({
        TableName: context.table,
        Key: keyOf(found.key),
        UpdateExpression: "SET tok = :tok, lu = :lu, u = :now, x = :x, #ttl = :ttl",
        ConditionExpression: "tok = :was AND lu = :lapsed AND s = :pending AND x > :now",
        ExpressionAttributeValues: {
          ":tok": { S: input.token },
          ":lu": { N: String(now + input.leaseMs) },
          ":now": { N: String(now) },
          ":x": { N: String(expiresAt) },
          ":ttl": { N: String(ttlSeconds(expiresAt)) },
          ":was": { S: found.token ?? "" },
          ":lapsed": { N: String(found.leaseUntil) },
          ":pending": { S: "pending" },
        },
        ExpressionAttributeNames: { "#ttl": TTL },
        ReturnValues: "ALL_NEW",
      }),
    );
    return fromItem(Attributes as Item);
  } catch (error) {
    if (isConditionFailed(error)) return undefined;
    throw error;
  }
}
