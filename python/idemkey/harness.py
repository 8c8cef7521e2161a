"""The harness: ``create_harness(store=...)`` and ``define_tool(name, effect, run)``, the TypeScript harness's
semantics on the same ledger (docs/ledger-format.md, docs/python.md).

The ledger logic is written once, as generators that yield what they need done (a store operation, a tool run, a
pause, a lease to hold); ``call`` drives them synchronously (the lease renewed from a thread) and ``acall`` under
asyncio (the store in a worker thread, the lease renewed by a task, ``async def`` tools awaited).
"""

from __future__ import annotations

import asyncio
import inspect
import json
import random
import threading
import uuid
from dataclasses import dataclass, field
from typing import Any, Callable, Generator

from .canonical import DEFAULT_MAX_DEPTH, canonicalize_at
from .errors import (
    ApprovalDeniedError,
    CanonicalizationError,
    LedgerStateError,
    OutcomeUnknownError,
    OutcomeUnknownReason,
    WaitTimeoutError,
)
from .events import HarnessEvent, check_on_event, notify
from .key import check_secret, idempotency_key, key_hash
from .ledger import PREFIX, LedgerCall, LedgerEntry, add_event, check_version, decode, encode, last_event, to_entry
from .retry import RetryContext, check_jitter, check_should_retry, default_retryable, retry_delay
from .store import ClaimInput, Expect, MemoryStore, Patch, Store, StoreRecord, now_ms

EFFECTS = ("read", "idempotent", "keyed", "unguarded")


@dataclass(frozen=True)
class ToolContext:
    """What a tool's ``run`` receives besides the arguments: the key to forward to the owner, the same on every
    attempt, and the attempt's number (counting on across a takeover in another process or language)."""

    idempotency_key: str
    task_id: str
    tool: str
    attempt: int


@dataclass(frozen=True)
class Tool:
    name: str
    effect: str
    run: Callable[[Any, ToolContext], Any]
    identity: Callable[[Any], Any] | None = None
    no_effect: Callable[[BaseException], bool | None] | None = None
    reconcile: Callable[[Any, ToolContext], Any] | None = None


def define_tool(
    name: str,
    effect: str,
    run: Callable[[Any, ToolContext], Any],
    *,
    identity: Callable[[Any], Any] | None = None,
    no_effect: Callable[[BaseException], bool | None] | None = None,
    reconcile: Callable[[Any, ToolContext], Any] | None = None,
) -> Tool:
    """Declares a tool: its name (part of every key), how its side effect behaves when repeated (``read``,
    ``idempotent``, ``keyed``, ``unguarded``) and ``run(args, ctx)``, sync or ``async def``. Checked here, with a
    ``TypeError`` naming the field."""
    if not isinstance(name, str) or name == "":
        raise TypeError(f"tool.name must be a non-empty string, got {name!r}")
    if effect not in EFFECTS:
        raise TypeError(f'tool.effect of "{name}" must be one of {", ".join(EFFECTS)}, got {effect!r}')
    if not callable(run):
        raise TypeError(f'tool.run of "{name}" must be a function')
    for field_name, value in (("identity", identity), ("no_effect", no_effect), ("reconcile", reconcile)):
        if value is not None and not callable(value):
            raise TypeError(f'tool.{field_name} of "{name}" must be a function')
    if reconcile is not None and effect != "unguarded":
        raise TypeError(f'tool.reconcile is only for unguarded tools; "{name}" is {effect}')
    return Tool(name, effect, run, identity, no_effect, reconcile)


@dataclass
class _Options:
    store: Any
    lease_ms: int
    retention_ms: int
    ledger_version: int
    retries: int
    min_delay_ms: float
    max_delay_ms: float
    factor: float
    jitter: bool
    should_retry: Callable[[RetryContext], Any] | None
    wait_timeout_ms: float
    wait_min_delay_ms: float
    wait_max_delay_ms: float
    key_secret: Any
    clock: Callable[[], int]
    on_event: Callable[[HarnessEvent], Any] | None


# --- the effects the ledger logic yields ------------------------------------------------------------------------


