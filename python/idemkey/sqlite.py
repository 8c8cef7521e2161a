"""A store in a SQLite file, on the standard library's ``sqlite3``: the TypeScript SQLite stores' table, so that a
Python and a TypeScript process share one file (docs/ledger-format.md, "SQLite").

Every write is one ``BEGIN IMMEDIATE`` transaction (the file's write lock taken before the read), so two processes,
in either language, never both claim a key. WAL mode, as the TypeScript stores set it.
"""

from __future__ import annotations

import re
import sqlite3
import threading
from typing import Any, Callable

from .errors import SchemaVersionError, StoreError
from .store import UNSET, ClaimInput, ClaimResult, Expect, Patch, StoreRecord, decide_claim, now_ms

META_TABLE = "idemkey_meta"
_IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,62}$")


def migrations(table: str) -> list[str]:
    """The TypeScript ``src/sqlite/table.ts`` migrations, verbatim: version i to i + 1."""
    return [
        f"""CREATE TABLE {table} (
    key TEXT PRIMARY KEY,
    state TEXT NOT NULL,
    fingerprint TEXT NOT NULL,
    token TEXT,
    lease_until INTEGER,
    attempts INTEGER NOT NULL,
    result TEXT,
    data TEXT,
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL,
    expires_at INTEGER NOT NULL
  ) WITHOUT ROWID;
  CREATE INDEX {table}_expires_at ON {table} (expires_at);""",
        f"""ALTER TABLE {table} ADD COLUMN purge_from INTEGER NOT NULL DEFAULT 0;
  CREATE INDEX {table}_purge_from ON {table} (purge_from);
  DROP INDEX {table}_expires_at;""",
    ]


_COLUMNS = "key, state, fingerprint, token, lease_until, attempts, result, data, created_at, updated_at, expires_at"


def _record(row: Any) -> StoreRecord | None:
    return None if row is None else StoreRecord(*row)


