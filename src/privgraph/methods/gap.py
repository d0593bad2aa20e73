"""GAP: differentially private GNNs by aggregation perturbation (Sajadmanesh, Shamsabadi, Bellet &
Gatica-Perez, USENIX Security 2023, arXiv 2203.00949), as the authors implement it (github
sisaman/GAP, ``core/methods/node/gap/``).

Three modules, trained one after the other (the paper's Fig. 2 and Algorithm 1):

1. **encoder** — an MLP on the node features alone, trained on the training labels (the graph is not
   read); its normalised hidden layer is each node's embedding x⁰ (‖x⁰_v‖ = 1);
2. **aggregation (PMA, Algorithm 1)** — for k = 1 … K: the neighbour sum Aᵀ x^{k−1} plus Gaussian
   noise N(0, σ²Δ²), row-normalised again, x^k = normalize(Aᵀx^{k−1} + N(0, σ²Δ²I)); the K+1
   tables [x⁰, …, x^K] are computed once and cached;
3. **classifier** — a multi-MLP: one MLP per hop table, their outputs concatenated, normalised, and a
   head MLP (the authors' ``MultiMLP`` with ``combine='cat'``), trained on the cached tables.

Edge level (``gap-edp``): one undirected link (u → v and v → u) changes rows u and v of a hop's sum by
unit vectors, Δ = √2 (the authors' code: Δ = 1, one directed entry, which on an undirected graph such as
Facebook protects half a link); the K aggregations with noise σΔ are together one Gaussian of noise
multiplier σ/√K, calibrated exactly
(the analytic Gaussian, :func:`~privgraph.mechanisms.analytic_gaussian_sigma`; the authors: autodp's
``ComposeGaussian`` of ``ExactGaussianMechanism``).  The encoder reads no edge and the classifier
reads only the noisy tables: both are post-processing, so the classifier is trained by :meth:`fit`.

Node level (``gap-ndp``): bounded-degree node-DP (:mod:`privgraph.methods.node_domain`).  D
(``max_degree``) is a public promise that every out-degree is ≤ D; a graph above it is refused before any
noise (``over_bound="refuse"``, the default) — or, opted into with ``over_bound="sample"``, bounded by the
authors' random per-node sampling (``BoundOutDegree``) with NO node-level guarantee (ε = ∞) on that graph.
On a graph within D nothing is sampled: the aggregation reads the input.  The encoder and the classifier are
trained with DP-SGD (Poisson rate q = B/N, clip C, noise σC, ``epochs·N // B`` steps each, as the authors'
``NoisySGD``), N the public ``num_train``; one noise multiplier σ for the three mechanisms is found by
bisection on their RDP composition (:func:`~privgraph.accounting.rdp.composed_noise_multiplier`, the
authors' ``ComposedNoisyMechanism``).  The release then holds the encoder's and the classifier's weights
(``model_state``); :meth:`fit` evaluates them.

*Sensitivity of a hop within the domain (Δ = √D, exact).*  Fix a neighbouring pair G, G − v, both with
out-degrees ≤ D, and condition on everything released before hop k (the encoder's weights, the previous hops'
noisy sums of the rows w ≠ v; adaptive composition).  Then x^{k−1}_u is the same unit vector on both sides for
every u ≠ v, and the graph aggregated over is the input on both sides, so (Aᵀx^{k−1})_w − (A'ᵀx^{k−1})_w
= x^{k−1}_v·[v → w] for w ≠ v: at most D rows move, each by a unit vector, ‖·‖₂ ≤ √D (attained by a node with
D out-edges).  Row v exists on one side only; its noisy sum is a latent of G's run that later stages read
only as v's own example in the classifier's DP-SGD (whose Poisson add/remove bound holds for any content of
the example) and, normalised, as the unit vector x^k_v in hop k + 1 (counted above), so by quasi-convexity of
the Rényi divergence over that latent the composed bound (DP-SGD, K hops of Δ = √D, DP-SGD) holds for the
released weights.  In-degrees are not bounded by the argument (v's in-edges reach only row v).  Above the
bound every degree-bounding projection fails (:mod:`privgraph.methods.node_domain`: a hub whose N spokes are
at the bound moves ≥ N − D rows), and so does the random sampling: :func:`bound_out_degree`'s freed-slot
cascade.

*The training-node count.*  N = ``num_train`` is public (required with ε; the benchmark tasks give the public
split's count, with a note): q = B/N, T = epochs·N // B, σ and the default δ are functions of it alone.  Each
training node of the data is then sampled independently with probability q and the noisy sum divided by the
public qN = B: the Poisson-subsampled Gaussian's add/remove bound depends on q and σ only, not on how many
training nodes the data hold, so a true count other than N changes only the batches' expected size (and the
utility), never the guarantee — no refusal is needed, and the true count (private: the split is withheld)
appears nowhere in the release.

``gap-inf`` is the same pipeline without noise (ε = ∞), the reference line; ``gap-edp`` without an ε
is the same (the tests check equality).
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from typing import Any, ClassVar

import torch
import torch.nn.functional as F
from torch import Tensor, nn
from torch_geometric.data import Data
from torch_geometric.utils import scatter

from privgraph.accounting import PrivacyGuarantee, TrustModel, Unit
from privgraph.accounting.ledger import Spend
from privgraph.accounting.rdp import composed_noise_multiplier
from privgraph.device import current_device, to_device
from privgraph.mechanisms import RandomSource, analytic_gaussian_sigma, make_generator
from privgraph.mechanisms.randomness import integers, rand, randn
from privgraph.methods.base import (
    SPLIT_FIELDS,
    Hyperparameters,
    Method,
    MethodParams,
    Release,
    gaussian_multiplier_event,
    param,
    register_method,
)
from privgraph.methods.node_domain import (
    NO_GUARANTEE_NOTE,
    NUM_TRAIN_HELP,
    OVER_BOUND_HELP,
    check_mode,
    check_num_train,
    claims_guarantee,
    in_domain,
    needs_num_train,
)
from privgraph.progress import ProgressHook
from privgraph.train.dpsgd import linear_clipped_sum, noisy_mean
from privgraph.train.node_classification import TrainResult, accuracy, train_node_classifier


@dataclass(frozen=True)
class GAPParams(MethodParams):
    """The authors' defaults (``core/methods/node/gap/gap_inf.py``, ``core/methods/node/base.py``)."""

    hops: int = param(2, "K: aggregation hops (the authors' -k)")
    hidden: int = param(16, "width of every hidden layer and of the embeddings")
    encoder_layers: int = param(2, "layers of the encoder MLP (0: the raw features are aggregated)")
    base_layers: int = param(1, "layers of each hop's MLP in the classifier")
    head_layers: int = param(1, "layers of the classifier's head MLP")
    encoder_epochs: int = param(100, "encoder training epochs")
    epochs: int = param(100, "classifier training epochs")
    lr: float = param(0.01, "Adam learning rate (encoder and classifier)")
    weight_decay: float = param(0.0, "Adam weight decay")
    dropout: float = param(0.0, "dropout rate")
    batch_norm: bool = param(True, "batch normalisation in the MLPs (the authors' default; off under node-level DP)")
    delta: float | None = param(
        None,
        "δ; None: 10^-(number of digits) of n(n-1), the directed pairs of the public node set (EDP; the authors "
        "used |E|, private under edge-level DP), or of the training-node count (NDP, the authors' rule)",
    )

    def validate(self) -> None:
        for name in ("hops", "encoder_layers", "base_layers", "head_layers", "encoder_epochs"):
            if getattr(self, name) < 0:
                raise ValueError(f"{name} must be >= 0")
        if self.hidden < 1 or self.epochs < 1 or self.head_layers < 1:
            raise ValueError("hidden, epochs and head_layers must be >= 1")
        if not (self.lr > 0 and self.weight_decay >= 0 and 0 <= self.dropout < 1):
            raise ValueError("need lr > 0, weight_decay >= 0 and dropout in [0, 1)")
        if self.delta is not None and not 0 < self.delta < 1:
            raise ValueError(f"delta must lie in (0, 1), got {self.delta}")


