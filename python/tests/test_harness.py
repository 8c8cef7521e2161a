"""The harness, mirroring test/harness (effects, takeover, waiting, leases, resolve, retention and purge), counted
at a fake owner (a list the tools append to), never through the ledger's own report. Each runs on every store."""

from __future__ import annotations

import asyncio
import threading
from typing import Any

import pytest

from idemkey import (
    CanonicalizationError,
    OutcomeUnknownError,
    ToolCallError,
    WaitTimeoutError,
    create_harness,
    define_tool,
    idempotency_key,
)
from idemkey.store import ClaimInput, Expect, Patch
from idemkey.ledger import PREFIX
from stores import factories

FAST = {"min_delay_ms": 1, "max_delay_ms": 5, "wait_min_delay_ms": 5, "wait_max_delay_ms": 20}


class Clock:
    def __init__(self) -> None:
        self.offset = 0

    def __call__(self) -> int:
        import time

        return int(time.time() * 1000) + self.offset


@pytest.fixture(params=["memory", "sqlite", "postgres", "redis"])
def store(request: Any, tmp_path_factory: Any) -> Any:
    found = factories(tmp_path_factory)
    if request.param not in found:
        pytest.fail(f"the {request.param} store's module is missing")
    made = found[request.param]()
    yield made
    made.close()


def owner_tool(name: str, effect: str, effects: list[Any], fail: list[BaseException] | None = None) -> Any:
    def run(args: Any, ctx: Any) -> Any:
        if fail:
            raise fail.pop(0)
        effects.append((ctx.idempotency_key, ctx.attempt))
        return {"n": len(effects), "args": args}

    return define_tool(name, effect, run)


def test_read_runs_every_time_and_never_writes_the_ledger(store: Any) -> None:
    effects: list[Any] = []
    harness = create_harness(store=store, **FAST)
    tool = owner_tool("look", "read", effects)
    harness.call("t", tool, {"a": 1})
    harness.call("t", tool, {"a": 1})
    assert len(effects) == 2
    assert harness.list() == []


@pytest.mark.parametrize("effect", ["keyed", "idempotent", "unguarded"])
def test_records_the_result_and_replays_without_running_again(store: Any, effect: str) -> None:
    effects: list[Any] = []
    harness = create_harness(store=store, **FAST)
    tool = owner_tool("send", effect, effects)
    first = harness.call_with_outcome("task-1", tool, {"to": "ada"})
    again = create_harness(store=store, **FAST).call_with_outcome("task-1", tool, {"to": "ada"})
    assert (first.value, first.replayed) == ({"n": 1, "args": {"to": "ada"}}, False)
    assert (again.value, again.replayed) == (first.value, True)
    key = idempotency_key("task-1", "send", {"to": "ada"})
    assert effects == [(key, 1)]
    entry = harness.get(key)
    assert entry is not None and (entry.state, entry.effect, entry.args, entry.result) == (
        "completed", effect, {"to": "ada"}, first.value)
    harness.call("task-2", tool, {"to": "ada"})
    harness.call("task-1", tool, {"to": "ada"}, step=2)
    assert len(effects) == 3


def test_retries_with_the_same_key_and_releases_after_a_final_failure(store: Any) -> None:
    effects: list[Any] = []
    harness = create_harness(store=store, retries=1, **FAST)
    tool = owner_tool("send", "keyed", effects, [ToolCallError("503"), ToolCallError("503"), ToolCallError("503")])
    with pytest.raises(ToolCallError):
        harness.call("t", tool, {})
    assert harness.list() == []
    assert harness.call("t", tool, {})["n"] == 1  # the third failure, then a success
    # ...and only the successful attempt reached the owner.
    tool2 = owner_tool("send2", "keyed", effects, [ToolCallError("503")])
    harness.call("t", tool2, {})
    assert [attempt for _, attempt in effects] == [2, 2]


def test_unguarded_an_ambiguous_failure_is_never_repeated_until_resolved(store: Any) -> None:
    effects: list[Any] = []
    harness = create_harness(store=store, **FAST)
    boom = RuntimeError("socket hang up")
    tool = owner_tool("pay", "unguarded", effects, [boom])
    with pytest.raises(OutcomeUnknownError) as raised:
        harness.call("t", tool, {"amount": 5})
    key = raised.value.key
    assert raised.value.reason == "unclassified_error" and raised.value.answer == "socket hang up"
    with pytest.raises(OutcomeUnknownError):
        harness.call("t", tool, {"amount": 5})
    assert effects == []
    entry = harness.get(key)
    assert entry is not None and entry.state == "outcome_unknown"
    assert entry.events[-1]["type"] == "outcome_unknown"
    harness.resolve(key, result={"paid": True}, by="ana")
    assert harness.call("t", tool, {"amount": 5}) == {"paid": True}
    assert effects == []


