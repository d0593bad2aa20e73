"""The suite's check that it leaves the repository as it found it (``conftest.pytest_sessionfinish``) sees a
file a test would write there, ignored by git or not, and not the caches."""

import shutil
import subprocess

import pytest
from repo_files import untracked_files


@pytest.mark.skipif(shutil.which("git") is None, reason="git is absent")
def test_untracked_files_sees_new_and_ignored_files_but_not_caches(tmp_path):
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    (tmp_path / ".gitignore").write_text("results/\n__pycache__/\n")
    before = untracked_files(tmp_path)
    assert before == {".gitignore"}
    (tmp_path / "results").mkdir()
    (tmp_path / "results" / "privgraph.jsonl").touch()  # what `privgraph attack` left behind
    (tmp_path / "__pycache__").mkdir()
    (tmp_path / "__pycache__" / "x.pyc").touch()
    assert untracked_files(tmp_path) - before == {"results/privgraph.jsonl"}
    assert untracked_files(tmp_path / "nowhere") is None  # not a checkout: no check
