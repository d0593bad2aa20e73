"""GAP's modules (Sajadmanesh et al. 2023, Fig. 2; the authors' github sisaman/GAP): the encoder MLP, the
multi-MLP classifier on the hop tables, and GAP-NDP's released modules as one model that aggregates over a
graph (:class:`GAPNodeModel`, the authors' ``predict``)."""

from __future__ import annotations

import warnings

import torch
from torch import Tensor, nn

from privgraph.mechanisms.aggregation import bound_out_degree, perturbed_aggregation
from privgraph.mechanisms.randomness import make_generator

SPARSE_INPUT_DENSITY = 0.05  # the edge-level encoder reads features with at most this share of non-zeros as sparse


class _SparseRowsLinear(torch.autograd.Function):
    """x Wᵀ for a sparse CSR ``x`` (not differentiated) and a dense W; the weight's gradient gᵀx is read as
    (xᵀ g)ᵀ from the CSR transpose ``xt`` (the COO product's backward transposes and coalesces x every step)."""

    @staticmethod
    def forward(ctx, x: Tensor, xt: Tensor, weight: Tensor) -> Tensor:  # type: ignore[override]
        ctx.save_for_backward(xt)
        return torch.sparse.mm(x, weight.t())

    @staticmethod
    def backward(ctx, grad: Tensor) -> tuple[None, None, Tensor]:  # type: ignore[override]
        (xt,) = ctx.saved_tensors
        return None, None, torch.sparse.mm(xt, grad).t()


class SparseInputLinear(nn.Linear):
    """``nn.Linear`` (same weights and state) that also takes a sparse input (:func:`sparse_input`'s CSR, or
    COO): x Wᵀ + b over the non-zeros only.  Bag-of-words features (FacebookPagePage: 0.3 % non-zero of 4,714)
    make the dense product 92 % of a GAP-EDP trial; the CSR product and its weight gradient (from xᵀ in CSR,
    built once per input and kept while the input is the last one seen) equal the COO ones bit for bit and
    are about 10× faster, the COO ones equal the dense ones to float rounding."""

    _transposed: tuple[Tensor, Tensor] | None = None  # (the last CSR input, its CSR transpose)

    def forward(self, x: Tensor) -> Tensor:
        if x.layout == torch.strided:
            return super().forward(x)
        if x.layout == torch.sparse_csr and torch.is_grad_enabled() and self.weight.requires_grad:
            out = _SparseRowsLinear.apply(x, self.transpose_of(x), self.weight)
        else:
            out = torch.sparse.mm(x, self.weight.t())
        return out if self.bias is None else out + self.bias

    def transpose_of(self, x: Tensor) -> Tensor:
        """xᵀ in CSR, kept for the next call with the same ``x`` (the training's epochs)."""
        if self._transposed is None or self._transposed[0] is not x:
            self._transposed = (x, csr_transpose(x))
        return self._transposed[1]


def sparse_input(x: Tensor, max_density: float = SPARSE_INPUT_DENSITY, block: int = 2048) -> Tensor:
    """``x`` as a sparse CSR matrix when at most ``max_density`` of it is non-zero, else ``x`` (the non-zeros
    found ``block`` rows at a time: half the time of ``to_sparse_csr`` on a dense matrix)."""
    if x.dim() != 2 or not x.numel() or int(torch.count_nonzero(x)) > max_density * x.numel():
        return x
    rows, cols, values = [], [], []
    for start in range(0, x.shape[0], block):
        part = x[start : start + block]
        r, c = part.nonzero(as_tuple=True)
        rows.append(r + start)
        cols.append(c)
        values.append(part[r, c])
    return _csr_of(torch.cat(rows), torch.cat(cols), torch.cat(values), tuple(x.shape))


def csr_transpose(x: Tensor) -> Tensor:
    """xᵀ of a sparse CSR ``x``, in CSR (its entries reordered by column, stably: rows ascending in each)."""
    crow, cols, values = x.crow_indices(), x.col_indices(), x.values()
    rows = torch.repeat_interleave(torch.arange(x.shape[0], device=x.device), crow.diff())
    order = torch.argsort(cols, stable=True)
    return _csr_of(cols[order], rows[order], values[order], (x.shape[1], x.shape[0]))