def test_unguarded_resolved_as_retry_runs_once_more(store: Any) -> None:
    effects: list[Any] = []
    harness = create_harness(store=store, **FAST)
    tool = owner_tool("pay", "unguarded", effects, [RuntimeError("reset")])
    with pytest.raises(OutcomeUnknownError) as raised:
        harness.call("t", tool, {})
    harness.resolve(raised.value.key, retry=True)
    assert harness.call("t", tool, {})["n"] == 1
    assert harness.call("t", tool, {})["n"] == 1
    assert len(effects) == 1


def test_unguarded_no_effect_errors_are_retried(store: Any) -> None:
    effects: list[Any] = []
    harness = create_harness(store=store, **FAST)
    tool = owner_tool("pay", "unguarded", effects, [ToolCallError("declined", no_effect=True)])
    assert harness.call("t", tool, {})["n"] == 1


def crashed_claim(store: Any, harness: Any, tool: Any, args: Any, attempts: int) -> str:
    """A claim left pending by a process that stopped, its lease already over, as the harness writes it."""
    from idemkey.canonical import canonicalize
    from idemkey.key import key_hash
    from idemkey.ledger import LedgerCall, encode

    key = harness.key("t", tool, args)
    data = encode(LedgerCall("t", tool.name, tool.effect, key_hash(canonicalize(args), None), canonicalize(args)), 1)
    store.claim(PREFIX + key, ClaimInput(key, "dead", 1, 60_000, "pending", data))
    if attempts:
        store.update(PREFIX + key, Expect(token="dead"), Patch(attempts=attempts, lease_ms=1))
    import time

    time.sleep(0.01)
    return key


@pytest.mark.parametrize("effect", ["keyed", "idempotent"])
def test_takeover_reruns_keyed_and_idempotent_with_the_identical_key(store: Any, effect: str) -> None:
    effects: list[Any] = []
    harness = create_harness(store=store, **FAST)
    tool = owner_tool("send", effect, effects)
    key = crashed_claim(store, harness, tool, {"a": 1}, 0)
    harness.call("t", tool, {"a": 1})
    assert effects == [(key, 2)]
    entry = harness.get(key)
    assert entry is not None and [e["type"] for e in entry.events] == ["taken_over"]


def test_takeover_never_reruns_an_unguarded_attempt_that_started(store: Any) -> None:
    effects: list[Any] = []
    harness = create_harness(store=store, **FAST)
    tool = owner_tool("pay", "unguarded", effects)
    key = crashed_claim(store, harness, tool, {"a": 1}, 1)
    with pytest.raises(OutcomeUnknownError) as raised:
        harness.call("t", tool, {"a": 1})
    assert raised.value.reason == "interrupted"
    assert effects == []
    # A claim whose process died before its attempt started is run by the taker.
    key2 = crashed_claim(store, harness, tool, {"a": 2}, 0)
    harness.call("t", tool, {"a": 2})
    assert effects == [(key2, 1)]
    assert key != key2


def test_reconcile_decides_after_a_takeover(store: Any) -> None:
    effects: list[Any] = []
    harness = create_harness(store=store, **FAST)
    tool = define_tool("pay", "unguarded", lambda a, c: effects.append(1),
                       reconcile=lambda a, c: {"status": "done", "result": {"found": True}})
    crashed_claim(store, harness, tool, {}, 1)
    assert harness.call("t", tool, {}) == {"found": True}
    assert effects == []


def test_the_loser_waits_for_the_winner_running_elsewhere(store: Any) -> None:
    effects: list[Any] = []
    started, release, polled = threading.Event(), threading.Event(), threading.Event()

    def run(args: Any, ctx: Any) -> Any:
        started.set()
        release.wait(10)
        effects.append(ctx.idempotency_key)
        return "done"

    class Watched:
        """The loser's view of the store: a read after its claim means it found the call in flight and is waiting."""

        def __getattr__(self, name: str) -> Any:
            return getattr(store, name)

        def get(self, *args: Any) -> Any:
            polled.set()
            return store.get(*args)

    tool = define_tool("slow", "keyed", run)
    winner = create_harness(store=store, **FAST)
    loser = create_harness(store=Watched(), **FAST)
    # By role, not by order: the loser may see the completion before the winner's thread stores its answer.
    results: dict[str, Any] = {}
    thread = threading.Thread(target=lambda: results.update(winner=winner.call("t", tool, {})))
    thread.start()
    assert started.wait(10)
    waiter = threading.Thread(target=lambda: results.update(loser=loser.call_with_outcome("t", tool, {})))
    waiter.start()
    # The winner finishes only once the loser is polling the record it holds, however slow the machine.
    assert polled.wait(10)
    release.set()
    thread.join(10)
    waiter.join(10)
    assert len(effects) == 1
    assert results["winner"] == "done"
    assert results["loser"].value == "done" and results["loser"].replayed


