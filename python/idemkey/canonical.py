"""RFC 8785 (JCS) canonical form, byte for byte the TypeScript package's ``canonicalize``.

Python values map to JSON as ``json`` maps them: ``dict`` (``str`` names) to objects, ``list`` and ``tuple`` to
arrays, ``str``, ``int``, ``float``, ``bool`` and ``None``. Numbers are printed as ECMAScript's Number::toString
prints the IEEE 754 double (so ``1.0`` is ``1``, ``-0.0`` is ``0`` and ``10**21`` is ``1e+21``). An ``int`` is the
double that ECMAScript's JSON.parse reads from its digits, the nearest one: ``2**53 + 1`` is written (and keyed) as
``9007199254740992``, as the TypeScript side keys the same JSON text; an ``int`` past the largest double is refused. Anything else raises ``CanonicalizationError``
with the path at fault, in the TypeScript package's words.
"""

from __future__ import annotations

import json
import math
import re
import sys
from typing import Any

from .errors import CanonicalizationError

DEFAULT_MAX_DEPTH = 1000

LONE_IN_VALUE = "string contains a lone surrogate, which UTF-8 cannot encode"
LONE_IN_NAME = "member name contains a lone surrogate, which UTF-8 cannot encode"

_SURROGATE = re.compile("[\ud800-\udfff]")
_IDENTIFIER = re.compile(r"^[A-Za-z_$][A-Za-z0-9_$]*$")
_SAFE = 2**53


class _Fault(Exception):
    def __init__(self, reason: str) -> None:
        self.reason = reason
        self.segments: list[str | int] = []


def canonicalize(value: Any, *, max_depth: int = DEFAULT_MAX_DEPTH) -> str:
    """The RFC 8785 canonical JSON text of ``value``.

    >>> canonicalize({"b": [1, 2.50], "a": "€"})
    '{"a":"€","b":[1,2.5]}'
    """
    return canonicalize_at(value, "$", check_max_depth(max_depth))


def check_max_depth(max_depth: Any) -> int:
    if isinstance(max_depth, bool) or not isinstance(max_depth, int) or max_depth < 1:
        raise TypeError(f"max_depth must be a positive integer, got {max_depth!r}")
    return max_depth


def canonicalize_at(value: Any, root: str, max_depth: int) -> str:
    """Canonicalize with paths reported from ``root`` (the key derivation reports ``$.args...``)."""
    out: list[str] = []
    needed = 3 * max_depth + 200
    limit = sys.getrecursionlimit()
    if limit < needed:
        sys.setrecursionlimit(needed)
    try:
        _write(value, out, 0, max_depth, ([], []))
    except _Fault as fault:
        raise CanonicalizationError(format_path(root, list(reversed(fault.segments))), fault.reason) from None
    return "".join(out)


def stringify(value: Any) -> str:
    """ECMAScript's JSON.stringify of plain JSON data: members in insertion order, numbers and strings as ECMAScript
    writes them. What the ledger's records hold besides the canonical arguments (docs/ledger-format.md)."""
    out: list[str] = []
    try:
        _write(value, out, 0, DEFAULT_MAX_DEPTH, ([], []), sort=False)
    except _Fault as fault:
        raise CanonicalizationError(format_path("$", list(reversed(fault.segments))), fault.reason) from None
    return "".join(out)


def format_path(root: str, segments: list[str | int]) -> str:
    path = root
    for segment in segments:
        if isinstance(segment, int):
            path += f"[{segment}]"
        elif _IDENTIFIER.match(segment):
            path += f".{segment}"
        else:
            path += f"[{js_stringify(segment)}]"
    return path


def js_stringify(text: str) -> str:
    """ECMAScript's JSON.stringify of a string: as json.dumps without ensure_ascii, a lone surrogate as an escape."""
    return _SURROGATE.sub(lambda m: f"\\u{ord(m.group()):04x}", json.dumps(text, ensure_ascii=False))


