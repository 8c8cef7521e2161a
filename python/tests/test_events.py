"""``on_event``, as the TypeScript harness's ``onEvent`` (test/harness): what each call tells the hook, checked
against what the fake owner (a list each attempt appends to) saw."""

from __future__ import annotations

import asyncio
import threading
from typing import Any

import pytest

from idemkey import (
    HarnessEvent,
    IdemkeyWarning,
    OutcomeUnknownError,
    create_harness,
    define_tool,
    idempotency_key,
    memory_store,
)
from idemkey.canonical import canonicalize
from idemkey.key import key_hash
from idemkey.ledger import PREFIX, LedgerCall, encode
from idemkey.store import ClaimInput, Expect, Patch

FAST = {"min_delay_ms": 1, "max_delay_ms": 5, "wait_min_delay_ms": 5, "wait_max_delay_ms": 20, "jitter": False}


def recording(**options: Any) -> tuple[Any, list[HarnessEvent]]:
    events: list[HarnessEvent] = []
    return create_harness(on_event=events.append, **{**FAST, **options}), events


def failing(name: str, effect: str, attempts: list[int], failures: list[BaseException], **tool: Any) -> Any:
    def run(args: Any, ctx: Any) -> Any:
        attempts.append(ctx.attempt)
        if failures:
            raise failures.pop(0)
        return {"attempt": ctx.attempt}

    return define_tool(name, effect, run, **tool)


def brief(events: list[HarnessEvent]) -> list[tuple[Any, ...]]:
    return [(e.type, e.attempt) for e in events]


def test_executed_then_replayed_with_the_call_named() -> None:
    harness, events = recording()
    attempts: list[int] = []
    tool = failing("deploy", "keyed", attempts, [])
    harness.call("task", tool, {"v": 1})
    harness.call("task", tool, {"v": 1})
    assert attempts == [1]
    assert brief(events) == [("executed", 1), ("replayed", 1)]
    key = idempotency_key("task", "deploy", {"v": 1})
    assert {(e.key, e.task_id, e.tool) for e in events} == {(key, "task", "deploy")}
    assert (events[0].recorded, events[0].args_differ, events[1].args_differ) == (True, False, False)
    assert all(isinstance(e.duration_ms, int) and e.duration_ms >= 0 for e in events)


def test_a_replay_under_an_identity_with_other_arguments_says_so() -> None:
    harness, events = recording()
    tool = define_tool("email", "keyed", lambda args, ctx: "sent", identity=lambda args: {"to": args["to"]})
    harness.call("task", tool, {"to": "ada", "body": "hi"})
    harness.call("task", tool, {"to": "ada", "body": "hello"})
    assert [(e.type, e.args_differ) for e in events] == [("executed", False), ("replayed", True)]


def test_retried_then_failed_with_the_errors_and_delays() -> None:
    harness, events = recording(retries=1, min_delay_ms=3)
    attempts: list[int] = []
    errors = [ConnectionError("reset"), ConnectionError("reset again")]
    tool = failing("deploy", "keyed", attempts, list(errors))
    with pytest.raises(ConnectionError):
        harness.call("task", tool, {})
    assert attempts == [1, 2]
    assert [(e.type, e.attempt, e.delay_ms, e.error) for e in events] == [
        ("retried", 1, 3, errors[0]),
        ("failed", 2, None, errors[1]),
    ]


def test_a_read_tool_is_executed_unrecorded() -> None:
    harness, events = recording()
    attempts: list[int] = []
    harness.call("task", failing("look", "read", attempts, [ConnectionError("reset")]), {})
    assert [(e.type, e.attempt, e.recorded) for e in events] == [("retried", 1, None), ("executed", 2, False)]


def test_outcome_unknown_then_resolved_by_a_person() -> None:
    harness, events = recording()
    attempts: list[int] = []
    tool = failing("pay", "unguarded", attempts, [ConnectionError("reset")])
    with pytest.raises(OutcomeUnknownError) as raised:
        harness.call("task", tool, {})
    assert brief(events) == [("outcome_unknown", 1)]
    assert events[0].error is raised.value
    harness.resolve(raised.value.key, result={"paid": True}, by="ana")
    assert [(e.type, e.how, e.by, e.key, e.tool) for e in events[1:]] == [
        ("resolved", "result", "ana", raised.value.key, "pay"),
    ]
    assert harness.call("task", tool, {}) == {"paid": True}
    assert attempts == [1]
    assert brief(events)[-1] == ("replayed", 1)


