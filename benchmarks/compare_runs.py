"""Compare the JSON outputs of two ``benchmarks/seeded_runs.sh`` folders: SAME or the differing means."""

import json
import sys
from pathlib import Path


def means(path: Path) -> dict:
    return {
        (r["epsilon"], r["metric"]): (round(r["mean"], 6), r["trials"]) for r in json.loads(path.read_text())["results"]
    }


def main() -> None:
    a, b = map(Path, sys.argv[1:3])
    for f in sorted(a.glob("*.json")):
        other = b / f.name
        if not other.exists():
            print(f"{f.name}: missing in {b}")
            continue
        x, y = means(f), means(other)
        print(f"{f.name}: SAME" if x == y else f"{f.name}: DIFF {x} vs {y}")


if __name__ == "__main__":
    main()
