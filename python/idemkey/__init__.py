"""idemkey for Python: the harness's half of once-only tool calls, on the same ledger as the TypeScript package."""

from .canonical import canonicalize
from .errors import (
    ApprovalDeniedError,
    CanonicalizationError,
    IdemkeyError,
    IdemkeyWarning,
    LedgerStateError,
    OutcomeUnknownError,
    OutcomeUnknownReason,
    SchemaVersionError,
    StoreError,
    ToolCallError,
    WaitTimeoutError,
)
from .events import HarnessEvent
from .harness import CallOutcome, Harness, Tool, ToolContext, create_harness, define_tool
from .key import canonical_call, idempotency_key, key_hash
from .ledger import LedgerEntry
from .retry import RetryContext
from .sqlite import sqlite_store
from .store import MemoryStore, memory_store

__all__ = [
    "CallOutcome",
    "Harness",
    "HarnessEvent",
    "LedgerEntry",
    "MemoryStore",
    "RetryContext",
    "Tool",
    "ToolContext",
    "create_harness",
    "define_tool",
    "memory_store",
    "sqlite_store",
    "ApprovalDeniedError",
    "CanonicalizationError",
    "IdemkeyError",
    "IdemkeyWarning",
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