def _csr_of(rows: Tensor, cols: Tensor, values: Tensor, shape: tuple[int, ...]) -> Tensor:
    """The CSR matrix of ``shape`` with the entries (rows, cols, values), sorted by row then column."""
    crow = torch.zeros(shape[0] + 1, dtype=torch.long, device=rows.device)
    crow[1:] = torch.cumsum(torch.bincount(rows, minlength=shape[0]), 0)
    with warnings.catch_warnings():  # torch's "sparse CSR support is in beta" notice
        warnings.filterwarnings("ignore", "Sparse CSR tensor support is in beta", UserWarning)
        return torch.sparse_csr_tensor(crow, cols, values, shape, check_invariants=False)


class _UnitRows(torch.autograd.Function):
    """``F.normalize(x, dim=-1)`` (the same forward, bit for bit) with its gradient in one expression,
    (g − y⟨g, y⟩)/‖x‖ (g/ε on rows whose norm is clamped to ε), about half the time of autograd's chain
    through the division, the clamp and the norm (the classifier's [n, 48] table: 4.9 against 11.7 ms a step)."""

    generate_vmap_rule = True

    @staticmethod
    def forward(x: Tensor, eps: float) -> tuple[Tensor, Tensor]:  # type: ignore[override]
        norm = x.norm(2, -1, keepdim=True)
        return x / norm.clamp_min(eps).expand_as(x), norm

    @staticmethod
    def setup_context(ctx, inputs, output):  # type: ignore[override]
        _, eps = inputs
        y, norm = output
        ctx.mark_non_differentiable(norm)
        ctx.save_for_backward(y, norm)
        ctx.eps = eps

    @staticmethod
    def backward(ctx, grad: Tensor, _norm_grad: Tensor) -> tuple[Tensor, None]:  # type: ignore[override]
        y, norm = ctx.saved_tensors
        along = torch.where(norm >= ctx.eps, (grad * y).sum(-1, keepdim=True), 0.0)
        return (grad - y * along) / norm.clamp_min(ctx.eps), None


def unit_rows(x: Tensor, eps: float = 1e-12) -> Tensor:
    """Each row of ``x`` divided by max(‖row‖₂, ε): ``F.normalize(x, dim=-1)`` with a cheaper backward."""
    return _UnitRows.apply(x, eps)[0]


def mlp(in_dim: int, hidden: int, out_dim: int, layers: int, dropout: float, batch_norm: bool) -> nn.Sequential:
    """The authors' ``MLP``: ``layers`` linear layers (hidden width, then ``out_dim``) with batch norm,
    dropout and SELU between them, the last one plain; no layer: the identity.  The first layer also
    takes a sparse input (:class:`SparseInputLinear`)."""
    dims = [in_dim] + [hidden] * (layers - 1) + [out_dim] * (layers > 0)
    parts: list[nn.Module] = []
    for i in range(layers):
        parts.append((SparseInputLinear if i == 0 else nn.Linear)(dims[i], dims[i + 1]))
        if i < layers - 1:
            parts += [nn.BatchNorm1d(dims[i + 1])] if batch_norm else []
            parts += [nn.Dropout(dropout), nn.SELU()]
    return nn.Sequential(*parts)


def _mid(width: int, dropout: float, batch_norm: bool) -> nn.Sequential:
    """Normalised → batch norm → dropout → SELU: between the authors' embedding and head."""
    return nn.Sequential(*([nn.BatchNorm1d(width)] if batch_norm else []), nn.Dropout(dropout), nn.SELU())


class GAPEncoder(nn.Module):
    """The encoder module (``core/modules/node/em.py``): ``embed`` = normalize(MLP(x)) with ``layers`` layers
    of width ``hidden`` (none: the raw features), the head a one-layer classifier on it, trained on the node's
    own features and label only."""

    def __init__(
        self, in_dim: int, num_classes: int, hidden: int, layers: int, dropout: float = 0.0, batch_norm: bool = True
    ):
        super().__init__()
        self.body = mlp(in_dim, hidden, hidden, layers, dropout, batch_norm)
        width = hidden if layers else in_dim
        self.mid = _mid(width, dropout, batch_norm)
        self.head = mlp(width, hidden, num_classes, 1, dropout, batch_norm)

    def embed(self, x: Tensor) -> Tensor:
        return unit_rows(self.body(x))

    def forward(self, x: Tensor, edge_index: Tensor | None = None) -> Tensor:  # the graph is never read
        return self.head(self.mid(self.embed(x)))


