"""EdgeRR's pHRG MCMC: throughput (moves per second) and its growth with n.

    python benchmarks/hrg_mcmc.py --sizes 1000 10000 100000 1000000 --datasets cora citeseer facebook
    python benchmarks/hrg_mcmc.py --quality cora --ratio 0.05 --floors 0 3   # what the releases add
    python benchmarks/hrg_mcmc.py --quality cora --ratio 0.2 --structure public   # EdgeRR's default
    nice python benchmarks/hrg_mcmc.py --converge 1000 10000 --budget 60 300   # moves to the convergence criterion
    python benchmarks/hrg_mcmc.py --page   # the docs page from the stored results

Synthetic graphs: sparse SBM (average degree ≈ 10, 10 blocks), ρ = 0.2 of the
edges private, all nodes private-eligible, ε₁ = 0.5.  For each graph: the
time to build the start dendrogram, moves per second over ``--moves`` moves
(after ``--moves`` warm-up moves that also compile the kernel), the
acceptance rate and peak memory; on the datasets, also the log-likelihood
trace of a fresh chain over ``--trace``·n moves (EdgeRR runs 1000·n by
default) to show how far the chain has mixed.  Each graph runs in its own process (peak RSS is its own).
"""

from __future__ import annotations

import argparse
import json
import pathlib
import resource
import subprocess
import sys
import time


