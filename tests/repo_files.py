"""What the suite leaves in the checkout: the untracked files, to compare before and after (conftest.py's
session check) — a module of its own, so a test imports it by a name no other conftest has."""

import shutil
import subprocess
from pathlib import Path

CACHES = frozenset({"__pycache__", ".pytest_cache", ".mypy_cache", ".ruff_cache", ".cache", ".hypothesis", ".venv"})


def untracked_files(repo: Path) -> set[str] | None:
    """The files of ``repo`` git does not track, the ignored ones included (``results/`` is ignored), the
    caches (:data:`CACHES`, ``*.egg-info``) left out; None without git or outside a checkout."""
    git = shutil.which("git")
    if git is None:
        return None
    command = [git, "-C", str(repo), "status", "--porcelain", "-z", "--untracked-files=all", "--ignored"]
    try:
        res = subprocess.run([*command, "--", ".", ":(exclude).venv"], capture_output=True, text=True, timeout=120)
    except (OSError, subprocess.TimeoutExpired):
        return None
    if res.returncode != 0:
        return None
    paths = {entry[3:] for entry in res.stdout.split("\0") if entry[:2] in ("??", "!!")}
    return {p for p in paths if not any(part in CACHES or part.endswith(".egg-info") for part in Path(p).parts)}
