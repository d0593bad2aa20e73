"""Peak memory and time of LPGNN (release + training) against a plain PyG GCN on the same graph.

    PRIVGRAPH_DATA=../shared/datasets python benchmarks/lpgnn_memory.py --datasets cora facebook
    python benchmarks/lpgnn_memory.py --table    # remake the page from the stored JSON

Every configuration runs in a fresh subprocess (``--one``) so that its peak is its own: the
resident set is sampled by a thread every 2 ms (psutil) to attribute the peak to a phase
(``load``, ``release``, ``train``), and the process's ``ru_maxrss`` is the peak over its life
(tracemalloc does not see torch's allocations).  The configurations:

* ``pyg_gcn``: a two-layer ``torch_geometric.nn.GCNConv`` model (hidden 16, PyG's default
  ``cached=False``), trained with Adam for ``--epochs`` full-batch epochs on the raw features,
  the validation accuracy after each and the best state kept (privgraph's protocol);
* ``gcn_raw``: privgraph's GCN+RAW baseline (``privatize(data, "gcn-raw")`` and ``fit``);
* ``lpgnn``: ``privatize(data, "lpgnn", epsilon=1, seed=0)`` (multi-bit, Algorithm 1) and ``fit``
  (KProp K = 4, Algorithm 2, then the two-layer model), the same epochs and hidden size.

``fit`` runs every epoch (patience = epochs).  Each configuration runs ``--repeats`` times; the
table shows medians, the load average and the ratio of LPGNN to the plain PyG GCN.  Results go
to ``benchmarks/results/lpgnn_memory.json`` and the page to ``docs/benchmarks/lpgnn_memory.md``.
"""

from __future__ import annotations

import argparse
import copy
import json
import os
import platform
import resource
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
CONFIGS = ("pyg_gcn", "gcn_raw", "lpgnn", "lpgnn_before")


class RssSampler:
    """The process's resident set, sampled in a thread; ``phase`` names what runs now."""

    def __init__(self, interval: float = 0.002):
        import psutil

        self.proc, self.interval, self.phase = psutil.Process(), interval, "start"
        self.peaks: dict[str, int] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.is_set():
            self.sample()
            time.sleep(self.interval)

    def sample(self) -> None:
        rss = self.proc.memory_info().rss
        if rss > self.peaks.get(self.phase, 0):
            self.peaks[self.phase] = rss

    def enter(self, phase: str) -> None:
        self.sample()
        self.phase = phase
        self.sample()

    def __enter__(self) -> RssSampler:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()


def pyg_gcn(data, hidden: int, epochs: int, seed: int) -> float:
    """The plain PyG two-layer GCN, trained on the raw features; returns the final test accuracy."""
    import torch
    import torch.nn.functional as F
    from torch_geometric.nn import GCNConv

    torch.manual_seed(seed)
    k = int(data.y.max()) + 1
    convs = torch.nn.ModuleList([GCNConv(data.num_features, hidden), GCNConv(hidden, k)])
    opt = torch.optim.Adam(convs.parameters(), lr=0.01, weight_decay=5e-4)
    x, ei = data.x, data.edge_index
    best, best_state = -1.0, None
    for _ in range(epochs):  # privgraph's protocol: a training step, then the validation accuracy
        convs.train()
        opt.zero_grad()
        h = F.dropout(convs[0](x, ei).relu(), 0.5, True)
        F.cross_entropy(convs[1](h, ei)[data.train_mask], data.y[data.train_mask]).backward()
        opt.step()
        convs.eval()
        with torch.no_grad():
            pred = convs[1](convs[0](x, ei).relu(), ei).argmax(-1)
        val = float((pred[data.val_mask] == data.y[data.val_mask]).float().mean())
        if val > best:
            best, best_state = val, copy.deepcopy(convs.state_dict())
    convs.load_state_dict(best_state)
    with torch.no_grad():
        out = convs[1](convs[0](x, ei).relu(), ei)
    return float((out[data.test_mask].argmax(-1) == data.y[data.test_mask]).float().mean())


