/*
 * Purge as one batch of two statements a round, for a connection with no interactive transaction: the live records
 * among the first `chunk` due ones are moved to when purge should look at them again (purgeAgain's rule, in SQL),
 * then up to `chunk` expired due ones are deleted. Each statement decides on the row as it is, so a record claimed
 * again meanwhile (a new expiry) is never deleted.
 */

/** A round's two statements: `later` takes `(now, now, chunk, now)`, `remove` `(now, now, chunk)`. */
export const purgeSql = (table: string) => ({
  later: `UPDATE ${table} SET purge_from = CASE
      WHEN state = 'pending' AND lease_until IS NOT NULL AND lease_until > ? AND lease_until < expires_at
      THEN lease_until ELSE expires_at END
    WHERE key IN (SELECT key FROM ${table} WHERE purge_from <= ? ORDER BY purge_from LIMIT ?) AND expires_at > ?
    RETURNING key`,
  remove: `DELETE FROM ${table}
    WHERE key IN (SELECT key FROM ${table} WHERE purge_from <= ? AND expires_at <= ? ORDER BY purge_from LIMIT ?)
    RETURNING key`,
});
