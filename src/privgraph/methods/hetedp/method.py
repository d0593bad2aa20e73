"""HeteDP's registered methods, on the user's ``HeteroData``.

* ``hetedp`` (link prediction, §IV): the features of every node type the
  link encoder reads are clipped and perturbed with ε_f = share·ε
  (:mod:`~privgraph.methods.hetedp.features`), then the RGCN-VGAE link
  reconstructor is trained by DP-SGD with ε_s = (1 − share)·ε on the edges of
  the protected relation (:mod:`~privgraph.methods.hetedp.topology` says what
  ε_s covers in each ``topology`` mode).  The release holds the noisy
  features, the fixed random inputs of featureless types, the relations that
  pass messages (public, as given) and the trained weights; never the
  protected relation's edges.  ``feature_dim=k`` projects each row to k
  dimensions by a public random matrix before clipping (same σ over fewer
  coordinates).  ``features="none"`` is the corner ε_f = 0 of the bi-level
  budget split (§IV-C, eq. 5): the private features are not read at all, every node
  type gets the public random inputs of featureless types
  (:func:`~privgraph.data.hetero.node_inputs`), all of ε goes to DP-SGD
  (ε_s = ε) and the guarantee names the edge unit only.
  :func:`~privgraph.methods.hetedp.link_release.link_release` is the one piece of code behind both
  ``privatize`` and the experiment runner.
* ``hetedp-features`` (node classification, §IV-A): the features of the
  chosen node types, clipped and perturbed once; the graph and the labels
  are public in this setting (HAN is then trained on the release).

Both take ``calibration``: ``"clipped"`` (the default, DP) or ``"paper"`` —
the paper's noise scale as its code computes it, **not** DP, stated as ε = ∞
in the report (:mod:`~privgraph.methods.hetedp.features`); it exists to show
what the paper's numbers rest on, never as a default.  ``hetedp`` also takes
``gradient_step``: ``"dpsgd"`` (the default, eq. 22) or ``"paper"`` — the
authors' gradient step (:func:`~privgraph.train.dpsgd.paper_gradient_step`),
**not** DP, its edge guarantee stated as ε = ∞
(:func:`~privgraph.methods.hetedp.topology.paper_step_guarantee`).  For node classification,
``nc_model="link-vgae"`` classifies the link model's embeddings instead of training a HAN — the
authors' ``topologyDP_nc.py``, with ``nc_selection="best-test"`` their optimistic choice of epoch
and ``nc_inputs="authors-han"`` their ``featDP.py`` inputs (HAN embeddings of the clean features,
trained on the training labels: **not** DP, stated as ε = ∞) (:mod:`~privgraph.methods.hetedp.nc`;
opt-in, never the default).

The non-private baselines (``rgcn``, ``hgt``, ``metapath2vec``) are registered in
:mod:`~privgraph.methods.hetedp.baselines`, beside their training.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, fields
from typing import Any

from torch import Tensor
from torch_geometric.data import HeteroData

from privgraph.accounting import PrivacyReport, TrustModel, Unit
from privgraph.accounting.ledger import Spend, gaussian_event
from privgraph.accounting.rdp import noise_multiplier_for
from privgraph.data.hetero import EdgeType
from privgraph.mechanisms import RandomSource
from privgraph.mechanisms.randomness import integers
from privgraph.methods.base import (
    SPLIT_FIELDS,
    HeteroMethod,
    Method,
    MethodParams,
    Task,
    gaussian_multiplier_event,
    param,
    register_method,
)
from privgraph.methods.hetedp.checks import check_hetero, check_projection, edge_type_param, store_key
from privgraph.methods.hetedp.features import CALIBRATIONS, FEATURE_MODES, privatize_features
from privgraph.methods.hetedp.link_release import LinkRelease, LinkReleaseSettings, link_release
from privgraph.methods.hetedp.nc import (
    EPOCH_SELECTIONS,
    NC_EMBEDDINGS,
    NC_INPUTS,
    NC_MODELS,
    ReplacedInputs,
    check_nc_defaults,
    check_nc_options,
    featdp_inputs,
)
from privgraph.methods.hetedp.topology import TOPOLOGY_MODES
from privgraph.methods.request_view import RequestView
from privgraph.nn.hetero import RelationalVGAEEncoder, relation_key
from privgraph.param_checks import HETEDP_FEATURE_SHARE as DEFAULT_FEATURE_SHARE
from privgraph.param_checks import authors_inputs_mode, feature_options, feature_share_unused
from privgraph.progress import ProgressHook
from privgraph.release import PUBLIC, WITHHELD, PrivateRelease, input_fields
from privgraph.train.dpsgd import DPSGDConfig, plan_sampling
from privgraph.train.link_prediction import LinkInputs, link_scores


@dataclass(frozen=True)
class HeteDPParams(MethodParams):
    """HeteDP's settings (Algorithm 1): the protected relation, the split ε_f/ε_s between features (§IV-A)
    and DP-SGD (§IV-B, eq. 22), the ``topology`` mode that decides what ε_s covers, and the link model."""

    edge_type: tuple[str, str, str] | None = param(
        None, "the protected relation (src, rel, dst) whose edges train the link model (required)"
    )
    reverse: tuple[str, str, str] | None = param(None, "its reverse relation (default: the one dst → src relation)")
    feature_share: float = param(
        DEFAULT_FEATURE_SHARE,
        "ε_f/ε spent on the features (privgraph run --tune chooses it on validation when not given)",
        bound="in (0, 1)",
    )
    features: str = param(
        "noisy",
        "noisy (clipped + Gaussian with ε_f) or none (x is not read: every type gets "
        "public random inputs, ε_s = ε, feature_share unused; the guarantee is the edge's "
        "only)",
        choices=FEATURE_MODES,
    )
    feature_dim: int | None = param(
        None,
        "project each feature row to this many dimensions by a public random "
        "orthonormal matrix before clipping (same σ, fewer noisy coordinates)",
        bound=">= 1",
    )
    projection_seed: int = param(0, "public seed of the projection (data independent, stated in the release)")
    topology: str = param(
        "edge",
        "edge (messages over the other relations: edge-level DP), node (no messages) or "
        "message-passing (the paper's: ε covers one example's loss term, not an edge)",
        choices=TOPOLOGY_MODES,
    )
    clip_bound: float = param(1.0, "L2 bound C_f of each node's feature vector", bound="in (0, inf)")
    calibration: str = param(
        "clipped",
        "feature noise: clipped (DP, the default) or paper (the paper's "
        "λ = 0.01, Δ = 2 on unclipped features: NOT DP, stated as ε = ∞)",
        choices=CALIBRATIONS,
    )
    delta: float = param(1e-5, "δ of the feature release and of DP-SGD", bound="in (0, 1)")
    edge_count: int | None = param(
        None,
        "DP-SGD: a PUBLIC number N of training edges of the protected relation "
        "(their count if you treat it as public, or a public upper bound); it "
        "fixes the sampling rate q = B/N and the steps T, which are never read "
        "from the private edges (required with ε)",
    )
    batch_size: int = param(512, "DP-SGD: expected (Poisson) batch size")
    epochs: int = param(20, "DP-SGD: expected passes over the edges")
    lr: float = param(0.01, "DP-SGD: learning rate")
    clip: float = param(1.0, "DP-SGD: per-example clipping norm C")
    negatives: int = param(5, "DP-SGD: uniform negative pairs per edge")
    hidden: int = param(32, "encoder hidden width")
    latent: int = param(32, "embedding dimension")
    kl_weight: float = param(0.01, "weight of eq. 21's KL term")
    gradient_step: str = param(
        "dpsgd",
        "dpsgd (eq. 22: per-example clipping, Gaussian noise; DP, the default) or "
        "paper (the authors' utilsDP step: the batch gradient's rows clipped, sum "
        "and noise rescaled to norm 1: NOT DP, stated as ε = ∞)",
    )
    self_connection: bool = param(
        True,
        "the encoder adds each node's own input to its neighbours' messages (the "
        "default); false: neighbours only, as the authors' TopoDP (DGL GraphConv "
        "per relation, no self-loop); the guarantee is the same either way",
    )
    nc_model: str = param(
        "han",
        "node classification: han (a HAN on the DP features, §IV-A; the default) or "
        "link-vgae (the authors' topologyDP_nc.py: a logistic regression on the link "
        "model's embeddings of the classified type after each DP-SGD epoch)",
        choices=NC_MODELS,
    )
    nc_selection: str = param(
        "validation",
        "link-vgae: the epoch reported — validation (best validation micro-F1; "
        "the default) or best-test (THE PAPER'S OPTIMISTIC SELECTION: the best "
        "test micro-F1 over the epochs; reads the test labels, not an estimate)",
        choices=EPOCH_SELECTIONS,
    )
    nc_embedding: str = param(
        "mean",
        "link-vgae: the embedding classified — mean (μ) or sample (the authors' posterior sample μ + N(0, I)·σ)",
        choices=NC_EMBEDDINGS,
    )
    nc_inputs: str = param(
        "release",
        "link-vgae: the link model's inputs — release (the release's features; the "
        "default) or authors-han / authors-han-target (the authors' featDP.py: a HAN "
        "per type trained on the TRAINING LABELS (degree bins for the other types), "
        "embedding the CLEAN features; every type read / the classified type only; "
        "NOT DP for the features, stated as ε = ∞; message-passing mode only)",
        choices=NC_INPUTS,
    )

    rules = (feature_share_unused, feature_options, authors_inputs_mode)

    def dpsgd(self) -> DPSGDConfig:
        return DPSGDConfig(**{f.name: getattr(self, f.name) for f in fields(DPSGDConfig)})

    def validate(self) -> None:
        object.__setattr__(self, "edge_type", edge_type_param(self.edge_type, "edge_type"))
        object.__setattr__(self, "reverse", edge_type_param(self.reverse, "reverse"))
        super().validate()  # the declared choices, bounds and rules
        check_projection(self.calibration, self.feature_dim, self.projection_seed, self.features)
        check_nc_options(self.nc_model, self.nc_selection, self.nc_embedding, self.nc_inputs)
        self.dpsgd()

    def link_release(
        self,
        data: HeteroData,
        edge_type: EdgeType,
        reverse: EdgeType,
        examples: Tensor,
        message_edges: dict[EdgeType, Tensor],
        epsilon: float | None,
        rng: RandomSource,
        seed: int,
        progress: ProgressHook | None = None,
        on_epoch: Callable[[int, RelationalVGAEEncoder, LinkInputs], None] | None = None,
        replace_inputs: Callable[[float | None, dict[str, Tensor]], ReplacedInputs] | None = None,
    ) -> LinkRelease:
        """:func:`~privgraph.methods.hetedp.link_release.link_release` with these settings."""
        return link_release(
            data,
            edge_type,
            reverse,
            examples,
            message_edges,
            epsilon,
            self.link_settings(),
            rng,
            seed,
            progress,
            on_epoch,
            replace_inputs,
        )

    def link_settings(self) -> LinkReleaseSettings:
        """These parameters as :func:`~privgraph.methods.hetedp.link_release.link_release`'s settings."""
        return LinkReleaseSettings(
            share=self.feature_share,
            topology=self.topology,
            clip_bound=self.clip_bound,
            delta=self.delta,
            config=self.dpsgd(),
            calibration=self.calibration,
            features=self.features,
            feature_dim=self.feature_dim,
            projection_seed=self.projection_seed,
        )


