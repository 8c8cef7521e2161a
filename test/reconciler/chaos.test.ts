import { type ChildProcess, spawn } from "node:child_process";
import { once } from "node:events";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import Database from "better-sqlite3";
import { afterAll, describe, expect, it } from "vitest";
import { idempotentFetch, lookupReconcile } from "../../src/fetch/index.js";
import { createHarness, defineTool, OutcomeUnknownError } from "../../src/index.js";
import { createReconciler } from "../../src/reconciler/index.js";
import { sqliteStore } from "../../src/sqlite/index.js";
import { onCleanup } from "../support/cleanup.js";
import { faultProxy } from "../support/fault-proxy.js";
import { freePort } from "../support/free-port.js";
import { tsChildArgs } from "../support/ts-child.js";

const OWNER = new URL("./fixtures/owner.ts", import.meta.url);
const ACCOUNT = "acct-chaos";
const dir = mkdtempSync(join(tmpdir(), "idemkey-reconciler-chaos-"));
let stderr = "";

/** Starts the owner on `port` and resolves once it listens; its stderr is kept, printed only on failure. */
async function startOwner(port: number): Promise<ChildProcess> {
  const child = spawn(process.execPath, [...tsChildArgs(OWNER), String(port), dir], {
    stdio: ["ignore", "pipe", "pipe"],
  });
  const undo = onCleanup(() => child.kill("SIGKILL"));
  child.once("exit", undo);
  child.stderr!.on("data", (chunk) => {
    stderr += chunk;
  });
  let out = "";
  await new Promise<void>((resolve, reject) => {
    child.stdout!.on("data", (chunk) => {
      out += chunk;
      if (out.includes("ready\n")) resolve();
    });
    child.once("exit", (code) =>
      reject(new Error(`the owner exited (${code}) before it was ready:\n${stderr}`)),
    );
  });
  return child;
}

async function kill(child: ChildProcess): Promise<void> {
  const exited = once(child, "exit");
  child.kill("SIGKILL");
  await exited;
}

/** Transfers per n, read from the owner's own table: the independent count of effects. */
function effects(): Map<number, number> {
  const db = new Database(join(dir, "effects.db"), { readonly: true });
  try {
    const rows = db.prepare("SELECT n, count(*) AS c FROM effects GROUP BY n").all() as {
      n: number;
      c: number;
    }[];
    return new Map(rows.map((r) => [r.n, r.c]));
  } finally {
    db.close();
  }
}

afterAll(() => {
  rmSync(dir, { recursive: true, force: true });
});

describe("chaos: an unguarded tool whose owner loses answers and dies mid-call", () => {
  it("ends with every unknown outcome resolved by the reconciler and no effect repeated", async () => {
    const port = await freePort();
    let owner = await startOwner(port);
    const proxy = await faultProxy(port);
    try {
      const transfer = defineTool<{ n: number }, { transferred: number }>({
        name: "transfer",
        effect: "unguarded",
        run: async (args, ctx) => {
          const response = await idempotentFetch(
            `http://127.0.0.1:${proxy.port}/v1/transfers`,
            { method: "POST", body: args, headers: { authorization: ACCOUNT } },
            ctx,
          );
          return (await response.json()) as { transferred: number };
        },
      });
      const store = sqliteStore(join(dir, "ledger.db"));
      const harness = createHarness({ store, retry: { retries: 0 } });

      const lostReply: number[] = [];
      const ownerDead: number[] = [];
      const fine: number[] = [];
      for (let n = 0; n < 12; n++) {
        if (n === 4) await kill(owner);
        if (n === 8) owner = await startOwner(port);
        if (n >= 4 && n < 8) {
          // The owner is gone: the proxy took the connection and then lost it, as a crashed server looks.
          ownerDead.push(n);
          await expect(harness.call("task", transfer, { n })).rejects.toBeInstanceOf(OutcomeUnknownError);
        } else if (n % 2 === 1) {
          // The owner did it and its answer was lost on the way back.
          lostReply.push(n);
          const dropped = proxy.dropNextReply();
          await expect(harness.call("task", transfer, { n })).rejects.toBeInstanceOf(OutcomeUnknownError);
          await dropped;
        } else {
          fine.push(n);
          await expect(harness.call("task", transfer, { n })).resolves.toEqual({ transferred: n });
        }
      }
      const before = effects();
      for (const n of [...lostReply, ...fine]) expect(before.get(n)).toBe(1);
      for (const n of ownerDead) expect(before.get(n)).toBeUndefined();
      expect((await harness.list({ state: "outcome_unknown" })).length).toBe(
        lostReply.length + ownerDead.length,
      );

      // The reconciler's copy of the tool: the same name, with a reconcile that asks the owner's lookup directly.
      const reconciling = defineTool<{ n: number }, { transferred: number }>({
        name: "transfer",
        effect: "unguarded",
        run: transfer.run,
        reconcile: lookupReconcile({
          url: `http://127.0.0.1:${port}/v1/idempotency-keys`,
          headers: { authorization: ACCOUNT },
        }),
      });
      const reconciler = createReconciler({
        store,
        tools: [reconciling],
        id: "chaos-reconciler",
        concurrency: 3,
      });
      const report = await reconciler.sweep();
      await reconciler.stop();
      expect(report).toMatchObject({
        done: lostReply.length,
        notDone: ownerDead.length,
        undecided: 0,
        failed: 0,
        conflict: 0,
      });
      expect(await harness.list({ state: "outcome_unknown" })).toEqual([]);
      // Asking ran nothing.
      expect(effects()).toEqual(before);
      for (const n of lostReply) {
        const entry = (await harness.get(harness.key("task", transfer, { n })))!;
        expect(entry).toMatchObject({ state: "completed", result: { transferred: n } });
        expect(entry.events.at(-1)).toMatchObject({
          type: "resolved",
          by: "chaos-reconciler",
          outcome: "done",
          evidence: { lookup: "completed", status: 201 },
        });
      }

      // The agent comes back to every call: the decided ones replay, the ones that never happened run now, once.
      for (let n = 0; n < 12; n++) {
        await expect(harness.call("task", transfer, { n })).resolves.toEqual({ transferred: n });
      }
      const after = effects();
      for (let n = 0; n < 12; n++) expect(after.get(n), `effects of transfer ${n}`).toBe(1);
      await store.close();
    } catch (error) {
      if (stderr) process.stderr.write(`owner stderr:\n${stderr}\n`);
      throw error;
    } finally {
      await proxy.close();
      await kill(owner).catch(() => {});
    }
  }, 60_000);
});
