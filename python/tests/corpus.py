"""A seeded corpus of tool calls for the cross-language key check, and Python's keys for it.

    python3 tests/corpus.py --seed 47 --count 3000 --out corpus.json --keys py-keys.json

The corpus is JSON text both languages parse (numbers as doubles: every float is written with a "." or an exponent,
every int is within 2**53); each case gets Python's key, or the error's path and reason when the arguments hold a lone
surrogate. test/python/keys-corpus.test.ts computes the TypeScript keys over the same file and compares.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import struct
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from idemkey import CanonicalizationError, idempotency_key  # noqa: E402

EDGE_NUMBERS = [
    0.0, -0.0, 1.0, -1.0, 0.1, 0.2, 0.30000000000000004, 1e21, 1e20, 9.999999999999999e20, 1e-6, 1e-7, 1.5e-7,
    123456789012345680000.0, 5e-324, -5e-324, 2.2250738585072014e-308, 1.7976931348623157e308, 2.0**53,
    2.0**53 + 2, 4.35, 0.000001234, 1e300, 333333333.3333333, 1e23, 9007199254740991.0, 295147905179352830000.0,
]
EDGE_INTS = [0, 1, -1, 2**31 - 1, -(2**31), 2**31, 2**53, -(2**53), 2**53 - 1, 10**15, 10**16]
TRICKY = ["\u0000", "\u0001", "\u001f", "\b", "\t", "\n", "\f", "\r", '"', "\\", "/", "\u007f", "\u0080", "\u2028",
          "\u2029", "\u00f6", "e\u0301", "\u20ac", "\ufb33", "\uffff", "\U0001F600", "\U0010FFFF", "a", "0", "\ue000"]
NAMES = ["2", "10", "0", "01", "1", "-1", "1.5", "4294967295", "", "a", "A", "__proto__", "toJSON", "constructor"]


def random_double(rng: random.Random) -> float:
    while True:
        value = struct.unpack("<d", rng.getrandbits(64).to_bytes(8, "little"))[0]
        if value == value and abs(value) != float("inf"):
            return value


def number(rng: random.Random) -> int | float:
    pick = rng.random()
    if pick < 0.2:
        return rng.choice(EDGE_NUMBERS) * rng.choice([1, -1])
    if pick < 0.3:
        return rng.choice(EDGE_INTS)
    if pick < 0.55:
        return random_double(rng)
    if pick < 0.7:
        return rng.randint(-(2**53), 2**53)
    if pick < 0.85:
        # Short decimals: prices and rates.
        return round(rng.uniform(-1e6, 1e6), rng.randint(1, 6))
    return rng.uniform(-1, 1) * 10.0 ** rng.randint(-30, 30)


def code_point(rng: random.Random) -> str:
    pick = rng.random()
    if pick < 0.3:
        return chr(rng.randint(0x20, 0x7E))
    if pick < 0.45:
        return rng.choice(TRICKY)
    if pick < 0.6:
        return chr(rng.randint(0x10000, 0x10FFFF))
    while True:
        c = rng.randint(0, 0xFFFF)
        if not 0xD800 <= c <= 0xDFFF:
            return chr(c)


def text(rng: random.Random) -> str:
    return "".join(code_point(rng) for _ in range(rng.randint(0, 8)))


def name(rng: random.Random) -> str:
    return rng.choice(NAMES) if rng.random() < 0.3 else text(rng)


def value(rng: random.Random, depth: int) -> object:
    pick = rng.random()
    if depth > 3 or pick < 0.5:
        leaf = rng.random()
        if leaf < 0.4:
            return number(rng)
        if leaf < 0.85:
            return text(rng)
        return rng.choice([None, True, False])
    if pick < 0.75:
        return [value(rng, depth + 1) for _ in range(rng.randint(0, 5))]
    return {name(rng): value(rng, depth + 1) for _ in range(rng.randint(0, 6))}


def corpus(seed: int, count: int) -> list[dict[str, object]]:
    rng = random.Random(seed)
    cases: list[dict[str, object]] = []
    for i in range(count):
        case: dict[str, object] = {
            "taskId": f"task-{i}" if rng.random() < 0.8 else text(rng) or "t",
            "tool": rng.choice(["sendEmail", "openPullRequest", "charge", "caf\u00e9", "\U0001F600tool"]),
            "args": value(rng, 0),
        }
        if rng.random() < 0.2:
            case["step"] = rng.choice([number(rng), text(rng)])
        if rng.random() < 0.03:
            # A lone surrogate somewhere: both languages refuse it, naming the same path.
            lone = chr(rng.choice([0xD800, 0xDBFF, 0xDC00, 0xDFFF]))
            case["args"] = {"ok": 1, "bad": ["x", "a" + lone]} if rng.random() < 0.5 else {lone: True}
        cases.append(case)
    return cases


def keys(cases: list[dict[str, object]]) -> list[dict[str, str]]:
    out: list[dict[str, str]] = []
    for case in cases:
        try:
            key = idempotency_key(case["taskId"], case["tool"], case["args"], step=case.get("step"))  # type: ignore[arg-type]
            out.append({"key": key})
        except CanonicalizationError as error:
            out.append({"path": error.path, "reason": error.reason})
    return out


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--seed", type=int, default=47)
    parser.add_argument("--count", type=int, default=3000)
    parser.add_argument("--out", required=True)
    parser.add_argument("--keys", required=True)
    options = parser.parse_args()
    cases = corpus(options.seed, options.count)
    # ensure_ascii: the file is ASCII, a lone surrogate an escape (UTF-8 cannot hold it).
    with open(options.out, "w", encoding="ascii") as file:
        json.dump(cases, file, ensure_ascii=True)
    # Python reads its keys from the file as TypeScript does, not from the values it generated.
    with open(options.out, encoding="ascii") as file:
        parsed = json.load(file)
    with open(options.keys, "w", encoding="ascii") as file:
        json.dump(keys(parsed), file, ensure_ascii=True)


if __name__ == "__main__":
    main()
