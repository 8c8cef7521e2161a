"""The harness's retry options beside the counts (``retries``, ``min_delay_ms``, ``max_delay_ms``, ``factor``):
``should_retry`` and ``jitter``, as the TypeScript ``RetryOptions`` has them (test/harness). Attempts are counted at
a fake owner, a list each attempt appends to; the pauses between them are read from ``time.sleep``, which the sync
driver pauses with, never timed."""

from __future__ import annotations

import asyncio
import dataclasses
import time
from typing import Any

import pytest

from idemkey import OutcomeUnknownError, RetryContext, ToolCallError, create_harness, define_tool, idempotency_key

FAST = {"min_delay_ms": 1, "max_delay_ms": 5}


def failing(name: str, effect: str, attempts: list[int], failures: list[BaseException]) -> Any:
    """A tool that records each attempt at the owner, then raises the next of ``failures`` (none left: succeeds)."""

    def run(args: Any, ctx: Any) -> Any:
        attempts.append(ctx.attempt)
        if failures:
            raise failures.pop(0)
        return {"attempt": ctx.attempt}

    return define_tool(name, effect, run)


@pytest.mark.parametrize("effect", ["read", "keyed", "idempotent"])
def test_should_retry_true_retries_what_the_default_would_not(effect: str) -> None:
    asked: list[RetryContext] = []

    def should_retry(ctx: RetryContext) -> bool:
        asked.append(ctx)
        return True

    attempts: list[int] = []
    bug = TypeError("a flaky SDK raises TypeError on a timeout")
    harness = create_harness(should_retry=should_retry, **FAST)
    tool = failing("deploy", effect, attempts, [bug])
    assert harness.call("task", tool, {"v": 1}) == {"attempt": 2}
    assert attempts == [1, 2]
    key = idempotency_key("task", "deploy", {"v": 1})
    assert [(c.key, c.task_id, c.tool, c.attempt, c.error) for c in asked] == [(key, "task", "deploy", 1, bug)]
    # Read-only, as the TypeScript context is frozen.
    with pytest.raises(dataclasses.FrozenInstanceError):
        asked[0].attempt = 5  # type: ignore[misc]


def test_should_retry_false_stops_a_retryable_failure_and_releases_the_key() -> None:
    attempts: list[int] = []
    store_harness = create_harness(should_retry=lambda ctx: False, **FAST)
    tool = failing("deploy", "keyed", attempts, [ConnectionError("reset")])
    with pytest.raises(ConnectionError):
        store_harness.call("task", tool, {})
    assert attempts == [1]
    # Released: nothing recorded, and the next call runs it.
    assert store_harness.get(idempotency_key("task", "deploy", {})) is None
    assert store_harness.call("task", tool, {}) == {"attempt": 1}
    assert attempts == [1, 1]


def test_should_retry_none_keeps_the_default_decision() -> None:
    attempts: list[int] = []
    harness = create_harness(should_retry=lambda ctx: None, **FAST)
    flaky = failing("flaky", "keyed", attempts, [ConnectionError("reset")])
    assert harness.call("task", flaky, {}) == {"attempt": 2}
    buggy = failing("buggy", "keyed", attempts, [TypeError("bad arguments")])
    with pytest.raises(TypeError, match="bad arguments"):
        harness.call("task", buggy, {})
    # A ToolCallError's retryable=False is the default's answer too.
    final = failing("final", "keyed", attempts, [ToolCallError("no such repo", retryable=False)])
    with pytest.raises(ToolCallError):
        harness.call("task", final, {})
    assert attempts == [1, 2, 1, 1]


def test_should_retry_is_never_asked_once_the_retries_are_used_up() -> None:
    asked: list[int] = []
    attempts: list[int] = []
    harness = create_harness(retries=2, should_retry=lambda ctx: asked.append(ctx.attempt) or True, **FAST)
    tool = failing("deploy", "keyed", attempts, [ConnectionError("reset")] * 3)
    with pytest.raises(ConnectionError):
        harness.call("task", tool, {})
    assert attempts == [1, 2, 3]
    assert asked == [1, 2]