def renewals(read: Any, count: int) -> list[int]:
    """The lease's ends as renewals move them, until ``count`` renewals were seen: ordered by what the store holds."""
    import time

    seen: list[int] = []
    for _ in range(3000):
        record = read()
        if record is not None and record.lease_until is not None and (not seen or record.lease_until > seen[-1]):
            seen.append(record.lease_until)
            if len(seen) > count:
                return seen
        time.sleep(0.01)
    raise AssertionError(f"saw {len(seen) - 1} renewals of {count}")


def test_the_lease_is_renewed_while_a_long_tool_runs(store: Any) -> None:
    effects: list[Any] = []
    started, release = threading.Event(), threading.Event()

    def run(args: Any, ctx: Any) -> Any:
        started.set()
        release.wait(30)
        effects.append(ctx.attempt)
        return "done"

    tool = define_tool("slow", "keyed", run)
    winner = create_harness(store=store, lease_ms=2000, **FAST)
    thread = threading.Thread(target=lambda: winner.call("t", tool, {}))
    thread.start()
    assert started.wait(10)
    key = winner.key("t", tool, {})
    # Two renewals, each moving the lease's end on; a rival's claim after them finds the record held.
    assert len(renewals(lambda: store.get(PREFIX + key), 2)) == 3
    assert store.claim(PREFIX + key, ClaimInput(key, "thief", 2000, 10_000)).status == "exists"
    release.set()
    thread.join(10)
    assert effects == [1]


def test_wait_timeout_without_running_anything(store: Any) -> None:
    effects: list[Any] = []
    tool = owner_tool("send", "keyed", effects)
    harness = create_harness(store=store, wait_timeout_ms=60, **FAST)
    key = harness.key("t", tool, {})
    store.claim(PREFIX + key, ClaimInput(key, "alive", 60_000, 120_000))
    with pytest.raises(WaitTimeoutError):
        harness.call("t", tool, {})
    assert effects == []


def test_a_result_that_is_not_json_closes_the_key(store: Any) -> None:
    effects: list[Any] = []
    tool = define_tool("odd", "keyed", lambda a, c: effects.append(1) or {1, 2})
    harness = create_harness(store=store, **FAST)
    with pytest.raises(CanonicalizationError):
        harness.call("t", tool, {})
    with pytest.raises(CanonicalizationError, match="already ran"):
        harness.call("t", tool, {})
    assert effects == [1]


def test_retention_and_purge(store: Any) -> None:
    effects: list[Any] = []
    tool = owner_tool("send", "keyed", effects)
    harness = create_harness(store=store, retention_ms=50, **FAST)
    harness.call("t", tool, {"a": 1})
    harness.call("t", tool, {"a": 2})
    import time

    time.sleep(0.08)
    assert harness.list() == []
    assert harness.purge() == 2
    harness.call("t", tool, {"a": 1})
    assert len(effects) == 3


def test_asyncio_api_awaits_async_tools_and_shares_concurrent_calls(store: Any) -> None:
    effects: list[Any] = []

    async def run(args: Any, ctx: Any) -> Any:
        await asyncio.sleep(0.02)
        effects.append(ctx.idempotency_key)
        return {"ok": args}

    tool = define_tool("send", "keyed", run)
    harness = create_harness(store=store, **FAST)

    async def main() -> list[Any]:
        return list(await asyncio.gather(*(harness.acall("t", tool, {"x": 1}) for _ in range(5))))

    assert asyncio.run(main()) == [{"ok": {"x": 1}}] * 5
    assert len(effects) == 1
    with pytest.raises(TypeError, match="acall"):
        harness.call("t", tool, {"x": 2})


def test_define_tool_and_options_are_checked() -> None:
    with pytest.raises(TypeError, match="tool.effect"):
        define_tool("x", "maybe", lambda a, c: None)
    with pytest.raises(TypeError, match="tool.name"):
        define_tool("", "keyed", lambda a, c: None)
    with pytest.raises(TypeError, match="reconcile is only for unguarded"):
        define_tool("x", "keyed", lambda a, c: None, reconcile=lambda a, c: None)
    with pytest.raises(TypeError, match="lease_ms"):
        create_harness(lease_ms=0)
    with pytest.raises(TypeError, match="ledger_version"):
        create_harness(ledger_version=3)


def test_asyncio_renews_the_lease_while_a_long_tool_runs(store: Any) -> None:
    async def run(args: Any, ctx: Any) -> Any:
        sk = PREFIX + ctx.idempotency_key
        # Two renewals by the harness's task while this tool awaits, then a rival's claim finds the record held.
        ends = await asyncio.to_thread(renewals, lambda: store.get(sk), 2)
        claim = await asyncio.to_thread(store.claim, sk, ClaimInput(ctx.idempotency_key, "thief", 2000, 10_000))
        return [len(ends), claim.status]

    tool = define_tool("slow", "keyed", run)
    harness = create_harness(store=store, lease_ms=2000, **FAST)
    assert asyncio.run(harness.acall("t", tool, {})) == [3, "exists"]
