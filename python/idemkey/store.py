"""The store contract (docs/ledger-format.md, "The record"), the one claim rule, and the in-memory store.

Every store keeps the same record as the TypeScript stores and decides a claim by the same rule (``decide_claim``,
the TypeScript ``store/record.ts``), each in its own transaction or script.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, replace
from typing import Any, Literal, Protocol

State = Literal["pending", "completed", "awaiting_approval", "approved", "denied", "outcome_unknown"]


class _Unset:
    def __repr__(self) -> str:
        return "UNSET"


UNSET: Any = _Unset()
"""A patch field that is left as it is (``None`` is a value: it clears the column)."""


@dataclass(frozen=True)
class StoreRecord:
    key: str
    state: str
    fingerprint: str
    token: str | None
    lease_until: int | None
    attempts: int
    result: str | None
    data: str | None
    created_at: int
    updated_at: int
    expires_at: int


@dataclass(frozen=True)
class ClaimInput:
    fingerprint: str
    token: str
    lease_ms: int
    ttl_ms: int
    state: str = "pending"
    data: str | None = None


@dataclass(frozen=True)
class ClaimResult:
    """``claimed``, ``taken_over`` (then ``previous`` is the record as it was) or ``exists``."""

    status: Literal["claimed", "taken_over", "exists"]
    record: StoreRecord
    previous: StoreRecord | None = None


@dataclass(frozen=True)
class Expect:
    token: str | None = None
    state: str | None = None


@dataclass(frozen=True)
class Patch:
    state: Any = UNSET
    token: Any = UNSET
    lease_ms: Any = UNSET
    attempts: Any = UNSET
    result: Any = UNSET
    data: Any = UNSET
    ttl_ms: Any = UNSET


class Store(Protocol):
    """What the harness needs of a store; every method is atomic on its own."""

    def claim(self, key: str, claim: ClaimInput) -> ClaimResult: ...
    def get(self, key: str) -> StoreRecord | None: ...
    def update(self, key: str, expect: Expect, patch: Patch) -> StoreRecord | None: ...
    def delete(self, key: str, expect: Expect) -> bool: ...
    def list(
        self, *, prefix: str | None = None, state: str | None = None, after: str | None = None, limit: int = 100
    ) -> list[StoreRecord]: ...
    def purge(self, limit: int = 1000) -> int: ...
    def close(self) -> None: ...


def now_ms() -> int:
    return int(time.time() * 1000)


def new_record(key: str, claim: ClaimInput, now: int) -> StoreRecord:
    return StoreRecord(
        key=key,
        state=claim.state,
        fingerprint=claim.fingerprint,
        token=claim.token,
        lease_until=now + claim.lease_ms if claim.state == "pending" else None,
        attempts=0,
        result=None,
        data=claim.data,
        created_at=now,
        updated_at=now,
        expires_at=now + claim.ttl_ms,
    )


def matches(record: StoreRecord, expect: Expect) -> bool:
    return (expect.token is None or record.token == expect.token) and (
        expect.state is None or record.state == expect.state
    )


def apply_patch(record: StoreRecord, patch: Patch, now: int) -> StoreRecord:
    def pick(value: Any, old: Any) -> Any:
        return old if value is UNSET else value

    lease = record.lease_until if patch.lease_ms is UNSET else (None if patch.lease_ms is None else now + patch.lease_ms)
    return replace(
        record,
        state=pick(patch.state, record.state),
        token=pick(patch.token, record.token),
        lease_until=lease,
        attempts=pick(patch.attempts, record.attempts),
        result=pick(patch.result, record.result),
        data=pick(patch.data, record.data),
        updated_at=now,
        expires_at=record.expires_at if patch.ttl_ms is UNSET else now + patch.ttl_ms,
    )


def decide_claim(key: str, existing: StoreRecord | None, claim: ClaimInput, now: int) -> ClaimResult:
    """The one claim rule every store applies in its own transaction (TypeScript: ``decideClaim``)."""
    if existing is None:
        return ClaimResult("claimed", new_record(key, claim, now))
    if (
        existing.state == "pending"
        and existing.lease_until is not None
        and existing.lease_until <= now
        and existing.fingerprint == claim.fingerprint
    ):
        taken = replace(
            existing,
            token=claim.token,
            lease_until=now + claim.lease_ms,
            updated_at=now,
            expires_at=max(existing.expires_at, now + claim.ttl_ms),
        )
        return ClaimResult("taken_over", taken, existing)
    if existing.state == "pending" and existing.token == claim.token:
        # The resend rule (docs/claim-protocol.md): answered as the first arrival was decided.
        if existing.created_at == existing.updated_at:
            return ClaimResult("claimed", existing)
        return ClaimResult("taken_over", existing, existing)
    return ClaimResult("exists", existing)


class MemoryStore:
    """Records in a dict, for tests and single-process use; a lock makes each method atomic across threads."""

    def __init__(self, clock: Any = now_ms) -> None:
        self._clock = clock
        self._records: dict[str, StoreRecord] = {}
        self._lock = threading.Lock()

    def _live(self, key: str, now: int) -> StoreRecord | None:
        record = self._records.get(key)
        return record if record is not None and record.expires_at > now else None

    def claim(self, key: str, claim: ClaimInput) -> ClaimResult:
        with self._lock:
            now = self._clock()
            decision = decide_claim(key, self._live(key, now), claim, now)
            if decision.status != "exists":
                self._records[key] = decision.record
            return decision

    def get(self, key: str) -> StoreRecord | None:
        with self._lock:
            return self._live(key, self._clock())

    def update(self, key: str, expect: Expect, patch: Patch) -> StoreRecord | None:
        with self._lock:
            now = self._clock()
            record = self._live(key, now)
            if record is None or not matches(record, expect):
                return None
            self._records[key] = updated = apply_patch(record, patch, now)
            return updated

    def delete(self, key: str, expect: Expect) -> bool:
        with self._lock:
            record = self._live(key, self._clock())
            if record is None or not matches(record, expect):
                return False
            del self._records[key]
            return True

    def list(
        self, *, prefix: str | None = None, state: str | None = None, after: str | None = None, limit: int = 100
    ) -> list[StoreRecord]:
        with self._lock:
            now = self._clock()
            keys = sorted((k for k in self._records), key=lambda k: k.encode("utf-16-be", "surrogatepass"))
            out = []
            for key in keys:
                record = self._records[key]
                if record.expires_at <= now or (prefix and not key.startswith(prefix)):
                    continue
                if (state and record.state != state) or (after is not None and key <= after):
                    continue
                out.append(record)
                if len(out) >= limit:
                    break
            return out

    def purge(self, limit: int = 1000) -> int:
        with self._lock:
            now = self._clock()
            gone = [k for k, r in self._records.items() if r.expires_at <= now][:limit]
            for key in gone:
                del self._records[key]
            return len(gone)

    def close(self) -> None:
        pass


def memory_store(clock: Any = now_ms) -> MemoryStore:
    return MemoryStore(clock)
