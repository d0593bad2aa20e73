"""Node classification beyond one machine's memory: GAP-EDP, GAP-NDP, LPGNN and Blink-Hard on an
:class:`~privgraph.data.outofcore.OutOfCoreGraph` (features and adjacency in files), trained in mini-batches.

Each pipeline is its method's release and training, with the same mechanism, calibration and guarantee
(the registered method computes σ, δ and the guarantee; only the data layout changes):

* **GAP-EDP** (:func:`gap_edp`): the encoder trained on the training nodes' feature rows; x⁰ = its normalised
  embedding of every node, written a row block at a time; hop k: x^k = normalize(Aᵀx^{k−1} + N(0, σ²Δ²)) by
  :func:`~privgraph.data.outofcore.propagate` — the noise is drawn per entry of every row, the same σΔ as the
  full-batch :func:`~privgraph.methods.gap.perturbed_aggregation` (Algorithm 1): the guarantee is unchanged;
  then the multi-MLP classifier, node-wise, on the training rows of [x⁰ … x^K].  Everything after the noise is
  post-processing, so mini-batching the classifier changes no guarantee.
* **GAP-NDP** (:func:`gap_ndp`): the registered :class:`~privgraph.methods.gap.GAPNode`'s release with the
  tables in files: the degree check on the CSR's out-degrees (refused above D, or the authors' sampling with
  ``over_bound="sample"``, ε = ∞), the encoder and the classifier by the same DP-SGD
  (:func:`~privgraph.train.dpsgd.train_rows_dpsgd`: Poisson batches of rate q = B/N over the training rows,
  which it gathers from the tables a batch at a time), the same hops with noise σ√D on every entry; σ, δ, the
  steps and the guarantee are the registered method's (its ``calibrate``, ``parts`` and ``guarantee``).
* **LPGNN** (:func:`lpgnn`): multi-bit reports (Algorithm 1) a row block at a time (each node's report is
  drawn from its own row alone: the ε-LDP per node is unchanged), rectified; KProp (Algorithm 2, D^-1/2 A D^-1/2
  without self-loops) K times over the table; then LPGNN's model (linear UPDATE, ReLU, the GCN layer) on
  batches of targets with their exact one-hop neighbourhood (the GCN layer with self-loops, as PyG's
  ``GCNConv``): the same model and weights as the full-batch :class:`~privgraph.nn.models.NodeClassifier`.
* **Blink-Hard** (:func:`blink_hard`): the client's randomized response and the server's MLE and P > 0.5
  graph (:class:`~privgraph.methods.blink.method.Blink`, already streaming), then the two-layer GCN trained on
  batches of targets with their exact two-hop neighbourhood (:class:`BatchGCN`: every neighbour, not sampled).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F
from torch import Tensor, nn
from torch_geometric.nn import GCNConv

from privgraph.accounting import PrivacyGuarantee
from privgraph.data.outofcore import (
    CSRGraph,
    NodeTable,
    OutOfCoreGraph,
    concat_rows,
    csr_from_edge_index,
    normalize_rows,
    propagate,
)
from privgraph.input_rules import declared_domain
from privgraph.mechanisms import RandomSource, get_feature_mechanism
from privgraph.mechanisms.aggregation import bound_out_degree
from privgraph.mechanisms.csr_sum import csr_adjacency, csr_sum
from privgraph.mechanisms.randomness import integers
from privgraph.methods.base import Hyperparameters
from privgraph.methods.gap import GAPEdge, GAPNode, GAPNodeParams, GAPParams
from privgraph.methods.node_domain import refusal
from privgraph.nn.models import KPROP_AGGREGATOR, NodeClassifier
from privgraph.train.distributed import DDPConfig, train_ddp
from privgraph.train.dpsgd import train_rows_dpsgd
from privgraph.train.minibatch import MiniBatchResult, evaluate, row_forward, train_minibatch

KPROP_NORM = {"gcn": "gcn", "mean": "mean"}  # KProp's aggregator → propagate's norm


@dataclass
class OutOfCoreRun:
    """A pipeline's accuracies, guarantee, details and the seconds of each stage."""

    test_accuracy: float
    val_accuracy: float
    guarantee: PrivacyGuarantee
    details: dict[str, Any] = field(default_factory=dict)
    stages: dict[str, float] = field(default_factory=dict)
    model: nn.Module | None = None


