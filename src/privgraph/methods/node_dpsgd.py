"""Node-level DP-SGD for a 1-layer GNN (Daigavane, Madan, Sinha, Thakurta, Aggarwal & Jain 2021,
"Node-Level Differentially Private Graph Neural Networks", arXiv 2111.15521, Algorithm 1).

1. The graph Ĝ the GNN reads: the input itself when every out-degree is ≤ K — K (``max_degree``) is a
   public promise of the data owner, and a graph above it is refused before anything is trained
   (``over_bound="refuse"``, the default; :mod:`privgraph.methods.node_domain`).  With
   ``over_bound="sample"`` a graph above the bound is degree-bounded as the paper does (:func:`bound_degree`:
   every node keeps at most K of its incoming edges, chosen uniformly at random, then at most K of its
   remaining outgoing edges) and released with NO node-level guarantee (ε = ∞): removing a node frees a
   slot at each of its in-neighbours, which then keep another out-edge, so more than K+1 loss terms move.
2. The 1-layer GNN reads, for node u, z_u = [x_u ‖ mean_{w→u ∈ Ĝ} x_w] (``conv="sage"``) or
   mean_{w ∈ N_in(u) ∪ {u}} x_w (``conv="gcn"``; ``aggregation="sum"`` sums instead).  The aggregation has
   no parameters, so z is computed once (a scatter-add over the edges) and the network is a linear layer (the GNN's
   transform) and an MLP head on z_u: node u's loss term depends on u's own data and its ≤ K in-neighbours'
   features only, and a node's data on at most K+1 loss terms (its own and its ≤ K out-neighbours').
3. T = ⌊epochs·N/m⌋ steps; each draws m of the N training nodes uniformly without replacement, clips every
   node's gradient to norm C (ghost clipping, :func:`~privgraph.train.dpsgd.linear_clipped_sum`), adds
   N(0, (σ·2(K+1)C)²) to the sum and divides by m (Algorithm 1; the GAP authors' SAGE-NDP uses the same
   sensitivity 2(K+1)C).  σ is calibrated for (ε, δ) with :mod:`privgraph.accounting.node_level`.

The release is the trained model (:attr:`PrivateRelease.model_state`); see :data:`COVERAGE` for what its
guarantee covers.

*Sensitivity within the domain (Δ = 2(K+1)C, exact).*  Zero-out relation: G and G′ differ in node v's
features, label and edges (its training slot stays), both with every out-degree ≤ K, and Ĝ is the input on
both sides.  Loss term ℓ(u) reads u's own features and label and its in-neighbours' features in Ĝ; v's data
enter ℓ(v) and ℓ(w) for w ∈ out(v) only — at most K+1 terms; every other term is the same function of the
same data on both sides.  Each term's gradient is clipped to C, so the clipped sum moves by at most 2C per
term and 2(K+1)C in all (attained: the audit's canary star), and ρ ~ Hypergeometric(N, K+1, m) of them are
in a batch: the accountant's input exactly.  v's in-degree is not bounded by the argument (its in-edges
reach only ℓ(v)); the domain bounds out-degrees.  Above the bound no degree projection has a node
sensitivity bounded for every input (:mod:`privgraph.methods.node_domain`), hence the refusal.

*The training-node count.*  N = ``num_train`` is public (required with ε): m = min(B, N), T, σ.  The batch
is m of the data's training nodes without replacement, whose hypergeometric amplification is that of N
nodes only if the data hold N: under the zero-out relation the count is the same on both neighbouring graphs
(and the split is a public field of this method), so a data count other than N is refused before any noise —
the refusal tells nothing about any node's data.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from typing import Any, ClassVar

import torch
from torch import Tensor, nn
from torch_geometric.data import Data

from privgraph.accounting import PrivacyGuarantee, TrustModel, Unit
from privgraph.accounting.guarantee import unprotected
from privgraph.accounting.node_level import node_level_epsilon, node_level_noise_multiplier
from privgraph.data.validation import validate_graph
from privgraph.device import current_device, to_device
from privgraph.mechanisms import RandomSource
from privgraph.mechanisms.csr_sum import csr_adjacency, csr_sum
from privgraph.mechanisms.randomness import integers, sample_subsets, uniform
from privgraph.methods.base import Hyperparameters, Method, MethodParams, Release, param, register_method
from privgraph.methods.node_domain import (
    NO_GUARANTEE_NOTE,
    NUM_TRAIN_HELP,
    OVER_BOUND_HELP,
    OVER_BOUND_MODES,
    claims_guarantee,
    in_domain,
    needs_num_train,
)
from privgraph.param_checks import whole_num_train
from privgraph.progress import ProgressHook
from privgraph.train.dpsgd import linear_clipped_sum, noisy_mean

CONVS = ("sage", "gcn")
AGGREGATIONS = ("mean", "sum")

COVERAGE = (
    "covers the released model weights (and everything computed from them alone), for the zero-out "
    "neighbouring relation: one node's features, label and edges replaced by nothing (its training slot stays, "
    "so the number N of training nodes, like the split, is public: num_train)",
    "predictions computed through the graph at inference time are not covered: a node's prediction reads its "
    "neighbours' features and edges directly (Daigavane et al. define and prove privacy of the learned GNN "
    "parameters only; Sajadmanesh et al.'s GAP contrasts its own inference-time guarantee with this)",
    "restricted node-DP (holds only between graphs whose out-degrees are all ≤ K); not node-DP on arbitrary "
    "graphs: K is a cap the data owner enforces, never read from the data; on such graphs Ĝ is the input (nothing "
    "sampled) and a node's data reach at most K+1 loss terms: Δ = 2(K+1)C exactly; a graph above the cap is "
    "refused (over_bound=refuse), a refusal that is itself not node-DP on arbitrary graphs (G within K, G plus a "
    "node joined to a node at K: δ ≥ 1); for node-DP on every graph use gap-ndp (soft cap + PTR; hops=1, "
    "encoder_layers=0 is the sound 1-hop route) or mlp-ndp (docs/methods/node_dpsgd.md)",
)


@dataclass(frozen=True)
class NodeDPSGDParams(MethodParams):
    max_degree: int = param(
        10,
        "K: the PUBLIC bound on every node's out-degree (a cap the data owner enforces); Δ = 2(K+1)C within it",
        bound=">= 0",
    )
    over_bound: str = param("refuse", OVER_BOUND_HELP, choices=OVER_BOUND_MODES)
    num_train: int | None = param(None, NUM_TRAIN_HELP + "; must equal the data's training-node count")
    batch_size: int = param(256, "m: training nodes per step, drawn without replacement", bound=">= 1")
    clip: float = param(1.0, "C: every node's gradient is clipped to this norm", bound="> 0")
    epochs: int = param(20, "T = floor(epochs·N/m) steps over the N training nodes", bound=">= 1")
    lr: float = param(0.01, "Adam's learning rate", bound="> 0")
    hidden: int = param(64, "width of the GNN layer and of the MLP head's hidden layers", bound=">= 1")
    head_layers: int = param(
        1, "hidden layers of the MLP head after the GNN layer (0: a linear read-out)", bound=">= 0"
    )
    conv: str = param(
        "sage", "the 1-layer GNN: sage ([x_u, agg of neighbours]) or gcn (agg of u and neighbours)", choices=CONVS
    )
    aggregation: str = param(
        "mean", "mean or sum over the in-neighbours in the degree-bounded graph", choices=AGGREGATIONS
    )
    delta: float = param(1e-5, "δ of the (ε, δ) guarantee", bound="in (0, 1)")

    rules = (whole_num_train,)


def _rank_in_groups(groups: Tensor, priority: Tensor) -> Tensor:
    """Each item's rank (0 = smallest priority) among the items of its group."""
    order = torch.argsort(priority)
    order = order[torch.argsort(groups[order], stable=True)]
    sorted_groups = groups[order]
    position = torch.arange(len(order))
    start = torch.zeros_like(position)
    if len(order):
        new = torch.ones(len(order), dtype=torch.bool)
        new[1:] = sorted_groups[1:] != sorted_groups[:-1]
        start = torch.cummax(torch.where(new, position, 0), 0).values
    rank = torch.empty_like(position)
    rank[order] = position - start
    return rank