def _seed(rng: RandomSource) -> int:
    return int(integers(2**31, (1,), rng)[0])


@register_method
class HeteDP(HeteroMethod):
    """HeteDP's link reconstructor (module docstring): noisy features + DP-SGD, one release.

    Algorithm 1 of the paper: features clipped and perturbed with ε_f (§IV-A, replacing eq. 14: see
    :mod:`~privgraph.methods.hetedp.features`), then the RGCN-VGAE (eq. 18–21) trained by DP-SGD (eq. 22)
    with ε_s.  Central model (trusted curator).  Units: one node's feature vector (ε_f, δ) and one edge of
    the protected relation (ε_s, δ) in the edge and node modes; in the message-passing mode ε_s covers one
    example's loss term only (:mod:`~privgraph.methods.hetedp.topology`)."""

    trust_models = (TrustModel.CENTRAL,)

    name = "hetedp"
    description = "HeteDP: clipped Gaussian features + an RGCN-VGAE link model trained by DP-SGD (heterogeneous)"
    unit = Unit.EDGE  # the report names the relation: "edge of (src, rel, dst)"
    task = Task.LINK_PREDICTION
    Params = HeteDPParams
    delta_param = "delta"
    shares = ("training_seed", "on_epoch", "replace_inputs")  # the hetero tasks' (Shared)

    def spend_event(self, unit: str, epsilon: float, delta: float, data: Any = None) -> dict[str, Any] | None:
        """The feature release's analytic Gaussian (noise multiplier λ ≥ 1 only adds noise); on the edges, DP-SGD's
        T steps of the Poisson-subsampled Gaussian, σ, q = B/N and T planned from the public ``edge_count`` N
        alone (as the training plans them: :func:`~privgraph.train.dpsgd.plan_sampling`)."""
        p = self.params
        if unit == Unit.NODE_FEATURES:
            return None if p.calibration == "paper" else gaussian_multiplier_event(epsilon, delta)
        if not unit.startswith(Unit.EDGE) or p.edge_count is None:
            return None
        plan = plan_sampling(p.dpsgd(), True, p.edge_count)
        sigma = noise_multiplier_for(epsilon, delta, plan.sample_rate, plan.steps)
        return gaussian_event(sigma, plan.steps, plan.sample_rate)

    private = True
    epsilon_optional = True  # without ε: the same model without noise, no guarantee (stated)
    private_fields = ("x", "edge_index of the protected relation")
    public_fields = ("edge_index of the relations passing messages",)

    def planned_spend(self, epsilon: float | None, label_epsilon: float | None = None, data: Any = None) -> list[Spend]:
        """(ε_f, δ) per node feature vector and (ε_s, δ) per edge of the protected relation: ε_f = share·ε
        and ε_s = (1 − share)·ε, or ε_s = ε with features='none' (the accountant's ε_s is at most its
        target).  ∞ where no edge-level or feature DP is claimed (calibration='paper', the paper's gradient
        step or message-passing topology, no ε)."""
        p = self.params
        edge = Unit.EDGE if p.edge_type is None else f"{Unit.EDGE} of {tuple(p.edge_type)}"
        if epsilon is None:
            return [Spend(edge, math.inf)] + ([] if p.features == "none" else [Spend(Unit.NODE_FEATURES, math.inf)])
        eps_f, eps_s = (0.0, epsilon) if p.features == "none" else (p.feature_share * epsilon, None)
        eps_s = (1.0 - p.feature_share) * epsilon if eps_s is None else eps_s
        no_edge_dp = p.topology == "message-passing" or p.gradient_step == "paper"
        spends = [self._spend(edge, None if no_edge_dp else eps_s)]
        if p.features != "none":
            spends.append(self._spend(Unit.NODE_FEATURES, None if p.calibration == "paper" else eps_f))
        return spends

    # the heterogeneous tasks' hooks (privgraph.experiments.tasks): the lp task releases the link model
    # (link_release of the params) and may choose feature_share on validation
    releases_link_model = True

    def hetero_nc_model(self) -> str:
        """What the hetero-nc task trains on this method's release: ``han`` (a HAN over the dataset's
        metapaths on the released target features) or, with ``nc_model="link-vgae"``, ``link-vgae``
        (a logistic regression on the link release's embeddings)."""
        return "link-vgae" if self.params.nc_model == "link-vgae" else "han"

    def nc_input_replacement(
        self, data: HeteroData, dataset: str, target: str, split: str, seed: int
    ) -> Callable[[float | None, dict[str, Tensor]], ReplacedInputs] | None:
        """``link-vgae``'s ``replace_inputs`` on the registered ``dataset``: None with ``nc_inputs="release"``
        (the release's own features), else the authors' featDP.py inputs (:func:`featdp_inputs`, not DP)."""
        if self.params.nc_inputs == "release":
            return None
        return featdp_inputs(data, dataset, target, split, seed, self.params)

    def hetero_nc_release(self, target: str) -> Method:
        """The release the hetero-nc task's HAN reads: HeteDP's feature release (§IV-A, these settings)
        of the target type alone (``link-vgae`` releases with this method itself)."""
        p = self.params
        return HeteDPFeatures(
            node_types=(target,),
            clip_bound=p.clip_bound,
            calibration=p.calibration,
            feature_dim=p.feature_dim,
            projection_seed=p.projection_seed,
            delta=p.delta,
        )

    def check_hetero_task(self, task: str, split: str) -> None:
        """The evaluation task ``task`` (``hetero-nc`` or ``lp``) refuses what it would ignore."""
        p = self.params
        if task == "hetero-nc" and p.features == "none" and self.hetero_nc_model() != "link-vgae":
            raise ValueError(
                "features='none' is a link-prediction option (node classification releases the "
                "features themselves): use features='noisy', or nc_model='link-vgae'"
            )
        if task == "lp":
            check_nc_defaults(p.nc_model, p.nc_selection, p.nc_embedding, p.nc_inputs, "link prediction")

    def resolve_relations(self, data: HeteroData) -> tuple[EdgeType, EdgeType]:
        """The protected relation and its reverse, checked against ``data``."""
        p = self.params
        if p.edge_type is None:
            raise ValueError(f"hetedp needs edge_type, the protected relation; the graph has {data.edge_types}")
        if p.edge_type not in data.edge_types:
            raise ValueError(f"edge_type {p.edge_type} is not a relation of the graph: {data.edge_types}")
        if p.reverse is not None:
            if p.reverse not in data.edge_types:
                raise ValueError(f"reverse {p.reverse} is not a relation of the graph: {data.edge_types}")
            return p.edge_type, p.reverse
        src, _, dst = p.edge_type
        back = [et for et in data.edge_types if et[0] == dst and et[2] == src and et != p.edge_type]
        if len(back) != 1:
            raise ValueError(f"cannot tell the reverse of {p.edge_type} among {back or 'no relation'}: give reverse")
        return p.edge_type, back[0]

    def privatize(self, data: Any, request: RequestView, rng: RandomSource) -> PrivateRelease:
        """Train the link model on every edge of ``edge_type`` (hold out evaluation edges first).

        Returns a :class:`~privgraph.release.PrivateRelease` with the noisy features, the message-passing
        relations and the trained weights (and, in memory, the trained model with its inputs:
        ``trained``); the protected relation's edges are withheld.  The request's shared ``training_seed``
        (drawn from ``rng`` when not given) seeds the initialisation, the featureless types' random inputs and the
        batches; its ``on_epoch`` and ``replace_inputs`` go to :func:`link_release` (the hetero-nc task's
        ``nc_model="link-vgae"``)."""
        shared, progress = request.shared, request.progress
        training_seed, on_epoch, replace_inputs = shared.training_seed, shared.on_epoch, shared.replace_inputs
        data = check_hetero(self.name, data)
        epsilon = None if request.epsilon is None else self.check_epsilon_given(request.epsilon)
        edge_type, reverse = self.resolve_relations(data)
        p = self.params
        if on_epoch is None:  # the nc options belong to the hetero-nc task, which records every epoch
            check_nc_defaults(p.nc_model, p.nc_selection, p.nc_embedding, p.nc_inputs, "a release")
        link = p.link_release(
            data,
            edge_type,
            reverse,
            data[edge_type].edge_index,
            data.edge_index_dict,
            epsilon,
            rng,
            _seed(rng) if training_seed is None else training_seed,
            progress,
            on_epoch=on_epoch,
            replace_inputs=replace_inputs,
        )
        out = HeteroData()
        fields_ = {name: WITHHELD for name in input_fields(data)}
        privatized = {g.unit: "privatized: " + g.describe() for g in link.guarantees}
        for t, x in link.inputs.x.items():
            out[t].x = x
            if "x" not in data[t]:
                fields_[f"{t}.x"] = "random inputs drawn for a featureless type (no data)"
            elif p.features == "none":
                fields_[f"{t}.x"] = WITHHELD + " (not read: random inputs from a public seed stand in for it)"
            else:
                fields_[f"{t}.x"] = privatized.get(Unit.NODE_FEATURES, "privatized")
        for t in data.node_types:
            out[t].num_nodes = data[t].num_nodes
        for et in link.relations:
            if et not in (edge_type, reverse):
                out[et].edge_index = data[et].edge_index
                fields_[f"{store_key(et)}.edge_index"] = PUBLIC + " (passes messages into the encoder)"
        for et in (edge_type, reverse):
            fields_[f"{store_key(et)}.edge_index"] = (
                WITHHELD + " (the protected relation: only the model trained on it is released)"
            )
        details = {
            **link.details,
            "edge_type": list(edge_type),
            "reverse": list(reverse),
            "message_relations": [relation_key(r) for r in link.relations],
        }
        return PrivateRelease(
            self.name,
            self.params.to_dict(),
            epsilon,
            out,
            PrivacyReport(link.guarantees),
            fields_,
            details,
            model_state=link.result.model.state_dict(),
            trained=link,
        )


