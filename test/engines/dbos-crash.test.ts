import { type ChildProcess, spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { once } from "node:events";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { idempotencyKey } from "../../src/index.js";
import { postgresService } from "../support/services.js";
import { dbosDatabaseUrl } from "./dbos-url.js";
import { type Owner, startOwner } from "./owner.js";

const service = await postgresService();
const dir = mkdtempSync(join(tmpdir(), "idemkey-dbos-crash-"));
const worker = fileURLToPath(new URL("./fixtures/dbos-worker.ts", import.meta.url));
// A fresh DBOS system database per run, dropped afterwards; the ledger lives in it too.
const database = `idemkey_dbos_crash_${randomBytes(4).toString("hex")}`;
const dbUrl = dbosDatabaseUrl(service.url, database);
let owner: Owner;
let onEffect: (() => void) | undefined;
const children = new Set<ChildProcess>();

beforeAll(async () => {
  owner = await startOwner({
    effectsFile: join(dir, "effects.jsonl"),
    afterEffect: () => {
      const kill = onEffect;
      onEffect = undefined;
      if (kill === undefined) return undefined;
      kill();
      return "drop";
    },
  });
});

afterAll(async () => {
  for (const child of children) child.kill("SIGKILL");
  await owner?.close();
  if (!service.skip) {
    const admin = new pg.Client({ connectionString: service.url });
    await admin.connect();
    await admin.query(`DROP DATABASE IF EXISTS "${database}" WITH (FORCE)`);
    await admin.end();
  }
  rmSync(dir, { recursive: true, force: true });
}, 60_000);

/** Runs the worker process until it prints its result (or exits without one, killed). */
async function workerProcess(env: Record<string, string>, onSpawn?: (child: ChildProcess) => void) {
  const child = spawn(process.execPath, ["--import", "tsx", worker], {
    env: { ...process.env, IDEMKEY_DBOS_URL: dbUrl, IDEMKEY_OWNER_URL: owner.url, ...env },
    stdio: ["ignore", "pipe", "inherit"],
  });
  children.add(child);
  onSpawn?.(child);
  const exited = once(child, "exit");
  let result: unknown;
  for await (const line of createInterface({ input: child.stdout as NodeJS.ReadableStream })) {
    if (line.startsWith("result ")) result = JSON.parse(line.slice("result ".length));
  }
  await exited;
  children.delete(child);
  return { child, result, signal: child.signalCode };
}

/** Starts the workflow in one process, kills it right after the step's effect, and lets a second one recover it. */
async function crashAndRecover(workflow: "withIdemkey" | "bare") {
  const id = `order-${randomBytes(4).toString("hex")}`;
  const env = { IDEMKEY_WORKFLOW: workflow, IDEMKEY_WORKFLOW_ID: id };
  const before = owner.effects().length;
  let first: ChildProcess | undefined;
  onEffect = () => first?.kill("SIGKILL");
  const killed = await workerProcess({ ...env, IDEMKEY_START: "1" }, (child) => {
    first = child;
  });
  const recovered = await workerProcess(env);
  return { id, killed, recovered, effects: owner.effects().slice(before) };
}

(service.skip ? describe.skip : describe)(
  "idemkey/dbos: the process killed right after the step's effect",
  () => {
    it("with idemkey: DBOS recovers the workflow in a new process, the step runs again under the same key: one effect", async () => {
      const { id, killed, recovered, effects } = await crashAndRecover("withIdemkey");
      expect(killed.signal).toBe("SIGKILL");
      expect(killed.result).toBeUndefined();
      const key = idempotencyKey(id, "charge", { amount: 700 }, { step: 0 });
      expect(effects).toEqual([{ key, body: { amount: 700 } }]);
      expect(owner.requests.filter((r) => r.key === key)).toHaveLength(2);
      expect(recovered.result).toEqual({ id: expect.any(String), amount: 700 });
    }, 120_000);

    it("(without idemkey) the recovering process charges again: two effects", async () => {
      const { killed, recovered, effects } = await crashAndRecover("bare");
      expect(killed.signal).toBe("SIGKILL");
      expect(effects).toHaveLength(2);
      expect(recovered.result).toEqual({ id: expect.any(String), amount: 700 });
    }, 120_000);
  },
);
