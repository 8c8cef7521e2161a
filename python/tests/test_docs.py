"""The Python examples in docs/python.md run as written (in a scratch directory, on the test servers)."""

from __future__ import annotations

import os
import re

import pytest

DOC = os.path.join(os.path.dirname(__file__), "..", "..", "docs", "python.md")


def blocks() -> list[str]:
    with open(DOC, encoding="utf-8") as file:
        return re.findall(r"```python\n(.*?)```", file.read(), re.S)


def test_the_page_has_examples() -> None:
    assert len(blocks()) >= 4


@pytest.mark.parametrize("index", range(len(blocks())))
def test_example_runs(index: int, tmp_path: object, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)  # type: ignore[arg-type]
    namespace: dict[str, object] = {}
    # Blocks build on the ones before them, as a reader runs them.
    for code in blocks()[: index + 1]:
        exec(compile(code, f"docs/python.md block {index}", "exec"), namespace)  # noqa: S102


PROTOCOL = os.path.join(os.path.dirname(__file__), "..", "..", "docs", "claim-protocol.md")
ROOT = os.path.join(os.path.dirname(__file__), "..", "..")


def cited_lines() -> list[tuple[str, int, str]]:
    """Each `python/idemkey/<file>.py:<line>` `<code>` of docs/claim-protocol.md: a model step's place in Python."""
    with open(PROTOCOL, encoding="utf-8") as file:
        text = file.read()
    return [(path, int(line), code) for path, line, code in re.findall(r"`(python/idemkey/\w+\.py):(\d+)` `([^`]+)`", text)]


def test_the_protocol_page_maps_the_model_to_python() -> None:
    files = {path for path, _, _ in cited_lines()}
    assert {"python/idemkey/harness.py", "python/idemkey/store.py", "python/idemkey/sqlite.py",
            "python/idemkey/postgres.py", "python/idemkey/redis.py"} <= files


@pytest.mark.parametrize(("path", "line", "code"), cited_lines())
def test_a_cited_line_holds_the_code_quoted(path: str, line: int, code: str) -> None:
    with open(os.path.join(ROOT, path), encoding="utf-8") as file:
        lines = file.read().split("\n")
    assert code in lines[line - 1], f"{path}:{line} is {lines[line - 1].strip()!r}, not {code!r}"