def released_link_model(release: PrivateRelease) -> tuple[RelationalVGAEEncoder, LinkInputs, EdgeType]:
    """Rebuild HeteDP's released link model and its inputs from the release alone (the noisy
    features, the fixed random inputs and the public relations it holds, and ``model_state``).
    Only in ``edge`` and ``node`` modes: in ``message-passing`` mode the encoder's inputs also
    aggregate the protected relation's edges, which the release does not hold."""
    if release.method != HeteDP.name or release.model_state is None:
        raise ValueError("not a HeteDP link release (it needs the released model_state)")
    params = HeteDPParams.build(HeteDP.name, release.params)
    if params.topology == "message-passing":
        raise ValueError(
            "a message-passing release cannot be scored from the release alone: its encoder reads the "
            "protected relation's edges (the curator scores it)"
        )
    data = release.data
    edge_type = params.edge_type
    relations = list(data.edge_types)
    inputs = LinkInputs.build(
        {t: data[t].x for t in data.node_types if "x" in data[t]},  # none in node mode
        {et: data[et].edge_index for et in relations},
        relations,
    )
    model = RelationalVGAEEncoder(
        {t: x.shape[1] for t, x in inputs.x.items()},
        list(dict.fromkeys((edge_type[0], edge_type[2]))),
        relations,
        params.hidden,
        params.latent,
        params.self_connection,
    )
    model.load_state_dict(release.model_state)
    model.eval()
    return model, inputs, edge_type


