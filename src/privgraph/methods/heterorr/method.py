"""HeteroRR's methods: feature level (FeatureRR and the numeric baselines), edge level
(EdgeRR, privHRG, EdgeRand, LapGraph), both (HeteroRR).

Parameters (typed, validated: :class:`FeatureRRParams`, :class:`EdgeRRParams`,
:class:`HeteroRRParams`):

* feature level — ``gamma`` (eq. 7, default 0.5), ``bins`` (k, default 2),
  ``public_fraction`` (share of the training nodes declared public for the
  SHAP importance model, default 0.1; ``data.public_node_mask`` wins when set),
  ``sensitive_features`` (indices; none: uniform sensitivity), ``debias``
  (server-side unbiased estimate of the binned values, default True; False
  trains on the raw reports u/k as the paper does), ``accounting``
  (``"composed"``, default: ε_i = θ_i·ε, Σε_i = ε as Theorem 3; ``"released-code"``:
  ε_i = d·θ_i·ε, the per-feature scale of the authors' released code — NOT ε-LDP,
  the guarantee states the true d·ε-order total; for the controlled experiment only),
  ``bin_values`` (the server's value of bin t: ``"upper"`` t/k as eq. 8, default, or
  ``"endpoints"`` (t − 1)/(k − 1); post-processing), ``control`` and
  ``standardize`` (also on ``featureldp``: experimental controls, never a release
  mode — :class:`ControlParams`);
* edge level — ``structure`` (``"public"``, EdgeRR's default: the dendrogram fitted on the public
  edges, no privacy cost, the whole ε_e on the noisy counts; ``"private-mcmc"``, privHRG's default: the
  paper's private MCMC — the settings below on ε₁ and convergence apply to it only),
  ``mcmc_share`` (ε₁/ε_e, default 0.5), ``mcmc_steps``
  (default max(1000·n, 2·10⁵)), ``threshold`` (τ of Alg. 3, default 0.02), ``noise_floor``
  (κ: noisy counts below κ/ε_e2 zeroed, post-processing, default 0),
  ``mcmc_chains`` (extra chains for the curator's R̂, default 1), ``convergence``
  (``"require"``, default: refuse unless the MCMC passes the convergence criterion;
  ``"waive"``: release with ε = ∞ for the private edges);
* ``epsilon_f`` / ``epsilon_e`` fix one budget of ``heterorr``; the swept ε
  fills the other (both, when neither is fixed).
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, replace
from typing import Any

import torch
from torch_geometric.data import Data

from privgraph.accounting import PrivacyGuarantee, TrustModel, Unit
from privgraph.accounting.ledger import Spend
from privgraph.data.annotations import sample_public_nodes, split_edges
from privgraph.data.transforms import standardize_columns
from privgraph.input_rules import declared_domain
from privgraph.mechanisms import RandomSource, check_epsilon
from privgraph.mechanisms.feature_rr import BIN_VALUES, FeatureRR, check_bins
from privgraph.mechanisms.randomness import integers
from privgraph.methods.base import (
    SPLIT_FIELDS,
    Method,
    MethodParams,
    Release,
    param,
    public_features,
    register_method,
)
from privgraph.methods.heterorr.edges import (
    CONVERGENCE_MODES,
    STRUCTURES,
    edge_rand,
    edge_rr,
    lap_graph,
    public_edge_spend,
    public_edges,
)
from privgraph.methods.heterorr.scores import budget_shares, importance_scores, sensitivity_scores
from privgraph.methods.label_ldp import label_spend
from privgraph.methods.lpgnn import LPGNN, FeatureParams
from privgraph.param_checks import split_epsilons
from privgraph.progress import ProgressHook

ACCOUNTING = ("composed", "released-code")
"""FeatureRR's budget accounting: Theorem 3's (default) or the per-feature scale of the authors' code."""


CONTROLS = ("none", "constant-input")
"""The feature releases' experimental controls: none (default), or the mechanism run on a constant input
(:func:`control_input`), which tells how much of a model's accuracy the released features carry."""