def _split(g: OutOfCoreGraph) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    return np.flatnonzero(g.train_mask), np.flatnonzero(g.val_mask), np.flatnonzero(g.test_mask)


def _accuracies(
    model: nn.Module, rows_of, g: OutOfCoreGraph, masks: tuple[np.ndarray, ...], block_rows: int = 2**18
) -> list[float]:
    """Accuracy on each node mask of ``masks`` (nan: an empty one), the node-wise ``model`` (eval mode: each
    row's output its own) reading ``rows_of(start, stop)`` a row block at a time, once for all the masks."""
    model.eval()
    correct, total = [0] * len(masks), [0] * len(masks)
    with torch.no_grad():
        for start in range(0, g.num_nodes, block_rows):
            stop = min(g.num_nodes, start + block_rows)
            blocks = [m[start:stop] for m in masks]
            union = np.logical_or.reduce(blocks)
            if not union.any():
                continue
            predicted = model(torch.from_numpy(rows_of(start, stop)[union])).argmax(-1).numpy()
            labels = g.y[start:stop][union]
            for i, block in enumerate(blocks):
                chosen = block[union]
                correct[i] += int((predicted[chosen] == labels[chosen]).sum())
                total[i] += int(chosen.sum())
    return [c / t if t else float("nan") for c, t in zip(correct, total, strict=True)]


def gap_edp(
    g: OutOfCoreGraph,
    epsilon: float | None,
    rng: RandomSource,
    seed: int = 0,
    batch_size: int = 1024,
    params: GAPParams | None = None,
    processes: int = 1,
    **values: Any,
) -> OutOfCoreRun:
    """GAP-EDP (module docstring) out of core: the hop tables in ``g.directory``, the encoder and the classifier
    trained on batches of ``batch_size`` training nodes (``params``/``values``: :class:`GAPParams`).  With
    ``processes`` > 1 the classifier is trained data-parallel (:func:`~privgraph.train.distributed.train_ddp`:
    each process reads its partition of the training rows; the best validation epoch kept)."""
    method = GAPEdge(params, **values)
    p: GAPParams = method.params  # type: ignore[assignment]
    stages: dict[str, float] = {}
    t = time.perf_counter()
    sigma, delta = method.calibrate(g, epsilon)  # reads num_nodes only (the auto δ)
    torch_seed = int(integers(2**31, (1,), rng)[0])  # the modules' initialisation, drawn as GAP's release does
    train, val, _ = _split(g)
    sel = np.sort(np.concatenate([train, val]))
    classes = g.num_classes
    details: dict[str, Any] = {}
    if p.encoder_layers and p.encoder_epochs:
        torch.manual_seed(torch_seed)
        encoder = p.encoder(g.x.num_cols, classes)
        res = train_minibatch(
            encoder, row_forward(g.x.select(g.train_mask | g.val_mask), sel), g.y, train, val,
            lr=p.lr, weight_decay=p.weight_decay, epochs=p.encoder_epochs, batch_size=batch_size, seed=seed,
        )  # fmt: skip
        details.update(encoder_val_accuracy=res.val_accuracy, encoder_best_epoch=res.best_epoch)
        encoder.eval()
        x0 = NodeTable.create(g.directory / "gap-x0.f32", g.num_nodes, p.hidden)
        with torch.no_grad():
            for start, rows in g.x.iter_rows():
                x0.write_rows(start, encoder.embed(torch.from_numpy(rows)))
    else:
        x0 = normalize_rows(g.x, NodeTable.create(g.directory / "gap-x0.f32", *g.x.shape, g.x.col_block))
    stages["encoder"] = time.perf_counter() - t
    t = time.perf_counter()
    noise_std = sigma * method.sensitivity()
    tables = [x0]
    for k in range(1, p.hops + 1):
        s = NodeTable.create(g.directory / f"gap-x{k}.f32", *x0.shape, x0.col_block)
        tables.append(normalize_rows(propagate(g.graph, tables[-1], s, "sum", noise_std, rng)))
    stages["aggregation"] = time.perf_counter() - t
    t = time.perf_counter()
    torch.manual_seed(seed)
    net = p.classifier(x0.num_cols, classes)
    rows = np.concatenate([tb.select(g.train_mask | g.val_mask) for tb in tables], axis=1)
    if processes > 1:  # data-parallel over partitions of the training rows
        cfg = DDPConfig(p.epochs, batch_size, p.lr, p.weight_decay, seed)
        factory = partial(p.classifier, x0.num_cols, classes)
        net.load_state_dict(train_ddp(factory, tables, train, g.y, cfg, processes, val_nodes=val))
        net.eval()
        res = MiniBatchResult(
            evaluate(net, row_forward(rows, sel), val, g.y)[0], 0, p.epochs, 0, 0.0
        )  # epoch: not kept
    else:
        res = train_minibatch(
            net, row_forward(rows, sel), g.y, train, val,
            lr=p.lr, weight_decay=p.weight_decay, epochs=p.epochs, batch_size=batch_size, seed=seed,
        )  # fmt: skip
    del rows
    (test,) = _accuracies(net, lambda a, b: concat_rows(tables, a, b), g, (g.test_mask,))
    stages["classifier"] = time.perf_counter() - t
    details.update(
        noise_multiplier=sigma, noise_std=noise_std, delta=delta, best_epoch=res.best_epoch, steps=res.steps,
        batch_size=batch_size,
    )  # fmt: skip
    return OutOfCoreRun(test, res.val_accuracy, method.guarantee(epsilon, sigma, delta), details, stages, net)