@dataclass
class _Op:
    """``store.<method>(*args)``."""

    method: str
    args: tuple[Any, ...]


@dataclass
class _Run:
    fn: Callable[..., Any]
    args: tuple[Any, ...]


@dataclass
class _Sleep:
    ms: float


@dataclass
class _Hold:
    """Start renewing the lease of ``key`` under ``token``; answered with a handle for ``_Stop``."""

    key: str
    token: str


@dataclass
class _Stop:
    handle: Any


Steps = Generator[Any, Any, Any]


# --- one call ---------------------------------------------------------------------------------------------------


class _ClaimLost(Exception):
    pass


@dataclass
class _Call:
    o: _Options
    tool: Tool
    task_id: str
    key: str
    sk: str
    args: Any
    args_hash: str
    data: LedgerCall
    started_at: int = 0
    replayed: bool = False


def _emit(c: _Call, kind: str, attempt: int, **fields: Any) -> None:
    hook = c.o.on_event
    if hook is not None:
        notify(hook, HarnessEvent(kind, c.key, c.task_id, c.tool.name, attempt, c.o.clock() - c.started_at, **fields))


@dataclass
class _Held:
    token: str
    data: LedgerCall
    args: Any
    attempt: int
    data_changed: bool = False
    unknown_because: tuple[str, str, str | None] | None = None
    release_to: str = "absent"
    lease: Any = None


def _unknown_error(c: _Call, why: str, reason: str, answer: str | None) -> OutcomeUnknownError:
    return OutcomeUnknownError(c.key, c.tool.name, why, reason, answer)


def _describe(error: BaseException) -> str:
    text = f"{type(error).__name__}: {error}"
    return text if len(text) <= 500 else text[:497] + "..."


def _had_no_effect(error: BaseException, classify: Callable[[BaseException], bool | None] | None) -> bool:
    if getattr(error, "no_effect", None) is True:
        return True
    if classify is None:
        return False
    try:
        return classify(error) is True
    except Exception:
        return False


def _plan_retry(c: _Call, attempt: int, failures: int, error: BaseException) -> Steps:
    """The pause before the next attempt, in ms, or None for a final failure (the TypeScript ``planRetry``):
    ``should_retry`` is asked while retries remain, and None from it keeps the default rule."""
    o = c.o
    if failures > o.retries:
        return None
    yes = None
    if o.should_retry is not None:
        yes = yield _Run(o.should_retry, (RetryContext(c.key, c.task_id, c.tool.name, attempt, error),))
    if not (default_retryable(error) if yes is None else bool(yes)):
        return None
    return retry_delay(failures, error, min_delay_ms=o.min_delay_ms, max_delay_ms=o.max_delay_ms, factor=o.factor,
                       jitter=o.jitter)