def control_input(data: Data) -> torch.Tensor:
    """The ``"constant-input"`` control's mechanism input: x's shape and dtype, every entry the declared
    domain's lower end α (0 on bag-of-words features, the value of 98.7 % of Cora's entries).

    It does not depend on x, so the release carries the mechanism's own noise (density, per-coordinate
    scale, sampled coordinates, and — with the same seed — the same random draws) and no feature signal:
    on binary features it differs from the real release only where x = 1."""
    domain = declared_domain("the constant-input control", data)
    return torch.full_like(data.x, float(domain[0]))


def control_guarantee(g: PrivacyGuarantee) -> PrivacyGuarantee:
    """The control's true guarantee: its release ignores x, so 0-LDP per feature vector (the mechanism's own
    ε bound holds a fortiori; other notes, such as FeatureRR's public nodes, are kept)."""
    return PrivacyGuarantee(
        g.unit,
        g.trust_model,
        0.0,
        0.0,
        f"{g.mechanism} on a constant input (control)",
        g.notes
        + (
            "EXPERIMENTAL CONTROL (control='constant-input'), not a way to release features: the mechanism ran "
            "on the constant matrix α (the domain's lower end), never on x; the release does not depend on x, "
            f"so it is 0-LDP per feature vector, trivially (the mechanism's {g.epsilon:g}-LDP bound holds a "
            "fortiori); it carries the mechanism's noise and no feature signal",
        ),
    )


STANDARDIZE_NOTE = (
    "EXPERIMENTAL CONTROL (standardize=True): the server z-scored each column of the release "
    "(post-processing, the same guarantee)"
)


@dataclass(frozen=True)
class ControlParams(MethodParams):
    """The experimental controls of the feature releases (FeatureRR, the feature baselines), off
    by default: ``control`` (what the mechanism runs on) and ``standardize`` (the release's scale)."""

    control: str = param(
        "none",
        "EXPERIMENTAL CONTROL, not a release mode: 'constant-input' runs the mechanism "
        "on the constant α matrix instead of x (its noise, no feature signal; the "
        "release ignores x: 0-LDP); 'none' (default): on x",
        choices=CONTROLS,
    )
    standardize: bool = param(
        False,
        "EXPERIMENTAL CONTROL: the server z-scores each column of the release "
        "(post-processing, the same guarantee): every mechanism's release then has "
        "unit variance per coordinate, whatever its noise's magnitude",
    )

    def validate(self) -> None:
        MethodParams.validate(self)  # control among CONTROLS (every field's choices; not super(): a mixin's MRO)
        if not isinstance(self.standardize, bool):
            raise ValueError(f"standardize must be true or false, got {self.standardize!r}")

    def mechanism_input(self, data: Data) -> torch.Tensor:
        """What the mechanism runs on: x, or :func:`control_input` under the control."""
        return data.x if self.control == "none" else control_input(data)

    def finish(
        self, x: torch.Tensor, g: PrivacyGuarantee, details: dict[str, Any]
    ) -> tuple[torch.Tensor, PrivacyGuarantee, dict[str, Any]]:
        """The controls' server side: the control's guarantee (:func:`control_guarantee`) and the columns'
        z-score (post-processing), both recorded in the details."""
        if self.control != "none":
            g = control_guarantee(g)
        if self.standardize:
            x, g = standardize_columns(x), g.with_note(STANDARDIZE_NOTE)
        return x, g, {**details, "control": self.control, "standardize": self.standardize}


