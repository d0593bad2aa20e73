"""``privgraph release``: privatize a graph (or an embedding) once and keep it (post-processing thereafter).

Writes ``GRAPH`` (``torch.save`` of a dict: ``x``, ``edge_index``, optional
``edge_weight``, ``y``, split masks, ``num_nodes``) and ``GRAPH.json``: the
privacy report (every guarantee, composed per unit), the status of every
field written (privatized, or written in clear), the method, its options and
the release details — what a data owner hands over with the graph.

Randomness.  A release that leaves the building must use secret randomness:
with ``spec.secure`` (the command line's default) every draw comes from the OS
source and no seed that could regenerate the noise is written — ``data_seed``
seeds only the split and the annotations (which edges or nodes are private).
Without it (``--reproducible``) the noise comes from ``seed``, which is
recorded, and every guarantee says that anyone with the seed can remove the
noise: such a file is for research only.
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import torch

from privgraph import __version__
from privgraph.accounting import PrivacyReport, Unit
from privgraph.experiments.runner import Experiment, ExperimentSpec, _json_safe
from privgraph.mechanisms import reproducible_note
from privgraph.methods import Hyperparameters
from privgraph.progress import ProgressHook
from privgraph.release import DIAGNOSTICS_WITHHELD

if TYPE_CHECKING:
    from privgraph.experiments.embedding import EmbeddingSpec

IN_CLEAR = "written in clear (not protected)"


def randomness_fields(secure: bool, seed: int, noisy: bool = True) -> dict[str, Any]:
    """How the release's noise was drawn, for its JSON: never a noise seed unless reproducible."""
    if not noisy:
        return {"randomness": "none (this release adds no noise)", "data_seed": seed}
    if secure:
        return {"randomness": "os (secret: nothing recorded can regenerate the noise)", "secure": True,
                "data_seed": seed}
    return {"randomness": "seeded (reproducible: anyone with the seed can remove the noise)", "secure": False,
            "seed": seed}


def _mark_reproducible(report: PrivacyReport, secure: bool, seed: int) -> PrivacyReport:
    if not secure:
        report.guarantees = [g.with_note(reproducible_note(seed)) if g.is_private else g for g in report.guarantees]
    return report


def _privatized_by(report: PrivacyReport, units: tuple[str, ...]) -> str | None:
    for unit, g in report.by_unit().items():
        if unit in units and g.is_private:
            return f"privatized: {g.describe()}"
    return None


def graph_fields(data, release, report: PrivacyReport) -> dict[str, str]:
    """The status of every field a graph release writes."""
    x_raw = release.x.shape == data.x.shape and torch.equal(release.x, data.x.to(release.x.dtype))
    x = (IN_CLEAR + " (the input features)" if x_raw else
         _privatized_by(report, (Unit.NODE_FEATURES,)) or "derived from the input without protection")
    if release.edge_index is None:
        edges = IN_CLEAR + " (the input graph)"
    else:
        edges = _privatized_by(report, (Unit.ADJACENCY_LIST, Unit.PRIVATE_EDGE)) or \
            "derived from the input without protection"
        if report.by_unit().get(Unit.PRIVATE_EDGE) is not None:
            edges += "; the public edges are written as given"
    fields = {"x": x, "edge_index": edges}
    if release.edge_weight is not None:
        fields["edge_weight"] = "post-processing of the released graph"
    fields.update({"y": IN_CLEAR + " (the true labels of every node)", "num_nodes": "public",
                   **{m: IN_CLEAR + " (the split)" for m in ("train_mask", "val_mask", "test_mask")}})
    return fields


