"""idemkey for Python: the harness's half of once-only tool calls, on the same ledger as the TypeScript package."""

from .canonical import canonicalize
from .errors import (
    ApprovalDeniedError,
    CanonicalizationError,
    IdemkeyError,
    LedgerStateError,
    OutcomeUnknownError,
    OutcomeUnknownReason,
    SchemaVersionError,
    StoreError,
    ToolCallError,
    WaitTimeoutError,
)
from .key import canonical_call, idempotency_key, key_hash

__all__ = [
    "ApprovalDeniedError",
    "CanonicalizationError",
    "IdemkeyError",
    "LedgerStateError",
    "OutcomeUnknownError",
    "OutcomeUnknownReason",
    "SchemaVersionError",
    "StoreError",
    "ToolCallError",
    "WaitTimeoutError",
    "canonical_call",
    "canonicalize",
    "idempotency_key",
    "key_hash",
]
