"""The idempotency key of a tool call: the TypeScript package's ``idempotencyKey``, byte for byte."""

from __future__ import annotations

import hashlib
import hmac
from typing import Any, Union

from .canonical import DEFAULT_MAX_DEPTH, LONE_IN_VALUE, _SURROGATE, canonicalize_at, check_max_depth
from .errors import CanonicalizationError

Secret = Union[str, bytes]


def idempotency_key(
    task_id: str,
    tool: str,
    args: Any,
    *,
    step: str | int | float | None = None,
    secret: Secret | None = None,
    max_depth: int = DEFAULT_MAX_DEPTH,
) -> str:
    """Lowercase hex SHA-256 of the UTF-8 bytes of ``canonicalize([task_id, tool, args])``.

    With ``step``, the array is ``[task_id, tool, args, step]``; with ``secret`` (at least 16 bytes, shared by the
    fleet), HMAC-SHA256 under it instead of SHA-256. Raises ``TypeError`` when ``task_id`` or ``tool`` is not a
    non-empty string and ``CanonicalizationError`` (path ``$.args...``) when ``args`` is not strict JSON.

    >>> idempotency_key("task-8812", "openPullRequest", {"repo": "acme/api", "head": "fix-42", "base": "main",
    ...                 "title": "Fix #42"})
    '5c321e7c1feb505b1ce51c0c035057eb6e9612f31827d237ea130a1d9433fc6c'
    """
    text = canonical_call(task_id, tool, args, step=step, max_depth=max_depth)
    return key_hash(text, check_secret(secret))


def canonical_call(
    task_id: str,
    tool: str,
    args: Any,
    *,
    step: str | int | float | None = None,
    max_depth: int = DEFAULT_MAX_DEPTH,
) -> str:
    """The exact text ``idempotency_key`` hashes."""
    depth = check_max_depth(max_depth)
    parts = [_name("taskId", task_id), _name("tool", tool), canonicalize_at(args, "$.args", depth)]
    if step is not None:
        if isinstance(step, bool) or not isinstance(step, (str, int, float)):
            raise TypeError(f"step must be a string or a number, got {type(step).__name__}")
        parts.append(canonicalize_at(step, "$.step", depth))
    return "[" + ",".join(parts) + "]"


def key_hash(text: str | bytes, secret: Secret | None) -> str:
    """SHA-256 of ``text`` (a str's UTF-8 bytes), or HMAC-SHA256 under ``secret``, in lowercase hex."""
    data = text.encode("utf-8") if isinstance(text, str) else text
    if secret is None:
        return hashlib.sha256(data).hexdigest()
    raw = secret.encode("utf-8") if isinstance(secret, str) else secret
    return hmac.new(raw, data, hashlib.sha256).hexdigest()


def check_secret(secret: Any, name: str = "secret") -> Secret | None:
    if secret is None:
        return None
    size = len(secret.encode("utf-8", "surrogatepass")) if isinstance(secret, str) else (
        len(secret) if isinstance(secret, (bytes, bytearray)) else -1
    )
    if size < 16:
        raise TypeError(f"{name} must be a str or bytes of at least 16 bytes (a shared random secret)")
    return bytes(secret) if isinstance(secret, bytearray) else secret


def _name(field: str, value: Any) -> str:
    if not isinstance(value, str) or value == "":
        got = "an empty string" if value == "" else ("None" if value is None else type(value).__name__)
        raise TypeError(f"{'task_id' if field == 'taskId' else field} must be a non-empty string, got {got}")
    if _SURROGATE.search(value):
        raise CanonicalizationError(f"$.{field}", LONE_IN_VALUE)
    return canonicalize_at(value, f"$.{field}", 1)
