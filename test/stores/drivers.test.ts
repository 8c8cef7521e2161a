import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { driverFor, registerDriver, storeDrivers } from "../../src/drivers/list.js";
import { StoreError } from "../../src/errors/store-error.js";
import { createHarness, defineTool } from "../../src/index.js";
import { openStore, parseStoreUrl, StoreUrlError } from "../../src/inspector/index.js";
import { importPeer } from "../../src/peer/import-peer.js";
import { defineDriver, type StoreDriver } from "../../src/store/driver.js";
import { guardStore } from "../../src/store/guard.js";
import testKvDriver from "./fixtures/test-kv-driver.js";

const root = fileURLToPath(new URL("../../", import.meta.url));
const src = join(root, "src");

describe("the driver list", () => {
  it("holds every store folder's description, so that none can be forgotten", async () => {
    const folders = readdirSync(src).filter((name) => existsSync(join(src, name, "description.ts")));
    expect(folders.sort()).toEqual([
      "dynamodb",
      "mysql",
      "node-sqlite",
      "postgres",
      "redis",
      "sqlite",
      "store",
    ]);
    for (const folder of folders) {
      const module = (await import(join(src, folder, "description.ts"))) as Record<string, StoreDriver>;
      for (const driver of Object.values(module)) expect(storeDrivers(), folder).toContain(driver);
    }
  });

  it("names each peer with the range package.json declares, and a package.json export per folder", () => {
    const pkg = JSON.parse(readFileSync(join(root, "package.json"), "utf8")) as {
      peerDependencies: Record<string, string>;
      exports: Record<string, unknown>;
    };
    for (const driver of storeDrivers()) {
      for (const peer of driver.peers)
        expect(peer.range, peer.package).toBe(pkg.peerDependencies[peer.package]);
      if (driver.engine !== "memory") expect(pkg.exports, driver.engine).toHaveProperty(`./${driver.engine}`);
    }
  });

  it("gives each engine and scheme to one driver", () => {
    const engines = storeDrivers().map((d) => d.engine);
    const schemes = storeDrivers().flatMap((d) => d.schemes);
    expect(new Set(engines).size).toBe(engines.length);
    expect(new Set(schemes).size).toBe(schemes.length);
    expect(driverFor("postgresql")?.name).toBe("PostgreSQL");
    expect(driverFor("mysql")?.name).toBe("MySQL");
    expect(driverFor("mongodb")).toBeUndefined();
  });

  it("reads node-sqlite: and memory: URLs like the others", () => {
    expect(parseStoreUrl("node-sqlite:/abs/l.db?table=t")).toEqual({
      kind: "node-sqlite",
      path: "/abs/l.db",
      table: "t",
    });
    expect(parseStoreUrl("memory:")).toEqual({ kind: "memory" });
    expect(() => parseStoreUrl("memory:x")).toThrow(StoreUrlError);
  });

  // node:sqlite is in Node.js without a flag from 22.13; before it, the URL opens to the factory's own TypeError.
  const [major, minor] = process.versions.node.split(".").map(Number) as [number, number];
  const hasNodeSqlite = major > 22 || (major === 22 && minor >= 13);

  it.skipIf(!hasNodeSqlite)(
    "opens a node-sqlite: URL on the file a harness wrote (Node >= 22.13)",
    async () => {
      const { nodeSqliteStore } = await import("../../src/node-sqlite/index.js");
      const dir = mkdtempSync(join(tmpdir(), "idemkey-drivers-"));
      try {
        const path = join(dir, "ledger.db");
        const written = nodeSqliteStore(path, { table: "calls" });
        const tool = defineTool({ name: "ping", effect: "keyed", run: () => "pong" });
        await createHarness({ store: written }).call("task-1", tool, {});
        await written.close();
        const opened = await openStore(`node-sqlite:${path}?table=calls`);
        try {
          const records = await opened.store.list({ prefix: "call:" });
          expect(records.map((r) => r.state)).toEqual(["completed"]);
        } finally {
          await opened.close();
        }
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    },
  );

  it.skipIf(hasNodeSqlite)(
    "refuses a node-sqlite: URL on a Node.js without node:sqlite, saying why",
    async () => {
      const dir = mkdtempSync(join(tmpdir(), "idemkey-drivers-"));
      try {
        writeFileSync(join(dir, "ledger.db"), "");
        await expect(openStore(`node-sqlite:${join(dir, "ledger.db")}`)).rejects.toThrow(
          /^nodeSqliteStore needs node:sqlite, in Node\.js 22\.13 or later/,
        );
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    },
  );

  it("is the only place that knows the stores: the inspector, the CLI and guardStore name none in code", () => {
    const files = [
      ...readdirSync(join(src, "inspector"), { recursive: true, encoding: "utf8" })
        .filter((f) => f.endsWith(".ts"))
        .map((f) => join(src, "inspector", f)),
      join(src, "cli/index.ts"),
      join(src, "store/guard.ts"),
    ];
    const names =
      /["'`/](sqlite|node-sqlite|postgres|postgresql|redis|rediss|pg|ioredis|better-sqlite3|mysql|mysql2)["'`:/]/;
    for (const file of files) {
      // Comments may give examples; code may not switch on a name.
      const code = readFileSync(file, "utf8")
        .replace(/\/\*[\s\S]*?\*\//g, "")
        .replace(/^\s*\/\/.*$/gm, "");
      expect(code.match(names)?.[0], file).toBeUndefined();
    }
  });
});

describe("registerDriver", () => {
  it("adds a driver whose URLs parseStoreUrl and openStore then read, without touching src/inspector", async () => {
    expect(() => parseStoreUrl("test-kv:./x.json")).toThrow(/is not a store URL/);
    registerDriver(testKvDriver);
    registerDriver(testKvDriver); // the same driver twice is one registration
    expect(storeDrivers().filter((d) => d === testKvDriver)).toHaveLength(1);
    expect(parseStoreUrl("test-kv:/tmp/a.json")).toEqual({ kind: "test-kv", path: "/tmp/a.json" });
    expect(() => parseStoreUrl("test-kv:/tmp/a.json?x=1")).toThrow(
      "--store test-kv:/tmp/a.json?x=1: unknown parameter ?x= (only none)",
    );
    await expect(openStore("test-kv:/nonexistent/a.json")).rejects.toThrow(
      "--store test-kv:/nonexistent/a.json: no test KV file at /nonexistent/a.json",
    );
  });

  it("refuses an engine or a scheme that is taken, naming it", () => {
    const like = (engine: string, schemes: string[]) => defineDriver({ ...testKvDriver, engine, schemes });
    expect(() => registerDriver(like("sqlite", ["sqlite2"]))).toThrow(/engine "sqlite" is taken by SQLite/);
    expect(() => registerDriver(like("pg2", ["postgresql"]))).toThrow(
      /scheme postgresql: is taken by PostgreSQL/,
    );
    expect(() => defineDriver({ ...testKvDriver, engine: "Bad Name" })).toThrow(TypeError);
  });

  it("turns a driver's missing peer into a StoreUrlError saying what to install", async () => {
    const name = "idemkey-driver-peer-not-installed";
    registerDriver(
      defineDriver({
        ...testKvDriver,
        engine: "needs-peer",
        schemes: ["needs-peer"],
        peers: [{ package: name, range: "^1.0.0" }],
        async open() {
          return importPeer("idemkey/needs-peer", name, () => import(name));
        },
      }),
    );
    const error = await openStore("needs-peer:/x").catch((e: unknown) => e);
    expect(error).toBeInstanceOf(StoreUrlError);
    expect((error as Error).message).toBe(
      `--store needs-peer:/x needs the "${name}" package: npm install ${name}`,
    );
  });
});

describe("guardStore", () => {
  it("takes the store's name from its driver", async () => {
    const error = await guardStore(testKvDriver, "get", "k", () => Promise.reject(new Error("boom"))).catch(
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(StoreError);
    expect((error as StoreError).store).toBe("test-kv");
    expect((error as Error).message).toBe(
      'test-kv store: get of key "k" failed: boom. It may or may not have been applied; calling again is safe once the test KV file answers.',
    );
    await expect(
      guardStore(driverFor("postgres")!, "claim", undefined, () => Promise.reject(new Error("x"))),
    ).rejects.toThrow(/^postgres store: claim failed: x\. .* once PostgreSQL answers\.$/);
  });
});
