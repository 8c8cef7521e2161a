/**
 * A table's migration run once per pool and table in a process, however many calls start at once: the first call
 * runs `migrate`, the others wait for its promise. A failed migration is forgotten, so that the next call tries
 * again instead of failing for good (effectOnce on PostgreSQL and MySQL, whose first use of a table creates it).
 */
export function oncePerPool() {
  const done = new WeakMap<object, Map<string, Promise<void>>>();
  return (pool: object, table: string, migrate: () => Promise<void>): Promise<void> => {
    const tables = done.get(pool) ?? new Map<string, Promise<void>>();
    done.set(pool, tables);
    let running = tables.get(table);
    if (!running) {
      running = migrate().catch((error: unknown) => {
        tables.delete(table);
        throw error;
      });
      tables.set(table, running);
    }
    return running;
  };
}