@dataclass(frozen=True)
class FeatureRRParams(ControlParams):
    """FeatureRR's settings (§III-A, Algorithm 1): γ of eq. 7, the k bins of eq. 8–9, the public nodes
    for the importance model, the sensitive features of eq. 5, and whether the server debiases."""

    gamma: float = param(0.5, "importance weight γ of eq. 7 (θ ∝ γ·α + (1 − γ)·β)", bound="in [0, 1]")
    bins: int = param(2, "number of bins k of the discretised randomizer (eq. 8–9)", bound=">= 2")
    public_fraction: float = param(
        0.1,
        "share of the training nodes declared public (their features train the "
        "SHAP importance model, unprotected); data.public_node_mask wins",
        bound="in (0, 1]",
    )
    sensitive_features: tuple[int, ...] | None = param(
        None, "indices of the sensitive features (eq. 5); none: uniform sensitivity"
    )
    debias: bool = param(True, "train on the unbiased estimate (True) or on the raw reports u/k as the paper")
    clip: bool = param(False, "clip features into the declared domain instead of refusing values outside it")
    bin_values: str = param(
        "upper",
        "server's value of bin t: 'upper' t/k (eq. 8's domain {1/k, …, 1}) or "
        "'endpoints' (t − 1)/(k − 1) (0 and 1 stay 0 and 1); post-processing",
        choices=BIN_VALUES,
    )
    accounting: str = param(
        "composed",
        "'composed': ε_i = θ_i·ε, Σε_i = ε (Theorem 3); 'released-code': "
        "ε_i = d·θ_i·ε as the authors' code — NOT ε-LDP (controlled experiment)",
        choices=ACCOUNTING,
    )

    def validate(self) -> None:
        ControlParams.validate(self)  # the declared choices and bounds (control, accounting, bin_values; gamma…)
        check_bins(self.bins)  # a whole number (a float within the bound, from Python)
        if self.sensitive_features is not None:
            object.__setattr__(self, "sensitive_features", tuple(int(i) for i in self.sensitive_features))


@dataclass(frozen=True)
class EdgeRRParams(MethodParams):
    """EdgeRR's settings (§III-B, Algorithm 2): where the dendrogram comes from (the public edges, or the
    paper's private MCMC with the split ε_e = ε_e1 + ε_e2 between the MCMC (eq. 14) and the noisy
    probabilities (Algorithm 3, CalculateNoisyProb)), the MCMC length and Algorithm 3's τ."""

    structure: str = param(
        "public",
        "public: the dendrogram fitted on the public edges only (no privacy cost, no convergence needed), "
        "the whole ε_e on Algorithm 3's noisy counts; private-mcmc: the paper's private MCMC (ε₁ = "
        "mcmc_share·ε_e), released only if it passes the convergence criterion",
        choices=STRUCTURES,
    )
    mcmc_share: float = param(
        0.5, "private-mcmc: ε₁/ε_e spent on the MCMC (the rest on the noisy counts)", bound="in (0, 1)"
    )
    mcmc_steps: int | None = param(None, "MCMC moves (default max(1000·n, 2·10⁵))", bound=">= 0")
    threshold: float = param(0.02, "τ of Algorithm 3 (aggregate a subtree whose noise would dominate)", bound="> 0")
    noise_floor: float = param(
        0.0,
        "κ: noisy counts below κ/ε_e2 set to 0 (post-processing, no privacy cost); 0: Algorithm 3 as printed",
        bound="in [0, inf)",
    )
    mcmc_chains: int = param(
        1,
        "independent MCMC chains (chain 0 released; the others only for the curator's Gelman–Rubin R̂)",
        bound=">= 1",
    )
    convergence: str = param(
        "require",
        "private-mcmc: require: refuse (nothing released) unless the MCMC passes the convergence criterion; "
        "waive: release anyway with ε = ∞ for the private edges",
        choices=CONVERGENCE_MODES,
    )

    def edge_rr_options(self) -> dict[str, Any]:
        return {
            "mcmc_share": self.mcmc_share,
            "threshold": self.threshold,
            "steps": self.mcmc_steps,
            "noise_floor": self.noise_floor,
            "chains": self.mcmc_chains,
            "convergence": self.convergence,
            "structure": self.structure,
        }


