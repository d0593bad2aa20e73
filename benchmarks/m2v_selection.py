"""metapath2vec's node-classification choices (``privgraph.methods.hetedp.baselines``): the
validation micro-F1 behind :data:`~privgraph.methods.hetedp.baselines.M2V_METAPATHS` and
:data:`~privgraph.methods.hetedp.baselines.M2V_NC_EPOCHS` (docs/methods/hetedp.md).

A logistic regression on the training nodes of the ``nc`` task's split, scored on the
validation nodes; the test nodes are not read::

    PRIVGRAPH_DATA=../shared/datasets python benchmarks/m2v_selection.py acm            # every candidate metapath
    PRIVGRAPH_DATA=../shared/datasets python benchmarks/m2v_selection.py dblp-magnn --epochs 6   # per epoch
"""

from __future__ import annotations

import argparse
from collections.abc import Callable

import torch
from sklearn.linear_model import LogisticRegression
from torch import Tensor

from privgraph.data.hetero import METAPATHS, TASKS, load_hetero
from privgraph.data.hetero_splits import hetero_node_masks
from privgraph.methods.hetedp.baselines import (
    M2V_METAPATHS,
    metapath2vec_embeddings,
    metapath2vec_metapath,
    metapath2vec_node_embeddings,
)


def validation_accuracy(z: Tensor, y: Tensor, train: Tensor, val: Tensor) -> float:
    """Micro-F1 (accuracy) on ``val`` of a logistic regression fitted on ``train``."""
    clf = LogisticRegression(max_iter=3000).fit(z[train].numpy(), y[train].numpy())
    return float((torch.from_numpy(clf.predict(z[val].numpy())) == y[val]).float().mean())


def metapath_scores(dataset: str, seed: int = 0) -> dict[str, float]:
    """Validation micro-F1 for each of ``dataset``'s candidate metapaths (the choice of M2V_METAPATHS)."""
    data, target = load_hetero(dataset), TASKS[dataset].node_type
    train, val, _ = hetero_node_masks(data, target, seed)
    y, scores = data[target].y, {}
    for name, path in METAPATHS[dataset].items():
        z = metapath2vec_node_embeddings(data, dataset, target, seed, path)
        scores[name] = validation_accuracy(z, y, train, val)
        print(f"{dataset} {name}: validation micro-F1 {100 * scores[name]:.2f}", flush=True)
    return scores


def epoch_scores(dataset: str, seed: int = 0, epochs: int = 6) -> list[float]:
    """Validation micro-F1 after each of ``epochs`` epochs along the chosen metapath (the choice of M2V_NC_EPOCHS)."""
    data, target = load_hetero(dataset), TASKS[dataset].node_type
    train, val, _ = hetero_node_masks(data, target, seed)
    y, scores = data[target].y, []

    def score(epoch: int, embed: Callable[[str], Tensor]) -> None:
        scores.append(validation_accuracy(embed(target), y, train, val))
        print(
            f"{dataset} {M2V_METAPATHS.get(dataset, 'first metapath')} epoch {epoch}: validation micro-F1 "
            f"{100 * scores[-1]:.2f}",
            flush=True,
        )

    metapath2vec_embeddings(
        data.edge_index_dict,
        metapath2vec_metapath(dataset),
        {t: data[t].num_nodes for t in data.node_types},
        seed,
        epochs=epochs,
        on_epoch=score,
    )
    return scores


def main() -> None:
    parser = argparse.ArgumentParser(description="metapath2vec's validation micro-F1 (node classification)")
    parser.add_argument("dataset")
    parser.add_argument("seed", type=int, nargs="?", default=0)
    parser.add_argument(
        "--epochs",
        type=int,
        default=None,
        help="score the chosen metapath after each of this many epochs (default: every candidate "
        "metapath after M2V_NC_EPOCHS epochs)",
    )
    args = parser.parse_args()
    if args.epochs is None:
        metapath_scores(args.dataset, args.seed)
    else:
        epoch_scores(args.dataset, args.seed, args.epochs)


if __name__ == "__main__":
    main()
