"""GAP-NDP (``gap-ndp``): GAP at node level, bounded-degree node-DP (the package docstring,
:mod:`privgraph.methods.gap`, holds the proof); its encoder and classifier trained by DP-SGD
(:func:`~privgraph.train.dpsgd.train_rows_dpsgd`)."""

from __future__ import annotations

import copy
import math
import time
from functools import lru_cache
from typing import Any, ClassVar

import torch
import torch.nn.functional as F
from torch import Tensor, nn
from torch_geometric.data import Data

from privgraph.accounting import PrivacyGuarantee, TrustModel, Unit
from privgraph.accounting.ledger import Spend
from privgraph.accounting.rdp import composed_epsilon
from privgraph.accounting.search import smallest_noise
from privgraph.device import current_device, to_device
from privgraph.mechanisms.aggregation import AggregationPerturbation, AggregationRelease, bound_out_degree
from privgraph.mechanisms.randomness import RandomSource
from privgraph.mechanisms.soft_cap import (
    clean_simple_graph,
    degrees,
    distance_to_uncovered,
    ptr_test,
    sender_weights,
    soft_capped_aggregation,
)
from privgraph.methods.base import Hyperparameters, MethodParams, Release, register_method
from privgraph.methods.gap.delta import auto_delta
from privgraph.methods.gap.method import _GAP, _NO_GRAPH, _seed
from privgraph.methods.gap.params import GAPNodeParams
from privgraph.methods.node_domain import NO_GUARANTEE_NOTE, claims_guarantee, in_domain, needs_num_train
from privgraph.methods.request_view import RequestView
from privgraph.nn.gap import GAPEncoder, GAPNodeModel
from privgraph.progress import ProgressHook
from privgraph.release import WITHHELD, PrivateRelease
from privgraph.train.dpsgd import epoch_steps, train_rows_dpsgd
from privgraph.train.node_classification import TrainResult, accuracy


def privatize_over(
    privatize: Any, data: Data, edge_index: Tensor, request: RequestView, rng: RandomSource
) -> PrivateRelease:
    """``privatize`` of a shallow copy of ``data`` over ``edge_index``, its other per-edge attributes dropped (GAP-NDP
    and mlp-ndp read none; they would not line up with the cleaned edges) and stated withheld."""
    out = copy.copy(data)
    dropped = [key for key in data.edge_attrs() if key != "edge_index"]
    for key in dropped:
        del out[key]
    out.edge_index = edge_index
    rel = privatize(out, request, rng)
    for key in dropped:
        rel.fields.setdefault(key, WITHHELD)
    return rel


@lru_cache(maxsize=256)
def split_noise_multiplier(
    epsilon: float, delta: float, parts: tuple[tuple[float, int], ...], hop_ratio: float
) -> float:
    """The smallest DP-SGD σ such that the encoder's and classifier's DP-SGD at σ and the K hops at σ_h =
    ``hop_ratio``·σ compose (RDP) to ε ≤ ``epsilon`` at ``delta``; ``parts``: (q, T) of encoder, hops, classifier."""
    enc, hops, cls = parts

    def epsilon_of(sigma: float) -> float:
        return composed_epsilon(((sigma, *enc), (hop_ratio * sigma, *hops), (sigma, *cls)), delta)

    return smallest_noise(epsilon_of, epsilon)


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