def _settle(c: _Call) -> Steps:
    o = c.o
    pause_ms = o.wait_min_delay_ms
    waiting_since: float | None = None
    waited_on: str | None = None
    seen_at = o.clock()
    while True:
        token = str(uuid.uuid4())
        sent = encode(c.data, o.ledger_version)
        claim = ClaimInput(c.key, token, o.lease_ms, o.lease_ms + o.retention_ms, "pending", sent)
        claimed = yield _Op("claim", (c.sk, claim))
        try:
            if claimed.status == "taken_over":
                assert claimed.previous is not None
                return (yield from _take_over(c, claimed.record, claimed.previous))
            if claimed.status == "claimed":
                held = _Held(token, c.data, c.args, 1)
                return (yield from _hold(c, held))
            record: StoreRecord | None = claimed.record
            fresh = True
            while record is not None:
                state = record.state
                if state in ("pending", "awaiting_approval"):
                    lapsed = state == "pending" and record.lease_until is not None and record.lease_until <= o.clock()
                    if lapsed and not fresh:
                        break
                    now = o.clock()
                    if waiting_since is None:
                        waiting_since = now
                    waited_on = state
                    if now - waiting_since >= o.wait_timeout_ms:
                        raise WaitTimeoutError(c.key, state, now - waiting_since)
                    yield _Sleep(min(pause_ms * (0.5 + random.random() / 2), o.wait_timeout_ms - (now - waiting_since)))
                    pause_ms = min(pause_ms * 2, o.wait_max_delay_ms)
                    asked = o.clock()
                    record = yield _Op("get", (c.sk,))
                    if record is not None:
                        seen_at = asked
                    fresh = False
                    continue
                waiting_since = None
                if waited_on is not None:
                    _emit(c, "waited", record.attempts, on=waited_on)
                    waited_on = None
                if state == "completed":
                    return _replay(c, record)
                if state == "denied":
                    denial = last_event(decode(record), "denied") or {}
                    raise ApprovalDeniedError(c.key, denial.get("reason", "no reason given"), denial.get("by"))
                if state == "approved":
                    started = yield from _start_from(c, record, None)
                    if started is not None:
                        return started[0]
                elif state == "outcome_unknown":
                    because = _held_because(record)
                    if c.tool.reconcile is None or c.tool.effect != "unguarded":
                        raise _unknown_error(c, *because)
                    started = yield from _start_from(c, record, ("its outcome was unknown", because[1], because[2]))
                    if started is not None:
                        return started[0]
                record = yield _Op("get", (c.sk,))
                fresh = False
            if waited_on is not None:
                # The wait ended in a lapsed lease or a record gone: this call claims again.
                _emit(c, "waited", 0 if record is None else record.attempts, on=waited_on)
                waited_on = None
            if record is None and o.clock() - seen_at > o.retention_ms:
                raise _unknown_error(
                    c, f"its record expired while this call waited (retention {o.retention_ms} ms)",
                    OutcomeUnknownReason.expired, None,
                )
        except _ClaimLost:
            continue


def _replay(c: _Call, record: StoreRecord) -> Any:
    if record.result is None:
        raise CanonicalizationError(
            "$.result",
            f'the tool "{c.tool.name}" already ran for this key, but its result was not a JSON value, so the ledger '
            "could not record it and cannot replay it; the tool will not run again for this key",
        )
    c.replayed = True
    if c.o.on_event is not None:
        _emit(c, "replayed", record.attempts, args_differ=decode(record).args_hash != c.args_hash)
    return None if record.result == "" else json.loads(record.result)


def _held_because(record: StoreRecord) -> tuple[str, str, str | None]:
    event = last_event(decode(record), "outcome_unknown") or {}
    return (
        event.get("error", "an earlier attempt may or may not have taken effect"),
        event.get("reason", OutcomeUnknownReason.interrupted),
        event.get("answer"),
    )


def _args_for(c: _Call, data: LedgerCall) -> Any:
    return c.args if data.args_hash == c.args_hash else data.args()


def _take_over(c: _Call, record: StoreRecord, previous: StoreRecord) -> Steps:
    data = add_event(decode(record), {"type": "taken_over", "at": c.o.clock(), "previousAttempts": previous.attempts})
    unguarded = c.tool.effect == "unguarded"
    attempt = previous.attempts + 1 if unguarded else max(previous.attempts, 1) + 1
    _emit(c, "taken_over", attempt, previous_attempts=previous.attempts)
    held = _Held(record.token or "", data, _args_for(c, data), attempt, data_changed=True)
    if unguarded and previous.attempts > 0:
        held.unknown_because = (
            f"the process running attempt {previous.attempts} stopped while it was pending",
            OutcomeUnknownReason.interrupted,
            None,
        )
    return (yield from _hold(c, held))


def _start_from(c: _Call, record: StoreRecord, because: tuple[str, str, str | None] | None) -> Steps:
    token = str(uuid.uuid4())
    started = yield _Op(
        "update", (c.sk, Expect(state=record.state), Patch(state="pending", token=token, lease_ms=c.o.lease_ms))
    )
    if started is None:
        return None
    data = decode(started)
    held = _Held(token, data, _args_for(c, data), started.attempts + 1,
                 release_to="approved" if because is None else "absent")
    held.unknown_because = because
    return ((yield from _hold(c, held)),)


