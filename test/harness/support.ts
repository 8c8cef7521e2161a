import type { HarnessEvent, Sleep } from "../../src/index.js";

/**
 * A clock and a sleep that only move when the test says so, so that backoff, polling, leases and timeouts are
 * tested without real waiting (and without asserting real timing).
 */
export interface FakeTime {
  clock: () => number;
  sleep: Sleep;
  /** Every delay asked of `sleep`, in order. */
  readonly slept: number[];
  /** Moves the clock forward by `ms`, firing the timers due on the way in order. */
  advance(ms: number): Promise<void>;
  /** Fires timers in order, moving the clock to each, until `promise` settles; returns its outcome. */
  run<T>(promise: Promise<T>): Promise<T>;
}

interface Timer {
  at: number;
  seq: number;
  fire: () => void;
}

export function fakeTime(start = 1_700_000_000_000): FakeTime {
  let now = start;
  let seq = 0;
  const timers: Timer[] = [];
  const slept: number[] = [];

  const next = (): Timer | undefined => {
    let best: Timer | undefined;
    for (const t of timers) if (!best || t.at < best.at || (t.at === best.at && t.seq < best.seq)) best = t;
    return best;
  };
  const fire = (timer: Timer) => {
    timers.splice(timers.indexOf(timer), 1);
    now = Math.max(now, timer.at);
    timer.fire();
  };

  const sleep: Sleep = (ms, signal) =>
    new Promise<void>((resolve, reject) => {
      if (signal?.aborted) {
        reject(signal.reason);
        return;
      }
      slept.push(ms);
      const onAbort = () => {
        const i = timers.indexOf(timer);
        if (i >= 0) timers.splice(i, 1);
        reject(signal!.reason);
      };
      const timer: Timer = {
        at: now + ms,
        seq: seq++,
        fire: () => {
          signal?.removeEventListener("abort", onAbort);
          resolve();
        },
      };
      timers.push(timer);
      signal?.addEventListener("abort", onAbort, { once: true });
    });

  return {
    clock: () => now,
    sleep,
    slept,
    async advance(ms) {
      const target = now + ms;
      for (;;) {
        await flush();
        const timer = next();
        if (!timer || timer.at > target) break;
        fire(timer);
      }
      now = target;
      await flush();
    },
    async run(promise) {
      let settled = false;
      promise.then(
        () => {
          settled = true;
        },
        () => {
          settled = true;
        },
      );
      for (;;) {
        await flush();
        if (settled) return promise;
        const timer = next();
        if (!timer) throw new Error("fakeTime.run: the promise is waiting, but not on any timer");
        fire(timer);
      }
    },
  };
}

/** Lets every pending promise callback and store call run. */
export async function flush(): Promise<void> {
  for (let i = 0; i < 10; i++) await new Promise<void>((resolve) => setImmediate(resolve));
}

/**
 * The owner of a side effect, outside the harness: it dedupes on the idempotency key as a real owner would, and
 * counts what it received (`requests`) and what took effect (`effects`) independently of the ledger.
 */
export function fakeOwner() {
  const saved = new Map<string, { id: number }>();
  const requests: { key: string; args: unknown }[] = [];
  const effects: { key: string; args: unknown }[] = [];
  return {
    requests,
    effects,
    /** Honours the key: a repeated key answers the saved result without a second effect. */
    keyed(key: string, args: unknown): { id: number } {
      requests.push({ key, args });
      const existing = saved.get(key);
      if (existing) return existing;
      effects.push({ key, args });
      const result = { id: effects.length };
      saved.set(key, result);
      return result;
    },
    /** Ignores keys: every request takes effect. */
    unguarded(key: string, args: unknown): { id: number } {
      requests.push({ key, args });
      effects.push({ key, args });
      return { id: effects.length };
    },
  };
}

export function eventLog() {
  const events: HarnessEvent[] = [];
  return {
    events,
    onEvent: (event: HarnessEvent) => {
      events.push(event);
    },
    types: () => events.map((e) => e.type),
  };
}