def bound_degree(edge_index: Tensor, max_degree: int, rng: RandomSource) -> Tensor:
    """Ĝ of step 1 (module docstring): self-loops dropped, then every target keeps the ≤ K in-edges of least
    random priority (a uniformly random K-subset), then every source the ≤ K of its kept out-edges of least
    priority.  The priorities are drawn from ``rng`` (one uniform per edge).  Not node-level DP on a graph
    above the bound (``over_bound="sample"`` claims ε = ∞ there): the freed-slot cascade (module docstring)."""
    edge_index = edge_index[:, edge_index[0] != edge_index[1]].cpu()
    priority = uniform((edge_index.shape[1],), rng)
    keep = _rank_in_groups(edge_index[1], priority) < max_degree
    edge_index, priority = edge_index[:, keep], priority[keep]
    keep = _rank_in_groups(edge_index[0], priority) < max_degree
    return edge_index[:, keep]


def aggregate(x: Tensor, edge_index: Tensor, conv: str, aggregation: str) -> Tensor:
    """z of step 2 for every node: the GNN layer's parameter-free aggregation (one CSR product,
    :mod:`~privgraph.mechanisms.csr_sum`: the former scatter-add to float32 rounding)."""
    n = x.shape[0]
    src, dst = edge_index.to(x.device)
    if conv == "gcn":
        loops = torch.arange(n, device=x.device)
        src, dst = torch.cat([src, loops]), torch.cat([dst, loops])
    weight = None
    if aggregation == "mean":
        degree = torch.bincount(dst, minlength=n).to(x.dtype)
        weight = 1.0 / degree.clamp_min(1)[dst]
    agg = csr_sum(csr_adjacency(torch.stack([src, dst]), n, edge_weights=weight, dtype=x.dtype), x)
    return torch.cat([x, agg], dim=1) if conv == "sage" else agg


