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
gradients.  Where it costs fewer products (:func:`input_tables`), a node type's input layer is applied
once per step to its whole feature table and the neighbour means are taken in the hidden dimension
(mean_u W x_u = W mean_u x_u), each example's norm read from the table's Gram matrix, computed once
(:func:`table_losses`, :class:`~privgraph.train.dpsgd.RowTable`): the same per-example gradients, clipped
to C, the same noise.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import torch
from torch import Tensor, nn
from torch.func import functional_call, grad, vmap
from torch_geometric.data import HeteroData

from privgraph.accounting.rdp import noise_multiplier_for, rdp_epsilon
from privgraph.data.hetero import EdgeType
from privgraph.data.validation import check_graph
from privgraph.device import current_device, to_device
from privgraph.mechanisms.randomness import RandomSource, integers, make_generator, poisson_subsample, randn
from privgraph.nn.cvgae import gaussian_kl
from privgraph.nn.hetero import RelationalVGAEEncoder, relation_key
from privgraph.progress import ProgressHook, report
from privgraph.train.dpsgd import (
    DPSGDConfig,
    DPSGDResult,
    RowTable,
    TableCall,
    ghost_clipped_noisy_gradient,
    paper_gradient_step,
    plan_sampling,
)


def mean_adjacency(edge_index: Tensor, num_src: int, num_dst: int, dtype: torch.dtype) -> Tensor:
    """The sparse [num_dst, num_src] matrix of mean aggregation over ``edge_index`` (source → destination):
    row v holds 1/deg(v) at v's neighbours (an empty row where none)."""
    deg = torch.bincount(edge_index[1], minlength=num_dst).clamp_min(1).to(dtype)
    return torch.sparse_coo_tensor(
        edge_index.flip(0), 1.0 / deg[edge_index[1]], (num_dst, num_src), check_invariants=True
    )


def neighbour_means(
    x: dict[str, Tensor], edge_index_dict: dict[EdgeType, Tensor], relations: Sequence[EdgeType]
) -> dict[EdgeType, Tensor]:
    """Per relation r = (s, ·, t): row v is the mean of ``x[s]`` over v's r-neighbours (zeros
    where none), a sparse product.  It is one RGCN layer's aggregation taken before the weights
    (mean_u W x_u = W mean_u x_u), so it is computed once, before training."""
    return _aggregate(x, _adjacencies(x, edge_index_dict, relations))


def _aggregate(x: dict[str, Tensor], adjacency: dict[EdgeType, Tensor]) -> dict[EdgeType, Tensor]:
    return {et: torch.sparse.mm(adj, x[et[0]]) for et, adj in adjacency.items()}


def _adjacencies(
    x: dict[str, Tensor], edge_index_dict: dict[EdgeType, Tensor], relations: Sequence[EdgeType]
) -> dict[EdgeType, Tensor]:
    return {
        et: mean_adjacency(edge_index_dict[et], x[et[0]].shape[0], x[et[2]].shape[0], x[et[0]].dtype)
        for et in relations
    }


