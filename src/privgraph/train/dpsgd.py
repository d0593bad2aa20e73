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
them is :mod:`privgraph.train.link_prediction`; :func:`train_rows_dpsgd` is the loop for a
model on fixed rows (GAP-NDP's encoder and classifier, the GAP authors' ``NoisySGD``).

:func:`paper_gradient_step` is the HeteDP authors' step instead (opt-in,
``gradient_step="paper"``, **not** DP): it exists to measure what the paper's
link-prediction numbers rest on, never as a default."""

from __future__ import annotations

import warnings
from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import Any

import torch
import torch.nn.functional as F
from torch import Tensor, nn
from torch.nn.functional import normalize

from privgraph.mechanisms.randomness import RandomSource, poisson_subsample, randn
from privgraph.progress import ProgressHook

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


def clip_factors(norms: Tensor, clip: float) -> Tensor:
    """Eq. 22's per-example factors min(1, C/‖g_i‖): example i's gradient times its factor has norm ≤ C."""
    return torch.clamp(clip / norms.clamp_min(1e-12), max=1.0)


def noisy_mean(
    summed: dict[str, Tensor], noise_std: float, expected_batch: float, rng: RandomSource | None
) -> dict[str, Tensor]:
    """Eq. 22 after clipping: N(0, noise_std²) per coordinate added to each summed clipped gradient
    (drawn from ``rng`` in the order of ``summed``), divided by the expected batch size."""
    if rng is None and noise_std > 0:
        raise ValueError("DP-SGD noise needs an explicit random source (a torch.Generator or SecureRandom)")
    out = {}
    for n, s in summed.items():
        if rng is not None:  # drawn even when noise_std = 0, so the noiseless run samples as the private one
            s = s + (randn(tuple(s.shape), rng, s.dtype) * noise_std).to(s.device)  # drawn on the CPU
        out[n] = s / expected_batch
    return out


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
    scale = clip_factors(norms, clip)
    summed = {n: (g * scale.view(-1, *([1] * (g.dim() - 1)))).sum(0) for n, g in per_example.items()}
    return noisy_mean(summed, noise_std, expected_batch, rng), norms


@dataclass(frozen=True)
class RowTable:
    """The rows a linear layer reads, fixed for the whole training: V = S X, with S [M, N] sparse (CSR) and
    X [N, in] (e.g. a node type's inputs, S stacking the identity and mean aggregations), and their Gram
    matrix V Vᵀ [M, M], computed once (as S (X Xᵀ) Sᵀ).  A step then reads V through it in the layer's
    output dimension only: the outputs S (X Wᵀ), each example's ‖Σ_r g_r a_rᵀ‖² from Gram entries, and the
    clipped sum (Sᵀ Ĝ)ᵀ X — one product over the N rows of X, however many of V's rows a batch reads."""

    select: Tensor
    select_t: Tensor
    table: Tensor
    gram: Tensor

    @classmethod
    def build(cls, select: Tensor, table: Tensor) -> RowTable:
        select = select.coalesce() if select.layout == torch.sparse_coo else select.to_sparse_coo().coalesce()
        with warnings.catch_warnings():  # "sparse CSR support is in beta": products with a constant matrix only
            warnings.filterwarnings("ignore", "Sparse CSR tensor support is in beta", UserWarning)
            s, st = select.to_sparse_csr(), select.t().coalesce().to_sparse_csr()
        return cls(s, st, table, s @ (s @ (table @ table.t())).t())

    def outputs(self, weight: Tensor) -> Tensor:
        """S (X Wᵀ) [M, out]: the layer's outputs on every row of V, bias excluded."""
        return self.select @ nn.functional.linear(self.table, weight)

    def weight_sum(self, positions: Tensor, grads: Tensor) -> Tensor:
        """Σ_j grads_j V[positions_j]ᵀ [out, in] for rows ``positions`` [...] with output gradients ``grads``
        [..., out], as (Sᵀ (Σ of the grads by row of V))ᵀ X."""
        flat = grads.reshape(-1, grads.shape[-1])
        by_row = torch.zeros(self.gram.shape[0], flat.shape[1], dtype=flat.dtype, device=flat.device)
        return (self.select_t @ by_row.index_add_(0, positions.reshape(-1), flat)).t() @ self.table


@dataclass(frozen=True)
class TableCall:
    """A call of the linear layer ``layer`` (its name in the model) on the rows ``positions`` [B, R] of
    ``rows`` (:class:`RowTable`) that the forward pass never forms: ``out`` [B, R, out] holds W a + b for
    them (from :meth:`RowTable.outputs`: W is linear, so the layer is applied to the N rows of X once and
    S's aggregation taken in the output dimension)."""

    layer: str
    out: Tensor
    positions: Tensor
    rows: RowTable


def linear_clipped_sum(
    model: nn.Module, losses: Callable[[], Tensor | tuple[Tensor, list[TableCall]]], clip: float
) -> tuple[dict[str, Tensor], Tensor]:
    """Eq. 22's clipped sum Σ_i min(1, C/‖g_i‖)·g_i and the norms ‖g_i‖ of the per-example gradients
    g_i, without forming any g_i (ghost clipping: Goodfellow 2015, "Efficient per-example gradient
    computations"; Li et al. 2022, "Large language models can be strong differentially private
    learners", §4), for a model whose parameters all belong to ``nn.Linear`` layers.

    ``losses()`` runs the model on a batch and returns the per-example losses [B], or them and the
    :class:`TableCall` s it made.  The weights must be used through calls of their layers only (the calls
    are recorded by forward hooks) or, for a layer never called, through table calls of one
    :class:`RowTable`; every call must have a leading dimension that is the example, and example i's loss
    must read row i of each call only (no batch statistics, no message between examples' rows).
    Then the gradient G of Σ_i loss_i with respect to a call's output has, in row i, example i's own
    gradient, and for a layer with inputs a_ir and output gradients g_ir (r: example i's rows over
    all calls of the layer) example i's weight gradient is Σ_r g_ir a_irᵀ, with squared norm
    Σ_{r,s} (a_ir·a_is)(g_ir·g_is) (the dot products in the model's precision, their
    products summed in float64) and bias gradient Σ_r g_ir; the clipped sum
    is one product (s ⊙ G)ᵀA (table calls: a_ir·a_is read from the table's Gram matrix, the sum
    from :meth:`RowTable.weight_sum`).  The same values as clipping vmapped
    per-example gradients (:func:`clipped_noisy_gradient`), up to float summation order.  Returns the
    clipped sum by parameter name (the model's order; zeros for a layer not called) and the norms before
    clipping."""
    linears = {name: m for name, m in model.named_modules() if isinstance(m, nn.Linear)}
    owned = {f"{name}.{p}".lstrip(".") for name, m in linears.items() for p, _ in m.named_parameters(recurse=False)}
    params = dict(model.named_parameters())
    if set(params) - owned:
        raise ValueError(f"ghost clipping needs every parameter in a nn.Linear, not {sorted(set(params) - owned)}")
    calls: dict[str, list[tuple[Tensor, Tensor]]] = {}

    def recorder(name: str) -> Callable[[nn.Module, tuple[Tensor, ...], Tensor], None]:
        def record(module: nn.Module, args: tuple[Tensor, ...], output: Tensor) -> None:
            calls.setdefault(name, []).append((args[0].detach(), output))

        return record

    handles = [m.register_forward_hook(recorder(name)) for name, m in linears.items()]
    try:
        result = losses()
    finally:
        for h in handles:
            h.remove()
    loss, table_calls = (result, []) if isinstance(result, Tensor) else result
    batch = loss.shape[0]
    records = [(name, x, out) for name, cs in calls.items() for x, out in cs]
    for name, x, _ in records:
        if x.dim() < 2 or x.shape[0] != batch:
            raise ValueError(
                f"{name} was called on an input of shape {tuple(x.shape)}: its leading dimension must be "
                f"the example ({batch})"
            )
    tabled: dict[str, list[tuple[TableCall, Tensor]]] = {}  # a layer's table calls and their output gradients
    for c in table_calls:
        if c.layer not in linears or c.layer in calls or c.out.dim() < 2 or c.out.shape[0] != batch:
            raise ValueError(
                f"a table call of {c.layer!r} with output {tuple(c.out.shape)}: it must name a nn.Linear of the "
                f"model that is not also called, and lead with the example ({batch})"
            )
        if tabled.get(c.layer) and tabled[c.layer][0][0].rows is not c.rows:
            raise ValueError(f"the table calls of {c.layer!r} must read one RowTable")
        tabled.setdefault(c.layer, [])
    outs = [out for _, _, out in records] + [c.out for c in table_calls]
    out_grads = torch.autograd.grad(loss.sum(), outs, allow_unused=True)
    out_grads = [torch.zeros_like(out) if g is None else g for out, g in zip(outs, out_grads, strict=True)]
    blocks: dict[str, list[tuple[Tensor, Tensor]]] = {}  # a layer's calls: (inputs [B, R, in], grads [B, R, out])
    for (name, x, _), g in zip(records, out_grads[: len(records)], strict=True):
        blocks.setdefault(name, []).append((x.reshape(batch, -1, x.shape[-1]), g.reshape(batch, -1, g.shape[-1])))
    for c, g in zip(table_calls, out_grads[len(records) :], strict=True):
        tabled[c.layer].append((c, g))
    squared = torch.zeros(batch, dtype=torch.float64, device=loss.device)
    for name, calls_of in blocks.items():  # Σ over pairs of calls (c, c') of ⟨A_c A_c'ᵀ, G_c G_c'ᵀ⟩ per example
        for i, (a, g) in enumerate(calls_of):
            for j, (a2, g2) in enumerate(calls_of[i:], i):
                inner = (torch.bmm(a, a2.transpose(1, 2)).double() * torch.bmm(g, g2.transpose(1, 2)).double()).sum(
                    (1, 2)
                )
                squared += inner if i == j else 2 * inner
        if linears[name].bias is not None:
            squared += sum(g.sum(1) for _, g in calls_of).double().square().sum(-1)
    joined: dict[str, tuple[RowTable, Tensor, Tensor]] = {}  # a layer's table calls as one: rows, positions, grads
    for name, calls_of in tabled.items():
        rows = calls_of[0][0].rows
        pos = torch.cat([c.positions.reshape(batch, -1) for c, _ in calls_of], 1)
        g = torch.cat([g.reshape(batch, -1, g.shape[-1]) for _, g in calls_of], 1)
        joined[name] = rows, pos, g
        gram = torch.take(rows.gram, pos[:, :, None] * rows.gram.shape[0] + pos[:, None, :])  # a_r·a_s by example
        squared += (gram.double() * torch.bmm(g, g.transpose(1, 2)).double()).sum((1, 2))
        if linears[name].bias is not None:
            squared += g.sum(1).double().square().sum(-1)
    norms = squared.clamp_min(0).sqrt()
    scale = clip_factors(norms, clip).to(loss.dtype)[:, None, None]
    summed = {}
    for pname, p in params.items():
        name, _, kind = pname.rpartition(".")
        if name in joined:
            rows, pos, g = joined[name]
            summed[pname] = (g * scale).sum((0, 1)) if kind == "bias" else rows.weight_sum(pos, g * scale)
        elif name not in blocks:
            summed[pname] = torch.zeros_like(p)
        elif kind == "bias":
            summed[pname] = sum((g * scale).sum((0, 1)) for _, g in blocks[name])
        else:
            summed[pname] = sum(
                (g * scale).reshape(-1, g.shape[-1]).t() @ a.reshape(-1, a.shape[-1]) for a, g in blocks[name]
            )
    return summed, norms.to(loss.dtype)


def ghost_clipped_noisy_gradient(
    model: nn.Module,
    losses: Callable[[], Tensor | tuple[Tensor, list[TableCall]]] | None,
    clip: float,
    noise_std: float,
    expected_batch: float,
    rng: RandomSource | None,
) -> tuple[dict[str, Tensor], Tensor]:
    """Eq. 22 as :func:`clipped_noisy_gradient`, with the clipped sum taken by ghost clipping
    (:func:`linear_clipped_sum`: ``losses()`` returns the batch's per-example losses; ``None``: an
    empty Poisson batch, whose sum is zero and which still draws the noise).  Returns the gradient
    and the per-example norms before clipping."""
    if losses is None:
        summed = {k: torch.zeros_like(p) for k, p in model.named_parameters()}
        norms = torch.zeros(0, device=next(model.parameters()).device)
    else:
        summed, norms = linear_clipped_sum(model, losses, clip)
    return noisy_mean(summed, noise_std, expected_batch, rng), norms


def epoch_steps(epochs: int, examples: int, batch_size: int) -> tuple[float, int]:
    """(q, T) of the GAP authors' ``NoisySGD``: q = B/N, T = epochs·N // B (N a public number of examples)."""
    batch = min(batch_size, examples)
    return batch / examples, epochs * examples // batch


RowSource = Tensor | Callable[[Tensor], Tensor]  # rows in memory, or a gather of the rows at given indices


def train_rows_dpsgd(
    model: nn.Module,
    x: RowSource,
    y: Tensor,
    *,
    epochs: int,
    batch_size: int,
    lr: float,
    weight_decay: float,
    clip: float,
    noise_multiplier: float,
    rng: RandomSource,
    planned: int | None = None,
    progress: ProgressHook | None = None,
    task: str = "DP-SGD steps",
) -> int:
    """DP-SGD (Abadi et al. 2016, Algorithm 1) of a classifier on the rows ``x`` with labels ``y``: T steps
    (:func:`epoch_steps`) of Poisson batches (rate q, :func:`~privgraph.mechanisms.randomness.poisson_subsample`:
    each of the ``len(y)`` examples kept independently), each example's cross-entropy gradient clipped to C (ghost
    clipping, :func:`ghost_clipped_noisy_gradient`), N(0, σ²C²) added, divided by the expected batch q·planned;
    Adam on it (the GAP authors' ``DPOptimizer`` around Adam).  The last iterate is kept.  ``x``: the rows in
    memory ([len(y), d]), or a callable returning the rows at the given (CPU, int64) indices — e.g. a gather
    from an out-of-core table, so only a batch is read per step.  q and T are planned for ``planned`` examples
    (a public count; default: the rows given).  ``progress(task, t, T)`` every 10 steps and after the last.
    Returns T."""
    rows = int(y.shape[0])
    planned = rows if planned is None else planned
    q, steps = epoch_steps(epochs, planned, batch_size)
    opt = torch.optim.Adam(model.parameters(), lr=lr, weight_decay=weight_decay)
    model.train()
    if progress is not None:
        progress(task, 0, steps)
    for t in range(steps):
        chosen = poisson_subsample(rows, q, rng)
        xb = x[chosen.to(x.device)] if isinstance(x, Tensor) else x(chosen).to(y.device)
        yb = y[chosen.to(y.device)]
        losses = (lambda xb=xb, yb=yb: F.cross_entropy(model(xb), yb, reduction="none")) if chosen.numel() else None
        grads, _ = ghost_clipped_noisy_gradient(model, losses, clip, noise_multiplier * clip, q * planned, rng)
        opt.zero_grad()
        for name, param_ in model.named_parameters():
            param_.grad = grads[name]
        opt.step()
        if progress is not None and ((t + 1) % 10 == 0 or t + 1 == steps):
            progress(task, t + 1, steps)
    model.eval()
    return steps


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
            step = step + normalize(randn(tuple(step.shape), rng, step.dtype) * noise_std, dim=0).to(step.device)
        if g.dim() == 2:
            out[name] = (step / rows.shape[0]).expand_as(rows).t().contiguous()
        else:
            out[name] = (step / g.shape[0]).reshape(g.shape)
    return out
