"""``IdempotencyMiddleware``: the TypeScript ``idempotency()`` middleware (docs/owner/middleware.md) as pure ASGI, for
Starlette, FastAPI or any ASGI app, on the same records: a request first served by a TypeScript service replays
from a Python one on the same store, and the reverse.

Plain ASGI, no framework import: the request body is read (at most ``max_body_bytes``) and handed on to the app;
the response passes through to the client as the app sends it (streaming included), copied up to
``max_response_bytes``, and its last message is held until the save's first try, so that a client that has its
answer finds it saved. Store calls run in a worker thread, as the harness's ``acall`` runs them.
"""

from __future__ import annotations

import asyncio
import inspect
import re
import uuid
import warnings
from dataclasses import dataclass
from typing import Any, Awaitable, Callable

from .errors import IdemkeyWarning
from .exact_json import JsonRefusal
from .owner import (
    ALWAYS_KEPT_HEADERS,
    KEY_HEADER_RULE,
    SHOULD_RETRY,
    OwnerResponse,
    decode_saved,
    lookup_answer,
    lookup_response,
    outcome_unknown,
    parse_key_header,
    problems,
    record_data,
    request_fingerprint,
    store_key,
)
from .owner_hold import HoldOptions, OwnerHold, SaveOutcome
from .store import ClaimInput, StoreRecord, now_ms

__all__ = [
    "IdempotencyErrorEvent",
    "IdempotencyMiddleware",
    "SINGLE_TENANT",
    "SaveOutcome",
    "mark_no_effect",
    "request_fingerprint",
    "store_key",
]

SINGLE_TENANT = "single-tenant"
"""The ``scope`` of a service with one caller, or whose callers all trust one another: one global scope."""

