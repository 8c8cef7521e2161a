"""The store contract (the TypeScript ``testStore`` suite's claim, update, delete, list and purge cases), run
unchanged on every Python store."""

from __future__ import annotations

from typing import Any

import pytest

from idemkey.store import ClaimInput, Expect, Patch
from stores import factories


class Clock:
    def __init__(self) -> None:
        self.now = 1_800_000_000_000

    def __call__(self) -> int:
        return self.now


@pytest.fixture(params=["memory", "sqlite", "postgres", "redis"])
def made(request: Any, tmp_path_factory: Any) -> Any:
    found = factories(tmp_path_factory)
    if request.param not in found:
        pytest.fail(f"the {request.param} store's module is missing")
    clock = Clock()
    store = found[request.param](clock)
    yield store, clock
    store.close()


def claim(fingerprint: str = "fp", token: str = "t1", lease: int = 1000, ttl: int = 10_000, **kw: Any) -> ClaimInput:
    return ClaimInput(fingerprint, token, lease, ttl, **kw)


def test_claims_a_new_key_once(made: Any) -> None:
    store, clock = made
    first = store.claim("call:k", claim(data='{"x":1}'))
    assert first.status == "claimed"
    assert (first.record.state, first.record.token, first.record.lease_until) == ("pending", "t1", clock.now + 1000)
    assert (first.record.expires_at, first.record.attempts, first.record.data) == (clock.now + 10_000, 0, '{"x":1}')
    second = store.claim("call:k", claim(token="t2"))
    assert second.status == "exists" and second.record.token == "t1"
    assert store.get("call:k") == first.record


def test_a_resent_claim_answers_as_the_first(made: Any) -> None:
    store, _ = made
    store.claim("call:k", claim())
    assert store.claim("call:k", claim()).status == "claimed"


def test_takes_over_an_expired_lease_with_the_same_fingerprint_only(made: Any) -> None:
    store, clock = made
    store.claim("call:k", claim(lease=100))
    clock.now += 100
    assert store.claim("call:k", claim(fingerprint="other", token="t2")).status == "exists"
    taken = store.claim("call:k", claim(token="t3", lease=500))
    assert taken.status == "taken_over"
    assert taken.previous is not None and taken.previous.token == "t1"
    assert (taken.record.token, taken.record.lease_until) == ("t3", clock.now + 500)
    assert store.update("call:k", Expect(token="t1"), Patch(attempts=1)) is None


def test_update_is_a_compare_and_set(made: Any) -> None:
    store, clock = made
    store.claim("call:k", claim())
    clock.now += 5
    assert store.update("call:k", Expect(token="nope"), Patch(state="completed")) is None
    assert store.update("call:k", Expect(state="completed"), Patch(state="completed")) is None
    done = store.update(
        "call:k", Expect(token="t1", state="pending"),
        Patch(state="completed", token=None, lease_ms=None, result='{"ok":true}', attempts=1, ttl_ms=50),
    )
    assert done is not None
    assert (done.state, done.token, done.lease_until, done.result, done.attempts) == ("completed", None, None, '{"ok":true}', 1)
    assert (done.updated_at, done.expires_at, done.data) == (clock.now, clock.now + 50, None)
    assert store.get("call:k") == done
    clock.now += 50
    assert store.get("call:k") is None
    assert store.update("call:k", Expect(), Patch(attempts=3)) is None
    assert store.claim("call:k", claim(token="t9")).status == "claimed"


def test_delete_matches_the_expectation(made: Any) -> None:
    store, _ = made
    store.claim("call:k", claim())
    assert store.delete("call:k", Expect(token="t2")) is False
    assert store.delete("call:k", Expect(token="t1", state="pending")) is True
    assert store.get("call:k") is None
    assert store.delete("call:k", Expect()) is False


def test_lists_live_records_in_key_order_by_prefix_state_and_page(made: Any) -> None:
    store, clock = made
    for key in ["call:b", "call:a", "http:x", "call:c"]:
        store.claim(key, claim())
    store.update("call:b", Expect(), Patch(state="completed"))
    store.claim("call:gone", claim(ttl=1))
    clock.now += 1
    assert [r.key for r in store.list(prefix="call:")] == ["call:a", "call:b", "call:c"]
    assert [r.key for r in store.list(prefix="call:", state="completed")] == ["call:b"]
    assert [r.key for r in store.list(prefix="call:", after="call:a", limit=1)] == ["call:b"]
    assert [r.key for r in store.list()] == ["call:a", "call:b", "call:c", "http:x"]


def test_purge_removes_expired_records_only(made: Any) -> None:
    store, clock = made
    for i in range(5):
        store.claim(f"call:old{i}", claim(ttl=10))
    store.claim("call:live", claim(ttl=1000))
    clock.now += 10
    assert store.purge(2) == 2
    assert store.purge(1000) == 3
    assert store.purge(1000) == 0
    assert [r.key for r in store.list()] == ["call:live"]