@dataclass(frozen=True)
class HeteroRRParams(FeatureRRParams, EdgeRRParams):
    """HeteroRR's settings: FeatureRR's and EdgeRR's, plus the two budgets ε_f and ε_e (§III overview)."""

    epsilon_f: float | None = param(None, "feature budget ε_f (default: the ε given)")
    epsilon_e: float | None = param(None, "private-edge budget ε_e (default: the ε given)")

    rules = (split_epsilons,)

    def validate(self) -> None:
        FeatureRRParams.validate(self)  # every declared choice, bound and rule (EdgeRR's too) and the bins


def feature_rr_release(
    data: Data, epsilon: float, rng: RandomSource, params: FeatureRRParams
) -> tuple[torch.Tensor, PrivacyGuarantee, dict[str, Any]]:
    """Algorithm 1 on every node: shares θ from public nodes, then the calibrated randomizer."""
    epsilon = check_epsilon(epsilon, "epsilon_f")
    seed = int(integers(2**31, (1,), rng)[0])
    public = getattr(data, "public_node_mask", None)
    if public is None:
        public = sample_public_nodes(data.train_mask, params.public_fraction, seed)
    public = torch.as_tensor(public, dtype=torch.bool)
    alpha = importance_scores(data.x[public], data.y[public], seed)
    features = list(params.sensitive_features) if params.sensitive_features is not None else None
    beta, declared = sensitivity_scores(data.x[public], features)
    theta = budget_shares(alpha, beta, params.gamma)
    domain = declared_domain("featurerr", data)
    scale = float(theta.size) if params.accounting == "released-code" else 1.0
    mech = FeatureRR(
        epsilon,
        torch.from_numpy(theta),
        bins=params.bins,
        domain=domain,
        clip=params.clip,
        debias=params.debias,
        budget_scale=scale,
        values=params.bin_values,
    )
    x = mech.privatize(params.mechanism_input(data), rng)  # θ is the public nodes' under the control too
    g = mech.guarantee().with_note(
        f"importance α from a SHAP-explained logistic regression on {int(public.sum())} public nodes, whose "
        "features are not protected; the guarantee covers every other node"
    )
    if not declared:
        g = g.with_note("no sensitive features declared: uniform sensitivity β_i = 1/d")
    details = {
        "mechanism": "featurerr",
        "bins": mech.k,
        "gamma": params.gamma,
        "public_nodes": int(public.sum()),
        "budget_max": float(mech.budgets.max()),
        "budget_min": float(mech.budgets.min()),
        "sensitivity_declared": declared,
        "debiased": params.debias,
        "accounting": params.accounting,
        "bin_values": params.bin_values,
    }
    return params.finish(x, g, details)


def waived(params: Any, epsilon: float | None) -> float | None:
    """The edge ε a release declares before it runs: none (∞) when the private MCMC's ``convergence='waive'``
    may drop the claim."""
    private_mcmc = getattr(params, "structure", None) == "private-mcmc"
    return None if private_mcmc and getattr(params, "convergence", None) == "waive" else epsilon


@register_method
class FeatureRRMethod(Method):
    """FeatureRR alone (HeteroRR §III-A, Algorithm 1): per-feature budgets θ_i·ε (eq. 7) from SHAP
    importance and sensitivity, then the discretised randomizer of eq. 8–9 on every feature.

    Releases every node's randomized features.  Privacy unit: one node's feature vector, ε_f-LDP in the
    local model (Theorem 3), except the public nodes whose features train the importance model; the graph
    and labels are used as they are."""

    trust_models = (TrustModel.LOCAL,)

    name = "featurerr"
    description = "FeatureRR (HeteroRR): feature-LDP with per-feature budgets from SHAP importance and sensitivity"
    Params = FeatureRRParams
    private = True
    needs_domain = True

    def release(
        self, data: Data, epsilon: float | None, rng: RandomSource, progress: ProgressHook | None = None
    ) -> Release:
        """The randomized features (debiased by default), with the ε_f-LDP guarantee and its notes."""
        x, g, details = feature_rr_release(data, self.check_epsilon_given(epsilon), rng, self.params)
        return Release(x, g, details)


