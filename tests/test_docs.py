"""The documentation site builds without a warning (``make docs``: MkDocs --strict, API pages from the docstrings)."""

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.skipif(
    shutil.which("mkdocs", path=str(Path(sys.executable).parent)) is None,
    reason="mkdocs not installed (make install adds the docs extra)",
)
def test_docs_build_strict(tmp_path):
    mkdocs = shutil.which("mkdocs", path=str(Path(sys.executable).parent))
    res = subprocess.run(
        [mkdocs, "build", "--strict", "--site-dir", str(tmp_path / "site")],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
    )
    assert res.returncode == 0, res.stdout + res.stderr
    assert (tmp_path / "site" / "index.html").exists()


@pytest.mark.parametrize("page", ["README.md", "docs/index.md"])
def test_the_front_pages_list_every_method_page(page):
    """Every method page (docs/methods/*.md) has its row in the README's and the docs index's systems table."""
    text = (ROOT / page).read_text()
    prefix = "docs/methods/" if page == "README.md" else "methods/"
    missing = [p.name for p in sorted((ROOT / "docs" / "methods").glob("*.md")) if f"]({prefix}{p.name})" not in text]
    assert not missing, f"{page} has no row for {missing}"
