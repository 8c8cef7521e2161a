import { setTimeout as sleep } from "node:timers/promises";
import { expect } from "vitest";
import { createHarness, defineTool } from "../../../src/index.js";
import { storeKey } from "../../../src/owner/engine.js";
import type { Store } from "../../../src/store/types.js";
import { expressFramework, type Framework, hold, newOwner, type Owner } from "../../owner/apps.js";

/**
 * Calls in flight through a store fault: harness calls of a `keyed` and an `unguarded` tool, and POSTs with an
 * Idempotency-Key through the Express middleware (or each of `frameworks`), from several concurrent loops; `fault` runs once enough calls
 * went through, and the loops go on until as many again succeeded after it. Then every call is made again until it
 * settles, as an agent's retries would. Every effect is counted where it happens (the tools' and the handler's own
 * lists), never through the store.
 */
export interface WorkloadOptions {
  store: Store;
  /**
   * The fault, run once. With `holdInFlight`, one call of each tool and one request of each framework have started
   * their effect and wait when it begins; `inFlight.release()` lets them finish (their completion and save then meet
   * the fault), and they are let go when the fault returns in any case.
   */
  fault: (inFlight: { release(): void }) => Promise<void>;
  /** Hold one call or request of each kind mid-effect across the fault (see `fault`). */
  holdInFlight?: boolean;
  /** How long the harness and the middleware hold a claim. */
  leaseMs: number;
  /** Calls that must succeed before the fault, and again after it. */
  calls?: number;
  loops?: number;
  /** The middleware the requests go through, one app each on the same store; Express alone by default. */
  frameworks?: Framework[];
}

export interface WorkloadReport {
  /** Runs of the keyed tool by call id, each with the idempotency key it was given. */
  keyed: Map<string, string[]>;
  /** Runs of the unguarded tool by call id. */
  unguarded: Map<string, number>;
  /** Runs of the HTTP handler by `<framework>:<Idempotency-Key>`. */
  handler: Map<string, number>;
  /** The store key of each call id's keyed and unguarded call, and of each handler's Idempotency-Key. */
  storeKeys: { keyed(id: string): string; unguarded(id: string): string; handler(name: string): string };
  /** What the calls and requests threw or answered other than success, by error name or HTTP status. */
  failures: Map<string, number>;
  /** Call ids whose unguarded call ended in OutcomeUnknownError, or whose request got the middleware's 409
   * outcome-unknown problem (surfaced, never re-run). */
  unknown: number;
  /** Keyed calls that ran more than once, always with one key (a lost write; see the README). */
  keyedRepeats: number;
  /** Keyed calls whose tool ran and whose call still failed (the completion write was lost). */
  completionsLost: number;
  /** Responses the middleware sent and could not save (its `onError` with phase `save`). */
  savesLost: number;
  /** Unguarded calls run again: never allowed. */
  unguardedRepeats: number;
  /** HTTP handlers run again for one Idempotency-Key: never allowed. */
  handlerRepeats: number;
  /** The calls' ids. */
  ids: number;
}

