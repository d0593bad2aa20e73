"""Ours, not the GAP authors': the API-drift shim that lets the reference GAP code (sisaman/GAP, written for
torch 1.13, PyG 2.1, torch-sparse, opacus 1.2) run unmodified on privgraph's torch 2.13 CPU, PyG 2.8 and opacus 1.6
(opacus: privgraph's ``test`` extra).

Every change is listed in :data:`SHIM_CHANGES` (the docs page prints it). :func:`install` must run before the
reference's ``core`` package is imported; nothing here touches the reference's algorithm (its noise calibration,
aggregation perturbation, training loop or accounting), only the library calls it makes.
"""

from __future__ import annotations

import sys
import types

import torch
import torch_geometric.typing as pyg_typing
from torch import Tensor

SHIM_CHANGES = (
    "`torch_sparse` (no wheel for torch 2.13): a stand-in module with `SparseTensor` (COO storage sorted by row; "
    "`coo`, `csr`, `t`, `nnz`, `size`, `sparse_sizes`, `device`, `to`, `sum`, `density`) and `matmul(adj_t, x)` "
    "(sum aggregation, computed with `torch.sparse.mm` on a CSR copy). It subclasses PyG's placeholder "
    "`torch_geometric.typing.SparseTensor`, so PyG's `Data` sees it as a sparse adjacency "
    "(`Data.num_edges` = `adj_t.nnz()`, as in PyG 2.1 with torch-sparse; GAP-EDP's automatic δ reads it).",
    "`torch_geometric.transforms.ToSparseTensor` is not used: the loader builds `adj_t` itself "
    "(`SparseTensor(row=edge_index[1], col=edge_index[0])`, PyG's convention) and drops `edge_index`, as the "
    "transform does.",
    "`opacus.privacy_engine.forbid_accumulation_hook` (removed after opacus 1.2): restored with opacus 1.2's body. "
    "The reference registers it on a `GradSampleModule` wrapper it then discards, so it never fires in either version.",
    "GAP-NDP's `BoundOutDegree.sample` called `torch.ops.torch_sparse.neighbor_sample` and PyG 2.1's "
    "`to_csc`/`filter_data` on a torch-sparse adjacency: replaced by the same sampling in plain torch — for each seed "
    "node 0..N-2 (the reference's `torch.arange(0, num_nodes-1)`, which leaves out the last node), keep "
    "min(K, out-degree) of its out-edges drawn uniformly without replacement; the last node keeps no out-edges and "
    "is dropped from the graph (with its features, label and masks) unless some seed kept an edge to it, as "
    "`filter_data` does.",
    "PyG 2.8 has no `torch_geometric.loader.utils.to_csc`: a placeholder that raises, so the import in "
    "`bound_degree.py` succeeds (the sampler that called it is replaced, above).",
    "PyG 2.8's `BaseTransform` has an abstract `forward` (PyG 2.1: `__call__`): the reference's transforms "
    "(`RemoveSelfLoops`, `RemoveIsolatedNodes`, `BoundOutDegree`, ...) define `__call__`, which still overrides "
    "PyG's, so their abstract-method set is emptied to let them be instantiated.",
    "GAP-NDP only: opacus 1.6 hooks per-sample gradients with `register_full_backward_hook` (opacus 1.2: "
    "`register_backward_hook`), whose wrapped outputs may not be modified in place, and the reference's MLPs apply "
    "`torch.selu_` and `Dropout(inplace=True)` to layer outputs (`RuntimeError: Output 0 of BackwardHookFunction is "
    "a view and is being modified inplace`). After the method is built, its modules' activation is the out-of-place "
    "`torch.selu` and their dropouts are not in place: the same values and gradients.",
    "torchmetrics 0.9.3 (the reference's pin: `MeanMetric(compute_on_step=...)`) imports `pkg_resources`: "
    "setuptools < 70 is installed beside it.",
    "`wandb` is not installed: a stub module with `wandb.wandb_run.Run` (a type annotation of the reference's "
    "`WandbLogger`) so `core.loggers` imports; the WandB logger is never enabled.",
    "Logging: `Logger.setup(logger='csv', enabled=False)` as the reference's `train.py` does; the console spinner "
    "and progress bars are left on (rich), output goes to the run's log.",
)


