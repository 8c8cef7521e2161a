/*
 * The Worker the workerd tests run against (wrangler.jsonc): a Durable Object whose storage holds an idemkey store,
 * another that only counts effects (the independent record), and a fetch handler that makes one harness call on
 * D1, so that two invocations of it can race on one key.
 */
import { DurableObject } from "cloudflare:workers";
import {
  d1Store,
  durableObjectStore,
  type StoreMethod,
  type StoreObject,
} from "../../src/cloudflare/index.js";
import { createHarness, defineTool, idempotencyKey } from "../../src/index.js";
import type { Store } from "../../src/store/types.js";

export interface Env {
  LEDGER: DurableObjectNamespace<Ledger>;
  EFFECTS: DurableObjectNamespace<Effects>;
  SHARED: DurableObjectNamespace<SharedLedger>;
  DB: D1Database;
}

/** An object whose SQLite holds an idemkey store; the tests reach it through runInDurableObject. */
export class Ledger extends DurableObject<Env> {
  store: Store = durableObjectStore(this.ctx.storage);
}

/** A promise and the function that settles it: what one request waits on until another sends word. */
function signal(): { promise: Promise<void>; fire: () => void } {
  let fire!: () => void;
  const promise = new Promise<void>((resolve) => {
    fire = resolve;
  });
  return { promise, fire };
}

/**
 * A ledger other objects reach over RPC (objectStore): it serves whatever store the test sets in it, so that the
 * contract suite's clock runs inside the object.
 */
export class SharedLedger extends DurableObject<Env> {
  serve?: StoreObject["idemkeyStore"];
  idemkeyStore(method: StoreMethod, args: unknown[]): Promise<unknown> {
    return this.serve!(method, args);
  }
}

/**
 * Counts effects per key in its own storage: what the tests read back, never the store under test. It also holds
 * the signals a race is ordered by: an effect can be held until `release`, and a call that found the key held
 * elsewhere says so with `waiting`, so that the test waits on events rather than on time.
 */
export class Effects extends DurableObject<Env> {
  readonly #signals = new Map<string, ReturnType<typeof signal>>();
  #signal(name: string) {
    const found = this.#signals.get(name) ?? signal();
    this.#signals.set(name, found);
    return found;
  }

  effect(key: string): number {
    const sql = this.ctx.storage.sql;
    sql.exec("CREATE TABLE IF NOT EXISTS effects (key TEXT NOT NULL)");
    sql.exec("INSERT INTO effects (key) VALUES (?)", key);
    return this.count(key);
  }
  count(key: string): number {
    const sql = this.ctx.storage.sql;
    sql.exec("CREATE TABLE IF NOT EXISTS effects (key TEXT NOT NULL)");
    return sql.exec("SELECT count(*) AS n FROM effects WHERE key = ?", key).one().n as number;
  }
  /** The effect, answered only once `release(key)` was called. */
  async heldEffect(key: string): Promise<number> {
    const n = this.effect(key);
    await this.#signal(`release:${key}`).promise;
    return n;
  }
  release(key: string): void {
    this.#signal(`release:${key}`).fire();
  }
  waiting(key: string): void {
    this.#signal(`waiting:${key}`).fire();
  }
  /** Resolves once some call on `key` has said it waits for the key's holder. */
  async untilWaiting(key: string): Promise<void> {
    await this.#signal(`waiting:${key}`).promise;
  }
}

/** What `/call` is asked: the call, the D1 table of this run, and how the invocation behaves. */
export interface CallRequest {
  task: string;
  args: { cents: number };
  table: string;
  /**
   * `race`: a keyed tool whose effect is held until the test releases it. `crash`: an unguarded tool whose
   * invocation answers once its effect happened and never finishes the call, as one that died there. `after`: the
   * same unguarded tool, on a clock `laterMs` ahead, as the next invocation once the lease has lapsed.
   */
  mode: "race" | "crash" | "after";
  laterMs?: number;
}

/** What `/call` answers: the value and whether it was replayed, or the error's name. */
export type CallAnswer = { value: unknown; replayed: boolean } | { error: string; message: string };

const sleep = (ms: number, signal?: AbortSignal) =>
  new Promise<void>((resolve, reject) => {
    const timer = setTimeout(resolve, ms);
    signal?.addEventListener("abort", () => {
      clearTimeout(timer);
      reject(signal.reason);
    });
  });

async function call(request: CallRequest, env: Env): Promise<Response> {
  const effects = env.EFFECTS.get(env.EFFECTS.idFromName("effects"));
  const { task, args, table, mode } = request;
  if (mode === "race") {
    const tool = defineTool({
      name: "charge",
      effect: "keyed",
      run: async ({ cents }: { cents: number }, ctx) => {
        await effects.heldEffect(ctx.idempotencyKey);
        return { charged: cents, key: ctx.idempotencyKey };
      },
    });
    const key = idempotencyKey(task, tool.name, args);
    // The harness's waits for a key held elsewhere sleep with the call's own signal; the lease renewal timer has
    // one of its own. Only the first say that this invocation found the key held.
    const own = new AbortController().signal;
    const harness = createHarness({
      store: d1Store(env.DB, { table }),
      sleep: async (ms, by) => {
        if (by === own) await effects.waiting(key);
        return sleep(ms, by);
      },
      wait: { minDelayMs: 5, maxDelayMs: 50 },
    });
    return answer(() => harness.callWithOutcome(task, tool, args, { signal: own }));
  }

  const later = mode === "after" ? (request.laterMs ?? 0) : 0;
  const clock = () => Date.now() + later;
  const harness = createHarness({ store: d1Store(env.DB, { table, clock }), clock, leaseMs: 1_000 });
  const effected = signal();
  const tool = defineTool({
    name: "email",
    effect: "unguarded",
    run: async ({ cents }: { cents: number }, ctx) => {
      await effects.effect(ctx.idempotencyKey);
      effected.fire();
      // The invocation that dies here never comes back to write its completion.
      if (mode === "crash") await new Promise(() => {});
      return { sent: cents };
    },
  });
  if (mode === "after") return answer(() => harness.callWithOutcome(task, tool, args));
  // Answer as soon as the effect happened, leaving the call unfinished: the request ends, and workerd drops what
  // it still had running (no waitUntil), so the record stays pending, its attempt started.
  void harness.callWithOutcome(task, tool, args).catch(() => {});
  await effected.promise;
  return Response.json({ effected: true });
}

async function answer(run: () => Promise<{ value: unknown; replayed: boolean }>): Promise<Response> {
  try {
    const { value, replayed } = await run();
    return Response.json({ value, replayed } satisfies CallAnswer);
  } catch (error) {
    const { name, message } = error as Error;
    return Response.json({ error: name, message } satisfies CallAnswer, { status: 409 });
  }
}

export default {
  async fetch(request, env): Promise<Response> {
    if (new URL(request.url).pathname === "/call") return call((await request.json()) as CallRequest, env);
    return new Response("ok");
  },
} satisfies ExportedHandler<Env>;
