"""The owner's Idempotency-Key rules that do not depend on a framework, as the TypeScript ``src/owner/`` has them:
reading the header, the request's fingerprint, the record's store key and data, the saved response's encoding and
the problem answers. Each produces exactly what the TypeScript side does, so that one store serves both.
"""

from __future__ import annotations

import base64
import hashlib
import json
import re
from dataclasses import dataclass
from typing import Any, Callable

from .exact_json import NOT_JSON, JsonRefusal, exact_json_text

MAX_KEY_LENGTH = 255
KEY_RULE = f"1 to {MAX_KEY_LENGTH} printable ASCII characters"
KEY_HEADER_RULE = f"Send one key of {KEY_RULE}, bare or as a quoted string."
HTTP_PREFIX = "http:"
SHOULD_RETRY = "x-should-retry"
ALWAYS_KEPT_HEADERS = ("content-type", "content-language", "content-disposition", "content-location", "location")

Headers = list[tuple[str, str]]


@dataclass(frozen=True)
class OwnerResponse:
    status: int
    headers: Headers
    body: bytes


# --- the header -------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class KeyHeader:
    """``key`` when the header holds one; otherwise ``reason`` (``missing`` or ``invalid``) and ``detail``."""

    key: str | None
    reason: str | None = None
    detail: str = ""


def key_problem(key: str) -> str | None:
    """What is wrong with a key, as a phrase after its name, or ``None`` (TypeScript ``keyProblem``)."""
    if key == "":
        return "is empty"
    if len(key) > MAX_KEY_LENGTH:
        return f"is {len(key)} characters long; the limit is {MAX_KEY_LENGTH}"
    for index, char in enumerate(key):
        if not " " <= char <= "~":
            return f"has a character that is not printable ASCII at position {index}"
    return None


def _invalid(detail: str) -> KeyHeader:
    return KeyHeader(None, "invalid", detail)


def parse_key_header(fields: list[str] | None) -> KeyHeader:
    """The ``Idempotency-Key`` field values of one request (TypeScript ``parseKeyHeader``): bare or an RFC 8941
    sf-string, sent once."""
    if not fields:
        return KeyHeader(None, "missing", "This request needs an Idempotency-Key header.")
    if len(fields) > 1:
        return _invalid("Send the Idempotency-Key header once; it was sent more than once.")
    value = fields[0].strip(" \t")
    parsed = _sf_string(value) if value.startswith('"') else _bare(value)
    if parsed.key is None:
        return parsed
    problem = key_problem(parsed.key)
    if problem == "is empty":
        return _invalid("The Idempotency-Key is empty; send a unique value such as a UUID.")
    if problem is not None:
        return _invalid(f"The Idempotency-Key {problem}.")
    return parsed


def _bare(value: str) -> KeyHeader:
    if "," in value:
        return _invalid(
            "The Idempotency-Key contains a comma: the header was sent more than once, or a key with a comma must be "
            'sent as a quoted string ("...").'
        )
    return KeyHeader(value)


def _sf_string(value: str) -> KeyHeader:
    key = ""
    i = 1
    while i < len(value):
        char = value[i]
        if char == "\\":
            i += 1
            following = value[i] if i < len(value) else ""
            if following not in ('"', "\\"):
                return _invalid('The quoted Idempotency-Key has a backslash that escapes neither \\ nor ".')
            key += following
        elif char == '"':
            rest = value[i + 1:].lstrip()
            if rest == "":
                return KeyHeader(key)
            if rest.startswith(","):
                return _invalid("Send the Idempotency-Key header once; it was sent more than once.")
            return _invalid("The quoted Idempotency-Key is followed by parameters or other text; send the key alone.")
        else:
            key += char
        i += 1
    return _invalid("The quoted Idempotency-Key has no closing quote.")


# --- the fingerprint and the record -----------------------------------------------------------------------------

_JSON_TYPE = re.compile(r"application/(?:[\w.+-]+\+)?json\s*(?:;|\Z)", re.IGNORECASE | re.ASCII)
_TAG = "idemkey-http-v2"


def _frame(text: str) -> str:
    return f"{len(text.encode('utf-8'))}:{text},"


def _js_json(value: Any) -> str:
    """``JSON.stringify`` of a value of strings, numbers, lists and dicts."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def request_fingerprint(method: str, target: str, content_type: str | None, body: bytes) -> str | JsonRefusal:
    """What a key is claimed for (TypeScript ``requestFingerprint``): SHA-256 over the method, the target (path and
    query) and the body, length-framed after the tag ``idemkey-http-v2``; a JSON body in its exact form."""
    kind, form = "raw", body
    if content_type is not None and _JSON_TYPE.match(content_type) and len(body) > 0:
        try:
            text: str | None = body.decode("utf-8")
        except UnicodeDecodeError:
            text = None
        # TextDecoder drops a leading byte order mark.
        exact = NOT_JSON if text is None else exact_json_text(text.removeprefix("\ufeff"))
        if exact is NOT_JSON:
            return JsonRefusal("the Content-Type says JSON, but the body is not JSON text in UTF-8", "")
        if isinstance(exact, JsonRefusal):
            return exact
        kind, form = "json", str(exact).encode("utf-8")
    head = f"{_frame(_TAG)}{_frame(method.upper())}{_frame(target)}{_frame(kind)}{len(form)}:"
    return hashlib.sha256(head.encode("utf-8") + form + b",").hexdigest()


def store_key(scope: str, key: str) -> str:
    """The record's key for (scope, key): ``http:`` and the SHA-256 of ``JSON.stringify([scope, key])``."""
    return HTTP_PREFIX + hashlib.sha256(_js_json([scope, key]).encode("utf-8")).hexdigest()


