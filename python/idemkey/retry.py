"""The retry policy of a failed attempt, as the TypeScript ``src/harness/retry.ts``: which failures are retried within
one call (``should_retry``, else the default rule) and how long the pause before the next attempt is."""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Any, Callable

from .errors import CanonicalizationError


@dataclass(frozen=True)
class RetryContext:
    """What ``should_retry`` is shown about a failed attempt (the TypeScript ``RetryContext``), read-only."""

    key: str
    task_id: str
    tool: str
    attempt: int
    """The attempt that failed, counted as ``ctx.attempt`` is."""
    error: BaseException


def default_retryable(error: BaseException) -> bool:
    """Retried unless the error says ``retryable=False``, or it is a ``TypeError`` or a ``CanonicalizationError``
    (a bug or bad arguments: the same key and arguments fail the same way again) without ``retryable=True``."""
    hint = getattr(error, "retryable", None)
    if hint is not None:
        return bool(hint)
    return not isinstance(error, (TypeError, CanonicalizationError))


def retry_delay(
    failures: int, error: BaseException, *, min_delay_ms: float, max_delay_ms: float, factor: float, jitter: bool
) -> float:
    """The pause before the retry that follows the ``failures``-th failure: the error's ``retry_after_ms`` (what the
    owner asked for, capped at ``max_delay_ms``, never jittered), else ``min_delay_ms * factor ** (failures - 1)``
    capped at ``max_delay_ms``, times a random factor in [0.5, 1] with ``jitter``."""
    hinted = getattr(error, "retry_after_ms", None)
    if isinstance(hinted, (int, float)) and not isinstance(hinted, bool):
        return min(max_delay_ms, hinted)
    delay = min(max_delay_ms, min_delay_ms * factor ** (failures - 1))
    return delay * (0.5 + random.random() / 2) if jitter else delay


def check_jitter(value: Any) -> bool:
    if not isinstance(value, bool):
        raise TypeError(f"jitter must be a bool, got {value!r}")
    return value


def check_should_retry(value: Any) -> Callable[[RetryContext], Any] | None:
    if value is not None and not callable(value):
        raise TypeError(f"should_retry must be a function of a RetryContext (or None), got {value!r}")
    return value
