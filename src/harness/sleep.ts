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

/**
 * The lease renewal timer: a plain `setTimeout` with the default sleep (it runs on every call, so it stays cheap),
 * or the injected `sleep` with an abort signal, so that a test's fake time drives renewals too.
 */
export function scheduler(sleep: Sleep | undefined): Schedule {
  if (sleep === undefined) {
    return (ms, fn) => {
      const timer = setTimeout(fn, ms);
      return () => clearTimeout(timer);
    };
  }
  return (ms, fn) => {
    const controller = new AbortController();
    sleep(ms, controller.signal).then(fn, () => {});
    return () => controller.abort(CANCELLED);
  };
}
