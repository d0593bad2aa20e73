"""Node splits: seeded stratified random splits (the papers' 50/25/25)."""

from __future__ import annotations

import torch
from torch_geometric.data import Data


def stratified_split(data: Data, train_ratio: float = 0.5, val_ratio: float = 0.25, seed: int = 0) -> Data:
    """Per class, shuffle the nodes and give ``train_ratio`` to training,
    ``val_ratio`` to validation and the rest to test.  Sets
    ``train_mask``/``val_mask``/``test_mask`` in place and returns ``data``.
    Nodes labelled −1 (unlabelled) are in no split.
    """
    if not (0 < train_ratio < 1 and 0 <= val_ratio < 1 and train_ratio + val_ratio < 1):
        raise ValueError(
            f"need 0 < train_ratio, 0 <= val_ratio and train_ratio + val_ratio < 1, got {train_ratio}, {val_ratio}"
        )
    y = data.y
    n = y.numel()
    g = torch.Generator().manual_seed(int(seed))
    train = torch.zeros(n, dtype=torch.bool)
    val = torch.zeros(n, dtype=torch.bool)
    for c in torch.unique(y[y >= 0]):
        idx = (y == c).nonzero().flatten()
        idx = idx[torch.randperm(idx.numel(), generator=g)]
        n_train = int(round(train_ratio * idx.numel()))
        n_val = int(round(val_ratio * idx.numel()))
        train[idx[:n_train]] = True
        val[idx[n_train : n_train + n_val]] = True
    data.train_mask, data.val_mask = train, val
    data.test_mask = (y >= 0) & ~(train | val)
    return data
