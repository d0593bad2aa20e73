"""What every attack shares: the target it queries, its threat model, its result, the registry.

An attack is run against a :class:`Target` — a model trained on a method's release exactly as
``privgraph run`` trains it (or a released embedding) — and returns an :class:`AttackResult`:
the attacker's scores, the ground truth the auditor holds, the attacker's own decisions, the
metrics of :mod:`privgraph.attacks.metrics`, and the :class:`ThreatModel` it ran under.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any, ClassVar

import numpy as np
import torch
from torch import Tensor, nn
from torch_geometric.data import Data

from privgraph.device import to_device
from privgraph.methods.base import MethodParams
from privgraph.nn.dense import BlockwiseAdjacency
from privgraph.progress import ProgressHook


@dataclass(frozen=True)
class ThreatModel:
    """What the attacker queries, what it knows beforehand, and what answers its queries."""

    queries: str
    knowledge: str
    answers: str = ""

    def to_dict(self) -> dict[str, str]:
        return asdict(self)

    def describe(self) -> str:
        return f"queries {self.queries}; knows {self.knowledge}" + (
            f"; answered by {self.answers}" if self.answers else ""
        )


@dataclass
class AttackResult:
    """One attack on one target: per candidate (node, pair) the score, the truth and the decision."""

    attack: str
    scores: np.ndarray
    truth: np.ndarray
    predicted: np.ndarray
    metrics: dict[str, float]
    threat_model: ThreatModel
    details: dict[str, Any] = field(default_factory=dict)


@dataclass
class Target:
    """A trained target (what the attacker may query) and the auditor's ground truth.

    Attributes:
        method: the method whose release the target was trained on.
        truth: the input graph: the true ``edge_index``, ``y``, the split (``train_mask``: the
            members), and where present ``sens``, ``private_edge_mask``.
        model: the trained classifier (None for an embedding release).
        x: the features the server holds (the release's), the base of every query.
        graph: what the server propagates over when answering: the release's graph for methods
            that privatize the links, else the input graph (``None`` for an embedding release).
        edge_weight: the release's edge weights, if any.
        embeddings: the released embeddings (embedding methods).
        answers: in words, which graph answers the queries.
        uses_graph: whether the model's output depends on the graph at all (an MLP's does not).
        shadow: trains a target with the same method, ε and settings on an attacker's
            auxiliary graph (the shadow attack), given the graph and a seed.
        utility: the target's utility metrics (test accuracy, ...).
        pair_score: a link predictor's own score of pairs (u, v) of ``truth``'s nodes (a release
            that predicts the protected relation: HeteDP's link model, the lp task's baselines).
    """

    method: str
    truth: Data
    model: nn.Module | None = None
    x: Tensor | None = None
    graph: Tensor | BlockwiseAdjacency | None = None
    edge_weight: Tensor | None = None
    embeddings: Tensor | None = None
    answers: str = "the input graph"
    uses_graph: bool = True
    shadow: Callable[[Data, int], Target] | None = None
    utility: dict[str, float] = field(default_factory=dict)
    pair_score: Callable[[np.ndarray, np.ndarray], np.ndarray] | None = None

    def __post_init__(self) -> None:
        # the server answers where its model was trained: its features and graph are moved there once,
        # every query's features on each call, and the answers come back on the CPU
        if self.model is not None:
            device = next(self.model.parameters()).device
            self.x, self.graph, self.edge_weight = (
                to_device(v, device) for v in (self.x, self.graph, self.edge_weight)
            )

    @property
    def has_model(self) -> bool:
        return self.model is not None

    @property
    def device(self) -> torch.device:
        """Where the target's model answers queries (the CPU for an embedding release)."""
        return torch.device("cpu") if self.model is None else next(self.model.parameters()).device

    def _forward(self, x: Tensor | None, hidden: bool = False) -> Tensor:
        """The model's output (or its hidden layer) for features ``x``, over the server's graph."""
        if self.model is None:
            raise ValueError(f"{self.method} released embeddings, not a model: there is no inference API to query")
        x = self.x if x is None else x.to(self.device)
        extra = () if self.edge_weight is None else (self.edge_weight,)
        self.model.eval()
        with torch.no_grad():
            return (self.model.embed if hidden else self.model)(x, self.graph, *extra).cpu()

    def posteriors(self, x: Tensor | None = None) -> Tensor:
        """The inference API: softmax outputs of every node, the server's graph answering, for
        query features ``x`` (default: the features the server holds)."""
        return self._forward(x).softmax(dim=-1)

    def log_posteriors(self, x: Tensor | None = None) -> Tensor:
        """The inference API's output as log-probabilities (log-softmax of the model's output: the
        logits up to a per-node constant, without the rounding of saturated probabilities)."""
        return self._forward(x).log_softmax(dim=-1)

    def log_posteriors_fresh(self, x: Tensor) -> Tensor:
        """:meth:`log_posteriors` propagated afresh for every query: through a copy of the model with
        KProp's feature cache off.  That cache is keyed on the features' memory address, valid while
        training on fixed features; a query written into the buffer of the previous one would be
        answered with the previous one's propagation (LPGNN targets)."""
        model = getattr(self, "_fresh_model", None)
        if model is None:
            if self.model is None:
                raise ValueError(f"{self.method} released embeddings, not a model: there is no inference API to query")
            model = self._fresh_model = _without_feature_cache(self.model)
        extra = () if self.edge_weight is None else (self.edge_weight,)
        with torch.no_grad():
            return model(x.to(self.device), self.graph, *extra).log_softmax(dim=-1).cpu()

    def representation(self, kind: str = "hidden") -> Tensor:
        """What the target exposes per node: ``hidden`` (the model's hidden layer, or the released
        embedding), ``posteriors`` or ``embeddings``."""
        if self.embeddings is not None:
            if kind == "posteriors":
                raise ValueError(f"{self.method} releases embeddings, not posteriors")
            return self.embeddings.float()
        if kind == "posteriors":
            return self.posteriors()
        if kind == "embeddings":
            raise ValueError(f"{self.method} releases no embeddings; use the hidden layer or the posteriors")
        if kind != "hidden":
            raise ValueError(f"unknown representation {kind!r}; choose hidden, posteriors or embeddings")
        if not hasattr(self.model, "embed"):
            raise ValueError(f"the {type(self.model).__name__} of {self.method} exposes no hidden layer")
        return self._forward(None, hidden=True)


