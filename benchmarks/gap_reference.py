"""The GAP authors' code (Sajadmanesh et al., USENIX Security 2023; github.com/sisaman/GAP) run offline on
privgraph's datasets and splits, for a side-by-side check of privgraph's GAP (methods gap-edp, gap-ndp, gap-inf).

The reference code is never committed here: it is extracted at a pinned commit into a scratch directory, and its
missing pure-Python dependencies go into a separate folder put on ``PYTHONPATH`` (torch, PyG, scipy and rich are
privgraph's own, from its venv; opacus comes with privgraph's ``test`` extra, ``pip install -e ".[test]"``, which
``make`` installs). Setup, once per machine::

    git -C /work/.mirror/sisaman+GAP/repo archive 926e3754b3248b994b7c77ec3842727e6d347410 \\
        | (mkdir -p /tmp/gapref/src && tar -x -C /tmp/gapref/src)      # or: git clone + git checkout 926e375
    /work/main/.venv/bin/python -m pip install --no-deps --target /tmp/gapref/deps \\
        autodp==0.2.3.1 torchmetrics==0.9.3 tabulate class-resolver==0.3.10 "setuptools<70"

(``GAPREF_SRC`` and ``GAPREF_DEPS`` override the two folders.) The API drift between the reference's pins (torch 1.13,
PyG 2.1, torch-sparse, opacus 1.2) and ours is bridged by ``benchmarks/gap_reference_shim.py`` (ours; every change
is listed there and on the page). Then::

    PRIVGRAPH_DATA=/work/shared/datasets /work/main/.venv/bin/python benchmarks/gap_reference.py run \\
        --datasets facebook --methods gap-edp gap-inf gap-ndp --epsilons 1 2 4 8 inf --seeds 0 1 2
    /work/main/.venv/bin/python benchmarks/gap_reference.py page      # docs/benchmarks/gap_reference.md

``run`` trains each (dataset, method, ε, seed) in its own process (1 torch thread by default), appends one
privgraph ``TrialRecord`` per training to ``benchmarks/results/gap_reference.jsonl`` (method "gap-edp (reference)"
etc., test accuracy as a fraction, so ``privgraph report --db`` can put it beside privgraph's own trials) and skips
the trainings the file already holds. Seed ``s`` is privgraph's trial seed: privgraph's loader
(``privgraph.data.load``: features min-max scaled to [0, 1], self-loops removed) and its stratified 50/25/25 split
``stratified_split(data, seed=s)`` — exactly the masks of trial ``s`` of a privgraph sweep with ``seed = 0`` — are
passed to the reference, and the reference's own RNG is seeded with ``s`` (its ``seed_everything``).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import resource
import subprocess
import sys
import time
import uuid
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
RESULTS = REPO / "benchmarks" / "results" / "gap_reference.jsonl"
SPEED = REPO / "benchmarks" / "results" / "gap_speed.json"  # benchmarks/gap_speed.py's side-by-side trials
PAGE = REPO / "docs" / "benchmarks" / "gap_reference.md"
REF_REPO = "sisaman/GAP"
REF_COMMIT = "926e3754b3248b994b7c77ec3842727e6d347410"
REF_SRC = Path(os.environ.get("GAPREF_SRC", "/tmp/gapref/src"))
REF_DEPS = Path(os.environ.get("GAPREF_DEPS", "/tmp/gapref/deps"))
METHODS = ("gap-edp", "gap-ndp", "gap-inf")

# The authors' hyperparameters for their Facebook dataset (experiments.py's fixed values, and the hops / degree
# bound / batch size their test/train/table2.sh ran for the README's table). privgraph's FacebookPagePage,
# LastFMAsia and GitHub are graphs of Facebook's size (4-40 thousand nodes), so they take the Facebook family.
COMMON = dict(
    encoder_layers=2,
    base_layers=1,
    head_layers=1,
    combine="cat",
    hidden_dim=16,
    activation="selu",
    optimizer="adam",
    learning_rate=0.01,
)
HPARAMS: dict[str, dict[str, Any]] = {
    "gap-inf": dict(COMMON, hops=4, batch_norm=True, epochs=100, batch_size="full", encoder_epochs=100),
    "gap-edp": dict(COMMON, hops=2, batch_norm=True, epochs=100, batch_size="full", encoder_epochs=100),
    "gap-ndp": dict(COMMON, hops=2, max_degree=100, max_grad_norm=1.0, epochs=10, batch_size=256, encoder_epochs=10),
}


# The `run` commands behind the stored trials (the page prints them).
RAN = (
    "--datasets facebook --methods gap-edp --epsilons 1 2 4 8 --seeds 0 1 2",
    "--datasets facebook --methods gap-inf --seeds 0 1",
    "--datasets facebook --methods gap-ndp --epsilons 1 2 4 8 inf --seeds 0 1",
    "--datasets github --methods gap-edp --epsilons 1 4 2 8 --seeds 0",
)


def _parse_eps(text: str) -> float:
    return math.inf if text.lower() in ("inf", "none", "∞") else float(text)


def _reference_commit() -> str:
    """The commit the extracted reference came from (``git archive`` writes it into the tar's comment; we pin it)."""
    return REF_COMMIT


# ------------------------------------------------------------------------------------------- one training
def load_base(dataset: str):
    """privgraph's graph (``privgraph.data.load``): its display name and ``Data``."""
    from privgraph.data import load
    from privgraph.data.registry import HOMOGENEOUS, get_dataset

    info = get_dataset(dataset, HOMOGENEOUS)
    return info.name, load(info.key, split="random", seed=0)


def reference_data(base, seed: int):
    """privgraph's trial-``seed`` split of ``base``, put through the reference's own dataset transforms
    (``RemoveSelfLoops``, ``RemoveIsolatedNodes``) and given a shim ``adj_t`` as its ``ToSparseTensor`` would."""
    import copy

    from core.data.transforms import RemoveIsolatedNodes, RemoveSelfLoops
    from gap_reference_shim import SparseTensor
    from torch_geometric.data import Data

    from privgraph.data import stratified_split

    data = stratified_split(copy.copy(base), seed=seed)
    clean = Data(
        x=data.x.float(),
        y=data.y,
        edge_index=data.edge_index,
        train_mask=data.train_mask,
        val_mask=data.val_mask,
        test_mask=data.test_mask,
    )
    clean = RemoveIsolatedNodes()(RemoveSelfLoops()(clean))
    ei = clean.edge_index
    n = clean.num_nodes
    del clean.edge_index
    clean.adj_t = SparseTensor(row=ei[1], col=ei[0], sparse_sizes=(n, n))
    return clean


def worker(dataset: str, method: str, jobs: list[tuple[float, int]], threads: int) -> None:
    """Train the reference once per (ε, seed) of ``jobs`` in this process (started by :func:`run`); print each
    training's numbers as a ``GAPREF_RESULT`` JSON line as soon as it ends."""
    import torch

    torch.set_num_threads(threads)
    sys.path[:0] = [str(REF_DEPS), str(REF_SRC), str(Path(__file__).parent)]
    import gap_reference_shim

    gap_reference_shim.install()
    os.chdir(REF_SRC)  # the reference's trainer checkpoints into ./checkpoints
    from core.loggers import Logger
    from core.methods.node import supported_methods
    from core.utils import seed_everything

    gap_reference_shim.patch_reference()
    name, base = load_base(dataset)
    Logger.setup(enabled=False, config={})
    for eps, seed in jobs:
        data = reference_data(base, seed)
        seed_everything(seed)
        hp = dict(HPARAMS[method], **json.loads(os.environ.get("GAPREF_OVERRIDE", "{}")))  # overrides: smoke tests
        if method != "gap-inf":
            hp["epsilon"] = eps
        num_classes = int(data.y.max()) + 1
        ref = supported_methods[method](num_classes=num_classes, device="cpu", **hp)
        if method == "gap-ndp":
            gap_reference_shim.out_of_place(ref)
        load0 = os.getloadavg()
        w0, c0 = time.perf_counter(), time.process_time()
        metrics = ref.fit(data)
        wall, cpu = time.perf_counter() - w0, time.process_time() - c0
        load1 = os.getloadavg()
        delta = None
        if method == "gap-edp":
            delta = 0.0 if math.isinf(eps) else 1.0 / 10 ** len(str(ref.num_edges))
        elif method == "gap-ndp":
            delta = 0.0 if math.isinf(eps) else 1.0 / 10 ** len(str(ref.num_train_nodes))
        out = dict(
            dataset=name,
            eps="inf" if math.isinf(eps) else eps,
            seed=seed,
            num_nodes=int(data.num_nodes),
            num_edges=int(data.num_edges),
            test_acc=float(metrics["test/acc"]) / 100,
            val_acc=float(metrics["val/acc"]) / 100,
            train_acc=float(metrics.get("train/acc", math.nan)) / 100,
            best_epoch=int(metrics.get("epoch", 0)),
            noise_scale=float(getattr(ref, "noise_scale", 0.0)),
            delta=delta,
            wall=wall,
            cpu=cpu,
            peak_rss_mb=resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
            load=[load0[0], load1[0]],
            threads=threads,
            torch=torch.__version__,
        )
        print("GAPREF_RESULT " + json.dumps(out), flush=True)


# ------------------------------------------------------------------------------------------- records
def _guarantee(method: str, eps: float, delta: float, noise_scale: float) -> dict[str, Any]:
    """The reference's claim as privgraph's stored privacy report (``{"guarantees": [PrivacyGuarantee]}``)."""
    from privgraph.accounting.guarantee import PrivacyGuarantee, TrustModel, Unit

    mechanism = f"GAP reference {method} (autodp RDP accounting; noise scale {noise_scale:.4g})"
    if math.isinf(eps):
        g = PrivacyGuarantee(Unit.NODE_FEATURES, TrustModel.NONE, math.inf, 0.0, mechanism)
    else:
        unit = Unit.EDGE if method == "gap-edp" else Unit.NODE_WITH_EDGES
        g = PrivacyGuarantee(unit, TrustModel.CENTRAL, eps, delta, mechanism, ("claimed by the authors' code",))
    return {"guarantees": [g.to_dict()]}


def _record(method: str, eps: float, seed: int, out: dict[str, Any]) -> dict[str, Any]:
    """A privgraph ``TrialRecord`` (privgraph.experiments.store) of one reference training."""
    from dataclasses import asdict

    from privgraph.experiments.store import TrialRecord, encode

    private = method != "gap-inf" and not math.isinf(eps)
    guarantee = _guarantee(method, eps if private else math.inf, out["delta"] if private else 0.0, out["noise_scale"])
    rec = TrialRecord(
        run_id=uuid.uuid4().hex[:12],
        method=f"{method} (reference)",
        dataset=out["dataset"],
        model="gap",
        mechanism=None,
        epsilon=eps if private else None,
        label_epsilon=None,
        trial=seed,
        seed=seed,
        config={
            "task": "nc",
            "split": "random",
            "reference": {"repo": REF_REPO, "commit": _reference_commit(), "method": method},
            "hyperparameters": HPARAMS[method],
            "epsilon_requested": "inf" if math.isinf(eps) else eps,
            "threads": out["threads"],
            "torch": out["torch"],
            "device": "cpu",
            "load": out["load"],
            "graph": {"nodes": out["num_nodes"], "edges": out["num_edges"]},
        },
        metrics={
            "accuracy": out["test_acc"],
            "val_accuracy": out["val_acc"],
            "train_accuracy": out["train_acc"],
            "best_epoch": out["best_epoch"],
            "train_seconds": out["wall"],
            "cpu_seconds": out["cpu"],
            "peak_rss_mb": out["peak_rss_mb"],
        },
        guarantee=guarantee,
        wall_time=out["wall"],
        version=f"reference@{_reference_commit()[:7]}",
        created_at=datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M:%S"),
    )
    return json.loads(encode(rec)) if asdict(rec) else {}


def tidy(args: argparse.Namespace) -> None:
    """Rewrite the store's rows whose guarantee predates :func:`_guarantee`'s format (the first runs wrote
    ``{"epsilon", "delta", "unit", "mechanism", "noise_scale"}``); run it while no ``run`` is writing."""
    rows = _stored(args.out)
    for r in rows:
        g = r["guarantee"]
        if "guarantees" not in g:
            eps = _parse_eps(str(g["epsilon"]))
            r["guarantee"] = _guarantee(r["config"]["reference"]["method"], eps, g["delta"], g["noise_scale"])
    text = "".join(json.dumps(r, sort_keys=True, ensure_ascii=False, separators=(",", ":")) + "\n" for r in rows)
    args.out.write_text(text)


def _stored(path: Path) -> list[dict[str, Any]]:
    if not path.is_file():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def _key(r: dict[str, Any]) -> tuple:
    ref = r["config"]["reference"]
    return (r["dataset"].lower(), ref["method"], _parse_eps(str(r["config"]["epsilon_requested"])), r["seed"])


def run(args: argparse.Namespace) -> None:
    """One worker process per (dataset, method) for its trainings not yet stored (seed by seed, every ε of a
    seed first); each training's record is appended to the store as soon as it ends."""
    from privgraph.data.registry import HOMOGENEOUS, get_dataset

    done = {_key(r) for r in _stored(args.out)}
    env = {k: v for k, v in os.environ.items() if k != "GAPREF_OVERRIDE"} | {"PYTHONPATH": str(REPO / "src")}
    for dataset in args.datasets:
        name = get_dataset(dataset, HOMOGENEOUS).name
        for method in args.methods:
            epsilons = [math.inf] if method == "gap-inf" else args.epsilons
            jobs = [
                (eps, seed)
                for seed in args.seeds
                for eps in epsilons
                if (name.lower(), method, float(eps), seed) not in done
            ]
            if not jobs:
                continue
            cmd = [sys.executable, __file__, "worker", dataset, method, str(args.threads)]
            cmd += [f"{eps}:{seed}" for eps, seed in jobs]
            args.logs.mkdir(parents=True, exist_ok=True)
            log = args.logs / f"{dataset}.{method}.log"
            with log.open("w") as err:
                proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=err, text=True)
                for line in proc.stdout:
                    if not line.startswith("GAPREF_RESULT "):
                        err.write(line)
                        continue
                    out = json.loads(line[len("GAPREF_RESULT ") :])
                    eps = _parse_eps(str(out["eps"]))
                    row = _record(method, eps, out["seed"], out)
                    with args.out.open("a") as f:
                        f.write(json.dumps(row, sort_keys=True, ensure_ascii=False, separators=(",", ":")) + "\n")
                    print(
                        f"{name} {method} eps={out['eps']} seed={out['seed']}: test acc {100 * out['test_acc']:.1f}%, "
                        f"wall {out['wall']:.1f} s, cpu {out['cpu']:.1f} s, rss {out['peak_rss_mb']:.0f} MB, "
                        f"load {out['load'][0]:.2f}",
                        flush=True,
                    )
            if proc.wait() != 0:
                print(f"worker {dataset} {method} failed (exit {proc.returncode}): see {log}", file=sys.stderr)