def test_should_retry_is_never_asked_about_an_unguarded_failure_that_may_have_reached_the_owner() -> None:
    asked: list[int] = []
    attempts: list[int] = []
    harness = create_harness(should_retry=lambda ctx: asked.append(ctx.attempt) or True, **FAST)
    tool = failing("pay", "unguarded", attempts, [ConnectionError("reset")])
    with pytest.raises(OutcomeUnknownError):
        harness.call("task", tool, {})
    assert (attempts, asked) == ([1], [])
    # One that certainly had no effect is asked, and retried.
    nothing_sent = failing("pay-once", "unguarded", attempts, [ToolCallError("refused", no_effect=True)])
    assert harness.call("task", nothing_sent, {}) == {"attempt": 2}
    assert asked == [1]


def test_a_should_retry_that_raises_ends_the_call_with_its_error_and_releases_the_key() -> None:
    def should_retry(ctx: RetryContext) -> bool:
        raise RuntimeError("the policy's own bug")

    attempts: list[int] = []
    harness = create_harness(should_retry=should_retry, **FAST)
    tool = failing("deploy", "keyed", attempts, [ConnectionError("reset")])
    with pytest.raises(RuntimeError, match="the policy's own bug"):
        harness.call("task", tool, {})
    assert harness.get(idempotency_key("task", "deploy", {})) is None
    assert attempts == [1]


def test_an_async_should_retry_is_awaited_under_acall_and_refused_by_call() -> None:
    async def should_retry(ctx: RetryContext) -> bool:
        await asyncio.sleep(0)
        return True

    attempts: list[int] = []
    harness = create_harness(should_retry=should_retry, **FAST)
    failures: list[BaseException] = [TypeError("flaky")]
    tool = failing("deploy", "keyed", attempts, failures)
    assert asyncio.run(harness.acall("task", tool, {})) == {"attempt": 2}
    failures.append(TypeError("flaky"))
    with pytest.raises(TypeError, match=r"needs harness.acall\(\)"):
        harness.call("task-2", tool, {})
    assert harness.get(idempotency_key("task-2", "deploy", {})) is None
    assert attempts == [1, 2, 1]


@pytest.fixture
def pauses(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    """The pauses the sync driver takes, in ms, taken at once."""
    taken: list[float] = []
    monkeypatch.setattr(time, "sleep", lambda seconds: taken.append(seconds * 1000))
    return taken


@pytest.mark.parametrize("effect", ["read", "keyed"])
def test_without_jitter_the_pauses_are_the_computed_delays(pauses: list[float], effect: str) -> None:
    attempts: list[int] = []
    harness = create_harness(retries=4, min_delay_ms=10, factor=2, max_delay_ms=25, jitter=False)
    tool = failing("deploy", effect, attempts, [ConnectionError("reset")] * 3)
    assert harness.call("task", tool, {}) == {"attempt": 4}
    assert pauses == [10, 20, 25]


def test_with_jitter_each_pause_is_between_half_and_all_of_the_delay(pauses: list[float]) -> None:
    attempts: list[int] = []
    harness = create_harness(retries=40, min_delay_ms=8, factor=1, max_delay_ms=8)
    tool = failing("deploy", "keyed", attempts, [ConnectionError("reset")] * 40)
    harness.call("task", tool, {})
    assert len(pauses) == 40
    assert all(4 <= p <= 8 for p in pauses)
    # Random: forty draws are not all the same.
    assert len(set(pauses)) > 1


def test_the_owners_retry_after_is_waited_as_asked_capped_and_never_jittered(pauses: list[float]) -> None:
    attempts: list[int] = []
    harness = create_harness(min_delay_ms=1, max_delay_ms=50)
    tool = failing("deploy", "keyed", attempts, [ToolCallError("busy", retry_after_ms=30),
                                                 ToolCallError("busy", retry_after_ms=900)])
    harness.call("task", tool, {})
    assert pauses == [30, 50]


def test_read_tools_honour_retry_after_too(pauses: list[float]) -> None:
    attempts: list[int] = []
    harness = create_harness(min_delay_ms=1, max_delay_ms=50)
    tool = failing("look", "read", attempts, [ToolCallError("busy", retry_after_ms=30)])
    harness.call("task", tool, {})
    assert pauses == [30]


def test_the_options_are_checked() -> None:
    with pytest.raises(TypeError, match="jitter must be a bool"):
        create_harness(jitter="yes")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="should_retry must be a function"):
        create_harness(should_retry=5)  # type: ignore[arg-type]
