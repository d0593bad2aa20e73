"""One idea per module: no module of the package is over 600 lines (physical lines)."""

from __future__ import annotations

from pathlib import Path

import privgraph

PACKAGE = Path(privgraph.__file__).parent
MAX_LINES = 600


def module_lines(root: Path = PACKAGE) -> dict[str, int]:
    """Physical lines of every module under ``root``, by its path relative to it (``methods/gap.py``)."""
    return {
        path.relative_to(root).as_posix(): len(path.read_bytes().splitlines()) for path in sorted(root.rglob("*.py"))
    }


def test_no_module_over_600_lines():
    over = {name: n for name, n in module_lines().items() if n > MAX_LINES}
    assert not over, f"modules over {MAX_LINES} lines (split them by idea): " + ", ".join(
        f"{name} ({n})" for name, n in sorted(over.items())
    )


def test_the_count_reads_physical_lines(tmp_path):
    (tmp_path / "sub").mkdir()
    (tmp_path / "a.py").write_text('"""doc\n\nmore"""\n\nx = 1\n')  # blank and docstring lines count
    (tmp_path / "sub" / "b.py").write_text("x = 1\n" * (MAX_LINES + 1))
    assert module_lines(tmp_path) == {"a.py": 5, "sub/b.py": MAX_LINES + 1}
    assert "accounting/ledger/book.py" in module_lines()


def test_test_files_have_unique_basenames():
    """pytest imports test modules by their basename (no packages under tests/): two files of one name stop the
    collection of the second in a fresh clone ("import file mismatch")."""
    tests = Path(__file__).resolve().parent
    seen: dict[str, list[str]] = {}
    for path in tests.rglob("test_*.py"):
        seen.setdefault(path.name, []).append(str(path.relative_to(tests)))
    assert not {name: where for name, where in seen.items() if len(where) > 1}
