"""The error family, one base class and the subclasses a caller tells apart (the TypeScript package's names)."""

from __future__ import annotations

import json
from typing import Any


class IdemkeyError(Exception):
    """Base of every error idemkey raises on purpose."""


class CanonicalizationError(IdemkeyError, ValueError):
    """A value cannot be put in RFC 8785 canonical form without losing or confusing data.

    ``path`` points at the value at fault (``$.args.items[3]``) and ``reason`` says what is wrong with it, in the
    same words as the TypeScript package's ``CanonicalizationError``.
    """

    def __init__(self, path: str, reason: str) -> None:
        super().__init__(f"{path}: {reason}")
        self.path = path
        self.reason = reason


class OutcomeUnknownReason:
    """Why a call's outcome is unknown, as the model is told it (the TypeScript ``OutcomeUnknownReason``)."""

    interrupted = "interrupted"
    unclassified_error = "unclassified_error"
    unrecordable_result = "unrecordable_result"
    owner_unknown = "owner_unknown"
    expired = "expired"


class OutcomeUnknownError(IdemkeyError):
    """Nobody who knows can say whether an ``unguarded`` call took effect: it is never repeated until resolved."""

    def __init__(
        self,
        key: str,
        tool: str,
        why: str,
        reason: str = OutcomeUnknownReason.interrupted,
        answer: str | None = None,
    ) -> None:
        super().__init__(
            f'The outcome of tool "{tool}" (key {key}) is unknown: {why}. It will not run again for this key '
            "until someone resolves it (harness.resolve(key, ...))."
        )
        self.key = key
        self.tool = tool
        self.why = why
        self.reason = reason
        self.answer = answer


class ApprovalDeniedError(IdemkeyError):
    def __init__(self, key: str, reason: str, by: str | None = None) -> None:
        super().__init__(f"The call {key} was denied{'' if by is None else f' by {by}'}: {reason}")
        self.key = key
        self.reason = reason
        self.by = by


class WaitTimeoutError(IdemkeyError):
    """Waited longer than ``wait_timeout_ms`` for the same call running elsewhere."""

    def __init__(self, key: str, state: str, waited_ms: float) -> None:
        super().__init__(
            f"Gave up after {round(waited_ms)} ms waiting for the call {key}, which is {state} elsewhere; "
            "call again later"
        )
        self.key = key
        self.state = state
        self.waited_ms = waited_ms


class LedgerStateError(IdemkeyError):
    """A ledger record this package cannot read (a newer format, or one that is not a ledger record)."""

    def __init__(self, key: str, reason: str, detail: str = "") -> None:
        super().__init__(f"The ledger record of {key} cannot be read ({reason}){': ' + detail if detail else ''}")
        self.key = key
        self.reason = reason


class StoreError(IdemkeyError):
    """The store failed; ``cause`` (``__cause__``) is the driver's error."""

    def __init__(self, driver: str, operation: str, key: str | None, cause: BaseException | None = None) -> None:
        where = "" if key is None else f" of {key}"
        super().__init__(f"{driver}: {operation}{where} failed: {cause!r}")
        self.driver = driver
        self.operation = operation
        self.key = key
        self.__cause__ = cause


class SchemaVersionError(IdemkeyError):
    def __init__(self, table: str, found: int, supported: int) -> None:
        super().__init__(
            f'The table "{table}" is at schema version {found}, newer than the {supported} this idemkey knows; '
            "upgrade idemkey"
        )
        self.table = table
        self.found = found
        self.supported = supported


class ToolCallError(IdemkeyError):
    """An error a tool raises to steer the harness: ``retryable``, ``retry_after_ms``, ``no_effect``."""

    def __init__(
        self,
        message: str,
        *,
        retryable: bool | None = None,
        retry_after_ms: float | None = None,
        no_effect: bool | None = None,
    ) -> None:
        super().__init__(message)
        self.retryable = retryable
        self.retry_after_ms = retry_after_ms
        self.no_effect = no_effect


class LeaseLostError(IdemkeyError):
    """The middleware's lease on a key lapsed (taken over) before its handler's response was saved."""

    def __init__(self, key: str) -> None:
        super().__init__(
            f"The lease on Idempotency-Key {json.dumps(key)} lapsed before its handler finished, so its response was "
            "not saved and another request may have run it as well; raise lease_ms or check the store."
        )
        self.key = key


class ResponseTooLargeError(IdemkeyError):
    """A response larger than ``max_response_bytes``: sent, not saved; later retries are told so."""

    def __init__(self, key: str, status: int, limit: int) -> None:
        super().__init__(
            f"The {status} response to Idempotency-Key {json.dumps(key)} is larger than max_response_bytes "
            f"({limit} bytes), so it was not saved and cannot be replayed; raise max_response_bytes or answer with less."
        )
        self.key = key
        self.status = status
        self.limit = limit


class IdemkeyWarning(UserWarning):
    """What a failure nobody else is told about becomes when no ``on_error`` hook takes it (or the hook raises)."""


def attribute(error: BaseException, name: str) -> Any:
    return getattr(error, name, None)
