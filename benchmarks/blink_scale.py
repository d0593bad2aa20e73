"""Blink at scale: client (Algorithm 1) plus server (β-MLE, posterior, Blink-Hard, Blink-Hybrid and the
truncated Blink-Soft graph) on synthetic sparse SBM graphs (average degree ≈ 10) at ε = 4, δ = 0.1.

    python benchmarks/blink_scale.py run --sizes 100000 300000 1000000 3000000 --stages client mle hard hybrid
    python benchmarks/blink_scale.py run --sizes 100000 --stages soft --results benchmarks/results/blink_scale_soft.json
    python benchmarks/blink_scale.py table

``run`` measures each size in its own process (so that peak memory, ``ru_maxrss``, is its own) and
merges one row per size into ``--results`` (``benchmarks/results/blink_scale.json``, committed; a
rerun of a size replaces it; truncated Soft, which is far costlier, has its own file).  Each stage
records wall seconds, CPU seconds (user + system, all threads: the machine is shared, and CPU time is
what a stage costs), the peak RSS reached by the end of the stage (``ru_maxrss``: it includes
generating the input graph) and the stage's own peak RSS (Linux's VmHWM, reset before the stage).  ``table`` writes
``docs/benchmarks/blink_scale.md`` from these files, with the growth exponent of each stage fitted on
log time against log n.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import resource
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "benchmarks" / "results" / "blink_scale.json"
SOFT_RESULTS = ROOT / "benchmarks" / "results" / "blink_scale_soft.json"
PAGE = ROOT / "docs" / "benchmarks" / "blink_scale.md"
STAGES = ("client", "mle", "hard", "hybrid", "soft")
STAGE_NAMES = {
    "client": "client (Algorithm 1: validation, keys, Laplace degrees)",
    "mle": "β-MLE (Algorithm 2)",
    "hard": "Blink-Hard (P > 0.5)",
    "hybrid": "Blink-Hybrid (top ⌊‖P‖₁⌋ entries)",
    "soft": "Blink-Soft, truncated at P > 10⁻³",
}


def _cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def _rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _reset_peak() -> None:
    """Reset the kernel's peak-RSS mark (VmHWM, Linux ≥ 4.0): the next reading is the coming stage's own peak."""
    try:
        Path("/proc/self/clear_refs").write_text("5")
    except OSError:
        pass


def _own_peak_mib() -> float | None:
    """Peak RSS since the last :func:`_reset_peak` (None where /proc is missing)."""
    try:
        line = next(x for x in Path("/proc/self/status").read_text().splitlines() if x.startswith("VmHWM:"))
    except (OSError, StopIteration):
        return None
    return int(line.split()[1]) / 1024


def one(n: int, eps: float, degree_share: float, stages: tuple[str, ...] = STAGES) -> dict:
    import numpy as np
    import torch

    from privgraph.data.synthetic import sbm_edges
    from privgraph.mechanisms import make_generator
    from privgraph.methods.blink import beta_mle, clip_degrees, hard_graph, hybrid_graph, link_ldp
    from privgraph.methods.blink.soft import soft_graph

    torch.set_num_threads(2)
    # compile (or load) the kernels on a small graph first: the stages below time the work, not numba
    small = sbm_edges([500, 500], 0.02, 0.002, np.random.default_rng(1))
    r0 = link_ldp(small, 1000, eps, degree_share, make_generator(0))
    b0 = beta_mle(clip_degrees(r0.noisy_degrees, 1000), tol=1e-6).beta
    hard_graph(r0, b0), hybrid_graph(r0, b0), soft_graph(r0, b0, exact_limit=0)

    blocks = 10
    edges = sbm_edges(
        [n // blocks] * blocks, 10 * 0.7 / (n / blocks), 10 * 0.3 / (n * (1 - 1 / blocks)), np.random.default_rng(0)
    )
    out: dict = {
        "n": n,
        "edges": int(edges.shape[1]),
        "epsilon": eps,
        "degree_share": degree_share,
        "input_rss_mib": _rss_mib(),
    }

    def stage(name: str, run):
        _reset_peak()
        wall, cpu = time.perf_counter(), _cpu()
        value = run()
        out[name] = {"wall_s": time.perf_counter() - wall, "cpu_s": _cpu() - cpu, "peak_rss_mib": _rss_mib()}
        out[name]["own_peak_rss_mib"] = _own_peak_mib()
        return value

    reports = stage("client", lambda e=edges: link_ldp(e, n, eps, degree_share, make_generator(0)))
    del edges
    fit = stage("mle", lambda: beta_mle(clip_degrees(reports.noisy_degrees, n), tol=1e-6))
    out["mle"].update(iterations=fit.iterations, exact=fit.exact)
    if "hard" in stages:
        hard = stage("hard", lambda: hard_graph(reports, fit.beta))
        out["hard"].update(edges=int(hard.edge_index.shape[1]), visited_pairs=hard.visited_pairs)
        del hard
    if "hybrid" in stages:
        hybrid = stage("hybrid", lambda: hybrid_graph(reports, fit.beta))
        out["hybrid"].update(edges=int(hybrid.edge_index.shape[1]), visited_pairs=hybrid.visited_pairs)
        del hybrid
    if "soft" in stages:
        soft = stage("soft", lambda: soft_graph(reports, fit.beta))
        if soft.graph is None:  # n ≤ the exact limit: the exact posterior over every pair, nothing truncated
            out["soft"].update(edges=n * (n - 1), visited_pairs=n * (n - 1) // 2, dropped_fraction=0.0, exact=True)
        else:
            out["soft"].update(
                edges=int(soft.graph.edge_index.shape[1]),
                visited_pairs=soft.graph.visited_pairs,
                dropped_fraction=soft.details["dropped_fraction"],
            )
    out["stages"] = [s for s in STAGES if s in out]
    out["total_wall_s"] = sum(out[s]["wall_s"] for s in out["stages"])
    out["total_cpu_s"] = sum(out[s]["cpu_s"] for s in out["stages"])
    return out


def _shown(path: Path) -> str:
    """A results path as the stored command shows it: relative to the repository when inside it, else absolute
    (a file outside the repository is written where it was asked, never refused)."""
    p = path.resolve()
    return str(p.relative_to(ROOT)) if p.is_relative_to(ROOT) else str(p)


def run(args: argparse.Namespace) -> None:
    results = Path(args.results)
    results.parent.mkdir(parents=True, exist_ok=True)
    rows = {r["n"]: r for r in json.loads(results.read_text())["rows"]} if results.exists() else {}
    for n in args.sizes:
        load = os.getloadavg()
        cmd = [
            sys.executable,
            __file__,
            "--child",
            str(n),
            "--epsilon",
            str(args.epsilon),
            "--degree-share",
            str(args.degree_share),
        ]
        cmd += ["--stages", *args.stages]
        res = subprocess.run(cmd, capture_output=True, text=True)
        if res.returncode:
            sys.exit(f"n = {n} failed:\n{res.stderr[-3000:]}")
        row = json.loads(res.stdout.strip().splitlines()[-1])
        row["load_before"], row["load_after"] = load[0], os.getloadavg()[0]
        row["measured"] = time.strftime("%Y-%m-%d")
        rows[n] = row
        print(json.dumps(row), flush=True)
        results.write_text(
            json.dumps(
                {
                    "command": "python benchmarks/blink_scale.py run --sizes "
                    + " ".join(str(k) for k in sorted(rows))
                    + ("" if tuple(args.stages) == STAGES else " --stages " + " ".join(args.stages))
                    + ("" if results.resolve() == RESULTS else f" --results {_shown(results)}"),
                    "machine": f"{platform.machine()}, {os.cpu_count()} cores (shared)",
                    "rows": [rows[k] for k in sorted(rows)],
                },
                indent=1,
            )
            + "\n"
        )


def _slope(xs: list[float], ys: list[float]) -> float:
    """Least-squares slope of log y on log x: the growth exponent."""
    lx, ly = [math.log(x) for x in xs], [math.log(max(y, 1e-9)) for y in ys]
    mx, my = sum(lx) / len(lx), sum(ly) / len(ly)
    return sum((a - mx) * (b - my) for a, b in zip(lx, ly)) / sum((a - mx) ** 2 for a in lx)


def table() -> str:
    data = json.loads(RESULTS.read_text())
    rows = data["rows"]
    lines = [
        "# Blink at scale",
        "",
        "<!-- generated by `python benchmarks/blink_scale.py table` from benchmarks/results/blink_scale.json -->",
        "",
        "Client (Algorithm 1) and server (β-MLE, Blink-Hard, Blink-Hybrid, truncated Blink-Soft) on",
        "synthetic SBM graphs with average degree ≈ 10, ε = 4, δ = 0.1, each size in its own process,",
        f"on {data['machine']}. Measured by",
        "",
        "```bash",
        data["command"],
        "python benchmarks/blink_scale.py table",
        "```",
        "",
        "CPU seconds are user + system time of all threads (the machine is shared with other jobs: the",
        "load average before and after each size is listed, and wall time is inflated by it); peak RSS",
        "is the process's maximum resident memory at the end of each stage, so it includes generating the input",
        "graph; a stage's own peak (Linux's VmHWM, reset when the stage starts) includes what is resident then",
        "(the interpreter, torch and numba, about 0.5 GiB, and the reports).",
        "",
        "## CPU seconds per stage",
        "",
        "| n | directed edges | " + " | ".join(STAGES) + " | total CPU s | total wall s | peak RSS MiB "
        "| stages' own peak MiB | load |",
        "|---" * (len(STAGES) + 7) + "|",
    ]
    for r in rows:
        cells = " | ".join(f"{r[s]['cpu_s']:.1f}" if s in r else "—" for s in STAGES)
        peak = max(r[s]["peak_rss_mib"] for s in STAGES if s in r)
        own = [r[s].get("own_peak_rss_mib") for s in STAGES if s in r]
        own_cell = f"{max(own):,.0f}" if all(x is not None for x in own) else "—"
        lines.append(
            f"| {r['n']:,} | {r['edges']:,} | {cells} | {r['total_cpu_s']:.1f} | {r['total_wall_s']:.1f} | "
            f"{peak:,.0f} | {own_cell} | {r['load_before']:.1f} → {r['load_after']:.1f} |"
        )
    lines += [
        "",
        "## What each stage did",
        "",
        "| n | MLE iterations | Hard edges | Hard pairs visited | Hybrid edges | Hybrid pairs visited "
        "| Soft edges | Soft dropped mass | RSS after client MiB |",
        "|---|---|---|---|---|---|---|---|---|",
    ]

    def part(r: dict, stage: str, key: str, fmt: str) -> str:
        return format(r[stage][key], fmt) if stage in r else "—"

    for r in rows:
        lines.append(
            f"| {r['n']:,} | {r['mle']['iterations']} | {part(r, 'hard', 'edges', ',')} | "
            f"{part(r, 'hard', 'visited_pairs', ',')} | {part(r, 'hybrid', 'edges', ',')} | "
            f"{part(r, 'hybrid', 'visited_pairs', ',')} | {part(r, 'soft', 'edges', ',')} | "
            f"{part(r, 'soft', 'dropped_fraction', '.1%')} | {r['client']['peak_rss_mib']:,.0f} |"
        )
    if len(rows) >= 2:
        ns = [r["n"] for r in rows]
        lines += [
            "",
            "## Growth",
            "",
            f"Exponent k of CPU time ∝ n^k, least squares on log–log over n = {ns[0]:,} … {ns[-1]:,}:",
            "",
            "| stage | exponent |",
            "|---|---|",
        ]
        timed = [s for s in STAGES if all(s in r for r in rows)]  # the stages every size timed
        for s in timed:
            lines.append(f"| {STAGE_NAMES[s]} | {_slope(ns, [r[s]['cpu_s'] for r in rows]):.2f} |")
        lines.append(f"| total ({', '.join(timed)}) | {_slope(ns, [r['total_cpu_s'] for r in rows]):.2f} |")
        if "hybrid" in timed:
            pairs = [max(r["hybrid"]["visited_pairs"], 1) for r in rows]
            lines.append(f"| Hybrid pairs visited | {_slope(ns, pairs):.2f} |")
        target = 10_000_000
        if ns[-1] < target:
            last = rows[-1]
            cpu = {s: last[s]["cpu_s"] * (target / ns[-1]) ** _slope(ns, [r[s]["cpu_s"] for r in rows]) for s in timed}
            lines += [
                "",
                f"n = {target:,} was not run here (see the load column: the machine was shared). Extrapolated from",
                f"n = {ns[-1]:,} with each stage's exponent above — a projection, not a measurement: "
                + ", ".join(f"{s} {cpu[s]:,.0f}" for s in timed)
                + f", total {sum(cpu.values()):,.0f} CPU seconds"
                + f" (≥ {sum(cpu.values()) / 2 / 60:,.0f} min wall on 2 cores).",
            ]
    if SOFT_RESULTS.exists():
        soft = json.loads(SOFT_RESULTS.read_text())
        lines += [
            "",
            "## Blink-Soft, truncated",
            "",
            "Measured by `" + soft["command"] + "` (the largest size run: its output, pairs with P > 10⁻³,",
            "is far larger than Hybrid's, and so are its time and memory):",
            "",
            "| n | Soft CPU s | Soft wall s | edges kept | pairs visited | dropped mass | peak RSS MiB | load |",
            "|---|---|---|---|---|---|---|---|",
        ]
        for r in soft["rows"]:
            s = r["soft"]
            lines.append(
                f"| {r['n']:,} | {s['cpu_s']:.1f} | {s['wall_s']:.1f} | {s['edges']:,} | {s['visited_pairs']:,} | "
                f"{s['dropped_fraction']:.1%} | {s['peak_rss_mib']:,.0f} | "
                f"{r['load_before']:.1f} → {r['load_after']:.1f} |"
            )
    lines += [
        "",
        "Blink-Soft's exact posterior (n ≤ 20,000 by default) holds the n² evidence states as bytes: 16 GiB",
        "allow n ≈ 131,000, so above 20,000 nodes Blink-Soft is the truncated graph (pairs with P > 10⁻³,",
        "the dropped posterior mass stated)"
        + (
            ", which is what this table times."
            if all("soft" in r for r in rows)
            else "; these rows did not time it (`--stages`)"
            + ("; its own section above does." if SOFT_RESULTS.exists() else ".")
        ),
        "",
    ]
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("command", nargs="?", choices=("run", "table"), default="run")
    ap.add_argument("--sizes", nargs="+", type=int, default=[100_000, 300_000, 1_000_000, 3_000_000])
    ap.add_argument("--epsilon", type=float, default=4.0)
    ap.add_argument("--degree-share", type=float, default=0.1)
    ap.add_argument("--child", type=int, help=argparse.SUPPRESS)
    ap.add_argument("--stages", nargs="+", choices=STAGES, default=list(STAGES), help="the server stages to time")
    ap.add_argument("--results", default=str(RESULTS), help="the results file to merge into")
    args = ap.parse_args()
    if args.child:
        print(json.dumps(one(args.child, args.epsilon, args.degree_share, tuple(args.stages))))
    elif args.command == "run":
        run(args)
    else:
        PAGE.write_text(table())
        print(f"wrote {PAGE}")


if __name__ == "__main__":
    main()
