"""The GAP reference harness (benchmarks/gap_reference.py, gap_reference_shim.py): its shim's sparse algebra and
degree bound, and its page is what the script makes of the stored trials."""

import importlib.util
import sys
from pathlib import Path

import torch
from torch_geometric.data import Data

REPO = Path(__file__).resolve().parents[2]


def _script(name: str):
    spec = importlib.util.spec_from_file_location(name, REPO / "benchmarks" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault(name, module)
    spec.loader.exec_module(sys.modules[name])
    return sys.modules[name]


def _graph(n: int = 30, m: int = 200, seed: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    row, col = torch.randint(0, n, (m,), generator=g), torch.randint(0, n, (m,), generator=g)
    keep = row != col
    pairs = torch.unique(torch.stack([row[keep], col[keep]]), dim=1)
    return pairs[0], pairs[1]


def test_shim_matmul_is_the_dense_product_and_t_transposes():
    shim = _script("gap_reference_shim")
    row, col = _graph()
    adj = shim.SparseTensor(row=row, col=col, sparse_sizes=(30, 30))
    dense = torch.zeros(30, 30)
    dense[row, col] = 1.0
    x = torch.randn(30, 5)
    assert torch.allclose(shim.matmul(adj, x), dense @ x, atol=1e-5)
    assert torch.allclose(shim.matmul(adj.t(), x), dense.t() @ x, atol=1e-5)
    assert adj.nnz() == row.numel() and torch.equal(adj.sum(dim=1), dense.sum(1))
    rowptr, c, _ = adj.csr()
    assert torch.equal(rowptr.diff(), dense.sum(1).long()) and c.numel() == row.numel()


def test_shim_degree_bound_keeps_at_most_k_out_edges_of_each_seed_and_none_of_the_last_node():
    """The reference's BoundOutDegree: seeds 0..N-2 keep min(K, out-degree) of their own out-edges."""
    shim = _script("gap_reference_shim")
    n, k = 30, 3
    row, col = _graph(n, 400)
    data = Data(x=torch.randn(n, 4), y=torch.arange(n), adj_t=shim.SparseTensor(row=row, col=col, sparse_sizes=(n, n)))
    bound = type("Bound", (), {"num_neighbors": k})()
    torch.manual_seed(0)
    out = shim.bound_out_degree_sample(bound, data)
    r, c, _ = out.adj_t.coo()
    kept = torch.bincount(r, minlength=n)
    original = torch.bincount(row, minlength=n)
    assert torch.equal(kept[: n - 1], original[: n - 1].clamp(max=k))
    assert kept[n - 1] == 0
    edges = set(zip(row.tolist(), col.tolist()))
    assert all((a, b) in edges for a, b in zip(r.tolist(), c.tolist()))
    assert out.num_nodes == (n if (c == n - 1).any() else n - 1) == out.x.size(0) == out.y.size(0)


def test_the_page_is_the_report_of_the_stored_trials():
    script = _script("gap_reference")
    assert script.PAGE.read_text() == script.page_text(script._stored(script.RESULTS)), (
        "docs/benchmarks/gap_reference.md is stale: rerun python benchmarks/gap_reference.py page"
    )


def test_report_marks_another_implementations_rows_as_reference_code():
    from privgraph.experiments.report import Cell, Line, markdown_table

    lines = [
        Line("gap-edp", "gap", {1.0: Cell(0.9, 0.01, 2)}),
        Line("gap-edp (reference)", "gap", {1.0: Cell(0.91, 0.0, 1)}),
    ]
    rows = markdown_table(lines, [1.0], 100.0).splitlines()[2:]
    assert "| ours |" in rows[0] and "| reference code |" in rows[1] and "ours" not in rows[1]
