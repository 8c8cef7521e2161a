"""A ledger record's ``data``, formats 1 and 2, written and read as docs/ledger-format.md specifies (the TypeScript
``src/harness/ledger.ts`` and ``record/``). The one module that makes, changes and reads it."""

from __future__ import annotations

import json
from dataclasses import dataclass, field, replace
from typing import Any

from .canonical import canonicalize, stringify
from .errors import LedgerStateError
from .store import StoreRecord

PREFIX = "call:"
MAX_EVENTS = 50
READS = (1, 2)
_KNOWN = {"v", "taskId", "tool", "effect", "step", "argsHash", "args", "events"}


@dataclass(frozen=True)
class LedgerCall:
    task_id: str
    tool: str
    effect: str
    args_hash: str
    args_text: str
    """The canonical JSON text (RFC 8785) of the arguments, whichever format held them."""
    events: list[dict[str, Any]] = field(default_factory=list)
    step: str | int | float | None = None
    extra: dict[str, Any] | None = None
    """Members a newer writer added: written back unchanged."""

    def args(self) -> Any:
        return json.loads(self.args_text)


@dataclass(frozen=True)
class LedgerEntry:
    """One call as the ledger knows it, parsed: what ``harness.get`` and ``harness.list`` return."""

    key: str
    state: str
    task_id: str
    tool: str
    effect: str
    args_hash: str
    args: Any
    attempts: int
    lease_until: int | None
    events: list[dict[str, Any]]
    created_at: int
    updated_at: int
    expires_at: int
    step: str | int | float | None = None
    result: Any = None


def check_version(value: Any) -> int:
    if value not in (1, 2) or isinstance(value, bool):
        raise TypeError(f"ledger_version must be 1 or 2, got {value!r}")
    return int(value)


def encode(call: LedgerCall, version: int) -> str:
    """The record's data in format ``version``; member order as the TypeScript writer's."""
    if version == 1:
        data: dict[str, Any] = {
            "v": 1, "taskId": call.task_id, "tool": call.tool, "effect": call.effect, "argsHash": call.args_hash,
            "args": call.args_text, "events": call.events,
        }
        if call.step is not None:
            data["step"] = call.step
        for name, value in (call.extra or {}).items():
            data[name] = value
        return stringify(data)
    head: dict[str, Any] = {"v": 2, "taskId": call.task_id, "tool": call.tool, "effect": call.effect}
    if call.step is not None:
        head["step"] = call.step
    head["argsHash"] = call.args_hash
    head["events"] = call.events
    for name, value in (call.extra or {}).items():
        head[name] = value
    # The canonical text spliced in as it is, last.
    return stringify(head)[:-1] + ',"args":' + call.args_text + "}"


def decode(record: StoreRecord) -> LedgerCall:
    key = record.key[len(PREFIX):]
    try:
        data = json.loads(record.data if record.data is not None else "null")
    except ValueError as error:
        raise LedgerStateError(key, "unreadable", str(error)) from error
    v = data.get("v") if isinstance(data, dict) else None
    shaped = (
        isinstance(data, dict)
        and isinstance(data.get("taskId"), str)
        and isinstance(data.get("events"), list)
        and ((v == 1 and isinstance(data.get("args"), str)) or (v == 2 and "args" in data))
    )
    if not shaped:
        if isinstance(v, int) and not isinstance(v, bool) and v > max(READS):
            raise LedgerStateError(key, "newer", f"format {v}; this idemkey reads formats 1 and 2: upgrade it")
        raise LedgerStateError(key, "unrecognised", "not a ledger record in format 1 or 2")
    assert isinstance(data, dict)
    args_text = data["args"] if v == 1 else canonicalize(data["args"])
    extra = {name: value for name, value in data.items() if name not in _KNOWN} or None
    return LedgerCall(
        task_id=data["taskId"], tool=data.get("tool"), effect=data.get("effect"), args_hash=data.get("argsHash"),
        args_text=args_text, events=data["events"], step=data.get("step"), extra=extra,
    )


def add_event(call: LedgerCall, event: dict[str, Any]) -> LedgerCall:
    return replace(call, events=(call.events + [event])[-MAX_EVENTS:])


def last_event(call: LedgerCall, kind: str) -> dict[str, Any] | None:
    for event in reversed(call.events):
        if event.get("type") == kind:
            return event
    return None


def to_entry(record: StoreRecord) -> LedgerEntry:
    data = decode(record)
    result = None
    if record.state == "completed" and record.result not in (None, ""):
        result = json.loads(record.result)  # type: ignore[arg-type]
    return LedgerEntry(
        key=record.key[len(PREFIX):], state=record.state, task_id=data.task_id, tool=data.tool, effect=data.effect,
        args_hash=data.args_hash, args=data.args(), attempts=record.attempts, lease_until=record.lease_until,
        events=data.events, created_at=record.created_at, updated_at=record.updated_at, expires_at=record.expires_at,
        step=data.step, result=result,
    )