@dataclass(frozen=True)
class FeatureLDPParams(ControlParams, FeatureParams):
    """The feature baselines' settings: LPGNN's mechanism choice plus the experimental
    controls (:class:`ControlParams`)."""

    def validate(self) -> None:
        FeatureParams.validate(self)
        ControlParams.validate(self)


@register_method
class FeatureLDP(LPGNN):
    """Any ``mechanism`` (Duchi, Piecewise, Hybrid, Three-output, PM-SUB, multi-bit, …),
    its unbiased estimate fed to the GNN as it is — LPGNN's release without KProp:
    HeteroRR's feature baselines (§V, Baselines).

    Privacy unit: one node's feature vector, ε-LDP in the local model, as :class:`LPGNN` (0-LDP under
    ``control='constant-input'``, whose release ignores x); the graph and labels are used as they are."""

    name = "featureldp"
    description = "GNN on features released by the mechanism parameter (unbiased estimate, no KProp)"
    Params = FeatureLDPParams
    tunable = ("lr", "weight_decay", "dropout")

    def release(
        self, data: Data, epsilon: float | None, rng: RandomSource, progress: ProgressHook | None = None
    ) -> Release:
        """:class:`LPGNN`'s release of the controls' mechanism input, then their server side (both off by
        default: :class:`ControlParams`)."""
        view = copy.copy(data)  # shallow: the caller's data keeps its features
        view.x = self.params.mechanism_input(data)
        rel = super().release(view, epsilon, rng, progress)
        x, g, details = self.params.finish(rel.x, rel.guarantee, rel.details)
        return replace(rel, x=x, guarantee=g, details=details)

    def kprop_steps(self, hp) -> int:
        return 0


class _EdgeMethod(Method):
    """Shared settings of the private-edge releases (:mod:`~privgraph.methods.heterorr.edges`): ε-DP per
    private edge, central model (trusted curator); public edges and the private-eligible node set are
    released as they are.  Subclasses implement :meth:`edges`."""

    trust_models = (TrustModel.CENTRAL,)

    unit = Unit.PRIVATE_EDGE
    private = True
    simple_graph = True
    all_private = False
    needs_private_edges = True
    private_fields = ("edge_index",)
    public_fields = ("x", *SPLIT_FIELDS, "private_node_mask")
    needs_features = False  # x is public: copied as given, or absent

    def edges(self, data: Data, epsilon: float, rng: RandomSource, progress: ProgressHook | None):
        """``(edge_index, guarantee, details)``: the released graph, public edges included."""
        raise NotImplementedError

    def planned_spend(self, epsilon: float | None, label_epsilon: float | None = None, data: Any = None) -> list[Spend]:
        """ε per private edge, and ε = ∞ per edge: the public edges are written as given (:func:`public_edges`)."""
        return [*super().planned_spend(epsilon, label_epsilon, data=data), *public_edge_spend(self.all_private)]

    def release(
        self, data: Data, epsilon: float | None, rng: RandomSource, progress: ProgressHook | None = None
    ) -> Release:
        """The raw features with the :meth:`edges` graph, its private-edge guarantee and ε = ∞ per edge (the
        public edges as given)."""
        edge_index, g, details = self.edges(data, self.check_epsilon_given(epsilon), rng, progress)
        return Release(public_features(data), g, details, edge_index, extra_guarantees=public_edges(self.all_private))


