"""HeteDP's topology learning (§IV-B): a VGAE link reconstructor trained with
DP-SGD (eq. 22), edge-level mode.

Eq. 22 clips per-example gradients to norm C and adds N(0, σ²C²) to their
sum.  That bounds one *example's* contribution — but in a message-passing
encoder one edge also changes its neighbours' embeddings, hence every other
example's gradient, so per-edge clipping there gives no edge-level
guarantee.  This module implements the mode that does: each node's encoder
input is fixed before training (the released noisy features of
:mod:`privgraph.methods.hetedp.features`, computed without the protected
relation), the encoder is per node (an MLP per node type producing μ and
log σ, VGAE reparameterisation, eq. 18), the decoder is the inner product
(eq. 19), and example e = (u, v) has the loss of eq. 20–21 on its own nodes
and k negatives v' drawn uniformly from the destination type (independently of
the edge set).  Then adding or removing one edge of the protected relation
changes one example, whose clipped gradient moves the noisy sum by at most C:
with Poisson sampling at rate q = B/|E| and T steps the release of the trained
weights is (ε, δ)-DP for one edge of that relation, ε from the RDP accountant
(dp-accounting; checked against Opacus in the tests).  The sum is divided by
the *expected* batch size B (dividing by the realised size would leak it).
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any, Callable

import torch
from torch import Tensor, nn
from torch.func import functional_call, grad, vmap

from privgraph.mechanisms.base import check_delta

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
                           generator: torch.Generator | None) -> tuple[dict[str, Tensor], Tensor]:
    """Eq. 22: per-example gradients (leading batch dimension) clipped jointly to norm ``clip``,
    summed, plus N(0, noise_std²) per coordinate, divided by the expected batch size.
    Returns the gradient and the per-example norms before clipping."""
    names = list(per_example)
    flat = torch.cat([per_example[n].flatten(1) for n in names], dim=1)
    norms = torch.linalg.vector_norm(flat, dim=1)
    scale = torch.clamp(clip / norms.clamp_min(1e-12), max=1.0)
    out = {}
    for n in names:
        g = per_example[n]
        summed = (g * scale.view(-1, *([1] * (g.dim() - 1)))).sum(0)
        noise = torch.randn(summed.shape, generator=generator, dtype=summed.dtype) * noise_std
        out[n] = (summed + noise) / expected_batch
    return out, norms


class NodeVGAEEncoder(nn.Module):
    """Per node type: MLP → (μ, log σ) (eq. 18 without message passing)."""

    def __init__(self, in_dims: dict[str, int], hidden: int, latent: int):
        super().__init__()
        self.body = nn.ModuleDict({t: nn.Sequential(nn.Linear(d, hidden), nn.ReLU()) for t, d in in_dims.items()})
        self.mu = nn.ModuleDict({t: nn.Linear(hidden, latent) for t in in_dims})
        self.logstd = nn.ModuleDict({t: nn.Linear(hidden, latent) for t in in_dims})

    def forward(self, node_type: str, x: Tensor) -> tuple[Tensor, Tensor]:
        h = self.body[node_type](x)
        return self.mu[node_type](h), self.logstd[node_type](h).clamp(-10, 10)


@dataclass
class DPSGDResult:
    model: NodeVGAEEncoder
    epsilon: float
    delta: float
    noise_multiplier: float
    sample_rate: float
    steps: int
    details: dict[str, Any]


def train_link_model_dp(x_src: Tensor, x_dst: Tensor, edges: Tensor, src_type: str, dst_type: str,
                        epsilon: float | None, delta: float, config: DPSGDConfig, seed: int,
                        progress: ProgressHook | None = None) -> DPSGDResult:
    """DP-SGD on the edges ``edges`` [2, E] (src indices into ``x_src``, dst into ``x_dst``);
    ``epsilon=None`` trains the same model with the same sampling, unclipped and noiseless."""
    num_edges = int(edges.shape[1])
    if num_edges < 2:
        raise ValueError("need at least two edges of the protected relation to train on")
    expected_batch = min(config.batch_size, num_edges)
    sample_rate = expected_batch / num_edges
    steps = max(1, round(config.epochs / sample_rate))
    private = epsilon is not None
    sigma = noise_multiplier_for(epsilon, delta, sample_rate, steps) if private else 0.0
    clip = config.clip if private else math.inf
    g = torch.Generator().manual_seed(seed)
    torch.manual_seed(seed)
    model = NodeVGAEEncoder({src_type: x_src.shape[1], dst_type: x_dst.shape[1]}, config.hidden, config.latent)
    opt = torch.optim.Adam(model.parameters(), lr=config.lr)

    def loss_of(p: dict[str, Tensor], xs: Tensor, xd: Tensor, xn: Tensor, draws: Tensor) -> Tensor:
        return example_loss(model, p, src_type, dst_type, xs, xd, xn, draws, config.kl_weight)

    per_example_grad = vmap(grad(loss_of), in_dims=(None, 0, 0, 0, 0))
    clipped_share = []
    for step in range(steps):
        chosen = (torch.rand(num_edges, generator=g) < sample_rate).nonzero().flatten()
        if chosen.numel():
            u, v = edges[0, chosen], edges[1, chosen]
            neg = torch.randint(0, x_dst.shape[0], (chosen.numel(), config.negatives), generator=g)
            draws = torch.randn(chosen.numel(), 2 + config.negatives, config.latent, generator=g)
            params = {k: p.detach() for k, p in model.named_parameters()}
            grads = per_example_grad(params, x_src[u], x_dst[v], x_dst[neg], draws)
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
               "clipped_share": sum(clipped_share) / max(len(clipped_share), 1), "edges": num_edges}
    return DPSGDResult(model, spent, delta, sigma, sample_rate, steps, details)


def example_loss(model: NodeVGAEEncoder, params: dict[str, Tensor], src_type: str, dst_type: str, xs: Tensor,
                 xd: Tensor, xn: Tensor, draws: Tensor, kl_weight: float = 1.0) -> Tensor:
    """Eq. 20–21 for one edge (u, v) with parameters ``params``:
    −log σ(z_u·z_v) − Σ_k log σ(−z_u·z_v'_k) + w·(KL(q_u‖N(0, I)) + KL(q_v‖N(0, I)));
    ``draws`` are the reparameterisation noises of u, v and the k negatives (rows)."""

    def call(node_type: str, x: Tensor) -> tuple[Tensor, Tensor]:
        return functional_call(model, params, (node_type, x))

    mu_u, ls_u = call(src_type, xs[None])
    mu_v, ls_v = call(dst_type, torch.cat([xd[None], xn]))
    z_u = mu_u + draws[:1] * ls_u.exp()
    z_v = mu_v + draws[1:] * ls_v.exp()
    scores = (z_u * z_v).sum(-1)
    rec = -nn.functional.logsigmoid(scores[0]) - nn.functional.logsigmoid(-scores[1:]).sum()
    kl_u = 0.5 * ((2 * ls_u).exp() + mu_u**2 - 1 - 2 * ls_u).sum()
    kl_v = 0.5 * ((2 * ls_v[:1]).exp() + mu_v[:1] ** 2 - 1 - 2 * ls_v[:1]).sum()
    return rec + kl_weight * (kl_u + kl_v)


@torch.no_grad()
def link_scores(model: NodeVGAEEncoder, src_type: str, dst_type: str, x_src: Tensor, x_dst: Tensor,
                pairs: Tensor) -> Tensor:
    """Decoder scores μ_u·μ_v (eq. 19's logit at the posterior mean) for ``pairs`` [2, P]."""
    mu_u, _ = model(src_type, x_src[pairs[0]])
    mu_v, _ = model(dst_type, x_dst[pairs[1]])
    return (mu_u * mu_v).sum(-1)
