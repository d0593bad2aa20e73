"""The same work on the CPU and on a GPU: LPGNN, Blink (10⁵ and 10⁶ nodes; Soft's exact posterior at
the largest size that fits) and HeteDP's DP-SGD link model.

    python benchmarks/device_speed.py run --device cuda --out benchmarks/results/device_speed.jsonl
    python benchmarks/device_speed.py table          # docs/benchmarks/device.md from the stored rows

``run`` times every case on the CPU (all its threads, or ``--cpu-threads``) and on ``--device``, one
JSON line per (case, device) appended to ``--out`` as soon as it is measured (a run cut short keeps
what it finished).  Each row names the device in words (the GPU's name, or the CPU with its thread
count), the host's CPU count, torch's version and the wall seconds of each timed part.  The noise is
drawn on the CPU on every device (:mod:`privgraph.device`), so a release's *privacy* part costs the
same everywhere; what a GPU speeds up is the training on the release and the dense Blink-Soft layers.

Cases (``--cases``, default all):

* ``lpgnn``: one trial of ``privgraph run lpgnn --dataset facebook --epsilon 1`` (multi-bit release,
  KProp, GCN training with selection on validation), through the experiment pipeline;
* ``blink``: ``privatize(variant="hard")`` at 10⁵ and 10⁶ nodes (synthetic SBM, average degree 10,
  32 features; the server's pair kernels are numba on the CPU whatever the device), then
  ``fit`` (GCN, ``--blink-epochs`` epochs without early stopping) on each device;
* ``soft``: Blink-Soft's exact posterior P (n × n, never held whole) trained on (GCN, 20 epochs) at
  growing n until a size takes over ``--soft-budget`` seconds; the CPU stops at ``--soft-cpu-max`` nodes;
* ``hetedp``: one trial of ``privgraph run hetedp --dataset acm --task lp --epsilon 1`` (DP-SGD on
  the link model; σ calibrated once), also with ``--cpu-threads 2`` for the 2-core figure.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "benchmarks" / "results" / "device_speed.jsonl"
PAGE = ROOT / "docs" / "benchmarks" / "device.md"
CASES = ("lpgnn", "blink", "soft", "hetedp")


def _host() -> dict:
    import torch

    return {
        "host_cpus": os.cpu_count(),
        "machine": platform.machine(),
        "torch": torch.__version__,
        "python": platform.python_version(),
    }


def _sync(device) -> None:
    import torch

    if device.type == "cuda":
        torch.cuda.synchronize(device)


class Recorder:
    """Appends one JSON line per measurement to ``path`` (and prints it)."""

    def __init__(self, path: Path):
        self.path = path
        path.parent.mkdir(parents=True, exist_ok=True)

    def add(self, case: str, size: str, device, parts: dict, **extra) -> None:
        from privgraph.device import device_name

        row = {"case": case, "size": size, "device": device_name(device), "device_type": device.type}
        row.update(parts=parts, **extra, **_host())
        with self.path.open("a") as f:
            f.write(json.dumps(row) + "\n")
        print(json.dumps(row), flush=True)


def _timed(device, fn):
    _sync(device)
    start = time.perf_counter()
    value = fn()
    _sync(device)
    return value, time.perf_counter() - start


def _devices(args) -> list:
    from privgraph.device import resolve_device

    return [resolve_device("cpu"), resolve_device(args.device)]


def _with_threads(threads: int | None):
    import torch

    if threads:
        torch.set_num_threads(threads)
    return torch.get_num_threads()


def case_trial(rec: Recorder, args, name: str, **spec) -> None:
    """One pipeline trial per device (CPU first)."""
    from privgraph.device import on_device
    from privgraph.experiments.pipeline import Experiment, ExperimentSpec, run_experiment

    Experiment(ExperimentSpec(**spec)).task.load()  # the dataset's processing (cached) is not timed
    for threads, device in [(t, _devices(args)[0]) for t in args.cpu_threads] + [(None, _devices(args)[1])]:
        _with_threads(threads or os.cpu_count())
        with on_device(device):
            result, wall = _timed(device, lambda: run_experiment(ExperimentSpec(device=str(device), **spec)))
        metrics = result.records[0].metrics
        rec.add(name, spec.get("dataset", ""), device, {"trial": wall}, metrics=metrics)
    _with_threads(os.cpu_count())


def case_blink(rec: Recorder, args) -> None:
    import privgraph as pg
    from privgraph.data.synthetic import sbm_graph

    pg.privatize(sbm_graph(num_nodes=500, seed=0), "blink", epsilon=4.0, seed=0, variant="hard")  # compile numba
    for n in args.blink_sizes:
        data, built = _timed(_devices(args)[0], lambda n=n: sbm_graph(num_nodes=n, num_features=32, avg_degree=10.0))
        rel, released = _timed(
            _devices(args)[0], lambda: pg.privatize(data, "blink", epsilon=4.0, seed=0, variant="hard")
        )
        for device in _devices(args):
            e = args.blink_epochs
            res, wall = _timed(device, lambda d=device: pg.fit(rel, seed=0, epochs=e, patience=e, device=d))
            rec.add(
                "blink-hard",
                f"{n:.0e}",
                device,
                {"release (CPU kernels)": released, "fit": wall, "fit per epoch": wall / e},
                nodes=n,
                edges=int(data.edge_index.shape[1]),
                accuracy=res.test_accuracy,
                graph_seconds=built,
            )
        data = rel = None  # free the graph before the next size


def case_soft(rec: Recorder, args) -> None:
    import privgraph as pg
    from privgraph.data.synthetic import sbm_graph

    cpu, device = _devices(args)
    for dev, sizes in ((cpu, [n for n in args.soft_sizes if n <= args.soft_cpu_max]), (device, args.soft_sizes)):
        for n in sizes:
            data = sbm_graph(num_nodes=n, num_features=32, avg_degree=10.0)
            rel, released = _timed(
                cpu,
                lambda n=n: pg.privatize(data, "blink", epsilon=4.0, seed=0, variant="soft", soft_exact_limit=n),
            )
            res, wall = _timed(dev, lambda d=dev: pg.fit(rel, seed=0, epochs=20, patience=20, device=d))
            rec.add(
                "blink-soft",
                f"{n}",
                dev,
                {"release (CPU kernels)": released, "fit": wall, "fit per epoch": wall / 20},
                nodes=n,
                accuracy=res.test_accuracy,
            )
            if released + wall > args.soft_budget:
                break


def run(args: argparse.Namespace) -> None:
    rec = Recorder(Path(args.out))
    for case in args.cases:
        print(f"--- {case}", flush=True)
        if case == "lpgnn":
            case_trial(rec, args, "lpgnn", method="lpgnn", dataset="facebook", epsilons=[1.0], trials=1)
        elif case == "hetedp":
            args_2 = argparse.Namespace(**{**vars(args), "cpu_threads": sorted({*args.cpu_threads, 2}, reverse=True)})
            case_trial(rec, args_2, "hetedp", method="hetedp", dataset="acm", task="lp", epsilons=[1.0], trials=1)
        elif case == "blink":
            case_blink(rec, args)
        elif case == "soft":
            case_soft(rec, args)


def table(results: Path) -> str:
    rows = [json.loads(line) for line in results.read_text().splitlines() if line.strip()]
    shown = results.resolve().relative_to(ROOT) if results.resolve().is_relative_to(ROOT) else results
    lines = [
        "# CPU and GPU",
        "",
        "The same work on a machine's CPU and on its GPU (`benchmarks/device_speed.py`; the rows below come from",
        f"`{shown}`, made by `python benchmarks/device_speed.py table`).  The noise is drawn",
        "on the CPU on every device, so a seeded release is bit-identical on both; what the GPU speeds up",
        "is training on the release and Blink-Soft's dense layers.  Blink's server kernels (numba), the",
        "pHRG chain, metapath2vec's walks, SHAP and the scikit-learn attack classifiers run on the CPU.",
        "Each figure is one run (seconds of wall time); the device column names the card or the CPU",
        "threads, the host column the machine's CPU count.",
        "",
        "| case | size | device | host CPUs | torch | timed part | seconds | result |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        result = ", ".join(
            f"{k} {v:.3f}" if isinstance(v, float) else f"{k} {v}"
            for k, v in {**r.get("metrics", {}), **({"accuracy": r["accuracy"]} if "accuracy" in r else {})}.items()
            if isinstance(v, (int, float)) and k in ("accuracy", "test_accuracy", "test_auc", "auc", "epochs_run")
        )
        for part, seconds in r["parts"].items():
            lines.append(
                f"| {r['case']} | {r['size']} | {r['device']} | {r['host_cpus']} | {r['torch']} | {part} | "
                f"{seconds:.3g} | {result} |"
            )
    speedups = {}
    for r in rows:
        key = (r["case"], r["size"])
        part = "trial" if "trial" in r["parts"] else "fit"
        speedups.setdefault(key, {})[r["device"]] = r["parts"][part]
    lines += ["", "Speed-up of the GPU over the CPU (all its threads) on the part that trains:", ""]
    lines += ["| case | size | CPU s | GPU s | speed-up |", "|---|---|---|---|---|"]
    for (case, size), by in speedups.items():
        cpus = [v for k, v in by.items() if k.startswith("cpu") and "(2 threads)" not in k]
        gpus = [v for k, v in by.items() if not k.startswith("cpu")]
        if cpus and gpus:
            c, g = statistics.median(cpus), statistics.median(gpus)
            lines.append(f"| {case} | {size} | {c:.2f} | {g:.2f} | {c / g:.1f}× |")
    two_cores = results.parent / "hetedp_trial_2cores.json"
    if two_cores.exists():
        stored = json.loads(two_cores.read_text())
        lines += [
            "",
            "HeteDP's DP-SGD link-prediction trial on ACM on two cores (target: under a minute), before",
            f"and after the table path of its per-example clipping. Machine: {stored['machine']}; measured",
            f"{stored['measured']} by `{stored['command']}`.",
            "The same seed, the same σ and ε; the AUC moves by rounding.",
            "",
            "| code | commit | trial seconds | test ROC-AUC | edge ε |",
            "|---|---|---|---|---|",
        ]
        lines += [
            f"| {r['code']} | {r['commit']} | {r['trial_wall_s']:.1f} | {r['test_roc_auc']:.4f} "
            f"| {r['edge_epsilon']:.6f} |"
            for r in stored["rows"]
        ]
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    r = sub.add_parser("run")
    r.add_argument("--device", default="cuda")
    r.add_argument("--out", default=str(RESULTS))
    r.add_argument("--cases", nargs="+", default=list(CASES), choices=CASES)
    r.add_argument("--cpu-threads", nargs="+", type=int, default=[os.cpu_count()])
    r.add_argument("--blink-sizes", nargs="+", type=int, default=[100_000, 1_000_000])
    r.add_argument("--blink-epochs", type=int, default=20)
    r.add_argument("--soft-sizes", nargs="+", type=int, default=[5_000, 10_000, 20_000, 40_000])
    r.add_argument("--soft-budget", type=float, default=120.0)
    r.add_argument("--soft-cpu-max", type=int, default=5_000, help="the CPU's largest Soft size")
    t = sub.add_parser("table")
    t.add_argument("--results", default=str(RESULTS))
    t.add_argument("--page", default=str(PAGE))
    args = parser.parse_args()
    if args.command == "run":
        run(args)
    else:
        Path(args.page).write_text(table(Path(args.results)))
        print(f"wrote {args.page}", file=sys.stderr)


if __name__ == "__main__":
    main()
