import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createClient } from "@libsql/client";
import { afterAll, describe, expect, it } from "vitest";
import { StoreError } from "../../src/errors/index.js";
import { createHarness, defineTool } from "../../src/index.js";
import { type LibsqlClient, libsqlStore } from "../../src/libsql/index.js";
import { sqliteStore } from "../../src/sqlite/index.js";
import { testStore, testStoreAcrossProcesses } from "./contract.js";

const dir = mkdtempSync(join(tmpdir(), "idemkey-libsql-"));
const clients: { close(): void }[] = [];
const client = (name: string) => {
  const made = createClient({ url: `file:${join(dir, name)}` });
  clients.push(made);
  return made;
};
afterAll(() => {
  for (const made of clients) made.close();
  rmSync(dir, { recursive: true, force: true });
});

// The real export on a real SQLite file through @libsql/client: only execute and batch, never a transaction.
testStore("libSQL (file:)", (clock) => libsqlStore(client("contract.db"), { clock }));
// Processes on one file, each with its own client made as docs/stores/libsql.md says for a file several processes
// share (a busy timeout): the claim race and the SIGKILL loop.
testStoreAcrossProcesses("libSQL (file:)", (name, at) => ({
  kind: "libsql",
  path: join(at, `${name}.db`),
  timeout: 5_000,
}));

describe("libsqlStore", () => {
  const claimInput = { fingerprint: "fp", token: "t1", leaseMs: 1_000, ttlMs: 60_000 };

  it("shares the table with sqliteStore: a record one writes, the other reads", async () => {
    const path = join(dir, "shared.db");
    const libsql = libsqlStore(client("shared.db"));
    await libsql.claim("k", claimInput);
    const better = sqliteStore(path);
    expect(await better.get("k")).toMatchObject({ key: "k", state: "pending", token: "t1" });
    await better.update("k", { token: "t1" }, { state: "completed", token: null, result: "42" });
    expect(await libsql.get("k")).toMatchObject({ state: "completed", result: "42" });
    await better.close();
    await libsql.close();
  });

  it("lets one of two clients on one file claim a key, and both harnesses give one effect", async () => {
    const a = libsqlStore(client("two.db"));
    const b = libsqlStore(client("two.db"));
    const claims = await Promise.all(
      Array.from({ length: 10 }, (_, i) => (i % 2 ? a : b).claim("k", { ...claimInput, token: `t${i}` })),
    );
    expect(claims.filter((c) => c.status === "claimed")).toHaveLength(1);
    // The effect counted on its own table in the same file, not through the store under test.
    const counter = client("two.db");
    await counter.execute("CREATE TABLE effects (key TEXT NOT NULL)");
    const tool = defineTool({
      name: "charge",
      effect: "unguarded",
      run: async (_: { cents: number }, ctx) => {
        await counter.execute({ sql: "INSERT INTO effects VALUES (?)", args: [ctx.idempotencyKey] });
        return "charged";
      },
    });
    const results = await Promise.all(
      [a, b].map((store) =>
        createHarness({ store, wait: { minDelayMs: 1 } }).call("task", tool, { cents: 5 }),
      ),
    );
    expect(results).toEqual(["charged", "charged"]);
    expect((await counter.execute("SELECT count(*) AS n FROM effects")).rows[0]?.n).toBe(1);
  });

  it("reports a claim retried after SQLITE_BUSY as claimed only once it committed (no busy timeout)", async () => {
    // libSQL's local driver keeps a statement that met SQLITE_BUSY open until it is garbage-collected, and on that
    // connection an autocommit insert then returned its row without committing: the claim said `claimed` for a row
    // that no other connection could see, and that was rolled back later.
    const holder = client("busy.db");
    const other = libsqlStore(client("busy.db"));
    await other.get("schema");
    const given = client("busy.db");
    let metBusy: () => void = () => {};
    const busy = new Promise<void>((resolve) => {
      metBusy = resolve;
    });
    const seeBusy = (error: unknown) => {
      if ((error as { code?: unknown }).code === "SQLITE_BUSY") metBusy();
      throw error;
    };
    const watched: LibsqlClient = {
      execute: (statement) => given.execute(statement).catch(seeBusy),
      batch: (statements, mode) => given.batch(statements, mode).catch(seeBusy),
    };
    const store = libsqlStore(watched, { busyTimeoutMs: 1_000 });
    await store.get("schema");
    const lock = await holder.transaction("write");
    const claim = store.claim("k", { ...claimInput, token: "first" }).catch((error: unknown) => error);
    await busy;
    await lock.rollback();
    const result = await claim;
    if (result instanceof StoreError) {
      // Nothing it reports as applied: the store could not commit, and says so.
      expect(result.retryable).toBe(true);
    } else {
      expect(result).toMatchObject({ status: "claimed", record: { token: "first" } });
      // Claimed means committed: another connection reads the record.
      expect(await other.get("k")).toMatchObject({ state: "pending", token: "first" });
    }
  });

  it("never closes the client it was given", async () => {
    const given = client("kept.db");
    await libsqlStore(given).close();
    expect((await given.execute("SELECT 1 AS one")).rows[0]?.one).toBe(1);
  });

  it("names the option or argument it refuses", () => {
    expect(() => libsqlStore({} as never)).toThrow(
      /^libsqlStore: client must be an @libsql\/client Client \(with execute and batch\), got an object$/,
    );
    expect(() => libsqlStore(client("x.db"), { table: "no-dashes" })).toThrow(/libsqlStore: options\.table/);
    expect(() => libsqlStore(client("x.db"), { busyTimeoutMs: -1 })).toThrow(
      /libsqlStore: options\.busyTimeoutMs/,
    );
  });
});
