import { setTimeout as sleep } from "node:timers/promises";
import { StoreLayoutError } from "../errors/store-layout-error.js";
import type { DynamoClient } from "./client.js";
import { commands } from "./commands.js";
import { KEY, LIST_PARTITION, TTL } from "./item.js";

/** The list index: every key in one sorted run (partition `lp`, sort key `pk`), keys only. */
export const LIST_INDEX = "idemkey_order";

/** The layout this idemkey reads and writes (the key schema, the index and the attribute names of item.ts). */
export const LAYOUT = 1;

/** What `createDynamoTable` did. */
export interface CreatedTable {
  /** Whether this call created the table (false: it was there, and has the layout). */
  created: boolean;
  /**
   * Whether DynamoDB's TTL now deletes expired records on the `ttl` attribute. False where the service has no TTL
   * (dynalite): expired records are then treated as absent and removed only by `purge()`.
   */
  ttl: boolean;
}

/**
 * Creates the table a `dynamoStore` needs, on-demand (pay per request), with its list index, and turns on TTL on the
 * `ttl` attribute; waits until the table is active. A table that is there already is checked instead (a wrong key
 * schema is a `StoreLayoutError`) and left as it is. Meant for a setup script or a test: in production the table is
 * usually declared with the rest of the infrastructure, with the same key schema (see docs/stores/dynamodb.md).
 *
 * @example
 * await createDynamoTable(new DynamoDBClient({}), { table: "idemkey" });
 */
export async function createDynamoTable(
  client: DynamoClient,
  options: { table: string },
): Promise<CreatedTable> {
  const table = options?.table;
  if (typeof table !== "string" || !/^[a-zA-Z0-9_.-]{3,255}$/.test(table)) {
    throw new TypeError(
      `createDynamoTable: options.table must be a DynamoDB table name (3-255 of a-z A-Z 0-9 _ . -), got ${JSON.stringify(table)}`,
    );
  }
  let created = true;
  try {
    await client.send(
      new commands.CreateTableCommand({
        TableName: table,
        BillingMode: "PAY_PER_REQUEST",
        AttributeDefinitions: [
          { AttributeName: KEY, AttributeType: "S" },
          { AttributeName: LIST_PARTITION, AttributeType: "S" },
        ],
        KeySchema: [{ AttributeName: KEY, KeyType: "HASH" }],
        GlobalSecondaryIndexes: [
          {
            IndexName: LIST_INDEX,
            KeySchema: [
              { AttributeName: LIST_PARTITION, KeyType: "HASH" },
              { AttributeName: KEY, KeyType: "RANGE" },
            ],
            Projection: { ProjectionType: "KEYS_ONLY" },
          },
        ],
      }),
    );
  } catch (error) {
    if ((error as { name?: unknown })?.name !== "ResourceInUseException") throw error;
    created = false;
  }
  await checkTable(client, table, { wait: true });
  let ttl = true;
  try {
    await client.send(
      new commands.UpdateTimeToLiveCommand({
        TableName: table,
        TimeToLiveSpecification: { AttributeName: TTL, Enabled: true },
      }),
    );
  } catch (error) {
    const name = (error as { name?: unknown })?.name;
    // Already on (DynamoDB refuses to turn it on twice), or a service without TTL (dynalite).
    if (name === "UnknownOperationException") ttl = false;
    else if (!(name === "ValidationException" && /already enabled/i.test(String((error as Error).message))))
      throw error;
  }
  return { created, ttl };
}

/**
 * Reads the table's description and refuses one whose key schema is not the store's: a table keyed otherwise would
 * make every claim fail with a validation error, or, keyed on `pk` as a number, misread keys. With `wait`, waits
 * (up to a minute) for a table being created to become active.
 */
export async function checkTable(
  client: DynamoClient,
  table: string,
  { wait = false }: { wait?: boolean } = {},
): Promise<void> {
  for (let tries = 0; ; tries++) {
    const { Table } = await client.send(new commands.DescribeTableCommand({ TableName: table }));
    const problem = layoutProblem(Table);
    if (problem !== undefined) {
      throw new StoreLayoutError({
        store: "dynamodb",
        location: table,
        found: 0,
        supported: LAYOUT,
        problem,
      });
    }
    const active =
      Table.TableStatus === "ACTIVE" &&
      (Table.GlobalSecondaryIndexes ?? []).every((i: { IndexStatus?: string }) => i.IndexStatus === "ACTIVE");
    if (active || !wait || tries >= 600) return;
    await sleep(100);
  }
}

interface KeyElement {
  AttributeName?: string;
  KeyType?: string;
}

/** What is wrong with a table's description for this layout, in words, or undefined when nothing is. */
export function layoutProblem(table: {
  KeySchema?: KeyElement[];
  AttributeDefinitions?: { AttributeName?: string; AttributeType?: string }[];
  GlobalSecondaryIndexes?: { IndexName?: string; KeySchema?: KeyElement[] }[];
}): string | undefined {
  const type = (name: string) =>
    table.AttributeDefinitions?.find((a) => a.AttributeName === name)?.AttributeType;
  const schema = (keys: KeyElement[] | undefined) =>
    (keys ?? []).map((k) => `${k.KeyType} ${k.AttributeName} (${type(k.AttributeName ?? "")})`).join(", ");
  const key = table.KeySchema ?? [];
  if (key.length !== 1 || key[0]!.AttributeName !== KEY || type(KEY) !== "S") {
    return `has the key schema ${schema(key)}; idemkey needs HASH ${KEY} (S) alone`;
  }
  const index = table.GlobalSecondaryIndexes?.find((i) => i.IndexName === LIST_INDEX);
  const keys = index?.KeySchema ?? [];
  const hash = keys.find((k) => k.KeyType === "HASH");
  const range = keys.find((k) => k.KeyType === "RANGE");
  if (
    index === undefined ||
    hash?.AttributeName !== LIST_PARTITION ||
    range?.AttributeName !== KEY ||
    type(LIST_PARTITION) !== "S"
  ) {
    return index === undefined
      ? `has no global secondary index ${LIST_INDEX}; idemkey lists keys through it (HASH ${LIST_PARTITION} (S), RANGE ${KEY} (S))`
      : `has the index ${LIST_INDEX} keyed ${schema(keys)}; idemkey needs HASH ${LIST_PARTITION} (S), RANGE ${KEY} (S)`;
  }
  return undefined;
}
