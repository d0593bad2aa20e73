"""DP-SGD's generic pieces: the trainer's settings, eq. 22's clipped noisy
gradient (per-example gradients clipped to C, N(0, σ²C²) added to the sum,
divided by the *expected* Poisson batch q·N — the realised size would leak) and
what a private training returns.  σ comes from the RDP accountant
(:mod:`privgraph.accounting.rdp`) for rate q and T steps, both planned from
public numbers only (:func:`plan_sampling`): the batch size B, the epochs
and a *public* number N of examples (``edge_count``), never the private
count |E| — a rate q = B/|E| would make σ, T and the report functions of the
private data (one more edge, another q) and break the accountant's
assumption that q and T are fixed in advance.  The link trainer that uses
them is :mod:`privgraph.train.link_prediction`.

:func:`paper_gradient_step` is the HeteDP authors' step instead (opt-in,
``gradient_step="paper"``, **not** DP): it exists to measure what the paper's
link-prediction numbers rest on, never as a default."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

import torch
from torch import Tensor, nn
from torch.nn.functional import normalize

from privgraph.mechanisms.randomness import RandomSource, randn

GRADIENT_STEPS = ("dpsgd", "paper")


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
    gradient_step: str = "dpsgd"  # "dpsgd" (eq. 22, DP) or "paper" (the authors' utilsDP step: NOT DP)
    self_connection: bool = True  # the encoder's own-node term (False: the authors' TopoDP, neighbours only)
    # a public number N of training examples (their count declared public, or a public bound) that plans the
    # sampling: q = min(B, N)/N, T = round(epochs/q); None only for a noiseless run (then the true count)
    edge_count: int | None = None

    def __post_init__(self) -> None:
        for name in ("batch_size", "epochs", "negatives", "hidden", "latent"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be >= 1")
        if not (self.clip > 0 and self.lr > 0):
            raise ValueError("clip C and lr must be > 0")
        if not self.kl_weight >= 0:
            raise ValueError(f"kl_weight must be >= 0, got {self.kl_weight}")
        if self.edge_count is not None and (
            isinstance(self.edge_count, bool) or not isinstance(self.edge_count, int) or self.edge_count < 1
        ):
            raise ValueError(
                f"edge_count must be a whole number >= 1 (a public number of training edges), got {self.edge_count!r}"
            )
        if not isinstance(self.self_connection, bool):
            raise ValueError(f"self_connection must be true or false, got {self.self_connection!r}")
        if self.gradient_step not in GRADIENT_STEPS:
            raise ValueError(
                f"gradient_step must be one of {GRADIENT_STEPS} ('paper' is not DP), got {self.gradient_step!r}"
            )

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class SamplingPlan:
    """DP-SGD's Poisson sampling, fixed before training from public numbers: N examples planned
    for, rate q = min(B, N)/N, T = max(1, round(epochs/q)) steps, and the expected batch q·N that
    eq. 22 divides by."""

    planned_examples: int
    sample_rate: float
    steps: int
    expected_batch: float


NEEDS_EDGE_COUNT = (
    "DP-SGD needs edge_count=N, a public number of training edges of the protected relation (their "
    "count if you treat it as public, or a public upper bound): it fixes the sampling rate "
    "q = B/N and the steps T, which must not be read from the private edges"
)


def plan_sampling(config: DPSGDConfig, private: bool, num_examples: int) -> SamplingPlan:
    """The sampling plan of :class:`SamplingPlan` from ``config.edge_count`` (required when ``private``;
    a noiseless run falls back on the true ``num_examples``, as it claims nothing)."""
    planned = config.edge_count
    if planned is None:
        if private:
            raise ValueError(NEEDS_EDGE_COUNT)
        planned = num_examples
    batch = min(config.batch_size, planned)
    rate = batch / planned
    return SamplingPlan(planned, rate, max(1, round(config.epochs / rate)), float(batch))


@dataclass
class DPSGDResult:
    """A trained model and its accounting: (``epsilon``, ``delta``) from ``steps`` steps of
    Poisson rate ``sample_rate`` with noise multiplier σ (std σ·C); ``epsilon`` is inf for the
    noiseless run."""

    model: nn.Module
    epsilon: float
    delta: float
    noise_multiplier: float
    sample_rate: float
    steps: int
    details: dict[str, Any]


def clipped_noisy_gradient(
    per_example: dict[str, Tensor], clip: float, noise_std: float, expected_batch: float, rng: RandomSource | None
) -> tuple[dict[str, Tensor], Tensor]:
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


def paper_gradient_step(
    batch_gradient: dict[str, Tensor], clip: float, noise_std: float, rng: RandomSource | None
) -> dict[str, Tensor]:
    """The HeteDP authors' gradient step (github AixWinnie/HeteDP, ``utilsDP.clip_and_accumulate``
    then ``utilsDP.add_noise``) on a batch's summed gradient — **not** differentially private.

    Per parameter, in the orientation of their DGL ``GraphConv`` weights (input × output: a
    ``nn.Linear`` weight is transposed first; a bias is one row): each *row* of the batch gradient
    is clipped to norm ``clip``, the rows are summed and the sum rescaled to unit norm; N(0,
    noise_std²) noise of the same shape is drawn and also rescaled to unit norm; their sum,
    divided by the number of rows (the bias: its length), becomes every row of the gradient.
    Why it is not DP: nothing bounds one example's contribution (the batch's gradient is clipped
    row by row, not each example's), and the noise has norm 1 whatever σ is — its size does not
    grow as ε shrinks, so the accountant's ε describes nothing.  ``noise_std = 0``: no noise."""
    if rng is None and noise_std > 0:
        raise ValueError("the noise needs an explicit random source (a torch.Generator or SecureRandom)")
    out = {}
    for name, g in batch_gradient.items():
        if g.dim() > 2:
            raise ValueError(
                f"the authors' step is defined for weight matrices and biases, {name} has shape {tuple(g.shape)}"
            )
        rows = g.t() if g.dim() == 2 else g.reshape(1, -1)
        clipped = rows / torch.clamp(torch.linalg.vector_norm(rows, dim=-1, keepdim=True) / clip, min=1.0)
        step = normalize(clipped.sum(0), dim=0)
        if rng is not None and noise_std > 0:
            step = step + normalize(randn(tuple(step.shape), rng, step.dtype) * noise_std, dim=0)
        if g.dim() == 2:
            out[name] = (step / rows.shape[0]).expand_as(rows).t().contiguous()
        else:
            out[name] = (step / g.shape[0]).reshape(g.shape)
    return out