class SqliteStore:
    def __init__(
        self,
        path: str,
        *,
        table: str = "idemkey_records",
        busy_timeout_ms: int = 5000,
        synchronous: str = "normal",
        clock: Callable[[], int] = now_ms,
    ) -> None:
        if not isinstance(path, str) or path == "":
            raise TypeError(f'sqlite_store: path must be a file path or ":memory:", got {path!r}')
        if not isinstance(table, str) or not _IDENTIFIER.match(table):
            raise TypeError(f"sqlite_store: table must be a SQL identifier (letters, digits, _), got {table!r}")
        if isinstance(busy_timeout_ms, bool) or not isinstance(busy_timeout_ms, int) or busy_timeout_ms < 0:
            raise TypeError(f"sqlite_store: busy_timeout_ms must be a non-negative integer, got {busy_timeout_ms!r}")
        if synchronous not in ("normal", "full"):
            raise TypeError(f'sqlite_store: synchronous must be "normal" or "full", got {synchronous!r}')
        self.table = table
        self._clock = clock
        self._lock = threading.RLock()
        self._db = sqlite3.connect(
            path, timeout=busy_timeout_ms / 1000, isolation_level=None, check_same_thread=False
        )
        self._run("open", None, lambda: self._open(synchronous))

    def _open(self, synchronous: str) -> None:
        db = self._db
        db.execute("PRAGMA journal_mode = WAL")
        db.execute(f"PRAGMA synchronous = {synchronous.upper()}")
        supported = len(migrations(self.table))

        def migrate() -> None:
            db.execute(f"CREATE TABLE IF NOT EXISTS {META_TABLE} (name TEXT PRIMARY KEY, version INTEGER NOT NULL)")
            row = db.execute(f"SELECT version FROM {META_TABLE} WHERE name = ?", (self.table,)).fetchone()
            found = 0 if row is None else row[0]
            if found > supported:
                raise SchemaVersionError(self.table, found, supported)
            if found == supported:
                return
            for sql in migrations(self.table)[found:]:
                for statement in sql.split(";"):
                    if statement.strip():
                        db.execute(statement)
            db.execute(
                f"INSERT INTO {META_TABLE} (name, version) VALUES (?, ?) "
                "ON CONFLICT (name) DO UPDATE SET version = excluded.version",
                (self.table, supported),
            )

        self._transaction(migrate)

    def _transaction(self, body: Callable[[], Any]) -> Any:
        with self._lock:
            self._db.execute("BEGIN IMMEDIATE")
            try:
                value = body()
            except BaseException:
                self._db.execute("ROLLBACK")
                raise
            self._db.execute("COMMIT")
            return value

    def _run(self, operation: str, key: str | None, body: Callable[[], Any]) -> Any:
        try:
            with self._lock:
                return body()
        except sqlite3.Error as error:
            raise StoreError("sqlite", operation, key, error) from error

    def _live(self, key: str, now: int) -> StoreRecord | None:
        row = self._db.execute(
            f"SELECT {_COLUMNS} FROM {self.table} WHERE key = ? AND expires_at > ?", (key, now)
        ).fetchone()
        return _record(row)

    def claim(self, key: str, claim: ClaimInput) -> ClaimResult:
        def body() -> ClaimResult:
            now = self._clock()
            decision = decide_claim(key, self._live(key, now), claim, now)
            if decision.status != "exists":
                r = decision.record
                # The TypeScript putSql: purge_from is the record's creation.
                self._db.execute(
                    f"""INSERT INTO {self.table} ({_COLUMNS}, purge_from) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
  ON CONFLICT (key) DO UPDATE SET state = excluded.state, fingerprint = excluded.fingerprint,
    token = excluded.token, lease_until = excluded.lease_until, attempts = excluded.attempts,
    result = excluded.result, data = excluded.data, created_at = excluded.created_at,
    updated_at = excluded.updated_at, expires_at = excluded.expires_at, purge_from = excluded.purge_from""",
                    (r.key, r.state, r.fingerprint, r.token, r.lease_until, r.attempts, r.result, r.data,
                     r.created_at, r.updated_at, r.expires_at, r.created_at),
                )
            return decision

        return self._run("claim", key, lambda: self._transaction(body))

    def get(self, key: str) -> StoreRecord | None:
        return self._run("get", key, lambda: self._live(key, self._clock()))

    def update(self, key: str, expect: Expect, patch: Patch) -> StoreRecord | None:
        def body() -> StoreRecord | None:
            now = self._clock()
            sets = ["updated_at = ?"]
            values: list[Any] = [now]
            lease = UNSET if patch.lease_ms is UNSET else (None if patch.lease_ms is None else now + patch.lease_ms)
            expires = UNSET if patch.ttl_ms is UNSET else now + patch.ttl_ms
            for column, value in (
                ("state", patch.state), ("token", patch.token), ("lease_until", lease),
                ("attempts", patch.attempts), ("result", patch.result), ("data", patch.data),
                ("expires_at", expires),
            ):
                if value is not UNSET:
                    sets.append(f"{column} = ?")
                    values.append(value)
            where = "key = ? AND expires_at > ?"
            values += [key, now]
            if expect.token is not None:
                where += " AND token = ?"
                values.append(expect.token)
            if expect.state is not None:
                where += " AND state = ?"
                values.append(expect.state)
            # A compare-and-set in one statement, as the TypeScript updateStatement; read back in the same transaction.
            changed = self._db.execute(f"UPDATE {self.table} SET {', '.join(sets)} WHERE {where}", values).rowcount
            if changed != 1:
                return None
            return _record(
                self._db.execute(f"SELECT {_COLUMNS} FROM {self.table} WHERE key = ?", (key,)).fetchone()
            )

        return self._run("update", key, lambda: self._transaction(body))

    def delete(self, key: str, expect: Expect) -> bool:
        def body() -> bool:
            cursor = self._db.execute(
                f"""DELETE FROM {self.table} WHERE key = ? AND expires_at > ?
                  AND (? IS NULL OR token = ?) AND (? IS NULL OR state = ?)""",
                (key, self._clock(), expect.token, expect.token, expect.state, expect.state),
            )
            return cursor.rowcount == 1

        return self._run("delete", key, lambda: self._transaction(body))

    def list(
        self, *, prefix: str | None = None, state: str | None = None, after: str | None = None, limit: int = 100
    ) -> list[StoreRecord]:
        def body() -> list[StoreRecord]:
            where = "expires_at > ?"
            values: list[Any] = [self._clock()]
            if prefix:
                where += " AND substr(key, 1, length(?)) = ?"
                values += [prefix, prefix]
            if after is not None:
                where += " AND key > ?"
                values.append(after)
            if state is not None:
                where += " AND state = ?"
                values.append(state)
            values.append(limit)
            rows = self._db.execute(
                f"SELECT {_COLUMNS} FROM {self.table} WHERE {where} ORDER BY key LIMIT ?", values
            ).fetchall()
            return [StoreRecord(*row) for row in rows]

        return self._run("list", None, body)

    def purge(self, limit: int = 1000) -> int:
        """Removes up to ``limit`` expired records, walking ``purge_from`` as the TypeScript stores do."""

        def body(chunk: int) -> tuple[int, int]:
            now = self._clock()
            due = self._db.execute(
                f"""SELECT key, state, lease_until, expires_at FROM {self.table}
                  WHERE purge_from <= ? ORDER BY purge_from LIMIT ?""",
                (now, chunk),
            ).fetchall()
            gone = 0
            for key, state, lease_until, expires_at in due:
                if expires_at <= now:
                    self._db.execute(f"DELETE FROM {self.table} WHERE key = ?", (key,))
                    gone += 1
                else:
                    again = (
                        lease_until
                        if state == "pending" and lease_until is not None and now < lease_until < expires_at
                        else expires_at
                    )
                    self._db.execute(f"UPDATE {self.table} SET purge_from = ? WHERE key = ?", (again, key))
            return len(due), gone

        removed = 0
        # In batches of at most 500 rows, each its own short write transaction, as the TypeScript stores do.
        while removed < limit:
            chunk = min(500, limit - removed)
            seen, gone = self._run("purge", None, lambda: self._transaction(lambda: body(chunk)))
            removed += gone
            if seen < chunk:
                break
        return removed

    def close(self) -> None:
        with self._lock:
            self._db.close()


def sqlite_store(path: str, **options: Any) -> SqliteStore:
    """A store in the SQLite file at ``path`` (``":memory:"`` for a private one).

    Options: ``table`` (default ``"idemkey_records"``, the TypeScript default), ``busy_timeout_ms`` (default 5000:
    how long a write waits for another process's lock), ``synchronous`` (``"normal"``, the default, or ``"full"``),
    ``clock`` (epoch ms, for tests).

    >>> store = sqlite_store("./idemkey.db")
    """
    return SqliteStore(path, **options)