class NodeDPSGDNet(nn.Module):
    """The 1-layer GNN and its MLP head: ``forward(x, edge_index)`` aggregates over the graph given
    (:func:`aggregate`) and applies :meth:`head`; every parameter belongs to a ``nn.Linear`` (ghost clipping)."""

    def __init__(
        self,
        in_dim: int,
        hidden: int,
        num_classes: int,
        head_layers: int = 1,
        conv: str = "sage",
        aggregation: str = "mean",
    ):
        super().__init__()
        self.conv, self.aggregation = conv, aggregation
        self.gnn = nn.Linear(2 * in_dim if conv == "sage" else in_dim, hidden)
        self.hidden = nn.ModuleList(nn.Linear(hidden, hidden) for _ in range(head_layers))
        self.out = nn.Linear(hidden, num_classes)

    def inputs(self, x: Tensor, edge_index: Tensor) -> Tensor:
        return aggregate(x, edge_index, self.conv, self.aggregation)

    def hidden_of(self, z: Tensor) -> Tensor:
        h = torch.relu(self.gnn(z))
        for layer in self.hidden:
            h = torch.relu(layer(h))
        return h

    def head(self, z: Tensor) -> Tensor:
        """Logits from the aggregated inputs z."""
        return self.out(self.hidden_of(z))

    def embed(self, x: Tensor, edge_index: Tensor) -> Tensor:
        return self.hidden_of(self.inputs(x, edge_index))

    def forward(self, x: Tensor, edge_index: Tensor) -> Tensor:
        return self.head(self.inputs(x, edge_index))


def per_node_losses(net: NodeDPSGDNet, z: Tensor, y: Tensor) -> Tensor:
    """Each node's cross-entropy loss term (Algorithm 1's ℓ(v)) from its aggregated input."""
    return nn.functional.cross_entropy(net.head(z), y, reduction="none")


def clipped_sum(net: NodeDPSGDNet, z: Tensor, y: Tensor, clip: float) -> tuple[dict[str, Tensor], Tensor]:
    """Σ_v min(1, C/‖g_v‖)·g_v over the batch (rows of z, y) and the norms ‖g_v‖ (ghost clipping)."""
    return linear_clipped_sum(net, lambda: per_node_losses(net, z, y), clip)


