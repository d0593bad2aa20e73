"""``privgraph`` whose sweep holds the driver after its first finished trial until a signal arrives.

Run as ``python tests/experiments/held_sweep.py FLAG sweep GRID …``: after the first trial is stored and
counted, the driver creates the file ``FLAG`` and sleeps (at most two minutes) in the sweep's ``_finish``.  A test waits
for ``FLAG`` and then sends SIGINT, which lands in that sleep: the interrupt arrives after exactly one stored
trial on any machine, fast or slow, instead of racing the trials.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import privgraph.experiments.sweep  # noqa: F401 (the module, below; the package's attribute is the function)
from privgraph.cli import main

sweep_module = sys.modules["privgraph.experiments.sweep"]


def hold_after_first_trial(flag: Path, seconds: float = 120.0) -> None:
    finish = sweep_module._finish

    def held(*args, **kwargs) -> None:
        finish(*args, **kwargs)
        if not flag.exists():
            flag.touch()
            deadline = time.monotonic() + seconds
            while time.monotonic() < deadline:  # the signal's KeyboardInterrupt is raised in this sleep
                time.sleep(0.05)

    sweep_module._finish = held


if __name__ == "__main__":
    hold_after_first_trial(Path(sys.argv[1]))
    sys.argv = ["privgraph", *sys.argv[2:]]
    main()
