"""Blink at scale: client (Algorithm 1) plus server (MLE, posterior, Blink-Hard
and Blink-Hybrid) on synthetic sparse SBM graphs (average degree ≈ 10) at ε = 4, δ = 0.1.
Each size runs in its own process so that peak memory (ru_maxrss) is its own.

    python benchmarks/blink_scale.py --sizes 100000 300000 1000000
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import time


def one(n: int, eps: float, delta: float) -> dict:
    import numpy as np
    import torch

    from privgraph.data.synthetic import sbm_edges
    from privgraph.mechanisms import make_generator
    from privgraph.methods.blink import beta_mle, clip_degrees, hard_graph, hybrid_graph, link_ldp

    torch.set_num_threads(2)
    blocks = 10
    edges = sbm_edges(
        [n // blocks] * blocks, 10 * 0.7 / (n / blocks), 10 * 0.3 / (n * (1 - 1 / blocks)), np.random.default_rng(0)
    )
    out = {"n": n, "edges": int(edges.shape[1])}
    start = time.perf_counter()
    reports = link_ldp(edges, n, eps, delta, make_generator(0))
    out["client_s"] = time.perf_counter() - start
    t = time.perf_counter()
    fit = beta_mle(clip_degrees(reports.noisy_degrees, n), tol=1e-6)
    out.update(mle_s=time.perf_counter() - t, mle_iterations=fit.iterations, mle_exact=fit.exact)
    t = time.perf_counter()
    hard = hard_graph(reports, fit.beta)
    out.update(
        hard_s=time.perf_counter() - t, hard_edges=int(hard.edge_index.shape[1]), visited_pairs=hard.visited_pairs
    )
    t = time.perf_counter()
    hybrid = hybrid_graph(reports, fit.beta)
    out.update(
        hybrid_s=time.perf_counter() - t,
        hybrid_edges=int(hybrid.edge_index.shape[1]),
        hybrid_visited=hybrid.visited_pairs,
    )
    out["total_s"] = time.perf_counter() - start
    out["peak_rss_mib"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", nargs="+", type=int, default=[100_000, 300_000, 1_000_000])
    ap.add_argument("--epsilon", type=float, default=4.0)
    ap.add_argument("--delta", type=float, default=0.1)
    ap.add_argument("--child", type=int, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        print(json.dumps(one(args.child, args.epsilon, args.delta)))
        return
    print(
        "| n | directed edges | client s | MLE s (iterations) | Hard s | Hard edges | Hard pairs visited "
        "| Hybrid s | Hybrid edges | Hybrid pairs visited | total s | peak RSS MiB |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for n in args.sizes:
        res = subprocess.run(
            [sys.executable, __file__, "--child", str(n), "--epsilon", str(args.epsilon), "--delta", str(args.delta)],
            capture_output=True,
            text=True,
            check=True,
        )
        r = json.loads(res.stdout.strip().splitlines()[-1])
        print(
            f"| {r['n']:,} | {r['edges']:,} | {r['client_s']:.1f} | {r['mle_s']:.1f} ({r['mle_iterations']}) | "
            f"{r['hard_s']:.1f} | {r['hard_edges']:,} | {r['visited_pairs']:,} | {r['hybrid_s']:.1f} | "
            f"{r['hybrid_edges']:,} | {r['hybrid_visited']:,} | {r['total_s']:.1f} | "
            f"{r['peak_rss_mib']:.0f} |",
            flush=True,
        )


if __name__ == "__main__":
    main()
