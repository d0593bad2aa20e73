"""Link prediction on a heterogeneous graph with the relational VGAE
(:class:`~privgraph.nn.hetero.RelationalVGAEEncoder`, eq. 18; inner-product
decoder, eq. 19) trained by DP-SGD (:mod:`privgraph.train.dpsgd`, eq. 22), and
its ROC-AUC on a split.

Example e = (u, v) has the loss of eq. 20–21 on its own nodes and k negative
pairs (u', v') drawn uniformly from the two endpoint types, independently of
the edges ("k negative pairs for each edge", §V; corrupting only v left the
scale across sources unconstrained, and evaluation pairs are uniform on both
sides).  The encoder's message-passing graph is fixed before training: its
neighbour means are taken on the inputs (:class:`LinkInputs`), so what ε
protects depends on which relations pass messages — HeteDP's modes and their
guarantees are in :mod:`privgraph.methods.hetedp.topology`.

Each step clips every example's gradient exactly without forming it (ghost clipping,
:func:`~privgraph.train.dpsgd.ghost_clipped_noisy_gradient`): the encoder is linear layers, and
since the means are inputs, example i's loss reads its own rows only — in every topology, the
message-passing one included — so the batch's backward pass holds each example's own output
gradients.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import torch
from sklearn.metrics import roc_auc_score
from torch import Tensor, nn
from torch.func import functional_call, grad, vmap
from torch_geometric.data import HeteroData

from privgraph.accounting.rdp import noise_multiplier_for, rdp_epsilon
from privgraph.data.hetero import EdgeType
from privgraph.data.validation import check_graph
from privgraph.mechanisms.randomness import RandomSource, integers, make_generator, rand, randn
from privgraph.nn.cvgae import gaussian_kl
from privgraph.nn.hetero import RelationalVGAEEncoder, relation_key
from privgraph.progress import ProgressHook
from privgraph.train.dpsgd import (
    DPSGDConfig,
    DPSGDResult,
    ghost_clipped_noisy_gradient,
    paper_gradient_step,
    plan_sampling,
)


def neighbour_means(
    x: dict[str, Tensor], edge_index_dict: dict[EdgeType, Tensor], relations: Sequence[EdgeType]
) -> dict[EdgeType, Tensor]:
    """Per relation r = (s, ·, t): row v is the mean of ``x[s]`` over v's r-neighbours (zeros
    where none), a sparse product.  It is one RGCN layer's aggregation taken before the weights
    (mean_u W x_u = W mean_u x_u), so it is computed once, before training."""
    out = {}
    for et in relations:
        s, _, t = et
        ei = edge_index_dict[et]
        n_dst, n_src = x[t].shape[0], x[s].shape[0]
        deg = torch.bincount(ei[1], minlength=n_dst).clamp_min(1).to(x[s].dtype)
        adj = torch.sparse_coo_tensor(ei.flip(0), 1.0 / deg[ei[1]], (n_dst, n_src), check_invariants=True)
        out[et] = torch.sparse.mm(adj, x[s])
    return out


@dataclass
class LinkInputs:
    """What the link encoder reads, fixed before training: node inputs ``x`` per type and the
    neighbour means per relation of the message-passing graph (:func:`neighbour_means`)."""

    x: dict[str, Tensor]
    means: dict[EdgeType, Tensor] = field(default_factory=dict)

    @classmethod
    def build(
        cls,
        x: dict[str, Tensor],
        edge_index_dict: dict[EdgeType, Tensor] | None = None,
        relations: Sequence[EdgeType] = (),
    ) -> LinkInputs:
        return cls(x, neighbour_means(x, edge_index_dict or {}, relations))

    def rows(self, node_type: str, index: Tensor) -> tuple[Tensor, dict[str, Tensor]]:
        """Inputs of nodes ``index`` of ``node_type``: own rows and neighbour means by relation key."""
        return self.x[node_type][index], {relation_key(r): m[index] for r, m in self.means.items() if r[2] == node_type}


def check_examples(inputs: LinkInputs, edges: Tensor, edge_type: EdgeType) -> None:
    """DP-SGD's examples: ids in range for both endpoint types and no edge twice — one-example
    accounting bounds one column's gradient by C, and a duplicated edge is two columns (2C)."""
    sizes = (inputs.x[edge_type[0]].shape[0], inputs.x[edge_type[2]].shape[0])
    check_graph(edges, sizes, undirected=False, what=f"the {relation_key(edge_type)} examples (edges)")


