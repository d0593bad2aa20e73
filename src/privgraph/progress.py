"""The progress callback the long-running trainers and experiments accept."""

from __future__ import annotations

from typing import Callable

ProgressHook = Callable[[str, int, int], None]  # (task name, steps done, total steps)
