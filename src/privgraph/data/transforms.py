"""Feature normalisation and feature replacements used by the baselines."""

from __future__ import annotations

import torch
from torch_geometric.data import Data
from torch_geometric.utils import degree, one_hot


def minmax_normalize(data: Data) -> Data:
    """Scale every feature to [0, 1] by its min and max; drop constant columns.

    Records ``data.feature_domain = (0.0, 1.0)`` and ``data.normalization``.
    Note for local DP: min and max are computed from all nodes' raw features,
    which a real untrusted server cannot see.  For a deployment the domain
    must be fixed in advance; for the published benchmarks (binary
    bag-of-words features) min/max are 0/1 anyway.
    """
    x = data.x if data.x.dtype == torch.float64 else data.x.to(torch.float32)  # float64 input: scaled in float64
    lo, hi = x.min(dim=0).values, x.max(dim=0).values
    keep = hi > lo
    x = (x[:, keep] - lo[keep]) / (hi[keep] - lo[keep])
    data.x = x.clamp_(0.0, 1.0).to(torch.float32)
    data.feature_domain = (0.0, 1.0)
    data.normalization = {
        "method": "per-feature min-max to [0, 1]",
        "dropped_constant_columns": int((~keep).sum()),
        "num_features_in": int(keep.numel()),
    }
    return data


def standardize_columns(x: torch.Tensor, unbiased: bool = False) -> torch.Tensor:
    """Each column centred and scaled to unit standard deviation (``unbiased``: the n − 1
    estimate; default n), constant columns → 0; floating dtypes kept, others made float32."""
    x = x if x.is_floating_point() else x.float()
    std = x.std(dim=0, unbiased=unbiased)
    return (x - x.mean(dim=0)) / torch.where(std > 0, std, torch.ones_like(std))


def one_hot_degree(edge_index: torch.Tensor, num_nodes: int, max_degree: int = 1000) -> torch.Tensor:
    """GCN+OHD: one-hot node (in-)degree, PyG's ``degree`` and ``one_hot`` (:func:`one_hot_counts`).

    Not PyG's ``OneHotDegree`` transform: its width is a ``max_degree`` fixed in advance and a
    larger degree is an error, while here the width is the graph's largest degree + 1 and degrees
    above ``max_degree`` share its column (a noisy released graph can have any degree), as the
    seeded results were computed."""
    return one_hot_counts(degree(edge_index[1], num_nodes, dtype=torch.long), max_degree)


def one_hot_counts(counts: torch.Tensor, max_count: int = 1000) -> torch.Tensor:
    """One-hot non-negative integer ``counts`` (e.g. degrees) capped at ``max_count``: float32
    [n, largest count + 1]."""
    counts = counts.long().clamp(0, max_count)
    width = int(counts.max()) + 1 if counts.numel() else 1
    return one_hot(counts, width, dtype=torch.float32)