def record_data(scope: str, key: str, method: str, target: str) -> str:
    return _js_json({"scope": scope, "key": key, "method": method, "target": target})


def with_owner_event(data: str | None, event: dict[str, Any]) -> str | None:
    """The record's data with ``event`` added to its ``events`` (TypeScript ``withOwnerEvent``)."""
    try:
        parsed = json.loads("null" if data is None else data)
    except ValueError:
        return data
    if not isinstance(parsed, dict):
        return data
    events = parsed.get("events")
    return _js_json({**parsed, "events": [*(events if isinstance(events, list) else []), event]})


# --- the saved response ------------------------------------------------------------------------------------------


def encode_saved(response: OwnerResponse) -> str:
    try:
        body, encoding = response.body.decode("utf-8"), "utf8"
    except UnicodeDecodeError:
        body, encoding = base64.b64encode(response.body).decode("ascii"), "base64"
    headers = [[name, value] for name, value in response.headers]
    return _js_json({"v": 1, "status": response.status, "headers": headers, "body": body, "encoding": encoding})


def encode_not_saved(status: int, reason: str) -> str:
    return _js_json({"v": 1, "status": status, "notSaved": reason})


def decode_saved(text: str | None) -> OwnerResponse | int:
    """The saved response, or its status alone when it was not saved; raises on a format this version did not write."""
    saved = json.loads("null" if text is None else text)
    if not isinstance(saved, dict) or saved.get("v") != 1 or type(saved.get("status")) is not int:
        raise ValueError("the saved response is not in a format this version of idemkey wrote")
    if "notSaved" in saved:
        return int(saved["status"])
    body = saved["body"]
    raw = base64.b64decode(body) if saved.get("encoding") == "base64" else body.encode("utf-8")
    return OwnerResponse(saved["status"], [(name, value) for name, value in saved["headers"]], raw)


# --- key lookups -------------------------------------------------------------------------------------------------


def lookup_answer(key: str, record: Any, now: int) -> dict[str, Any]:
    """What an owner answers to "did key K happen?" about the record under the caller's (scope, key), or none
    (TypeScript ``lookupAnswer``): ``completed`` (with the saved status, and the body when it is text),
    ``in_flight``, ``outcome_unknown`` (also a pending record whose lease ran out) or ``unknown``."""
    if record is None:
        return {"key": key, "state": "unknown"}
    if record.state == "completed":
        saved = decode_saved(record.result)
        if not isinstance(saved, OwnerResponse):
            return {"key": key, "state": "completed", "status": saved}
        answer: dict[str, Any] = {"key": key, "state": "completed", "status": saved.status}
        try:
            answer["body"] = saved.body.decode("utf-8")
        except UnicodeDecodeError:
            pass
        for name, value in saved.headers:
            if name == "content-type":
                answer["contentType"] = value
                break
        return answer
    if record.state == "pending":
        lapsed = record.lease_until is not None and record.lease_until <= now
        return {"key": key, "state": "outcome_unknown" if lapsed else "in_flight"}
    return {"key": key, "state": "outcome_unknown"}


def lookup_response(answer: dict[str, Any]) -> OwnerResponse:
    # An answer about a key changes as its request goes on: never cached, never shared.
    headers = [("content-type", "application/json"), ("cache-control", "no-store")]
    return OwnerResponse(200, headers, _js_json(answer).encode("utf-8"))


# --- problems ----------------------------------------------------------------------------------------------------

_TITLES: dict[str, tuple[int, str, bool]] = {
    "key-missing": (400, "Idempotency-Key missing", True),
    "key-invalid": (400, "Idempotency-Key invalid", True),
    "key-in-flight": (409, "Request with this Idempotency-Key in progress", False),
    "key-reused": (422, "Idempotency-Key reused for a different request", True),
    "store-unavailable": (503, "Idempotency store unavailable", False),
    "response-not-saved": (500, "Response to this Idempotency-Key not saved", True),
    "body-too-large": (413, "Request body too large for an Idempotency-Key", True),
    "body-invalid": (400, "Request body has no single JSON value", True),
    "outcome-unknown": (409, "Outcome of the request with this Idempotency-Key unknown", True),
}
PROBLEM_TYPES = tuple(_TITLES)

Problem = Callable[..., OwnerResponse]


def problems(type_base: str | None = None, docs_url: str | None = None) -> Problem:
    """RFC 9457 ``application/problem+json`` answers (TypeScript ``problems``): ``type`` under ``type_base``, a
    ``Link`` to ``docs_url``, and ``x-should-retry`` saying whether the same request can get past it."""
    link = [] if docs_url is None else [("link", f'<{docs_url}>; rel="describedby"')]
    base = "https://idemkey.dev/problems/" if type_base is None else type_base

    def problem(name: str, detail: str, extra: Headers | None = None) -> OwnerResponse:
        status, title, final = _TITLES[name]
        headers = [("content-type", "application/problem+json"), (SHOULD_RETRY, "false" if final else "true")]
        body = _js_json({"type": base + name, "title": title, "status": status, "detail": detail})
        return OwnerResponse(status, headers + link + (extra or []), body.encode("utf-8"))

    return problem


def outcome_unknown(problem: Problem) -> OwnerResponse:
    return problem(
        "outcome-unknown",
        "An earlier request with this Idempotency-Key failed or was interrupted while it was being processed, and it "
        "may or may not have taken effect, so it will not be processed again. Check whether it took effect before "
        "sending it with a new key.",
    )