@dataclass(frozen=True)
class GAPNodeParams(GAPParams):
    """GAP-NDP's additions (``gap_ndp.py``: max_degree 100, max_grad_norm 1, batch_size 256)."""

    batch_norm: bool = param(False, "batch normalisation: not under DP-SGD (per-example gradients), always false")
    max_degree: int = param(
        100,
        "D: the PUBLIC bound on every node's out-degree (a cap the data owner enforces); the aggregation's "
        "sensitivity is √D on graphs within it",
    )
    over_bound: str = param("refuse", OVER_BOUND_HELP)
    num_train: int | None = param(None, NUM_TRAIN_HELP)
    clip: float = param(1.0, "C: DP-SGD's per-example gradient norm bound")
    batch_size: int = param(256, "B: expected Poisson batch of DP-SGD (rate q = B / num_train)")

    def validate(self) -> None:
        super().validate()
        if self.batch_norm:
            raise ValueError("batch normalisation mixes the examples of a batch: not under DP-SGD")
        if self.max_degree < 1 or self.batch_size < 1 or not self.clip > 0:
            raise ValueError("max_degree and batch_size must be >= 1 and clip > 0")
        check_mode(self.over_bound)
        check_num_train(self.num_train)


# ----------------------------------------------------------------------------------------------- models


SPARSE_INPUT_DENSITY = 0.05  # the edge-level encoder reads features with at most this share of non-zeros as sparse


class SparseInputLinear(nn.Linear):
    """``nn.Linear`` (same weights and state) that also takes a sparse COO input: x Wᵀ + b over the
    non-zeros only.  Bag-of-words features (FacebookPagePage: 0.3 % non-zero of 4,714) make the dense
    product 92 % of a GAP-EDP trial; the sparse one is about 6× faster, equal to float rounding."""

    def forward(self, x: Tensor) -> Tensor:
        if not x.is_sparse:
            return super().forward(x)
        out = torch.sparse.mm(x, self.weight.t())
        return out if self.bias is None else out + self.bias


def sparse_input(x: Tensor, max_density: float = SPARSE_INPUT_DENSITY) -> Tensor:
    """``x`` as a coalesced sparse COO matrix when at most ``max_density`` of it is non-zero, else ``x``."""
    if x.numel() and int(torch.count_nonzero(x)) <= max_density * x.numel():
        return x.to_sparse().coalesce()
    return x


def mlp(in_dim: int, hidden: int, out_dim: int, layers: int, dropout: float, batch_norm: bool) -> nn.Sequential:
    """The authors' ``MLP``: ``layers`` linear layers (hidden width, then ``out_dim``) with batch norm,
    dropout and SELU between them, the last one plain; no layer: the identity.  The first layer also
    takes a sparse input (:class:`SparseInputLinear`)."""
    dims = [in_dim] + [hidden] * (layers - 1) + [out_dim] * (layers > 0)
    parts: list[nn.Module] = []
    for i in range(layers):
        parts.append((SparseInputLinear if i == 0 else nn.Linear)(dims[i], dims[i + 1]))
        if i < layers - 1:
            parts += [nn.BatchNorm1d(dims[i + 1])] if batch_norm else []
            parts += [nn.Dropout(dropout), nn.SELU()]
    return nn.Sequential(*parts)


def _mid(width: int, dropout: float, batch_norm: bool) -> nn.Sequential:
    """Normalised → batch norm → dropout → SELU: between the authors' embedding and head."""
    return nn.Sequential(*([nn.BatchNorm1d(width)] if batch_norm else []), nn.Dropout(dropout), nn.SELU())


