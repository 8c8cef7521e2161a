import { randomBytes } from "node:crypto";
import { CreateTableCommand, ProvisionedThroughputExceededException } from "@aws-sdk/client-dynamodb";
import { Hono } from "hono";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createDynamoTable, dynamoStore } from "../../src/dynamodb/index.js";
import { StoreError } from "../../src/errors/store-error.js";
import { StoreLayoutError } from "../../src/errors/store-layout-error.js";
import { idempotency } from "../../src/hono/index.js";
import { createHarness, defineTool } from "../../src/index.js";
import { privateDynalite } from "../support/dynalite.js";
import { effectLog } from "../support/effect-log.js";
import { testStore, testStoreAcrossProcesses } from "./contract.js";

const dynalite = await privateDynalite();
afterAll(() => dynalite.stop());
const client = dynalite.client();
const run = randomBytes(4).toString("hex");

// A table per suite: the purge part counts every expired record of the table it runs on.
testStore("DynamoDB (dynalite)", async (clock) => {
  const table = `idemkey-contract-${run}`;
  await createDynamoTable(client, { table });
  return dynamoStore(client, { table, clock });
});

// Several OS processes on one table, each on its own client: the race and the SIGKILL loop, effects counted in a file.
testStoreAcrossProcesses("DynamoDB (dynalite)", async (name) => {
  const table = `idemkey-processes-${run}-${name}`;
  await createDynamoTable(client, { table });
  return { kind: "dynamodb", endpoint: dynalite.endpoint, table };
});

describe("dynamoStore's table", () => {
  it("creates the table once and checks it when it is there", async () => {
    const table = `idemkey-create-${run}`;
    expect(await createDynamoTable(client, { table })).toEqual({ created: true, ttl: false });
    expect(await createDynamoTable(client, { table })).toEqual({ created: false, ttl: false });
  });

  it("refuses a table keyed otherwise with a StoreLayoutError naming the key schema", async () => {
    const table = `idemkey-wrong-${run}`;
    await client.send(
      new CreateTableCommand({
        TableName: table,
        BillingMode: "PAY_PER_REQUEST",
        AttributeDefinitions: [{ AttributeName: "id", AttributeType: "N" }],
        KeySchema: [{ AttributeName: "id", KeyType: "HASH" }],
      }),
    );
    const store = dynamoStore(client, { table });
    const error = await store.get("k").catch((e: unknown) => e);
    expect(error).toBeInstanceOf(StoreLayoutError);
    expect((error as Error).message).toBe(
      `dynamodb store at "${table}" has the key schema HASH id (N); idemkey needs HASH pk (S) alone`,
    );
    await expect(createDynamoTable(client, { table })).rejects.toBeInstanceOf(StoreLayoutError);
  });

  it("refuses a table without the list index", async () => {
    const table = `idemkey-noindex-${run}`;
    await client.send(
      new CreateTableCommand({
        TableName: table,
        BillingMode: "PAY_PER_REQUEST",
        AttributeDefinitions: [{ AttributeName: "pk", AttributeType: "S" }],
        KeySchema: [{ AttributeName: "pk", KeyType: "HASH" }],
      }),
    );
    const error = await dynamoStore(client, { table })
      .claim("k", { fingerprint: "f", token: "t", leaseMs: 1000, ttlMs: 1000 })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(StoreLayoutError);
    expect((error as Error).message).toContain("has no global secondary index idemkey_order");
  });

  it("names the option a bad value came in", () => {
    expect(() => dynamoStore(client, { table: "x" })).toThrow(/dynamoStore: options\.table must be/);
    expect(() => dynamoStore({} as never, { table: "idemkey" })).toThrow(/dynamoStore: client must be/);
    expect(() => dynamoStore(client, { table: "idemkey", throttleRetryMs: -1 })).toThrow(
      /options\.throttleRetryMs/,
    );
  });
});

