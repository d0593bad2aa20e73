"""Peak memory of a trial: the peak resident set size (RSS) of the process that runs it.

On Linux the kernel's high-water mark (``VmHWM`` in ``/proc/self/status``) is reset when the trial starts
(writing ``5`` to ``/proc/self/clear_refs``), so the reading at its end is the trial's own peak RSS: the
data already loaded in the process, plus what the release, the training and the attack allocated.  Where
the reset is refused (not Linux, or a kernel older than 4.0), the reading is
``resource.getrusage(RUSAGE_SELF).ru_maxrss``: the peak RSS of the process since it started, so trials run
one after another in one process report the highest so far.  GPU memory is not counted.
"""

from __future__ import annotations

import sys
from pathlib import Path


def reset_peak_rss() -> bool:
    """Reset the process's RSS high-water mark (Linux ≥ 4.0); whether it was reset."""
    try:
        Path("/proc/self/clear_refs").write_text("5")
        return True
    except OSError:
        return False


def peak_rss_mib() -> float | None:
    """The process's peak RSS in MiB since :func:`reset_peak_rss` (else since it started); None if unknown."""
    try:
        with open("/proc/self/status", encoding="ascii", errors="replace") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024  # kB
    except (OSError, ValueError, IndexError):
        pass
    try:
        import resource
    except ImportError:  # pragma: no cover - not POSIX
        return None
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak / 2**20 if sys.platform == "darwin" else peak / 1024  # macOS: bytes; Linux, BSD: KiB


__all__ = ["peak_rss_mib", "reset_peak_rss"]
