"""HeteDP's link release (:func:`link_release`): the features of every node type the link encoder
reads, clipped and perturbed with ε_f = share·ε (:mod:`~privgraph.methods.hetedp.features`), then the
RGCN-VGAE link reconstructor trained by DP-SGD with ε_s on the protected relation's edges
(:mod:`~privgraph.methods.hetedp.topology`).  The one piece of code behind both ``privatize``
(:class:`~privgraph.methods.hetedp.method.HeteDP`) and the experiment runner; its settings are one
:class:`LinkReleaseSettings`."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from torch import Tensor
from torch_geometric.data import HeteroData

from privgraph.accounting import Budget, PrivacyGuarantee, Unit, unprotected
from privgraph.data.hetero import EdgeType, node_inputs
from privgraph.mechanisms import RandomSource
from privgraph.methods.hetedp.features import (
    check_calibration,
    check_feature_options,
    prepare_rows,
    privatize_features,
)
from privgraph.methods.hetedp.nc import ReplacedInputs
from privgraph.methods.hetedp.topology import message_relations, topology_guarantee
from privgraph.nn.hetero import RelationalVGAEEncoder
from privgraph.progress import ProgressHook
from privgraph.train.dpsgd import NEEDS_EDGE_COUNT, DPSGDConfig, DPSGDResult
from privgraph.train.link_prediction import LinkInputs, train_link_model_dp


@dataclass(frozen=True)
class LinkReleaseSettings:
    """The settings of one :func:`link_release` (:meth:`HeteDPParams.link_settings
    <privgraph.methods.hetedp.method.HeteDPParams.link_settings>` builds them from the method's
    parameters): ``share`` ε_f/ε, the ``topology`` mode, the features' ``clip_bound`` and δ (``delta``,
    also DP-SGD's), DP-SGD's ``config``, the noise ``calibration``, ``features`` ("noisy" or "none") and
    the public projection (``feature_dim``, ``projection_seed``)."""

    share: float
    topology: str
    clip_bound: float
    delta: float
    config: DPSGDConfig
    calibration: str = "clipped"
    features: str = "noisy"
    feature_dim: int | None = None
    projection_seed: int = 0


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
    settings: LinkReleaseSettings,
    rng: RandomSource,
    seed: int,
    progress: ProgressHook | None = None,
    on_epoch: Callable[[int, RelationalVGAEEncoder, LinkInputs], None] | None = None,
    replace_inputs: Callable[[float | None, dict[str, Tensor]], ReplacedInputs] | None = None,
) -> LinkRelease:
    """HeteDP's link release with ``settings`` (:class:`LinkReleaseSettings`): features (ε_f = share·ε)
    then DP-SGD on ``examples`` (ε_s), both drawing from ``rng``; ``seed`` fixes the random inputs of
    featureless types.  ``message_edges`` is the graph whose relations pass messages (HeteDP's
    ``privatize`` passes its input's: in the link-prediction pipeline, the training split's).
    ``calibration="paper"``: the features get the paper's noise scale (not DP, stated).
    ``feature_dim``/``projection_seed``: the public projection before clipping
    (:func:`~privgraph.methods.hetedp.features.privatize_features`); without ε the rows are projected
    and clipped the same way, without noise (the ceiling of the projected release).  ``features="none"``: no
    feature is read (every type gets random inputs from ``seed``), ε_s = ε, ``share`` unused.
    ``on_epoch(e, model, inputs)``: called after each DP-SGD epoch (the trainer's ``on_epoch``).
    ``replace_inputs(ε_f, clean)`` (node classification's ``nc_inputs``; ``clean``: every read type's
    unperturbed input): its inputs replace those types' after the release is drawn as without it (so
    DP-SGD's draws stay the same), and its guarantee replaces the features' (ε_f is None without ε)."""
    share, topology, clip_bound, delta, config = (
        settings.share,
        settings.topology,
        settings.clip_bound,
        settings.delta,
        settings.config,
    )
    calibration, features = settings.calibration, settings.features
    feature_dim, projection_seed = settings.feature_dim, settings.projection_seed
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
