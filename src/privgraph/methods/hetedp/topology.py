"""HeteDP's topology learning (§IV-B): a VGAE link reconstructor trained with
DP-SGD (eq. 22), and what its ε protects.

The encoder (eq. 18) is one RGCN layer — a projection per node type, a weight
per relation applied to the mean of the neighbours' projections — then μ and
log σ, VGAE reparameterisation; the decoder is the inner product (eq. 19).
Example e = (u, v) has the loss of eq. 20–21 on its own nodes and k negative
pairs (u', v') drawn uniformly from the two endpoint types, independently of
the edges ("k negative pairs for each edge", §V; corrupting only v left the
scale across sources unconstrained, and evaluation pairs are uniform on both
sides).
Eq. 22 clips each example's gradient to norm C, adds N(0, σ²C²) to the sum and
divides by the *expected* Poisson batch B (the realised size would leak);
σ comes from the RDP accountant (dp-accounting; checked against Opacus in the
tests) for rate q = B/|E| and T steps.

Clipping bounds one *example's* gradient.  Whether that bounds one *edge*
depends on the message-passing graph, fixed before training (the means are
taken on the inputs, so the layer's aggregation is computed once,
:func:`neighbour_means`):

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
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from typing import Any, Callable, Sequence

import torch
from torch import Tensor, nn
from torch.func import functional_call, grad, vmap

from privgraph.data.hetero import EdgeType
from privgraph.data.validation import check_graph
from privgraph.mechanisms.base import check_delta
from privgraph.mechanisms.randomness import RandomSource, integers, make_generator, rand, randn
from privgraph.nn.cvgae import gaussian_kl

ProgressHook = Callable[[str, int, int], None]


@dataclass(frozen=True)
class DPSGDConfig:
    batch_size: int = 512  # expected (Poisson) batch size B (the paper: 2048, on its larger graphs)
    epochs: int = 20  # expected passes over the edges: T = epochs·|E|/B steps
    lr: float = 0.01
    clip: float = 1.0  # C
    negatives: int = 5  # k
    hidden: int = 32
    latent: int = 32
    kl_weight: float = 0.01  # eq. 21's KL, down-weighted: at weight 1 the posterior collapses (AUC 0.5 in our runs)

    def __post_init__(self) -> None:
        for name in ("batch_size", "epochs", "negatives", "hidden", "latent"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be >= 1")
        if not (self.clip > 0 and self.lr > 0):
            raise ValueError("clip C and lr must be > 0")
        if not self.kl_weight >= 0:
            raise ValueError(f"kl_weight must be >= 0, got {self.kl_weight}")

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


# RDP orders: Opacus' defaults stop at 63, where log(1/δ)/(α − 1) alone exceeds small targets
# (0.19 at δ = 1e-5), and its sums give NaN above α ≈ 700, so ε = 0.01 could not be certified.
# dp-accounting evaluates large orders stably; 1.25…1.75 (for large ε), integers 2…32, then ×1.3
# up to ~2.3·10⁴ (any set of orders gives a valid bound).
RDP_ORDERS: tuple[float, ...] = tuple(
    [1.25, 1.5, 1.75] + [float(a) for a in range(2, 33)] + [float(round(33 * 1.3**k)) for k in range(26)])


def _sampled_gaussian(noise_multiplier: float, sample_rate: float, steps: int):
    import dp_accounting

    return dp_accounting.SelfComposedDpEvent(
        dp_accounting.PoissonSampledDpEvent(sample_rate, dp_accounting.GaussianDpEvent(noise_multiplier)), steps)


def _accountant():
    import dp_accounting

    return dp_accounting.rdp.RdpAccountant(orders=list(RDP_ORDERS))


def rdp_epsilon(noise_multiplier: float, sample_rate: float, steps: int, delta: float) -> float:
    """ε of ``steps`` Poisson-subsampled Gaussian steps (RDP accountant, dp-accounting)."""
    check_delta(delta)
    accountant = _accountant()
    accountant.compose(_sampled_gaussian(noise_multiplier, sample_rate, steps))
    return float(accountant.get_epsilon(delta))


def noise_multiplier_for(epsilon: float, delta: float, sample_rate: float, steps: int) -> float:
    """The smallest σ (bisection to 0.5 % of ε) whose accountant ε is ≤ ``epsilon``."""
    import dp_accounting

    if not (epsilon > 0 and math.isfinite(epsilon)):
        raise ValueError(f"epsilon_s must be a finite number > 0, got {epsilon}")
    check_delta(delta)
    sigma = float(dp_accounting.calibrate_dp_mechanism(
        _accountant, lambda s: _sampled_gaussian(s, sample_rate, steps), epsilon, delta, tol=epsilon / 200))
    if rdp_epsilon(sigma, sample_rate, steps, delta) > epsilon:  # never round down
        raise RuntimeError(f"noise calibration failed: σ = {sigma} does not reach ε = {epsilon}")
    return sigma


def clipped_noisy_gradient(per_example: dict[str, Tensor], clip: float, noise_std: float, expected_batch: float,
                           rng: RandomSource | None) -> tuple[dict[str, Tensor], Tensor]:
    """Eq. 22: per-example gradients (leading batch dimension) clipped jointly to norm ``clip``,
    summed, plus N(0, noise_std²) per coordinate drawn from ``rng``, divided by the expected
    batch size (``rng=None`` only without noise).  Returns the gradient and the per-example
    norms before clipping."""
    if rng is None and noise_std > 0:
        raise ValueError("DP-SGD noise needs an explicit random source (a torch.Generator or SecureRandom)")
    names = list(per_example)
    flat = torch.cat([per_example[n].flatten(1) for n in names], dim=1)
    norms = torch.linalg.vector_norm(flat, dim=1)
    scale = torch.clamp(clip / norms.clamp_min(1e-12), max=1.0)
    out = {}
    for n in names:
        g = per_example[n]
        summed = (g * scale.view(-1, *([1] * (g.dim() - 1)))).sum(0)
        if rng is not None:  # drawn even when noise_std = 0, so the noiseless run samples as the private one
            summed = summed + randn(tuple(summed.shape), rng, summed.dtype) * noise_std
        out[n] = summed / expected_batch
    return out, norms


def relation_key(edge_type: EdgeType) -> str:
    """A module-dict key for a relation (``src__rel__dst``)."""
    return "__".join(edge_type)


TOPOLOGY_MODES = ("edge", "node", "message-passing")


def check_topology(mode: str) -> str:
    if mode not in TOPOLOGY_MODES:
        raise ValueError(f"topology must be one of {TOPOLOGY_MODES}, got {mode!r}")
    return mode


def message_relations(edge_types: Sequence[EdgeType], protected: EdgeType, reverse: EdgeType,
                      mode: str) -> list[EdgeType]:
    """The relations whose messages reach the endpoint types of ``protected``: all of them in
    ``"message-passing"`` mode, all but ``protected`` and ``reverse`` in ``"edge"`` mode, none in
    ``"node"`` mode."""
    if check_topology(mode) == "node":
        return []
    relations = [et for et in edge_types if et[2] in (protected[0], protected[2])]
    if mode == "edge":
        relations = [et for et in relations if et not in (protected, reverse)]
    return relations


def neighbour_means(x: dict[str, Tensor], edge_index_dict: dict[EdgeType, Tensor],
                    relations: Sequence[EdgeType]) -> dict[EdgeType, Tensor]:
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
    def build(cls, x: dict[str, Tensor], edge_index_dict: dict[EdgeType, Tensor] | None = None,
              relations: Sequence[EdgeType] = ()) -> "LinkInputs":
        return cls(x, neighbour_means(x, edge_index_dict or {}, relations))

    def rows(self, node_type: str, index: Tensor) -> tuple[Tensor, dict[str, Tensor]]:
        """Inputs of nodes ``index`` of ``node_type``: own rows and neighbour means by relation key."""
        return self.x[node_type][index], {relation_key(r): m[index] for r, m in self.means.items()
                                          if r[2] == node_type}


class RelationalVGAEEncoder(nn.Module):
    """Eq. 18's encoder: one RGCN layer (Schlichtkrull et al.: a projection per node type, a weight
    per relation on the mean of the neighbours' projections, summed with the node's own, ReLU),
    then μ and log σ per encoded type.  With no relations it is a per-node MLP."""

    def __init__(self, in_dims: dict[str, int], encoded_types: Sequence[str], relations: Sequence[EdgeType],
                 hidden: int, latent: int):
        super().__init__()
        self.inp = nn.ModuleDict({t: nn.Linear(d, hidden) for t, d in in_dims.items()})
        self.rel = nn.ModuleDict({relation_key(r): nn.Linear(hidden, hidden, bias=False) for r in relations})
        self.mu = nn.ModuleDict({t: nn.Linear(hidden, latent) for t in encoded_types})
        self.logstd = nn.ModuleDict({t: nn.Linear(hidden, latent) for t in encoded_types})

    def forward(self, node_type: str, x: Tensor, means: dict[str, Tensor] | None = None) -> tuple[Tensor, Tensor]:
        h = self.inp[node_type](x)
        for key, m in (means or {}).items():
            h = h + self.rel[key](self.inp[key.split("__")[0]](m))
        h = torch.relu(h)
        return self.mu[node_type](h), self.logstd[node_type](h).clamp(-10, 10)


@dataclass
class DPSGDResult:
    model: RelationalVGAEEncoder
    epsilon: float
    delta: float
    noise_multiplier: float
    sample_rate: float
    steps: int
    details: dict[str, Any]


def check_examples(inputs: LinkInputs, edges: Tensor, edge_type: EdgeType) -> None:
    """DP-SGD's examples: ids in range for both endpoint types and no edge twice — one-example
    accounting bounds one column's gradient by C, and a duplicated edge is two columns (2C)."""
    sizes = (inputs.x[edge_type[0]].shape[0], inputs.x[edge_type[2]].shape[0])
    check_graph(edges, sizes, undirected=False, what=f"the {relation_key(edge_type)} examples (edges)")


