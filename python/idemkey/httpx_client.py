"""Forwarding the key with httpx: the owner dedupes on the ``Idempotency-Key`` header (the TypeScript
``idemkey/fetch``'s header), which the harness derived (``ctx.idempotency_key``)."""

from __future__ import annotations

from typing import Any

HEADER = "Idempotency-Key"


def keyed_request(client: Any, method: str, url: str, key: str, **kwargs: Any) -> Any:
    """``client.request(method, url, ...)`` (an ``httpx.Client``) with ``Idempotency-Key: key``; ``await`` it for an
    ``httpx.AsyncClient``. A header of that name the caller passed is replaced, never sent twice.

    >>> def open_pr(args, ctx):
    ...     return keyed_request(http, "POST", "/pulls", ctx.idempotency_key, json=args).json()
    """
    if not isinstance(key, str) or key == "":
        raise TypeError(f"keyed_request: key must be a non-empty string, got {key!r}")
    headers = {name: value for name, value in dict(kwargs.pop("headers", None) or {}).items()
               if name.lower() != HEADER.lower()}
    headers[HEADER] = key
    return client.request(method, url, headers=headers, **kwargs)