@dataclass
class LinkInputs:
    """What the link encoder reads, fixed before training: node inputs ``x`` per type and the
    neighbour means per relation of the message-passing graph (:func:`neighbour_means`)."""

    x: dict[str, Tensor]
    means: dict[EdgeType, Tensor] = field(default_factory=dict)
    # the mean aggregation per relation (:func:`mean_adjacency`), means[r] = adjacency[r] @ x[r's source]: with
    # it for every relation, DP-SGD projects each source type's inputs once per step (:func:`table_losses`)
    adjacency: dict[EdgeType, Tensor] = field(default_factory=dict)

    @classmethod
    def build(
        cls,
        x: dict[str, Tensor],
        edge_index_dict: dict[EdgeType, Tensor] | None = None,
        relations: Sequence[EdgeType] = (),
    ) -> LinkInputs:
        adjacency = _adjacencies(x, edge_index_dict or {}, relations)
        return cls(x, _aggregate(x, adjacency), adjacency)

    def to(self, device: torch.device | str) -> LinkInputs:
        """The same inputs on ``device``."""
        return LinkInputs(*(to_device(part, torch.device(device)) for part in (self.x, self.means, self.adjacency)))

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

    ``progress(task, step, T)`` is called after every step, with the expected epoch as ``status`` (never the
    loss: it is computed on the private edges).

    ``on_epoch(e, model)``, if given, is called after expected epoch e = 1 … ``config.epochs`` (after
    step round(e·T/epochs)) with the current weights: every iterate is covered by the accountant's ε,
    so what it reads is post-processing; it must not draw from ``rng`` (results stay those without it).

    It trains on :func:`~privgraph.device.current_device` (the inputs and the model are moved there; every
    draw is made on the CPU from ``rng`` and moved) and returns the model on the CPU."""
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
    device = current_device()  # the sampling and every draw stay on the CPU (rng); the model trains on device
    inputs = inputs.to(device)
    model = RelationalVGAEEncoder(
        {t: v.shape[1] for t, v in inputs.x.items()},
        list(dict.fromkeys((src_type, dst_type))),
        list(inputs.means),
        config.hidden,
        config.latent,
        config.self_connection,
    ).to(device)
    opt = torch.optim.Adam(model.parameters(), lr=config.lr)
    num_src, num_dst = inputs.x[src_type].shape[0], inputs.x[dst_type].shape[0]

    def loss_of(p: dict[str, Tensor] | None, sources, destinations, draws: Tensor) -> Tensor:
        return example_loss(model, p, src_type, dst_type, sources, destinations, draws, config.kl_weight)

    # the authors' step reads the batch's summed gradient only: one backward pass instead of per-example ones
    batch_grad = grad(lambda p, *rows: vmap(loss_of, in_dims=(None, 0, 0, 0))(p, *rows).sum())
    paper = config.gradient_step == "paper"
    rows_per_call = expected_batch * (config.negatives + 1)
    # the types whose input layer each step applies to their whole table (the same gradients, less work)
    encoded = [src_type, dst_type]
    tables = {} if paper else input_tables(inputs, encoded, config.self_connection, config.hidden, rows_per_call)

    def gather(sources: Tensor, destinations: Tensor, draws: Tensor) -> tuple:
        return inputs.rows(src_type, sources), inputs.rows(dst_type, destinations), draws

    def step_losses(sources: Tensor, destinations: Tensor, draws: Tensor) -> tuple[Tensor, list[TableCall]]:
        return table_losses(model, inputs, tables, src_type, dst_type, sources, destinations, draws, config.kl_weight)

    epoch_ends = {max(1, round(e * steps / config.epochs)): e for e in range(1, config.epochs + 1)}
    clipped_share = []
    for step in range(steps):
        chosen = poisson_subsample(num_edges, sample_rate, g)
        batch = None  # an empty Poisson batch still releases noise
        if chosen.numel():
            u, v = edges[0, chosen], edges[1, chosen]
            neg_u = integers(num_src, (chosen.numel(), config.negatives), g)
            neg_v = integers(num_dst, (chosen.numel(), config.negatives), g)
            draws = randn((chosen.numel(), 2 + 2 * config.negatives, config.latent), g)
            batch = tuple(
                t.to(device)
                for t in (torch.cat([u[:, None], neg_u], dim=1), torch.cat([v[:, None], neg_v], dim=1), draws)
            )
        if paper:  # the authors' step (not DP): on the batch's summed gradient
            grads = (
                batch_grad({k: p.detach() for k, p in model.named_parameters()}, *gather(*batch))
                if batch is not None
                else {k: torch.zeros_like(p) for k, p in model.named_parameters()}
            )
            noisy = paper_gradient_step(grads, config.clip, sigma * config.clip, g)
        else:  # exact per-example gradients clipped, none of them formed (ghost clipping)
            losses = None if batch is None else (lambda batch=batch: step_losses(*batch))
            noisy, norms = ghost_clipped_noisy_gradient(model, losses, clip, sigma * config.clip, expected_batch, g)
            if norms.numel():
                clipped_share.append(float((norms > clip).float().mean()))
        opt.zero_grad()
        for name, p in model.named_parameters():
            p.grad = noisy[name]
        opt.step()
        if on_epoch is not None and step + 1 in epoch_ends:
            with torch.no_grad():
                # the caller's inputs are on the CPU: it reads a CPU copy of the weights
                on_epoch(epoch_ends[step + 1], model if device.type == "cpu" else copy.deepcopy(model).cpu())
        if progress is not None:  # counts only: a loss on the private edges is not a number to show
            epoch = min(config.epochs, 1 + step * config.epochs // steps)
            report(progress, "DP-SGD (link reconstruction) steps", step + 1, steps, f"epoch {epoch}/{config.epochs}")
    spent = rdp_epsilon(sigma, sample_rate, steps, delta) if private else math.inf
    details = {
        "config": config.to_dict(),
        "noise_std": sigma * config.clip,
        "expected_batch": expected_batch,
        "clipped_share": sum(clipped_share) / max(len(clipped_share), 1),
        "edges": num_edges,
        "relations": [relation_key(r) for r in inputs.means],
    }
    return DPSGDResult(model.cpu(), spent, delta, sigma, sample_rate, steps, details)


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

    return vgae_loss(*encode(src_type, xs, ms), *encode(dst_type, xd, md), draws, kl_weight)


def vgae_loss(mu_u: Tensor, ls_u: Tensor, mu_v: Tensor, ls_v: Tensor, draws: Tensor, kl_weight: float) -> Tensor:
    """Eq. 20–21 from the encodings (μ, log σ) [..., k + 1, latent] of u then the u'_k and of v then the v'_k
    (:func:`example_loss`)."""
    rows = mu_u.shape[-2]
    z_u = mu_u + draws[..., :rows, :] * ls_u.exp()
    z_v = mu_v + draws[..., rows:, :] * ls_v.exp()
    scores = (z_u * z_v).sum(-1)
    rec = -nn.functional.logsigmoid(scores[..., 0]) - nn.functional.logsigmoid(-scores[..., 1:]).sum(-1)
    kl = gaussian_kl(mu_u[..., 0, :], ls_u[..., 0, :]) + gaussian_kl(mu_v[..., 0, :], ls_v[..., 0, :])
    return rec + kl_weight * kl


# a RowTable's Gram matrix is M² floats: above this size, the type's rows are gathered each step instead
MAX_GRAM_BYTES = 2**29


@dataclass(frozen=True)
class InputTable:
    """A node type's rows for its input layer (:class:`~privgraph.train.dpsgd.RowTable`): its own inputs
    (block key: the type) and the neighbour means of each relation it sends (key: the relation), block
    ``offsets[key]`` + node id."""

    rows: RowTable
    offsets: dict[str | EdgeType, int]


def input_tables(
    inputs: LinkInputs, encoded: Sequence[str], self_connection: bool, hidden: int, batch_rows: float
) -> dict[str, InputTable]:
    """The node types whose input layer DP-SGD applies to the whole table (:func:`table_losses`): those
    for which that costs fewer products than applying it to the ≈ ``batch_rows`` rows per call a step gathers
    (one call per encoded type — ``encoded`` lists the example's two types — with the self connection,
    one per relation sent to one), whose means' aggregation ``inputs.adjacency`` holds and whose Gram
    matrix fits in :data:`MAX_GRAM_BYTES`.  Both ways compute the same gradients."""
    out = {}
    for t, x in inputs.x.items():
        n, d = x.shape
        if not all(r in inputs.adjacency for r in inputs.means if r[0] == t):
            continue  # its means' aggregation is not known: its rows are gathered
        blocks: list[tuple[str | EdgeType, Tensor]] = []
        if self_connection and t in encoded:
            eye, ones = torch.arange(n, device=x.device), torch.ones(n, dtype=x.dtype, device=x.device)
            blocks.append((t, torch.sparse_coo_tensor(torch.stack([eye, eye]), ones, (n, n), check_invariants=True)))
        blocks += [(r, inputs.adjacency[r]) for r in inputs.means if r[0] == t and r[2] in encoded]
        if not blocks:
            continue
        calls = sum(encoded.count(k if isinstance(k, str) else k[2]) for k, _ in blocks)
        offsets: dict[str | EdgeType, int] = {}
        m = 0  # a relation's block has one row per node it sends to: the blocks' row counts differ
        for key, block in blocks:
            offsets[key], m = m, m + block.shape[0]
        nnz = sum(a._nnz() for _, a in blocks)
        table_cost = 2 * (n * d + nnz) * hidden  # products with the table and the aggregations, per step
        rows_cost = 2 * batch_rows * calls * d * hidden  # with the gathered rows (and a Gram matrix per example)
        if table_cost < rows_cost and m * m * x.element_size() <= MAX_GRAM_BYTES:
            select = torch.cat([a.coalesce() for _, a in blocks]) if len(blocks) > 1 else blocks[0][1]
            out[t] = InputTable(RowTable.build(select, x), offsets)
    return out


def table_losses(
    model: RelationalVGAEEncoder,
    inputs: LinkInputs,
    tables: dict[str, InputTable],
    src_type: str,
    dst_type: str,
    sources: Tensor,
    destinations: Tensor,
    draws: Tensor,
    kl_weight: float,
) -> tuple[Tensor, list[TableCall]]:
    """:func:`example_loss` on the node ids ``sources`` / ``destinations`` [B, k + 1] (u then the u'_k, v
    then the v'_k), computed as eq. 18 allows: a type in ``tables`` (:func:`input_tables`) has its input
    layer applied once to its whole table, P = X Wᵀ, and a relation's term W·mean(x) + b is mean(P) + b
    (the mean is linear): aggregated in the hidden dimension instead of the input's.  Those calls are
    returned for ghost clipping (:class:`~privgraph.train.dpsgd.TableCall`: exact per-example gradients);
    the other types' rows are gathered and every other layer is called as a module, as in
    :func:`example_loss`.  Returns the per-example losses and the table calls."""
    projected = {t: tab.rows.outputs(model.inp[t].weight) for t, tab in tables.items()}
    calls: list[TableCall] = []

    def tabled(t: str, key: str | EdgeType, index: Tensor) -> Tensor:
        layer, tab = model.inp[t], tables[t]
        positions = index + tab.offsets[key]
        out = projected[t][positions] + layer.bias
        calls.append(TableCall(f"inp.{t}", out, positions, tab.rows))
        return out

    def encode(node_type: str, index: Tensor) -> tuple[Tensor, Tensor]:
        layer = model.inp[node_type]
        if not model.self_connection:
            own = inputs.x[node_type].new_zeros(*index.shape, layer.out_features)
        elif node_type in tables:
            own = tabled(node_type, node_type, index)
        else:
            own = layer(inputs.x[node_type][index])
        means = {
            relation_key(r): tabled(r[0], r, index) if r[0] in tables else model.inp[r[0]](m[index])
            for r, m in inputs.means.items()
            if r[2] == node_type
        }
        return model.combine(node_type, own, means)

    return vgae_loss(*encode(src_type, sources), *encode(dst_type, destinations), draws, kl_weight), calls


@torch.no_grad()
def link_scores(model: RelationalVGAEEncoder, inputs: LinkInputs, edge_type: EdgeType, pairs: Tensor) -> Tensor:
    """Decoder scores μ_u·μ_v (eq. 19's logit at the posterior mean) for ``pairs`` [2, P]."""
    mu_u, _ = model(edge_type[0], *inputs.rows(edge_type[0], pairs[0]))
    mu_v, _ = model(edge_type[2], *inputs.rows(edge_type[2], pairs[1]))
    return (mu_u * mu_v).sum(-1)


def split_auc(split: HeteroData, edge_type: EdgeType, score_pairs: Callable[[Tensor], Tensor]) -> float:
    """ROC-AUC of ``score_pairs`` on a split's labelled pairs of ``edge_type``."""
    from sklearn.metrics import roc_auc_score  # on use: keeps the run's start light

    store = split[edge_type]
    return float(roc_auc_score(store.edge_label.numpy(), score_pairs(store.edge_label_index).numpy()))
