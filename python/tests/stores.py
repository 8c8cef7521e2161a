"""The stores every contract test runs on: memory and SQLite always; PostgreSQL and Redis when their modules exist
(IDEMKEY_PG_URL / IDEMKEY_REDIS_URL, a unique table or prefix per run, never flushed)."""

from __future__ import annotations

import os
import uuid
from typing import Any, Callable

from idemkey import memory_store, sqlite_store

PG_URL = os.environ.get("IDEMKEY_PG_URL") or "postgres://postgres@127.0.0.1:5432/test"
REDIS_URL = os.environ.get("IDEMKEY_REDIS_URL") or "redis://127.0.0.1:6379"


def factories(tmp_path_factory: Any) -> dict[str, Callable[..., Any]]:
    def sqlite(clock: Any = None) -> Any:
        path = tmp_path_factory.mktemp("sqlite") / "ledger.db"
        return sqlite_store(str(path), **({} if clock is None else {"clock": clock}))

    def memory(clock: Any = None) -> Any:
        return memory_store() if clock is None else memory_store(clock)

    found: dict[str, Callable[..., Any]] = {"memory": memory, "sqlite": sqlite}
    try:
        from idemkey.postgres import postgres_store

        def postgres(clock: Any = None) -> Any:
            table = f"idemkey_py_{uuid.uuid4().hex[:12]}"
            store = postgres_store(PG_URL, table=table, **({} if clock is None else {"clock": clock}))
            close = store.close

            def dropped() -> None:
                store.drop()
                close()

            store.close = dropped  # type: ignore[method-assign]
            return store

        found["postgres"] = postgres
    except ImportError:
        pass
    try:
        from idemkey.redis import redis_store

        def redis(clock: Any = None) -> Any:
            prefix = f"idemkey-py-{uuid.uuid4().hex[:12]}:"
            store = redis_store(REDIS_URL, prefix=prefix, **({} if clock is None else {"clock": clock}))
            close = store.close

            def deleted() -> None:
                store.delete_prefix()
                close()

            store.close = deleted  # type: ignore[method-assign]
            return store

        found["redis"] = redis
    except ImportError:
        pass
    return found
