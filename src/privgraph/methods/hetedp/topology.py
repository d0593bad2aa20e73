"""HeteDP's topology learning (§IV-B): a VGAE link reconstructor trained with
DP-SGD (eq. 22), and what its ε protects.

The encoder (eq. 18, :class:`~privgraph.nn.hetero.RelationalVGAEEncoder`) is
one RGCN layer — a projection per node type, a weight per relation applied to
the mean of the neighbours' projections — then μ and log σ, VGAE
reparameterisation; the decoder is the inner product (eq. 19).  One example
per training edge with k uniform negative pairs (eq. 20–21) and the training
loop are :mod:`privgraph.train.link_prediction`.
Eq. 22 (:func:`~privgraph.train.dpsgd.clipped_noisy_gradient`) clips each
example's gradient to norm C, adds N(0, σ²C²) to the sum and divides by the
*expected* Poisson batch B (the realised size would leak); σ comes from the
RDP accountant (:mod:`privgraph.accounting.rdp`, dp-accounting; checked
against Opacus in the tests) for rate q = B/N and T steps, where N is the
public ``edge_count`` (:func:`~privgraph.train.dpsgd.plan_sampling`): the
private number of edges is never read, so the report is the same for a
graph and its neighbour.

Clipping bounds one *example's* gradient.  Whether that bounds one *edge*
depends on the message-passing graph, fixed before training (the means are
taken on the inputs, so the layer's aggregation is computed once,
:func:`~privgraph.train.link_prediction.neighbour_means`; the relations used
are :func:`message_relations`):

* **edge mode** — messages pass over the other relations only, never over the
  protected relation (nor its reverse).  Adding or removing one protected edge
  changes exactly one example, whose clipped gradient moves the noisy sum by at
  most C: the trained weights are (ε, δ)-DP for one edge of that relation.
  The other relations are used as they are (not protected).  **node mode**
  passes no messages (a per-node encoder): the same edge-level guarantee,
  using no other relation.
* **message-passing mode** (the paper's) — messages also pass over the
  protected relation's training edges.  Edge (u, v) then enters the means of
  u and v, hence the gradient of every example that touches u or v (as an
  endpoint or inside a drawn negative pair): per-example clipping bounds none of that.
  ε is then a guarantee for one example's *loss term* with the graph held
  fixed — not edge-level DP, and no edge-level ε is claimed.

:func:`topology_guarantee` states the guarantee of a trained model in each mode.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from privgraph.accounting import PrivacyGuarantee, TrustModel
from privgraph.data.hetero import EdgeType
from privgraph.train.dpsgd import DPSGDConfig, DPSGDResult

TOPOLOGY_MODES = ("edge", "node", "message-passing")


def check_topology(mode: str) -> str:
    if mode not in TOPOLOGY_MODES:
        raise ValueError(f"topology must be one of {TOPOLOGY_MODES}, got {mode!r}")
    return mode


def message_relations(
    edge_types: Sequence[EdgeType], protected: EdgeType, reverse: EdgeType, mode: str
) -> list[EdgeType]:
    """The relations whose messages reach the endpoint types of ``protected``: all of them in
    ``"message-passing"`` mode, all but ``protected`` and ``reverse`` in ``"edge"`` mode, none in
    ``"node"`` mode."""
    if check_topology(mode) == "node":
        return []
    relations = [et for et in edge_types if et[2] in (protected[0], protected[2])]
    if mode == "edge":
        relations = [et for et in relations if et not in (protected, reverse)]
    return relations


def paper_step_guarantee(result: DPSGDResult, edge_type: EdgeType) -> PrivacyGuarantee:
    """The guarantee of a model trained with the authors' step
    (:func:`~privgraph.train.dpsgd.paper_gradient_step`): none — ε = ∞, with the (ε_s, δ) the paper
    would claim for the same σ, rate and steps, and why it does not hold, in the notes."""
    return PrivacyGuarantee(
        f"edge of {edge_type}",
        TrustModel.CENTRAL,
        math.inf,
        0.0,
        "HeteDP topology: the authors' gradient step, NOT DP",
        (
            f"NOT differentially private: the HeteDP authors' step (utilsDP.clip_and_accumulate, add_noise), for which "
            f"the paper would claim ({result.epsilon:.4g}, {result.delta:g})-DP (noise multiplier "
            f"{result.noise_multiplier:.4g}, rate {result.sample_rate:.4g}, {result.steps} steps)",
            "why not DP: rows of the batch's gradient are clipped, not each example's gradient, so one edge's "
            "influence is unbounded; and the clipped sum and the noise are each rescaled to norm 1, so the noise does "
            "not grow as ε shrinks",
            "use gradient_step='dpsgd' (the default) for edge-level DP",
        ),
    )


def topology_guarantee(
    result: DPSGDResult,
    config: DPSGDConfig,
    mode: str,
    edge_type: EdgeType,
    reverse: EdgeType,
    relations: Sequence[EdgeType],
) -> PrivacyGuarantee:
    """What DP-SGD's ε covers for a model trained on the examples of ``edge_type`` in ``mode``
    (module docstring), with messages over ``relations`` (:func:`message_relations`): edge-level
    (ε, δ)-DP for that relation in ``"edge"`` and ``"node"`` modes, one example's loss term in
    ``"message-passing"`` mode.  ε, δ, σ, the rate and the steps are ``result``'s; the clip C is
    ``config``'s."""
    check_topology(mode)
    if not math.isfinite(result.epsilon):
        raise ValueError("a noiseless training (epsilon=None) has no DP-SGD guarantee")
    if config.gradient_step == "paper":
        return paper_step_guarantee(result, edge_type)
    accounting = (
        f"RDP accountant: noise multiplier {result.noise_multiplier:.4g}, sampling rate "
        f"{result.sample_rate:.4g}, {result.steps} steps, clip C = {config.clip:g}; the rate and steps are "
        f"planned for N = {config.edge_count} training edges (the public edge_count, not the data's count)"
    )
    others = (
        ", ".join(
            sorted(
                {et[1] if et[1] != "to" else f"{et[0]}-{et[2]}" for et in relations if et not in (edge_type, reverse)}
            )
        )
        or "none"
    )
    if mode in ("edge", "node"):
        return PrivacyGuarantee(
            f"edge of {edge_type}",
            TrustModel.CENTRAL,
            result.epsilon,
            result.delta,
            f"HeteDP topology: DP-SGD ({mode} mode)",
            (
                accounting,
                "edge level: one example per training edge of this relation, and "
                + (
                    f"messages pass over the other relations only ({others}; used as they are, not protected)"
                    if mode == "edge"
                    else "no messages pass (per-node encoder)"
                )
                + ", so one edge changes one example",
                "validation/test edges are never trained on",
            ),
        )
    return PrivacyGuarantee(
        f"loss term of one training example of {edge_type} (graph held fixed)",
        TrustModel.CENTRAL,
        result.epsilon,
        result.delta,
        "HeteDP topology: DP-SGD (message-passing mode, the paper's)",
        (
            accounting,
            "NOT edge-level DP: each training edge (u, v) also passes messages into u's and v's "
            "encoder inputs, changing the gradients of every example that touches u or v; per-example clipping "
            "does not bound that, and no edge-level ε is claimed (use topology='edge')",
            f"relations passing messages: the protected one's training edges and {others} (not protected)",
            "validation/test edges are never trained on",
        ),
    )