def _without_feature_cache(model: nn.Module) -> nn.Module:
    """A copy of ``model`` in eval mode whose KProp layers propagate every call (``cached=False``); the
    copy shares the graph caches of its layers (the graph does not change between queries)."""
    import copy

    from privgraph.nn.kprop import KProp

    memo: dict[int, Any] = {}  # deepcopy's memo: what the copy holds instead of an original object
    for m in model.modules():
        if isinstance(m, KProp) and m._cache is not None:
            memo[id(m._cache)] = None
        csr = getattr(m, "_csr", None)  # CachedGCNConv's CSR matrices: shared (sparse CSR cannot be deep-copied)
        if csr is not None:
            memo[id(csr)] = csr
    out = copy.deepcopy(model, memo).eval()
    for m in out.modules():
        if isinstance(m, KProp):
            m.cached = False
    return out


class AttackParams(MethodParams):
    """Base of every attack's parameters (frozen dataclass, validated when built)."""


class Attack:
    """Base of the attacks.  Subclasses set ``name``, ``family``, ``description``, ``threat``
    (the threat model, ``answers`` filled from the target), ``metrics`` and ``Params``, and
    implement :meth:`run`."""

    name: ClassVar[str] = ""
    family: ClassVar[str] = ""  # membership, link, attribute
    description: ClassVar[str] = ""
    threat: ClassVar[ThreatModel] = ThreatModel("", "")
    metrics: ClassVar[tuple[str, ...]] = ()
    Params: ClassVar[type[AttackParams]] = AttackParams
    needs_model: ClassVar[bool] = True  # queries an inference API (not a fixed embedding)
    needs_graph: ClassVar[bool] = False  # only meaningful against a model that propagates over a graph
    needs_sensitive: ClassVar[bool] = False

    def __init__(self, params: AttackParams | None = None, **values: Any):
        self.params = self.Params.resolve(self.name, params, values)

    def check(self, target: Target) -> None:
        """Refuse a target the attack cannot be run against (clear ``ValueError``)."""
        if self.needs_model and not target.has_model:
            raise ValueError(
                f"{self.name} queries a model's inference API; {target.method} releases fixed "
                "embeddings (attack them with attribute or link-stealing)"
            )
        if self.needs_graph and not target.uses_graph:
            raise ValueError(
                f"{self.name} measures how a node's output depends on other nodes through the graph; "
                f"the {target.method} target never uses a graph, so the attack is at chance by "
                "construction (use link-stealing to measure what its features alone reveal)"
            )
        if self.needs_sensitive and getattr(target.truth, "sens", None) is None:
            raise ValueError(
                f"{self.name} infers a sensitive attribute: the graph has none (data.sens); use a "
                "dataset with one (german, credit, recidivism, planted) or give it in the input"
            )

    def threat_model(self, target: Target) -> ThreatModel:
        return ThreatModel(self.threat.queries, self.threat.knowledge, target.answers)

    def run(self, target: Target, seed: int, progress: ProgressHook | None = None) -> AttackResult:
        """Attack ``target``; every random choice of the attacker (its auxiliary knowledge, the
        candidates, its own models) from ``seed``.  ``progress``: the attack's long steps (query batches,
        the attacker's training) as :data:`~privgraph.progress.ProgressHook` calls, counts only."""
        raise NotImplementedError

    @classmethod
    def info(cls) -> dict[str, Any]:
        return {
            "name": cls.name,
            "family": cls.family,
            "description": cls.description,
            "threat_model": cls.threat.to_dict(),
            "metrics": list(cls.metrics),
            "parameters": cls.Params.describe(),
        }


