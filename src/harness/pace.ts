import { nextTurn } from "../store/yield.js";

/**
 * How long calls may follow one another without a turn of the event loop. A loop of `await harness.call()` with a
 * synchronous tool on a synchronous store (SQLite, memory) otherwise never yields to timers and I/O: it starved a
 * purge for minutes. One clock read per call when there is nothing to do; a turn costs a few microseconds per PACE_MS.
 */
const PACE_MS = 10;
let lastTurn = performance.now();

/** `promise`, settled a turn of the event loop later when PACE_MS have passed since the last such turn. */
export function paced<T>(promise: Promise<T>): Promise<T> {
  if (performance.now() - lastTurn < PACE_MS) return promise;
  // Counted from now, so that concurrent calls do not all pile up a turn each.
  lastTurn = performance.now();
  return promise.finally(async () => {
    await nextTurn();
    lastTurn = performance.now();
  });
}
