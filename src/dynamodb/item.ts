import type { AttributeValue } from "@aws-sdk/client-dynamodb";
import type { RecordState, StoreRecord } from "../store/types.js";

/*
 * One record is one item. Attribute names are short because every byte of every item is paid for in read and write
 * units (1 KB a write unit, 4 KB a read unit); DynamoDB reserves none of these words.
 */

/** The table's partition key: the record's key, a string. */
export const KEY = "pk";
/** The list index's partition: one constant value, so that the index holds every key in one sorted run. */
export const LIST_PARTITION = "lp";
/** Its only value. */
export const LIST_PARTITION_VALUE = "1";
/** The attribute DynamoDB's TTL reads: `expiresAt` in epoch seconds, rounded up. */
export const TTL = "ttl";
/** The id of the last update, so that the SDK resending an update that applied finds its own write. */
export const WRITE_ID = "w";

export type Item = Record<string, AttributeValue>;

const S = (value: string): AttributeValue => ({ S: value });
const N = (value: number): AttributeValue => ({ N: String(value) });

/** DynamoDB's TTL counts seconds; rounded up so that it never deletes a record before its `expiresAt`. */
export const ttlSeconds = (expiresAt: number): number => Math.ceil(expiresAt / 1000);

/** A record as the item a claim writes; nulls are left out (DynamoDB has no null column to keep). */
export function toItem(record: StoreRecord): Item {
  const item: Item = {
    [KEY]: S(record.key),
    [LIST_PARTITION]: S(LIST_PARTITION_VALUE),
    s: S(record.state),
    fp: S(record.fingerprint),
    a: N(record.attempts),
    c: N(record.createdAt),
    u: N(record.updatedAt),
    x: N(record.expiresAt),
    [TTL]: N(ttlSeconds(record.expiresAt)),
  };
  if (record.token !== null) item.tok = S(record.token);
  if (record.leaseUntil !== null) item.lu = N(record.leaseUntil);
  if (record.result !== null) item.r = S(record.result);
  if (record.data !== null) item.d = S(record.data);
  return item;
}

const text = (value: AttributeValue | undefined): string | null => value?.S ?? null;
const number = (value: AttributeValue | undefined): number | null =>
  value?.N === undefined ? null : Number(value.N);

/** The record an item holds. */
export function fromItem(item: Item): StoreRecord {
  return {
    key: item[KEY]!.S!,
    state: item.s!.S as RecordState,
    fingerprint: item.fp!.S!,
    token: text(item.tok),
    leaseUntil: number(item.lu),
    attempts: number(item.a) ?? 0,
    result: text(item.r),
    data: text(item.d),
    createdAt: number(item.c)!,
    updatedAt: number(item.u)!,
    expiresAt: number(item.x)!,
  };
}

/** The key of the item for `key`, as every command names it. */
export const keyOf = (key: string): Item => ({ [KEY]: S(key) });
