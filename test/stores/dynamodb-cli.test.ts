import { randomBytes } from "node:crypto";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createDynamoTable, dynamoStore } from "../../src/dynamodb/index.js";
import { createHarness, defineTool, OutcomeUnknownError } from "../../src/index.js";
import { openStore, parseStoreUrl, StoreUrlError } from "../../src/inspector/index.js";
import { effectServer, started, tempRuns } from "../gateway/support.js";
import { runCli, startCli } from "../support/cli.js";
import { DYNALITE_ENV, privateDynalite } from "../support/dynalite.js";
import { lineReader } from "../support/lines.js";

// The CLI's children find credentials and a region where the SDK's default chain looks: the environment.
Object.assign(process.env, DYNALITE_ENV);

const dynalite = await privateDynalite();
const client = dynalite.client();
const table = `idemkey-cli-${randomBytes(4).toString("hex")}`;
const url = `dynamodb://${table}?region=us-east-1&endpoint=${encodeURIComponent(dynalite.endpoint)}`;
const TOOLS = fileURLToPath(new URL("../reconciler/fixtures/tools.ts", import.meta.url));

beforeAll(() => createDynamoTable(client, { table }));
afterAll(() => dynalite.stop());

describe("dynamodb:// store URLs", () => {
  it("name a table, its region and its endpoint", () => {
    expect(parseStoreUrl("dynamodb://My_Table.v1?region=eu-west-1")).toEqual({
      kind: "dynamodb",
      table: "My_Table.v1",
      region: "eu-west-1",
    });
    expect(parseStoreUrl(url)).toEqual({
      kind: "dynamodb",
      table,
      region: "us-east-1",
      endpoint: dynalite.endpoint,
    });
  });

  it.each([
    ["no table", "dynamodb://", /names no table/],
    ["a path after the table", "dynamodb://calls/more", /names no table/],
    ["an unknown parameter", "dynamodb://calls?prefix=x", /unknown parameter \?prefix=/],
    ["credentials in the URL", "dynamodb://key:secret@calls", /credentials come from the AWS SDK/],
    ["an endpoint that is not a URL", "dynamodb://calls?endpoint=localhost", /\?endpoint= must be an http/],
  ])("refuse %s with a StoreUrlError", (_, bad, message) => {
    expect(() => parseStoreUrl(bad)).toThrow(StoreUrlError);
    expect(() => parseStoreUrl(bad)).toThrow(message);
  });

  it("open the table through the default credential chain", async () => {
    const opened = await openStore(url);
    try {
      expect(await opened.store.list({ limit: 1 })).toEqual([]);
    } finally {
      await opened.close();
    }
  });
});

describe("idemkey inspect and reconcile on DynamoDB", () => {
  it("inspect --list shows the ledger's calls; reconcile --once decides the unknown ones", async () => {
    const store = dynamoStore(client, { table });
    const harness = createHarness({ store, retry: { retries: 0 } });
    const ping = defineTool({ name: "ping", effect: "keyed", run: () => "pong" });
    await harness.call("task-1", ping, { n: 1 });
    const lost = defineTool<{ n: number }, unknown>({
      name: "transfer",
      effect: "unguarded",
      run: () => {
        throw new Error("socket hang up");
      },
    });
    const keys: string[] = [];
    for (let n = 0; n < 2; n++) {
      await expect(harness.call("task-1", lost, { n })).rejects.toBeInstanceOf(OutcomeUnknownError);
      keys.push(harness.key("task-1", lost, { n }));
    }

    const listed = await runCli(["inspect", "--store", url, "--list"]);
    expect(listed.stderr).toBe("");
    expect(listed.code).toBe(0);
    const rows = listed.stdout
      .trim()
      .split("\n")
      .map((line) => JSON.parse(line) as { state: string; tool?: string });
    expect(rows.map((row) => `${row.tool}:${row.state}`).sort()).toEqual([
      "ping:completed",
      "transfer:outcome_unknown",
      "transfer:outcome_unknown",
    ]);

    const reconciled = await runCli([
      "reconcile",
      "--store",
      url,
      "--tools",
      TOOLS,
      "--once",
      "--id",
      "dyn-1",
    ]);
    expect(reconciled.stderr).toBe("");
    expect(reconciled.code).toBe(0);
    expect(reconciled.stdout.trim().split("\n").at(-1)).toContain('"done":2');
    const after = await Promise.all(keys.map((key) => harness.get(key)));
    expect(after.map((entry) => entry?.state)).toEqual(["completed", "completed"]);
  }, 60_000);
});

describe("idemkey gateway http on DynamoDB", () => {
  const runs = tempRuns("idemkey-dynamo-gateway-");

  it("keeps its keys in the table: one effect per key at the upstream, a replay for the retry", async () => {
    const run = runs.next();
    const upstream = await effectServer(run);
    const gatewayTable = `${table}-gateway`;
    await createDynamoTable(client, { table: gatewayTable });
    const storeUrl = url.replace(`dynamodb://${table}?`, `dynamodb://${gatewayTable}?`);
    const child = started(
      startCli([
        "gateway",
        "http",
        "--store",
        storeUrl,
        "--listen",
        "127.0.0.1:0",
        "--upstream",
        upstream.url,
        "--scope-header",
        "x-api-key",
      ]),
    );
    let stderr = "";
    child.stderr!.on("data", (d) => (stderr += d));
    const line = await lineReader(child.stdout!)();
    const gateway = /^idemkey gateway \w+: (\S+) -> /.exec(line ?? "")?.[1];
    expect(gateway, `${line}\n${stderr}`).toBeDefined();
    const post = () =>
      fetch(`${gateway}/charges`, {
        method: "POST",
        headers: { "idempotency-key": "k1", "content-type": "application/json", "x-api-key": "alice" },
        body: '{"cents":5}',
      });
    expect((await post()).status).toBe(201);
    const again = await post();
    expect(again.headers.get("idempotent-replayed")).toBe("true");
    expect(upstream.effects()).toEqual(['{"cents":5}']);
    // The record is in the gateway's table, as DynamoDB holds it.
    expect(await dynamoStore(client, { table: gatewayTable }).list({ limit: 10 })).toHaveLength(1);
    expect(stderr).toBe("");
  }, 60_000);
});
