import mysql from "mysql2/promise";
import { afterAll, describe, expect, it } from "vitest";
import { createHarness, defineTool } from "../../src/index.js";
import { openStore, parseStoreUrl, StoreUrlError } from "../../src/inspector/index.js";
import { mysqlStore } from "../../src/mysql/index.js";
import { runCli } from "../support/cli.js";
import { privateMariaDb } from "../support/mariadb.js";
import { serve } from "./support.js";

// `mysql://` store URLs, the inspector and `idemkey inspect` on a private MariaDB of this file's own.
const server = await privateMariaDb();
const pool = mysql.createPool({ uri: server.url, connectionLimit: 4 });

afterAll(async () => {
  await pool.end();
  await server.stop();
});

const tool = defineTool({ name: "ping", effect: "keyed", run: (args: { n: number }) => ({ pong: args.n }) });

describe("mysql:// store URLs", () => {
  it("reads the URL for mysql2, with ?table= taken out and the other parameters left for mysql2", () => {
    expect(parseStoreUrl("mysql://u:p@db:3306/app?table=calls&ssl=%7B%7D")).toEqual({
      kind: "mysql",
      uri: "mysql://u:p@db:3306/app?ssl=%7B%7D",
      table: "calls",
    });
    expect(parseStoreUrl("mysql://db/app")).toEqual({ kind: "mysql", uri: "mysql://db/app" });
    expect(() => parseStoreUrl("mysql://db")).toThrow(StoreUrlError);
    expect(() => parseStoreUrl("mysql://u:pw@db/")).toThrow(/names no database/);
    expect(() => parseStoreUrl("mysql://u:pw@db/")).not.toThrow(/pw@/);
    expect(() => parseStoreUrl("mysql://db/app?table=")).toThrow(/\?table= is empty/);
  });

  it("opens the ledger a harness wrote, and the inspector reads its calls over HTTP", async () => {
    const harness = createHarness({ store: mysqlStore(pool, { table: "calls" }) });
    await harness.call("task-url", tool, { n: 1 });
    await harness.call("task-url", tool, { n: 2 });
    const opened = await openStore(`${server.url}?table=calls`);
    const client = await serve({ store: opened.store, label: opened.label });
    try {
      const counts = (await (await client.get("/api/counts")).json()) as { counts: { completed: number } };
      expect(counts.counts.completed).toBe(2);
      const key = harness.key("task-url", tool, { n: 2 });
      const detail = (await (await client.get(`/api/calls/${key}`)).json()) as { result: unknown };
      expect(detail.result).toEqual({ pong: 2 });
    } finally {
      await client.close();
      await opened.close();
    }
  });

  it("idemkey inspect --list prints the ledger's calls from a mysql:// URL", async () => {
    const harness = createHarness({ store: mysqlStore(pool, { table: "cli_calls" }) });
    await harness.call("task-cli", tool, { n: 7 });
    const result = await runCli(["inspect", "--store", `${server.url}?table=cli_calls`, "--list"]);
    expect(result.stderr).toBe("");
    expect(result.code).toBe(0);
    const lines = result.stdout
      .trim()
      .split("\n")
      .map((line) => JSON.parse(line) as Record<string, unknown>);
    expect(lines).toHaveLength(1);
    expect(JSON.stringify(lines[0])).toContain(harness.key("task-cli", tool, { n: 7 }));
  }, 60_000);

  it("idemkey inspect on a database that does not exist says so in one line, and what to do", async () => {
    const url = new URL(server.url);
    url.pathname = "/missing_db";
    const result = await runCli(["inspect", "--store", url.href, "--list"]);
    expect(result.code).toBe(1);
    expect(result.stderr.trim().split("\n")).toHaveLength(1);
    expect(result.stderr).toMatch(/Unknown database 'missing_db'.*CREATE DATABASE/);
    expect(result.stderr).not.toMatch(/may or may not have been applied/);
  }, 60_000);
});
