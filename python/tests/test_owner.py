"""The owner's half in Python: effect_once on SQLite and PostgreSQL, counted in the owner's own table; the key
forwarded by httpx, read by a server that records what it received."""

from __future__ import annotations

import sqlite3
import uuid
from typing import Any

import pytest

from idemkey.effect_once import IdempotencyConflictError, effect_once, postgres_effect_once
from stores import PG_URL


def test_sqlite_effect_once_runs_once_and_replays(tmp_path: Any) -> None:
    db = sqlite3.connect(str(tmp_path / "owner.db"), isolation_level=None)
    db.execute("CREATE TABLE orders (id INTEGER PRIMARY KEY, sku TEXT)")

    def order(conn: Any) -> Any:
        return {"id": conn.execute("INSERT INTO orders (sku) VALUES ('a')").lastrowid}

    first = effect_once(db, "k1", order, fingerprint="f")
    again = effect_once(db, "k1", order, fingerprint="f")
    assert (first.result, first.replayed, again.result, again.replayed) == ({"id": 1}, False, {"id": 1}, True)
    assert db.execute("SELECT count(*) FROM orders").fetchone()[0] == 1
    with pytest.raises(IdempotencyConflictError):
        effect_once(db, "k1", order, fingerprint="other")

    def broken(conn: Any) -> Any:
        conn.execute("INSERT INTO orders (sku) VALUES ('b')")
        raise RuntimeError("after the write")

    with pytest.raises(RuntimeError):
        effect_once(db, "k2", broken)
    # Rolled back with the key: the retry runs.
    assert db.execute("SELECT count(*) FROM orders").fetchone()[0] == 1
    assert effect_once(db, "k2", order).replayed is False
    assert db.execute("SELECT count(*) FROM orders").fetchone()[0] == 2


def test_postgres_effect_once_runs_once_and_replays() -> None:
    import psycopg

    run = uuid.uuid4().hex[:10]
    table, effects = f"idemkey_eo_{run}", f"idemkey_orders_{run}"
    with psycopg.connect(PG_URL, autocommit=True) as conn:
        conn.execute(f"CREATE TABLE {effects} (id serial PRIMARY KEY)")
        try:
            def order(c: Any) -> Any:
                return {"id": c.execute(f"INSERT INTO {effects} DEFAULT VALUES RETURNING id").fetchone()[0]}

            first = postgres_effect_once(conn, "k1", order, table=table)
            again = postgres_effect_once(conn, "k1", order, table=table)
            assert (first.replayed, again.replayed, again.result) == (False, True, first.result)
            with pytest.raises(IdempotencyConflictError):
                postgres_effect_once(conn, "k1", order, fingerprint="x", table=table)
            assert conn.execute(f"SELECT count(*) FROM {effects}").fetchone()[0] == 1
        finally:
            conn.execute(f"DROP TABLE IF EXISTS {effects}")
            conn.execute(f"DROP TABLE IF EXISTS {table}")
            conn.execute("DELETE FROM idemkey_meta WHERE name = %s", (table,))


def test_httpx_forwards_the_key_once() -> None:
    import httpx

    from idemkey import create_harness, define_tool
    from idemkey.httpx_client import keyed_request

    seen: list[Any] = []

    def owner(request: httpx.Request) -> httpx.Response:
        seen.append(request.headers.get_list("idempotency-key"))
        return httpx.Response(201, json={"id": len(seen)})

    http = httpx.Client(transport=httpx.MockTransport(owner), base_url="http://owner")
    tool = define_tool("openPr", "keyed",
                       lambda args, ctx: keyed_request(http, "POST", "/pulls", ctx.idempotency_key, json=args,
                                                       headers={"idempotency-key": "spoofed"}).json())
    harness = create_harness()
    assert harness.call("t", tool, {"repo": "a"}) == {"id": 1}
    assert harness.call("t", tool, {"repo": "a"}) == {"id": 1}
    assert seen == [[harness.key("t", tool, {"repo": "a"})]]
