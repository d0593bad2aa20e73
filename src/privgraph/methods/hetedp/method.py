"""HeteDP and the heterogeneous baselines as registered methods, on the user's ``HeteroData``.

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
  (ε_s = ε) and the guarantee names the edge unit only.  :func:`link_release` is the one piece of code
  behind both ``privatize`` and the experiment runner.
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
* ``rgcn``, ``hgt``, ``metapath2vec``: non-private baselines; their "release"
  is the input, stated as unprotected.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, fields
from typing import Any

from torch import Tensor
from torch_geometric.data import HeteroData

from privgraph.accounting import Budget, PrivacyGuarantee, PrivacyReport, Unit, check_share, unprotected
from privgraph.accounting.ledger import Spend, gaussian_event
from privgraph.accounting.rdp import noise_multiplier_for
from privgraph.data.hetero import EdgeType, node_inputs
from privgraph.mechanisms import RandomSource, check_delta
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
from privgraph.methods.hetedp.features import (
    check_calibration,
    check_clip_bound,
    check_feature_mode,
    check_feature_options,
    prepare_rows,
    privatize_features,
)
from privgraph.methods.hetedp.nc import (
    CLASSIFIERS,
    ReplacedInputs,
    check_nc_defaults,
    check_nc_options,
    featdp_inputs,
    fit_embedding_classifier,
)
from privgraph.methods.hetedp.topology import check_topology, message_relations, topology_guarantee
from privgraph.nn.hetero import RelationalVGAEEncoder, relation_key
from privgraph.progress import ProgressHook
from privgraph.release import PUBLIC, WITHHELD, PrivateRelease, input_fields
from privgraph.train.dpsgd import NEEDS_EDGE_COUNT, DPSGDConfig, DPSGDResult, plan_sampling
from privgraph.train.link_prediction import LinkInputs, link_scores, train_link_model_dp


@dataclass
class LinkRelease:
    """What :func:`link_release` produces: the trained model and the inputs it reads."""

    result: DPSGDResult
    inputs: LinkInputs
    relations: list[EdgeType]
    guarantees: list[PrivacyGuarantee]
    details: dict[str, Any]


def link_release(
    data: HeteroData,
    edge_type: EdgeType,
    reverse: EdgeType,
    examples: Tensor,
    message_edges: dict[EdgeType, Tensor],
    epsilon: float | None,
    share: float,
    topology: str,
    clip_bound: float,
    delta: float,
    config: DPSGDConfig,
    rng: RandomSource,
    seed: int,
    progress: ProgressHook | None = None,
    calibration: str = "clipped",
    features: str = "noisy",
    feature_dim: int | None = None,
    projection_seed: int = 0,
    on_epoch: Callable[[int, RelationalVGAEEncoder, LinkInputs], None] | None = None,
    replace_inputs: Callable[[float | None, dict[str, Tensor]], ReplacedInputs] | None = None,
) -> LinkRelease:
    """HeteDP's link release: features (ε_f = share·ε) then DP-SGD on ``examples`` (ε_s), both
    drawing from ``rng``; ``seed`` fixes the random inputs of featureless types.  ``message_edges``
    is the graph whose relations pass messages (the runner gives its training split's).
    ``calibration="paper"``: the features get the paper's noise scale (not DP, stated).
    ``feature_dim``/``projection_seed``: the public projection before clipping
    (:func:`~privgraph.methods.hetedp.features.privatize_features`); without ε the rows are projected
    and clipped the same way, without noise (the ceiling of the projected release).  ``features="none"``: no
    feature is read (every type gets random inputs from ``seed``), ε_s = ε, ``share`` unused.
    ``on_epoch(e, model, inputs)``: called after each DP-SGD epoch (the trainer's ``on_epoch``).
    ``replace_inputs(ε_f, clean)`` (node classification's ``nc_inputs``; ``clean``: every read type's
    unperturbed input): its inputs replace those types' after the release is drawn as without it (so
    DP-SGD's draws stay the same), and its guarantee replaces the features' (ε_f is None without ε)."""
    src, _, dst = edge_type
    check_feature_options(calibration, feature_dim, features)
    if epsilon is not None and config.edge_count is None:  # before any noise is drawn
        raise ValueError(NEEDS_EDGE_COUNT)
    read_features = features == "noisy"
    relations = message_relations(list(message_edges), edge_type, reverse, topology)
    read = list(dict.fromkeys([src, dst, *(et[0] for et in relations)]))
    inputs = {t: x for t, x in node_inputs(data, seed=seed, read_features=read_features).items() if t in read}
    clean = dict(inputs)
    featured = [t for t in read if "x" in data[t]] if read_features else []
    guarantees: list[PrivacyGuarantee] = []
    details: dict[str, Any] = {
        "topology": topology,
        "calibration": check_calibration(calibration),
        "feature_mode": "noisy"
        if read_features
        else "none (not read; random inputs from the public seed for every type)",
    }
    eps_f, eps_s = None, epsilon
    if epsilon is not None and featured:
        features_budget, dpsgd_budget = Budget(epsilon).split(share, "feature_share (ε_f/ε)")
        eps_f, eps_s = features_budget.epsilon, dpsgd_budget.epsilon
        release = privatize_features(
            data,
            eps_f,
            delta,
            clip_bound,
            rng,
            node_types=featured,
            calibration=calibration,
            feature_dim=feature_dim,
            projection_seed=projection_seed,
        )
        inputs.update(release.x)
        guarantees.append(release.guarantee)
        details["features"] = release.details
    elif epsilon is None and featured and feature_dim is not None:  # the same projection and clip, no noise
        inputs.update({t: prepare_rows(data[t].x, t, clip_bound, feature_dim, projection_seed)[0] for t in featured})
        details["features"] = {
            "noise_std": 0.0,
            "clip_bound": clip_bound,
            "projection": {"dim": feature_dim, "seed": projection_seed},
        }
    replaced = None if replace_inputs is None else replace_inputs(eps_f, clean)
    if replaced is not None:
        inputs.update(replaced.x)
        kept = [t for t in featured if t not in replaced.x]
        for g in [g for g in guarantees if g.unit == Unit.NODE_FEATURES]:  # the release's: what the kept types read
            guarantees.remove(g)
            if kept:
                replaced.guarantee = replaced.guarantee.with_note(
                    f"{', '.join(kept)} read the release's features ({g.describe()}); the release as a whole has "
                    "the guarantee of its weakest part for a node's features: none"
                )
        details["inputs"] = replaced.details
    link_inputs = LinkInputs.build(inputs, message_edges, relations)
    res = train_link_model_dp(
        link_inputs,
        examples,
        edge_type,
        eps_s,
        delta,
        config,
        rng,
        progress,
        None if on_epoch is None else lambda e, model: on_epoch(e, model, link_inputs),
    )
    if epsilon is not None:
        g = topology_guarantee(res, config, topology, edge_type, reverse, relations)
        if replaced is not None:
            guarantees.append(replaced.guarantee)
            g = g.with_note(
                "the encoder's inputs (nc_inputs) are computed from the whole graph, the protected "
                "relation's edges included (metapaths), before training, and held fixed like it"
            )
        guarantees.append(
            g
            if read_features
            else g.with_note(
                "features='none': no node feature is read (every type's inputs are random, from a public seed), so "
                "the release holds no function of x and all of ε goes to DP-SGD (ε_s = ε)"
            )
        )
    else:
        none = unprotected(Unit.NODE_FEATURES if read_features else f"edge of {edge_type}", "HeteDP without noise")
        guarantees.append(
            none
            if replaced is None
            else PrivacyGuarantee(
                none.unit,
                none.trust_model,
                none.epsilon,
                none.delta,
                none.mechanism,
                none.notes + replaced.guarantee.notes,
            )
        )
    details["dpsgd"] = {**res.details, "epsilon_s": res.epsilon, "noise_multiplier": res.noise_multiplier}
    return LinkRelease(res, link_inputs, relations, guarantees, details)


def _edge_type(value: Sequence[str] | None, name: str) -> EdgeType | None:
    if value is None:
        return None
    value = tuple(value)
    if len(value) != 3 or not all(isinstance(v, str) for v in value):
        raise ValueError(f"{name} must be a (source type, relation, destination type) triple, got {value!r}")
    return value  # type: ignore[return-value]


@dataclass(frozen=True)
class HeteDPParams(MethodParams):
    """HeteDP's settings (Algorithm 1): the protected relation, the split ε_f/ε_s between features (§IV-A)
    and DP-SGD (§IV-B, eq. 22), the ``topology`` mode that decides what ε_s covers, and the link model."""

    edge_type: tuple[str, str, str] | None = param(
        None, "the protected relation (src, rel, dst) whose edges train the link model (required)"
    )
    reverse: tuple[str, str, str] | None = param(None, "its reverse relation (default: the one dst → src relation)")
    feature_share: float = param(0.5, "ε_f/ε spent on the features (the runner can choose it on validation)")
    features: str = param(
        "noisy",
        "noisy (clipped + Gaussian with ε_f) or none (x is not read: every type gets "
        "public random inputs, ε_s = ε, feature_share unused; the guarantee is the edge's "
        "only)",
    )
    feature_dim: int | None = param(
        None,
        "project each feature row to this many dimensions by a public random "
        "orthonormal matrix before clipping (same σ, fewer noisy coordinates)",
    )
    projection_seed: int = param(0, "public seed of the projection (data independent, stated in the release)")
    topology: str = param(
        "edge",
        "edge (messages over the other relations: edge-level DP), node (no messages) or "
        "message-passing (the paper's: ε covers one example's loss term, not an edge)",
    )
    clip_bound: float = param(1.0, "L2 bound C_f of each node's feature vector")
    calibration: str = param(
        "clipped",
        "feature noise: clipped (DP, the default) or paper (the paper's "
        "λ = 0.01, Δ = 2 on unclipped features: NOT DP, stated as ε = ∞)",
    )
    delta: float = param(1e-5, "δ of the feature release and of DP-SGD")
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
    )
    nc_selection: str = param(
        "validation",
        "link-vgae: the epoch reported — validation (best validation micro-F1; "
        "the default) or best-test (THE PAPER'S OPTIMISTIC SELECTION: the best "
        "test micro-F1 over the epochs; reads the test labels, not an estimate)",
    )
    nc_embedding: str = param(
        "mean", "link-vgae: the embedding classified — mean (μ) or sample (the authors' posterior sample μ + N(0, I)·σ)"
    )
    nc_inputs: str = param(
        "release",
        "link-vgae: the link model's inputs — release (the release's features; the "
        "default) or authors-han / authors-han-target (the authors' featDP.py: a HAN "
        "per type trained on the TRAINING LABELS (degree bins for the other types), "
        "embedding the CLEAN features; every type read / the classified type only; "
        "NOT DP for the features, stated as ε = ∞; message-passing mode only)",
    )

    def dpsgd(self) -> DPSGDConfig:
        return DPSGDConfig(**{f.name: getattr(self, f.name) for f in fields(DPSGDConfig)})

    def validate(self) -> None:
        object.__setattr__(self, "edge_type", _edge_type(self.edge_type, "edge_type"))
        object.__setattr__(self, "reverse", _edge_type(self.reverse, "reverse"))
        check_share(self.feature_share, "feature_share (ε_f/ε)")
        if check_feature_mode(self.features) == "none":
            default = next(f.default for f in fields(self) if f.name == "feature_share")
            if self.feature_share != default:
                raise ValueError(
                    "features='none' spends all of ε on DP-SGD (ε_s = ε): feature_share does not apply, leave it out"
                )
        _check_projection(self.calibration, self.feature_dim, self.projection_seed, self.features)
        check_topology(self.topology)
        check_clip_bound(self.clip_bound)
        check_delta(self.delta)
        check_nc_options(self.nc_model, self.nc_selection, self.nc_embedding, self.nc_inputs)
        if self.nc_inputs != "release" and (self.topology != "message-passing" or self.features != "noisy"):
            raise ValueError(
                "nc_inputs='authors-han…' computes the inputs from the whole graph, the protected "
                "relation included (its metapaths), and from the features: it applies with "
                "topology='message-passing' (the authors' mode, whose ε already holds the graph fixed) "
                "and features='noisy' only"
            )
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
        """:func:`link_release` with these settings."""
        return link_release(
            data,
            edge_type,
            reverse,
            examples,
            message_edges,
            epsilon,
            self.feature_share,
            self.topology,
            self.clip_bound,
            self.delta,
            self.dpsgd(),
            rng,
            seed,
            progress,
            self.calibration,
            self.features,
            self.feature_dim,
            self.projection_seed,
            on_epoch,
            replace_inputs,
        )


def _check_projection(calibration: str, feature_dim: int | None, projection_seed: int, features: str = "noisy") -> None:
    if isinstance(projection_seed, bool) or not isinstance(projection_seed, int):
        raise ValueError(f"projection_seed must be an integer, got {projection_seed!r}")
    check_feature_options(calibration, feature_dim, features)


def _seed(rng: RandomSource) -> int:
    return int(integers(2**31, (1,), rng)[0])


def _check_hetero(method: str, data: Any) -> HeteroData:
    if not isinstance(data, HeteroData):
        raise TypeError(f"{method} takes a torch_geometric.data.HeteroData, got {type(data).__name__}")
    return data


def _store_key(key: str | tuple) -> str:
    return key if isinstance(key, str) else "__".join(key)


@register_method
class HeteDP(HeteroMethod):
    """HeteDP's link reconstructor (module docstring): noisy features + DP-SGD, one release.

    Algorithm 1 of the paper: features clipped and perturbed with ε_f (§IV-A, replacing eq. 14: see
    :mod:`~privgraph.methods.hetedp.features`), then the RGCN-VGAE (eq. 18–21) trained by DP-SGD (eq. 22)
    with ε_s.  Central model (trusted curator).  Units: one node's feature vector (ε_f, δ) and one edge of
    the protected relation (ε_s, δ) in the edge and node modes; in the message-passing mode ε_s covers one
    example's loss term only (:mod:`~privgraph.methods.hetedp.topology`)."""

    name = "hetedp"
    description = "HeteDP: clipped Gaussian features + an RGCN-VGAE link model trained by DP-SGD (heterogeneous)"
    unit = Unit.EDGE  # the report names the relation: "edge of (src, rel, dst)"
    task = Task.LINK_PREDICTION
    Params = HeteDPParams
    delta_param = "delta"

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

    def privatize(
        self,
        data: Any,
        epsilon: float | None,
        rng: RandomSource,
        progress: ProgressHook | None = None,
        *,
        training_seed: int | None = None,
        on_epoch: Callable[[int, RelationalVGAEEncoder, LinkInputs], None] | None = None,
        replace_inputs: Callable[[float | None, dict[str, Tensor]], ReplacedInputs] | None = None,
    ) -> PrivateRelease:
        """Train the link model on every edge of ``edge_type`` (hold out evaluation edges first).

        Returns a :class:`~privgraph.release.PrivateRelease` with the noisy features, the message-passing
        relations and the trained weights (and, in memory, the trained model with its inputs:
        ``trained``); the protected relation's edges are withheld.  ``training_seed`` (drawn from ``rng``
        when not given) seeds the initialisation, the featureless types' random inputs and the
        batches; ``on_epoch`` and ``replace_inputs`` go to :func:`link_release` (the hetero-nc task's
        ``nc_model="link-vgae"``)."""
        data = _check_hetero(self.name, data)
        epsilon = None if epsilon is None else self.check_epsilon_given(epsilon)
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
                fields_[f"{_store_key(et)}.edge_index"] = PUBLIC + " (passes messages into the encoder)"
        for et in (edge_type, reverse):
            fields_[f"{_store_key(et)}.edge_index"] = (
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
    clip_bound: float = param(1.0, "L2 bound C_f of each node's feature vector")
    calibration: str = param(
        "clipped",
        "clipped (DP, the default) or paper (the paper's λ = 0.01, Δ = 2 on "
        "unclipped features: NOT DP, stated as ε = ∞)",
    )
    feature_dim: int | None = param(
        None,
        "project each feature row to this many dimensions by a public random "
        "orthonormal matrix before clipping (same σ, fewer noisy coordinates)",
    )
    projection_seed: int = param(0, "public seed of the projection (data independent, stated in the release)")
    delta: float = param(1e-5, "δ of the Gaussian release")

    def validate(self) -> None:
        if self.node_types is not None:
            object.__setattr__(self, "node_types", tuple(self.node_types))
        _check_projection(self.calibration, self.feature_dim, self.projection_seed)
        check_clip_bound(self.clip_bound)
        check_delta(self.delta)


@register_method
class HeteDPFeatures(HeteroMethod):
    """HeteDP's feature privacy (§IV-A) alone: clip to C_f, analytic Gaussian for sensitivity 2C_f.

    Releases the noisy features of the chosen node types; the graph, labels and split are public.  Privacy
    unit: one node's feature vector, (ε, δ)-DP in the central model (the noise replaces eq. 14's, see
    :mod:`~privgraph.methods.hetedp.features`)."""

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

    def privatize(
        self, data: Any, epsilon: float | None, rng: RandomSource, progress: ProgressHook | None = None
    ) -> PrivateRelease:
        """A :class:`~privgraph.release.PrivateRelease` of the noisy features with the public graph and labels."""
        data = _check_hetero(self.name, data)
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
            fields_[f"{_store_key(et)}.edge_index"] = PUBLIC
        return PrivateRelease(
            self.name, self.params.to_dict(), epsilon, out, PrivacyReport([release.guarantee]), fields_, release.details
        )


class _HeteroBaseline(HeteroMethod):
    """A non-private heterogeneous baseline: nothing is privatized, the release is the input."""

    task = Task.LINK_PREDICTION
    private_fields = ()
    public_fields = ("everything",)
    nc_model = ""  # the hetero-nc task's model: rgcn, hgt (end to end) or metapath2vec (embeddings + classifier)

    def hetero_nc_model(self) -> str:
        """What the hetero-nc task trains (:attr:`nc_model`)."""
        return self.nc_model

    def walks(self) -> Any:
        """The walk settings of link prediction's baseline (metapath2vec's); None here."""
        return None

    def train_link_baseline(
        self, data: HeteroData, task: Any, splits: Any, seed: int, hidden: int, epochs: int
    ) -> tuple[float, float, dict[str, Tensor]]:
        """The lp task's (validation, test) ROC-AUC of this baseline and its embeddings of the relation's
        endpoint types (:func:`~privgraph.methods.hetedp.baselines.train_link_baseline`)."""
        from privgraph.methods.hetedp.baselines import train_link_baseline

        return train_link_baseline(self.name, data, task, splits, seed, hidden, epochs, walks=self.walks())

    def privatize(
        self, data: Any, epsilon: float | None, rng: RandomSource, progress: ProgressHook | None = None
    ) -> PrivateRelease:
        """The input graph as it is, in a :class:`~privgraph.release.PrivateRelease` stating no protection."""
        data = _check_hetero(self.name, data)
        guarantee = unprotected(
            Unit.NODE_FEATURES,
            f"{self.name} (non-private baseline)",
            "nothing is privatized: the release is the input graph, trained on as it is",
        )
        fields_ = {name: "written in clear (non-private baseline)" for name in input_fields(data)}
        return PrivateRelease(
            self.name, self.params.to_dict(), None, data.clone(), PrivacyReport([guarantee]), fields_, {}
        )


@register_method
class RGCN(_HeteroBaseline):
    """RGCN (Schlichtkrull et al.), a non-private baseline of HeteDP's §V-A: the input, unprotected."""

    name = "rgcn"
    description = "RGCN (Schlichtkrull et al.): relational GCN, non-private heterogeneous baseline"
    nc_model = "rgcn"


@register_method
class HGT(_HeteroBaseline):
    """HGT (Hu et al.), a non-private baseline of HeteDP's §V-A: the input, unprotected."""

    name = "hgt"
    description = "HGT (Hu et al.): heterogeneous graph transformer, non-private baseline"
    nc_model = "hgt"


@dataclass(frozen=True)
class MetaPath2VecParams(MethodParams):
    """metapath2vec's walk and skip-gram settings (Dong et al. 2017, §4: d = 128, 1,000 walks of length
    100 per node, neighbourhood 7); the defaults are ours, for CPU time
    (:class:`~privgraph.methods.hetedp.baselines.WalkSettings`).  Node classification only: the
    classifier trained on the embeddings (``classifier``) and on which nodes (``train_share``); the
    embeddings do not depend on either (they depend on the trial seed and the walk settings only)."""

    embedding_dim: int = param(64, "embedding dimension d")
    walk_length: int = param(20, "length of each walk (steps along the repeated metapath)")
    context_size: int = param(5, "skip-gram window (nodes per positive sample, PyG's context_size)")
    walks_per_node: int = param(5, "walks started from each node of the metapath's first type, per epoch")
    classifier: str = param(
        "logistic",
        "node classification's classifier on the embeddings: logistic "
        "(scikit-learn LogisticRegression(max_iter=3000)) or svm (LinearSVC(dual=False, "
        "max_iter=10000, random_state=0): the linear SVM of MAGNN's evaluation of embeddings)",
    )
    train_share: float | None = param(
        None,
        "node classification: train the classifier on this random share s "
        "of the labelled target nodes, 0 < s < 1 (MAGNN's protocol: 20-80 %), "
        "validate on min(0.05, (1 - s)/2) of them, test on the rest; default: the "
        "task's split",
    )

    # class attributes, not parameters (no annotation): the classifiers, and with train_share s the
    # validation share's cap (min(this, (1 - s)/2) of the labelled nodes validate; the test keeps the rest)
    CLASSIFIERS = CLASSIFIERS
    VALIDATION_SHARE = 0.05

    def validate(self) -> None:
        from privgraph.methods.hetedp.baselines import WalkSettings

        WalkSettings(**self._walk_values())  # raises ValueError on a bad value
        if self.classifier not in self.CLASSIFIERS:
            raise ValueError(
                f"metapath2vec's classifier must be one of {self.CLASSIFIERS} (logistic: "
                f"LogisticRegression; svm: LinearSVC), got {self.classifier!r}"
            )
        s = self.train_share
        if s is not None and (isinstance(s, bool) or not isinstance(s, (int, float)) or not 0 < s < 1):
            raise ValueError(
                f"metapath2vec's train_share must be a number in (0, 1) (the share of the labelled "
                f"nodes that trains the classifier) or None (the task's split), got {s!r}"
            )

    def _walk_values(self) -> dict[str, Any]:
        return {f.name: getattr(self, f.name) for f in fields(self) if f.name not in ("classifier", "train_share")}

    def walks(self) -> Any:
        """These settings as :class:`~privgraph.methods.hetedp.baselines.WalkSettings`."""
        from privgraph.methods.hetedp.baselines import WalkSettings

        return WalkSettings(**self._walk_values())

    def validation_share(self) -> float | None:
        """With ``train_share`` s: the share of the labelled nodes that validates,
        ``VALIDATION_SHARE`` (0.05) or (1 − s)/2 where that is smaller (the test keeps the rest,
        1 − s − that); None without ``train_share``."""
        s = self.train_share
        return None if s is None else min(self.VALIDATION_SHARE, (1 - s) / 2)

    def fit_classifier(self, x: Any, y: Any) -> Any:
        """The ``classifier`` fitted on ``(x, y)``
        (:func:`~privgraph.methods.hetedp.nc.fit_embedding_classifier`)."""
        return fit_embedding_classifier(x, y, self.classifier)


@register_method
class MetaPath2Vec(_HeteroBaseline):
    """metapath2vec (Dong et al.), a non-private baseline of HeteDP's §V-A: the input, unprotected."""

    name = "metapath2vec"
    description = "metapath2vec (Dong et al.): random-walk embeddings along a metapath, non-private baseline"
    Params = MetaPath2VecParams
    nc_model = "metapath2vec"

    def check_hetero_task(self, task: str, split: str) -> None:
        """The classifier's parameters belong to node classification; ``train_share`` draws its own split."""
        p = self.params
        if task == "hetero-nc" and p.train_share is not None and split != "random":
            raise ValueError(
                f"metapath2vec's train_share draws its own random split of the labelled nodes: "
                f"leave split at its default (got split={split!r})"
            )
        if task == "lp" and (p.classifier != "logistic" or p.train_share is not None):
            raise ValueError(
                "metapath2vec's classifier and train_share are node-classification parameters (link "
                "prediction scores the embeddings' inner products): leave them at their defaults"
            )

    def walks(self) -> Any:
        """The walk settings (:meth:`MetaPath2VecParams.walks`)."""
        return self.params.walks()


__all__ = [
    "HGT",
    "RGCN",
    "HeteDP",
    "HeteDPFeatures",
    "LinkRelease",
    "MetaPath2Vec",
    "MetaPath2VecParams",
    "link_release",
    "released_link_model",
    "score_links",
]