def train_link_model_dp(inputs: LinkInputs, edges: Tensor, edge_type: EdgeType, epsilon: float | None,
                        delta: float, config: DPSGDConfig, rng: RandomSource | int,
                        progress: ProgressHook | None = None) -> DPSGDResult:
    """DP-SGD on the examples ``edges`` [2, E] of ``edge_type`` (indices into the source and
    destination types of ``inputs``); ``epsilon=None`` trains the same model with the same
    sampling, unclipped and noiseless.  What ε protects depends on ``inputs`` (module docstring).

    ``rng`` drives the Poisson sampling, the negatives, the reparameterisation draws and the
    gradient noise: a ``torch.Generator``, :class:`~privgraph.mechanisms.SecureRandom` (the OS
    source, for a model that leaves the building), or an int seed (a generator seeded with it;
    the weights are then initialised from the same seed).  Otherwise the initialisation seed
    is drawn from ``rng``."""
    check_examples(inputs, edges, edge_type)
    src_type, _, dst_type = edge_type
    num_edges = int(edges.shape[1])
    if num_edges < 2:
        raise ValueError("need at least two edges of the protected relation to train on")
    expected_batch = min(config.batch_size, num_edges)
    sample_rate = expected_batch / num_edges
    steps = max(1, round(config.epochs / sample_rate))
    private = epsilon is not None
    sigma = noise_multiplier_for(epsilon, delta, sample_rate, steps) if private else 0.0
    clip = config.clip if private else math.inf
    if isinstance(rng, int):
        g, init_seed = make_generator(rng), rng
    else:
        g, init_seed = rng, int(integers(2**31, (1,), rng)[0])
    torch.manual_seed(init_seed)
    model = RelationalVGAEEncoder({t: v.shape[1] for t, v in inputs.x.items()}, list(dict.fromkeys(
        (src_type, dst_type))), list(inputs.means), config.hidden, config.latent)
    opt = torch.optim.Adam(model.parameters(), lr=config.lr)
    num_src, num_dst = inputs.x[src_type].shape[0], inputs.x[dst_type].shape[0]

    def loss_of(p: dict[str, Tensor], source, destinations, draws: Tensor) -> Tensor:
        return example_loss(model, p, src_type, dst_type, source, destinations, draws, config.kl_weight)

    per_example_grad = vmap(grad(loss_of), in_dims=(None, 0, 0, 0))
    clipped_share = []
    for step in range(steps):
        chosen = (rand((num_edges,), g) < sample_rate).nonzero().flatten()
        if chosen.numel():
            u, v = edges[0, chosen], edges[1, chosen]
            neg_u = integers(num_src, (chosen.numel(), config.negatives), g)
            neg_v = integers(num_dst, (chosen.numel(), config.negatives), g)
            draws = randn((chosen.numel(), 2 + 2 * config.negatives, config.latent), g)
            params = {k: p.detach() for k, p in model.named_parameters()}
            grads = per_example_grad(params, inputs.rows(src_type, torch.cat([u[:, None], neg_u], dim=1)),
                                     inputs.rows(dst_type, torch.cat([v[:, None], neg_v], dim=1)), draws)
        else:  # an empty Poisson batch still releases noise
            grads = {k: torch.zeros((0, *p.shape)) for k, p in model.named_parameters()}
        noisy, norms = clipped_noisy_gradient(grads, clip, sigma * config.clip, expected_batch, g)
        if norms.numel():
            clipped_share.append(float((norms > clip).float().mean()))
        opt.zero_grad()
        for name, p in model.named_parameters():
            p.grad = noisy[name]
        opt.step()
        if progress is not None and (step % 50 == 0 or step == steps - 1):
            progress("DP-SGD (link reconstruction)", step + 1, steps)
    spent = rdp_epsilon(sigma, sample_rate, steps, delta) if private else math.inf
    details = {"config": config.to_dict(), "noise_std": sigma * config.clip, "expected_batch": expected_batch,
               "clipped_share": sum(clipped_share) / max(len(clipped_share), 1), "edges": num_edges,
               "relations": [relation_key(r) for r in inputs.means]}
    return DPSGDResult(model, spent, delta, sigma, sample_rate, steps, details)