class GAPClassifier(nn.Module):
    """The classification module (``core/models/multi_mlp.py``, ``combine='cat'``): one MLP per hop
    table (``base_layers`` layers), concatenated, normalised, then the head MLP (``head_layers``).  Its input
    is the release's table: the K+1 hop tables side by side, [n, (K+1)·width] (the graph argument is never
    read: the tables hold it)."""

    def __init__(
        self,
        width: int,
        num_classes: int,
        hops: int,
        hidden: int,
        base_layers: int,
        head_layers: int,
        dropout: float = 0.0,
        batch_norm: bool = True,
    ):
        super().__init__()
        self.hops, self.width = hops, width
        self.bases = nn.ModuleList(
            mlp(width, hidden, hidden, base_layers, dropout, batch_norm) for _ in range(hops + 1)
        )
        out = hidden if base_layers else width
        self.mid = _mid(out * (hops + 1), dropout, batch_norm)
        self.head = mlp(out * (hops + 1), hidden, num_classes, head_layers, dropout, batch_norm)

    def embed(self, x: Tensor, edge_index: Tensor | None = None) -> Tensor:
        tables = x.reshape(x.shape[0], self.hops + 1, self.width).unbind(1)
        return unit_rows(torch.cat([f(t) for f, t in zip(self.bases, tables, strict=True)], dim=-1))

    def forward(self, x: Tensor, edge_index: Tensor | None = None) -> Tensor:
        return self.head(self.mid(self.embed(x)))


class GAPNodeModel(nn.Module):
    """GAP-NDP's released modules answering for a graph (the authors' ``predict``): the encoder's x⁰ of the
    features given (the raw features without an encoder), K hops over the graph given with the release's
    noise, then the classifier.  ``soft_cap``: the hops are the soft-capped sums of the cleaned graph
    (:mod:`privgraph.mechanisms.soft_cap`), or zero tables when the release's PTR test failed (``passed``
    False: the classifier was trained on zero hop tables); otherwise the out-degrees bounded to D by the
    authors' sampling.  The bounding and the noise are drawn from ``seed``, so the same query gets the same
    answer."""

    def __init__(
        self,
        encoder: GAPEncoder | None,
        classifier: GAPClassifier,
        hops: int,
        max_degree: int,
        noise_std: float,
        seed: int,
        soft_cap: bool = False,
        passed: bool = True,
    ):
        super().__init__()
        self.encoder, self.classifier = encoder, classifier
        self.hops, self.max_degree, self.noise_std, self.seed = hops, max_degree, noise_std, seed
        self.soft_cap, self.passed = soft_cap, passed

    def tables(self, x: Tensor, edge_index: Tensor) -> Tensor:
        from privgraph.mechanisms import soft_cap as sc

        x0 = x.to(torch.float32) if self.encoder is None else self.encoder.embed(x.to(torch.float32))
        rng = make_generator(self.seed)
        if self.soft_cap and not self.passed:
            first = torch.nn.functional.normalize(x0, dim=-1)
            return torch.cat([first] + [torch.zeros_like(first)] * self.hops, dim=-1)
        if self.soft_cap:
            graph = sc.clean_simple_graph(edge_index.cpu(), x.shape[0])
            weights = sc.sender_weights(sc.degrees(graph, x.shape[0]), self.max_degree)
            tables, _ = sc.soft_capped_aggregation(
                x0, graph.to(x0.device), weights, hops=self.hops, noise_std=self.noise_std, rng=rng
            )
            return torch.cat(tables, dim=-1)
        graph = bound_out_degree(edge_index.cpu(), x.shape[0], self.max_degree, rng).to(x0.device)
        tables, _ = perturbed_aggregation(x0, graph, self.hops, self.noise_std, rng)
        return torch.cat(tables, dim=-1)

    def embed(self, x: Tensor, edge_index: Tensor) -> Tensor:
        return self.classifier.embed(self.tables(x, edge_index))

    def forward(self, x: Tensor, edge_index: Tensor) -> Tensor:
        return self.classifier(self.tables(x, edge_index))


__all__ = [
    "GAPClassifier",
    "GAPEncoder",
    "GAPNodeModel",
    "SparseInputLinear",
    "csr_transpose",
    "mlp",
    "sparse_input",
    "unit_rows",
]