def _toy_graph():
    import torch
    from torch_geometric.data import Data

    edge_index = torch.tensor([[0, 1, 2], [1, 2, 3]])
    return Data(x=torch.rand(4, 3), edge_index=edge_index, num_nodes=4, feature_domain=(0.0, 1.0))


def run_one(config: str, dataset: str, hidden: int, epochs: int, epsilon: float) -> dict:
    """One configuration in this process (the ``--one`` child)."""
    import torch

    torch.set_num_threads(1)
    with RssSampler() as mem:
        import privgraph as pg
        from privgraph.data import load

        pg.privatize(_toy_graph(), "lpgnn", epsilon=1.0, seed=0)  # every configuration: the lazy imports, untimed
        mem.enter("load")
        data = load(dataset)
        times: dict[str, float] = {}
        mem.enter("release")
        start = time.perf_counter()
        if config == "pyg_gcn":
            times["release_s"] = 0.0
            mem.enter("train")
            start = time.perf_counter()
            acc = pyg_gcn(data, hidden, epochs, seed=0)
        else:
            method, eps = ("gcn-raw", None) if config == "gcn_raw" else ("lpgnn", epsilon)
            rel = pg.privatize(data, method, epsilon=eps, seed=0)
            times["release_s"] = time.perf_counter() - start
            mem.enter("train")
            start = time.perf_counter()
            acc = pg.fit(rel, seed=0, hidden=hidden, epochs=epochs, patience=epochs).test_accuracy
        times["train_s"] = time.perf_counter() - start
        mem.enter("end")
    mib = 1024 * 1024
    return {
        "config": config,
        "dataset": dataset,
        "nodes": int(data.num_nodes),
        "features": int(data.num_features),
        "edges": int(data.edge_index.shape[1]),
        "test_accuracy": acc,
        **times,
        "total_s": times["release_s"] + times["train_s"],
        "maxrss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
        "phase_peak_mib": {k: v / mib for k, v in mem.peaks.items()},
    }


def measure(
    datasets: list[str], repeats: int, hidden: int, epochs: int, epsilon: float, before: str | None
) -> list[dict]:
    rows = []
    configs = [c for c in CONFIGS if before or c != "lpgnn_before"]
    for dataset in datasets:
        for rep in range(repeats):
            for config in configs:  # interleaved: the same load for every configuration
                env = dict(os.environ)
                if config == "lpgnn_before":  # the same script on the code before the memory work
                    env["PYTHONPATH"] = before
                cmd = [sys.executable, __file__, "--one", config, "--datasets", dataset]
                cmd += ["--hidden", str(hidden), "--epochs", str(epochs), "--epsilon", str(epsilon)]
                load = os.getloadavg()[0]
                out = subprocess.run(cmd, check=True, capture_output=True, text=True, env=env).stdout
                row = json.loads(out.strip().splitlines()[-1])
                row.update(repeat=rep, load_avg_1m=round(load, 2))
                print(
                    f"{dataset:10s} {config:8s} peak {row['maxrss_mib']:7.0f} MiB  "
                    f"release {row['release_s']:6.2f} s  train {row['train_s']:6.2f} s  load {load:.2f}",
                    flush=True,
                )
                rows.append(row)
    return rows


def summarize(rows: list[dict]) -> list[dict]:
    """Medians per (dataset, config) and the ratios to the plain PyG GCN."""
    out = []
    for dataset in dict.fromkeys(r["dataset"] for r in rows):
        med = {}
        configs = [c for c in CONFIGS if any(r["config"] == c for r in rows)]
        for config in configs:
            sel = [r for r in rows if r["dataset"] == dataset and r["config"] == config]
            med[config] = {k: statistics.median(r[k] for r in sel) for k in ("maxrss_mib", "total_s", "train_s")}
            med[config]["release_s"] = statistics.median(r["release_s"] for r in sel)
            med[config]["test_accuracy"] = sel[0]["test_accuracy"]
            med[config]["n"] = len(sel)
        base = med["pyg_gcn"]
        for config in configs:
            m = med[config]
            out.append(
                {
                    "dataset": dataset,
                    "config": config,
                    **m,
                    "memory_ratio": m["maxrss_mib"] / base["maxrss_mib"],
                    "time_ratio": m["total_s"] / base["total_s"],
                }
            )
    return out


