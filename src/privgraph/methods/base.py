"""What a node-classification method is: a one-time feature release with its
guarantee, plus the model trained on it."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, fields, replace
from typing import Any, ClassVar

import torch
from torch_geometric.data import Data

from privgraph.accounting import PrivacyGuarantee
from privgraph.mechanisms import RandomSource, check_epsilon
from privgraph.nn import NodeClassifier
from privgraph.nn.dense import BlockwiseAdjacency


@dataclass(frozen=True)
class Hyperparameters:
    """Training and method hyperparameters (defaults used without ``--tune``)."""

    lr: float = 0.01
    weight_decay: float = 5e-4
    dropout: float = 0.5
    hidden: int = 16
    epochs: int = 300
    patience: int = 50
    kprop_steps: int = 4  # LPGNN feature propagation K
    label_steps: int = 2  # label denoising steps K_y (0: no denoising, forward correction instead)

    def update(self, **changes: Any) -> "Hyperparameters":
        known = {f.name for f in fields(self)}
        unknown = set(changes) - known
        if unknown:
            raise ValueError(f"unknown hyperparameters {sorted(unknown)}; known: {sorted(known)}")
        return replace(self, **changes)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


# The search space of --tune (LPGNN paper's grid for lr/wd/dropout, slides' K set).
SEARCH_SPACE: dict[str, list[Any]] = {
    "lr": [0.01, 0.001],
    "weight_decay": [0.0, 1e-4, 1e-3, 1e-2],
    "dropout": [0.0, 0.25, 0.5, 0.75],
    "kprop_steps": [1, 2, 4, 8, 16],
    "label_steps": [0, 1, 2, 4, 8, 16],
}


@dataclass
class Release:
    """What the server holds after the one-time collection: features, and the
    graph to train on when the method privatizes it (else the data's own)."""

    x: torch.Tensor
    guarantee: PrivacyGuarantee
    details: dict[str, Any] = field(default_factory=dict)
    edge_index: torch.Tensor | None = None
    edge_weight: torch.Tensor | None = None
    adjacency: BlockwiseAdjacency | None = None  # a dense weight matrix in row blocks (Blink-Soft)
    extra_guarantees: list[PrivacyGuarantee] = field(default_factory=list)  # other units (HeteroRR: private edges)

    def graph(self, data: Data) -> torch.Tensor | BlockwiseAdjacency:
        """What the model propagates over: the dense operator, the private graph, or the data's own."""
        if self.adjacency is not None:
            return self.adjacency
        return data.edge_index if self.edge_index is None else self.edge_index


class Method:
    """Base class.  Subclasses set ``name`` and implement :meth:`release`."""

    name: ClassVar[str] = ""
    description: ClassVar[str] = ""
    private: ClassVar[bool] = False  # whether --epsilon applies
    # the unit is a link (adjacency list, private edge): the graph must be undirected, without
    # self-loops (checked, duplicates merged, at the runner's boundary: privgraph.data.validate_graph)
    simple_graph: ClassVar[bool] = False
    tunable: ClassVar[tuple[str, ...]] = ("lr", "weight_decay", "dropout")
    default_model: ClassVar[str] = "gcn"
    # release parameters chosen on validation by --tune when not given (each value is a new release)
    release_search: ClassVar[dict[str, list[Any]]] = {}

    def release(
        self, data: Data, epsilon: float | None, rng: RandomSource, hp: Hyperparameters, options: dict[str, Any]
    ) -> Release:
        raise NotImplementedError

    def kprop_steps(self, hp: Hyperparameters) -> int:
        return 0

    def build_model(self, model: str, in_dim: int, num_classes: int, hp: Hyperparameters,
                    release: Release | None = None) -> NodeClassifier:
        """The classifier for ``release``'s graph: weighted layers when it carries
        edge weights, dense ones when it is a :class:`BlockwiseAdjacency`."""
        dense = release is not None and release.adjacency is not None
        weighted = release is not None and release.edge_weight is not None
        return NodeClassifier(model, in_dim, hp.hidden, num_classes, hp.dropout, kprop_steps=self.kprop_steps(hp),
                              weighted=weighted, dense=dense)

    @staticmethod
    def check_epsilon_given(epsilon: float | None, name: str) -> float:
        """The method's ε: given, and valid by :func:`check_epsilon` (in (0, MAX_EPSILON])."""
        if epsilon is None:
            raise ValueError(f"method {name!r} needs a finite epsilon > 0 (got None)")
        return check_epsilon(epsilon, f"epsilon of method {name!r}")
