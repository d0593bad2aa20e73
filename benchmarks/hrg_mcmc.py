"""EdgeRR's pHRG MCMC: throughput (moves per second) and its growth with n.

    python benchmarks/hrg_mcmc.py --sizes 1000 10000 100000 1000000 --datasets cora citeseer facebook

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
import resource
import subprocess
import sys
import time


def one(source: str, moves: int, trace: int) -> dict:
    import numpy as np
    import torch

    from privgraph.data import load, mark_private_edges, split_edges
    from privgraph.data.synthetic import sbm_edges
    from privgraph.mechanisms import make_generator
    from privgraph.methods.heterorr.hrg import PHRGSampler, lemma4_sensitivity
    from torch_geometric.data import Data

    if source.isdigit():
        n, blocks = int(source), 10
        edges = sbm_edges([n // blocks] * blocks, 10 * 0.7 / (n / blocks), 10 * 0.3 / (n * (1 - 1 / blocks)),
                          np.random.default_rng(0))
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
    out.update(moves=moves, moves_per_s=round(moves / seconds), acceptance=round((sampler.accepted - before) / moves, 3))
    if trace:  # a fresh chain, traced over trace·n moves
        fresh = PHRGSampler(n, pub, pri, np.ones(n, dtype=np.int64), scale, make_generator(0))
        total = trace * n
        t = fresh.run(total, trace_every=max(1, total // 10))
        out["trace"] = [(s // n, round(lp), round(lq)) for s, lp, lq in t]  # (moves/n, L_pub, L_pri)
    out["peak_rss_mib"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", nargs="*", type=int, default=[1_000, 10_000, 100_000, 1_000_000])
    ap.add_argument("--datasets", nargs="*", default=["cora", "citeseer", "facebook"])
    ap.add_argument("--moves", type=int, default=2_000_000)
    ap.add_argument("--child", help=argparse.SUPPRESS)
    ap.add_argument("--trace", type=int, default=5000, help="datasets: trace the log-likelihood over this many moves per node")
    args = ap.parse_args()
    if args.child:
        print(json.dumps(one(args.child, args.moves, 0 if args.child.isdigit() else args.trace)))
        return
    print("| graph | n | edges | build s | moves/s | acceptance | peak RSS MiB |")
    print("|---|---|---|---|---|---|---|")
    traces = []
    for source in [str(s) for s in args.sizes] + list(args.datasets):
        cmd = [sys.executable, __file__, "--child", source, "--moves", str(args.moves), "--trace", str(args.trace)]
        r = json.loads(subprocess.run(cmd, check=True, capture_output=True, text=True).stdout.splitlines()[-1])
        print(f"| {r['graph']} | {r['n']} | {r['edges']} | {r['build_s']} | {r['moves_per_s']:,} | "
              f"{r['acceptance']} | {r['peak_rss_mib']} |", flush=True)
        if "trace" in r:
            traces.append(r)
    for r in traces:
        print(f"\n{r['graph']}: (moves/n, L_pub, L_pri) over {args.trace}·n moves: {r['trace']}")


if __name__ == "__main__":
    main()
