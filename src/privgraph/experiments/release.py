"""``privgraph release``: privatize a graph (or an embedding) once and keep it (post-processing thereafter).

Writes ``GRAPH`` (``torch.save`` of a dict: ``x``, ``edge_index``, optional
``edge_weight``, ``y``, split masks, ``num_nodes``) and ``GRAPH.json``: the
privacy report (every guarantee, composed per unit), the method, its options
and the release details — what a data owner hands over with the graph.
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

import torch

from privgraph import __version__
from privgraph.accounting import PrivacyReport
from privgraph.experiments.runner import Experiment, ExperimentSpec, ProgressHook, _json_safe, load_dataset
from privgraph.methods import Hyperparameters

if TYPE_CHECKING:
    from privgraph.experiments.embedding import EmbeddingSpec


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
    meta = {
        "method": spec.method, "dataset": getattr(data, "name", spec.dataset), "epsilon": eps, "seed": spec.seed,
        "secure": spec.secure, "private_ratio": spec.private_ratio, "options": spec.options,
        "mechanism": spec.mechanism, "delta": spec.delta, "variant": spec.variant,
        "details": release.details, "edges": int(graph["edge_index"].shape[1]),
    }
    return _write(output, graph, meta, report)


def _write(output: Path, payload: dict, meta: dict, report: PrivacyReport) -> tuple[Path, Path, PrivacyReport]:
    """``torch.save`` the payload to ``output`` and the metadata with the report to ``output.json``."""
    output = Path(output)
    output.parent.mkdir(parents=True, exist_ok=True)
    torch.save(payload, output)
    meta = {**meta, "version": __version__, "privacy": report.to_dict(), "report": report.lines()}
    report_path = output.with_name(output.name + ".json")
    report_path.write_text(json.dumps(_json_safe(meta), indent=2))
    return output, report_path, report


def release_embedding_file(spec: "EmbeddingSpec", output: Path, progress: ProgressHook | None = None
                           ) -> tuple[Path, Path, PrivacyReport]:
    """``privgraph release ppcvgae|vgae|dpgcn``: train on the seed's private nodes,
    write ``{"z", "num_nodes", "private_mask"}`` (which nodes are private — not
    their attribute) and ``OUTPUT.json`` with the privacy report, the release
    details (Δν, Δμ, noise variance, mutual-information bounds) and settings."""
    from privgraph.experiments.embedding import load_sensitive_data, train_and_release

    spec = replace(spec, epsilons=spec.epsilons[:1])
    spec.validate()
    data = load_sensitive_data(spec)  # private nodes and split drawn from spec.seed
    releases, training = train_and_release(spec, data, spec.seed, progress)
    eps, release = releases[-1]  # with --dp: the noisy release
    payload = {"z": release.z, "num_nodes": data.num_nodes, "private_mask": data.private_mask}
    meta = {
        "method": spec.method, "case": spec.case, "dataset": getattr(data, "name", spec.dataset), "dp": spec.dp,
        "epsilon": eps, "delta": spec.delta if spec.dp else None, "seed": spec.seed,
        "config": spec.embedding_config().to_dict(), "details": release.details, "training": training,
    }
    return _write(output, payload, meta, PrivacyReport([release.guarantee]))
