"""GAP-NDP (``gap-ndp``): GAP at node level, bounded-degree node-DP (the package docstring,
:mod:`privgraph.methods.gap`, holds the proof); its encoder and classifier trained by DP-SGD
(:func:`~privgraph.train.dpsgd.train_rows_dpsgd`)."""

from __future__ import annotations

import math
import time
from typing import Any, ClassVar

import torch
from torch import Tensor, nn
from torch_geometric.data import Data

from privgraph.accounting import PrivacyGuarantee, TrustModel, Unit
from privgraph.accounting.ledger import Spend
from privgraph.accounting.rdp import composed_noise_multiplier
from privgraph.device import current_device, to_device
from privgraph.mechanisms.aggregation import bound_out_degree
from privgraph.mechanisms.randomness import RandomSource
from privgraph.methods.base import Hyperparameters, MethodParams, Release, register_method
from privgraph.methods.gap.delta import auto_delta
from privgraph.methods.gap.method import _GAP
from privgraph.methods.gap.params import GAPNodeParams
from privgraph.methods.node_domain import NO_GUARANTEE_NOTE, claims_guarantee, in_domain, needs_num_train
from privgraph.nn.gap import GAPEncoder, GAPNodeModel
from privgraph.progress import ProgressHook
from privgraph.train.dpsgd import epoch_steps, train_rows_dpsgd
from privgraph.train.node_classification import TrainResult, accuracy


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
    (:class:`~privgraph.methods.gap.params.GAPNodeParams`, docs/methods/gap.md)."""

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
        enc = epoch_steps(p.encoder_epochs, n, p.batch_size) if p.encoder_layers else (1.0, 0)
        return (enc, (1.0, p.hops), epoch_steps(p.epochs, n, p.batch_size))

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
        (``"sample"``).  Progress: the encoder's DP-SGD steps, the hops, the classifier's DP-SGD steps."""
        if epsilon is not None:
            self.check_epsilon_given(epsilon)
        inside = self.check_domain(data)
        self.planned_train(data, epsilon is not None)  # refused without the public N before anything is drawn
        x, sigma, delta, seed, details, encoder = self.hop_tables(data, epsilon, rng, progress)
        state = self.train_released_classifier(x, data, sigma, rng, seed, details, progress) or {}
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
            encoder = p.encoder(encoder_state["body.0.weight"].shape[1], encoder_state["head.0.weight"].shape[0])
            encoder.load_state_dict(encoder_state)
        head = sorted(
            (int(k.split(".")[1]), v) for k, v in classifier_state.items() if k.startswith("head.") and v.dim() == 2
        )
        base = classifier_state.get("bases.0.0.weight")
        width = base.shape[1] if base is not None else head[0][1].shape[1] // (p.hops + 1)
        classifier = p.classifier(width, head[-1][1].shape[0])
        classifier.load_state_dict(classifier_state)
        return GAPNodeModel(encoder, classifier, p.hops, p.max_degree, float(state["noise_std"]), seed)

    def graph_for_aggregation(self, data: Data, rng: RandomSource) -> Tensor:
        """The input itself within the bound (nothing sampled, no randomness drawn); above it refused, or with
        ``over_bound="sample"`` the authors' sampling (:func:`bound_out_degree`, no guarantee)."""
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