def _within_degree_bound(method: GAPNode, g: OutOfCoreGraph) -> bool:
    """:meth:`GAPNode.check_domain` on the CSR: whether every out-degree (the sources' counts in the
    in-adjacency) is ≤ D; above it refused with the registered message (``over_bound="refuse"``) or False."""
    p: GAPNodeParams = method.params  # type: ignore[assignment]
    degrees = g.graph.out_degrees()
    if degrees.size == 0 or int(degrees.max()) <= p.max_degree:
        return True
    if p.over_bound == "refuse":
        raise refusal(method.name, p.max_degree)
    return False


def gap_ndp(
    g: OutOfCoreGraph,
    epsilon: float | None,
    rng: RandomSource,
    seed: int = 0,
    params: GAPNodeParams | None = None,
    **values: Any,
) -> OutOfCoreRun:
    """GAP-NDP (module docstring) out of core, :meth:`GAPNode.release`'s steps in its order and with its draws
    from ``rng`` (``params``/``values``: :class:`GAPNodeParams`; ``num_train``, the public N, is required with
    ε).  Within the bound the hops read the graph itself; with ``over_bound="sample"`` above it the edges are
    read into memory once and bounded by the registered :func:`~privgraph.mechanisms.aggregation.bound_out_degree`
    (no guarantee).  The classifier (last DP-SGD iterate) is evaluated on the release's own tables a row block
    at a time; the registered ``fit`` re-aggregates with a fresh draw of the same noise instead (the same law).
    ``seed`` is not read: every draw comes from ``rng``, as in the registered release."""
    method = GAPNode(params, **values)
    p: GAPNodeParams = method.params  # type: ignore[assignment]
    if not method.enforced:  # a refusal by a parameter, never by the data
        raise ValueError(
            "out-of-core gap-ndp runs degree_cap=enforced only (restricted node-DP, a cap the owner enforces); "
            "the default soft cap with its PTR test (node-DP on every graph) runs in memory"
        )
    if epsilon is not None:
        method.check_epsilon_given(epsilon)
    stages: dict[str, float] = {}
    t = time.perf_counter()
    inside = _within_degree_bound(method, g)  # before anything is drawn
    method.planned_train(g, epsilon is not None)  # refused without the public N
    sigma, delta = method.calibrate(g, epsilon)  # reads the public num_train only
    torch_seed = int(integers(2**31, (1,), rng)[0])  # the modules' initialisation, as the registered release
    y_train = torch.from_numpy(g.y[g.train_mask])
    dpsgd = partial(
        train_rows_dpsgd, batch_size=p.batch_size, lr=p.lr, weight_decay=p.weight_decay, clip=p.clip,
        noise_multiplier=sigma, rng=rng, planned=method.planned_train(g, sigma > 0),
    )  # fmt: skip
    classes = g.num_classes

    def rows_of(tables: list[NodeTable]) -> Callable[[Tensor], Tensor]:
        """DP-SGD's chosen training rows of ``tables`` side by side, gathered from copies of the training rows
        (:meth:`NodeTable.subset`: a step's gather maps pages of N rows, not of the n-row tables)."""
        kept = [tb.subset(g.train_mask, tb.path.with_suffix(".train.f32")) for tb in tables]
        return lambda i: torch.from_numpy(np.concatenate([tb.gather(i.numpy()) for tb in kept], 1))

    if p.encoder_layers and p.encoder_epochs:
        torch.manual_seed(torch_seed)
        encoder = p.encoder(g.x.num_cols, classes)
        dpsgd(encoder, rows_of([g.x]), y_train, epochs=p.encoder_epochs)
        x0 = NodeTable.create(g.directory / "gap-x0.f32", g.num_nodes, p.hidden)
        with torch.no_grad():
            for start, rows in g.x.iter_rows():
                x0.write_rows(start, encoder.embed(torch.from_numpy(rows)))
    else:  # the raw features, normalised by the aggregation's first step
        x0 = normalize_rows(g.x, NodeTable.create(g.directory / "gap-x0.f32", *g.x.shape, g.x.col_block))
    stages["encoder"] = time.perf_counter() - t
    t = time.perf_counter()
    graph = g.graph
    if not inside:  # over_bound="sample": the authors' per-node sampling, the registered function
        edges = bound_out_degree(g.graph.edge_index(), g.num_nodes, p.max_degree, rng)
        graph = csr_from_edge_index(edges, g.num_nodes, g.directory / "gap-bounded")
        del edges
    noise_std = method.aggregation(sigma).noise_std  # σ·√D
    tables = [x0]
    for k in range(1, p.hops + 1):
        s = NodeTable.create(g.directory / f"gap-x{k}.f32", *x0.shape, x0.col_block)
        tables.append(normalize_rows(propagate(graph, tables[-1], s, "sum", noise_std, rng)))
    stages["aggregation"] = time.perf_counter() - t
    t = time.perf_counter()
    torch.manual_seed(torch_seed + 1)
    net = p.classifier(x0.num_cols, classes)
    taken = dpsgd(net, rows_of(tables), y_train, epochs=p.epochs)
    test, val = _accuracies(net, lambda a, b: concat_rows(tables, a, b), g, (g.test_mask, g.val_mask))
    stages["classifier"] = time.perf_counter() - t
    details: dict[str, Any] = {
        "noise_multiplier": sigma, "noise_std": noise_std, "delta": delta, "seed": torch_seed,
        "steps": [n for _, n in method.parts(g)] if sigma > 0 else None, "classifier_steps": taken,
        "batch_size": p.batch_size, "num_train": p.num_train, "within_bound": inside, "over_bound": p.over_bound,
    }  # fmt: skip
    return OutOfCoreRun(test, val, method.guarantee(epsilon, sigma, delta, inside), details, stages, net)


