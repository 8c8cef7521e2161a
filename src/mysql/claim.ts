import { decideClaim } from "../store/record.js";
import type { ClaimInput, ClaimResult, StoreRecord } from "../store/types.js";
import { ER, errno, type MysqlPoolLike, type ResultHeader } from "./client.js";
import { COLUMNS, type Row, recordValues, toRecord } from "./records.js";
import { params, readKey, writeRecord } from "./statements.js";
import { inTransaction } from "./transaction.js";

/** A claim that keeps meeting a record that vanishes, or a key inserted under it, gives up after this many rounds. */
export const CLAIM_ATTEMPTS = 8;

/** What a read of one key found: the statement's instant and the record, if any (expired or not). */
interface Read {
  now: number;
  record: StoreRecord | undefined;
}

const asRead = (rows: Row[]): Read => {
  const row = rows[0]!;
  return { now: Number(row.now_ms), record: row.key === null ? undefined : toRecord(row) };
};

/**
 * The answer to a claim that meets `record` and leaves it as it is (a replay, a conflict, a key running elsewhere,
 * this very claim resent), or undefined when the claim must write: the record expired, or its lease lapsed for a
 * takeover by the same request.
 */
export function answerAsIs(key: string, record: StoreRecord, input: ClaimInput, now: number) {
  const lapsed =
    record.state === "pending" &&
    record.leaseUntil !== null &&
    record.leaseUntil <= now &&
    record.fingerprint === input.fingerprint;
  if (record.expiresAt <= now || lapsed) return undefined;
  return decideClaim(key, record, input, now);
}

/**
 * The claim protocol in statements MySQL 8 and MariaDB both have (no `INSERT ... RETURNING`): a plain read answers a
 * replay in one statement; a new key is one `INSERT` that the primary key lets only one claimant make; a record to
 * replace (expired) or take over (lapsed lease) is decided under `SELECT ... FOR UPDATE` in a short transaction,
 * so two claimants never both win. Every round starts from a fresh read; a round that lost a race says so with
 * `undefined` and the caller runs another.
 */
export function claimer(pool: MysqlPoolLike, table: string, given: () => number | null) {
  const read = async (key: string): Promise<Read> => {
    const { sql, values } = readKey(table, key, given(), false);
    const [rows] = (await pool.query(sql, values)) as [Row[], unknown];
    return asRead(rows);
  };

  /**
   * Inserts the record decided at the read's instant `now`, on the server's clock, if the key is still free. The
   * insert lands only while its lease (or, for a record with none, its retention) has not lapsed on the server's
   * clock at the moment it lands: a statement delayed past it would otherwise hand out a lease already lapsed.
   */
  const insert = async (key: string, input: ClaimInput, now: number): Promise<ClaimResult | undefined> => {
    const decided = decideClaim(key, undefined, input, now);
    const record = decided.record;
    const p = params(given());
    const values = recordValues(record).map((value) => p.add(value));
    const deadline = record.leaseUntil ?? record.expiresAt;
    try {
      const [header] = (await pool.query(
        `INSERT INTO ${table} (${COLUMNS}) SELECT ${values.join(", ")} FROM DUAL WHERE ${p.now()} <= ${p.add(deadline)}`,
        p.values,
      )) as [ResultHeader, unknown];
      return header.affectedRows === 1 ? decided : undefined;
    } catch (error) {
      // Another claimant inserted the key first: the next round reads its record.
      if (errno(error) === ER.DUP_ENTRY) return undefined;
      throw error;
    }
  };

  /** Replaces an expired record or takes over a lapsed lease, deciding under the row's lock. */
  const locked = (key: string, input: ClaimInput): Promise<ClaimResult | undefined> =>
    inTransaction<ClaimResult | undefined>(pool, async (connection) => {
      const { sql, values } = readKey(table, key, given(), true);
      const [rows] = (await connection.query(sql, values)) as [Row[], unknown];
      const { now, record } = asRead(rows);
      // Deleted since the read: the next round inserts.
      if (record === undefined) return { value: undefined, commit: false };
      const live = record.expiresAt > now ? record : undefined;
      const decided = decideClaim(key, live, input, now);
      if (decided.status === "exists") return { value: decided, commit: false };
      await connection.query(...writeRecord(table, decided.record));
      return { value: decided, commit: true };
    });

  /** One round of a claim; `undefined` when it lost a race and must start again from a fresh read. */
  return async function claimRound(key: string, input: ClaimInput): Promise<ClaimResult | undefined> {
    const { now, record } = await read(key);
    if (record === undefined) return insert(key, input, now);
    return answerAsIs(key, record, input, now) ?? locked(key, input);
  };
}