def one(source: str, moves: int, trace: int, chains: int = 1) -> dict:
    import numpy as np
    from torch_geometric.data import Data

    from privgraph.data import load, mark_private_edges, split_edges
    from privgraph.data.synthetic import sbm_edges
    from privgraph.mechanisms import make_generator
    from privgraph.methods.heterorr.hrg import PHRGSampler, lemma4_sensitivity

    if source.isdigit():
        n, blocks = int(source), 10
        edges = sbm_edges(
            [n // blocks] * blocks, 10 * 0.7 / (n / blocks), 10 * 0.3 / (n * (1 - 1 / blocks)), np.random.default_rng(0)
        )
        data = Data(edge_index=edges, num_nodes=n)
        name = f"SBM n={n}"
    else:
        data = load(source)
        n, name = data.num_nodes, data.name
    mark_private_edges(data, 0.2, seed=0)
    pub, pri = split_edges(data)
    out = {"graph": name, "n": n, "edges": int(data.edge_index.shape[1] // 2)}
    start = time.perf_counter()
    scale = 0.5 / (2 * lemma4_sensitivity(n))
    sampler = PHRGSampler(n, pub, pri, np.ones(n, dtype=np.int64), scale, make_generator(0))
    out["build_s"] = round(time.perf_counter() - start, 2)
    sampler.run(moves)  # warm-up (and compilation)
    before = sampler.accepted
    start = time.perf_counter()
    sampler.run(moves)
    seconds = time.perf_counter() - start
    out.update(
        moves=moves, moves_per_s=round(moves / seconds), acceptance=round((sampler.accepted - before) / moves, 3)
    )
    if trace:  # fresh chains (seeds 0, 1, …), traced over trace·n moves
        total = trace * n
        traces = [
            PHRGSampler(n, pub, pri, np.ones(n, dtype=np.int64), scale, make_generator(c)).run(
                total, trace_every=max(1, total // 10)
            )
            for c in range(chains)
        ]
        out["trace"] = [(s // n, round(lp), round(lq)) for s, lp, lq in traces[0]]  # (moves/n, L_pub, L_pri)
        if chains > 1:
            from privgraph.methods.heterorr.edges import mixing_diagnostics

            out["rhat"] = round(mixing_diagnostics(traces, scale)["mcmc_rhat"], 2)
            out["final"] = [round(t[-1][1] + scale * t[-1][2]) for t in traces]
    out["peak_rss_mib"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)
    return out


def quality(
    dataset: str, ratio: float, epsilons: list[float], floors: list[float], steps: int, seeds: int, structure: str
) -> None:
    """What each release adds to the public graph: released private pairs, how many are true private
    edges (recall), and their label homophily (share joining same-class nodes) against the true private
    edges' and a uniformly random pair's.  EdgeRR at each noise floor κ, then LapGraph, same seeds.
    ``structure``: EdgeRR's dendrogram (the private MCMC runs with convergence waived: ε = ∞, the
    releases are measured, not published)."""
    import numpy as np

    from privgraph.data import load, mark_private_edges, split_edges
    from privgraph.mechanisms import make_generator
    from privgraph.methods.heterorr.edges import edge_rr, lap_graph

    data = mark_private_edges(load(dataset), ratio, seed=0)
    _, pri = split_edges(data)
    y = data.y.numpy()
    n = data.num_nodes
    true = {(u, v) for u, v in pri.T.tolist() if u < v}
    base = float(np.sum(np.bincount(y) ** 2) / n**2)
    homo = np.mean([y[u] == y[v] for u, v in true])
    print(f"{data.name}, ρ = {ratio}: {len(true)} private edges, homophily {homo:.3f}; random pair {base:.3f}")
    print("| method | κ | ε | released private pairs | true private edges among them | homophily |")
    print("|---|---|---|---|---|---|")

    def row(name, floor, eps, run):
        out = []
        for seed in range(seeds):
            ei, _, d = run(make_generator(seed))
            public, _ = split_edges(data)
            pub = {(u, v) for u, v in public.T.tolist() if u < v}
            rel = [(u, v) for u, v in ei.T.tolist() if u < v and (u, v) not in pub]
            hits = sum(p in true for p in rel)
            h = float(np.mean([y[u] == y[v] for u, v in rel])) if rel else float("nan")
            out.append((len(rel), hits, h))
        m = np.mean(out, axis=0)
        print(f"| {name} | {floor} | {eps:g} | {m[0]:,.0f} | {m[1]:,.0f} | {m[2]:.3f} |", flush=True)

    for eps in epsilons:
        for floor in floors:
            options = {"structure": structure, "convergence": "waive" if structure == "private-mcmc" else "require"}
            row("EdgeRR", floor, eps, lambda g: edge_rr(data, eps, g, steps=steps * n, noise_floor=floor, **options))
        row("LapGraph", "", eps, lambda g: lap_graph(data, eps, g))


ROOT = pathlib.Path(__file__).resolve().parents[1]  # the repository: defaults that work from any folder
RESULTS = str(ROOT / "benchmarks" / "results" / "hrg_convergence.json")
PAGE = str(ROOT / "docs" / "benchmarks" / "hrg_convergence.md")


def _shown(path: str) -> str:
    """A path as the page shows it: relative to the repository when inside it."""
    p = pathlib.Path(path).resolve()
    return str(p.relative_to(ROOT)) if p.is_relative_to(ROOT) else str(p)


def converge(n: int, budget_s: float) -> dict:
    """One chain on an SBM of n nodes (as ``one``), run in doubling checkpoints T = 100·n·2^k until
    ``budget_s`` seconds: at each, the convergence criterion EdgeRR applies to a release of T moves
    (:func:`~privgraph.methods.heterorr.edges.mixing_diagnostics` on the 51-point trace of [0, T]),
    evaluated on this chain's fine trace thinned to that grid."""
    import numpy as np
    from torch_geometric.data import Data

    from privgraph.data import mark_private_edges, split_edges
    from privgraph.data.synthetic import sbm_edges
    from privgraph.mechanisms import make_generator
    from privgraph.methods.heterorr.edges import mixing_diagnostics
    from privgraph.methods.heterorr.hrg import PHRGSampler, lemma4_sensitivity, plateau_rise

    blocks = 10
    edges = sbm_edges(
        [n // blocks] * blocks, 10 * 0.7 / (n / blocks), 10 * 0.3 / (n * (1 - 1 / blocks)), np.random.default_rng(0)
    )
    data = mark_private_edges(Data(edge_index=edges, num_nodes=n), 0.2, seed=0)
    pub, pri = split_edges(data)
    scale = 0.5 / (2 * lemma4_sensitivity(n))
    sampler = PHRGSampler(n, pub, pri, np.ones(n, dtype=np.int64), scale, make_generator(0))
    sampler.run(1000, trace_every=1000)  # compile
    sampler = PHRGSampler(n, pub, pri, np.ones(n, dtype=np.int64), scale, make_generator(0))
    fine_every, unit = 2 * n, 100 * n  # fine trace every 2·n moves; a checkpoint's grid is T/50 = 2·n·2^k
    fine = sampler.run(0)
    rows, k, spent, first = [], 0, 0.0, None
    while spent < budget_s:
        target = unit * 2**k
        start = time.perf_counter()
        fine += sampler.run(target - sampler.steps_done, trace_every=fine_every)[1:]
        spent += time.perf_counter() - start
        grid = fine[:: 2**k]
        d = mixing_diagnostics([grid], scale)
        x = np.array([lp + scale * lq for _, lp, lq in grid])
        rise, sd = plateau_rise(x)
        rows.append(
            {
                "moves_per_node": target // n,
                "seconds": round(spent, 1),
                "rise_over_sd": round(rise / sd, 2) if sd > 0 else 0.0,
                "passes": d["mcmc_converged"],
            }
        )
        if d["mcmc_converged"] and first is None:
            first = target // n
        print(json.dumps({"n": n, **rows[-1]}), file=sys.stderr, flush=True)
        k += 1
    moves = sampler.steps_done
    return {
        "graph": f"SBM n={n}",
        "n": n,
        "edges": int(data.edge_index.shape[1] // 2),
        "budget_s": budget_s,
        "moves": moves,
        "moves_per_s": round(moves / spent),
        "first_pass_moves_per_node": first,
        "checkpoints": rows,
    }


def page(results: str = RESULTS, out: str = PAGE) -> None:
    """The docs page from the stored results (generated, never edited by hand)."""
    runs = json.loads(pathlib.Path(results).read_text())
    lines = [
        "# pHRG MCMC: moves to EdgeRR's convergence criterion",
        "",
        "Generated by `python benchmarks/hrg_mcmc.py --page` from `" + _shown(results) + "`; measured by",
        "`" + runs["command"] + "` (load average " + runs["load"] + ", shared 2-core machine).",
        "",
        "One chain per graph (SBM, average degree ≈ 10, ρ = 0.2 private, ε₁ = 0.5), run in doubling",
        "checkpoints; at each, the criterion EdgeRR applies to a release of that many moves",
        "([EdgeRR, Convergence](../methods/heterorr.md#convergence-and-what-a-release-claims)): the",
        "second half of the trace a plateau (rise of the last quarter's mean over the third's ≤ 1·sd).",
        "",
        "| graph | n | wall budget s | moves/s | moves/n reached | first checkpoint passing (moves/n) |",
        "|---|---|---|---|---|---|",
    ]
    for r in runs["runs"]:
        first = r["first_pass_moves_per_node"]
        lines.append(
            f"| {r['graph']} | {r['n']:,} | {r['budget_s']:g} | {r['moves_per_s']:,} | {r['moves'] // r['n']:,} | "
            f"{'none' if first is None else f'{first:,}'} |"
        )
    lines += ["", "Checkpoints (rise/sd over the second half; > 1 fails):", ""]
    lines += ["| graph | moves/n | wall s | rise/sd | passes |", "|---|---|---|---|---|"]
    for r in runs["runs"]:
        for c in r["checkpoints"]:
            lines.append(
                f"| {r['graph']} | {c['moves_per_node']:,} | {c['seconds']} | {c['rise_over_sd']} | "
                f"{'yes' if c['passes'] else 'no'} |"
            )
    pathlib.Path(out).write_text("\n".join(lines) + "\n")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", nargs="*", type=int, default=[1_000, 10_000, 100_000, 1_000_000])
    ap.add_argument("--datasets", nargs="*", default=["cora", "citeseer", "facebook"])
    ap.add_argument("--moves", type=int, default=2_000_000)
    ap.add_argument("--child", help=argparse.SUPPRESS)
    ap.add_argument(
        "--trace", type=int, default=5000, help="datasets: trace the log-likelihood over this many moves per node"
    )
    ap.add_argument(
        "--chains",
        type=int,
        default=1,
        help="datasets: trace this many chains (seeds 0, 1, …) and print Gelman–Rubin R̂ over their second halves",
    )
    ap.add_argument("--quality", help="a dataset: what EdgeRR and LapGraph add to the public graph (no GCN)")
    ap.add_argument("--ratio", type=float, default=0.05, help="--quality: share of private edges")
    ap.add_argument("--epsilons", nargs="*", type=float, default=[0.5, 1, 2, 4, 8])
    ap.add_argument("--floors", nargs="*", type=float, default=[0.0, 3.0], help="--quality: EdgeRR's κ values")
    ap.add_argument("--steps", type=int, default=1000, help="--quality: MCMC moves per node")
    ap.add_argument("--seeds", type=int, default=2, help="--quality: releases per setting (averaged)")
    ap.add_argument(
        "--structure", default="private-mcmc", choices=["private-mcmc", "public"], help="--quality: EdgeRR's dendrogram"
    )
    ap.add_argument("--converge", nargs="*", type=int, help="SBM sizes: moves to the convergence criterion")
    ap.add_argument("--budget", nargs="*", type=float, default=[60.0], help="--converge: wall seconds per size")
    ap.add_argument("--page", action="store_true", help="write --page-file from --results")
    ap.add_argument("--results", default=RESULTS, help="--converge/--page: the results file (any folder)")
    ap.add_argument("--page-file", default=PAGE, help="--converge/--page: the page written")
    args = ap.parse_args()
    if args.page:
        page(args.results, args.page_file)
        return
    if args.converge:
        import os

        budgets = args.budget * len(args.converge) if len(args.budget) == 1 else args.budget
        runs = [converge(n, b) for n, b in zip(args.converge, budgets)]
        load = "/".join(f"{x:.2f}" for x in os.getloadavg())
        command = ("nice " if os.nice(0) > 0 else "") + "python benchmarks/hrg_mcmc.py " + " ".join(sys.argv[1:])
        pathlib.Path(args.results).parent.mkdir(parents=True, exist_ok=True)
        pathlib.Path(args.results).write_text(json.dumps({"command": command, "load": load, "runs": runs}, indent=1))
        page(args.results, args.page_file)
        return
    if args.quality:
        quality(args.quality, args.ratio, args.epsilons, args.floors, args.steps, args.seeds, args.structure)
        return
    if args.child:
        print(json.dumps(one(args.child, args.moves, 0 if args.child.isdigit() else args.trace, args.chains)))
        return
    print("| graph | n | edges | build s | moves/s | acceptance | peak RSS MiB |")
    print("|---|---|---|---|---|---|---|")
    traces = []
    for source in [str(s) for s in args.sizes] + list(args.datasets):
        cmd = [
            sys.executable,
            __file__,
            "--child",
            source,
            "--moves",
            str(args.moves),
            "--trace",
            str(args.trace),
            "--chains",
            str(args.chains),
        ]
        r = json.loads(subprocess.run(cmd, check=True, capture_output=True, text=True).stdout.splitlines()[-1])
        print(
            f"| {r['graph']} | {r['n']} | {r['edges']} | {r['build_s']} | {r['moves_per_s']:,} | "
            f"{r['acceptance']} | {r['peak_rss_mib']} |",
            flush=True,
        )
        if "trace" in r:
            traces.append(r)
    for r in traces:
        print(f"\n{r['graph']}: (moves/n, L_pub, L_pri) over {args.trace}·n moves: {r['trace']}")
        if "rhat" in r:
            print(f"{r['graph']}: {args.chains} chains, final L_pub + s·L_pri {r['final']}, R̂ = {r['rhat']}")


if __name__ == "__main__":
    main()
