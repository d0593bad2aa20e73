"""Shared helpers of the accuracy-table benchmarks: per-ε cells and the markdown table."""

from __future__ import annotations

from pathlib import Path


def accuracy_cells(summary: list[dict]) -> dict[str, str]:
    """``{"ε": "mean ± std"}`` (in %) from a run's summary; non-private runs use the key "—"."""
    return {("—" if r["epsilon"] is None else f"{r['epsilon']:g}"): f"{100 * r['mean']:.1f} ± {100 * r['std']:.1f}"
            for r in summary}


def write_markdown(path: str, head: list[str], tail: list[str], epsilons: list[float], rows: list[dict],
                   lead, trail=lambda r: []) -> str:
    """One line per row: ``lead(row)`` columns, one cell per ε (a non-private value in all), ``trail(row)``."""
    eps_cols = [f"{e:g}" for e in epsilons]
    columns = head + [f"ε={e}" for e in eps_cols] + tail
    lines = ["| " + " | ".join(columns) + " |", "|---" * len(columns) + "|"]
    for r in rows:
        c = r["cells"]
        values = [c["—"]] * len(eps_cols) if "—" in c else [c.get(e, "") for e in eps_cols]
        lines.append("| " + " | ".join(list(lead(r)) + values + list(trail(r))) + " |")
    text = "\n".join(lines) + "\n"
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    Path(path).write_text(text)
    return text