def _hold(c: _Call, held: _Held) -> Steps:
    o, tool = c.o, c.tool
    held.lease = yield _Hold(c.sk, held.token)
    failures = 0
    try:
        if held.unknown_because is not None:
            found = yield from _reconcile(c, held, held.attempt, held.unknown_because, None)
            if found is not None:
                return found[0]
        attempt = held.attempt
        while True:
            if tool.effect == "unguarded":
                yield from _mark(c, held, attempt)
            ctx = ToolContext(c.key, c.task_id, tool.name, attempt)
            try:
                value = yield _Run(tool.run, (held.args, ctx))
            except Exception as error:  # noqa: BLE001 - the tool's failure, classified below
                failures += 1
                if tool.effect == "unguarded" and not _had_no_effect(error, tool.no_effect):
                    answer = str(error) or None
                    because = (f"attempt {attempt} failed", OutcomeUnknownReason.unclassified_error, answer)
                    found = yield from _reconcile(c, held, attempt, because, error)
                    if found is not None:
                        return found[0]
                try:
                    delay = yield from _plan_retry(c, attempt, failures, error)
                except Exception:
                    # should_retry raised: the call ends with its error, the key released as after a final failure.
                    yield from _release(c, held, attempt)
                    raise
                if delay is None:
                    yield from _release(c, held, attempt)
                    _emit(c, "failed", attempt, error=error)
                    raise
                _emit(c, "retried", attempt, delay_ms=delay, error=error)
                yield _Sleep(delay)
                if tool.effect != "unguarded":
                    yield from _mark(c, held, attempt)
                attempt += 1
                continue
            return (yield from _complete(c, held, value, attempt, None))
    finally:
        yield _Stop(held.lease)


def _mark(c: _Call, held: _Held, attempts: int) -> Steps:
    o = c.o
    marked = yield _Op(
        "update",
        (c.sk, Expect(token=held.token, state="pending"),
         Patch(attempts=attempts, lease_ms=o.lease_ms, ttl_ms=o.lease_ms + o.retention_ms)),
    )
    if marked is None:
        raise _ClaimLost()


def _reconcile(c: _Call, held: _Held, attempt: int, because: tuple[str, str, str | None], cause: Any) -> Steps:
    check = c.tool.reconcile
    why, reason, answer = because
    if check is None:
        raise (yield from _mark_unknown(c, held, attempt, because, cause))
    try:
        found = yield _Run(check, (held.args, ToolContext(c.key, c.task_id, c.tool.name, attempt)))
    except Exception as error:  # noqa: BLE001
        raise (yield from _mark_unknown(c, held, attempt, (f"{why}, and reconcile threw", reason, answer), error))
    if found is None:
        raise (yield from _mark_unknown(c, held, attempt, (f"{why}, and reconcile could not tell", reason, answer), cause))
    if isinstance(found, dict) and found.get("status") == "done":
        return ((yield from _complete(c, held, found.get("result"), attempt, "reconcile")),)
    if isinstance(found, dict) and found.get("status") == "not_done":
        return None
    bad = TypeError(f'tool.reconcile of "{c.tool.name}" must return {{"status": "done", "result": ...}}, '
                    '{"status": "not_done"} or None')
    raise (yield from _mark_unknown(c, held, attempt, (f"{why}, and reconcile answered nonsense", reason, answer), bad))


def _mark_unknown(c: _Call, held: _Held, attempt: int, because: tuple[str, str, str | None], cause: Any) -> Steps:
    why, reason, answer = because
    event: dict[str, Any] = {
        "type": "outcome_unknown",
        "at": c.o.clock(),
        "error": why if cause is None else f"{why}: {_describe(cause)}",
        "reason": reason,
    }
    if answer is not None:
        event["answer"] = answer[:1997] + "..." if len(answer) > 2000 else answer
    try:
        yield _Op(
            "update",
            (c.sk, Expect(token=held.token, state="pending"),
             Patch(state="outcome_unknown", token=None, lease_ms=None, attempts=attempt,
                   data=encode(add_event(held.data, event), c.o.ledger_version))),
        )
    except Exception:  # noqa: BLE001 - left pending, the next takeover finds the outcome unknown all the same
        pass
    error = _unknown_error(c, why, reason, answer)
    if isinstance(cause, BaseException):
        error.__cause__ = cause
    _emit(c, "outcome_unknown", attempt, error=error)
    return error


