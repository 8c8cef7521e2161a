import type { MysqlConnectionLike, MysqlPoolLike } from "./client.js";

/**
 * Runs `work` in one short transaction on one connection of the pool: `START TRANSACTION`, the work's statements,
 * then `COMMIT` when it returns `commit: true` (it wrote) or `ROLLBACK` (it only read). A failed statement rolls back;
 * a connection that failed is destroyed rather than returned to the pool, since its state is unknown. The caller's
 * guard runs the whole transaction again when the server rolled it back itself (a deadlock's victim).
 *
 * A COMMIT that fails on a lost connection leaves the outcome unknown: its error reaches the caller as it is (the
 * guard reports a `StoreError`), never a retry here.
 */
export async function inTransaction<T>(
  pool: MysqlPoolLike,
  work: (connection: MysqlConnectionLike) => Promise<{ value: T; commit: boolean }>,
): Promise<T> {
  const connection = await pool.getConnection();
  let healthy = true;
  try {
    await connection.query("START TRANSACTION");
    let done: { value: T; commit: boolean };
    try {
      done = await work(connection);
    } catch (error) {
      await connection.query("ROLLBACK").catch(() => {
        healthy = false;
      });
      throw error;
    }
    await connection.query(done.commit ? "COMMIT" : "ROLLBACK");
    return done.value;
  } catch (error) {
    if ((error as { fatal?: unknown } | null)?.fatal === true) healthy = false;
    throw error;
  } finally {
    if (healthy || typeof connection.destroy !== "function") connection.release();
    else connection.destroy();
  }
}