def noise_std(noise_multiplier: float, max_degree: int, clip: float) -> float:
    """σ·Δ with the sensitivity Δ = 2(K+1)C of the clipped sum (Algorithm 1)."""
    return noise_multiplier * 2 * (max_degree + 1) * clip


def noisy_gradient(
    net: NodeDPSGDNet,
    z: Tensor,
    y: Tensor,
    batch: Tensor,
    p: NodeDPSGDParams,
    noise_multiplier: float,
    rng: RandomSource,
) -> dict[str, Tensor]:
    """One step's gradient (Algorithm 1): the batch's per-node gradients clipped to C and summed,
    N(0, (σ·2(K+1)C)²) per coordinate added (drawn from ``rng`` on the CPU), divided by the batch size m."""
    summed, _ = clipped_sum(net, z[batch], y[batch], p.clip)
    return noisy_mean(summed, noise_std(noise_multiplier, p.max_degree, p.clip), float(len(batch)), rng)


@dataclass
class Training:
    """A trained model and its accounting (σ relative to Δ; the accountant's ε for it, ∞ without noise)."""

    model: NodeDPSGDNet
    noise_multiplier: float
    num_train: int
    batch_size: int
    steps: int
    epsilon: float
    seconds: float
    within_bound: bool = True  # curator-only (a statistic of the graph): which graph the model trained on
    claims: bool = True  # whether the release states its (ε, δ): over_bound=refuse (sample: never)


def train_node_dpsgd(
    net: NodeDPSGDNet,
    z: Tensor,
    y: Tensor,
    train_index: Tensor,
    p: NodeDPSGDParams,
    noise_multiplier: float,
    steps: int,
    rng: RandomSource,
    progress: ProgressHook | None = None,
) -> None:
    """Algorithm 1's loop: ``steps`` batches of m of the training nodes (``train_index``) drawn without
    replacement from ``rng``, clipped per node, noised (std σ·2(K+1)C, from ``rng`` on the CPU), divided by m,
    and an Adam step."""
    m = min(p.batch_size, len(train_index))
    batches = train_index[sample_subsets(steps, len(train_index), m, rng)]
    optimizer = torch.optim.Adam(net.parameters(), lr=p.lr)
    params = dict(net.named_parameters())
    for t in range(steps):
        grads = noisy_gradient(net, z, y, batches[t].to(z.device), p, noise_multiplier, rng)
        for name, g in grads.items():
            params[name].grad = g
        optimizer.step()
        if progress is not None and (t % 50 == 0 or t == steps - 1):
            progress("node-level DP-SGD", t + 1, steps)