class GAPEncoder(nn.Module):
    """The encoder module (``core/modules/node/em.py``): ``embed`` = normalize(MLP(x)), the head a
    one-layer classifier on it, trained on the node's own features and label only."""

    def __init__(self, in_dim: int, num_classes: int, p: GAPParams):
        super().__init__()
        self.body = mlp(in_dim, p.hidden, p.hidden, p.encoder_layers, p.dropout, p.batch_norm)
        width = p.hidden if p.encoder_layers else in_dim
        self.mid = _mid(width, p.dropout, p.batch_norm)
        self.head = mlp(width, p.hidden, num_classes, 1, p.dropout, p.batch_norm)

    def embed(self, x: Tensor) -> Tensor:
        return F.normalize(self.body(x), dim=-1)

    def forward(self, x: Tensor, edge_index: Tensor | None = None) -> Tensor:  # the graph is never read
        return self.head(self.mid(self.embed(x)))


class GAPClassifier(nn.Module):
    """The classification module (``core/models/multi_mlp.py``, ``combine='cat'``): one MLP per hop
    table, concatenated, normalised, then the head MLP.  Its input is the release's table: the K+1
    hop tables side by side, [n, (K+1)·width] (the graph argument is never read: the tables hold it)."""

    def __init__(self, width: int, num_classes: int, p: GAPParams):
        super().__init__()
        self.hops, self.width = p.hops, width
        self.bases = nn.ModuleList(
            mlp(width, p.hidden, p.hidden, p.base_layers, p.dropout, p.batch_norm) for _ in range(p.hops + 1)
        )
        out = p.hidden if p.base_layers else width
        self.mid = _mid(out * (p.hops + 1), p.dropout, p.batch_norm)
        self.head = mlp(out * (p.hops + 1), p.hidden, num_classes, p.head_layers, p.dropout, p.batch_norm)

    def embed(self, x: Tensor, edge_index: Tensor | None = None) -> Tensor:
        tables = x.reshape(x.shape[0], self.hops + 1, self.width).unbind(1)
        return F.normalize(torch.cat([f(t) for f, t in zip(self.bases, tables, strict=True)], dim=-1), dim=-1)

    def forward(self, x: Tensor, edge_index: Tensor | None = None) -> Tensor:
        return self.head(self.mid(self.embed(x)))


class GAPNodeModel(nn.Module):
    """GAP-NDP's released modules answering for a graph (the authors' ``predict``): the encoder's x⁰ of the
    features given (the raw features without an encoder), K hops over the graph given with its out-degrees
    bounded to D and the release's noise, then the classifier.  The bounding and the noise are drawn from
    ``seed``, so the same query gets the same answer."""

    def __init__(
        self,
        encoder: GAPEncoder | None,
        classifier: GAPClassifier,
        hops: int,
        max_degree: int,
        noise_std: float,
        seed: int,
    ):
        super().__init__()
        self.encoder, self.classifier = encoder, classifier
        self.hops, self.max_degree, self.noise_std, self.seed = hops, max_degree, noise_std, seed

    def tables(self, x: Tensor, edge_index: Tensor) -> Tensor:
        x0 = x.to(torch.float32) if self.encoder is None else self.encoder.embed(x.to(torch.float32))
        rng = make_generator(self.seed)
        graph = bound_out_degree(edge_index.cpu(), x.shape[0], self.max_degree, rng).to(x0.device)
        tables, _ = perturbed_aggregation(x0, graph, self.hops, self.noise_std, rng)
        return torch.cat(tables, dim=-1)

    def embed(self, x: Tensor, edge_index: Tensor) -> Tensor:
        return self.classifier.embed(self.tables(x, edge_index))

    def forward(self, x: Tensor, edge_index: Tensor) -> Tensor:
        return self.classifier(self.tables(x, edge_index))


# ------------------------------------------------------------------------------------------ aggregation


def bound_out_degree(edge_index: Tensor, num_nodes: int, max_degree: int, rng: RandomSource) -> Tensor:
    """At most ``max_degree`` out-edges per source node, chosen uniformly without replacement (a
    random priority per edge from ``rng``; each source keeps its ``max_degree`` lowest): the authors'
    ``BoundOutDegree``, so that one node's embedding enters at most D neighbour sums.

    Not node-level DP on a graph above the bound (``over_bound="sample"`` claims ε = ∞ there): removing a node
    v frees a slot at each in-neighbour u of v whose out-degree exceeds D, and u then keeps another edge u → w,
    so the sums of as many nodes w as v has such in-neighbours move — the freed-slot cascade that √D does not
    bound (:mod:`privgraph.methods.node_domain`)."""
    if edge_index.shape[1] == 0:
        return edge_index
    priority = rand((edge_index.shape[1],), rng, torch.float64).to(edge_index.device)
    order = torch.argsort(priority)
    order = order[torch.argsort(edge_index[0, order], stable=True)]  # by source, random within a source
    src = edge_index[0, order]
    start = torch.zeros(num_nodes + 1, dtype=torch.long, device=src.device)
    start[1:] = torch.cumsum(torch.bincount(src, minlength=num_nodes), 0)
    rank = torch.arange(src.numel(), device=src.device) - start[src]
    return edge_index[:, order[rank < max_degree]]


def neighbour_sum(x: Tensor, edge_index: Tensor) -> Tensor:
    """Aᵀx: row v is Σ of x_u over the edges u → v (sparse: a scatter over the edges)."""
    return scatter(x[edge_index[0]], edge_index[1], dim=0, dim_size=x.shape[0], reduce="sum")


def noisy_neighbour_sum(x: Tensor, edge_index: Tensor, noise_std: float, rng: RandomSource | None) -> Tensor:
    """One hop of Algorithm 1 before normalisation: Aᵀx + N(0, noise_std²) per entry, the noise drawn on
    the CPU from ``rng`` (none when ``noise_std`` = 0)."""
    s = neighbour_sum(x, edge_index)
    if noise_std > 0:
        if rng is None:
            raise ValueError("the aggregation noise needs an explicit random source")
        s = s + (randn(tuple(s.shape), rng, s.dtype) * noise_std).to(s.device)
    return s