class BatchGCN:
    """A two-layer :class:`~privgraph.nn.models.NodeClassifier` (GCN layers, or LPGNN's linear UPDATE first) on a
    batch of target nodes, exactly: each GCN layer (``CachedGCNConv``, PyG's ``GCNConv``) aggregates its
    targets' whole in-neighbourhood with self-loops, weights (d̂_u d̂_v)^-1/2, d̂ = degree + 1 (``gcn_norm``),
    so a batch reads the targets' one-hop (one GCN layer) or two-hop (two) neighbourhood rows of ``x``."""

    def __init__(self, graph: CSRGraph, x: NodeTable):
        self.graph, self.x = graph, x
        self.dhat = (graph.in_degrees() + 1).astype(np.float32) ** -0.5

    def hop(self, targets: np.ndarray) -> tuple[np.ndarray, Tensor]:
        """(sources, the targets × sources CSR of the weights, self-loops in)."""
        pos, src = self.graph.neighbours(targets)
        pos = np.concatenate([pos, np.arange(targets.shape[0])])
        src = np.concatenate([src, targets])
        uniq, inv = np.unique(src, return_inverse=True)
        w = torch.from_numpy(self.dhat[src] * self.dhat[targets[pos]])
        edges = torch.from_numpy(np.stack([inv, pos]))
        return uniq, csr_adjacency(edges, targets.shape[0], edge_weights=w, num_sources=uniq.shape[0])

    @staticmethod
    def conv(layer: nn.Module, h: Tensor, hop: tuple[np.ndarray, Tensor]) -> Tensor:
        """The GCN layer on the batch: one CSR product of the weights with lin(h) (the gather and ``index_add_``
        it replaced, to float32 rounding)."""
        out = csr_sum(hop[1], layer.lin(h))  # type: ignore[operator]
        return out if layer.bias is None else out + layer.bias  # type: ignore[operator]

    def __call__(self, model: nn.Module, nodes: np.ndarray) -> Tensor:
        assert isinstance(model, NodeClassifier)
        agg1, agg2 = (isinstance(layer, GCNConv) for layer in (model.layer1, model.layer2))
        hop2 = self.hop(nodes) if agg2 else None
        need = hop2[0] if hop2 is not None else nodes
        hop1 = self.hop(need) if agg1 else None
        x = torch.from_numpy(self.x.gather(hop1[0] if hop1 is not None else need))
        h = self.conv(model.layer1, x, hop1) if hop1 is not None else model.layer1(x)
        h = F.dropout(F.relu(h), model.dropout, model.training)
        return self.conv(model.layer2, h, hop2) if hop2 is not None else model.layer2(h)