@register_method
class GAPNode(_GAP):
    """GAP-NDP (the package docstring).  Default epochs 100 + 100, chosen by a measured accuracy/cost curve
    (:class:`~privgraph.methods.gap.params.GAPNodeParams`, docs/methods/gap.md).

    ``degree_cap="soft"`` (the default) is (ε, δ)-node-DP on every graph: soft-capped hops
    (:mod:`privgraph.mechanisms.soft_cap`) behind a Propose-Test-Release test.  Budget: ε_t = ``test_share``·ε,
    δ_t = ``test_delta`` (default δ/2) for the test; ε_A = ε − ε_t, δ_A = (δ − δ_t)e^{−ε_t} for the RDP
    composition T_enc·R_SGM(α; q, σ) + K·α/(2σ_h²) + T_cls·R_SGM(α; q, σ), with the public rule
    σ_h = ``hop_noise_ratio``·σ and the hop noise std σ_h·Λ·√D; the theorem gives (ε_t + ε_A, δ_t + e^{ε_t}δ_A)
    = (ε, δ).  K = 0 reads no edge: no test, the whole (ε, δ) on DP-SGD.  ``degree_cap="enforced"``: the
    bounded-degree mode, restricted node-DP only (its own unit, ``Unit.restricted_node(D)``)."""

    name = "gap-ndp"
    description = (
        "GAP, node-level DP on every graph: soft-capped hops (weight √(D/d) past D) behind a PTR test, "
        "encoder and classifier by DP-SGD"
    )
    unit = Unit.NODE_WITH_EDGES
    private = True
    epsilon_optional = True
    node_level = True
    # no input is refused or noted for a self-loop, a one-way edge or a duplicate: the soft cap cleans every input
    # the same way (privatize); the unit is the node, not an undirected link
    simple_graph = False
    Params: ClassVar[type[MethodParams]] = GAPNodeParams
    sparse_encoder_input = False  # DP-SGD's per-example clipping reads dense rows
    private_fields: ClassVar[tuple[str, ...]] = ("x", "y", "edge_index")
    # nothing in clear: y is in the unit, and the split would publish the node set, which the add/remove
    # relation of the paper's analysis (σC per example, one node's removal) keeps private
    public_fields: ClassVar[tuple[str, ...]] = ()

    @property
    def enforced(self) -> bool:
        return self.params.degree_cap == "enforced"

    @property
    def tested(self) -> bool:
        """Whether the release runs the PTR test: the soft cap with at least one hop (K = 0 reads no edge)."""
        return not self.enforced and self.params.hops > 0

    def claim_unit(self) -> str:
        """The unit the guarantee is stated on: a node (every graph), or with the enforced cap the restricted
        unit ``node (degree ≤ D)``, which a ledger never takes for a node's."""
        return Unit.restricted_node(self.params.max_degree) if self.enforced else Unit.NODE_WITH_EDGES

    def planned_spend(self, epsilon: float | None, label_epsilon: float | None = None, data: Any = None) -> list[Spend]:
        """ε on :meth:`claim_unit`; ∞ with the enforced cap and ``over_bound="sample"``: that release drops its
        claim on a graph above the bound, known only once the data are read (as EdgeRR's ``convergence="waive"``)."""
        if label_epsilon is not None:
            raise ValueError(f"{self.name} does not collect label reports")
        eps = epsilon if not self.enforced or claims_guarantee(self.params.over_bound) else None
        return [self._spend(self.claim_unit(), eps, data=data)]

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
        enc = epoch_steps(p.encoder_epochs, n, p.batch_size) if p.encoder_layers else (1.0, 0)
        return (enc, (1.0, p.hops), epoch_steps(p.epochs, n, p.batch_size))

    def delta_count(self, data: Data) -> int:
        """The default δ's count: the public ``num_train`` (the authors' rule on the training-node count)."""
        return self.planned_train(data, True)

    def test_budget(self, epsilon: float, delta: float) -> tuple[float, float]:
        """(ε_t, δ_t) of the PTR test ((0, 0) without one), validated: 0 < δ_t < min(½, δ)."""
        if not self.tested:
            return 0.0, 0.0
        p = self.params
        test_delta = delta / 2 if p.test_delta is None else float(p.test_delta)
        if not 0 < test_delta < min(0.5, delta):
            raise ValueError(f"{self.name}: the test's δ_t must be in (0, min(1/2, δ = {delta:g})), got {test_delta}")
        return p.test_share * float(epsilon), test_delta

    def calibrate(self, data: Data, epsilon: float | None) -> tuple[float, float]:
        """(σ, δ): DP-SGD's multiplier σ (the hops': σ_h = ``hop_noise_ratio``·σ), the smallest for which the
        composition meets (ε_A, δ_A), what the test leaves of (ε, δ) (class docstring)."""
        if epsilon is None:
            return 0.0, 0.0
        eps = self.check_epsilon_given(epsilon)
        self.planned_train(data, True)  # before δ and σ: refused without the public N
        delta = self.delta(data)
        eps_t, delta_t = self.test_budget(eps, delta)
        eps_a, delta_a = eps - eps_t, (delta - delta_t) * math.exp(-eps_t)
        return split_noise_multiplier(eps_a, delta_a, self.parts(data), self.hop_ratio()), delta

    def check_domain(self, data: Data) -> bool:
        """Enforced cap: whether every out-degree of ``data`` is ≤ D (above it refused, or False with
        ``over_bound="sample"``); the soft cap's domain is every graph (True, nothing read)."""
        if not self.enforced:
            return True
        return in_domain(self.name, data, self.params.max_degree, self.params.over_bound)

    def hop_ratio(self) -> float:
        """σ_h/σ: the public rule (``hop_noise_ratio``)."""
        return float(self.params.hop_noise_ratio)

    def sensitivity(self) -> float:
        """One hop's ℓ₂ sensitivity: Λ√D (soft cap, covered pairs) or √D (enforced cap, within it)."""
        d = math.sqrt(self.params.max_degree)
        return d if self.enforced else self.params.ptr_lambda * d

    def aggregation(self, sigma: float) -> AggregationPerturbation:
        """K hops of noise std σ_h·Δ, σ_h = ``hop_noise_ratio``·σ (Δ: :meth:`sensitivity`)."""
        return AggregationPerturbation(self.params.hops, self.hop_ratio() * sigma, self.sensitivity())

    def privatize(self, data: Any, request: RequestView, rng: RandomSource) -> PrivateRelease:
        """The soft cap cleans every input the same way before the boundary's checks: self-loops dropped,
        symmetrised, duplicates merged (each commutes with deleting a node), so no input is refused or noted
        for its defects; the report's note is the same on every graph."""
        if self.enforced or not isinstance(data, Data) or getattr(data, "edge_index", None) is None:
            return super().privatize(data, request, rng)
        return privatize_over(
            super().privatize, data, clean_simple_graph(data.edge_index, int(data.num_nodes)), request, rng
        )

    def aggregate_hops(
        self,
        emb: Tensor,
        data: Data,
        epsilon: float | None,
        sigma: float,
        rng: RandomSource,
        progress: ProgressHook | None = None,
    ) -> tuple[list[Tensor], list[Tensor], Tensor, bool | None]:
        """The aggregation module: the tables [x⁰ … x^K], the K noisy sums, the graph read and the PTR bit (None
        without a test).  Soft cap: the degrees of the cleaned graph feed the weights and the test alike; on a
        failed test no hop runs and no edge is read (zero hop tables, the classifier's width is public)."""
        p, task = self.params, self.stage("aggregation hops")
        if self.enforced:
            graph = self.graph_for_aggregation(data, rng)
            tables, sums = self.aggregation(sigma).aggregate(emb, graph.to(emb.device), rng, progress, task)
            return tables, sums, graph, None
        if p.hops == 0:
            return [F.normalize(emb, dim=-1)], [], _NO_GRAPH, None
        graph = clean_simple_graph(data.edge_index.cpu(), int(data.num_nodes))
        deg = degrees(graph, int(data.num_nodes))
        passed = True  # a noiseless run (ε = ∞) tests nothing
        if epsilon is not None:
            eps_t, delta_t = self.test_budget(float(epsilon), self.delta(data))
            passed = ptr_test(distance_to_uncovered(deg, p.max_degree, p.ptr_lambda), eps_t, delta_t, rng)
        if not passed:
            first = F.normalize(emb, dim=-1)
            return [first] + [torch.zeros_like(first)] * p.hops, [], _NO_GRAPH, False
        weights = sender_weights(deg, p.max_degree)
        noise = self.aggregation(sigma).noise_std
        tables, sums = soft_capped_aggregation(
            emb, graph.to(emb.device), weights, hops=p.hops, noise_std=noise, rng=rng, progress=progress, task=task
        )
        return tables, sums, graph, True

    def release(
        self, data: Data, epsilon: float | None, rng: RandomSource, progress: ProgressHook | None = None
    ) -> Release:
        """The three modules trained; the release is their weights (``model_state``: ``encoder.*``,
        ``classifier.*``, ``noise_std``, the aggregation noise inference adds, and ``ptr_passed``, the test's
        bit).  The hop tables stay inside: they have a row per node, and x⁰, the encoder's output of the node's
        own features, is a function of the unit that no noise covers (node-level DP covers the trained weights,
        as in the paper's analysis).  The enforced cap refuses a graph above D before anything is drawn.
        Progress: the encoder's DP-SGD steps, the hops, the classifier's DP-SGD steps."""
        if epsilon is not None:
            self.check_epsilon_given(epsilon)
        inside = self.check_domain(data)
        self.planned_train(data, epsilon is not None)  # refused without the public N before anything is drawn
        sigma, delta = self.calibrate(data, epsilon)
        seed = _seed(rng)
        emb, details, encoder = self.encode(data, sigma, rng, seed, progress)
        tables, _, _, passed = self.aggregate_hops(emb, data, epsilon, sigma, rng, progress)
        x = torch.cat(tables, dim=-1).cpu()
        noise = self.aggregation(sigma).noise_std
        details.update(noise_multiplier=sigma, hop_noise_multiplier=self.hop_ratio() * sigma)
        details.update(noise_std=noise, delta=delta, seed=seed, ptr_passed=passed)
        state = self.train_released_classifier(x, data, sigma, rng, seed, details, progress) or {}
        state = {f"classifier.{k}": v for k, v in state.items()}
        if encoder is not None:
            state.update({f"encoder.{k}": v.detach().cpu() for k, v in encoder.state_dict().items()})
        state["noise_std"] = torch.tensor(noise)  # the inference's noise (σ is public)
        if passed is not None:
            state["ptr_passed"] = torch.tensor(passed)
        details.update(num_train=self.params.num_train, degree_cap=getattr(self.params, "degree_cap", None))
        if self.enforced:  # the restricted mode's curator detail (the soft cap reads nothing it does not cover)
            details.update(within_bound=inside, over_bound=self.params.over_bound)
        return Release(None, self.guarantee(epsilon, sigma, delta, inside, passed), details, model_state=state)

    def release_aggregation(
        self, x0: Tensor, data: Data, epsilon: float | None, rng: RandomSource, edge_index: Tensor | None = None
    ) -> AggregationRelease:
        """The aggregation module of :meth:`release` (the PTR test included) on given embeddings ``x0``, with the
        noise the release calibrates for ε: what the audit observes (``passed``: the released bit)."""
        inside = self.check_domain(data)
        sigma, delta = self.calibrate(data, epsilon)
        if edge_index is not None:
            data = copy.copy(data)
            data.edge_index = edge_index
        tables, sums, graph, passed = self.aggregate_hops(x0, data, epsilon, sigma, rng)
        out = AggregationRelease(tables, sums, graph, self.guarantee(epsilon, sigma, delta, inside, passed))
        out.passed = passed
        return out

    def answers(self, release: Release, epsilon: float | None) -> str:
        return (
            "the released encoder and classifier (GAPNodeModel, the authors' predict): a query's features are "
            "encoded and aggregated over the server's graph (soft cap: the cleaned graph's soft-capped sums, or "
            "zero hop tables when the release's PTR test failed; enforced cap: bounded to D out-edges), with noise "
            "of the release's scale (one fixed draw), then classified"
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
            encoder = p.encoder(encoder_state["body.0.weight"].shape[1], encoder_state["head.0.weight"].shape[0])
            encoder.load_state_dict(encoder_state)
        head = sorted(
            (int(k.split(".")[1]), v) for k, v in classifier_state.items() if k.startswith("head.") and v.dim() == 2
        )
        base = classifier_state.get("bases.0.0.weight")
        width = base.shape[1] if base is not None else head[0][1].shape[1] // (p.hops + 1)
        classifier = p.classifier(width, head[-1][1].shape[0])
        classifier.load_state_dict(classifier_state)
        passed = bool(state["ptr_passed"]) if "ptr_passed" in state else True
        return GAPNodeModel(
            encoder,
            classifier,
            p.hops,
            getattr(p, "max_degree", 1),
            float(state["noise_std"]),
            seed,
            not self.enforced,
            passed,
        )

    def graph_for_aggregation(self, data: Data, rng: RandomSource) -> Tensor:
        """Enforced cap: the input itself within the bound (nothing sampled, no randomness drawn); above it
        refused, or with ``over_bound="sample"`` the authors' sampling (:func:`bound_out_degree`, no guarantee).
        Soft cap: the cleaned simple graph (:func:`~privgraph.mechanisms.soft_cap.clean_simple_graph`)."""
        if not self.enforced:
            return clean_simple_graph(data.edge_index, int(data.num_nodes))
        if self.check_domain(data):
            return data.edge_index
        return bound_out_degree(data.edge_index, data.num_nodes, self.params.max_degree, rng)

    def train_encoder(
        self,
        encoder: GAPEncoder,
        x: Tensor,
        data: Data,
        sigma: float,
        rng: RandomSource,
        progress: ProgressHook | None = None,
    ) -> dict[str, Any]:
        """Node level: DP-SGD on the training nodes (:meth:`dpsgd`), the last iterate kept."""
        self.dpsgd(encoder, x, data, self.params.encoder_epochs, sigma, rng, progress, "encoder DP-SGD steps")
        return {}

    def dpsgd(
        self,
        model: nn.Module,
        x: Tensor,
        data: Data,
        epochs: int,
        sigma: float,
        rng: RandomSource,
        progress: ProgressHook | None,
        stage: str,
    ) -> None:
        """``model`` by DP-SGD (:func:`~privgraph.train.dpsgd.train_rows_dpsgd`) on the training nodes' rows of
        ``x``, planned for the public ``num_train``."""
        p, train, device = self.params, data.train_mask, current_device()
        train_rows_dpsgd(
            model, x[train].to(device), data.y[train].to(device), epochs=epochs, batch_size=p.batch_size, lr=p.lr,
            weight_decay=p.weight_decay, clip=p.clip, noise_multiplier=sigma, rng=rng,
            planned=self.planned_train(data, sigma > 0), progress=progress, task=self.stage(stage),
        )  # fmt: skip

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
        """The classification module by DP-SGD on the training nodes' rows of the noisy tables; its
        weights are released (``model_state``)."""
        p = self.params
        torch.manual_seed(seed + 1)
        device = current_device()
        net = p.classifier(x.shape[1] // (p.hops + 1), int(data.y.max()) + 1).to(device)
        self.dpsgd(net, x, data, p.epochs, sigma, rng, progress, "classifier DP-SGD steps")
        details["steps"] = [t for _, t in self.parts(data)] if sigma > 0 else None
        return {k: v.detach().cpu() for k, v in net.state_dict().items()}

    def guarantee(
        self, epsilon: float | None, sigma: float, delta: float, inside: bool = True, passed: bool | None = None
    ) -> PrivacyGuarantee:
        """The release's claim: (ε, δ)-node-DP on every graph (soft cap; the PTR bit ``passed`` stated, covered by
        the test's budget), or restricted node-DP on its own unit (enforced cap)."""
        p = self.params
        if self.enforced:
            return self.restricted_guarantee(epsilon, sigma, delta, inside)
        eps = math.inf if epsilon is None else float(epsilon)
        eps_t, delta_t = self.test_budget(eps, delta) if math.isfinite(eps) else (0.0, 0.0)
        if not self.tested:
            test = "K = 0: no hop and no edge read, no test; the whole (ε, δ) on DP-SGD"
        else:
            bit = {True: "passed: the K hops were released", False: "failed: no hop ran (zero hop tables, no edge "
                   "read after the test)", None: "not run (no noise)"}[passed]  # fmt: skip
            test = (
                f"PTR test {bit}; the bit is part of the release, covered by the test's (ε_t, δ_t) = ({eps_t:.4g}, "
                f"{delta_t:.3g}): pass ⇔ k*(G) + Lap(1/ε_t) > ln(1/(2δ_t))/ε_t, k* the node distance to a graph "
                "whose hop sensitivity may exceed Λ√D (1-Lipschitz)"
            )
        ratio = p.hop_noise_ratio
        return PrivacyGuarantee(
            Unit.NODE_WITH_EDGES,
            TrustModel.CENTRAL,
            eps,
            delta if math.isfinite(eps) else 0.0,
            f"GAP-NDP (soft cap, PTR): DP-SGD encoder + {p.hops} Gaussian hops of soft-capped sums (sender weight "
            f"min(1, √(D/d)), D={p.max_degree}, sensitivity Λ√D, Λ={p.ptr_lambda:g}) + DP-SGD classifier; "
            f"σ={sigma:.4g}, σ_h={ratio:g}·σ, RDP composition",
            (
                "node-DP on every input graph (one node and all its edges, features and label added or removed; no "
                "degree promise): (ε, δ) = (ε_t + ε_A, δ_t + e^{ε_t}·δ_A), ε_t = test_share·ε, δ_t = test_delta "
                "(default δ/2), (ε_A, δ_A) the RDP composition of the encoder's DP-SGD, the K hops and the "
                "classifier's DP-SGD (docs/methods/gap.md, 'Node level')",
                test,
                f"noise: DP-SGD σ, hops σ_h = hop_noise_ratio·σ = {ratio:g}·σ (a public rule), hop noise std "
                "σ_h·Λ·√D on every row",
                "input graph cleaned unconditionally (self-loops dropped, symmetrised, duplicates merged; the same "
                "on every input); no degree, node count or statistic of the graph is released",
                *self.common_notes(),
            ),
        )

    def restricted_guarantee(self, epsilon: float | None, sigma: float, delta: float, inside: bool) -> PrivacyGuarantee:
        """``degree_cap="enforced"``: restricted node-DP on the unit ``node (degree ≤ D)``."""
        p = self.params
        inside = inside and claims_guarantee(p.over_bound)  # sample: ∞ whatever the graph (no data-dependent claim)
        eps = math.inf if epsilon is None or not inside else float(epsilon)
        domain = (
            f"restricted node-DP (holds only between graphs whose degrees are all ≤ D = {p.max_degree}); not "
            "node-DP on arbitrary graphs: D is a cap the data owner enforces (never read from the data); on such "
            "graphs the aggregation reads the input and one node moves at most D rows of a hop's sum by unit "
            "vectors: Δ = √D exactly; a graph above the cap is refused (over_bound=refuse), a refusal that is "
            "itself not node-DP on arbitrary graphs (docs/methods/gap.md, 'Enforced cap')"
            if inside
            else NO_GUARANTEE_NOTE
        )
        return PrivacyGuarantee(
            self.claim_unit(),
            TrustModel.CENTRAL,
            eps,
            delta if math.isfinite(eps) else 0.0,
            f"GAP-NDP, restricted node-DP (not node-DP on arbitrary graphs): DP-SGD encoder + {p.hops} Gaussian hops "
            f"(Δ=√D, D={p.max_degree}) + DP-SGD classifier, σ={sigma:.4g}, σ_h={p.hop_noise_ratio:g}·σ, RDP "
            "composition",
            (domain, *self.common_notes()),
        )

    def common_notes(self) -> tuple[str, ...]:
        p = self.params
        return (
            "released: the encoder's and the classifier's weights (model_state), covered by the composed "
            "guarantee; the hop tables are not released (a row per node, x⁰ the encoder's output of the node's own "
            "features: per-node outputs are outside node-level DP)",
            "inference (pg.fit, attacks) runs the released modules on the querier's graph and features "
            "(GAPNodeModel, the authors' predict): outputs for a node are a function of its own data, not covered",
            "neighbouring graphs differ by one node added or removed (the paper's relation): y and the split "
            "are withheld (the labels are in the unit; the split would publish the node set), and the released "
            "modules are evaluated on the experimenter's data (pg.fit(release, truth=data)); "
            f"N = num_train = {p.num_train} is public (given, not read from the data): q = B/N, the steps, σ and "
            "the default δ are functions of it; each training node is sampled with probability q and the noisy "
            "sum divided by qN, so a true count other than N changes the batches, not the guarantee",
            "δ: " + ("given" if p.delta is not None else "the authors' 10^-(digits of num_train)"),
            "last DP-SGD iterates kept (the authors select the encoder's epoch on validation accuracy)",
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
