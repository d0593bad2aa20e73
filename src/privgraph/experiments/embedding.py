"""Embedding experiments with a sensitive attribute (PPCVGAE §6): train an
embedding, release it, attack it, measure its utility.

Protocol for one setting (dataset, method, case, ε): trial ``t`` uses seed
``seed + t`` for the private nodes (70 %), the 50/30/20 split and the model's
initialisation, and for the release noise unless ``secure`` (the OS source);
each ε's noisy release draws from its own stream.  Each trial trains the autoencoder once
and releases its encoder mean as it is (PPCVGAE) and, with ``dp``, once per ε
with the calibrated noise (PPCVGAE+DP) — same model, the noise is the only
difference.  Metrics per
trial: ``utility_accuracy``/``utility_f1`` (node classification on the test
split) and ``attack_accuracy``/``attack_f1`` (attribute inference on the
private nodes) with the case's classifier — GCN on (A, Z, s_Q) for case (a),
MLP on Z for case (b) (:mod:`privgraph.attacks.attribute`).

Methods: ``ppcvgae`` (CVGAE of the case + the Δν penalty; ``dp`` adds the
calibrated noise), ``vgae`` (Kipf & Welling, unsanitised) and ``dpgcn``
(Hu et al.'s orthogonal disentangling, :mod:`privgraph.methods.ppcvgae.dpgcn`).
"""

from __future__ import annotations

import copy
import time
import uuid
from dataclasses import dataclass, field
from typing import Any

from torch_geometric.data import Data

from privgraph import __version__
from privgraph.accounting import PrivacyReport
from privgraph.attacks import CASE_MODELS, attribute_inference, check_case, utility
from privgraph.data import load_sensitive, sensitive_sbm_graph, split_sensitive
from privgraph.experiments.runner import ExperimentResult
from privgraph.experiments.store import ResultsStore, TrialRecord
from privgraph.experiments.summary import summarize
from privgraph.mechanisms import SECURE_NOTE, check_delta, release_source
from privgraph.methods.ppcvgae.dpgcn import disentangle
from privgraph.methods.ppcvgae.embedding import (
    EmbeddingConfig,
    EmbeddingRelease,
    unprotected_attribute,
    build_autoencoder,
    release_embedding,
    standardize,
    train_embedding,
)
from privgraph.methods.ppcvgae.privacy import check_calibration, check_candidate_epsilon, flip_candidate
from privgraph.progress import ProgressHook

EMBEDDING_METHODS = ("ppcvgae", "vgae", "dpgcn")
METRICS = ("utility_accuracy", "utility_f1", "attack_accuracy", "attack_f1")
SYNTHETIC = ("sbm", "planted")


@dataclass
class EmbeddingSpec:
    method: str = "ppcvgae"
    dataset: str = "sbm"  # sbm: the synthetic graph with a planted attribute
    case: str = "a"
    dp: bool = False
    epsilons: list[float] = field(default_factory=lambda: [0.01])
    delta: float = 1e-4
    calibration: str = "analytic"  # Gaussian calibration of the DP release: "analytic" or "classical" (eq. 6)
    trials: int = 5
    seed: int = 0
    balance: bool = False
    config: dict[str, Any] = field(default_factory=dict)  # EmbeddingConfig overrides
    data_root: str | None = None
    synthetic: dict[str, Any] = field(default_factory=dict)
    secure: bool = False  # release noise from the OS source instead of the trial's seed

    def validate(self) -> None:
        if self.method not in EMBEDDING_METHODS:
            raise ValueError(f"unknown embedding method {self.method!r}; choose from {EMBEDDING_METHODS}")
        check_case(self.case)
        check_calibration(self.calibration)
        if self.dp:
            if self.method != "ppcvgae":
                raise ValueError(f"--dp applies to ppcvgae only (the {self.method} embedding does not take s as "
                                 "an input, so there is nothing to calibrate against the candidates)")
            if not self.epsilons:
                raise ValueError("--dp needs at least one epsilon")
            self.epsilons = [check_candidate_epsilon(e, self.calibration) for e in self.epsilons]
            check_delta(self.delta)
        if self.secure and not self.dp:
            raise ValueError("--secure draws the release noise from the OS source, but without --dp this embedding "
                             "is released without noise (nothing to draw); add --dp or drop --secure")
        if self.trials < 1:
            raise ValueError("trials must be >= 1")
        self.embedding_config()

    def embedding_config(self) -> EmbeddingConfig:
        try:
            return EmbeddingConfig(**self.config)
        except TypeError as err:
            raise ValueError(f"unknown embedding setting: {err}; known: "
                             f"{sorted(EmbeddingConfig.__dataclass_fields__)}") from None


def load_sensitive_data(spec: EmbeddingSpec) -> Data:
    if spec.dataset.lower() in SYNTHETIC:
        return sensitive_sbm_graph(seed=spec.seed, **spec.synthetic)
    return load_sensitive(spec.dataset, root=spec.data_root, seed=spec.seed)


