"""A store in a PostgreSQL table through psycopg 3: the TypeScript ``postgresStore``'s table, migrations and clock, so
that Python and TypeScript processes share one table (docs/ledger-format.md, "PostgreSQL").

Each claim is one transaction: an ``INSERT ... ON CONFLICT DO NOTHING`` of the new record, else the row locked
(``FOR UPDATE``) and decided by the one claim rule, so two claimants in any language never both win. Leases and
expiries are decided on the server's clock (``statement_timestamp()``), as the TypeScript store decides them.
"""

from __future__ import annotations

import re
import threading
from typing import Any, Callable

from .errors import SchemaVersionError, StoreError
from .store import UNSET, ClaimInput, ClaimResult, Expect, Patch, StoreRecord, decide_claim

META_TABLE = "idemkey_meta"
_IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,62}$")
_COLUMNS = "key, state, fingerprint, token, lease_until, attempts, result, data, created_at, updated_at, expires_at"
_SERVER_NOW = "floor(extract(epoch from statement_timestamp()) * 1000)::bigint"


def migrations(table: str, name: str) -> list[str]:
    """The TypeScript ``src/postgres/store.ts`` migrations, verbatim."""
    return [
        f"""CREATE TABLE {table} (
    key text COLLATE "C" PRIMARY KEY,
    state text NOT NULL,
    fingerprint text NOT NULL,
    token text,
    lease_until bigint,
    attempts integer NOT NULL,
    result text,
    data text,
    created_at bigint NOT NULL,
    updated_at bigint NOT NULL,
    expires_at bigint NOT NULL
  );
  CREATE INDEX "{name}_expires_at" ON {table} (expires_at);"""
    ]


def _record(row: Any) -> StoreRecord | None:
    if row is None:
        return None
    key, state, fp, token, lease, attempts, result, data, created, updated, expires = row
    return StoreRecord(key, state, fp, token, None if lease is None else int(lease), int(attempts), result, data,
                       int(created), int(updated), int(expires))


