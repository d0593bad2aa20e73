"""Node-classification splits of a heterogeneous graph's target node type: the dataset's own
split, or the HeteDP authors' random split of the labelled nodes."""

from __future__ import annotations

import torch
from torch import Tensor
from torch_geometric.data import Data, HeteroData

from privgraph.data.hetero import hetedp_node_split
from privgraph.data.splits import stratified_split

HETERO_NC_SPLITS = ("random", "hetedp")  # the hetero-nc task's `split`: the dataset's own (default) or the authors'


def hetero_node_masks(data: HeteroData, target: str, seed: int, split: str = "random") -> tuple[Tensor, Tensor, Tensor]:
    """Node classification's (train, val, test) masks over ``target``.  ``split="random"`` (the
    default; the name is the spec field's default, kept so stored hashes stay): the dataset's own
    split — MAGNN's train/val/test, HGB's train with 20 % of it validating (seeded), synthetic
    graphs a seeded stratified 50/25/25.  ``split="hetedp"``: the HeteDP authors' random 20/10/70
    split of the labelled nodes (:func:`labelled_node_masks`), from ``seed``."""
    store = data[target]
    if split == "hetedp":
        return labelled_node_masks(data, target, seed)
    if split != "random":
        raise ValueError(f"unknown node-classification split {split!r}; choose from {HETERO_NC_SPLITS}")
    if "val_mask" in store:
        return store.train_mask, store.val_mask, store.test_mask
    if "train_mask" not in store:  # synthetic graphs: a seeded 50/25/25 split
        d = stratified_split(Data(y=store.y, num_nodes=store.num_nodes), 0.5, 0.25, seed=seed)
        return d.train_mask, d.val_mask, d.test_mask
    g = torch.Generator().manual_seed(seed)  # HGB: 20 % of the training nodes validate
    train_idx = store.train_mask.nonzero().flatten()
    train_idx = train_idx[torch.randperm(train_idx.numel(), generator=g)]
    cut = train_idx.numel() // 5
    val, train = torch.zeros_like(store.train_mask), torch.zeros_like(store.train_mask)
    val[train_idx[:cut]], train[train_idx[cut:]] = True, True
    return train, val, store.test_mask


def labelled_node_masks(data: HeteroData, target: str, seed: int, **ratios: float) -> tuple[Tensor, Tensor, Tensor]:
    """(train, val, test) masks over ``target``: :func:`~privgraph.data.hetero.hetedp_node_split` of
    its labelled nodes (``y >= 0``) from ``seed``, ``ratios`` its ``train_ratio`` / ``val_ratio``
    (default the authors' 20/10)."""
    store = data[target]
    labelled = (store.y >= 0).nonzero().flatten()
    masks = []
    for part in hetedp_node_split(labelled.numel(), seed, **ratios):
        mask = torch.zeros(store.num_nodes, dtype=torch.bool)
        mask[labelled[part]] = True
        masks.append(mask)
    return masks[0], masks[1], masks[2]


__all__ = ["HETERO_NC_SPLITS", "hetero_node_masks", "labelled_node_masks"]
