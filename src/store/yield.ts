/**
 * Runs `fn` on the next turn of the event loop: `setImmediate` where the runtime has it (Node, Bun, Deno), else a
 * zero-delay `setTimeout` (a browser, workerd), which also runs after pending I/O, only later.
 */
export const onNextTurn: (fn: () => void) => void =
  typeof globalThis.setImmediate === "function"
    ? (fn) => {
        globalThis.setImmediate(fn);
      }
    : (fn) => {
        setTimeout(fn, 0);
      };

/**
 * Resolves on the next turn of the event loop, after pending I/O and timers. A synchronous store (SQLite, memory)
 * answers every call through already-resolved promises, which run as microtasks: a loop over such calls never lets
 * a timer, a socket or another request in until it ends, unless it awaits this now and then.
 */
export function nextTurn(): Promise<void> {
  return new Promise((resolve) => onNextTurn(resolve));
}
