/**
 * A `changes` query's `since` as a whole number a server binds as an integer (PostgreSQL's bigint, a Lua number):
 * `updatedAt` is whole milliseconds, so a fraction rounds up without changing the answer, and a watcher that has
 * seen no record yet asks from -Infinity (the inspector does), which becomes the least safe integer.
 */
export function sinceMs(since: number): number {
  if (typeof since !== "number" || Number.isNaN(since)) {
    throw new TypeError(`changes: query.since must be epoch ms, got ${String(since)}`);
  }
  return Math.min(Math.max(Math.ceil(since), Number.MIN_SAFE_INTEGER), Number.MAX_SAFE_INTEGER);
}
