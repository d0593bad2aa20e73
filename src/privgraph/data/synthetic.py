"""Synthetic graphs for tests and the demo (no download)."""

from __future__ import annotations

import numpy as np
import torch
from torch_geometric.data import Data, HeteroData
from torch_geometric.utils import to_undirected

from privgraph.data.splits import split_sensitive, stratified_split


def _sample_pairs(rng: np.random.Generator, count: int, population: int) -> np.ndarray:
    return rng.choice(population, size=count, replace=False) if count else np.empty(0, dtype=np.int64)


def unrank_lower_triangle(lin: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Map 0..N(N-1)/2-1 to pairs (i, j) with j < i: i(i-1)/2 <= lin < i(i+1)/2."""
    i = np.floor((1 + np.sqrt(1 + 8 * lin.astype(np.float64))) / 2).astype(np.int64)
    i = np.where(i * (i - 1) // 2 > lin, i - 1, i)  # correct floating-point rounding
    i = np.where((i + 1) * i // 2 <= lin, i + 1, i)
    return i, lin - i * (i - 1) // 2


def sbm_edges(block_sizes: list[int], p_in: float, p_out: float, rng: np.random.Generator) -> torch.Tensor:
    """Undirected SBM edges sampled per block pair: edge count ~ Binomial, then
    distinct pairs uniformly — time and memory O(n + |E|), no n×n matrix."""
    offsets = np.concatenate([[0], np.cumsum(block_sizes)])
    rows, cols = [], []
    for a, na in enumerate(block_sizes):
        for b in range(a, len(block_sizes)):
            nb = block_sizes[b]
            p = p_in if a == b else p_out
            if a == b:
                pairs = na * (na - 1) // 2
                k = rng.binomial(pairs, p)
                lin = _sample_pairs(rng, k, pairs)
                r, c = unrank_lower_triangle(lin)
            else:
                k = rng.binomial(na * nb, p)
                lin = _sample_pairs(rng, k, na * nb)
                r, c = lin // nb, lin % nb
            rows.append(r + offsets[a])
            cols.append(c + offsets[b])
    ei = torch.from_numpy(np.stack([np.concatenate(rows), np.concatenate(cols)])).long()
    return to_undirected(ei, num_nodes=int(offsets[-1]))


def block_probabilities(num_nodes: int, num_blocks: int, avg_degree: float, homophily: float) -> tuple[float, float]:
    """(p_in, p_out) so that a node's expected degree is ``avg_degree`` with a ``homophily``
    share inside its block (blocks of about equal size)."""
    size = num_nodes / num_blocks
    p_in = min(1.0, homophily * avg_degree / max(size - 1, 1))
    p_out = min(1.0, (1 - homophily) * avg_degree / max(num_nodes - size, 1))
    return p_in, p_out


def sbm_graph(
    num_nodes: int = 2000,
    num_classes: int = 4,
    num_features: int = 200,
    avg_degree: float = 8.0,
    homophily: float = 0.8,
    feature_signal: float = 0.25,
    base_rate: float = 0.05,
    seed: int = 0,
    train_ratio: float = 0.5,
    val_ratio: float = 0.25,
) -> Data:
    """A stochastic-block-model graph with class-correlated binary features.

    Classes are the blocks; a fraction ``homophily`` of each node's expected
    degree falls inside its block.  Each class owns a random set of "topic"
    features switched on with probability ``base_rate + feature_signal``,
    others with ``base_rate`` — like bag-of-words citation features.
    """
    if num_classes < 2 or num_nodes < 2 * num_classes:
        raise ValueError("need num_classes >= 2 and at least two nodes per class")
    if not 0 <= homophily <= 1:
        raise ValueError("homophily must lie in [0, 1]")
    rng = np.random.default_rng(seed)
    sizes = [num_nodes // num_classes + (1 if c < num_nodes % num_classes else 0) for c in range(num_classes)]
    p_in, p_out = block_probabilities(num_nodes, num_classes, avg_degree, homophily)
    edge_index = sbm_edges(sizes, p_in, p_out, rng)
    y = torch.from_numpy(np.repeat(np.arange(num_classes), sizes)).long()
    topic = rng.random((num_classes, num_features)) < 1.0 / num_classes
    probs = base_rate + feature_signal * topic[y.numpy()]
    x = torch.from_numpy((rng.random((num_nodes, num_features)) < probs).astype(np.float32))
    data = Data(x=x, edge_index=edge_index, y=y, num_nodes=num_nodes)
    data.name = "SBM"
    data.feature_domain = (0.0, 1.0)
    data.num_classes = num_classes  # the public label set: a parameter of the generator
    return stratified_split(data, train_ratio, val_ratio, seed=seed)


def sensitive_sbm_graph(
    num_nodes: int = 600,
    num_features: int = 16,
    planted_features: int = 4,
    attribute_signal: float = 2.0,
    proxy_agreement: float = 0.9,
    label_signal: float = 1.0,
    avg_degree: float = 8.0,
    homophily: float = 0.8,
    sensitive_rate: float = 0.4,
    seed: int = 0,
    private_ratio: float = 0.7,
) -> Data:
    """A two-class SBM whose nodes carry a binary sensitive attribute ``sens``
    planted in the features (PPCVGAE tests and the CLI default).

    ``y ~ Bernoulli(1/2)`` and ``sens ~ Bernoulli(sensitive_rate)``
    independently.  A binary *proxy* ``c`` agrees with ``sens`` with
    probability ``proxy_agreement`` (like marital status and gender in German
    credit).  The SBM's four blocks are the (y, c) pairs — edges follow the
    label and the proxy, as in the similarity graphs of the credit datasets.
    Features are Gaussian: the first ``planted_features`` columns have mean
    ``attribute_signal·c``, the next ``planted_features`` mean
    ``label_signal·y``, the rest are noise.  So s is predictable from X and A
    (through c), useless for the utility task, and c is not a function of s:
    an autoencoder must encode c, and can do so with or without revealing s.
    70 % private nodes and a 50/30/20 split as
    :func:`~privgraph.data.sensitive.load_sensitive`.
    """
    if num_features < 2 * planted_features or planted_features < 1:
        raise ValueError("need planted_features >= 1 and num_features >= 2·planted_features")
    if not 0.0 < sensitive_rate < 1.0:
        raise ValueError(f"sensitive_rate must lie in (0, 1), got {sensitive_rate}")
    if not 0.5 <= proxy_agreement <= 1.0:
        raise ValueError(f"proxy_agreement must lie in [0.5, 1], got {proxy_agreement}")
    rng = np.random.default_rng(seed)
    y = (rng.random(num_nodes) < 0.5).astype(np.int64)
    sens = (rng.random(num_nodes) < sensitive_rate).astype(np.int64)
    proxy = np.where(rng.random(num_nodes) < proxy_agreement, sens, 1 - sens)
    group = 2 * y + proxy  # the blocks: (y, c) — edges follow the label and the proxy, as similarity graphs do
    order = np.argsort(group, kind="stable")
    sizes = np.bincount(group, minlength=4)
    p_in, p_out = block_probabilities(num_nodes, 4, avg_degree, homophily)
    edge_index = torch.from_numpy(order)[sbm_edges([int(v) for v in sizes], p_in, p_out, rng)]
    x = rng.standard_normal((num_nodes, num_features))
    x[:, :planted_features] += attribute_signal * proxy[:, None]
    x[:, planted_features : 2 * planted_features] += label_signal * y[:, None]
    data = Data(x=torch.from_numpy(x).float(), edge_index=edge_index, y=torch.from_numpy(y).long(), num_nodes=num_nodes)
    data.num_classes = 2  # a binary label by construction (the public label set)
    data.sens = torch.from_numpy(sens)
    data.name = "SBM (planted attribute)"
    data.sensitive_name = "planted"
    return split_sensitive(data, seed, private_ratio)


def hetero_sbm_graph(
    num_papers: int = 300,
    num_authors: int = 200,
    num_subjects: int = 6,
    num_classes: int = 3,
    num_features: int = 32,
    authors_per_paper: int = 3,
    homophily: float = 0.8,
    seed: int = 0,
) -> HeteroData:
    """A small ACM-like heterogeneous graph for tests: papers (labelled, features
    correlated with the class), authors and subjects, with both directions of
    paper–author and paper–subject.  Each author and subject has a home class; a
    paper picks its authors and its subject from its own class with probability
    ``homophily``."""
    rng = np.random.default_rng(seed)
    y = rng.integers(0, num_classes, num_papers)
    author_class = rng.integers(0, num_classes, num_authors)
    subject_class = np.arange(num_subjects) % num_classes
    topic = rng.random((num_classes, num_features)) < 0.3
    x = (rng.random((num_papers, num_features)) < 0.05 + 0.3 * topic[y]).astype(np.float32)
    x_author = (rng.random((num_authors, num_features)) < 0.05 + 0.3 * topic[author_class]).astype(np.float32)

    def pick(home: np.ndarray, cls: int) -> int:
        pool = np.flatnonzero(home == cls) if rng.random() < homophily else np.arange(home.size)
        return int(rng.choice(pool if pool.size else np.arange(home.size)))

    pa = sorted({(p, pick(author_class, y[p])) for p in range(num_papers) for _ in range(authors_per_paper)})
    ps = [(p, pick(subject_class, y[p])) for p in range(num_papers)]
    data = HeteroData()
    data["paper"].x, data["paper"].y = torch.from_numpy(x), torch.from_numpy(y).long()
    data["author"].x = torch.from_numpy(x_author)
    data["subject"].num_nodes = num_subjects
    for pairs, other in ((pa, "author"), (ps, "subject")):
        ei = torch.tensor(pairs, dtype=torch.long).T.contiguous()
        data["paper", "to", other].edge_index = ei
        data[other, "to", "paper"].edge_index = ei.flip(0).contiguous()
    data.name = "hetero SBM"
    return data
