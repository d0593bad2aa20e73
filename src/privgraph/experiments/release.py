"""``privgraph release``: privatize a graph (or train and release an embedding or a link model) once.

The release is the Python API's (:func:`privgraph.api.release` of the spec's :class:`~privgraph.ReleaseRequest`, the
method's ``privatize``) on the graph the pipeline's task loads (a dataset, or
the user's own file with ``--input``) with the split of ``spec.seed``.  It is
written by :meth:`privgraph.release.PrivateRelease.save`: ``OUTPUT`` holds the
released fields and the fields declared public (``pt``: a dict of tensors,
``npz``: arrays, ``csv``: ``OUTPUT.edges.csv`` and ``OUTPUT.nodes.csv``;
:mod:`privgraph.release_formats`), and ``OUTPUT.json`` the privacy report, the status of every input
field (privatized by what, public as given, or withheld), the method's
parameters (every δ it uses among them), the randomness and where the input
came from.  A recipient reads it without privgraph (``torch.load(OUTPUT)``,
``numpy.load(OUTPUT)``, a csv reader), or as a PyG object with
``privgraph.load_release(OUTPUT)`` (``pt``).  Never load a received file with
``weights_only=False``: unpickling it could run code.

Randomness.  A release that leaves the building must use secret randomness:
with ``spec.secure`` (the command line's default) every draw comes from the OS
source and no seed that could regenerate the noise is written — the
provenance's ``data_seed`` seeds only the split and the annotations (which
edges or nodes are private).  Without it (``--reproducible``) the noise comes
from ``seed``, which is recorded, and every guarantee says that anyone with
the seed can remove the noise: such a file is for research only.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from privgraph.api import release
from privgraph.data.validation import input_graph_notes
from privgraph.experiments.pipeline import ExperimentSpec
from privgraph.progress import ProgressHook
from privgraph.release import PrivateRelease
from privgraph.release_files import check_output
from privgraph.request import ReleaseRequest

if TYPE_CHECKING:
    from privgraph.accounting import Ledger


def check_release(spec: ExperimentSpec, allow_non_private: bool = False, progress: ProgressHook | None = None):
    """The spec's method and task, after every check: a release that protects nothing (a non-private
    method, or one where ε is optional given none) is refused unless ``allow_non_private``."""
    method, task = spec.build(progress)
    if spec.epsilons[0] is None and not allow_non_private:
        what = "a non-private method" if not method.private else "released without noise when no epsilon is given"
        raise ValueError(
            f"{spec.method} is {what}: its release protects nothing. Give --epsilon"
            f"{'' if method.private else ' to a private method'}, or --allow-non-private to write it "
            "anyway"
        )
    return method, task


def release_file(
    spec: ExperimentSpec,
    output: Path,
    progress: ProgressHook | None = None,
    diagnostics: bool = False,
    allow_non_private: bool = False,
    input_notes: Sequence[str] = (),
    format: str = "pt",
    ledger: Ledger | None = None,
    *,
    overwrite: bool = False,
) -> tuple[Path, Path, PrivateRelease]:
    """Release ``spec``'s graph once (its first ε) and write it (module docstring).

    Args:
        spec: the method, its parameters, the dataset or ``input``, ``epsilons[0]``, ``seed``, ``secure``,
            ``device`` (where a release that trains trains).
        output: the release's file (its folder must exist); the report goes to ``OUTPUT.json``.
        diagnostics: also write the release details (data-dependent; for the curator's own copy).
        allow_non_private: write the release of a method without a guarantee (refused otherwise).
        input_notes: what reading ``input`` changed or assumed (:func:`~privgraph.data.read_graph`'s
            notes: reverse edges added, a trusted pickle, ...): the report states them without the
            counts taken from the data (:func:`~privgraph.data.validation.public_note`), the diagnostics
            (``input_file``) with them.
        format: ``pt``, ``npz`` or ``csv`` (:mod:`privgraph.release_formats`).
        ledger: the dataset's :class:`~privgraph.Ledger`, checked before the noise and recorded after.
        overwrite: replace an existing release at ``output`` (refused otherwise); the target is checked
            (:func:`~privgraph.release_files.check_output`) before the graph is read, any budget charged or
            any noise drawn.

    Returns:
        The two paths and the :class:`~privgraph.release.PrivateRelease`.
    """
    check_output(output, file_format=format, overwrite=overwrite)
    method, task = check_release(spec, allow_non_private, progress)
    eps = spec.epsilons[0]
    data = task.load()
    if method.heterogeneous:  # the whole graph: HeteDP's link model trains on every edge of the relation
        if getattr(method.params, "edge_type", "") is None and spec.input is None:
            relation = task.hetero_task
            method = method.with_params(edge_type=relation.edge_type, reverse=relation.reverse)
    else:
        data = task.trial_data(data, spec.seed)
    request = ReleaseRequest.build(
        method,
        epsilon=eps,
        label_epsilon=spec.label_epsilon,
        seed=None if spec.secure else spec.seed,
        device=spec.device,
        ledger=ledger,
        progress=progress,
    )
    check_output(output, file_format=format, overwrite=overwrite)  # again: the graph may have taken long to read
    rel = release(data, request)
    for note in input_graph_notes(input_notes):
        rel.report.guarantees[0] = rel.report.guarantees[0].with_note(note)
    if input_notes:
        rel.details["input_file"] = [str(note) for note in input_notes]
    rel.provenance = {
        "dataset": (getattr(data, "name", None) or spec.dataset) if spec.input is None else "input",
        "data_seed": spec.seed,
        "private_ratio": spec.private_ratio,
    }
    path, report = rel.save(output, include_diagnostics=diagnostics, format=format, overwrite=overwrite)
    return path, report, rel


__all__ = ["check_release", "release_file"]
