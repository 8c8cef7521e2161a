"""A store in Redis through redis-py: the TypeScript ``redisStore``'s layout 2 (a hash per record under
``<prefix>r:<key>``, the ``<prefix>expiries`` and ``<prefix>keys`` indexes, the ``<prefix>layout`` marker) and its
Lua scripts, verbatim (``redis_scripts.py``), so that Python and TypeScript processes share one prefix
(docs/ledger-format.md, "Redis"). Every lease and expiry is decided inside the scripts on Redis's clock (``TIME``).

The layout is main's at the time of writing (layout 2, indexes on); the store without indexes (layout 3) is not
implemented here, and a prefix holding it is refused, as the TypeScript store refuses another layout.
"""

from __future__ import annotations

from typing import Any, Callable

from . import redis_scripts as lua
from .errors import IdemkeyError, StoreError
from .store import UNSET, ClaimInput, ClaimResult, Expect, Patch, StoreRecord, apply_patch, decide_claim, new_record

LIST_SCAN = 500


class StoreLayoutError(IdemkeyError):
    def __init__(self, prefix: str, found: int, supported: int) -> None:
        super().__init__(
            f'The Redis prefix "{prefix}" holds records of layout {found}; this store reads layout {supported}. '
            "Give this store another prefix."
        )
        self.prefix = prefix
        self.found = found
        self.supported = supported


def _text(value: Any) -> Any:
    return value.decode() if isinstance(value, bytes) else value


def _from_fields(key: str, f: list[Any]) -> StoreRecord:
    f = [_text(v) for v in f]
    return StoreRecord(
        key=key, state=f[0], fingerprint=f[1], token=f[2], lease_until=None if f[3] is None else int(f[3]),
        attempts=int(f[4]), result=f[5], data=f[6], created_at=int(f[7]), updated_at=int(f[8]), expires_at=int(f[9]),
    )