def release_graph(spec: ExperimentSpec, output: Path, progress: ProgressHook | None = None,
                  diagnostics: bool = False) -> tuple[Path, Path, PrivacyReport]:
    """Release ``spec``'s graph once; noise from the OS source when ``spec.secure`` (module docstring).
    The release details (data-dependent diagnostics) are written only with ``diagnostics``."""
    experiment = Experiment(spec, None, progress)
    data = experiment._trial_data(experiment.load(), spec.seed)
    eps = spec.epsilons[0] if experiment.method.private else None
    release, labels, report = experiment._release(data, eps, spec.seed, 0, Hyperparameters())
    if release.adjacency is not None:
        raise ValueError(f"{spec.method} releases a dense weight operator (Blink-Soft), which is not written as a "
                         "graph; use variant hard or hybrid (--param variant=hybrid)")
    graph = {
        "x": release.x, "edge_index": release.graph(data), "y": data.y, "num_nodes": data.num_nodes,
        "train_mask": data.train_mask, "val_mask": data.val_mask, "test_mask": data.test_mask,
    }
    if release.edge_weight is not None:
        graph["edge_weight"] = release.edge_weight
    report = _mark_reproducible(report, spec.secure, spec.seed)
    meta = {
        "method": spec.method, "dataset": getattr(data, "name", spec.dataset), "epsilon": eps,
        **randomness_fields(spec.secure, spec.seed, experiment.method.private), "private_ratio": spec.private_ratio, "options": spec.options,
        "mechanism": spec.mechanism, "delta": spec.delta, "variant": spec.variant,
        "details": release.details, "edges": int(graph["edge_index"].shape[1]),
    }
    return _write(output, graph, meta, report, graph_fields(data, release, report), diagnostics)


def _write(output: Path, payload: dict, meta: dict, report: PrivacyReport, fields: dict[str, str],
           diagnostics: bool = False) -> tuple[Path, Path, PrivacyReport]:
    """``torch.save`` the payload to ``output`` and the metadata with the report and the
    status of every written field to ``output.json``; the data-dependent diagnostics
    (``details``, ``training``) only with ``diagnostics``."""
    if not diagnostics:
        meta = {**meta, **{k: DIAGNOSTICS_WITHHELD for k in ("details", "training") if k in meta}}
    output = Path(output)
    output.parent.mkdir(parents=True, exist_ok=True)
    torch.save(payload, output)
    raw = [name for name, status in fields.items() if status.startswith(IN_CLEAR)]
    lines = report.lines() + ([f"fields written in clear (not protected): {', '.join(raw)}"] if raw else [])
    meta = {**meta, "version": __version__, "fields": fields, "raw_fields": raw, "privacy": report.to_dict(),
            "report": lines}
    report_path = output.with_name(output.name + ".json")
    report_path.write_text(json.dumps(_json_safe(meta), indent=2))
    return output, report_path, report


def release_embedding_file(spec: "EmbeddingSpec", output: Path, progress: ProgressHook | None = None,
                           diagnostics: bool = False) -> tuple[Path, Path, PrivacyReport]:
    """``privgraph release ppcvgae|vgae|dpgcn``: train on the seed's private nodes,
    write ``{"z", "num_nodes", "private_mask"}`` (which nodes are private — not
    their attribute) and ``OUTPUT.json`` with the privacy report, the release
    details (Δν, Δμ, noise variance, mutual-information bounds) and settings.
    The noise comes from the OS source when ``spec.secure``; else from the seed
    (reproducible, stated)."""
    from privgraph.experiments.embedding import load_sensitive_data, train_and_release

    spec = replace(spec, epsilons=spec.epsilons[:1])
    spec.validate()
    data = load_sensitive_data(spec)  # private nodes and split drawn from spec.seed
    releases, training = train_and_release(spec, data, spec.seed, progress)
    eps, release = releases[-1]  # with --dp: the noisy release
    payload = {"z": release.z, "num_nodes": data.num_nodes, "private_mask": data.private_mask}
    report = _mark_reproducible(PrivacyReport([release.guarantee]), spec.secure, spec.seed)
    meta = {
        "method": spec.method, "case": spec.case, "dataset": getattr(data, "name", spec.dataset), "dp": spec.dp,
        "epsilon": eps, "delta": spec.delta if spec.dp else None, "calibration": spec.calibration if spec.dp else None,
        **randomness_fields(spec.secure, spec.seed, spec.dp),
        "config": spec.embedding_config().to_dict(), "details": release.details, "training": training,
    }
    z_status = (f"privatized: {release.guarantee.describe()}" if release.guarantee.is_private
                else "the encoder's output, no noise: " + release.guarantee.describe())
    fields = {"z": z_status, "num_nodes": "public",
              "private_mask": IN_CLEAR + " (which nodes' attribute is protected; not the attribute)"}
    return _write(output, payload, meta, report, fields, diagnostics)