export async function runFailoverWorkload(options: WorkloadOptions): Promise<WorkloadReport> {
  const { store, fault, leaseMs, calls = 40, loops = 6, frameworks = [expressFramework] } = options;
  // A tool's gate: its next run records its effect, then waits for the gate to open.
  const gates = new Map<string, { open: Promise<void>; entered: () => void }>();
  const gate = async (tool: string) => {
    const held = gates.get(tool);
    if (!held) return;
    gates.delete(tool);
    held.entered();
    await held.open;
  };
  const keyed = new Map<string, string[]>();
  const unguarded = new Map<string, number>();
  const failures = new Map<string, number>();
  let completionsLost = 0;
  let savesLost = 0;
  const count = (what: string) => failures.set(what, (failures.get(what) ?? 0) + 1);
  const harness = createHarness({
    store,
    leaseMs,
    retry: { retries: 3, minDelayMs: 50, maxDelayMs: 500 },
    wait: { timeoutMs: 20 * leaseMs },
    // The harness says when the tool ran and its completion could not be written: the call still succeeds.
    onEvent: (event) => {
      if (event.type === "executed" && !event.recorded && event.tool === "charge") completionsLost += 1;
    },
  });
  const charge = defineTool({
    name: "charge",
    effect: "keyed",
    run: async (args: { id: string }, ctx) => {
      await sleep(5);
      keyed.set(args.id, [...(keyed.get(args.id) ?? []), ctx.idempotencyKey]);
      await gate("charge");
      return { charged: args.id };
    },
  });
  const email = defineTool({
    name: "email",
    effect: "unguarded",
    run: async (args: { id: string }) => {
      await sleep(5);
      unguarded.set(args.id, (unguarded.get(args.id) ?? 0) + 1);
      await gate("email");
      return { sent: args.id };
    },
  });
  const apps: { framework: Framework; owner: Owner; app: Awaited<ReturnType<Framework["start"]>> }[] = [];
  for (const framework of frameworks) {
    const owner = newOwner();
    const app = await framework.start(owner, {
      store,
      leaseMs,
      onError: ({ phase, error }) => {
        if (phase === "save") savesLost += 1;
        count(`${framework.name} ${phase}: ${(error as Error)?.name}`);
      },
    });
    apps.push({ framework, owner, app });
  }
  // Express keeps the key it always had; the others name themselves, since they share the store and the scope.
  const idempotencyKey = (framework: Framework, id: string) =>
    framework === expressFramework ? `http-${id}` : `http-${framework.name}-${id}`;

  const ids: string[] = [];
  let succeeded = 0;
  let stop = false;
  /** One attempt at every effect of a call id; true when all three went through. */
  const attempt = async (id: string): Promise<"ok" | "unknown" | "failed"> => {
    let outcome: "ok" | "unknown" | "failed" = "ok";
    const fail = (error: unknown) => {
      const name = (error as Error)?.name ?? "Error";
      count(name);
      if (name === "StoreError")
        count(
          `  ${String((error as Error).message)
            .replace(/ of key "[^"]*"/, "")
            .slice(0, 90)}`,
        );
      if (name === "OutcomeUnknownError") {
        if (outcome === "ok") outcome = "unknown";
      } else outcome = "failed";
    };
    await Promise.all([
      (async () => {
        const runs = keyed.get(id)?.length ?? 0;
        await harness.call("failover", charge, { id }).catch((error: unknown) => {
          // The tool ran and the call still failed: its completion write was lost.
          if ((keyed.get(id)?.length ?? 0) > runs) completionsLost += 1;
          fail(error);
        });
      })(),
      harness.call("failover", email, { id }).catch(fail),
      ...apps.map(({ framework, app }) =>
        app
          .request({
            headers: { "idempotency-key": idempotencyKey(framework, id) },
            body: JSON.stringify({ id }),
          })
          .then(
            (response) => {
              // The middleware took over a key whose handler may have run and will not run it again: surfaced.
              if (response.status === 409 && response.body.includes("problems/outcome-unknown")) {
                count(`${framework.name} 409 outcome-unknown`);
                if (outcome === "ok") outcome = "unknown";
                return;
              }
              if (response.status !== 201) {
                count(`${framework.name} ${response.status}`);
                outcome = "failed";
              }
            },
            (error: unknown) => fail(error),
          ),
      ),
    ]);
    return outcome;
  };

  const loop = async (n: number) => {
    for (let i = 0; !stop; i++) {
      const id = `${n}-${i}`;
      ids.push(id);
      if ((await attempt(id)) === "ok") succeeded += 1;
      // Replay an earlier call now and then, as an agent resuming a task does.
      if (i % 4 === 3 && (await attempt(`${n}-${i - 2}`)) === "failed") count("replay failed");
    }
  };

  const running = Array.from({ length: loops }, (_, n) => loop(n));
  const reached = async (target: number) => {
    while (succeeded < target) await sleep(20);
  };
  try {
    await reached(calls);
    let release = () => {};
    if (options.holdInFlight) {
      const opened = new Promise<void>((resolve) => {
        release = resolve;
      });
      const entered: Promise<void>[] = [];
      for (const tool of ["charge", "email"]) {
        entered.push(new Promise<void>((resolve) => gates.set(tool, { open: opened, entered: resolve })));
      }
      for (const { owner } of apps) {
        const held = hold(owner);
        entered.push(held.entered);
        void opened.then(held.open);
      }
      await Promise.all(entered);
    }
    try {
      await fault({ release });
    } finally {
      release();
    }
    const after = succeeded;
    await reached(after + calls);
  } finally {
    stop = true;
    await Promise.all(running);
  }

  // Every call again until it settles (success, or a surfaced unknown outcome for the unguarded tool).
  let unknown = 0;
  // A key whose claim reply was lost stays locked (409, or a wait) until its lease runs out: allow a few leases.
  for (const id of ids) {
    const deadline = Date.now() + 10 * leaseMs;
    for (;;) {
      const outcome = await attempt(id);
      if (outcome === "unknown") unknown += 1;
      if (outcome !== "failed") break;
      if (Date.now() > deadline)
        throw new Error(`call ${id} never settled: ${JSON.stringify([...failures])}`);
      await sleep(100);
    }
  }
  for (const { app } of apps) await app.close();

  const handler = new Map<string, number>();
  for (const { framework, owner } of apps) {
    for (const effect of owner.effects) {
      const key = `${framework.name}:${idempotencyKey(framework, (effect.body as { id: string }).id)}`;
      handler.set(key, (handler.get(key) ?? 0) + 1);
    }
  }
  let keyedRepeats = 0;
  for (const [id, keys] of keyed) {
    if (new Set(keys).size !== 1)
      throw new Error(`keyed call ${id} ran with several keys: ${keys.join(", ")}`);
    keyedRepeats += keys.length - 1;
  }
  const repeats = (runs: Map<string, number>) => [...runs.values()].reduce((a, n) => a + n - 1, 0);
  return {
    keyed,
    unguarded,
    handler,
    storeKeys: {
      keyed: (id) => `call:${harness.key("failover", charge, { id })}`,
      unguarded: (id) => `call:${harness.key("failover", email, { id })}`,
      // Every app's scope is the account, "anonymous" for these requests.
      handler: (name) => storeKey("anonymous", name.slice(name.indexOf(":") + 1)),
    },
    failures,
    unknown,
    keyedRepeats,
    completionsLost,
    savesLost,
    unguardedRepeats: repeats(unguarded),
    handlerRepeats: repeats(handler),
    ids: ids.length,
  };
}

export const describeReport = (report: WorkloadReport) =>
  `${report.ids} call ids; failures ${JSON.stringify(Object.fromEntries(report.failures))}; ` +
  `${report.unknown} unknown outcomes; ${report.completionsLost} keyed completions and ${report.savesLost} saves lost; repeats: keyed ${report.keyedRepeats}, unguarded ${report.unguardedRepeats}, ` +
  `handler ${report.handlerRepeats}`;

/** Nothing ran twice and nothing was lost: no re-run of any kind, every completion and saved response written. */
export function expectNothingRepeated(report: WorkloadReport): void {
  expect(report.unguardedRepeats, describeReport(report)).toBe(0);
  expect(report.handlerRepeats, describeReport(report)).toBe(0);
  expect(report.completionsLost, describeReport(report)).toBe(0);
  expect(report.savesLost, describeReport(report)).toBe(0);
  expect(report.keyedRepeats, describeReport(report)).toBe(0);
}