class RedisStore:
    def __init__(
        self,
        url_or_client: Any,
        *,
        prefix: str = "{idemkey}:",
        ttl_margin_ms: int = 60_000,
        clock: Callable[[], int] | None = None,
    ) -> None:
        import redis

        if not isinstance(prefix, str) or prefix == "":
            raise TypeError(f"redis_store: prefix must be a non-empty string, got {prefix!r}")
        if isinstance(ttl_margin_ms, bool) or not isinstance(ttl_margin_ms, int) or ttl_margin_ms < 0:
            raise TypeError(f"redis_store: ttl_margin_ms must be a non-negative integer, got {ttl_margin_ms!r}")
        self._owned = isinstance(url_or_client, str)
        self._client = redis.Redis.from_url(url_or_client) if self._owned else url_or_client
        if not callable(getattr(self._client, "evalsha", None)):
            raise TypeError("redis_store: pass a redis:// URL or a redis-py client")
        self.prefix = prefix
        self._margin = ttl_margin_ms
        self._clock = clock
        self._scripts = {name: self._client.register_script(getattr(lua, name))
                         for name in ("CLAIM", "UPDATE", "DELETE", "GET", "LIST", "PURGE", "NOW", "CHECK")}
        self._checked = False
        self._expiries = f"{prefix}expiries"
        self._keys = f"{prefix}keys"

    def _record_key(self, key: str) -> str:
        return f"{self.prefix}r:{key}"

    def _given(self) -> str:
        return "" if self._clock is None else str(self._clock())

    def _ttl(self, ttl_ms: int) -> str:
        return str(max(1, ttl_ms + self._margin))

    def _run(self, operation: str, key: str | None, body: Callable[[], Any]) -> Any:
        import redis

        try:
            if not self._checked:
                found = int(self._scripts["CHECK"](keys=[f"{self.prefix}layout", self._keys], args=[str(lua.LAYOUT)]))
                if found != lua.LAYOUT:
                    raise StoreLayoutError(self.prefix, found, lua.LAYOUT)
                self._checked = True
            return body()
        except redis.RedisError as error:
            if str(error).startswith("IDEMKEY_LAYOUT"):
                raise StoreLayoutError(self.prefix, 1, lua.LAYOUT) from error
            raise StoreError("redis", operation, key, error) from error

    def claim(self, key: str, claim: ClaimInput) -> ClaimResult:
        def body() -> ClaimResult:
            lease = str(claim.lease_ms) if claim.state == "pending" else ""
            args = [key, self._given(), claim.state, claim.fingerprint, claim.token, lease, str(claim.ttl_ms),
                    self._ttl(claim.ttl_ms)]
            if claim.data is not None:
                args += ["data", claim.data]
            reply = self._scripts["CLAIM"](keys=[self._record_key(key), self._expiries, self._keys], args=args)
            if not isinstance(reply, list):
                return ClaimResult("claimed", new_record(key, claim, int(_text(reply))))
            status, stamp, *fields = reply
            status = _text(status)
            record = _from_fields(key, fields)
            if status == "resent_takeover":
                return ClaimResult("taken_over", record, record)
            if status != "taken_over":
                return ClaimResult(status, record)
            return ClaimResult("taken_over", decide_claim(key, record, claim, int(_text(stamp))).record, record)

        return self._run("claim", key, body)

    def get(self, key: str) -> StoreRecord | None:
        def body() -> StoreRecord | None:
            fields = self._scripts["GET"](keys=[self._record_key(key)], args=[self._given()])
            return None if fields is None else _from_fields(key, fields)

        return self._run("get", key, body)

    def update(self, key: str, expect: Expect, patch: Patch) -> StoreRecord | None:
        def body() -> StoreRecord | None:
            asked = ["fingerprint", "createdAt"]
            sets: list[str] = []
            clear: list[str] = []
            for field, value in (("state", patch.state), ("token", patch.token),
                                 ("attempts", patch.attempts if patch.attempts is UNSET else str(patch.attempts)),
                                 ("result", patch.result), ("data", patch.data)):
                if value is UNSET:
                    if field not in ("state", "token"):
                        asked.append(field)
                elif value is None:
                    clear.append(field)
                else:
                    sets += [field, value]
            if patch.lease_ms is UNSET:
                asked.append("leaseUntil")
            elif patch.lease_ms is None:
                clear.append("leaseUntil")
            args = [
                key, self._given(), "" if expect.token is None else f"={expect.token}", expect.state or "",
                "" if patch.ttl_ms is UNSET else str(patch.ttl_ms),
                "" if patch.ttl_ms is UNSET else self._ttl(patch.ttl_ms),
                "" if patch.lease_ms is UNSET or patch.lease_ms is None else str(patch.lease_ms),
                str(len(asked)), *asked, str(len(sets) // 2), *sets, *clear,
            ]
            reply = self._scripts["UPDATE"](keys=[self._record_key(key), self._expiries], args=args)
            if reply is None:
                return None
            reply = [_text(v) for v in reply]
            values: dict[str, Any] = {"fingerprint": "", "leaseUntil": None, "attempts": 0, "result": None,
                                      "data": None, "createdAt": 0}
            for i, field in enumerate(asked):
                values[field] = reply[4 + i]
            before = StoreRecord(
                key=key, state=reply[3], fingerprint=values["fingerprint"], token=reply[2],
                lease_until=None if values["leaseUntil"] is None else int(values["leaseUntil"]),
                attempts=int(values["attempts"] or 0), result=values["result"], data=values["data"],
                created_at=int(values["createdAt"] or 0), updated_at=0, expires_at=int(reply[1]),
            )
            return apply_patch(before, patch, int(reply[0]))

        return self._run("update", key, body)

    def delete(self, key: str, expect: Expect) -> bool:
        def body() -> bool:
            deleted = self._scripts["DELETE"](
                keys=[self._record_key(key), self._expiries, self._keys],
                args=[key, self._given(), "" if expect.token is None else f"={expect.token}", expect.state or ""],
            )
            return int(deleted) == 1

        return self._run("delete", key, body)

    def list(
        self, *, prefix: str | None = None, state: str | None = None, after: str | None = None, limit: int = 100
    ) -> list[StoreRecord]:
        def body() -> list[StoreRecord]:
            now = self._given() or str(_text(self._scripts["NOW"](keys=[], args=[])))
            if after is not None and (prefix is None or after.encode() >= prefix.encode()):
                start = f"({after}"
            else:
                start = "-" if prefix is None else f"[{prefix}"
            records: list[StoreRecord] = []
            while len(records) < limit and start != "":
                reply = self._scripts["LIST"](
                    keys=[self._keys],
                    args=[self._record_key(""), now, start, prefix or "", state or "", str(limit - len(records)),
                          str(LIST_SCAN)],
                )
                nxt, *found = reply
                stride = 1 + len(lua.FIELDS)
                for i in range(0, len(found), stride):
                    records.append(_from_fields(_text(found[i]), found[i + 1: i + stride]))
                start = _text(nxt)
            return records

        return self._run("list", None, body)

    def purge(self, limit: int = 1000) -> int:
        return self._run("purge", None, lambda: int(self._scripts["PURGE"](
            keys=[self._expiries, self._keys], args=[self._record_key(""), self._given(), str(limit)])))

    def delete_prefix(self) -> None:
        """Deletes every key under the prefix (SCAN, never FLUSH): for tests that made a prefix of their own."""
        for name in self._client.scan_iter(match=self._escape(self.prefix) + "*", count=500):
            self._client.delete(name)

    @staticmethod
    def _escape(text: str) -> str:
        return "".join("\\" + c if c in "*?[]\\" else c for c in text)

    def close(self) -> None:
        if self._owned:
            self._client.close()


def redis_store(url_or_client: Any, **options: Any) -> RedisStore:
    """A store in Redis: pass a ``redis://`` URL (the store opens and closes its client) or a redis-py client (it
    stays open). Options: ``prefix`` (default ``"{idemkey}:"``, the TypeScript default), ``ttl_margin_ms`` (default
    60000), ``clock`` (tests; default Redis's ``TIME``).

    >>> store = redis_store("redis://localhost:6379")
    """
    return RedisStore(url_or_client, **options)