def lpgnn(
    g: OutOfCoreGraph,
    epsilon: float,
    rng: RandomSource,
    seed: int = 0,
    batch_size: int = 1024,
    hp: Hyperparameters | None = None,
    model: str = "gcn",
    mechanism: str = "multibit",
) -> OutOfCoreRun:
    """LPGNN (module docstring) out of core with hyperparameters ``hp`` (default: the full-batch defaults)."""
    if model not in ("gcn", "mlp"):
        raise ValueError(f"the mini-batch LPGNN supports model gcn or mlp, got {model!r}")
    hp = hp or Hyperparameters()
    stages: dict[str, float] = {}
    t = time.perf_counter()
    mech = get_feature_mechanism(mechanism, epsilon, domain=declared_domain("lpgnn", g, source="the out-of-core graph"))
    xr = NodeTable.create(g.directory / "lpgnn-x.f32", *g.x.shape, g.x.col_block)
    for start, rows in g.x.iter_rows():
        xr.write_rows(start, mech.privatize(torch.from_numpy(rows), rng))
    guarantee = mech.guarantee()
    stages["release"] = time.perf_counter() - t
    t = time.perf_counter()
    norm = KPROP_NORM[KPROP_AGGREGATOR[model]]
    spare = NodeTable.create(g.directory / "lpgnn-z.f32", *xr.shape, xr.col_block)
    z = xr
    for _ in range(hp.kprop_steps):
        z, spare = propagate(g.graph, z, spare, norm), z
    stages["kprop"] = time.perf_counter() - t
    t = time.perf_counter()
    torch.manual_seed(seed)
    net = NodeClassifier(model, xr.num_cols, hp.hidden, g.num_classes, hp.dropout, kprop_steps=max(1, hp.kprop_steps))
    forward = BatchGCN(g.graph, z)
    train, val, test = _split(g)
    res = train_minibatch(
        net, forward, g.y, train, val, lr=hp.lr, weight_decay=hp.weight_decay, epochs=hp.epochs,
        batch_size=batch_size, seed=seed, patience=hp.patience, eval_batch=8192,
    )  # fmt: skip
    test_acc, _ = evaluate(net, forward, test, g.y, 8192)
    stages["train"] = time.perf_counter() - t
    details = {"mechanism": mech.name, "best_epoch": res.best_epoch, "steps": res.steps, "batch_size": batch_size}
    return OutOfCoreRun(test_acc, res.val_accuracy, guarantee, details, stages, net)


