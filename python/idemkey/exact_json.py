"""The form a JSON request body is fingerprinted in (the TypeScript ``src/owner/exact-json.ts``): one text per JSON
value, so that two bodies share it exactly when they are the same value, and a Python and a TypeScript owner give
one request the same fingerprint.

Member order and whitespace do not count; a number is its exact decimal value (``1``, ``1.0`` and ``10e-1`` are
``1e0``); members are sorted by their names' UTF-16 code units; strings are written as ``JSON.stringify`` writes
them. Refused, with a JSON Pointer to where: duplicate member names, lone surrogates, nesting deeper than
``MAX_DEPTH``.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

MAX_DEPTH = 1000

_PLAIN_INTEGER = re.compile(r"-?(?:0|[1-9][0-9]*)\Z")
_NUMBER = re.compile(r"(-?)(0|[1-9][0-9]*)(?:\.([0-9]+))?(?:[eE]([+-]?[0-9]+))?\Z")
_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


@dataclass(frozen=True)
class JsonRefusal:
    refused: str
    path: str


class NotJson:
    """A syntax error: the caller decides what that means."""


NOT_JSON = NotJson()


class _Number:
    __slots__ = ("exact",)

    def __init__(self, exact: str) -> None:
        self.exact = exact


class _Members(list):  # type: ignore[type-arg]
    """An object's (name, value) pairs as the parser met them, duplicates kept."""


class _Refused(Exception):
    def __init__(self, message: str, path: str) -> None:
        super().__init__(message)
        self.path = path


def exact_number(text: str) -> str:
    """A JSON number's text in exact form: ``<sign><digits>e<exponent>``, no leading or trailing zero digits."""
    if _PLAIN_INTEGER.match(text):
        if text in ("0", "-0"):
            return "0"
        trimmed = text.rstrip("0")
        return f"{trimmed}e{len(text) - len(trimmed)}"
    match = _NUMBER.match(text)
    if match is None:
        raise ValueError(f"not a JSON number: {text!r}")
    sign, whole, fraction, exponent = match.group(1), match.group(2), match.group(3) or "", match.group(4) or "0"
    digits = (whole + fraction).lstrip("0")
    if digits == "":
        return "0"
    trimmed = digits.rstrip("0")
    shift = len(digits) - len(trimmed) - len(fraction)
    # Python's integers are exact at any size, as the TypeScript side's BigInt is past 15 digits.
    return f"{sign}{trimmed}e{int(exponent) + shift}"


def _constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


_DECODER = json.JSONDecoder(
    object_pairs_hook=_Members,
    parse_int=lambda text: _Number(exact_number(text)),
    parse_float=lambda text: _Number(exact_number(text)),
    parse_constant=_constant,
    strict=True,
)


def _pointer(trail: list[Any]) -> str:
    return "".join("/" + str(name).replace("~", "~0").replace("/", "~1") for name in trail)


def _string(value: str, trail: list[Any]) -> str:
    if _LONE_SURROGATE.search(value):
        raise _Refused("a string has a lone surrogate (\\ud800-\\udfff)", _pointer(trail))
    # As JSON.stringify writes a well-formed string: the same escapes, non-ASCII as it is.
    return json.dumps(value, ensure_ascii=False)


def _utf16(name: str) -> bytes:
    return name.encode("utf-16-be")


def _form(value: Any, trail: list[Any], depth: int) -> str:
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, _Number):
        return value.exact
    if isinstance(value, str):
        return _string(value, trail)
    if depth >= MAX_DEPTH:
        raise _Refused(f"it nests deeper than {MAX_DEPTH} levels", _pointer(trail))
    if isinstance(value, _Members):
        entries: list[tuple[str, str]] = []
        for name, member in value:
            _string(name, trail)
            trail.append(name)
            entries.append((name, _form(member, trail, depth + 1)))
            trail.pop()
        entries.sort(key=lambda entry: _utf16(entry[0]))
        for before, after in zip(entries, entries[1:]):
            if before[0] == after[0]:
                raise _Refused(f"member {json.dumps(after[0], ensure_ascii=False)} appears twice", _pointer(trail))
        return "{" + ",".join(f"{json.dumps(name, ensure_ascii=False)}:{text}" for name, text in entries) + "}"
    items = []
    for index, item in enumerate(value):
        trail.append(index)
        items.append(_form(item, trail, depth + 1))
        trail.pop()
    return "[" + ",".join(items) + "]"


def exact_json_text(text: str) -> str | JsonRefusal | NotJson:
    """The exact form of JSON text, ``NOT_JSON`` for a syntax error, or why it has no one value."""
    try:
        parsed = _DECODER.decode(text)
    except RecursionError:
        # Python's parser gives out a little before MAX_DEPTH (its recursion limit): refused as too deep.
        return JsonRefusal(f"it nests deeper than {MAX_DEPTH} levels", "")
    except ValueError:
        return NOT_JSON
    try:
        return _form(parsed, [], 0)
    except _Refused as refused:
        return JsonRefusal(str(refused), refused.path)
    except RecursionError:
        return JsonRefusal(f"it nests deeper than {MAX_DEPTH} levels", "")