def _complete(c: _Call, held: _Held, value: Any, attempt: int, resolved_by: str | None) -> Steps:
    o, tool = c.o, c.tool
    try:
        text = canonicalize_at(value, "$.result", DEFAULT_MAX_DEPTH)
    except CanonicalizationError as error:
        bad = CanonicalizationError(
            error.path,
            f'the result of tool "{tool.name}" is not a JSON value, so the ledger cannot record it: {error.reason} '
            f"at {error.path}; return plain data",
        )
        if tool.effect == "unguarded":
            raise (yield from _mark_unknown(
                c, held, attempt,
                (f"it ran but returned a result that is not JSON ({error.reason} at {error.path})",
                 OutcomeUnknownReason.unrecordable_result, None),
                bad,
            )) from None
        yield from _save(c, held, Patch(state="completed", result=None, token=None, lease_ms=None, attempts=attempt,
                                        ttl_ms=o.retention_ms))
        _emit(c, "failed", attempt, error=bad)
        raise bad from None
    data: Any = None
    if resolved_by is not None:
        data = encode(add_event(held.data, {"type": "resolved", "at": o.clock(), "how": resolved_by}), o.ledger_version)
    elif held.data_changed:
        data = encode(held.data, o.ledger_version)
    patch = Patch(state="completed", result=text, token=None, lease_ms=None, attempts=attempt, ttl_ms=o.retention_ms)
    if data is not None:
        patch = Patch(state="completed", result=text, token=None, lease_ms=None, attempts=attempt,
                      ttl_ms=o.retention_ms, data=data)
    try:
        written = yield from _save(c, held, patch)
    except Exception as failure:
        _emit(c, "failed", attempt, error=failure)
        raise
    if resolved_by is not None:
        _emit(c, "resolved", attempt, how=resolved_by)
    else:
        # Not recorded: the claim was lost (taken over) before the save.
        _emit(c, "executed", attempt, recorded=written is not None, args_differ=held.data.args_hash != c.args_hash)
    return json.loads(text)


def _save(c: _Call, held: _Held, patch: Patch) -> Steps:
    """The write that must happen: retried on store errors with backoff, up to twice the lease."""
    budget = 2 * c.o.lease_ms
    waited = 0.0
    delay = 50.0
    while True:
        try:
            return (yield _Op("update", (c.sk, Expect(token=held.token, state="pending"), patch)))
        except Exception:
            if waited >= budget:
                raise
        ms = min(delay, budget - waited)
        yield _Sleep(ms)
        waited += ms
        delay = min(delay * 2, max(50.0, c.o.lease_ms / 3))


def _release(c: _Call, held: _Held, attempt: int) -> Steps:
    expect = Expect(token=held.token, state="pending")
    try:
        if held.release_to == "approved":
            yield _Op("update", (c.sk, expect, Patch(state="approved", token=None, lease_ms=None, attempts=attempt)))
        else:
            yield _Op("delete", (c.sk, expect))
    except Exception:  # noqa: BLE001 - unreleased, the claim lapses with its lease
        pass


def _run_read(c: _Call) -> Steps:
    failures = 0
    attempt = 1
    while True:
        try:
            value = yield _Run(c.tool.run, (c.args, ToolContext(c.key, c.task_id, c.tool.name, attempt)))
            _emit(c, "executed", attempt, recorded=False, args_differ=False)
            return value
        except Exception as error:
            failures += 1
            delay = yield from _plan_retry(c, attempt, failures, error)
            if delay is None:
                _emit(c, "failed", attempt, error=error)
                raise
            _emit(c, "retried", attempt, delay_ms=delay, error=error)
            yield _Sleep(delay)
            attempt += 1


# --- drivers ----------------------------------------------------------------------------------------------------


