import { setTimeout as sleep } from "node:timers/promises";
import { type Context, Hono } from "hono";
import { LeaseLostError, OutcomeUnknownError } from "../../src/errors/index.js";
import { idempotency } from "../../src/hono/index.js";
import type { IdempotencyErrorEvent } from "../../src/owner/options.js";
import type { Store } from "../../src/store/types.js";
import { effectLog } from "./effect-log.js";

/**
 * Issue 43, case 7: the load the issue measured (50 requests through Hono's request path, clients retrying on `409`
 * with `Retry-After`) with the store paused longer than the lease (`pause`, then `resume` after `pauseMs`). Every
 * first request's handler has run (its effect written to an effects file) when the pause starts; then every client
 * gives up waiting and retries, so that the retries' claims reach the store before the holders' renewals and saves
 * and take the keys over. Half the handlers finish while the store is paused, half after. With `retryStore` (the
 * same store through a connection of its own, as a second server process has), the retries and the checks go to a
 * second app on it, which the pause does not reach. What it returns is read from the effects file and from the
 * answers, never from idemkey's own report.
 */
export async function pausedUnderLoad(options: {
  store: Store;
  retryStore?: Store;
  leaseMs: number;
  pauseMs: number;
  pause: () => void;
  resume: () => void;
  n?: number;
}) {
  const { store, leaseMs, n = 50 } = options;
  const log = effectLog("late-save");
  try {
    const run = crypto.randomUUID();
    const keys = Array.from({ length: n }, (_, i) => `k-43-7-${run}-${i}`);
    const finished = new Set<string>();
    const errors: IdempotencyErrorEvent[] = [];
    let entered = 0;
    const barrier = signal();
    const afterPause = signal();
    const handler = async (c: Context) => {
      const key = c.req.header("idempotency-key")!;
      log.effect(key);
      if (++entered === n) barrier.resolve();
      await barrier.promise;
      if (keys.indexOf(key) % 2 === 0) await afterPause.promise;
      finished.add(key);
      return c.json({ charge: key }, 201);
    };
    const appOn = (on: Store) =>
      new Hono().post(
        "/charges",
        idempotency({ store: on, scope: "single-tenant", leaseMs, onError: (e) => errors.push(e) }),
        handler,
      );
    const firstApp = appOn(store);
    const retryApp = options.retryStore === undefined ? firstApp : appOn(options.retryStore);
    const request = async (app: Hono, key: string): Promise<Response> =>
      app.request("/charges", {
        method: "POST",
        headers: { "content-type": "application/json", "idempotency-key": key },
        body: JSON.stringify({ cents: 5 }),
      });
    const send = (key: string) => request(retryApp, key);
    /** A client: retries on 409 key-in-flight after its Retry-After; ends on any other answer. */
    const client = async (key: string, first: Promise<Response>) => {
      let answer = await first;
      for (let i = 0; answer.status === 409 && answer.headers.get("retry-after") !== null; i++) {
        if (i > 60) throw new Error(`key ${key} stayed in flight`);
        await sleep(Number(answer.headers.get("retry-after")) * 1_000);
        answer = await send(key);
      }
      return answer;
    };

    const firsts = keys.map((key) => request(firstApp, key));
    await barrier.promise;
    options.pause();
    let clients: Promise<Response>[];
    try {
      clients = keys.map((key) => client(key, send(key)));
      await sleep(options.pauseMs);
    } finally {
      options.resume();
      afterPause.resolve();
    }
    const answers = await Promise.all([...firsts, ...clients]);
    const answeredUnknown = answers.filter((a) => a.status === 409).length;

    // The saves (late ones included) land within their budget (2 × leaseMs of pauses): asked until then.
    let left = keys;
    for (
      const deadline = Date.now() + 10 * leaseMs;
      left.length > 0 && Date.now() < deadline;
      await sleep(100)
    ) {
      const statuses = await Promise.all(left.map((key) => send(key).then((r) => r.status)));
      left = left.filter((_, i) => statuses[i] !== 201);
    }
    const wrongReplays: string[] = [];
    for (const key of keys) {
      if (left.includes(key)) continue;
      const replay = await send(key);
      const body = (await replay.json()) as { charge?: string };
      if (replay.headers.get("idempotent-replayed") !== "true" || body.charge !== key) wrongReplays.push(key);
    }
    return {
      keys,
      answeredUnknown,
      finished: finished.size,
      leftUnknown: left,
      wrongReplays,
      effects: keys.map((key) => [key, log.count(key)] as const),
      /** What onError heard besides takeovers and lost renewals: a lost save would show here. */
      otherErrors: errors.filter(
        (e) =>
          !(e.phase === "renew" && e.error instanceof LeaseLostError) &&
          !(e.phase === "claim" && e.error instanceof OutcomeUnknownError),
      ),
    };
  } finally {
    log.cleanup();
  }
}

function signal(): { promise: Promise<void>; resolve: () => void } {
  let resolve!: () => void;
  const promise = new Promise<void>((settle) => {
    resolve = settle;
  });
  return { promise, resolve };
}