class PostgresStore:
    def __init__(
        self,
        conninfo_or_connection: Any,
        *,
        table: str = "idemkey_records",
        schema: str = "public",
        clock: Callable[[], int] | None = None,
    ) -> None:
        import psycopg

        for name, value in (("table", table), ("schema", schema)):
            if not isinstance(value, str) or not _IDENTIFIER.match(value):
                raise TypeError(f"postgres_store: {name} must be a SQL identifier (letters, digits, _), got {value!r}")
        if clock is not None and not callable(clock):
            raise TypeError("postgres_store: clock must be a function returning epoch ms")
        self._owned = isinstance(conninfo_or_connection, str)
        if self._owned:
            self._conn = psycopg.connect(conninfo_or_connection, autocommit=True)
        elif isinstance(conninfo_or_connection, psycopg.Connection):
            self._conn = conninfo_or_connection
            if not self._conn.autocommit:
                raise TypeError("postgres_store: the connection must be in autocommit mode (each operation is its "
                                "own transaction)")
        else:
            raise TypeError("postgres_store: pass a conninfo string or a psycopg Connection")
        self._clock = clock
        self._lock = threading.RLock()
        self.table = table
        self.schema = schema
        self._t = f'"{schema}"."{table}"'
        self._run("open", None, self._migrate)

    def _migrate(self) -> None:
        meta = f'"{self.schema}"."{META_TABLE}"'
        steps = "\n".join(
            f"IF found < {i + 1} THEN {sql} END IF;" for i, sql in enumerate(migrations(self._t, self.table))
        )
        count = len(migrations(self._t, self.table))
        self._conn.execute(f"""DO $idemkey$
DECLARE found integer;
BEGIN
  PERFORM pg_advisory_xact_lock(hashtext('idemkey:migrate'));
  CREATE TABLE IF NOT EXISTS {meta} (name text PRIMARY KEY, version integer NOT NULL);
  SELECT coalesce(max(version), 0) INTO found FROM {meta} WHERE name = '{self.table}';
  {steps}
  IF found < {count} THEN
    INSERT INTO {meta} (name, version) VALUES ('{self.table}', {count})
      ON CONFLICT (name) DO UPDATE SET version = excluded.version;
  END IF;
END
$idemkey$""")
        row = self._conn.execute(f"SELECT version FROM {meta} WHERE name = %s", (self.table,)).fetchone()
        if row is not None and row[0] > count:
            raise SchemaVersionError(f"{self.schema}.{self.table}", row[0], count)

    def _run(self, operation: str, key: str | None, body: Callable[[], Any]) -> Any:
        import psycopg

        try:
            with self._lock:
                return body()
        except psycopg.Error as error:
            raise StoreError("postgres", operation, key, error) from error

    def _now(self) -> int:
        if self._clock is not None:
            return self._clock()
        row = self._conn.execute(f"SELECT {_SERVER_NOW}").fetchone()
        return int(row[0])  # type: ignore[index]

    def claim(self, key: str, claim: ClaimInput) -> ClaimResult:
        def body() -> ClaimResult:
            with self._conn.transaction():
                now = self._now()
                fresh = decide_claim(key, None, claim, now).record
                inserted = self._conn.execute(
                    f"INSERT INTO {self._t} ({_COLUMNS}) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s) "
                    f"ON CONFLICT (key) DO NOTHING RETURNING {_COLUMNS}",
                    (fresh.key, fresh.state, fresh.fingerprint, fresh.token, fresh.lease_until, fresh.attempts,
                     fresh.result, fresh.data, fresh.created_at, fresh.updated_at, fresh.expires_at),
                ).fetchone()
                if inserted is not None:
                    return ClaimResult("claimed", fresh)
                found = _record(
                    self._conn.execute(f"SELECT {_COLUMNS} FROM {self._t} WHERE key = %s FOR UPDATE", (key,)).fetchone()
                )
                live = found if found is not None and found.expires_at > now else None
                decision = decide_claim(key, live, claim, now)
                if decision.status != "exists":
                    r = decision.record
                    self._conn.execute(
                        f"""UPDATE {self._t} SET state = %s, fingerprint = %s, token = %s, lease_until = %s,
                          attempts = %s, result = %s, data = %s, created_at = %s, updated_at = %s, expires_at = %s
                          WHERE key = %s""",
                        (r.state, r.fingerprint, r.token, r.lease_until, r.attempts, r.result, r.data, r.created_at,
                         r.updated_at, r.expires_at, key),
                    )
                return decision

        return self._run("claim", key, body)

    def _given(self) -> Any:
        return None if self._clock is None else self._clock()

    def get(self, key: str) -> StoreRecord | None:
        return self._run("get", key, lambda: _record(self._conn.execute(
            f"SELECT {_COLUMNS} FROM {self._t} WHERE key = %s AND expires_at > COALESCE(%s::bigint, {_SERVER_NOW})",
            (key, self._given()),
        ).fetchone()))

    def update(self, key: str, expect: Expect, patch: Patch) -> StoreRecord | None:
        def body() -> StoreRecord | None:
            sets = ["updated_at = n.now"]
            values: list[Any] = [self._given()]
            for column, value in (("state", patch.state), ("token", patch.token), ("attempts", patch.attempts),
                                  ("result", patch.result), ("data", patch.data)):
                if value is not UNSET:
                    sets.append(f"{column} = %s")
                    values.append(value)
            if patch.lease_ms is not UNSET:
                if patch.lease_ms is None:
                    sets.append("lease_until = NULL")
                else:
                    sets.append("lease_until = n.now + %s::bigint")
                    values.append(patch.lease_ms)
            if patch.ttl_ms is not UNSET:
                sets.append("expires_at = n.now + %s::bigint")
                values.append(patch.ttl_ms)
            where = "r.key = %s AND r.expires_at > n.now"
            values.append(key)
            if expect.token is not None:
                where += " AND r.token = %s"
                values.append(expect.token)
            if expect.state is not None:
                where += " AND r.state = %s"
                values.append(expect.state)
            returning = ", ".join(f"r.{c.strip()}" for c in _COLUMNS.split(","))
            sql = (f"WITH n AS (SELECT COALESCE(%s::bigint, {_SERVER_NOW}) AS now) "
                   f"UPDATE {self._t} r SET {', '.join(sets)} FROM n WHERE {where} RETURNING {returning}")
            return _record(self._conn.execute(sql, values).fetchone())

        return self._run("update", key, body)

    def delete(self, key: str, expect: Expect) -> bool:
        def body() -> bool:
            cursor = self._conn.execute(
                f"""DELETE FROM {self._t} WHERE key = %s AND expires_at > COALESCE(%s::bigint, {_SERVER_NOW})
                  AND (%s::text IS NULL OR token = %s) AND (%s::text IS NULL OR state = %s)""",
                (key, self._given(), expect.token, expect.token, expect.state, expect.state),
            )
            return cursor.rowcount == 1

        return self._run("delete", key, body)

    def list(
        self, *, prefix: str | None = None, state: str | None = None, after: str | None = None, limit: int = 100
    ) -> list[StoreRecord]:
        def body() -> list[StoreRecord]:
            where = f"expires_at > COALESCE(%s::bigint, {_SERVER_NOW})"
            values: list[Any] = [self._given()]
            if prefix:
                where += " AND left(key, length(%s)) = %s"
                values += [prefix, prefix]
            if after is not None:
                where += " AND key > %s"
                values.append(after)
            if state is not None:
                where += " AND state = %s"
                values.append(state)
            values.append(limit)
            rows = self._conn.execute(
                f"SELECT {_COLUMNS} FROM {self._t} WHERE {where} ORDER BY key LIMIT %s", values
            ).fetchall()
            return [r for r in (_record(row) for row in rows) if r is not None]

        return self._run("list", None, body)

    def purge(self, limit: int = 1000) -> int:
        """Removes up to ``limit`` expired records, skipping rows a claim holds locked (as the TypeScript store)."""
        return self._run("purge", None, lambda: self._conn.execute(
            f"""DELETE FROM {self._t} WHERE key IN (
              SELECT key FROM {self._t} WHERE expires_at <= COALESCE(%s::bigint, {_SERVER_NOW})
              LIMIT %s FOR UPDATE SKIP LOCKED)""",
            (self._given(), limit),
        ).rowcount)

    def drop(self) -> None:
        """Drops the table and its row in ``idemkey_meta``: for tests that made a table of their own."""
        with self._lock:
            self._conn.execute(f"DROP TABLE IF EXISTS {self._t}")
            self._conn.execute(f'DELETE FROM "{self.schema}"."{META_TABLE}" WHERE name = %s', (self.table,))

    def close(self) -> None:
        if self._owned:
            with self._lock:
                self._conn.close()


def postgres_store(conninfo_or_connection: Any, **options: Any) -> PostgresStore:
    """A store in a PostgreSQL table: pass a conninfo string (the store opens and closes its connection) or a psycopg
    ``Connection`` in autocommit mode (it stays open). Options: ``table`` (default ``"idemkey_records"``), ``schema``
    (default ``"public"``, which must exist), ``clock`` (tests; default the server's clock).

    >>> store = postgres_store("postgresql://localhost/app")
    """
    return PostgresStore(conninfo_or_connection, **options)
