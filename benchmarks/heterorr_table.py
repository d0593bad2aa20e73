"""HeteroRR and its baselines: GCN test micro-F1 (= accuracy, single-label) vs ε.

    python benchmarks/heterorr_table.py --datasets cora citeseer --levels feature edge both \
        --epsilons 0.5 1 2 4 8 --ratios 0.05 0.1 0.2 --trials 2

* feature level: FeatureRR vs Duchi, Piecewise, Hybrid, Three-output, PM-SUB
  (``featureldp --mechanism …``: unbiased estimate + GCN) and LPGNN
  (multi-bit + KProp); the edges are the original graph's.
* edge level, per private-edge ratio ρ: EdgeRR vs privHRG, EdgeRand, LapGraph;
  raw features.
* both: HeteroRR with ε_f = ε_e = ε, per ρ.
* the non-private GCN as the reference.

Default hyperparameters (no tuning).  Results go to the SQLite store
(``--db``), the markdown table to ``--out``.  The HeteroRR paper reports
figures on FLICKR-MIR and PPI only (no table to compare with).
"""

from __future__ import annotations

import argparse
import json
import time

from _tables import accuracy_cells, write_markdown

from privgraph.experiments import ExperimentSpec, ResultsStore, run_experiment
from privgraph.methods import method_class

FEATURE = {"FeatureRR": ("featurerr", None), "Duchi": ("featureldp", "duchi"), "Piecewise": ("featureldp", "piecewise"),
           "Hybrid": ("featureldp", "hybrid"), "Three-output": ("featureldp", "three-output"),
           "PM-SUB": ("featureldp", "pm-sub"), "LPGNN": ("lpgnn", "multibit")}
EDGE = {"EdgeRR": "edgerr", "privHRG": "privhrg", "EdgeRand": "edgerand", "LapGraph": "lapgraph"}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--datasets", nargs="+", default=["cora", "citeseer", "facebook"])
    ap.add_argument("--levels", nargs="+", default=["feature", "edge", "both"], choices=["feature", "edge", "both"])
    ap.add_argument("--methods", nargs="+", default=None, help="labels to run (default: all of the levels)")
    ap.add_argument("--epsilons", nargs="+", type=float, default=[0.5, 1, 2, 4, 8])
    ap.add_argument("--ratios", nargs="+", type=float, default=[0.05, 0.1, 0.2])
    ap.add_argument("--edgerand-epsilons", nargs="+", type=float, default=None,
                    help="ε values for EdgeRand (default: --epsilons); its graph has ~n²/(2(1+e^ε)) edges, "
                         "so small ε makes each GCN training minutes long")
    ap.add_argument("--trials", type=int, default=2)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--db", default="benchmarks/out/heterorr.db")
    ap.add_argument("--out", default="benchmarks/out/heterorr_table.md")
    args = ap.parse_args()

    store = ResultsStore(args.db)
    runs: list[tuple[str, str, str, str | None, float | None]] = []  # (level, label, method, mechanism, ρ)
    for level in args.levels:
        if level == "feature":
            runs += [("feature", label, m, mech, None) for label, (m, mech) in FEATURE.items()]
        elif level == "edge":
            for rho in args.ratios:
                runs += [("edge", label, m, None, None if m == "privhrg" else rho) for label, m in EDGE.items()
                         if m != "privhrg" or rho == args.ratios[0]]
        else:
            runs += [("both", "HeteroRR", "heterorr", None, rho) for rho in args.ratios]
    if args.methods:
        runs = [r for r in runs if r[1] in args.methods]
    runs = [("reference", "non-private", "gcn-raw", None, None)] + runs

    rows = []
    for dataset in args.datasets:
        for level, label, method, mechanism, rho in runs:
            start = time.perf_counter()
            epsilons = args.edgerand_epsilons if method == "edgerand" and args.edgerand_epsilons else args.epsilons
            spec = ExperimentSpec(method=method, dataset=dataset, epsilons=epsilons if method_class(method).private else [],
                                  trials=args.trials, seed=args.seed,
                                  params={"mechanism": mechanism} if mechanism else {}, private_ratio=rho)
            try:
                result = run_experiment(spec, store)
            except ValueError as err:  # e.g. EdgeRand's output too dense at small ε on a large graph
                cells, name = {}, dataset
                for eps in epsilons:  # run what fits, one ε at a time
                    try:
                        one = run_experiment(ExperimentSpec(**{**spec.__dict__, "epsilons": [eps]}), store)
                        r, name = one.summary()[0], one.records[0].dataset
                        cells[f"{eps:g}"] = f"{100 * r['mean']:.1f} ± {100 * r['std']:.1f}"
                    except ValueError:
                        cells[f"{eps:g}"] = "too dense"
                print(f"# {label} on {dataset}: {err}", flush=True)
                rows.append({"dataset": name, "level": level, "method": label, "rho": rho, "cells": cells,
                             "seconds": round(time.perf_counter() - start, 1)})
                print(json.dumps(rows[-1]), flush=True)
                continue
            cells = accuracy_cells(result.summary())
            rows.append({"dataset": result.records[0].dataset, "level": level, "method": label,
                         "rho": rho, "cells": cells, "seconds": round(time.perf_counter() - start, 1)})
            print(json.dumps(rows[-1]), flush=True)

    def lead(r):
        rho = "all" if r["method"] == "privHRG" else ("" if r["rho"] is None else f"{r['rho']:g}")
        return [r["dataset"], r["level"], r["method"], rho]

    print(write_markdown(args.out, ["dataset", "level", "method", "ρ"], [], args.epsilons, rows, lead))

if __name__ == "__main__":
    main()
