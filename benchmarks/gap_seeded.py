"""GAP's releases (gap-inf, gap-edp with and without ε, gap-ndp at the defaults and at 10 + 10 epochs, with and
without ε) on the demo SBM graph (privgraph.experiments.demo.DEMO_GRAPH) with seed 0, saved for a bitwise
comparison of two checkouts: the released tables or weights, the reports, fields, details and the fitted
accuracies (about 1 minute on 2 idle cores).

usage: PYTHONPATH=src python benchmarks/gap_seeded.py run OUT.pt     (in each checkout)
       python benchmarks/gap_seeded.py compare A.pt B.pt              (exit status 1 when anything differs)"""

import sys
import time

import torch

import privgraph as pg
from privgraph.data import sbm_graph
from privgraph.experiments.demo import DEMO_GRAPH


def run(out):
    torch.use_deterministic_algorithms(True)
    data = sbm_graph(**DEMO_GRAPH, seed=0)
    deg = int(torch.bincount(data.edge_index[0], minlength=data.num_nodes).max())
    ndp = {"max_degree": deg, "num_train": int(data.train_mask.sum())}
    runs = {
        "gap-inf": ("gap-inf", None, {}),
        "gap-edp-eps1": ("gap-edp", 1.0, {}),
        "gap-edp-none": ("gap-edp", None, {}),
        "gap-ndp-eps1": ("gap-ndp", 1.0, ndp),
        "gap-ndp-eps1-fast": ("gap-ndp", 1.0, {**ndp, "encoder_epochs": 10, "epochs": 10}),
        "gap-ndp-none": ("gap-ndp", None, {**ndp, "encoder_epochs": 10, "epochs": 10}),
    }
    saved = {}
    for key, (method, eps, params) in runs.items():
        t = time.perf_counter()
        rel = pg.privatize(data, method, epsilon=eps, seed=0, **params)
        fitted = pg.fit(rel, seed=0, truth=data) if method == "gap-ndp" else pg.fit(rel, seed=0)
        saved[key] = {
            "x": rel.data.x if "x" in rel.data else None,
            "model_state": dict(rel.model_state or {}),
            "test_accuracy": fitted.test_accuracy,
            "val_accuracy": fitted.val_accuracy,
            "report": repr(rel.report),
            "fields": dict(rel.fields),
            "details": repr({k: v for k, v in rel.details.items() if "second" not in k and "time" not in k}),
        }
        print(key, f"test={fitted.test_accuracy:.4f}", f"{time.perf_counter() - t:.1f}s", flush=True)
    torch.save(saved, out)


def compare(a, b):
    A, B = torch.load(a, weights_only=False), torch.load(b, weights_only=False)
    ok = True
    for key in A:
        same = []
        for field in A[key]:
            va, vb = A[key][field], B[key][field]
            if isinstance(va, dict):
                eq = va.keys() == vb.keys() and all(
                    torch.equal(va[k], vb[k]) if isinstance(va[k], torch.Tensor) else va[k] == vb[k] for k in va
                )
            elif isinstance(va, torch.Tensor):
                eq = torch.equal(va, vb)
            else:
                eq = va == vb
            same.append(f"{field}={'same' if eq else 'DIFFERENT'}")
            ok &= bool(eq)
        print(key, " ".join(same), f"acc {A[key]['test_accuracy']:.4f}/{B[key]['test_accuracy']:.4f}")
    print("IDENTICAL" if ok else "DIFFERENT")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(run(sys.argv[2]) if sys.argv[1] == "run" else compare(sys.argv[2], sys.argv[3]))