def example_loss(model: RelationalVGAEEncoder, params: dict[str, Tensor], src_type: str, dst_type: str,
                 sources: tuple[Tensor, dict[str, Tensor]], destinations: tuple[Tensor, dict[str, Tensor]],
                 draws: Tensor, kl_weight: float = 1.0) -> Tensor:
    """Eq. 20–21 for one edge (u, v) with parameters ``params``:
    −log σ(z_u·z_v) − Σ_k log σ(−z_u'_k·z_v'_k) + w·(KL(q_u‖N(0, I)) + KL(q_v‖N(0, I))).
    ``sources`` / ``destinations`` = inputs (:meth:`LinkInputs.rows`) of u then the u'_k, of v then
    the v'_k; ``draws`` [2(k + 1), latent] are the reparameterisation noises (sources, then
    destinations)."""
    xs, ms = sources
    xd, md = destinations
    mu_u, ls_u = functional_call(model, params, (src_type, xs, ms))
    mu_v, ls_v = functional_call(model, params, (dst_type, xd, md))
    rows = xs.shape[0]
    z_u = mu_u + draws[:rows] * ls_u.exp()
    z_v = mu_v + draws[rows:] * ls_v.exp()
    scores = (z_u * z_v).sum(-1)
    rec = -nn.functional.logsigmoid(scores[0]) - nn.functional.logsigmoid(-scores[1:]).sum()
    kl = gaussian_kl(mu_u[0], ls_u[0]) + gaussian_kl(mu_v[0], ls_v[0])
    return rec + kl_weight * kl


@torch.no_grad()
def link_scores(model: RelationalVGAEEncoder, inputs: LinkInputs, edge_type: EdgeType, pairs: Tensor) -> Tensor:
    """Decoder scores μ_u·μ_v (eq. 19's logit at the posterior mean) for ``pairs`` [2, P]."""
    mu_u, _ = model(edge_type[0], *inputs.rows(edge_type[0], pairs[0]))
    mu_v, _ = model(edge_type[2], *inputs.rows(edge_type[2], pairs[1]))
    return (mu_u * mu_v).sum(-1)
