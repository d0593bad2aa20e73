"""Node splits: seeded stratified random splits (the papers' 50/25/25), the split added to a labelled graph read
without one (:func:`add_missing_split`), and the private nodes of a graph with a sensitive attribute
(:func:`split_sensitive`)."""

from __future__ import annotations

import numpy as np
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


SPLIT_MASKS = ("train_mask", "val_mask", "test_mask")


def split_note(seed: int) -> str:
    """What :func:`add_missing_split` says it did (no count: the seed and the ratios are public)."""
    return (
        f"no train/val/test split in the input: added a seeded stratified 50/25/25 split of the labelled nodes "
        f"(seed {int(seed)}, privgraph.data.stratified_split; give your own masks to keep yours)"
    )


def add_missing_split(data: Data, seed: int) -> str | None:
    """The one rule for a labelled graph read without a split, in Python (:func:`privgraph.data.read_graph`'s
    ``split_seed``) and on the command line (``--seed``): ``data`` with ``y`` and none of the three masks gets
    :func:`stratified_split`'s 50/25/25 split of ``seed``, in place, and the note that says so is returned; a
    graph with all three masks, or without labels, is left as given (None).  Some masks without the others are
    refused (``ValueError``)."""
    present = [name for name in SPLIT_MASKS if name in data]
    if getattr(data, "y", None) is None or len(present) == len(SPLIT_MASKS):
        return None
    if present:
        missing = [name for name in SPLIT_MASKS if name not in present]
        raise ValueError(
            f"the input has {', '.join(present)} but no {', '.join(missing)}: give all three masks, or none "
            "(a seeded stratified 50/25/25 split is then added)"
        )
    stratified_split(data, seed=seed)
    return split_note(seed)


def split_sensitive(
    data: Data, seed: int, private_ratio: float = 0.7, train_ratio: float = 0.5, val_ratio: float = 0.3
) -> Data:
    """Seeded private nodes (``private_mask``, a ``private_ratio`` share) and a
    stratified ``train/val/test`` split, in place; returns ``data``."""
    if not 0.0 < private_ratio < 1.0:
        raise ValueError(f"private_ratio must lie in (0, 1), got {private_ratio}")
    data = stratified_split(data, train_ratio, val_ratio, seed=seed)
    n = data.num_nodes
    gen = np.random.default_rng([seed, 70])
    private = np.zeros(n, dtype=bool)
    private[gen.permutation(n)[: int(round(private_ratio * n))]] = True
    data.private_mask = torch.from_numpy(private)
    return data