def trial_data(data: Data, seed: int) -> Data:
    """A shallow copy with the trial's private nodes and split."""
    return split_sensitive(copy.copy(data), seed)


class EmbeddingResult(ExperimentResult):
    """Trials of an :class:`EmbeddingSpec`: one summary row per metric and ε."""

    JSON_KEYS = ("epsilon", "metric", "mean", "std", "ci95", "trials", "privacy")

    def summary(self) -> list[dict[str, Any]]:
        return [row for metric in METRICS for row in summarize(self.records, metric)]

    def json_header(self) -> dict[str, Any]:
        spec = self.spec
        return {"case": spec.case, "dp": spec.dp, "delta": spec.delta if spec.dp else None, "balance": spec.balance,
                "model": CASE_MODELS[spec.case], "config": spec.embedding_config().to_dict()}


def train_and_release(spec: EmbeddingSpec, data: Data, seed: int, progress: ProgressHook | None
             ) -> tuple[list[tuple[float | None, EmbeddingRelease]], dict[str, Any]]:
    """Train once on the trial's data; one release per ε (or one without DP)."""
    config = spec.embedding_config()
    if spec.method == "dpgcn":
        z, info = disentangle(standardize(data.x), data.sens, ~data.private_mask, seed, epochs=config.epochs,
                              lr=config.lr)
        g = unprotected_attribute("DP-GCN's non-sensitive representation (orthogonal projection)",
                          "no formal guarantee: removing a linear subspace leaves nonlinear dependence on s")
        return [(None, EmbeddingRelease(z, g, info))], {}
    kind = "vgae" if spec.method == "vgae" else spec.case
    model = build_autoencoder(kind, data.x.shape[1], config, seed)
    candidate = None if spec.method == "vgae" else flip_candidate(data.sens, data.private_mask)
    trace = train_embedding(model, data, candidate, config, seed, progress)
    out: list[tuple[float | None, EmbeddingRelease]] = [(None, release_embedding(model, data, candidate, None))]
    if not spec.dp:
        return out, {"trace_last": trace[-1]}
    for k, eps in enumerate(spec.epsilons):  # one independent noise stream per ε
        rng = release_source(None if spec.secure else seed, k)
        release = release_embedding(model, data, candidate, (eps, spec.delta), rng=rng, calibration=spec.calibration)
        if spec.secure:
            release.guarantee = release.guarantee.with_note(SECURE_NOTE)
        out.append((eps, release))
    return out, {"trace_last": trace[-1]}


def run_embedding_experiment(spec: EmbeddingSpec, store: ResultsStore | None = None,
                             progress: ProgressHook | None = None) -> EmbeddingResult:
    spec.validate()
    progress = progress or (lambda task, done, total: None)
    run_id = uuid.uuid4().hex[:12]
    data = load_sensitive_data(spec)
    records: list[TrialRecord] = []
    reports: dict[float | None, PrivacyReport] = {}
    label = f"{spec.method} ({spec.case}) on {getattr(data, 'name', spec.dataset)}"
    for t in range(spec.trials):
        progress(label, t, spec.trials)
        start = time.perf_counter()
        seed = spec.seed + t
        tdata = trial_data(data, seed)
        releases, training = train_and_release(spec, tdata, seed, progress)
        for eps, release in releases:
            u = utility(spec.case, release.z, tdata.edge_index, tdata.y, tdata.sens, tdata.private_mask,
                        tdata.train_mask, tdata.val_mask, tdata.test_mask, seed)
            a = attribute_inference(spec.case, release.z, tdata.edge_index, tdata.sens, tdata.private_mask, seed,
                                    balance=spec.balance)
            report = PrivacyReport([release.guarantee])
            reports[eps] = report
            record = TrialRecord(
                run_id=run_id, method=spec.method, dataset=getattr(data, "name", spec.dataset),
                model=CASE_MODELS[spec.case], mechanism="gaussian" if eps is not None else None, epsilon=eps,
                epsilon_y=None, trial=t, seed=seed,
                config={"case": spec.case, "dp": spec.dp, "delta": spec.delta if spec.dp else None,
                        "secure": spec.secure,
                        "balance": spec.balance, "embedding": spec.embedding_config().to_dict(),
                        "release": release.details, "training": training},
                metrics={"utility_accuracy": u.accuracy, "utility_f1": u.f1, "utility_val_accuracy": u.val_accuracy,
                         "attack_accuracy": a.accuracy, "attack_f1": a.f1,
                         "attack_val_accuracy": a.val_accuracy},
                guarantee=report.to_dict(), wall_time=time.perf_counter() - start, version=__version__,
            )
            records.append(record)
            if store is not None:
                store.add(record)
    progress(label, spec.trials, spec.trials)
    return EmbeddingResult(spec, run_id, records, reports)
