"""``privgraph release``: privatize a graph (or an embedding) once and keep it (post-processing thereafter).

The release itself is the Python API's (:func:`privgraph.api.release_with`, the
method's ``privatize``): this module loads the command line's dataset, runs it,
and writes ``GRAPH`` (``torch.save`` of a dict of the released fields: ``x``,
``edge_index``, optional ``edge_weight``, the public ``y`` and split masks, or
``z`` for an embedding, and ``num_nodes``) and ``GRAPH.json``: the privacy
report (every guarantee, composed per unit), the status of every input field
(privatized, public as given, or withheld), the method, its options — what a
data owner hands over with the graph.

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
from dataclasses import fields as dataclass_fields
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import torch

from privgraph import __version__
from privgraph.accounting import PrivacyReport
from privgraph.api import release_with
from privgraph.experiments.runner import Experiment, ExperimentSpec, _json_safe, load_dataset
from privgraph.methods import method_class
from privgraph.progress import ProgressHook
from privgraph.release import DIAGNOSTICS_WITHHELD, PUBLIC, PrivateRelease

if TYPE_CHECKING:
    from privgraph.experiments.embedding import EmbeddingSpec

IN_CLEAR = ("written in clear", PUBLIC)  # statuses of fields written as they are, without protection


def randomness_fields(secure: bool, seed: int, noisy: bool = True) -> dict[str, Any]:
    """How the release's noise was drawn, for its JSON: never a noise seed unless reproducible."""
    if not noisy:
        return {"randomness": "none (this release adds no noise)", "data_seed": seed}
    if secure:
        return {"randomness": "os (secret: nothing recorded can regenerate the noise)", "secure": True,
                "data_seed": seed}
    return {"randomness": "seeded (reproducible: anyone with the seed can remove the noise)", "secure": False,
            "seed": seed}


def release_graph(spec: ExperimentSpec, output: Path, progress: ProgressHook | None = None,
                  diagnostics: bool = False) -> tuple[Path, Path, PrivacyReport]:
    """Release ``spec``'s graph once; noise from the OS source when ``spec.secure`` (module docstring).
    The release details (data-dependent diagnostics) are written only with ``diagnostics``."""
    experiment = Experiment(spec, None, progress)  # validates the spec and builds the method
    data = experiment._trial_data(load_dataset(spec), spec.seed)  # privatize validates the graph
    eps = spec.epsilons[0] if experiment.method.private else None
    rel = release_with(experiment.method, data, eps, seed=None if spec.secure else spec.seed,
                       label_epsilon=spec.epsilon_y, progress=progress)
    if "dense_adjacency" in rel.data:
        raise ValueError(f"{spec.method} releases a dense weight operator (Blink-Soft), which is not written as a "
                         "graph; use variant hard or hybrid (--param variant=hybrid)")
    meta = {
        "method": spec.method, "dataset": getattr(data, "name", spec.dataset), "epsilon": eps,
        **randomness_fields(spec.secure, spec.seed, experiment.method.private),
        "private_ratio": spec.private_ratio, "options": spec.options, "mechanism": spec.mechanism,
        "delta": spec.delta, "variant": spec.variant, "edges": int(rel.data.edge_index.shape[1]),
    }
    return _write(output, rel, meta, diagnostics)


def _write(output: Path, rel: PrivateRelease, meta: dict, diagnostics: bool = False
           ) -> tuple[Path, Path, PrivacyReport]:
    """``torch.save`` the released fields to ``output`` and the metadata with the report and the
    status of every input field to ``output.json``; the data-dependent ``details`` only with
    ``diagnostics``."""
    output = Path(output)
    output.parent.mkdir(parents=True, exist_ok=True)
    payload = {key: rel.data[key] for key in rel.data.keys()}
    payload["num_nodes"] = rel.data.num_nodes
    torch.save(payload, output)
    raw = [name for name, status in rel.fields.items() if status.startswith(IN_CLEAR)]
    lines = rel.report.lines() + ([f"fields written in clear (not protected): {', '.join(raw)}"] if raw else [])
    meta = {**meta, "version": __version__, "fields": rel.fields, "raw_fields": raw,
            "privacy": rel.report.to_dict(), "report": lines,
            "details": rel.details if diagnostics else DIAGNOSTICS_WITHHELD}
    report_path = output.with_name(output.name + ".json")
    report_path.write_text(json.dumps(_json_safe(meta), indent=2))
    return output, report_path, rel.report


def release_embedding_file(spec: "EmbeddingSpec", output: Path, progress: ProgressHook | None = None,
                           diagnostics: bool = False) -> tuple[Path, Path, PrivacyReport]:
    """``privgraph release ppcvgae|vgae|dpgcn``: the method's ``privatize`` (training inside) on the
    seed's private nodes and split; writes ``z`` with the public fields (which nodes are private —
    not their attribute — labels, split) and ``OUTPUT.json``.  The noise comes from the OS source
    when ``spec.secure``; else from the seed (reproducible, stated)."""
    from privgraph.experiments.embedding import load_sensitive_data

    spec = replace(spec, epsilons=spec.epsilons[:1])
    spec.validate()
    data = load_sensitive_data(spec)  # private nodes and split drawn from spec.seed
    cls = method_class(spec.method)
    known = {f.name for f in dataclass_fields(cls.Params)}
    given = {**spec.embedding_config().to_dict(), "case": spec.case, "delta": spec.delta,
             "calibration": spec.calibration}
    method = cls(**{k: v for k, v in given.items() if k in known})
    eps = spec.epsilons[0] if spec.dp else None
    rel = release_with(method, data, eps, seed=None if spec.secure else spec.seed, progress=progress)
    meta = {
        "method": spec.method, "case": spec.case, "dataset": getattr(data, "name", spec.dataset), "dp": spec.dp,
        "epsilon": eps, "delta": spec.delta if spec.dp else None, "calibration": spec.calibration if spec.dp else None,
        **randomness_fields(spec.secure, spec.seed, spec.dp), "config": spec.embedding_config().to_dict(),
    }
    return _write(output, rel, meta, diagnostics)