class _ThreadLease:
    def __init__(self, store: Any, key: str, token: str, lease_ms: int, ttl_ms: int) -> None:
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._renew, args=(store, key, token, lease_ms, ttl_ms), daemon=True)
        self._thread.start()

    def _renew(self, store: Any, key: str, token: str, lease_ms: int, ttl_ms: int) -> None:
        while not self._stop.wait(lease_ms / 3000):
            try:
                if store.update(key, Expect(token=token, state="pending"), Patch(lease_ms=lease_ms, ttl_ms=ttl_ms)) is None:
                    return
            except Exception:  # noqa: BLE001 - the store is down: the next renewal may come before the lease ends
                pass

    def stop(self) -> None:
        self._stop.set()


def _drive_sync(o: _Options, steps: Steps) -> Any:
    import time

    answer: Any = None
    error: BaseException | None = None
    while True:
        try:
            step = steps.throw(error) if error is not None else steps.send(answer)
        except StopIteration as done:
            return done.value
        answer, error = None, None
        try:
            if isinstance(step, _Op):
                answer = getattr(o.store, step.method)(*step.args)
            elif isinstance(step, _Run):
                answer = step.fn(*step.args)
                if inspect.isawaitable(answer):
                    close = getattr(answer, "close", None)
                    if close:
                        close()
                    raise TypeError(
                        "an async tool (or reconcile, or should_retry) needs harness.acall(), not harness.call()"
                    )
            elif isinstance(step, _Sleep):
                time.sleep(step.ms / 1000)
            elif isinstance(step, _Hold):
                answer = _ThreadLease(o.store, step.key, step.token, o.lease_ms, o.lease_ms + o.retention_ms)
            elif isinstance(step, _Stop):
                step.handle.stop()
        except BaseException as failure:  # noqa: BLE001 - handed back to the ledger logic
            error = failure


async def _drive_async(o: _Options, steps: Steps) -> Any:
    answer: Any = None
    error: BaseException | None = None
    while True:
        try:
            step = steps.throw(error) if error is not None else steps.send(answer)
        except StopIteration as done:
            return done.value
        answer, error = None, None
        try:
            if isinstance(step, _Op):
                answer = await asyncio.to_thread(getattr(o.store, step.method), *step.args)
            elif isinstance(step, _Run):
                answer = step.fn(*step.args)
                if inspect.isawaitable(answer):
                    answer = await answer
            elif isinstance(step, _Sleep):
                await asyncio.sleep(step.ms / 1000)
            elif isinstance(step, _Hold):
                answer = asyncio.create_task(_renew_async(o, step.key, step.token))
            elif isinstance(step, _Stop):
                step.handle.cancel()
        except BaseException as failure:  # noqa: BLE001
            error = failure


async def _renew_async(o: _Options, key: str, token: str) -> None:
    while True:
        await asyncio.sleep(o.lease_ms / 3000)
        try:
            renewed = await asyncio.to_thread(
                o.store.update, key, Expect(token=token, state="pending"),
                Patch(lease_ms=o.lease_ms, ttl_ms=o.lease_ms + o.retention_ms),
            )
            if renewed is None:
                return
        except Exception:  # noqa: BLE001
            pass


# --- the harness ------------------------------------------------------------------------------------------------


@dataclass
class CallOutcome:
    value: Any
    replayed: bool


