import { type ChildProcess, spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { fileURLToPath } from "node:url";
import { isDeepStrictEqual } from "node:util";
import { Redis } from "ioredis";
import pg from "pg";
import { afterAll, describe, expect, it } from "vitest";
import { idempotencyKey } from "../../src/index.js";
import { processBudget } from "../support/budget.js";
import { lineReader } from "../support/lines.js";
import { deleteKeysUnder, postgresService, redisService } from "../support/services.js";
import { runTogether, spawnWorker } from "../support/workers.js";
import { EFFECTS_DDL, type FleetArgs, type StoreKind } from "./fixtures/fleet.js";

/**
 * A fleet of worker processes sharing one PostgreSQL or Redis store through the harness, with the owner's effects
 * in a PostgreSQL table of their own that the test counts. Needs PostgreSQL for both (the owner lives there).
 */
const [postgres, redis] = await Promise.all([postgresService(), redisService()]);
const run = randomBytes(4).toString("hex");
const admin = new pg.Pool({ connectionString: postgres.url, max: 2 });
const tables: string[] = [];
const prefixes: string[] = [];
const children = new Set<ChildProcess>();

afterAll(() => {
  // A test that failed half-way may leave its hanging worker behind; it is ours to stop.
  for (const child of children)
    if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
});

afterAll(async () => {
  if (!postgres.skip) {
    for (const table of tables) await admin.query(`DROP TABLE IF EXISTS "${table}"`);
    await admin.query("DELETE FROM idemkey_meta WHERE name = ANY($1)", [tables]);
  }
  await admin.end();
  if (!redis.skip && prefixes.length > 0) {
    const client = new Redis(redis.url);
    for (const prefix of prefixes) await deleteKeysUnder(client, prefix);
    client.disconnect();
  }
});

/** A fresh store (table or key prefix) and a fresh effect table for one test. */
async function fleet(kind: StoreKind, name: string): Promise<FleetArgs> {
  const effects = `idemkey_test_owner_${name}_${run}`;
  tables.push(effects);
  await admin.query(EFFECTS_DDL(effects));
  let storeName: string;
  if (kind === "postgres") {
    storeName = `idemkey_test_fleet_${name}_${run}`;
    tables.push(storeName);
  } else {
    storeName = `{idemkey-test-fleet-${name}-${run}}:`;
    prefixes.push(storeName);
  }
  return { kind, pgUrl: postgres.url, redisUrl: redis.url, storeName, effects };
}

const fixture = (name: string) => new URL(`./fixtures/${name}`, import.meta.url);
const CALLS = 1_000;
const WORKERS = 4;

for (const kind of ["postgres", "redis"] as const) {
  const skip = postgres.skip ?? (kind === "redis" ? redis.skip : undefined);

  (skip ? describe.skip : describe)(`a fleet of processes on one ${kind} store`, () => {
    it(
      `runs each of ${CALLS} keyed calls made by ${WORKERS} processes exactly once; all get the winner's result`,
      async () => {
        const args = await fleet(kind, `${kind}_race`);
        type Out = { results: { paymentId: number; by: string }[]; events: Record<string, number> };
        const outs = await runTogether(
          Array.from({ length: WORKERS }, (_, w) =>
            spawnWorker<Out>(fixture("fleet-race-worker.ts"), [JSON.stringify(args), `${CALLS}`, `w${w}`]),
          ),
        );

        const { rows } = await admin.query(`SELECT id, key, worker FROM "${args.effects}"`);
        const byKey = new Map<string, { id: number; worker: string }[]>();
        for (const row of rows) byKey.set(row.key, [...(byKey.get(row.key) ?? []), row]);
        const wrong: string[] = [];
        for (let i = 0; i < CALLS; i++) {
          const key = idempotencyKey(`task-${i}`, "pay", { invoice: i, amount: 100 + i });
          const effects = byKey.get(key) ?? [];
          if (effects.length !== 1) {
            wrong.push(`call ${i}: ran ${effects.length} times`);
            continue;
          }
          const winner = { paymentId: effects[0]!.id, by: effects[0]!.worker };
          outs.forEach((out, w) => {
            if (!isDeepStrictEqual(out.results[i], winner)) {
              wrong.push(
                `call ${i}: worker ${w} got ${JSON.stringify(out.results[i])}, the effect was ${JSON.stringify(winner)}`,
              );
            }
          });
        }
        expect(wrong.slice(0, 10)).toEqual([]);
        expect(rows).toHaveLength(CALLS);
        // The collisions were real: every call but one per key was answered without running the tool.
        const executed = outs.reduce((n, o) => n + (o.events.executed ?? 0), 0);
        const answered = outs.reduce((n, o) => n + (o.events.replayed ?? 0), 0);
        expect(executed).toBe(CALLS);
        expect(answered).toBe(CALLS * (WORKERS - 1));
      },
      processBudget(WORKERS),
    );

    it("lets another process take over a call whose process was killed with SIGKILL mid-call, with the same key", async () => {
      const args = await fleet(kind, `${kind}_takeover`);
      const taskId = `takeover-${run}`;
      const first = startTakeoverWorker(args, taskId, "first", "hang");
      await first.line("ready");
      await first.line("in tool 1");
      const second = startTakeoverWorker(args, taskId, "second", "finish");
      await second.line("ready");
      first.child.kill("SIGKILL");
      expect(await first.exit).toBe("SIGKILL");
      await second.line("in tool 2"); // after the dead process's lease ran out, as its second attempt
      const out = JSON.parse(await second.next()) as {
        result: { effectId: number; by: string };
        events: { type: string; attempt: number }[];
      };
      expect(await second.exit).toBe(0);

      const { rows } = await admin.query(
        `SELECT id, key, worker, attempt FROM "${args.effects}" ORDER BY id`,
      );
      const key = idempotencyKey(taskId, "deploy", { service: "api" });
      // The owner saw the same key from both processes: it is the one that can dedupe the repeat.
      expect(rows.map((r) => ({ key: r.key, worker: r.worker, attempt: r.attempt }))).toEqual([
        { key, worker: "first", attempt: 1 },
        { key, worker: "second", attempt: 2 },
      ]);
      expect(out.result).toEqual({ effectId: rows[1].id, by: "second" });
      expect(out.events.map((e) => e.type)).toContain("taken_over");
      expect(out.events.map((e) => e.type)).toContain("executed");
    });
  });
}

function startTakeoverWorker(args: FleetArgs, taskId: string, name: string, mode: "hang" | "finish") {
  const child = spawn(
    process.execPath,
    [
      "--import",
      "tsx",
      fileURLToPath(fixture("fleet-takeover-worker.ts")),
      JSON.stringify(args),
      taskId,
      name,
      mode,
    ],
    { stdio: ["ignore", "pipe", "inherit"] },
  );
  children.add(child);
  const next = lineReader(child.stdout!);
  const exit = new Promise<NodeJS.Signals | number | null>((resolve) =>
    child.on("exit", (code, signal) => resolve(signal ?? code)),
  );
  return {
    child,
    next,
    exit,
    line: async (expected: string) => expect(await next()).toBe(expected),
  };
}