def score_links(release: PrivateRelease, pairs: Tensor) -> Tensor:
    """Scores μ_u·μ_v (eq. 19's logit at the posterior mean) of the released HeteDP model for
    ``pairs`` [2, P] of its protected relation — post-processing of the release."""
    model, inputs, edge_type = released_link_model(release)
    return link_scores(model, inputs, edge_type, pairs)


@dataclass(frozen=True)
class HeteDPFeatureParams(MethodParams):
    """HeteDP's feature release settings (§IV-A): the node types released, the clip bound C_f and δ."""

    node_types: tuple[str, ...] | None = param(None, "node types whose features are released (default: all with x)")
    clip_bound: float = param(1.0, "L2 bound C_f of each node's feature vector", bound="in (0, inf)")
    calibration: str = param(
        "clipped",
        "clipped (DP, the default) or paper (the paper's λ = 0.01, Δ = 2 on "
        "unclipped features: NOT DP, stated as ε = ∞)",
        choices=CALIBRATIONS,
    )
    feature_dim: int | None = param(
        None,
        "project each feature row to this many dimensions by a public random "
        "orthonormal matrix before clipping (same σ, fewer noisy coordinates)",
        bound=">= 1",
    )
    projection_seed: int = param(0, "public seed of the projection (data independent, stated in the release)")
    delta: float = param(1e-5, "δ of the Gaussian release", bound="in (0, 1)")

    rules = (feature_options,)

    def validate(self) -> None:
        if self.node_types is not None:
            object.__setattr__(self, "node_types", tuple(self.node_types))
        super().validate()  # the declared choices and bounds
        check_projection(self.calibration, self.feature_dim, self.projection_seed)