@dataclass
class Harness:
    """What ``create_harness`` returns. ``call``/``acall`` run a tool once per key; ``get``, ``list``, ``resolve`` and
    ``purge`` read and act on the ledger (records written by either language)."""

    _o: _Options
    _running: dict[str, Any] = field(default_factory=dict)

    def key(self, task_id: str, tool: Tool, args: Any, *, step: str | int | float | None = None) -> str:
        _check_tool(tool)
        source = args if tool.identity is None else tool.identity(args)
        return idempotency_key(task_id, tool.name, source, step=step, secret=self._o.key_secret)

    def _prepare(self, task_id: str, tool: Tool, args: Any, step: Any) -> _Call:
        key = self.key(task_id, tool, args, step=step)
        args_text = canonicalize_at(args, "$.args", DEFAULT_MAX_DEPTH)
        args_hash = key_hash(args_text, self._o.key_secret)
        data = LedgerCall(task_id, tool.name, tool.effect, args_hash, args_text, [], step)
        return _Call(self._o, tool, task_id, key, PREFIX + key, args, args_hash, data, self._o.clock())

    def _steps(self, c: _Call) -> Steps:
        return _run_read(c) if c.tool.effect == "read" else _settle(c)

    def call_with_outcome(self, task_id: str, tool: Tool, args: Any, *, step: Any = None) -> CallOutcome:
        c = self._prepare(task_id, tool, args, step)
        return CallOutcome(_drive_sync(self._o, self._steps(c)), c.replayed)

    def call(self, task_id: str, tool: Tool, args: Any, *, step: Any = None) -> Any:
        """Runs ``tool`` once for this task and these arguments: under a fresh claim, or replays a recorded result,
        waits for the same call running elsewhere, or takes over a claim whose process stopped. Raises the tool's
        final error, ``OutcomeUnknownError``, ``ApprovalDeniedError`` or ``WaitTimeoutError``."""
        return self.call_with_outcome(task_id, tool, args, step=step).value

    async def acall_with_outcome(self, task_id: str, tool: Tool, args: Any, *, step: Any = None) -> CallOutcome:
        c = self._prepare(task_id, tool, args, step)
        if c.tool.effect != "read":
            running = self._running.get(c.key)
            if running is not None:
                # The same call already running in this event loop: share its outcome.
                value = await asyncio.shield(running)
                _emit(c, "waited", 0, on="in_process")
                return CallOutcome(value, True)
        task = asyncio.ensure_future(_drive_async(self._o, self._steps(c)))
        if c.tool.effect != "read":
            self._running[c.key] = task
        try:
            value = await task
        finally:
            if self._running.get(c.key) is task:
                del self._running[c.key]
        return CallOutcome(value, c.replayed)

    async def acall(self, task_id: str, tool: Tool, args: Any, *, step: Any = None) -> Any:
        """``call`` under asyncio: ``async def`` tools are awaited, the store runs in a worker thread."""
        return (await self.acall_with_outcome(task_id, tool, args, step=step)).value

    def get(self, key: str) -> LedgerEntry | None:
        record = self._o.store.get(PREFIX + _check_key(key))
        return None if record is None else to_entry(record)

    def list(self, *, state: str | None = None, after: str | None = None, limit: int = 100) -> list[LedgerEntry]:
        records = self._o.store.list(
            prefix=PREFIX, state=state, after=None if after is None else PREFIX + after, limit=limit
        )
        return [to_entry(r) for r in records]

    def resolve(self, key: str, *, result: Any = None, retry: bool = False, by: str | None = None) -> LedgerEntry:
        """Records what happened to a call whose outcome was unknown: ``result=...`` (it took effect; later calls
        replay it) or ``retry=True`` (it did not; the next call runs it)."""
        _check_key(key)
        started = self._o.clock()
        record = self._o.store.get(PREFIX + key)
        if record is None or record.state != "outcome_unknown":
            raise LedgerStateError(key, "wrong-state", f"resolve needs outcome_unknown, found {getattr(record, 'state', None)}")
        data = decode(record)
        at = self._o.clock()
        event: dict[str, Any] = {"type": "resolved", "at": at, "how": "retry" if retry else "result"}
        if by is not None:
            event["by"] = by
        encoded = encode(add_event(data, event), self._o.ledger_version)
        if retry:
            patch = Patch(state="approved", token=None, data=encoded)
        else:
            text = canonicalize_at(result, "$.result", DEFAULT_MAX_DEPTH)
            patch = Patch(state="completed", token=None, result=text, ttl_ms=self._o.retention_ms, data=encoded)
        expect = Expect(state="outcome_unknown", token=record.token)
        updated = self._o.store.update(PREFIX + key, expect, patch)
        if updated is None:
            raise LedgerStateError(key, "changed", "the record changed while resolving it")
        if self._o.on_event is not None:
            notify(self._o.on_event, HarnessEvent("resolved", key, data.task_id, data.tool, updated.attempts,
                                                  self._o.clock() - started, by=by, how=event["how"]))
        return to_entry(updated)

    def purge(self, *, batch_size: int = 1000) -> int:
        """Removes every expired record from the store, ``batch_size`` at a time; returns how many."""
        total = 0
        while True:
            removed = self._o.store.purge(batch_size)
            total += removed
            if removed < batch_size:
                return total