class SparseTensor(pyg_typing.SparseTensor):
    """A row-sorted COO sparse matrix with the part of torch-sparse's ``SparseTensor`` API the reference uses."""

    def __init__(
        self,
        row: Tensor | None = None,
        rowptr: Tensor | None = None,
        col: Tensor | None = None,
        value: Tensor | None = None,
        sparse_sizes: tuple[int | None, int | None] | None = None,
        is_sorted: bool = False,
        trust_data: bool = False,
    ):
        if row is None:
            row = torch.repeat_interleave(torch.arange(rowptr.numel() - 1), rowptr.diff())
        n = int(sparse_sizes[0]) if sparse_sizes and sparse_sizes[0] is not None else int(row.max()) + 1
        m = int(sparse_sizes[1]) if sparse_sizes and sparse_sizes[1] is not None else int(col.max()) + 1
        if not is_sorted:
            order = torch.argsort(row * m + col)
            row, col = row[order], col[order]
            value = None if value is None else value[order]
        self._row, self._col, self._value, self._sizes = row.long(), col.long(), value, (n, m)
        self._csr: Tensor | None = None

    def coo(self) -> tuple[Tensor, Tensor, Tensor | None]:
        return self._row, self._col, self._value

    def csr(self) -> tuple[Tensor, Tensor, Tensor | None]:
        rowptr = torch.zeros(self._sizes[0] + 1, dtype=torch.long)
        rowptr[1:] = torch.bincount(self._row, minlength=self._sizes[0]).cumsum(0)
        return rowptr, self._col, self._value

    def t(self) -> SparseTensor:
        return SparseTensor(row=self._col, col=self._row, value=self._value, sparse_sizes=self._sizes[::-1])

    def nnz(self) -> int:
        return self._row.numel()

    def sparse_sizes(self) -> tuple[int, int]:
        return self._sizes

    def size(self, dim: int) -> int:
        return self._sizes[dim]

    def dim(self) -> int:
        return 2

    def device(self) -> torch.device:
        return self._row.device

    def is_cuda(self) -> bool:
        return False

    def has_value(self) -> bool:
        return self._value is not None

    def to(self, *args, **kwargs) -> SparseTensor:
        return self  # CPU only

    def density(self) -> float:
        return self.nnz() / (self._sizes[0] * self._sizes[1])

    def sum(self, dim: int) -> Tensor:
        index = self._row if dim == 1 else self._col
        ones = torch.ones(self.nnz()) if self._value is None else self._value
        return torch.zeros(self._sizes[0] if dim == 1 else self._sizes[1]).index_add_(0, index, ones)

    def to_torch_sparse_csr_tensor(self, dtype: torch.dtype | None = None) -> Tensor:
        if self._csr is None or (dtype is not None and self._csr.dtype != dtype):
            rowptr, col, value = self.csr()
            value = torch.ones(self.nnz(), dtype=dtype or torch.float) if value is None else value.to(dtype)
            self._csr = torch.sparse_csr_tensor(rowptr, col, value, self._sizes, check_invariants=True)
        return self._csr


def matmul(src: SparseTensor, other: Tensor, reduce: str = "sum") -> Tensor:
    """torch-sparse's ``matmul(adj_t, x)``: row ``i`` of the result is the sum of ``x[j]`` over the entries (i, j)."""
    if reduce != "sum":
        raise NotImplementedError(f"shim matmul: reduce={reduce!r}")
    return torch.sparse.mm(src.to_torch_sparse_csr_tensor(other.dtype), other)


def forbid_accumulation_hook(module, _grad_input, _grad_output) -> None:
    """opacus 1.2's ``forbid_accumulation_hook`` (removed in later opacus): raise if grad samples accumulated."""
    if not module.training:
        return
    for p in module.parameters():
        if getattr(p, "grad_sample", None) is not None:
            n = len(p.grad_sample) if isinstance(p.grad_sample, list) else 1
            if n > 1:
                raise ValueError(
                    "Poisson sampling is not compatible with grad accumulation. "
                    "You need to call optimizer.step() after every forward/backward pass "
                    "or consider using BatchMemoryManager"
                )


