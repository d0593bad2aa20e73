"""The README's Python examples run as written.

Every ```python block of README.md is executed in a fresh namespace with the
working directory set to a temporary folder (the examples write files).  The
README's example builds its own small graph, so no dataset is needed.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

README = Path(__file__).resolve().parents[1] / "README.md"
BLOCK = re.compile(r"^```python[ \t]*\n(.*?)^```[ \t]*$", re.MULTILINE | re.DOTALL)


def python_blocks() -> list[str]:
    return BLOCK.findall(README.read_text(encoding="utf-8"))


def test_readme_has_a_python_example():
    assert python_blocks(), "README.md has no ```python block: the Python example is missing"


@pytest.mark.parametrize("index", range(len(python_blocks())))
def test_readme_python_block_runs(index, tmp_path, monkeypatch):
    code = python_blocks()[index]
    monkeypatch.chdir(tmp_path)
    namespace = {"__name__": f"readme_block_{index}"}
    exec(compile(code, f"README.md (python block {index})", "exec"), namespace)
