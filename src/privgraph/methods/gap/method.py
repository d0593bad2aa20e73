"""GAP's pipeline (the package docstring, :mod:`privgraph.methods.gap`) and its edge-level methods: ``gap-inf``
(no noise) and ``gap-edp``.  The modules are in :mod:`privgraph.nn.gap`, the aggregation perturbation in
:mod:`privgraph.mechanisms.aggregation`."""

from __future__ import annotations

import math
from typing import Any, ClassVar

import torch
from torch import Tensor
from torch_geometric.data import Data

from privgraph.accounting import PrivacyGuarantee, TrustModel, Unit
from privgraph.accounting.ledger import Spend
from privgraph.device import current_device, to_device
from privgraph.mechanisms.aggregation import AggregationPerturbation, AggregationRelease
from privgraph.mechanisms.randomness import RandomSource, integers, make_generator
from privgraph.methods.base import (
    SPLIT_FIELDS,
    Hyperparameters,
    Method,
    MethodParams,
    Release,
    gaussian_multiplier_event,
    register_method,
)
from privgraph.methods.gap.delta import AUTO_DELTA_MAX, auto_delta, auto_delta_count
from privgraph.methods.gap.params import GAPParams
from privgraph.methods.request_view import RequestView
from privgraph.nn.gap import GAPEncoder, sparse_input
from privgraph.progress import ProgressHook
from privgraph.release import PrivateRelease
from privgraph.train.node_classification import TrainResult, train_node_classifier

_NO_GRAPH = torch.empty(2, 0, dtype=torch.long)  # the MLPs read no graph (train_node_classifier's argument)


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
        mechanism = AggregationPerturbation.calibrated(eps, delta, self.params.hops, self.sensitivity(), self.unit)
        return mechanism.noise_multiplier, delta

    def stage(self, what: str) -> str:
        """The progress task of one stage of the release (``gap-ndp encoder DP-SGD steps``)."""
        return f"{self.name} {what}"

    def aggregation(self, sigma: float) -> AggregationPerturbation:
        """The aggregation module's mechanism: K hops of noise σΔ (Δ: :meth:`sensitivity`)."""
        return AggregationPerturbation(self.params.hops, sigma, self.sensitivity(), self.unit)

    def encode(
        self, data: Data, sigma: float, rng: RandomSource, torch_seed: int, progress: ProgressHook | None = None
    ) -> tuple[Tensor, dict[str, Any], GAPEncoder | None]:
        """The encoder module: the embeddings x⁰ of every node (the raw features without an encoder;
        the aggregation normalises them), the training's details and the trained encoder."""
        p = self.params
        x = data.x.to(torch.float32)
        if p.encoder_layers == 0 or p.encoder_epochs == 0:
            return x, {}, None
        torch.manual_seed(torch_seed)
        device = current_device()
        encoder = p.encoder(x.shape[1], int(data.y.max()) + 1).to(device)
        if self.sparse_encoder_input:
            x = sparse_input(x)
        details = self.train_encoder(encoder, x, data, sigma, rng, progress)
        with torch.no_grad():
            return encoder.eval().embed(to_device(x, device)), details, encoder

    def train_encoder(
        self,
        encoder: GAPEncoder,
        x: Tensor,
        data: Data,
        sigma: float,
        rng: RandomSource,
        progress: ProgressHook | None = None,
    ) -> dict[str, Any]:
        """Edge level: Adam on the training nodes (full batch, or ``batch_size`` per step), the best validation
        epoch kept (the authors' trainer with ``checkpoint=True``); no edge is read, so no noise.  Progress: the
        epochs."""
        p = self.params
        res = train_node_classifier(
            encoder, x, _NO_GRAPH, data.y, data.y, data.train_mask, data.val_mask, data.test_mask,
            lr=p.lr, weight_decay=p.weight_decay, epochs=p.encoder_epochs, patience=None,
            progress=progress, task=self.stage("encoder epochs"), row_wise=True, batch_size=p.batch_size,
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
        """The hop tables (progress: the encoder's epochs, the hops); the classifier is trained by :meth:`fit`."""
        x, sigma, delta, seed, details, _ = self.hop_tables(data, epsilon, rng, progress)
        model_state = self.train_released_classifier(x, data, sigma, rng, seed, details, progress)
        return Release(x, self.guarantee(epsilon, sigma, delta), details, model_state=model_state)

    def hop_tables(
        self, data: Data, epsilon: float | None, rng: RandomSource, progress: ProgressHook | None = None
    ) -> tuple[Tensor, float, float, int, dict[str, Any], GAPEncoder | None]:
        """The encoder and aggregation modules: the tables [x⁰ … x^K] side by side, σ, δ, the seed of the
        modules' initialisation, the details and the trained encoder (None: the raw features)."""
        sigma, delta = self.calibrate(data, epsilon)
        seed = _seed(rng)
        emb, details, encoder = self.encode(data, sigma, rng, seed, progress)
        edge_index = to_device(self.graph_for_aggregation(data, rng), emb.device)
        mechanism = self.aggregation(sigma)
        tables, _ = mechanism.aggregate(emb, edge_index, rng, progress, self.stage("aggregation hops"))
        details.update(noise_multiplier=sigma, noise_std=mechanism.noise_std, delta=delta, seed=seed)
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
        tables, sums = self.aggregation(sigma).aggregate(x0, graph, rng)
        return AggregationRelease(tables, sums, graph, self.guarantee(epsilon, sigma, delta, inside))

    def check_domain(self, data: Data) -> bool:
        """Whether ``data`` is inside the domain the guarantee is proven on (edge level: every graph)."""
        return True

    def train_released_classifier(
        self,
        x: Tensor,
        data: Data,
        sigma: float,
        rng: RandomSource,
        seed: int,
        details: dict[str, Any],
        progress: ProgressHook | None = None,
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

    def privatize(self, data: Any, request: RequestView, rng: RandomSource) -> PrivateRelease:
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
        net = p.classifier(x.shape[1] // (p.hops + 1), int(data.y.max()) + 1)
        result = train_node_classifier(
            net, x, _NO_GRAPH, data.y, data.y, data.train_mask, data.val_mask, data.test_mask,
            lr=p.lr, weight_decay=p.weight_decay, epochs=p.epochs, patience=None, row_wise=True,
            batch_size=p.batch_size,
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