describe("dynamoStore under throttling", () => {
  const table = `idemkey-throttle-${run}`;
  const log = effectLog("throttle");
  beforeAll(() => createDynamoTable(client, { table }));
  afterAll(() => log.cleanup());

  /**
   * A client that throws the SDK's own `ProvisionedThroughputExceededException` for the first `times` sends of each
   * write (as DynamoDB does when it refuses a request for capacity, before applying it), then sends it to dynalite.
   */
  function throttling(times: number) {
    const sent: string[] = [];
    const seen = new Map<unknown, number>();
    return {
      sent,
      client: {
        send(command: { constructor: { name: string } }) {
          const name = command.constructor.name;
          sent.push(name);
          const tries = (seen.get(command) ?? 0) + 1;
          seen.set(command, tries);
          if (/^(Put|Update|Delete)Item/.test(name) && tries <= times) {
            return Promise.reject(
              new ProvisionedThroughputExceededException({ message: "Rate exceeded", $metadata: {} }),
            );
          }
          return client.send(command as never);
        },
      },
    };
  }

  it("sends each throttled write again after a pause, and the effect runs once per key", async () => {
    const { client: throttled, sent } = throttling(2);
    const harness = createHarness({ store: dynamoStore(throttled, { table }) });
    const tool = defineTool({
      name: "charge",
      effect: "keyed",
      run: async (args: { n: number }, { idempotencyKey: key }) => {
        log.effect(key);
        return { charged: args.n };
      },
    });
    const task = `throttled-${run}`;
    expect(await harness.call(task, tool, { n: 1 })).toEqual({ charged: 1 });
    expect(await harness.call(task, tool, { n: 1 })).toEqual({ charged: 1 });
    expect(await harness.call(task, tool, { n: 2 })).toEqual({ charged: 2 });
    expect(log.count()).toBe(2);
    expect(log.count(harness.key(task, tool, { n: 1 }))).toBe(1);
    // Every put (two fresh claims and the replay's, which its condition refused) and every completion was throttled
    // twice, then went through: three sends of each.
    expect(sent.filter((name) => name === "PutItemCommand")).toHaveLength(9);
    expect(sent.filter((name) => name === "UpdateItemCommand")).toHaveLength(6);
  });

  it("gives up after its budget with a StoreError, having applied nothing", async () => {
    const { client: throttled, sent } = throttling(Number.POSITIVE_INFINITY);
    const store = dynamoStore(throttled, { table, throttleRetryMs: 200 });
    const key = `throttled-out:${run}`;
    const error = await store
      .claim(key, { fingerprint: "f", token: "t", leaseMs: 1_000, ttlMs: 60_000 })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(StoreError);
    expect((error as StoreError).cause).toBeInstanceOf(ProvisionedThroughputExceededException);
    expect(sent.filter((name) => name === "PutItemCommand").length).toBeGreaterThan(2);
    expect(await dynamoStore(client, { table }).get(key)).toBeUndefined();
  });
});

describe("the harness and the owner middleware on DynamoDB", () => {
  const ledgerTable = `idemkey-ledger-${run}`;
  const ownerTable = `idemkey-owner-${run}`;
  const log = effectLog("owner");
  beforeAll(async () => {
    await createDynamoTable(client, { table: ledgerTable });
    await createDynamoTable(client, { table: ownerTable });
  });
  afterAll(() => log.cleanup());

  it("a keyed tool forwards its key to an owner behind the Hono middleware: each charge once, however often sent", async () => {
    // The fake owner: a Hono app whose handler writes each effect to a file the code under test never reads.
    const app = new Hono();
    app.use(
      "/charges",
      idempotency({ store: dynamoStore(client, { table: ownerTable }), scope: "single-tenant" }),
    );
    app.post("/charges", async (c) => {
      const body = (await c.req.json()) as { cents: number };
      log.effect(`charge:${body.cents}`);
      return c.json({ id: `ch_${body.cents}` }, 201);
    });
    const charge = defineTool({
      name: "charge",
      effect: "keyed",
      run: async (args: { cents: number }, { idempotencyKey }) => {
        const response = await app.request("/charges", {
          method: "POST",
          headers: { "content-type": "application/json", "idempotency-key": idempotencyKey },
          body: JSON.stringify(args),
        });
        return (await response.json()) as { id: string };
      },
    });
    const task = `owner-${run}`;
    // Two harnesses on one ledger table (two workers), each calling twice, concurrently.
    const harnesses = [0, 1].map(() => createHarness({ store: dynamoStore(client, { table: ledgerTable }) }));
    const results = await Promise.all(
      [1, 2].flatMap((cents) =>
        harnesses.flatMap((h) => [h.call(task, charge, { cents }), h.call(task, charge, { cents })]),
      ),
    );
    expect(results.map((r) => r.id).sort()).toEqual([
      "ch_1",
      "ch_1",
      "ch_1",
      "ch_1",
      "ch_2",
      "ch_2",
      "ch_2",
      "ch_2",
    ]);
    // The same key sent straight to the owner again (a tool retried past the ledger): replayed, not charged.
    const again = await app.request("/charges", {
      method: "POST",
      headers: {
        "content-type": "application/json",
        "idempotency-key": harnesses[0]!.key(task, charge, { cents: 1 }),
      },
      body: JSON.stringify({ cents: 1 }),
    });
    expect(await again.json()).toEqual({ id: "ch_1" });
    expect(log.count("charge:1")).toBe(1);
    expect(log.count("charge:2")).toBe(1);
  });
});
