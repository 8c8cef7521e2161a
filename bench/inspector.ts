import { fork } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { createHarness } from "../src/harness/create-harness.js";
import { defineTool } from "../src/harness/define-tool.js";
import { postgresStore } from "../src/postgres/index.js";
import { redisStore } from "../src/redis/index.js";
import { sqliteStore } from "../src/sqlite/index.js";
import type { Store } from "../src/store/types.js";
import { connectPostgres, connectRedis, deleteKeys, PG_URL, REDIS_URL } from "./services.js";
import { printTable } from "./table.js";

const RECORDS = 10_000;
/** The window CPU is measured over; IDEMKEY_BENCH_INSPECTOR_S shortens it for a quick look. */
const WINDOW_S = Number(process.env.IDEMKEY_BENCH_INSPECTOR_S ?? 30);
/** Calls the writer makes per second in the "writes" rows: an agent fleet at a steady trickle. */
const WRITES_PER_S = 5;
const CHILD = fileURLToPath(new URL("./inspector-child.ts", import.meta.url));

const tool = defineTool({
  name: "sendMessage",
  effect: "keyed",
  run: (args: { n: number }) => ({ id: args.n }),
});

/** One ledger the inspector is measured on: the store the bench writes through, the URL the inspector opens. */
interface Ledger {
  name: string;
  store: Store;
  url: string;
  cleanup(): Promise<void>;
}

/**
 * CPU used by an inspector process with one page open over a ledger of 10,000 calls, on SQLite and, when they
 * answer, PostgreSQL and Redis, measured with `process.cpuUsage()` inside that process over the window: "list"
 * reads every record per poll (the inspector before `changes`, or a store without it), "changes" reads what
 * changed since the last poll. The page is played by this process: it holds the live stream and, on each change
 * event, reads what the real page reads. The CPU the servers spend is theirs, not in these figures.
 */
export async function benchInspector(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), "idemkey-bench-inspector-"));
  const path = join(dir, "ledger.db");
  const run = randomBytes(4).toString("hex");
  const ledgers: Ledger[] = [
    { name: "SQLite", store: sqliteStore(path), url: `sqlite:${path}`, cleanup: async () => {} },
  ];
  const pool = await connectPostgres();
  if (pool) {
    // A table of this run's own, dropped at the end.
    const table = `idemkey_bench_inspector_${run}`;
    const url = new URL(PG_URL);
    url.searchParams.set("table", table);
    ledgers.push({
      name: "PostgreSQL",
      store: postgresStore(pool, { table }),
      url: url.href,
      cleanup: async () => {
        await pool.query(`DROP TABLE IF EXISTS "${table}"`);
        await pool.query("DELETE FROM idemkey_meta WHERE name = $1", [table]);
        await pool.end();
      },
    });
  }
  const redis = await connectRedis();
  if (redis) {
    const prefix = `{idemkey-bench-inspector-${run}}:`;
    const url = new URL(REDIS_URL);
    url.searchParams.set("prefix", prefix);
    ledgers.push({
      name: "Redis",
      store: redisStore(redis, { prefix }),
      url: url.href,
      cleanup: async () => {
        await deleteKeys(redis, prefix);
        redis.disconnect();
      },
    });
  }
  const rows: string[][] = [];
  try {
    for (const ledger of ledgers) {
      const harness = createHarness({ store: ledger.store });
      for (let i = 0; i < RECORDS; i += 100) {
        // A hundred at a time: a server store fills in seconds rather than a minute.
        await Promise.all(
          Array.from({ length: 100 }, (_, j) => harness.call(`task-${(i + j) % 200}`, tool, { n: i + j })),
        );
      }
      for (const writes of [false, true]) {
        const cpu: Record<string, number> = {};
        for (const mode of ["list", "changes"]) {
          cpu[mode] = await measure(
            ledger.url,
            mode,
            writes ? () => harness.call("task-live", tool, { n: next++ }) : null,
          );
        }
        const [list, changes] = [cpu.list!, cpu.changes!];
        rows.push([
          ledger.name,
          writes ? `${WRITES_PER_S} calls/s written` : "idle ledger",
          pct(list),
          pct(changes),
          (changes / list).toFixed(3),
        ]);
      }
      await ledger.store.close();
    }
    printTable(
      `inspector: CPU of the inspector process, one page open, ${RECORDS} calls, ${WINDOW_S} s each (% of a core)`,
      ["store", "load", "list per poll", "changes per poll", "changes / list"],
      rows,
    );
  } finally {
    for (const ledger of ledgers) await ledger.cleanup();
    rmSync(dir, { recursive: true, force: true });
  }
}

let next = RECORDS;
const pct = (cpuMs: number) => `${((cpuMs / (WINDOW_S * 1000)) * 100).toFixed(2)}%`;

async function measure(
  storeUrl: string,
  mode: string,
  write: (() => Promise<unknown>) | null,
): Promise<number> {
  const child = fork(CHILD, [storeUrl, mode], { execArgv: ["--import", "tsx"], stdio: "inherit" });
  const message = () =>
    new Promise<Record<string, unknown>>((resolve) => child.once("message", resolve as never));
  const { url, token } = (await message()) as { url: string; token: string };
  const page = openPage(url as string, token as string);
  // The first poll and the page's first reads happen before the window, which measures the steady state,
  await page.firstChange;
  // and past the 5 s of overlap the scanner reads again after the fill.
  await new Promise((r) => setTimeout(r, 8000));
  child.send("start");
  const end = Date.now() + WINDOW_S * 1000;
  while (Date.now() < end) {
    if (write) await write();
    await new Promise((r) => setTimeout(r, write ? 1000 / WRITES_PER_S : 250));
  }
  child.send("stop");
  const { cpuMs } = (await message()) as { cpuMs: number };
  page.close();
  await new Promise((r) => child.once("exit", r));
  return cpuMs;
}

/** What one open page does: holds the stream and, 120 ms after a change event, reads counts, calls and tasks. */
function openPage(url: string, token: string) {
  const abort = new AbortController();
  const headers = { "x-idemkey-token": token };
  let timer: NodeJS.Timeout | undefined;
  const refresh = () =>
    Promise.all(
      ["/api/counts", "/api/calls?offset=0&limit=50", "/api/tasks?limit=500"].map((p) =>
        fetch(new URL(p, url), { headers, signal: abort.signal }).then((r) => r.arrayBuffer()),
      ),
    ).catch(() => {});
  const firstChange = (async () => {
    const res = await fetch(new URL("/api/stream", url), { headers, signal: abort.signal });
    const reader = res.body!.getReader();
    const decoder = new TextDecoder();
    let text = "";
    let first: (() => void) | undefined;
    const seen = new Promise<void>((r) => (first = r));
    void (async () => {
      for (;;) {
        const chunk = await reader.read().catch(() => ({ done: true as const, value: undefined }));
        if (chunk.done) return;
        text += decoder.decode(chunk.value, { stream: true });
        const events = text.split("\n\n");
        text = events.pop()!;
        if (events.some((e) => e.startsWith("event: change"))) {
          clearTimeout(timer);
          timer = setTimeout(() => void refresh().then(first), 120);
        }
      }
    })();
    await seen;
  })();
  return {
    firstChange,
    close() {
      clearTimeout(timer);
      abort.abort();
    },
  };
}