# ------------------------------------------------------------------------------------------- the page
def _accuracy(r: dict[str, Any]) -> float:
    return 100 * r["metrics"]["accuracy"]


def page(args: argparse.Namespace) -> None:
    """Write docs/benchmarks/gap_reference.md (:func:`page_text` of the store)."""
    PAGE.write_text(page_text(_stored(args.out)))
    print(f"wrote {PAGE.relative_to(REPO)}")


def speed_lines(speed: dict[str, Any]) -> list[str]:
    """The side-by-side section of the page: ``benchmarks/gap_speed.py``'s trials (median CPU and wall seconds per
    variant, mean test accuracy, loads) and the reference's median over privgraph's, in CPU and wall seconds."""
    import statistics

    names = {
        "reference": f"the authors' code (`{REF_COMMIT[:7]}`)",
        "before": f"privgraph before (`{speed['commits']['before'][:7]}`)",
        "after": f"privgraph after (`{speed['commits']['after'][:7]}`)",
    }
    by: dict[str, list[dict[str, Any]]] = {}
    for t in speed["trials"]:
        by.setdefault(t["variant"], []).append(t)
    med = {v: {k: statistics.median(t[k] for t in ts) for k in ("cpu", "wall")} for v, ts in by.items()}
    lines = [
        "",
        "## GAP-EDP per trial, side by side",
        "",
        "One GAP-EDP trial on FacebookPagePage at ε = 1 (δ = 10⁻⁶, the reference's automatic δ here) per process, "
        "1 torch thread, the three variants one after another in each round (seed *s*: privgraph's trial-*s* "
        f"split, given to both), {speed['machine']}, run {speed['created_at']} UTC by `{speed['command']}`. "
        "A privgraph trial is `privatize` (noise calibration, the encoder's training, the K noisy hops) and `fit` "
        "(the classifier's training, the test); the reference's is its `fit` (the same stages); imports and data "
        "loading are excluded on both sides. The last column is the reference's median over the variant's, "
        "in CPU seconds (wall seconds). `after` differs from `before` in three ways: the encoder's sparse input is "
        "CSR with its weight gradient from a cached CSR transpose (`before`: COO), each epoch's validation runs on "
        "the validation rows alone, and the modules normalise rows with a one-expression gradient (`unit_rows`). "
        "The first two give the same releases and fits bit for bit; the third changes gradients by rounding, so "
        "the trainings differ in the last bits (compare the accuracy column).",
        "",
        "| variant | trials | CPU (s), median | wall (s), median | test accuracy (%), mean | load (min–max) | "
        "reference ÷ variant |",
        "|---|---|---|---|---|---|---|",
    ]
    ref = med.get("reference")
    for v in ("reference", "before", "after"):
        if v not in by:
            continue
        ts, m = by[v], med[v]
        loads = [x for t in ts for x in t["load"]]
        ratio = f"{ref['cpu'] / m['cpu']:.1f}× ({ref['wall'] / m['wall']:.1f}×)" if ref else "—"
        lines.append(
            f"| {names[v]} | {len(ts)} | {m['cpu']:.2f} | {m['wall']:.2f} | "
            f"{100 * statistics.mean(t['test_acc'] for t in ts):.1f} | {min(loads):.2f}–{max(loads):.2f} | {ratio} |"
        )
    return lines