@register_method
class HeteDPFeatures(HeteroMethod):
    """HeteDP's feature privacy (§IV-A) alone: clip to C_f, analytic Gaussian for sensitivity 2C_f.

    Releases the noisy features of the chosen node types; the graph, labels and split are public.  Privacy
    unit: one node's feature vector, (ε, δ)-DP in the central model (the noise replaces eq. 14's, see
    :mod:`~privgraph.methods.hetedp.features`)."""

    trust_models = (TrustModel.CENTRAL,)

    name = "hetedp-features"
    description = "HeteDP features: clipped node features with calibrated Gaussian noise (heterogeneous, NC)"
    Params = HeteDPFeatureParams
    delta_param = "delta"

    def spend_event(self, unit: str, epsilon: float, delta: float, data: Any = None) -> dict[str, Any] | None:
        """One analytic Gaussian per node feature vector (not with calibration='paper')."""
        if unit != Unit.NODE_FEATURES or self.params.calibration == "paper":
            return None
        return gaussian_multiplier_event(epsilon, delta)

    private = True
    private_fields = ("x",)
    public_fields = ("edge_index", *SPLIT_FIELDS)

    def planned_spend(self, epsilon: float | None, label_epsilon: float | None = None, data: Any = None) -> list[Spend]:
        """(ε, δ) per node feature vector; ∞ with calibration='paper' (not DP)."""
        return [self._spend(Unit.NODE_FEATURES, None if self.params.calibration == "paper" else epsilon)]

    def hetero_nc_release(self, target: str) -> Method:
        """The hetero-nc task's release: the features of the target type, which its HAN reads."""
        return self.with_params(node_types=(target,))

    def privatize(self, data: Any, request: RequestView, rng: RandomSource) -> PrivateRelease:
        """A :class:`~privgraph.release.PrivateRelease` of the noisy features with the public graph and labels."""
        epsilon = request.epsilon
        data = check_hetero(self.name, data)
        p = self.params
        types = list(p.node_types) if p.node_types is not None else None
        release = privatize_features(
            data,
            self.check_epsilon_given(epsilon),
            p.delta,
            p.clip_bound,
            rng,
            node_types=types,
            calibration=p.calibration,
            feature_dim=p.feature_dim,
            projection_seed=p.projection_seed,
        )
        out = HeteroData()
        fields_ = {name: WITHHELD for name in input_fields(data)}
        for t in data.node_types:
            out[t].num_nodes = data[t].num_nodes
            if t in release.x:
                out[t].x = release.x[t]
                fields_[f"{t}.x"] = "privatized: " + release.guarantee.describe()
            for name in SPLIT_FIELDS:
                if name in data[t]:
                    out[t][name] = data[t][name]
                    fields_[f"{t}.{name}"] = PUBLIC
        for et in data.edge_types:
            out[et].edge_index = data[et].edge_index
            fields_[f"{store_key(et)}.edge_index"] = PUBLIC
        return PrivateRelease(
            self.name, self.params.to_dict(), epsilon, out, PrivacyReport([release.guarantee]), fields_, release.details
        )


__all__ = [
    "HeteDP",
    "HeteDPFeatures",
    "LinkRelease",
    "LinkReleaseSettings",
    "link_release",
    "released_link_model",
    "score_links",
]