def _write(
    value: Any, out: list[str], depth: int, max_depth: int, ancestors: tuple[list[int], list[str | int]], sort: bool = True
) -> None:
    # bool before int: True is an int in Python.
    if value is None:
        out.append("null")
    elif value is True:
        out.append("true")
    elif value is False:
        out.append("false")
    elif isinstance(value, str):
        out.append(quote(value, LONE_IN_VALUE))
    elif isinstance(value, int):
        out.append(format_int(value))
    elif isinstance(value, float):
        out.append(format_number(value))
    elif isinstance(value, (list, tuple)):
        _enter(value, depth, max_depth, ancestors)
        out.append("[")
        for index, element in enumerate(value):
            if index:
                out.append(",")
            ancestors[1].append(index)
            try:
                _write(element, out, depth + 1, max_depth, ancestors, sort)
            except _Fault as fault:
                fault.segments.append(index)
                raise
            finally:
                ancestors[1].pop()
        out.append("]")
        ancestors[0].pop()
    elif isinstance(value, dict):
        _enter(value, depth, max_depth, ancestors)
        for name in value:
            if not isinstance(name, str):
                fault = _Fault(f"a member name must be a string, got {type(name).__name__} {name!r}")
                raise fault
        names = sorted(value, key=_utf16) if sort else list(value)
        out.append("{")
        for index, name in enumerate(names):
            if index:
                out.append(",")
            ancestors[1].append(name)
            try:
                out.append(quote(name, LONE_IN_NAME))
                out.append(":")
                _write(value[name], out, depth + 1, max_depth, ancestors, sort)
            except _Fault as fault:
                fault.segments.append(name)
                raise
            finally:
                ancestors[1].pop()
        out.append("}")
        ancestors[0].pop()
    else:
        raise _Fault(_describe(value))


def _enter(value: Any, depth: int, max_depth: int, ancestors: tuple[list[int], list[str | int]]) -> None:
    ident = id(value)
    ids, trail = ancestors
    if ident in ids:
        # ids[i] was reached through trail[:i].
        raise _Fault(f"cycle: refers back to {format_path('$', trail[: ids.index(ident)])}")
    if depth >= max_depth:
        raise _Fault(f"nested deeper than {max_depth} levels (max_depth)")
    ids.append(ident)


def _utf16(name: str) -> bytes:
    # Big-endian UTF-16 bytes compare as the code units do. A lone surrogate cannot be encoded: it sorts anywhere,
    # and quote() refuses it when its turn comes.
    return name.encode("utf-16-be", "surrogatepass")


def _describe(value: Any) -> str:
    if isinstance(value, (set, frozenset)):
        return "a set is not JSON; convert it to a list"
    if isinstance(value, (bytes, bytearray, memoryview)):
        return "bytes are not JSON; encode them (base64) or use a list"
    return (
        f"a {type(value).__name__} instance is not JSON; only dict, list, tuple, str, int, float, bool and None are "
        "(convert it first)"
    )


def quote(text: str, lone_surrogate: str) -> str:
    """A JSON string literal as ECMAScript's JSON.stringify writes it (RFC 8785's form)."""
    if _SURROGATE.search(text):
        # A Python str holds code points: any surrogate in it is one UTF-8 cannot encode.
        raise _Fault(lone_surrogate)
    return json.dumps(text, ensure_ascii=False)


def format_int(value: int) -> str:
    """An int as the double JSON.parse reads from its digits (the nearest), written as ECMAScript writes it."""
    if -_SAFE <= value <= _SAFE:
        return str(value)
    try:
        return format_number(float(value))
    except OverflowError:
        raise _Fault("Infinity is not a JSON number (an int beyond the largest double)") from None


def format_number(value: float) -> str:
    """ECMAScript's Number::toString of a finite double: RFC 8785's number form."""
    if not math.isfinite(value):
        text = "NaN" if math.isnan(value) else ("Infinity" if value > 0 else "-Infinity")
        raise _Fault(f"{text} is not a JSON number")
    if value == 0:
        return "0"  # -0 too
    sign = "-" if value < 0 else ""
    # repr gives the shortest digits that round-trip, the closest when several do: the digits ECMAScript chooses.
    mantissa, _, exponent = repr(abs(value)).partition("e")
    whole, _, fraction = mantissa.partition(".")
    digits = whole + fraction
    n = len(whole) + (int(exponent) if exponent else 0)
    stripped = digits.lstrip("0")
    n -= len(digits) - len(stripped)
    digits = stripped.rstrip("0")
    k = len(digits)
    if k <= n <= 21:
        return sign + digits + "0" * (n - k)
    if 0 < n <= 21:
        return sign + digits[:n] + "." + digits[n:]
    if -6 < n <= 0:
        return sign + "0." + "0" * (-n) + digits
    e = n - 1
    exp = ("+" if e >= 0 else "-") + str(abs(e))
    if k == 1:
        return sign + digits + "e" + exp
    return sign + digits[0] + "." + digits[1:] + "e" + exp