def page_text(rows: list[dict[str, Any]], speed: dict[str, Any] | None = None) -> str:
    """The page: accuracy per dataset × method × ε, time per training, the side-by-side GAP-EDP trials
    (``speed``, default the stored :data:`SPEED` when present), hyperparameters, shim, commands."""
    import statistics

    if speed is None and SPEED.is_file():
        speed = json.loads(SPEED.read_text())

    sys.path.insert(0, str(Path(__file__).parent))
    from gap_reference_shim import SHIM_CHANGES

    groups: dict[tuple[str, str], dict[str, list[dict]]] = {}
    for r in rows:
        m = r["config"]["reference"]["method"]
        groups.setdefault((r["dataset"], m), {}).setdefault(str(r["config"]["epsilon_requested"]), []).append(r)
    eps_cols = ["1", "2", "4", "8", "inf"]

    def cell(rs: list[dict], value) -> str:
        vals = [value(r) for r in rs]
        if not vals:
            return "—"
        if len(vals) == 1:
            return f"{vals[0]:.1f} (1)"
        return f"{statistics.mean(vals):.1f} ± {statistics.stdev(vals):.1f} ({len(vals)})"

    lines = [
        "<!-- generated by `python benchmarks/gap_reference.py page`: do not edit; rerun it -->",
        "# GAP: the authors' code on privgraph's datasets",
        "",
        f"The reference implementation of GAP (Sajadmanesh et al., USENIX Security 2023; `{REF_REPO}` at "
        f"commit `{REF_COMMIT[:7]}`) run unmodified on privgraph's datasets and splits, through a shim for the "
        "library versions (below). The trainings of one dataset and method ran one after another in one worker "
        "process on the project's 2-core CPU machine (shared with other jobs: the 1-minute load is given), "
        "with 1 torch thread. The authors' Facebook dataset is Facebook100's UIllinois20 (target: year); "
        "privgraph's `facebook` is FacebookPagePage (MUSAE), a different graph, so the accuracies are not "
        "the paper's. The trials are stored as "
        "privgraph trial records in `benchmarks/results/gap_reference.jsonl` (methods `gap-edp (reference)`, "
        "`gap-ndp (reference)`, `gap-inf (reference)`), so `privgraph report --db` can show them beside privgraph's "
        "own GAP trials of `src/privgraph/grids/gap.toml` once both are in one store.",
        "",
        "## Test accuracy (%)",
        "",
        "Mean ± sample standard deviation over seeds (number of seeds; one seed: its accuracy). "
        "Seed *s* is privgraph's trial seed: the same "
        "stratified 50/25/25 split a privgraph sweep with `seed = 0` uses in its trial *s*. ε = inf: no noise "
        "(GAP-EDP and GAP-NDP with ε = ∞ are the reference's own non-private settings of those methods: "
        "GAP-NDP still bounds degrees and trains by mini-batches, without clipping or noise).",
        "",
        "| dataset | method | " + " | ".join(f"ε = {e}" for e in eps_cols) + " |",
        "|---|---|" + "---|" * len(eps_cols),
    ]
    for (ds, m), by_eps in sorted(groups.items()):
        cells = [
            cell(by_eps.get(e, by_eps.get(f"{e}.0", [])), lambda r: 100 * r["metrics"]["accuracy"]) for e in eps_cols
        ]
        lines.append(f"| {ds} | {m} | " + " | ".join(cells) + " |")
    lines += [
        "",
        "## Time per training",
        "",
        "Median wall and CPU seconds of one training: the reference's `fit` (noise calibration with autodp, "
        "encoder pre-training, aggregation, classifier training, test; imports and data loading excluded), the "
        "peak resident memory of the worker process, and the 1-minute load average at the start of the trainings "
        "(on 2 cores: wall ≫ CPU means the machine was shared).",
        "",
        "| dataset | method | trainings | wall (s) | CPU (s) | peak RSS (MB) | load (min–max) |",
        "|---|---|---|---|---|---|---|",
    ]
    for (ds, m), by_eps in sorted(groups.items()):
        rs = [r for v in by_eps.values() for r in v]
        loads = [r["config"]["load"][0] for r in rs]
        lines.append(
            f"| {ds} | {m} | {len(rs)} | {statistics.median(r['metrics']['train_seconds'] for r in rs):.1f} | "
            f"{statistics.median(r['metrics']['cpu_seconds'] for r in rs):.1f} | "
            f"{statistics.median(r['metrics']['peak_rss_mb'] for r in rs):.0f} | {min(loads):.2f}–{max(loads):.2f} |"
        )
    lines += speed_lines(speed) if speed else []
    lines += [
        "",
        "## Hyperparameters",
        "",
        "The authors' values for their Facebook dataset (`experiments.py`'s fixed values; the hops, degree bound and "
        "batch size of `test/train/table2.sh`, the runs behind their README table). The authors chose hops "
        "(1–5) and the degree bound (100–400) per ε on validation accuracy; here they are fixed. δ is the "
        "reference's automatic δ: 1/10^(digits of the number of directed edges) for GAP-EDP, of the number of "
        "training nodes for GAP-NDP.",
        "",
    ]
    for m, hp in HPARAMS.items():
        lines.append(f"* `{m}`: " + ", ".join(f"{k}={v}" for k, v in hp.items()))
    lines += [
        "",
        "## Not run",
        "",
        "* LastFMAsia: its node features (`lastfm_asia_features.json` / PyG's `LastFMAsia/raw/lastfm_asia.npz`) "
        "are not under `$PRIVGRAPH_DATA` on this machine (only the edges and targets are), so privgraph cannot load "
        "it (`privgraph datasets`: here = no).",
        "* The settings missing from the tables above: the shared machine gave each training about a seventh of a "
        "core (10 min of wall time for 90 s of CPU), so the runs stopped where the time did; `run` resumes them "
        "(it skips the trainings the store holds).",
        "* The authors' per-ε choice of hops and degree bound on validation (their hyperparameter grid) and their "
        "own datasets (Facebook100, Reddit, Amazon: not under `$PRIVGRAPH_DATA`).",
    ]
    lines += ["", "## Shim (ours: `benchmarks/gap_reference_shim.py`)", ""]
    lines += [f"* {c}" for c in SHIM_CHANGES]
    lines += [
        "",
        "## Commands",
        "",
        "```bash",
        f"git -C /work/.mirror/sisaman+GAP/repo archive {REF_COMMIT} \\",
        "    | (mkdir -p /tmp/gapref/src && tar -x -C /tmp/gapref/src)",
        "/work/main/.venv/bin/python -m pip install --no-deps --target /tmp/gapref/deps \\",
        '    autodp==0.2.3.1 torchmetrics==0.9.3 tabulate class-resolver==0.3.10 "setuptools<70"',
        *[f"PRIVGRAPH_DATA=/work/shared/datasets python benchmarks/gap_reference.py run {c}" for c in RAN],
        "python benchmarks/gap_speed.py run --before SRC_OF_THE_OLD_CHECKOUT --seeds 0 1 2   # the side by side",
        "python benchmarks/gap_reference.py page",
        "```",
        "",
    ]
    return "\n".join(ln.rstrip() for ln in lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="cmd", required=True)
    p_run = sub.add_parser("run", help="train the reference and append the trials to the store")
    p_run.add_argument("--datasets", nargs="+", default=["facebook"])
    p_run.add_argument("--methods", nargs="+", default=list(METHODS), choices=METHODS)
    p_run.add_argument("--epsilons", nargs="+", type=_parse_eps, default=[1, 2, 4, 8, math.inf])
    p_run.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2])
    p_run.add_argument("--threads", type=int, default=1)
    p_run.add_argument("--timeout", type=float, default=3600)
    p_run.add_argument("--out", type=Path, default=RESULTS)
    p_run.add_argument("--logs", type=Path, default=Path("/tmp/gapref/logs"), help="the workers' output")
    p_one = sub.add_parser("one", help="(internal) one training; prints its numbers as JSON")
    p_one.add_argument("dataset")
    p_one.add_argument("method", choices=METHODS)
    p_one.add_argument("eps", type=_parse_eps)
    p_one.add_argument("seed", type=int)
    p_one.add_argument("threads", type=int)
    p_worker = sub.add_parser("worker", help="(internal) trainings EPS:SEED ... of one dataset and method")
    p_worker.add_argument("dataset")
    p_worker.add_argument("method", choices=METHODS)
    p_worker.add_argument("threads", type=int)
    p_worker.add_argument("jobs", nargs="+")
    p_page = sub.add_parser("page", help="write docs/benchmarks/gap_reference.md from the store")
    p_page.add_argument("--out", type=Path, default=RESULTS)
    p_tidy = sub.add_parser("tidy", help="rewrite stored guarantees of the first runs in privgraph's format")
    p_tidy.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args()
    if args.cmd == "one":
        worker(args.dataset, args.method, [(args.eps, args.seed)], args.threads)
    elif args.cmd == "worker":
        jobs = [(_parse_eps(j.split(":")[0]), int(j.split(":")[1])) for j in args.jobs]
        worker(args.dataset, args.method, jobs, args.threads)
    elif args.cmd == "run":
        run(args)
    elif args.cmd == "tidy":
        tidy(args)
    else:
        page(args)


if __name__ == "__main__":
    main()
