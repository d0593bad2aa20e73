"""``privgraph release``: privatize a graph once and keep it (post-processing thereafter).

Writes ``GRAPH`` (``torch.save`` of a dict: ``x``, ``edge_index``, optional
``edge_weight``, ``y``, split masks, ``num_nodes``) and ``GRAPH.json``: the
privacy report (every guarantee, composed per unit), the method, its options
and the release details — what a data owner hands over with the graph.
"""

from __future__ import annotations

import json
from pathlib import Path

import torch

from privgraph import __version__
from privgraph.accounting import PrivacyReport
from privgraph.experiments.runner import Experiment, ExperimentSpec, ProgressHook, _json_safe, load_dataset
from privgraph.methods import Hyperparameters


def release_graph(spec: ExperimentSpec, output: Path, progress: ProgressHook | None = None
                  ) -> tuple[Path, Path, PrivacyReport]:
    experiment = Experiment(spec, None, progress)
    data = experiment._trial_data(load_dataset(spec), spec.seed)
    eps = spec.epsilons[0] if experiment.method.private else None
    release, labels, report = experiment._release(data, eps, spec.seed, 0, Hyperparameters())
    if release.adjacency is not None:
        raise ValueError(f"{spec.method} releases a dense weight operator (Blink-Soft), which is not written as a "
                         "graph; use --variant hard or hybrid")
    graph = {
        "x": release.x, "edge_index": release.graph(data), "y": data.y, "num_nodes": data.num_nodes,
        "train_mask": data.train_mask, "val_mask": data.val_mask, "test_mask": data.test_mask,
    }
    if release.edge_weight is not None:
        graph["edge_weight"] = release.edge_weight
    output = Path(output)
    output.parent.mkdir(parents=True, exist_ok=True)
    torch.save(graph, output)
    meta = {
        "method": spec.method, "dataset": getattr(data, "name", spec.dataset), "epsilon": eps, "seed": spec.seed,
        "secure": spec.secure, "private_ratio": spec.private_ratio, "options": spec.options,
        "mechanism": spec.mechanism, "delta": spec.delta, "variant": spec.variant, "version": __version__,
        "privacy": report.to_dict(), "report": report.lines(), "details": release.details,
        "edges": int(graph["edge_index"].shape[1]),
    }
    report_path = output.with_name(output.name + ".json")
    report_path.write_text(json.dumps(_json_safe(meta), indent=2))
    return output, report_path, report
