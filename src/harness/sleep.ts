import { nextTurnTimer } from "../claim/timer.js";
/** Waits `ms` milliseconds, or rejects with `signal.reason` as soon as the signal aborts. */
export type Sleep = (ms: number, signal?: AbortSignal) => Promise<void>;

export const defaultSleep: Sleep = (ms, signal) =>
  new Promise<void>((resolve, reject) => {
    if (signal?.aborted) {
      reject(signal.reason);
      return;
    }
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal!.reason);
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener("abort", onAbort);
      resolve();
    }, ms);
    signal?.addEventListener("abort", onAbort, { once: true });
  });

/** Calls `fn` after `ms` milliseconds unless the returned function is called first. */
export type Schedule = (ms: number, fn: () => void) => () => void;

const CANCELLED = Symbol("cancelled");

/** Keeps the process alive while a call runs, as a pending `setTimeout` would; made only if the call outlives its turn. */
const realTimer: Schedule = nextTurnTimer({ unref: false });

/**
 * The lease renewal timer: a `setTimeout` armed at the next turn with the default sleep (it runs on every call, so it
 * stays cheap: see `nextTurnTimer`),
 * or the injected `sleep` with an abort signal, so that a test's fake time drives renewals too.
 */
export function scheduler(sleep: Sleep | undefined): Schedule {
  if (sleep === undefined) return realTimer;
  return (ms, fn) => {
    const controller = new AbortController();
    sleep(ms, controller.signal).then(fn, () => {});
    return () => controller.abort(CANCELLED);
  };
}
