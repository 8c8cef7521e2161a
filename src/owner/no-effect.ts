const marked = new WeakSet<object>();

/**
 * Says that the handler answering this request did nothing, so the middleware releases its key and a retry with
 * it runs the handler again. Without it, whatever the handler answers is saved and replayed, and a handler that
 * throws leaves the key `outcome_unknown` (unless its error says `noEffect: true`). Call it before the response is
 * sent, with the object the handler has: Hono's `Context`, Express's `req` or `res`, Fastify's `request` or
 * `reply`. It is the one way that works in all three; Express shows middleware no thrown error, so there an error
 * handler calls it for an error that says `noEffect: true`.
 *
 * @example
 * if (!(await ledger.available())) {
 *   markNoEffect(c);
 *   return c.json({ error: "ledger unavailable, nothing was charged" }, 503);
 * }
 */
export function markNoEffect(target: object): void {
  if (typeof target !== "object" || target === null) {
    throw new TypeError(
      "markNoEffect(target) needs the framework's context, request or response object (c, req, res, reply)",
    );
  }
  marked.add(target);
}

/** Whether `markNoEffect` was called with any of these objects of one request. */
export function isMarkedNoEffect(...targets: readonly unknown[]): boolean {
  return targets.some((target) => typeof target === "object" && target !== null && marked.has(target));
}
