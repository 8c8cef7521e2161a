import { type ReconcilerOptions, resolveOptions } from "./options.js";
import { type SweepReport, sweep } from "./sweep.js";

export interface Reconciler {
  /** The `by` this reconciler writes in the audit trail. */
  readonly id: string;
  /**
   * One pass: every `outcome_unknown` record, and every unguarded call whose process stopped after it started, is
   * taken (one reconciler of a fleet wins each), asked about through its tool's `reconcile`, and decided or left for
   * a person with the reason in its audit trail. Resolves with what it did; a store error on `list` rejects.
   */
  sweep(options?: { signal?: AbortSignal }): Promise<SweepReport>;
  /**
   * Sweeps now and then every `intervalMs` until `stop()` or `signal`. A sweep that fails is told to `onError` and
   * the next one comes at its time.
   */
  start(options?: { signal?: AbortSignal; onError?: (error: unknown) => void }): void;
  /**
   * Starts no more records and resolves once those under way are written (a `reconcile` in progress gets the abort
   * through `ctx.signal`; one that then gives up leaves its record undecided, as it was).
   */
  stop(): Promise<void>;
}

/**
 * The background completer for unknown outcomes: asks each tool's `reconcile` about the calls whose outcome the
 * harness could not know, writes each decision into the record's audit trail, and leaves what it cannot decide for
 * a person. Any number of reconcilers may share a store: a record is decided by one of them, once.
 *
 * @example
 * const reconciler = createReconciler({ store, tools: [chargeCard] });
 * reconciler.start();
 * process.on("SIGTERM", () => reconciler.stop());
 */
export function createReconciler(options: ReconcilerOptions): Reconciler {
  const core = resolveOptions(options);
  const stopping = new AbortController();
  const active = new Set<Promise<unknown>>();
  let loop: Promise<void> | undefined;

  function tracked<T>(promise: Promise<T>): Promise<T> {
    active.add(promise);
    const forget = () => active.delete(promise);
    promise.then(forget, forget);
    return promise;
  }

  function sweepOnce(signal: AbortSignal | undefined): Promise<SweepReport> {
    const both = signal === undefined ? stopping.signal : AbortSignal.any([stopping.signal, signal]);
    return tracked(sweep(core, both));
  }

  return {
    id: core.id,
    sweep(sweepOptions = {}) {
      return sweepOnce(sweepOptions.signal);
    },
    start(startOptions = {}) {
      if (loop !== undefined) throw new Error("reconciler.start(): already started");
      if (stopping.signal.aborted) throw new Error("reconciler.start(): the reconciler was stopped");
      const { signal, onError } = startOptions;
      const both = signal === undefined ? stopping.signal : AbortSignal.any([stopping.signal, signal]);
      loop = tracked(
        (async () => {
          while (!both.aborted) {
            try {
              await sweepOnce(both);
            } catch (error) {
              onError?.(error);
            }
            await pause(core.intervalMs, both);
          }
        })(),
      );
    },
    async stop() {
      stopping.abort();
      while (active.size > 0) await Promise.allSettled([...active]);
    },
  };
}

function pause(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal.aborted) return resolve();
    const done = () => {
      clearTimeout(timer);
      signal.removeEventListener("abort", done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal.addEventListener("abort", done, { once: true });
  });
}