def write_page(result: dict, path: Path) -> None:
    s = result["settings"]
    lines = [
        "# LPGNN: memory and time",
        "",
        "<!-- generated by `python benchmarks/lpgnn_memory.py --table` from benchmarks/results/lpgnn_memory.json;"
        " do not edit -->",
        "",
        "Peak resident memory (`ru_maxrss` of a fresh process per run: Python, torch and PyG loaded, the dataset,",
        "the release and the training) and wall time of LPGNN (multi-bit release at "
        f"ε = {s['epsilon']:g}, then KProp K = 4 and a two-layer GCN) against a plain PyG two-layer `GCNConv` model",
        f"on the raw features, {s['epochs']} epochs, hidden {s['hidden']}, one torch thread; "
        f"medians of {s['repeats']} runs, the configurations interleaved.",
        "Target: LPGNN ≤ 1.2× the GCN's peak memory and time.",
        "",
        "| dataset | configuration | peak MiB | × GCN | release s | train s | total s | × GCN | test acc. |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in result["summary"]:
        lines.append(
            f"| {r['dataset']} | {r['config']} | {r['maxrss_mib']:.0f} | {r['memory_ratio']:.2f} | "
            f"{r['release_s']:.2f} | {r['train_s']:.2f} | {r['total_s']:.2f} | {r['time_ratio']:.2f} | "
            f"{r['test_accuracy']:.3f} |"
        )
    loads = [r["load_avg_1m"] for r in result["runs"]]
    lines += [
        "",
        f"Load average (1 min) during the runs: {min(loads):.2f}–{max(loads):.2f} on {result['cpus']} CPUs "
        f"({result['platform']}, torch {result['torch']}).",
        "",
        "Where LPGNN's memory goes, and what was changed to keep it near the GCN's: see",
        "[the LPGNN page](../methods/lpgnn.md#memory).",
        "",
    ]
    path.write_text("\n".join(lines))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--datasets", nargs="+", default=["cora", "facebook"])
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--hidden", type=int, default=16)
    ap.add_argument("--epochs", type=int, default=100)
    ap.add_argument("--epsilon", type=float, default=1.0)
    ap.add_argument(
        "--before",
        metavar="SRC",
        help="also run LPGNN from this source tree (lpgnn_before), e.g. `git archive ad1a45c src | tar -x -C /tmp/b`",
    )
    ap.add_argument("--one", choices=CONFIGS, help=argparse.SUPPRESS)
    ap.add_argument("--out", default=str(HERE / "results" / "lpgnn_memory.json"))
    ap.add_argument("--page", default=str(HERE.parent / "docs" / "benchmarks" / "lpgnn_memory.md"))
    ap.add_argument("--table", action="store_true", help="only remake the page from the stored JSON")
    args = ap.parse_args()
    if args.one:
        print(json.dumps(run_one(args.one, args.datasets[0], args.hidden, args.epochs, args.epsilon)))
        return
    if args.table:
        write_page(json.loads(Path(args.out).read_text()), Path(args.page))
        return
    import torch

    rows = measure(args.datasets, args.repeats, args.hidden, args.epochs, args.epsilon, args.before)
    result = {
        "settings": {
            "hidden": args.hidden,
            "epochs": args.epochs,
            "epsilon": args.epsilon,
            "repeats": args.repeats,
            "threads": 1,
            "before": "ad1a45c (before the memory work)" if args.before else None,
        },
        "cpus": os.cpu_count(),
        "platform": platform.platform(),
        "torch": torch.__version__,
        "runs": rows,
        "summary": summarize(rows),
    }
    Path(args.out).write_text(json.dumps(result, indent=1) + "\n")
    write_page(result, Path(args.page))


if __name__ == "__main__":
    main()