def perturbed_aggregation(
    x: Tensor, edge_index: Tensor, hops: int, noise_std: float, rng: RandomSource | None
) -> tuple[list[Tensor], list[Tensor]]:
    """Algorithm 1 (PMA): x⁰ = normalize(x); x^k = normalize(Aᵀx^{k−1} + N(0, noise_std²)) for
    k = 1 … K (:func:`noisy_neighbour_sum`).  Returns the tables [x⁰ … x^K] and the K noisy sums."""
    tables, sums = [F.normalize(x, dim=-1)], []
    for _ in range(hops):
        sums.append(noisy_neighbour_sum(tables[-1], edge_index, noise_std, rng))
        tables.append(F.normalize(sums[-1], dim=-1))
    return tables, sums


@dataclass
class AggregationRelease:
    """The aggregation module alone on given embeddings (the DP part of GAP-EDP): the tables, the K noisy
    sums before normalisation, the graph aggregated over and the guarantee — what :mod:`privgraph.audit`
    observes (a white-box release step, as its DP-SGD audit observes one step)."""

    tables: list[Tensor]
    sums: list[Tensor]
    edge_index: Tensor
    guarantee: PrivacyGuarantee


# ------------------------------------------------------------------------------------------- DP-SGD


def dpsgd_steps(epochs: int, examples: int, batch_size: int) -> tuple[float, int]:
    """(q, T) of the authors' ``NoisySGD``: q = B/N, T = epochs·N // B (N: the public ``num_train``)."""
    batch = min(batch_size, examples)
    return batch / examples, epochs * examples // batch


def train_dpsgd(
    model: nn.Module,
    x: Tensor,
    y: Tensor,
    p: GAPNodeParams,
    epochs: int,
    noise_multiplier: float,
    rng: RandomSource,
    planned: int | None = None,
) -> None:
    """DP-SGD (Abadi et al. 2016, Algorithm 1) on the rows ``x`` with labels ``y``: T steps of Poisson
    batches (rate q), per-example gradients clipped to C (ghost clipping,
    :func:`~privgraph.train.dpsgd.linear_clipped_sum`), N(0, σ²C²) added, divided by the expected batch;
    Adam on it (the authors' ``DPOptimizer`` around Adam).  The last iterate is kept.  q and T are planned for
    ``planned`` examples (the public ``num_train``; default: the rows given), the divisor is q·planned."""
    planned = x.shape[0] if planned is None else planned
    q, steps = dpsgd_steps(epochs, planned, p.batch_size)
    opt = torch.optim.Adam(model.parameters(), lr=p.lr, weight_decay=p.weight_decay)
    model.train()
    for _ in range(steps):
        chosen = (rand((x.shape[0],), rng, torch.float64) < q).to(x.device)
        xb, yb = x[chosen], y[chosen]
        if xb.shape[0]:
            summed, _ = linear_clipped_sum(
                model, lambda xb=xb, yb=yb: F.cross_entropy(model(xb), yb, reduction="none"), p.clip
            )
        else:
            summed = {k: torch.zeros_like(v) for k, v in model.named_parameters()}
        grads = noisy_mean(summed, noise_multiplier * p.clip, q * planned, rng)
        opt.zero_grad()
        for name, param_ in model.named_parameters():
            param_.grad = grads[name]
        opt.step()
    model.eval()


def evaluate(
    model: nn.Module, x: Tensor, data: Data, seconds: float, epochs: int, edge_index: Tensor | None = None
) -> TrainResult:
    """The released classifier's accuracies on the split (no training); ``edge_index``: the graph a model
    that aggregates (:class:`GAPNodeModel`) reads."""
    model.eval()
    with torch.no_grad():
        out = model(x) if edge_index is None else model(x, edge_index)
    y = data.y.to(out.device)
    masks = [data[m].to(out.device) for m in ("train_mask", "val_mask", "test_mask")]
    return TrainResult(
        val_accuracy=accuracy(out[masks[1]], y[masks[1]]),
        test_accuracy=accuracy(out[masks[2]], y[masks[2]]),
        train_accuracy=accuracy(out[masks[0]], y[masks[0]]),
        best_epoch=epochs,
        epochs_run=epochs,
        seconds=seconds,
        test_predictions=out[masks[2]].argmax(dim=-1).cpu(),
        model=model,
    )


# ------------------------------------------------------------------------------------------- methods


_NO_GRAPH = torch.empty(2, 0, dtype=torch.long)  # the MLPs read no graph (train_node_classifier's argument)


AUTO_DELTA_MAX = 0.1  # auto_delta's largest value (a count below 10)


def auto_delta(count: int) -> float:
    """The authors' δ = 10^-(number of digits of ``count``) (< 1/count)."""
    return 10.0 ** -len(str(max(int(count), 1)))


def auto_delta_count(data: Data, node_level: bool) -> int:
    """The count the default δ is below the inverse of, taken from what the release may depend on without
    noise: the training nodes under node-level DP (a count treated as public, as DP-SGD's sampling rate
    q = B/N needs it; the split itself is withheld); under edge-level DP the directed pairs n(n-1) of the
    public node set, an upper bound on the directed edge count.  The authors' EDP rule, 10^-(digits of
    |E|), reads |E|: private under edge-level DP, and δ (printed in every report) changes between
    neighbouring graphs at a power of ten, an un-noised statistic of the edges."""
    if node_level:
        return int(data.train_mask.sum())
    n = int(data.num_nodes)
    return n * (n - 1)


def _seed(rng: RandomSource) -> int:
    return int(integers(2**31, (1,), rng)[0])


