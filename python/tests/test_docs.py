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