def bound_out_degree_sample(self, data):
    """The reference's ``BoundOutDegree.sample`` without torch-sparse (see :data:`SHIM_CHANGES`).

    ``data.adj_t`` holds the adjacency in (source, target) orientation here (the caller transposed it); every
    seed keeps at most ``self.num_neighbors`` of its targets, uniformly without replacement.
    """
    from torch_geometric.data import Data

    adj = data.adj_t
    n = data.num_nodes
    rowptr, col, _ = adj.csr()
    k = self.num_neighbors
    keep_row, keep_col = [], []
    for v in range(n - 1):  # the reference's index = torch.arange(0, num_nodes - 1)
        lo, hi = int(rowptr[v]), int(rowptr[v + 1])
        nbrs = col[lo:hi]
        if nbrs.numel() > k:
            nbrs = nbrs[torch.randperm(nbrs.numel())[:k]]
        keep_row.append(torch.full((nbrs.numel(),), v, dtype=torch.long))
        keep_col.append(nbrs)
    row, col = torch.cat(keep_row), torch.cat(keep_col)
    last_kept = bool((col == n - 1).any())
    num_nodes = n if last_kept else n - 1
    out = Data(**{k_: v for k_, v in data.to_dict().items() if k_ != "adj_t"})
    if not last_kept:
        for key, value in data.to_dict().items():
            if isinstance(value, Tensor) and value.dim() > 0 and value.size(0) == n:
                out[key] = value[: n - 1]
    out.adj_t = SparseTensor(row=row, col=col, sparse_sizes=(num_nodes, num_nodes))
    return out


def out_of_place(method) -> None:
    """GAP-NDP under opacus 1.6: the same activations and dropout computed out of place (see SHIM_CHANGES)."""
    for module in (method._encoder, method._classifier):
        for m in module.modules():
            if isinstance(m, torch.nn.Dropout):
                m.inplace = False
            if getattr(m, "activation_fn", None) in INPLACE:
                m.activation_fn = INPLACE[m.activation_fn]


INPLACE = {torch.relu_: torch.relu, torch.selu_: torch.selu}


def install() -> None:
    """Put the stand-ins in place; call before importing the reference's ``core``."""
    mod = types.ModuleType("torch_sparse")
    mod.SparseTensor, mod.matmul, mod.__version__ = SparseTensor, matmul, "0.0.0+privgraph-shim"
    mod.SparseStorage = pyg_typing.SparseStorage
    sys.modules["torch_sparse"] = mod
    if "wandb" not in sys.modules:
        try:
            import wandb  # noqa: F401
        except ImportError:
            wandb = types.ModuleType("wandb")
            wandb.wandb_run = types.ModuleType("wandb.wandb_run")
            wandb.wandb_run.Run = type("Run", (), {})
            sys.modules["wandb"], sys.modules["wandb.wandb_run"] = wandb, wandb.wandb_run
    import opacus.privacy_engine

    opacus.privacy_engine.forbid_accumulation_hook = forbid_accumulation_hook
    import torch_geometric.loader.utils as loader_utils

    if not hasattr(loader_utils, "to_csc"):  # PyG 2.1 names the reference imports; only its sampler used them

        def _gone(*args, **kwargs):
            raise NotImplementedError("replaced by gap_reference_shim.bound_out_degree_sample")

        loader_utils.to_csc = _gone


def patch_reference() -> None:
    """After ``core`` is importable: replace the torch-sparse sampler call in GAP-NDP's degree bound."""
    from core.data import transforms
    from core.data.transforms.bound_degree import BoundOutDegree

    BoundOutDegree.sample = bound_out_degree_sample
    for name in ("BoundOutDegree", "BoundDegree", "RemoveSelfLoops", "RemoveIsolatedNodes", "FilterClassByCount"):
        getattr(transforms, name).__abstractmethods__ = frozenset()  # they define __call__, PyG 2.8 wants forward