def train_link_model_dp(
    inputs: LinkInputs,
    edges: Tensor,
    edge_type: EdgeType,
    epsilon: float | None,
    delta: float,
    config: DPSGDConfig,
    rng: RandomSource | int,
    progress: ProgressHook | None = None,
    on_epoch: Callable[[int, RelationalVGAEEncoder], None] | None = None,
) -> DPSGDResult:
    """DP-SGD on the examples ``edges`` [2, E] of ``edge_type`` (indices into the source and
    destination types of ``inputs``); ``epsilon=None`` trains the same model with the same
    sampling, unclipped and noiseless.  What ε protects depends on the relations whose means
    ``inputs`` holds (:mod:`privgraph.methods.hetedp.topology`).  ``config.gradient_step="paper"``
    replaces eq. 22 by the authors' step (:func:`~privgraph.train.dpsgd.paper_gradient_step`, not DP);
    σ and the accounting are computed as for DP-SGD, so the result states the ε they would claim.

    ``rng`` drives the Poisson sampling, the negatives, the reparameterisation draws and the
    gradient noise: a ``torch.Generator``, :class:`~privgraph.mechanisms.SecureRandom` (the OS
    source, for a model that leaves the building), or an int seed (a generator seeded with it;
    the weights are then initialised from the same seed).  Otherwise the initialisation seed
    is drawn from ``rng``.

    Poisson rate q, steps T and the expected batch eq. 22 divides by come from public numbers only
    (:func:`~privgraph.train.dpsgd.plan_sampling`: ``config.edge_count``, required with ``epsilon``),
    so σ and everything the report states are the same for a graph and its neighbour.

    ``on_epoch(e, model)``, if given, is called after expected epoch e = 1 … ``config.epochs`` (after
    step round(e·T/epochs)) with the current weights: every iterate is covered by the accountant's ε,
    so what it reads is post-processing; it must not draw from ``rng`` (results stay those without it)."""
    check_examples(inputs, edges, edge_type)
    src_type, _, dst_type = edge_type
    num_edges = int(edges.shape[1])
    if num_edges < 2:
        raise ValueError("need at least two edges of the protected relation to train on")
    plan = plan_sampling(config, epsilon is not None, num_edges)
    sample_rate, steps, expected_batch = plan.sample_rate, plan.steps, plan.expected_batch
    private = epsilon is not None
    sigma = noise_multiplier_for(epsilon, delta, sample_rate, steps) if private else 0.0
    clip = config.clip if private else math.inf
    if isinstance(rng, int):
        g, init_seed = make_generator(rng), rng
    else:
        g, init_seed = rng, int(integers(2**31, (1,), rng)[0])
    torch.manual_seed(init_seed)
    model = RelationalVGAEEncoder(
        {t: v.shape[1] for t, v in inputs.x.items()},
        list(dict.fromkeys((src_type, dst_type))),
        list(inputs.means),
        config.hidden,
        config.latent,
        config.self_connection,
    )
    opt = torch.optim.Adam(model.parameters(), lr=config.lr)
    num_src, num_dst = inputs.x[src_type].shape[0], inputs.x[dst_type].shape[0]

    def loss_of(p: dict[str, Tensor] | None, sources, destinations, draws: Tensor) -> Tensor:
        return example_loss(model, p, src_type, dst_type, sources, destinations, draws, config.kl_weight)

    # the authors' step reads the batch's summed gradient only: one backward pass instead of per-example ones
    batch_grad = grad(lambda p, *rows: vmap(loss_of, in_dims=(None, 0, 0, 0))(p, *rows).sum())
    paper = config.gradient_step == "paper"
    epoch_ends = {max(1, round(e * steps / config.epochs)): e for e in range(1, config.epochs + 1)}
    clipped_share = []
    for step in range(steps):
        chosen = (rand((num_edges,), g) < sample_rate).nonzero().flatten()
        rows = None  # an empty Poisson batch still releases noise
        if chosen.numel():
            u, v = edges[0, chosen], edges[1, chosen]
            neg_u = integers(num_src, (chosen.numel(), config.negatives), g)
            neg_v = integers(num_dst, (chosen.numel(), config.negatives), g)
            draws = randn((chosen.numel(), 2 + 2 * config.negatives, config.latent), g)
            rows = (
                inputs.rows(src_type, torch.cat([u[:, None], neg_u], dim=1)),
                inputs.rows(dst_type, torch.cat([v[:, None], neg_v], dim=1)),
                draws,
            )
        if paper:  # the authors' step (not DP): on the batch's summed gradient
            grads = (
                batch_grad({k: p.detach() for k, p in model.named_parameters()}, *rows)
                if rows is not None
                else {k: torch.zeros_like(p) for k, p in model.named_parameters()}
            )
            noisy = paper_gradient_step(grads, config.clip, sigma * config.clip, g)
        else:  # exact per-example gradients clipped, none of them formed (ghost clipping)
            losses = None if rows is None else (lambda rows=rows: loss_of(None, *rows))
            noisy, norms = ghost_clipped_noisy_gradient(model, losses, clip, sigma * config.clip, expected_batch, g)
            if norms.numel():
                clipped_share.append(float((norms > clip).float().mean()))
        opt.zero_grad()
        for name, p in model.named_parameters():
            p.grad = noisy[name]
        opt.step()
        if on_epoch is not None and step + 1 in epoch_ends:
            with torch.no_grad():
                on_epoch(epoch_ends[step + 1], model)
        if progress is not None and (step % 50 == 0 or step == steps - 1):
            progress("DP-SGD (link reconstruction)", step + 1, steps)
    spent = rdp_epsilon(sigma, sample_rate, steps, delta) if private else math.inf
    details = {
        "config": config.to_dict(),
        "noise_std": sigma * config.clip,
        "expected_batch": expected_batch,
        "clipped_share": sum(clipped_share) / max(len(clipped_share), 1),
        "edges": num_edges,
        "relations": [relation_key(r) for r in inputs.means],
    }
    return DPSGDResult(model, spent, delta, sigma, sample_rate, steps, details)