def test_resolved_by_reconcile_after_an_ambiguous_failure() -> None:
    harness, events = recording()
    attempts: list[int] = []
    tool = failing("pay", "unguarded", attempts, [ConnectionError("reset")],
                   reconcile=lambda args, ctx: {"status": "done", "result": {"found": True}})
    assert harness.call("task", tool, {}) == {"found": True}
    assert [(e.type, e.attempt, e.how) for e in events] == [("resolved", 1, "reconcile")]


class Clock:
    def __init__(self) -> None:
        self.now = 1_700_000_000_000

    def __call__(self) -> int:
        return self.now


def test_taken_over_with_the_attempts_recorded_before() -> None:
    clock = Clock()
    store = memory_store(clock)
    harness, events = recording(store=store, clock=clock)
    attempts: list[int] = []
    tool = failing("deploy", "keyed", attempts, [])
    key = harness.key("task", tool, {})
    text = canonicalize({})
    data = encode(LedgerCall("task", "deploy", "keyed", key_hash(text, None), text), 1)
    # A claim whose process stopped after recording one attempt, its lease then over.
    store.claim(PREFIX + key, ClaimInput(key, "dead", 1_000, 60_000, "pending", data))
    store.update(PREFIX + key, Expect(token="dead"), Patch(attempts=1))
    clock.now += 1_001
    harness.call("task", tool, {})
    assert attempts == [2]
    assert [(e.type, e.attempt, e.previous_attempts) for e in events] == [("taken_over", 2, 1), ("executed", 2, None)]


def test_waited_for_the_same_call_running_elsewhere() -> None:
    store = memory_store()
    looked = threading.Event()
    read = store.get

    def get(key: str) -> Any:
        looked.set()
        return read(key)

    store.get = get  # type: ignore[method-assign]
    harness, events = recording(store=store)
    attempts: list[int] = []
    tool = failing("deploy", "keyed", attempts, [])
    key = harness.key("task", tool, {})
    text = canonicalize({})
    data = encode(LedgerCall("task", "deploy", "keyed", key_hash(text, None), text), 1)
    store.claim(PREFIX + key, ClaimInput(key, "elsewhere", 60_000, 120_000, "pending", data))
    waiter = threading.Thread(target=lambda: harness.call("task", tool, {}))
    waiter.start()
    # Once the waiting call has looked at the ledger, the call elsewhere completes.
    assert looked.wait(10)
    store.update(PREFIX + key, Expect(token="elsewhere"),
                 Patch(state="completed", result='{"by":"elsewhere"}', token=None, lease_ms=None, attempts=1))
    waiter.join(10)
    assert attempts == []
    assert [(e.type, e.on) for e in events] == [("waited", "pending"), ("replayed", None)]


def test_waited_in_process_for_an_identical_acall() -> None:
    harness, events = recording()
    attempts: list[int] = []

    async def run(args: Any, ctx: Any) -> Any:
        attempts.append(ctx.attempt)
        await asyncio.sleep(0.01)
        return "done"

    tool = define_tool("deploy", "keyed", run)

    async def both() -> list[Any]:
        return await asyncio.gather(harness.acall("task", tool, {}), harness.acall("task", tool, {}))

    assert asyncio.run(both()) == ["done", "done"]
    assert attempts == [1]
    assert sorted((e.type, e.on) for e in events) == [("executed", None), ("waited", "in_process")]


def test_a_hook_that_raises_is_warned_about_and_the_call_goes_on() -> None:
    def hook(event: HarnessEvent) -> None:
        raise RuntimeError("the log is full")

    harness = create_harness(on_event=hook, **FAST)
    attempts: list[int] = []
    with pytest.warns(IdemkeyWarning, match='on_event raised on a "executed" event'):
        assert harness.call("task", failing("deploy", "keyed", attempts, []), {}) == {"attempt": 1}
    assert attempts == [1]


def test_on_event_is_checked() -> None:
    with pytest.raises(TypeError, match="on_event must be a function"):
        create_harness(on_event="print")  # type: ignore[arg-type]
