"""What ``on_event`` is told of a call's progress, as the TypeScript harness's ``onEvent`` (``HarnessEvent``)."""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import Any, Callable

from .errors import IdemkeyWarning

TYPES = ("executed", "replayed", "waited", "retried", "taken_over", "outcome_unknown", "resolved", "failed")


@dataclass(frozen=True)
class HarnessEvent:
    """One step of a call, read-only. ``type`` tells them apart; the fields after ``duration_ms`` are set only for
    the types that carry them (None otherwise):

    - ``executed``: the tool ran and returned; ``recorded`` False when the ledger could not record it (a read tool,
      or a claim lost), ``args_differ``.
    - ``replayed``: answered from the ledger without running the tool; ``args_differ``: the identity matched but the
      recorded call had other arguments (the recorded result is returned).
    - ``waited``: for the same call ``on`` ``"in_process"`` (``acall``), ``"pending"`` elsewhere, or
      ``"awaiting_approval"`` (a person's decision on a call a TypeScript harness parked).
    - ``retried``: an attempt failed with ``error`` and another follows after ``delay_ms``.
    - ``taken_over``: this call took over a claim whose lease had lapsed, ``previous_attempts`` recorded.
    - ``outcome_unknown``: ``error`` is the ``OutcomeUnknownError`` raised.
    - ``resolved``: an unknown outcome became known, ``how`` ``"reconcile"`` (the tool's reconcile), or through
      ``harness.resolve`` (``"result"``, ``"retry"``, ``by``).
    - ``failed``: the final attempt failed with ``error``; the claim was released.
    """

    type: str
    key: str
    task_id: str
    tool: str
    attempt: int
    """The attempt the event is about (for a replay, the attempts the ledger recorded)."""
    duration_ms: int
    """Since the call began (for ``resolve``: since the action began)."""
    recorded: bool | None = None
    args_differ: bool | None = None
    on: str | None = None
    delay_ms: float | None = None
    error: BaseException | None = None
    previous_attempts: int | None = None
    by: str | None = None
    how: str | None = None


def check_on_event(value: Any) -> Callable[[HarnessEvent], Any] | None:
    if value is not None and not callable(value):
        raise TypeError(f"on_event must be a function of a HarnessEvent (or None), got {value!r}")
    return value


def notify(hook: Callable[[HarnessEvent], Any], event: HarnessEvent) -> None:
    """Tells the hook, synchronously; one that raises is warned about (``IdemkeyWarning``) and otherwise ignored, so
    that logging never breaks a call."""
    try:
        hook(event)
    except Exception as error:  # noqa: BLE001 - the hook's failure is not the call's
        warnings.warn(f'on_event raised on a "{event.type}" event: {error!r}', IdemkeyWarning, stacklevel=2)
