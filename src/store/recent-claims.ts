/** Claims read first once this many of the recent ones met a record (of at most REMEMBERED). */
const READ_FIRST = 4;
const REMEMBERED = 8;

/**
 * Whether a store's recent claims met records (replays, conflicts) or made new ones, so that the next claim can
 * start with the statement the common case needs: a read while they met records, an insert while they did not.
 * Shared by the SQL stores; the count only orders statements, never decides a claim.
 */
export interface RecentClaims {
  /** Counts one claim: `record` when it met one. */
  saw(record: boolean): void;
  /** Whether READ_FIRST or more of the recent claims met a record. */
  readFirst(): boolean;
  /** Whether none of them did. */
  none(): boolean;
}

export function recentClaims(): RecentClaims {
  let met = 0;
  return {
    saw(record) {
      met = record ? Math.min(met + 1, REMEMBERED) : Math.max(met - 1, 0);
    },
    readFirst: () => met >= READ_FIRST,
    none: () => met === 0,
  };
}