@register_method
class NodeDPSGD(Method):
    """Node-level DP-SGD (module docstring): a 1-layer GNN trained with per-node clipping and the
    hypergeometric amplification bound; the release is the trained model."""

    trust_models = (TrustModel.CENTRAL,)

    spend_reads_data = True  # the count bound, known once the data are read (planned_spend)

    name = "node-dpsgd"
    description = (
        "node-level DP-SGD on a degree-bounded 1-layer GNN (Daigavane et al. 2021): restricted node-DP (degree ≤ K), "
        "not node-DP on arbitrary graphs"
    )
    unit = Unit.NODE_WITH_EDGES
    Params = NodeDPSGDParams
    delta_param = "delta"
    private = True
    private_fields = ("x", "y", "edge_index")
    public_fields = ("train_mask", "val_mask", "test_mask")
    tunable: ClassVar[tuple[str, ...]] = ()  # the release is the trained model: fit retrains nothing
    default_model = "node-dpsgd"

    def planned_spend(self, epsilon: float | None, label_epsilon: float | None = None, data: Any = None) -> list:
        """ε on the unit; ∞ with ``over_bound="sample"``, whose release drops its claim on a graph above the
        bound (known only once the data are read; as EdgeRR's ``convergence="waive"``)."""
        eps = epsilon if claims_guarantee(self.params.over_bound) else None
        if label_epsilon is not None:
            raise ValueError(f"{self.name} does not collect label reports")
        return [self._spend(self.claim_unit(), eps, data=data)]

    def claim_unit(self) -> str:
        """Restricted node-DP's own unit, ``node (degree ≤ K)``: a ledger never takes it for a node's."""
        return Unit.restricted_node(self.params.max_degree)

    def check_domain(self, data: Data) -> bool:
        """Whether every out-degree is ≤ K; above it refused (``over_bound="refuse"``) or False (``"sample"``)."""
        return in_domain(self.name, data, self.params.max_degree, self.params.over_bound)

    def planned_train(self, data: Data, private: bool) -> int:
        """N: the public ``num_train`` (required when ``private``; a noiseless run falls back on the data's
        count); a data count other than N is refused (module docstring: the sampling without replacement is
        amplified as for N nodes only if the data hold N)."""
        actual = int(data.train_mask.sum())
        planned = self.params.num_train
        if planned is None:
            if private:
                raise needs_num_train(self.name)
            return actual
        if actual != planned:
            raise ValueError(
                f"{self.name}: the data hold {actual} training nodes, num_train={planned}: the batches (m of the "
                "training nodes without replacement) are accounted for num_train nodes; give the public split's "
                "count (the split is public for this method, and the count is the same on neighbouring graphs)"
            )
        return planned

    def plan(self, num_train: int) -> tuple[int, int]:
        """(m, T) from the public number N of training nodes: m = min(batch_size, N), T = ⌊epochs·N/m⌋."""
        m = min(self.params.batch_size, num_train)
        return m, max(1, self.params.epochs * num_train // m)

    def train(
        self, data: Data, epsilon: float | None, rng: RandomSource, progress: ProgressHook | None = None
    ) -> Training:
        """Steps 1–3 on ``data`` (``x``, ``edge_index``, ``y``, ``train_mask``); σ from (ε, δ), 0 without ε."""
        p = self.params
        start = time.perf_counter()
        train_index = data.train_mask.nonzero().flatten().cpu()
        if len(train_index) == 0:
            raise ValueError(f"{self.name} needs training nodes (data.train_mask)")
        inside = self.check_domain(data)  # before any noise: refused above the bound by default
        n = self.planned_train(data, epsilon is not None)
        m, steps = self.plan(n)
        sigma = (
            0.0 if epsilon is None else node_level_noise_multiplier(float(epsilon), p.delta, n, m, p.max_degree, steps)
        )
        if inside:  # Ĝ is the input (self-loops dropped, as bound_degree does); nothing sampled
            graph = data.edge_index[:, data.edge_index[0] != data.edge_index[1]].cpu()
        else:
            graph = bound_degree(data.edge_index, p.max_degree, rng)
        torch.manual_seed(int(integers(2**31, (1,), rng)[0]))  # the initialisation
        device = current_device()
        x = to_device(data.x.to(torch.float32), device)
        num_classes = int(data.y.max()) + 1
        net = NodeDPSGDNet(x.shape[1], p.hidden, num_classes, p.head_layers, p.conv, p.aggregation).to(device)
        z = net.inputs(x, graph)
        train_node_dpsgd(net, z, to_device(data.y, device), train_index, p, sigma, steps, rng, progress)
        claims = inside and claims_guarantee(p.over_bound)  # sample: ∞ whatever the graph (no data-dependent claim)
        eps = (
            math.inf if epsilon is None or not claims else node_level_epsilon(sigma, n, m, p.max_degree, steps, p.delta)
        )
        return Training(net.cpu(), sigma, n, m, steps, eps, time.perf_counter() - start, inside, claims)

    def guarantee(self, training: Training, epsilon: float | None) -> PrivacyGuarantee:
        """(ε, δ) as asked (the accountant's ε for the calibrated σ is at most ε: ``training.epsilon``)."""
        p = self.params
        unit = self.claim_unit()
        mechanism = (
            f"node-level DP-SGD (Daigavane et al. 2021), restricted node-DP (not node-DP on arbitrary graphs): "
            f"K={p.max_degree}, C={p.clip:g}, "
            f"σ={training.noise_multiplier:.4g} (noise std σ·2(K+1)C), T={training.steps} steps of "
            f"m={training.batch_size} of N={training.num_train} nodes without replacement"
        )
        if epsilon is None:
            return unprotected(unit, mechanism + " without noise", trust_model=TrustModel.CENTRAL)
        if not training.claims:
            return PrivacyGuarantee(
                unit,
                TrustModel.CENTRAL,
                math.inf,
                0.0,
                mechanism + ", over_bound=sample: NOT node-level DP",
                (NO_GUARANTEE_NOTE, *COVERAGE[:2]),
            )
        return PrivacyGuarantee(unit, TrustModel.CENTRAL, epsilon, p.delta, mechanism, COVERAGE)

    def release(
        self, data: Data, epsilon: float | None, rng: RandomSource, progress: ProgressHook | None = None
    ) -> Release:
        """Train (steps 1–3): the server's view is the model's weights (``model_state``) and the guarantee;
        no features or graph are released.  ``epsilon=None`` (refused by :func:`privgraph.privatize`, which
        requires an ε): the same training without noise, reported as unprotected (comparisons in code)."""
        if not isinstance(data, Data):
            raise TypeError(f"{self.name} takes a torch_geometric.data.Data, got {type(data).__name__}")
        for name in ("x", "edge_index", "y", "train_mask"):
            if getattr(data, name, None) is None:
                raise ValueError(f"{self.name} needs data.{name}")
        epsilon = None if epsilon is None else self.check_epsilon_given(epsilon)
        data, _ = validate_graph(data, undirected=False, self_loops=False)
        training = self.train(data, epsilon, rng, progress)
        p = self.params
        details = {
            "noise_multiplier": training.noise_multiplier,
            "accountant_epsilon": training.epsilon,
            "noise_std": noise_std(training.noise_multiplier, p.max_degree, p.clip),
            "steps": training.steps,
            "num_train": training.num_train,
            "within_bound": training.within_bound,
            "over_bound": p.over_bound,
            "batch_size": training.batch_size,
            "mechanism": "node-level DP-SGD",
        }
        state = {k: v.detach().clone() for k, v in training.model.state_dict().items()}
        return Release(None, self.guarantee(training, epsilon), details, model_state=state)

    def load_model(self, state: dict[str, Tensor]) -> NodeDPSGDNet:
        """The released network from its weights."""
        p = self.params
        in_dim = state["gnn.weight"].shape[1] // (2 if p.conv == "sage" else 1)
        net = NodeDPSGDNet(in_dim, p.hidden, state["out.weight"].shape[0], p.head_layers, p.conv, p.aggregation)
        net.load_state_dict(state)
        return net

    def fit(self, release: Release, data: Data, model: str, hp: Hyperparameters, seed: int, labels: Any = None) -> Any:
        """No training (the release is the model): the released network's accuracy on ``data``'s split,
        predicting through ``data``'s graph (the experimenter's view; not covered, :data:`COVERAGE`)."""
        from privgraph.train import TrainResult
        from privgraph.train.node_classification import accuracy

        if release.model_state is None:
            raise ValueError(f"{self.name}'s release carries no model")
        start = time.perf_counter()
        net = self.load_model(release.model_state).to(current_device())
        net.eval()
        with torch.no_grad():
            logits = net(to_device(data.x.to(torch.float32)), to_device(data.edge_index)).cpu()
        y = data.y.cpu()
        result = TrainResult(
            accuracy(logits[data.val_mask], y[data.val_mask]),
            accuracy(logits[data.test_mask], y[data.test_mask]),
            accuracy(logits[data.train_mask], y[data.train_mask]),
            self.params.epochs,
            self.params.epochs,
            time.perf_counter() - start,
            logits[data.test_mask].argmax(-1),
        )
        result.model = net
        return result


__all__ = [
    "COVERAGE",
    "NodeDPSGD",
    "NodeDPSGDNet",
    "NodeDPSGDParams",
    "aggregate",
    "bound_degree",
    "clipped_sum",
    "noise_std",
    "noisy_gradient",
    "train_node_dpsgd",
]
