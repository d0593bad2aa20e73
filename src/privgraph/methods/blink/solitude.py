"""Solitude's link component (Lin et al., TIFS'22; Blink paper §5.1 eq. 10).

Nodes send randomized-response adjacency lists (all of ε on RR: ε-link-LDP
per adjacency list); the server learns a sparser weighted graph Â jointly
with the GNN,

    min_{Â, θ}  L(Â | θ) + λ₁ ‖Â − Ã‖_F + λ₂ ‖Â‖_{1,1},   Â ∈ [0, 1]^{n×n},

by alternating optimisation: one Adam step on θ with Â fixed, then one
projected Adam step on Â with θ fixed.  Â is learned on the support of Ã:
entries outside it start at 0 and both penalties only pull them towards 0,
so restricting Â to the reported pairs changes nothing but the cost
(Θ(|Ã|) instead of n² parameters).  Training is post-processing of the
reports and spends no privacy.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import torch
from torch import Tensor, nn
from torch_geometric.data import Data
from torch_geometric.nn import GCNConv

from privgraph.mechanisms import RandomSource
from privgraph.methods.base import Hyperparameters, MethodParams, Release, param, register_method
from privgraph.methods.blink.baselines import RandomizedResponseGraph
from privgraph.nn import NodeClassifier
from privgraph.progress import ProgressHook


class LearnedAdjacencyClassifier(nn.Module):
    """A weighted-graph classifier whose edge weights Â (on a fixed support) are parameters."""

    def __init__(self, base: NodeClassifier, num_edges: int, lambda1: float, lambda2: float):
        super().__init__()
        self.base, self.lambda1, self.lambda2 = base, float(lambda1), float(lambda2)
        self.adjacency = nn.Parameter(torch.ones(num_edges))  # Â starts at Ã (ones on the support)
        for layer in base.modules():
            if isinstance(layer, GCNConv):  # the normalisation changes with Â: no caching
                layer.cached = False

    def forward(self, x: Tensor, edge_index: Tensor, edge_weight: Tensor | None = None) -> Tensor:
        return self.base(x, edge_index, self.adjacency)

    def embed(self, x: Tensor, edge_index: Tensor, edge_weight: Tensor | None = None) -> Tensor:
        """The hidden layer over the learned Â (:meth:`NodeClassifier.embed`)."""
        return self.base.embed(x, edge_index, self.adjacency)

    def regularization(self) -> Tensor:
        """λ₁‖Â − Ã‖_F + λ₂‖Â‖_{1,1} (Ã = 1 on the support, Â ≥ 0)."""
        return self.lambda1 * torch.linalg.vector_norm(self.adjacency - 1.0) + self.lambda2 * self.adjacency.sum()

    def graph_parameters(self) -> Iterable[nn.Parameter]:
        return [self.adjacency]

    @torch.no_grad()
    def project(self) -> None:
        self.adjacency.clamp_(0.0, 1.0)

    def reset_parameters(self) -> None:
        self.base.reset_parameters()
        with torch.no_grad():
            self.adjacency.fill_(1.0)


@dataclass(frozen=True)
class SolitudeParams(MethodParams):
    """The weights λ₁, λ₂ of eq. 10 (Blink paper §5.1)."""

    lambda1: float = param(1e-3, "λ₁ of eq. 10: pull of Â towards the reports Ã (Frobenius)", bound=">= 0")
    lambda2: float = param(1e-3, "λ₂ of eq. 10: sparsity of Â (entrywise L1)", bound=">= 0")


@register_method
class Solitude(RandomizedResponseGraph):
    """Solitude's link component (Lin et al. 2022; Blink paper §5.1, baseline (3), eq. 10).

    Releases what RR releases (the raw features and the directed randomized-response graph): ε-link-LDP per
    adjacency list, local model.  The sparse weighted Â is learned with the GNN on the server
    (:class:`LearnedAdjacencyClassifier`), post-processing that spends no privacy."""

    name = "solitude"
    description = "Solitude: randomized response, then a sparse graph learned with the GNN (eq. 10)"
    Params = SolitudeParams

    def release(
        self, data: Data, epsilon: float | None, rng: RandomSource, progress: ProgressHook | None = None
    ) -> Release:
        """RR's release, with λ₁ and λ₂ recorded in the details (the graph is learned at training time)."""
        release = super().release(data, epsilon, rng, progress)
        release.details.update(mechanism=self.name, lambda1=self.params.lambda1, lambda2=self.params.lambda2)
        return release

    def build_model(
        self, model: str, in_dim: int, num_classes: int, hp: Hyperparameters, release: Release | None = None
    ) -> nn.Module:
        if release is None or release.edge_index is None:
            raise ValueError("Solitude's model is built for a release (it learns that release's edge weights)")
        if model == "gat":
            raise ValueError("Solitude with GAT is not supported (the Blink paper does not run it either)")
        base = NodeClassifier(model, in_dim, hp.hidden, num_classes, hp.dropout, weighted=True)
        return LearnedAdjacencyClassifier(
            base, int(release.edge_index.shape[1]), self.params.lambda1, self.params.lambda2
        )