ATTACKS: dict[str, type[Attack]] = {}


def register_attack(cls: type[Attack]) -> type[Attack]:
    """Class decorator: add ``cls`` to :data:`ATTACKS` under ``cls.name``."""
    if not cls.name or cls.name in ATTACKS:
        raise TypeError(f"attack name {cls.name!r} missing or taken")
    ATTACKS[cls.name] = cls
    return cls


def get_attack(name: str, **params: Any) -> Attack:
    if name not in ATTACKS:
        raise ValueError(f"unknown attack {name!r}; choose from {', '.join(ATTACKS)}")
    return ATTACKS[name](**params)


def attack_classifier(hidden: tuple[int, ...], seed: int, max_iter: int = 300) -> Any:
    """The attacker's binary classifier: standardised features, an MLP (scikit-learn), seeded.
    Stopping at ``max_iter`` before convergence is the attacker's budget, not an error: the
    convergence warning is silenced in :func:`fit_quietly`."""
    from sklearn.neural_network import MLPClassifier
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    return make_pipeline(StandardScaler(), MLPClassifier(hidden, max_iter=max_iter, random_state=seed % 2**31))


def fit_quietly(classifier: Any, x: np.ndarray, y: np.ndarray) -> Any:
    """``classifier.fit(x, y)`` without scikit-learn's ConvergenceWarning."""
    import warnings

    from sklearn.exceptions import ConvergenceWarning

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        return classifier.fit(x, y)


__all__ = [
    "ATTACKS",
    "Attack",
    "AttackParams",
    "AttackResult",
    "Target",
    "ThreatModel",
    "attack_classifier",
    "fit_quietly",
    "get_attack",
    "register_attack",
]
