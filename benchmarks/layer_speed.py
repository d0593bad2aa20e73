"""Speed of the two graph layers the issue-19 sweeps depend on, against what they replaced.

* ``gcn``: one training epoch (forward + backward) of a two-layer GCN with PyG's
  ``GCNConv(cached=True)`` against :class:`privgraph.nn.gcn.CachedGCNConv` (the same sums, CSR
  propagation), on a graph from ``$PRIVGRAPH_DATA`` (default: Recidivism, PPCVGAE's ``bail``).
* ``soft``: one training epoch of Blink-Soft's two-layer dense GCN over the posterior of a
  Blink release (Cora, ε = 1, δ = 0.9) with the posterior's row blocks kept
  (``max_cached_bytes`` default, 512 MiB) against recomputed on every use (``max_cached_bytes = 0``).

Median seconds per epoch over ``--epochs`` epochs after one warm-up, ``--threads`` torch threads::

    PRIVGRAPH_DATA=../shared/datasets python benchmarks/layer_speed.py gcn --dataset bail --threads 1
    PRIVGRAPH_DATA=../shared/datasets python benchmarks/layer_speed.py soft --threads 2
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable

import torch


def _median_epoch(step: Callable[[], None], epochs: int) -> float:
    step()  # warm-up: caches, allocator
    times = []
    for _ in range(epochs):
        start = time.perf_counter()
        step()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def _train_step(model: torch.nn.Module, forward: Callable[[], torch.Tensor]) -> Callable[[], None]:
    opt = torch.optim.Adam(model.parameters(), lr=0.01)

    def step() -> None:
        opt.zero_grad()
        forward().square().mean().backward()
        opt.step()

    return step


def gcn(dataset: str, epochs: int) -> dict[str, float]:
    from torch_geometric.nn import GCNConv

    from privgraph.data.sensitive import load_sensitive
    from privgraph.nn.gcn import CachedGCNConv

    data = load_sensitive(dataset)
    x, edge_index = data.x.float(), data.edge_index
    out = {"nodes": data.num_nodes, "edges": int(edge_index.shape[1])}
    for name, layer in (
        ("pyg_gcnconv_s", lambda i, o: GCNConv(i, o, cached=True)),
        ("cached_gcnconv_s", CachedGCNConv),
    ):
        torch.manual_seed(0)
        convs = torch.nn.ModuleList([layer(x.shape[1], 64), layer(64, 2)])
        out[name] = _median_epoch(
            _train_step(convs, lambda: convs[1](convs[0](x, edge_index).relu(), edge_index)), epochs
        )
    return out


def soft(epochs: int) -> dict[str, float]:
    from privgraph.data.datasets import load
    from privgraph.mechanisms import make_generator
    from privgraph.methods.blink import beta_mle, clip_degrees, link_ldp
    from privgraph.methods.blink.soft import PosteriorAdjacency
    from privgraph.nn.dense import BlockwiseGCNConv

    data = load("cora")
    n, x = data.num_nodes, data.x.float()
    eps, delta = 1.0, 0.9
    reports = link_ldp(data.edge_index, n, eps, delta, make_generator(0))
    beta = beta_mle(clip_degrees(reports.noisy_degrees, n), tol=1e-6).beta
    out = {"nodes": n}
    for name, limit in (("blocks_kept_s", PosteriorAdjacency.max_cached_bytes), ("blocks_recomputed_s", 0)):
        adjacency = PosteriorAdjacency(reports, beta)
        adjacency.max_cached_bytes = limit
        torch.manual_seed(0)
        convs = torch.nn.ModuleList([BlockwiseGCNConv(x.shape[1], 16), BlockwiseGCNConv(16, 7)])
        out[name] = _median_epoch(
            _train_step(convs, lambda: convs[1](convs[0](x, adjacency).relu(), adjacency)), epochs
        )
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("which", choices=("gcn", "soft"))
    parser.add_argument("--dataset", default="bail", help="gcn: a sensitive-attribute dataset (german, bail, …)")
    parser.add_argument("--epochs", type=int, default=10)
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    result = gcn(args.dataset, args.epochs) if args.which == "gcn" else soft(args.epochs)
    print({k: round(v, 4) if isinstance(v, float) else v for k, v in result.items()})


if __name__ == "__main__":
    main()