X_TABLES = "x = [x⁰, …, x^K] side by side, x⁰ the encoder's embedding, x^k the noisy k-hop aggregate"
ANSWERS = (
    "the release's cached noisy aggregates (GAP answers from the tables it computed once: a query's "
    "features replace rows of the [x⁰ … x^K] table the classifier reads, no edge is read again and no "
    "further budget is spent; the authors' predict() would re-run the noisy aggregation per query instead)"
)


class _GAP(Method):
    """The GAP pipeline shared by the three registered methods (module docstring)."""

    trust_models = (TrustModel.CENTRAL,)

    spend_reads_data = True  # the auto δ from the public node count (planned_spend)

    Params: ClassVar[type[MethodParams]] = GAPParams
    delta_param: ClassVar[str | None] = "delta"
    default_model: ClassVar[str] = "gap"
    tunable: ClassVar[tuple[str, ...]] = ()
    node_level: ClassVar[bool] = False
    private_fields: ClassVar[tuple[str, ...]] = ("edge_index",)
    public_fields: ClassVar[tuple[str, ...]] = SPLIT_FIELDS
    simple_graph: ClassVar[bool] = True  # the unit is an undirected link (validated: symmetric, no self-loops)
    sparse_encoder_input: ClassVar[bool] = True  # sparse features stay sparse in the encoder (sparse_input)

    def planned_spend(self, epsilon: float | None, label_epsilon: float | None = None, data: Any = None) -> list[Spend]:
        """ε on the unit with :meth:`dp_delta`: the given δ, or the auto δ read from ``data``'s public counts
        (declared at its largest value, 10^-1, when the data is not given)."""
        if label_epsilon is not None:
            raise ValueError(f"{self.name} does not collect label reports")
        return [self._spend(self.unit, epsilon, data=data)]

    def dp_delta(self, data: Any = None) -> float:
        """``delta`` when given; else the auto δ of :func:`auto_delta_count` (from the node count, public; the
        training-node count under node-level DP, treated public), or its largest value, 10^-1, without
        ``data``."""
        if self.params.delta is not None:
            return float(self.params.delta)
        return AUTO_DELTA_MAX if data is None else self.delta(data)

    def delta(self, data: Data) -> float:
        given = self.params.delta
        if given is not None:
            return float(given)
        return auto_delta(self.delta_count(data))

    def delta_count(self, data: Data) -> int:
        """The count the default δ is below the inverse of (:func:`auto_delta_count`)."""
        return auto_delta_count(data, self.node_level)

    def calibrate(self, data: Data, epsilon: float | None) -> tuple[float, float]:
        """(σ, δ): the noise multiplier for ε at δ (0, 0 without noise)."""
        if epsilon is None or not self.private:
            return 0.0, 0.0
        eps, delta = self.check_epsilon_given(epsilon), self.delta(data)
        if self.params.hops == 0:
            return 0.0, delta
        return analytic_gaussian_sigma(eps, delta, math.sqrt(self.params.hops)), delta

    def encode(
        self, data: Data, sigma: float, rng: RandomSource, torch_seed: int
    ) -> tuple[Tensor, dict[str, Any], GAPEncoder | None]:
        """The encoder module: the embeddings x⁰ of every node (the raw features without an encoder;
        :func:`perturbed_aggregation` normalises them), the training's details and the trained encoder."""
        p = self.params
        x = data.x.to(torch.float32)
        if p.encoder_layers == 0 or p.encoder_epochs == 0:
            return x, {}, None
        torch.manual_seed(torch_seed)
        device = current_device()
        encoder = GAPEncoder(x.shape[1], int(data.y.max()) + 1, p).to(device)
        if self.sparse_encoder_input:
            x = sparse_input(x)
        details = self.train_encoder(encoder, x, data, sigma, rng)
        with torch.no_grad():
            return encoder.eval().embed(to_device(x, device)), details, encoder

    def train_encoder(
        self, encoder: GAPEncoder, x: Tensor, data: Data, sigma: float, rng: RandomSource
    ) -> dict[str, Any]:
        """Edge level: Adam on the training nodes, the best validation epoch kept (the authors' trainer
        with ``checkpoint=True``); no edge is read, so no noise."""
        p = self.params
        res = train_node_classifier(
            encoder, x, _NO_GRAPH, data.y, data.y, data.train_mask, data.val_mask, data.test_mask,
            lr=p.lr, weight_decay=p.weight_decay, epochs=p.encoder_epochs, patience=None,
        )  # fmt: skip
        return {"encoder_val_accuracy": res.val_accuracy, "encoder_best_epoch": res.best_epoch}

    def graph_for_aggregation(self, data: Data, rng: RandomSource) -> Tensor:
        return data.edge_index

    def sensitivity(self) -> float:
        """Δ of one hop's sum: one undirected link is two directed entries (u → v, v → u), so rows u and v
        each move by a unit vector, Δ = √2 (the authors' Δ = 1 counts one directed entry)."""
        return math.sqrt(2)

    def release(
        self, data: Data, epsilon: float | None, rng: RandomSource, progress: ProgressHook | None = None
    ) -> Release:
        x, sigma, delta, seed, details, _ = self.hop_tables(data, epsilon, rng)
        model_state = self.train_released_classifier(x, data, sigma, rng, seed, details)
        return Release(x, self.guarantee(epsilon, sigma, delta), details, model_state=model_state)

    def hop_tables(
        self, data: Data, epsilon: float | None, rng: RandomSource
    ) -> tuple[Tensor, float, float, int, dict[str, Any], GAPEncoder | None]:
        """The encoder and aggregation modules: the tables [x⁰ … x^K] side by side, σ, δ, the seed of the
        modules' initialisation, the details and the trained encoder (None: the raw features)."""
        sigma, delta = self.calibrate(data, epsilon)
        seed = _seed(rng)
        emb, details, encoder = self.encode(data, sigma, rng, seed)
        edge_index = to_device(self.graph_for_aggregation(data, rng), emb.device)
        tables, _ = perturbed_aggregation(emb, edge_index, self.params.hops, sigma * self.sensitivity(), rng)
        details.update(noise_multiplier=sigma, noise_std=sigma * self.sensitivity(), delta=delta, seed=seed)
        return torch.cat(tables, dim=-1).cpu(), sigma, delta, seed, details, encoder

    def embeddings(self, data: Data, seed: int) -> Tensor:
        """The encoder module's x⁰ of every node, trained once from ``seed`` without noise (the audit's fixed
        input: under edge-level DP the encoder reads no edge, so both neighbouring graphs share it)."""
        return self.encode(data, 0.0, make_generator(seed), seed)[0].cpu()

    def release_aggregation(
        self, x0: Tensor, data: Data, epsilon: float | None, rng: RandomSource, edge_index: Tensor | None = None
    ) -> AggregationRelease:
        """The aggregation module of :meth:`release` on given embeddings ``x0``, over ``edge_index`` (default
        ``data``'s; GAP-NDP: the method's own: the input within the bound, refused or sampled above it), with the
        noise the release calibrates for ε."""
        inside = self.check_domain(data)
        sigma, delta = self.calibrate(data, epsilon)
        graph = self.graph_for_aggregation(data, rng) if edge_index is None else edge_index
        tables, sums = perturbed_aggregation(x0, graph, self.params.hops, sigma * self.sensitivity(), rng)
        return AggregationRelease(tables, sums, graph, self.guarantee(epsilon, sigma, delta, inside))

    def check_domain(self, data: Data) -> bool:
        """Whether ``data`` is inside the domain the guarantee is proven on (edge level: every graph)."""
        return True

    def train_released_classifier(
        self, x: Tensor, data: Data, sigma: float, rng: RandomSource, seed: int, details: dict[str, Any]
    ) -> dict[str, Tensor] | None:
        """Under edge-level DP the classifier is post-processing, trained by :meth:`fit`: nothing here."""
        return None

    def guarantee(self, epsilon: float | None, sigma: float, delta: float, inside: bool = True) -> PrivacyGuarantee:
        p = self.params
        eps = math.inf if epsilon is None or not self.private else float(epsilon)
        return PrivacyGuarantee(
            Unit.EDGE,
            TrustModel.CENTRAL,
            eps,
            delta if math.isfinite(eps) else 0.0,
            f"GAP aggregation perturbation (K={p.hops} Gaussian hops, noise multiplier σ={sigma:.4g}, Δ=√2)",
            (
                "released: the K+1 hop tables [x⁰, …, x^K] (as x, row-normalised); x⁰ is the encoder's embedding "
                "of the node's own features, trained on the features and training labels alone (public under "
                "edge-level DP); the K noisy aggregates are the DP part: one undirected link moves two rows of each "
                "hop's sum by unit vectors (Δ = √2; the authors' code uses 1, one directed entry); K hops of noise σΔ "
                "are one Gaussian of noise multiplier σ/√K, calibrated exactly (analytic Gaussian, Balle & Wang "
                "2018) as the authors' autodp ComposeGaussian",
                "δ: "
                + ("given" if p.delta is not None else "10^-(digits of n(n-1)): below 1/|E| on any graph, from n"),
                "the graph itself is not released; the classifier is trained on the tables (post-processing)",
            ),
        )

    def answers(self, release: Release, epsilon: float | None) -> str:
        return ANSWERS

    def privatize(self, data: Any, request: Any, rng: RandomSource) -> Any:
        """The node-classification release, with the status of ``x`` saying what it holds: GAP's hop tables."""
        rel = super().privatize(data, request, rng)
        rel.fields["x"] = self.features_status(rel.fields["x"])
        return rel

    def features_status(self, status: str) -> str:
        return status + " (the features are public under edge-level DP); released as GAP's hop tables: " + X_TABLES

    def fit(
        self, release: Release, data: Data, model: str, hp: Hyperparameters, seed: int, labels: Any = None
    ) -> TrainResult:
        """Train the classification module on the released tables (post-processing) with the authors'
        settings (Adam, the method's lr/weight decay/epochs, the best validation epoch kept); ``hp``'s
        model-size settings are not read (GAP's own parameters hold them)."""
        if labels is not None:
            raise ValueError(f"{self.name} trains on the true labels (label LDP is not supported)")
        p = self.params
        torch.manual_seed(seed)
        x = release.features(data)
        net = GAPClassifier(x.shape[1] // (p.hops + 1), int(data.y.max()) + 1, p)
        result = train_node_classifier(
            net, x, _NO_GRAPH, data.y, data.y, data.train_mask, data.val_mask, data.test_mask,
            lr=p.lr, weight_decay=p.weight_decay, epochs=p.epochs, patience=None,
        )  # fmt: skip
        result.model = net
        return result


@register_method
class GAPInf(_GAP):
    name = "gap-inf"
    description = "GAP without noise (ε = ∞): the encoder, exact K-hop aggregates and multi-MLP classifier"
    unit = Unit.EDGE
    private = False


@register_method
class GAPEdge(_GAP):
    name = "gap-edp"
    description = "GAP (Sajadmanesh et al. 2023), edge-level DP: Gaussian noise on each hop's neighbour sum"
    unit = Unit.EDGE

    def spend_event(self, unit: str, epsilon: float, delta: float, data: Any = None) -> dict[str, Any] | None:
        """K Gaussian aggregations of noise multiplier σ = analytic σ(ε, δ, √K) (:meth:`calibrate`), known before
        the noise when δ is (given, or the auto δ from the public node count of ``data``)."""
        if unit != Unit.EDGE or self.params.hops == 0 or (self.params.delta is None and data is None):
            return None
        return gaussian_multiplier_event(epsilon, delta, count=self.params.hops)

    private = True
    epsilon_optional = True  # without ε: no noise, exactly gap-inf


@register_method
class GAPNode(_GAP):
    name = "gap-ndp"
    description = "GAP, node-level DP: degree bounded to D, noisy hops (Δ=√D), encoder and classifier by DP-SGD"
    unit = Unit.NODE_WITH_EDGES
    private = True
    epsilon_optional = True
    node_level = True
    simple_graph = True
    Params: ClassVar[type[MethodParams]] = GAPNodeParams
    sparse_encoder_input = False  # DP-SGD's per-example clipping reads dense rows
    private_fields: ClassVar[tuple[str, ...]] = ("x", "y", "edge_index")
    # nothing in clear: y is in the unit, and the split would publish the node set, which the add/remove
    # relation of the paper's analysis (σC per example, Δ = √D for a removed node) keeps private
    public_fields: ClassVar[tuple[str, ...]] = ()

    def planned_spend(self, epsilon: float | None, label_epsilon: float | None = None, data: Any = None) -> list[Spend]:
        """As GAP's, but ε = ∞ with ``over_bound="sample"``: that release drops its claim on a graph above the
        bound, which is known only once the data are read (as EdgeRR's ``convergence="waive"``)."""
        eps = epsilon if claims_guarantee(self.params.over_bound) else None
        return super().planned_spend(eps, label_epsilon, data=data)

    def dp_delta(self, data: Any = None) -> float:
        """``delta`` when given; else the authors' rule on the public ``num_train`` (no data needed), or GAP's
        largest auto δ without either."""
        if self.params.delta is None and self.params.num_train is not None:
            return auto_delta(int(self.params.num_train))
        return super().dp_delta(data)

    def planned_train(self, data: Data, private: bool) -> int:
        """N: the public ``num_train``; required when ``private`` (refused before any noise), a noiseless run
        (which claims nothing) falls back on the data's count."""
        if self.params.num_train is not None:
            return int(self.params.num_train)
        if private:
            raise needs_num_train(self.name)
        return max(1, int(data.train_mask.sum()))

    def parts(self, data: Data) -> tuple[tuple[float, int], ...]:
        """(q, T) of the encoder's DP-SGD, the K aggregations (q = 1) and the classifier's DP-SGD, planned for
        the public N (``num_train``): no count of the data enters σ."""
        p, n = self.params, self.planned_train(data, True)
        enc = dpsgd_steps(p.encoder_epochs, n, p.batch_size) if p.encoder_layers else (1.0, 0)
        return (enc, (1.0, p.hops), dpsgd_steps(p.epochs, n, p.batch_size))

    def delta_count(self, data: Data) -> int:
        """The default δ's count: the public ``num_train`` (the authors' rule on the training-node count)."""
        return self.planned_train(data, True)

    def calibrate(self, data: Data, epsilon: float | None) -> tuple[float, float]:
        if epsilon is None:
            return 0.0, 0.0
        eps = self.check_epsilon_given(epsilon)
        self.planned_train(data, True)  # before δ and σ: refused without the public N
        delta = self.delta(data)
        return composed_noise_multiplier(eps, delta, self.parts(data)), delta

    def check_domain(self, data: Data) -> bool:
        """Whether every out-degree of ``data`` is ≤ D; a graph above it is refused (``over_bound="refuse"``,
        :func:`~privgraph.methods.node_domain.refusal`) or, with ``"sample"``, answers False (no guarantee)."""
        return in_domain(self.name, data, self.params.max_degree, self.params.over_bound)

    def sensitivity(self) -> float:
        return math.sqrt(self.params.max_degree)

    def release(
        self, data: Data, epsilon: float | None, rng: RandomSource, progress: ProgressHook | None = None
    ) -> Release:
        """The three modules trained; the release is their weights (``model_state``: ``encoder.*``,
        ``classifier.*``, and ``noise_std``, the aggregation noise inference adds).  The hop tables stay
        inside: they have a row per node, and x⁰, the encoder's output of the node's own features, is a
        function of the unit that no noise covers (node-level DP covers the trained weights, as in the
        paper's analysis, not per-node outputs).  A graph with an out-degree above D is refused here, before
        anything is trained or drawn (``over_bound="refuse"``), or released without a node-level guarantee
        (``"sample"``)."""
        if epsilon is not None:
            self.check_epsilon_given(epsilon)
        inside = self.check_domain(data)
        self.planned_train(data, epsilon is not None)  # refused without the public N before anything is drawn
        x, sigma, delta, seed, details, encoder = self.hop_tables(data, epsilon, rng)
        state = self.train_released_classifier(x, data, sigma, rng, seed, details) or {}
        state = {f"classifier.{k}": v for k, v in state.items()}
        if encoder is not None:
            state.update({f"encoder.{k}": v.detach().cpu() for k, v in encoder.state_dict().items()})
        state["noise_std"] = torch.tensor(details["noise_std"])  # the inference's noise (σ is public)
        details.update(num_train=self.params.num_train, within_bound=inside, over_bound=self.params.over_bound)
        return Release(None, self.guarantee(epsilon, sigma, delta, inside), details, model_state=state)

    def answers(self, release: Release, epsilon: float | None) -> str:
        return (
            "the released encoder and classifier (GAPNodeModel, the authors' predict): a query's features are "
            "encoded and aggregated over the server's graph, bounded to D out-edges, with noise of the "
            "release's scale (one fixed draw), then classified"
        )

    def features_status(self, status: str) -> str:
        return (
            status + ": GAP-NDP releases its modules' weights (model_state), not the hop tables, whose rows "
            "(x⁰: the encoder's output of each node's own features) no node-level noise covers"
        )

    def load_model(self, release: Release, seed: int) -> GAPNodeModel:
        """The released modules as one model (:class:`GAPNodeModel`), its inference noise drawn from ``seed``."""
        p, state = self.params, release.model_state or {}
        encoder_state = {k[len("encoder.") :]: v for k, v in state.items() if k.startswith("encoder.")}
        classifier_state = {k[len("classifier.") :]: v for k, v in state.items() if k.startswith("classifier.")}
        if not classifier_state:
            raise ValueError("this gap-ndp release holds no classifier weights")
        encoder = None
        if encoder_state:
            encoder = GAPEncoder(encoder_state["body.0.weight"].shape[1], encoder_state["head.0.weight"].shape[0], p)
            encoder.load_state_dict(encoder_state)
        head = sorted(
            (int(k.split(".")[1]), v) for k, v in classifier_state.items() if k.startswith("head.") and v.dim() == 2
        )
        base = classifier_state.get("bases.0.0.weight")
        width = base.shape[1] if base is not None else head[0][1].shape[1] // (p.hops + 1)
        classifier = GAPClassifier(width, head[-1][1].shape[0], p)
        classifier.load_state_dict(classifier_state)
        return GAPNodeModel(encoder, classifier, p.hops, p.max_degree, float(state["noise_std"]), seed)

    def graph_for_aggregation(self, data: Data, rng: RandomSource) -> Tensor:
        """The input itself within the bound (nothing sampled, no randomness drawn); above it refused, or with
        ``over_bound="sample"`` the authors' sampling (:func:`bound_out_degree`, no guarantee)."""
        if self.check_domain(data):
            return data.edge_index
        return bound_out_degree(data.edge_index, data.num_nodes, self.params.max_degree, rng)

    def train_encoder(
        self, encoder: GAPEncoder, x: Tensor, data: Data, sigma: float, rng: RandomSource
    ) -> dict[str, Any]:
        """Node level: DP-SGD on the training nodes (:func:`train_dpsgd`), the last iterate kept."""
        p, train, device = self.params, data.train_mask, current_device()
        planned = self.planned_train(data, sigma > 0)
        train_dpsgd(encoder, x[train].to(device), data.y[train].to(device), p, p.encoder_epochs, sigma, rng, planned)
        return {}

    def train_released_classifier(
        self, x: Tensor, data: Data, sigma: float, rng: RandomSource, seed: int, details: dict[str, Any]
    ) -> dict[str, Tensor] | None:
        """The classification module by DP-SGD on the training nodes' rows of the noisy tables; its
        weights are released (``model_state``)."""
        p = self.params
        torch.manual_seed(seed + 1)
        device = current_device()
        net = GAPClassifier(x.shape[1] // (p.hops + 1), int(data.y.max()) + 1, p).to(device)
        train = data.train_mask
        planned = self.planned_train(data, sigma > 0)
        train_dpsgd(net, x[train].to(device), data.y[train].to(device), p, p.epochs, sigma, rng, planned)
        details["steps"] = [t for _, t in self.parts(data)] if sigma > 0 else None
        return {k: v.detach().cpu() for k, v in net.state_dict().items()}

    def guarantee(self, epsilon: float | None, sigma: float, delta: float, inside: bool = True) -> PrivacyGuarantee:
        p = self.params
        inside = inside and claims_guarantee(p.over_bound)  # sample: ∞ whatever the graph (no data-dependent claim)
        eps = math.inf if epsilon is None or not inside else float(epsilon)
        domain = (
            f"bounded-degree node-DP: neighbouring graphs both with every out-degree ≤ D = {p.max_degree}, a public "
            "promise of the data owner (a cap it enforces); on them the aggregation reads the input, nothing is "
            "sampled, and one node moves at most D rows of a hop's sum by unit vectors: Δ = √D exactly; a graph "
            "above the bound is refused by default (over_bound=refuse), the refusal telling only that some "
            "degree exceeds D (docs/methods/gap.md, 'Degree bound')"
            if inside
            else NO_GUARANTEE_NOTE
        )
        return PrivacyGuarantee(
            Unit.NODE_WITH_EDGES,
            TrustModel.CENTRAL,
            eps,
            delta if math.isfinite(eps) else 0.0,
            f"GAP-NDP: DP-SGD encoder + {p.hops} Gaussian hops (Δ=√D, D={p.max_degree}) + DP-SGD classifier, "
            f"one noise multiplier σ={sigma:.4g}, RDP composition",
            (
                "released: the encoder's and the classifier's weights (model_state), covered by the composed "
                "guarantee of the three modules; the hop tables are not released (a row per node, x⁰ the "
                "encoder's output of the node's own features: per-node outputs are outside node-level DP)",
                "inference (pg.fit, attacks) runs the released modules on the querier's graph and features "
                "(GAPNodeModel, the authors' predict): outputs for a node are a function of its own data, not "
                "covered",
                domain,
                "neighbouring graphs differ by one node added or removed (the paper's relation): y and the split "
                "are withheld (the labels are in the unit; the split would publish the node set), and the "
                "released modules are evaluated on the experimenter's data (pg.fit(release, truth=data)); "
                f"N = num_train = {p.num_train} is public (given, not read from the data): q = B/N, the steps, σ "
                "and the default δ are functions of it; each training node is sampled with probability q and the "
                "noisy sum divided by qN, so a true count other than N changes the batches, not the guarantee",
                "δ: " + ("given" if p.delta is not None else "the authors' 10^-(digits of num_train)"),
                "last DP-SGD iterates kept (the authors select the encoder's epoch on validation accuracy)",
            ),
        )

    def fit(
        self, release: Release, data: Data, model: str, hp: Hyperparameters, seed: int, labels: Any = None
    ) -> TrainResult:
        """The released classifier (``model_state``) evaluated on the split: trained inside the release
        by DP-SGD, so nothing is trained here (another fit would spend budget)."""
        start = time.perf_counter()
        net = self.load_model(release, seed).to(current_device())
        x, edge_index = to_device(data.x.to(torch.float32)), to_device(data.edge_index)
        return evaluate(net, x, data, time.perf_counter() - start, self.params.epochs, edge_index)


__all__ = [
    "AggregationRelease",
    "GAPClassifier",
    "GAPEdge",
    "GAPEncoder",
    "GAPInf",
    "GAPNode",
    "bound_out_degree",
    "neighbour_sum",
    "noisy_neighbour_sum",
    "perturbed_aggregation",
]