def _check_key(key: Any) -> str:
    if not isinstance(key, str) or key == "":
        raise TypeError(f"key must be a non-empty string (an idempotency key), got {key!r}")
    return key


def _check_tool(tool: Any) -> None:
    if not isinstance(tool, Tool):
        raise TypeError("tool must be a tool made by define_tool()")


def _number(name: str, value: Any, minimum: float = 0, exclusive: bool = False) -> Any:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value < minimum or (exclusive and value == minimum):
        raise TypeError(f"{name} must be a {'positive' if exclusive else 'non-negative'} number, got {value!r}")
    return value


def create_harness(
    *,
    store: Store | None = None,
    lease_ms: int = 30_000,
    retention_ms: int = 7 * 24 * 60 * 60 * 1000,
    ledger_version: int = 1,
    retries: int = 3,
    min_delay_ms: float = 500,
    max_delay_ms: float = 30_000,
    factor: float = 2,
    jitter: bool = True,
    should_retry: Callable[[RetryContext], bool | None] | None = None,
    wait_timeout_ms: float = 120_000,
    wait_min_delay_ms: float = 25,
    wait_max_delay_ms: float = 1_000,
    key_secret: str | bytes | None = None,
    on_event: Callable[[HarnessEvent], Any] | None = None,
    clock: Callable[[], int] = now_ms,
) -> Harness:
    """The wrapper an agent harness puts around every tool call, with the TypeScript ``createHarness`` defaults:
    a 30 s lease renewed every third of it while a tool runs, 7 days of retention, 3 retries from 500 ms doubling
    to 30 s, a 2-minute wait for a call running elsewhere, ledger format 1.

    ``jitter`` (default True) waits a random time between half and all of each computed delay, so that callers
    failing together do not retry together; an error's ``retry_after_ms`` is waited as asked. ``should_retry`` is
    given a read-only ``RetryContext`` (key, task_id, tool, attempt, error) and decides whether a failed attempt is
    retried: True, False, or None for the default rule (retried unless the error says ``retryable=False``, or is a
    ``TypeError`` or ``CanonicalizationError``). It is never asked once the retries are used up, nor about an
    ``unguarded`` failure that may have reached the owner; an ``async def`` one needs ``acall``; one that raises
    ends the call with its error, the key released.

    ``on_event`` is told of every call's progress, synchronously, as a read-only ``HarnessEvent`` (``executed``,
    ``replayed``, ``waited``, ``retried``, ``taken_over``, ``outcome_unknown``, ``resolved``, ``failed``); a hook
    that raises is warned about (``IdemkeyWarning``) and otherwise ignored, so that logging never breaks a call.

    >>> harness = create_harness(store=sqlite_store("./ledger.db"))
    """
    options = _Options(
        store=store if store is not None else MemoryStore(clock),
        lease_ms=int(_number("lease_ms", lease_ms, exclusive=True)),
        retention_ms=int(_number("retention_ms", retention_ms, exclusive=True)),
        ledger_version=check_version(ledger_version),
        retries=int(_number("retries", retries)),
        min_delay_ms=_number("min_delay_ms", min_delay_ms),
        max_delay_ms=_number("max_delay_ms", max_delay_ms),
        factor=_number("factor", factor),
        jitter=check_jitter(jitter),
        should_retry=check_should_retry(should_retry),
        wait_timeout_ms=_number("wait_timeout_ms", wait_timeout_ms),
        wait_min_delay_ms=_number("wait_min_delay_ms", wait_min_delay_ms, exclusive=True),
        wait_max_delay_ms=_number("wait_max_delay_ms", wait_max_delay_ms, exclusive=True),
        key_secret=check_secret(key_secret, "key_secret"),
        clock=clock,
        on_event=check_on_event(on_event),
    )
    for method in ("claim", "get", "update", "delete", "list", "purge"):
        if not callable(getattr(options.store, method, None)):
            raise TypeError(f"store must have a {method}() method (a store from idemkey: sqlite_store, ...)")
    return Harness(options)