def example_loss(
    model: RelationalVGAEEncoder,
    params: dict[str, Tensor] | None,
    src_type: str,
    dst_type: str,
    sources: tuple[Tensor, dict[str, Tensor]],
    destinations: tuple[Tensor, dict[str, Tensor]],
    draws: Tensor,
    kl_weight: float = 1.0,
) -> Tensor:
    """Eq. 20–21 for one edge (u, v) with parameters ``params`` (``None``: the model's own):
    −log σ(z_u·z_v) − Σ_k log σ(−z_u'_k·z_v'_k) + w·(KL(q_u‖N(0, I)) + KL(q_v‖N(0, I))).
    ``sources`` / ``destinations`` = inputs (:meth:`LinkInputs.rows`) of u then the u'_k, of v then
    the v'_k; ``draws`` [2(k + 1), latent] are the reparameterisation noises (sources, then
    destinations).  With leading batch dimensions (rows [..., k + 1, ·], draws [..., 2(k + 1),
    latent]) it returns one loss per edge, each reading its own rows only."""
    xs, ms = sources
    xd, md = destinations

    def encode(node_type: str, x: Tensor, means: dict[str, Tensor]) -> tuple[Tensor, Tensor]:
        return model(node_type, x, means) if params is None else functional_call(model, params, (node_type, x, means))

    mu_u, ls_u = encode(src_type, xs, ms)
    mu_v, ls_v = encode(dst_type, xd, md)
    rows = xs.shape[-2]
    z_u = mu_u + draws[..., :rows, :] * ls_u.exp()
    z_v = mu_v + draws[..., rows:, :] * ls_v.exp()
    scores = (z_u * z_v).sum(-1)
    rec = -nn.functional.logsigmoid(scores[..., 0]) - nn.functional.logsigmoid(-scores[..., 1:]).sum(-1)
    kl = gaussian_kl(mu_u[..., 0, :], ls_u[..., 0, :]) + gaussian_kl(mu_v[..., 0, :], ls_v[..., 0, :])
    return rec + kl_weight * kl


@torch.no_grad()
def link_scores(model: RelationalVGAEEncoder, inputs: LinkInputs, edge_type: EdgeType, pairs: Tensor) -> Tensor:
    """Decoder scores μ_u·μ_v (eq. 19's logit at the posterior mean) for ``pairs`` [2, P]."""
    mu_u, _ = model(edge_type[0], *inputs.rows(edge_type[0], pairs[0]))
    mu_v, _ = model(edge_type[2], *inputs.rows(edge_type[2], pairs[1]))
    return (mu_u * mu_v).sum(-1)


def split_auc(split: HeteroData, edge_type: EdgeType, score_pairs: Callable[[Tensor], Tensor]) -> float:
    """ROC-AUC of ``score_pairs`` on a split's labelled pairs of ``edge_type``."""
    store = split[edge_type]
    return float(roc_auc_score(store.edge_label.numpy(), score_pairs(store.edge_label_index).numpy()))