_STORE_METHODS = ("claim", "get", "update", "delete", "purge")
_TOKEN = re.compile(r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+\Z")
_NULL_BODY = {101, 103, 204, 205, 304}
_NO_EFFECT = "idemkey.no_effect"

Scope = dict[str, Any]
Receive = Callable[[], Awaitable[dict[str, Any]]]
Send = Callable[[dict[str, Any]], Awaitable[None]]


@dataclass(frozen=True)
class IdempotencyErrorEvent:
    """A failure the client cannot be told about: ``phase`` is ``claim``, ``renew``, ``save`` or ``release``."""

    error: BaseException
    phase: str
    scope: str
    key: str


def mark_no_effect(target: Any) -> None:
    """Says that the handler answering this request did nothing, so its key is released and a retry runs it again.
    ``target`` is the Starlette/FastAPI ``Request`` or the ASGI scope. Without it, whatever the handler answers is
    saved and replayed, and a handler that raises leaves the key outcome unknown (unless its error has
    ``no_effect = True``)."""
    scope = getattr(target, "scope", target)
    marker = scope.get(_NO_EFFECT) if isinstance(scope, dict) else None
    if not isinstance(marker, list):
        raise TypeError("mark_no_effect(target) needs the Request (or ASGI scope) of a request the middleware covers")
    marker.append(True)


def _positive_int(name: str, value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise TypeError(f"options.{name} must be a positive integer, got {value!r}")
    return value


def _names(name: str, value: Any, non_empty: bool) -> list[str]:
    if isinstance(value, str) or not isinstance(value, (list, tuple)) or (non_empty and not value):
        raise TypeError(f"options.{name} must be {'a non-empty' if non_empty else 'a'} list of names")
    for index, item in enumerate(value):
        if not isinstance(item, str) or not _TOKEN.match(item):
            raise TypeError(f'options.{name}[{index}] must be an HTTP token such as "POST", got {item!r}')
    return list(value)


def _url(name: str, value: Any) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str) or not re.match(r"[A-Za-z][A-Za-z0-9+.-]*://\S+\Z", value) or re.search(
        r'[<>"]', value
    ):
        raise TypeError(f'options.{name} must be an absolute URL such as "https://example.com/docs/", got {value!r}')
    return value


class IdempotencyMiddleware:
    """ASGI middleware that makes POST and PATCH requests with an ``Idempotency-Key`` take effect once, with the
    TypeScript middleware's options (in snake case) and answers: a retry gets the saved response with
    ``Idempotent-Replayed: true``, a concurrent duplicate 409, the key reused for another request 422, problems as
    ``application/problem+json``. ``scope`` is required: ``(asgi_scope) -> caller id`` (sync or async), or
    ``"single-tenant"``.

    ``app.add_middleware(IdempotencyMiddleware, store=sqlite_store("idem.db"), scope=account_of)`` in Starlette and
    FastAPI; mount it after authentication, so that ``scope`` can name the caller.
    """

    def __init__(
        self,
        app: Any,
        *,
        store: Any,
        scope: Callable[[Scope], str | Awaitable[str]] | str | None = None,
        methods: list[str] | tuple[str, ...] = ("POST", "PATCH"),
        required: bool = True,
        lease_ms: int = 30_000,
        retention_ms: int = 24 * 60 * 60 * 1000,
        max_response_bytes: int = 1024 * 1024,
        max_body_bytes: int = 1024 * 1024,
        problem_type_base: str | None = None,
        docs_url: str | None = None,
        keep_headers: list[str] | tuple[str, ...] = (),
        save: Callable[[SaveOutcome], bool | None] | None = None,
        rerun_after_takeover: bool = False,
        save_retry_ms: int | None = None,
        retry_after_seconds: int = 1,
        on_error: Callable[[IdempotencyErrorEvent], None] | None = None,
        lookup: str | None = None,
    ) -> None:
        if any(not callable(getattr(store, method, None)) for method in _STORE_METHODS):
            raise TypeError(
                "options.store must be an idemkey store (memory_store(), sqlite_store(), ...) with claim, get, "
                "update, delete and purge"
            )
        if scope is None:
            raise TypeError(
                "options.scope is required: a function naming the authenticated caller, scope=lambda s: account_id, "
                "so that callers cannot replay or block one another's keys; or scope=\"single-tenant\" for one "
                "global scope"
            )
        if not callable(scope) and scope != SINGLE_TENANT:
            raise TypeError(f'options.scope must be a function (scope) -> str or "single-tenant", got {scope!r}')
        for name, flag in (("required", required), ("rerun_after_takeover", rerun_after_takeover)):
            if not isinstance(flag, bool):
                raise TypeError(f"options.{name} must be a bool, got {type(flag).__name__}")
        for name, hook in (("save", save), ("on_error", on_error)):
            if hook is not None and not callable(hook):
                raise TypeError(f"options.{name} must be a function, got {type(hook).__name__}")
        if lookup is not None and (not isinstance(lookup, str) or not re.match(r"/[^?#\s]*\Z", lookup)):
            raise TypeError(f'options.lookup must be a path such as "/v1/idempotency-keys" (no query), got {lookup!r}')
        self._lookup = lookup
        self._app = app
        self._store = store
        self._scope: Callable[[Scope], Any] = (lambda s: "") if scope == SINGLE_TENANT else scope  # type: ignore
        self._methods = {m.upper() for m in _names("methods", methods, True)}
        self._required = required
        self._lease_ms = _positive_int("lease_ms", lease_ms)
        self._retention_ms = _positive_int("retention_ms", retention_ms)
        self._max_response_bytes = _positive_int("max_response_bytes", max_response_bytes)
        self._max_body_bytes = _positive_int("max_body_bytes", max_body_bytes)
        self._problem = problems(_url("problem_type_base", problem_type_base), _url("docs_url", docs_url))
        self._keep = {*ALWAYS_KEPT_HEADERS, *(h.lower() for h in _names("keep_headers", keep_headers, False))}
        self._save = save
        self._rerun = rerun_after_takeover
        self._save_retry_ms = _positive_int("save_retry_ms", 2 * self._lease_ms if save_retry_ms is None else
                                            save_retry_ms)
        self._retry_after = ("retry-after", str(_positive_int("retry_after_seconds", retry_after_seconds)))
        self._on_error = on_error
        self._hold_options = HoldOptions(
            call=self._call, report=self._report, lease_ms=self._lease_ms, retention_ms=self._retention_ms,
            save_retry_ms=self._save_retry_ms, max_response_bytes=self._max_response_bytes,
            rerun_after_takeover=self._rerun, save=self._save, background=set())

    def purge(self, *, batch_size: int = 1000) -> int:
        """Removes every expired record of the store (harness records included: only expired records go)."""
        removed = 0
        while True:
            gone = self._store.purge(batch_size)
            removed += gone
            if gone < batch_size:
                return removed

    async def _call(self, method: str, *args: Any) -> Any:
        return await asyncio.to_thread(getattr(self._store, method), *args)

    def _report(self, phase: str, error: BaseException, scope: str, key: str) -> None:
        event = IdempotencyErrorEvent(error, phase, scope, key)
        if self._on_error is not None:
            try:
                self._on_error(event)
                return
            except Exception:
                pass
        warnings.warn(f"{phase} failed for Idempotency-Key {key!r} (scope {scope!r}): {error!r}", IdemkeyWarning,
                      stacklevel=2)

    # --- one request ---------------------------------------------------------------------------------------------

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        method = str(scope.get("method", "")).upper() if scope.get("type") == "http" else ""
        if self._lookup is not None and method == "GET" and scope.get("path") == self._lookup:
            await _write(send, await self._look_up(scope))
            return
        if method not in self._methods:
            await self._app(scope, receive, send)
            return
        header = parse_key_header(_fields(scope))
        if header.key is None:
            if header.reason == "missing":
                if not self._required:
                    await self._app(scope, receive, send)
                    return
                await _write(send, self._problem(
                    "key-missing",
                    "This request needs an Idempotency-Key header: send a unique value (such as a UUID) for each "
                    "operation, and the same value when you retry it."))
                return
            await _write(send, self._problem("key-invalid", f"{header.detail} {KEY_HEADER_RULE}"))
            return
        key = header.key
        declared = _header(scope, b"content-length")
        if declared is not None and declared.isdigit() and int(declared) > self._max_body_bytes:
            await _write(send, self._too_large())
            return
        caller = await self._caller(scope)
        body = await _read_body(receive, self._max_body_bytes)
        if body is _GONE:
            return  # the client left before its body arrived: nothing was claimed, nobody is waiting for an answer
        if body is None:
            await _write(send, self._too_large())
            return
        assert isinstance(body, bytes)
        target = _target(scope)
        fingerprint = request_fingerprint(method, target, _header(scope, b"content-type"), body)
        if isinstance(fingerprint, JsonRefusal):
            where = "" if fingerprint.path == "" else f" (at {fingerprint.path})"
            await _write(send, self._problem(
                "body-invalid",
                f"The JSON body cannot be told apart from another request: {fingerprint.refused}{where}. It was not "
                "processed and the key was not used; send it as JSON with one value per member name."))
            return
        record_key = store_key(caller, key)
        token = str(uuid.uuid4())
        claim = ClaimInput(fingerprint, token, self._lease_ms, self._lease_ms + self._retention_ms, "pending",
                           record_data(caller, key, method, target))
        try:
            claimed = await self._call("claim", record_key, claim)
        except Exception as error:
            self._report("claim", error, caller, key)
            await _write(send, self._unavailable())
            return
        if claimed.status != "exists":
            hold = OwnerHold(self._hold_options, record_key, token, fingerprint, caller, key)
            if claimed.status == "taken_over" and not self._rerun:
                # The handler of the request taken over may have run: the key is recorded outcome unknown, keeping
                # that request's token so that its late save may still settle it; nothing runs twice.
                assert claimed.previous is not None
                await hold.mark_unknown(claimed.previous)
                await _write(send, outcome_unknown(self._problem))
                return
            hold.start()
            await self._run(scope, body, receive, send, hold)
            return
        await _write(send, self._answer(claimed.record, fingerprint, caller, key))

    async def _look_up(self, scope: Scope) -> OwnerResponse:
        """A key lookup (option ``lookup``): what this server knows of the key, in the caller's own scope only."""
        header = parse_key_header(_fields(scope))
        if header.key is None:
            if header.reason == "missing":
                return self._problem(
                    "key-missing",
                    "A key lookup needs the Idempotency-Key header: send the key whose outcome you want to know.")
            return self._problem("key-invalid", f"{header.detail} {KEY_HEADER_RULE}")
        caller = await self._caller(scope)
        try:
            record = await self._call("get", store_key(caller, header.key))
            return lookup_response(lookup_answer(header.key, record, now_ms()))
        except Exception as error:
            self._report("claim", error, caller, header.key)
            return self._unavailable()

    async def _caller(self, scope: Scope) -> str:
        caller = self._scope(scope)
        if inspect.isawaitable(caller):
            caller = await caller
        if not isinstance(caller, str):
            raise TypeError(f"options.scope must return a string, got {type(caller).__name__}")
        return caller

    def _answer(self, record: StoreRecord, fingerprint: str, caller: str, key: str) -> OwnerResponse:
        if record.fingerprint != fingerprint:
            return self._problem(
                "key-reused",
                "This Idempotency-Key was already used for a different request (another method, path or body). "
                "Retry the original request unchanged, or send this one with a new key.")
        if record.state == "outcome_unknown":
            return outcome_unknown(self._problem)
        if record.state != "completed":
            return self._problem(
                "key-in-flight",
                "A request with this Idempotency-Key is still being processed. Retry the same request with the same "
                "key after the Retry-After delay to get its result.", [self._retry_after])
        try:
            saved = decode_saved(record.result)
        except (ValueError, KeyError, TypeError) as error:
            self._report("claim", error, caller, key)
            return self._unavailable()
        response = saved if isinstance(saved, OwnerResponse) else self._problem(
            "response-not-saved",
            f"The request with this Idempotency-Key was processed (status {saved}), but its response was too large "
            "to be saved, so it cannot be replayed. Do not send it again: look up its result instead.")
        # A replay is final: the same answer comes back however often it is asked for.
        headers = [h for h in response.headers if h[0] != SHOULD_RETRY]
        return OwnerResponse(response.status, headers + [("idempotent-replayed", "true"), (SHOULD_RETRY, "false")],
                             response.body)

    async def _run(self, scope: Scope, body: bytes, receive: Receive, send: Send, hold: OwnerHold) -> None:
        marker: list[bool] = []
        scope = {**scope, _NO_EFFECT: marker}
        delivered = False

        async def replay_body() -> dict[str, Any]:
            nonlocal delivered
            if not delivered:
                delivered = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()

        status, headers, chunks, size, done = 500, [], [], 0, False

        async def capture(message: dict[str, Any]) -> None:
            nonlocal status, headers, size, done
            if message["type"] == "http.response.start":
                status = message["status"]
                headers = [(n.decode("latin-1").lower(), v.decode("latin-1")) for n, v in message.get("headers", ())]
            elif message["type"] == "http.response.body" and not done:
                chunk = message.get("body", b"")
                size += len(chunk)
                if size <= self._max_response_bytes:
                    chunks.append(chunk)
                if not message.get("more_body", False):
                    done = True
                    kept = [(n, v) for n, v in headers if n in self._keep]
                    saved = b"".join(chunks) if size <= self._max_response_bytes else None
                    await hold.finish(status, kept, saved, False, None, bool(marker))
            await send(message)

        try:
            await self._app(scope, replay_body, capture)
        except BaseException as error:
            if not done:
                await hold.finish(500, [], b"", True, error, bool(marker))
            raise
        if not done:
            # The app returned without finishing its response: nobody can say what it did.
            await hold.finish(status, [], b"", True, None, bool(marker))

    def _too_large(self) -> OwnerResponse:
        return self._problem(
            "body-too-large",
            f"The request body is longer than the {self._max_body_bytes} bytes this server reads for a request with "
            "an Idempotency-Key; it was not processed and the key was not used. Send a smaller body.")

    def _unavailable(self) -> OwnerResponse:
        return self._problem(
            "store-unavailable",
            "The server could not check this Idempotency-Key, so it did not process the request. Retry with the same "
            "key after the Retry-After delay.", [self._retry_after])


# --- ASGI plumbing -----------------------------------------------------------------------------------------------


def _fields(scope: Scope) -> list[str]:
    """The ``Idempotency-Key`` field values, one per field line."""
    return [value.decode("latin-1") for name, value in scope.get("headers", ()) if name.lower() == b"idempotency-key"]


def _header(scope: Scope, name: bytes) -> str | None:
    for field, value in scope.get("headers", ()):
        if field.lower() == name:
            return str(value.decode("latin-1"))
    return None


def _target(scope: Scope) -> str:
    """The path and query as the client sent them."""
    raw = scope.get("raw_path")
    path = raw.decode("latin-1") if raw else scope.get("root_path", "") + scope.get("path", "/")
    query = scope.get("query_string", b"")
    return f"{path}?{query.decode('latin-1')}" if query else path


_GONE = object()


async def _read_body(receive: Receive, limit: int) -> bytes | object | None:
    """The whole body, ``None`` once it passes ``limit`` (the rest is left unread), or ``_GONE`` when the client
    disconnected before it was all there."""
    chunks: list[bytes] = []
    total = 0
    while True:
        message = await receive()
        if message["type"] != "http.request":
            return _GONE
        chunk = message.get("body", b"")
        total += len(chunk)
        if total > limit:
            return None
        chunks.append(chunk)
        if not message.get("more_body", False):
            return b"".join(chunks)


async def _write(send: Send, response: OwnerResponse) -> None:
    body = b"" if response.status in _NULL_BODY else response.body
    headers = [(n.encode("latin-1"), v.encode("latin-1")) for n, v in response.headers]
    if response.status not in _NULL_BODY and all(name != b"content-length" for name, _ in headers):
        headers.append((b"content-length", str(len(body)).encode()))
    await send({"type": "http.response.start", "status": response.status, "headers": headers})
    await send({"type": "http.response.body", "body": body})
