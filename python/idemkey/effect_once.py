"""The owner's half for effects that are writes to the owner's own database: the TypeScript ``effectOnce`` (SQLite and
PostgreSQL), on the same ``idemkey_effects`` table, so a Python and a TypeScript owner may share it.

The key is inserted (``ON CONFLICT (key) DO NOTHING``) and the effect runs in the same transaction: the effect's writes
and the key commit together or not at all. A duplicate gets the saved result (its JSON round-trip); the same key with
another fingerprint raises ``IdempotencyConflictError``; an effect that raises rolls back and leaves the key unused.
"""

from __future__ import annotations

import json
import re
import time
from dataclasses import dataclass
from typing import Any, Callable

from .canonical import stringify
from .errors import IdemkeyError, SchemaVersionError

_IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,62}$")
META_TABLE = "idemkey_meta"


class IdempotencyConflictError(IdemkeyError):
    """The key was used before for another request (another fingerprint)."""

    def __init__(self, key: str) -> None:
        super().__init__(f"The key {key} was used before with another request: send a new key for a new request")
        self.key = key


@dataclass(frozen=True)
class EffectOnceResult:
    result: Any
    """The effect's return value the first time; its JSON round-trip on a replay."""
    replayed: bool


def _check(key: Any, table: Any, effect: Any) -> None:
    if not isinstance(key, str) or key == "":
        raise TypeError(f"effect_once: key must be a non-empty string, got {key!r}")
    if not isinstance(table, str) or not _IDENTIFIER.match(table):
        raise TypeError(f"effect_once: table must be a SQL identifier, got {table!r}")
    if not callable(effect):
        raise TypeError("effect_once: effect must be a function (connection) -> result")


def _saved(result: Any) -> str | None:
    return None if result is None else stringify(result)


def effect_once(
    db: Any, key: str, effect: Callable[[Any], Any], *, fingerprint: str | None = None, table: str = "idemkey_effects"
) -> EffectOnceResult:
    """Runs ``effect(db)`` at most once per key, in one ``BEGIN IMMEDIATE`` transaction with the key, on a
    ``sqlite3.Connection`` (in autocommit mode, ``isolation_level=None``, or with no transaction open).

    >>> effect_once(db, key, lambda db: db.execute("INSERT INTO orders (sku) VALUES (?)", (sku,)).lastrowid)
    """
    _check(key, table, effect)
    if db.in_transaction:
        raise TypeError("effect_once: a transaction is open on the connection; commit it first")
    db.execute("BEGIN IMMEDIATE")
    try:
        _ensure_sqlite(db, table)
        inserted = db.execute(
            f"INSERT INTO {table} (key, fingerprint, created_at) VALUES (?, ?, ?) ON CONFLICT (key) DO NOTHING",
            (key, fingerprint, int(time.time() * 1000)),
        ).rowcount
        if inserted == 0:
            saved_fingerprint, saved = db.execute(
                f"SELECT fingerprint, result FROM {table} WHERE key = ?", (key,)
            ).fetchone()
            db.execute("ROLLBACK")
            if saved_fingerprint != fingerprint:
                raise IdempotencyConflictError(key)
            return EffectOnceResult(None if saved is None else json.loads(saved), True)
        result = effect(db)
        db.execute(f"UPDATE {table} SET result = ? WHERE key = ?", (_saved(result), key))
        db.execute("COMMIT")
        return EffectOnceResult(result, False)
    except BaseException:
        if db.in_transaction:
            db.execute("ROLLBACK")
        raise


def _ensure_sqlite(db: Any, table: str) -> None:
    db.execute(f"CREATE TABLE IF NOT EXISTS {META_TABLE} (name TEXT PRIMARY KEY, version INTEGER NOT NULL)")
    row = db.execute(f"SELECT version FROM {META_TABLE} WHERE name = ?", (table,)).fetchone()
    found = 0 if row is None else row[0]
    if found > 1:
        raise SchemaVersionError(table, found, 1)
    if found == 0:
        # The TypeScript src/sqlite/effect-once.ts table, version 1.
        db.execute(f"""CREATE TABLE {table} (
    key TEXT PRIMARY KEY,
    fingerprint TEXT,
    result TEXT,
    created_at INTEGER NOT NULL
  ) WITHOUT ROWID""")
        db.execute(f"INSERT INTO {META_TABLE} (name, version) VALUES (?, 1)", (table,))


def postgres_effect_once(
    conn: Any,
    key: str,
    effect: Callable[[Any], Any],
    *,
    fingerprint: str | None = None,
    table: str = "idemkey_effects",
    schema: str = "public",
) -> EffectOnceResult:
    """``effect_once`` on a psycopg 3 ``Connection`` in autocommit mode: one READ COMMITTED transaction holds the key's
    insert and ``effect(conn)``'s writes."""
    _check(key, table, effect)
    if not _IDENTIFIER.match(schema):
        raise TypeError(f"effect_once: schema must be a SQL identifier, got {schema!r}")
    t = f'"{schema}"."{table}"'
    meta = f'"{schema}"."{META_TABLE}"'
    conn.execute(f"""DO $idemkey$
DECLARE found integer;
BEGIN
  PERFORM pg_advisory_xact_lock(hashtext('idemkey:migrate'));
  CREATE TABLE IF NOT EXISTS {meta} (name text PRIMARY KEY, version integer NOT NULL);
  SELECT coalesce(max(version), 0) INTO found FROM {meta} WHERE name = '{table}';
  IF found < 1 THEN CREATE TABLE {t} (
    key text PRIMARY KEY,
    fingerprint text,
    result text,
    created_at bigint NOT NULL
  ); END IF;
  IF found < 1 THEN
    INSERT INTO {meta} (name, version) VALUES ('{table}', 1)
      ON CONFLICT (name) DO UPDATE SET version = excluded.version;
  END IF;
END
$idemkey$""")
    with conn.transaction():
        inserted = conn.execute(
            f"INSERT INTO {t} (key, fingerprint, created_at) VALUES (%s, %s, %s) ON CONFLICT (key) DO NOTHING "
            "RETURNING key",
            (key, fingerprint, int(time.time() * 1000)),
        ).fetchone()
        if inserted is None:
            saved_fingerprint, saved = conn.execute(
                f"SELECT fingerprint, result FROM {t} WHERE key = %s", (key,)
            ).fetchone()
            replay = (saved_fingerprint, saved)
        else:
            result = effect(conn)
            conn.execute(f"UPDATE {t} SET result = %s WHERE key = %s", (_saved(result), key))
            return EffectOnceResult(result, False)
    if replay[0] != fingerprint:
        raise IdempotencyConflictError(key)
    return EffectOnceResult(None if replay[1] is None else json.loads(replay[1]), True)