@register_method
class EdgeRRMethod(_EdgeMethod):
    """EdgeRR alone (HeteroRR §III-B, Algorithm 2): a pHRG dendrogram, noisy private-edge probabilities
    (Algorithm 3), a sampled private subgraph.  By default (``structure="public"``) the dendrogram is fitted
    on the public edges alone (no privacy cost) and the whole ε_e goes to Algorithm 3's counts;
    ``structure="private-mcmc"`` is the paper's edge-level DP MCMC (eq. 12–14, ε_e1) with ε_e2 on the counts.

    Releases the raw features and G̃ = G_pub ∪ G̃_pri.  Privacy unit: one private edge, ε_e-DP in the central
    model (public: L1 sensitivity 1 of the counts on a fixed dendrogram; private-mcmc: §IV, Lemma 4 and
    sequential composition); public edges are released as they are."""

    name = "edgerr"
    audit_kind = "private-edge-learned"  # the released graph is learned: the audit reads its degrees too
    description = "EdgeRR (HeteroRR): pHRG fitted on the public edges, Laplace counts of the private edges"
    Params = EdgeRRParams
    # --tune: the noise floor κ on validation; each candidate is a new release (k×ε, stated), although κ
    # itself is post-processing and could reuse one release's noisy counts
    release_search = {"noise_floor": [0.0, 2.0, 4.0]}

    def planned_spend(self, epsilon: float | None, label_epsilon: float | None = None, data: Any = None) -> list[Spend]:
        """ε per private edge (∞ with the private MCMC's convergence='waive': the claim is dropped if the MCMC
        does not converge); ∞ per edge, the public edges written as given (:func:`public_edges`)."""
        return [
            self._spend(Unit.PRIVATE_EDGE, waived(self.params, epsilon)),
            *public_edge_spend(self.all_private),
            *label_spend(label_epsilon),
        ]

    def edges(self, data, epsilon, rng, progress):
        """EdgeRR's graph: public edges plus the sampled private subgraph (every edge private for privHRG)."""
        return edge_rr(
            data, epsilon, rng, all_private=self.all_private, progress=progress, **self.params.edge_rr_options()
        )


@dataclass(frozen=True)
class PrivHRGParams(EdgeRRParams):
    """privHRG's settings: EdgeRR's, with the private MCMC as the default structure (privHRG's definition:
    with every edge private there is no public edge to fit a dendrogram on)."""

    structure: str = param(
        "private-mcmc",
        "private-mcmc (privHRG's definition): the private MCMC, released only if it passes the convergence "
        "criterion; public: a random dendrogram independent of the graph (no public edge), the whole ε on "
        "Algorithm 3's noisy counts",
        choices=STRUCTURES,
    )


@register_method
class PrivHRG(EdgeRRMethod):
    """privHRG (Xiao et al. KDD'14; HeteroRR §V baseline): EdgeRR with every edge private.

    Releases the raw features and a graph sampled from the private HRG.  Privacy unit: one edge (every
    edge counts as private), ε-DP in the central model.  Its default is the private MCMC (its definition,
    with the convergence refusal); ``structure="public"`` has no public edge to fit on and draws a random,
    graph-independent dendrogram, ε on the counts alone."""

    name = "privhrg"
    description = "privHRG (Xiao et al. KDD'14): private HRG with every edge private"
    Params = PrivHRGParams
    all_private = True
    needs_private_edges = False
    public_fields = ("x", *SPLIT_FIELDS)


@register_method
class EdgeRand(_EdgeMethod):
    """EdgeRand (Wu et al. S&P'22; HeteroRR §V baseline): randomized response on every private-eligible pair.

    Releases the raw features, the public edges and the randomized private pairs.  Privacy unit: one
    private edge, ε-DP in the central model."""

    name = "edgerand"
    description = "EdgeRand (Wu et al. S&P'22): randomized response on the private-eligible pairs"

    def edges(self, data, epsilon, rng, progress):
        """EdgeRand's graph: public edges plus the randomized-response private pairs."""
        return edge_rand(data, epsilon, rng)


@register_method
class LapGraph(_EdgeMethod):
    """LapGraph (Wu et al. S&P'22; HeteroRR §V baseline): Laplace on every private-eligible pair's bit and
    on the number of private edges T, the top-T̃ pairs kept.

    Releases the raw features, the public edges and the top-T̃ pairs.  Privacy unit: one private edge, ε-DP
    in the central model (ε₁ = 0.01ε on the count, ε₂ = 0.99ε on the pairs)."""

    name = "lapgraph"
    description = "LapGraph (Wu et al. S&P'22): Laplace on every private-eligible pair, top-T̃ kept"

    def edges(self, data, epsilon, rng, progress):
        """LapGraph's graph: public edges plus the top-T̃ noisy private pairs."""
        return lap_graph(data, epsilon, rng)