def blink_hard(
    g: OutOfCoreGraph,
    epsilon: float,
    rng: RandomSource,
    seed: int = 0,
    batch_size: int = 1024,
    hp: Hyperparameters | None = None,
    degree_share: float = 0.1,
) -> OutOfCoreRun:
    """Blink-Hard (module docstring): the release of :class:`~privgraph.methods.blink.method.Blink` on the
    graph's edges (the reports and the MLE hold O(n + m) numbers; the edges are read into memory for it), then
    the two-layer GCN trained on batches of targets with their exact two-hop neighbourhood (:class:`BatchGCN`;
    PyG's ``NeighborLoader`` needs pyg-lib or torch-sparse, absent here)."""
    from torch_geometric.data import Data

    from privgraph.data.validation import validate_graph
    from privgraph.methods.blink.method import Blink

    hp = hp or Hyperparameters()
    stages: dict[str, float] = {}
    t = time.perf_counter()
    n = g.num_nodes
    # the registered release path's check: every link both ways, no self-loop, duplicates coalesced (Blink's unit
    # is a node's adjacency list of an undirected graph)
    data, _ = validate_graph(Data(edge_index=g.graph.edge_index(), num_nodes=n), undirected=True)
    release = Blink(variant="hard", degree_share=degree_share).release(data, epsilon, rng)
    del data
    stages["release"] = time.perf_counter() - t
    t = time.perf_counter()
    if release.edge_index is None:
        raise ValueError("Blink-Hard released no edge list")
    released = csr_from_edge_index(release.edge_index, n, g.directory / "blink")
    torch.manual_seed(seed)
    net = NodeClassifier("gcn", g.x.num_cols, hp.hidden, g.num_classes, hp.dropout)
    forward = BatchGCN(released, g.x)
    train, val, test = _split(g)
    res = train_minibatch(
        net, forward, g.y, train, val, lr=hp.lr, weight_decay=hp.weight_decay, epochs=hp.epochs,
        batch_size=batch_size, seed=seed, patience=hp.patience, eval_batch=8192,
    )  # fmt: skip
    test_acc, _ = evaluate(net, forward, test, g.y, 8192)
    stages["train"] = time.perf_counter() - t
    details = {**release.details, "best_epoch": res.best_epoch, "steps": res.steps, "batch_size": batch_size}
    return OutOfCoreRun(test_acc, res.val_accuracy, release.guarantee, details, stages, net)


PIPELINES = {"gap-edp": gap_edp, "gap-ndp": gap_ndp, "lpgnn": lpgnn, "blink-hard": blink_hard}

__all__ = ["PIPELINES", "BatchGCN", "OutOfCoreRun", "blink_hard", "gap_edp", "gap_ndp", "lpgnn"]