@register_method
class PublicEdgesOnly(_EdgeMethod):
    """The GNN on the public edges only: the private edges are dropped, never released (ε_e = 0
    per private edge).  Not from a paper: the floor of the private-edge methods — what the
    features and the public edges alone give, to utility and to a link attack on the private
    edges (``privgraph attack``)."""

    name = "gcn-public"
    reads_nothing_private = True
    description = "GNN on the public edges only: the private edges dropped (ε_e = 0), the floor of EdgeRR & co."
    private = False

    def release(
        self, data: Data, epsilon: float | None, rng: RandomSource, progress: ProgressHook | None = None
    ) -> Release:
        """The raw features and the public edges, with the ε_e = 0 private-edge guarantee."""
        public, private = split_edges(data)
        g = PrivacyGuarantee(
            Unit.PRIVATE_EDGE,
            TrustModel.CENTRAL,
            0.0,
            0.0,
            "private edges dropped",
            ("the private edges are not used; the public edges and the features are used as given",),
        )
        return Release(
            public_features(data),
            g,
            {
                "mechanism": self.name,
                "public_edges": int(public.shape[1]),
                "dropped_private_edges": int(private.shape[1]),
            },
            public,
            extra_guarantees=public_edges(False),
        )


@register_method
class HeteroRR(Method):
    """HeteroRR (§III): FeatureRR features (Algorithm 1) and an EdgeRR graph (Algorithm 2), one release.

    Two guarantees (§IV): ε_f-LDP per node feature vector in the local model (Theorem 3; public nodes
    excepted) and ε_e-DP per private edge in the central model (EdgeRR's: by default its dendrogram fitted on
    the public edges and ε_e on the counts; ``structure="private-mcmc"``: Lemma 4, sequential composition).
    Labels, the split and the private-eligible node set are public."""

    trust_models = (TrustModel.LOCAL, TrustModel.CENTRAL)  # FeatureRR local, EdgeRR central

    name = "heterorr"
    description = "HeteroRR: FeatureRR features + EdgeRR graph (feature-LDP and private-edge DP)"
    Params = HeteroRRParams
    private = True
    needs_domain = True
    simple_graph = True
    needs_private_edges = True
    private_fields = ("x", "edge_index")
    public_fields = (*SPLIT_FIELDS, "private_node_mask")

    def planned_spend(self, epsilon: float | None, label_epsilon: float | None = None, data: Any = None) -> list[Spend]:
        """ε_f per node feature vector and ε_e per private edge (each ``epsilon`` unless given apart); ∞ per edge
        (the public edges as given)."""
        p = self.params
        return [
            self._spend(Unit.NODE_FEATURES, p.epsilon_f or epsilon),
            self._spend(Unit.PRIVATE_EDGE, waived(p, p.epsilon_e or epsilon)),
            *public_edge_spend(False),
            *label_spend(label_epsilon),
        ]

    def release(
        self, data: Data, epsilon: float | None, rng: RandomSource, progress: ProgressHook | None = None
    ) -> Release:
        """FeatureRR's features with EdgeRR's graph; the edge guarantee is in ``extra_guarantees``."""
        p = self.params
        eps_f = self.check_epsilon_given(p.epsilon_f or epsilon, "heterorr (epsilon_f)")
        eps_e = self.check_epsilon_given(p.epsilon_e or epsilon, "heterorr (epsilon_e)")
        x, g_f, d_f = feature_rr_release(data, eps_f, rng, p)
        edge_index, g_e, d_e = edge_rr(data, eps_e, rng, progress=progress, **p.edge_rr_options())
        details = {"mechanism": "heterorr", "epsilon_f": eps_f, "epsilon_e": eps_e, "features": d_f, "edges": d_e}
        return Release(x, g_f, details, edge_index, extra_guarantees=[g_e, *public_edges(False)])
