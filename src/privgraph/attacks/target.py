"""Targets: a model trained on a method's release exactly as the pipeline trains it, wrapped as
the :class:`~privgraph.attacks.base.Target` the attacks query."""

from __future__ import annotations

from typing import Any

from torch import nn
from torch_geometric.data import Data

from privgraph.attacks.base import Target
from privgraph.mechanisms import RandomSource, derive_seed, make_generator
from privgraph.methods import Hyperparameters, Method
from privgraph.methods.base import Release


def model_uses_graph(model: nn.Module) -> bool:
    """Whether the classifier's output depends on the graph (not an MLP without KProp)."""
    base = getattr(model, "base", model)  # Solitude's learned-adjacency wrapper
    return not (getattr(base, "model", None) == "mlp" and getattr(base, "kprop", None) is None)


def answering_graph(method: Method, release: Release, epsilon: float | None) -> str:
    """In words: which graph answers the target's queries."""
    own = method.answers(release, epsilon)
    if own is not None:
        return own
    if release.adjacency is not None or release.edge_index is not None:
        eps = "" if epsilon is None else f", ε={epsilon:g}"
        return f"the graph the server holds: {method.name}'s release{eps}"
    return "the input graph (the method does not privatize the links)"


def target_from_fit(
    method: Method,
    release: Release,
    data: Data,
    model: nn.Module,
    epsilon: float | None,
    shadow: Any = None,
    utility: dict[str, float] | None = None,
) -> Target:
    """The :class:`Target` of a classifier trained by :meth:`Method.fit` on ``release``."""
    return Target(
        method=method.name,
        truth=data,
        model=model,
        x=release.features(data),
        graph=release.graph(data),
        edge_weight=release.edge_weight,
        answers=answering_graph(method, release, epsilon),
        uses_graph=model_uses_graph(model),
        shadow=shadow,
        utility=dict(utility or {}),
    )


def embedding_target(
    method: str, truth: Data, embeddings: Any, epsilon: float | None, utility: dict[str, float] | None = None
) -> Target:
    """The :class:`Target` of a released embedding (no model: attribute and link-stealing attacks)."""
    noise = f"ε={epsilon:g}" if epsilon is not None else "without noise"
    return Target(
        method=method,
        truth=truth,
        embeddings=embeddings,
        answers=f"the released embeddings ({noise})",
        utility=dict(utility or {}),
    )


def train_target(
    method: Method,
    data: Data,
    epsilon: float | None,
    seed: int,
    rng: RandomSource | None = None,
    model: str | None = None,
    hp: Hyperparameters | None = None,
) -> Target:
    """Release ``data`` once with ``method`` (noise from ``rng``, default a generator seeded by
    ``seed``), train the method's classifier on it (initialisation ``seed``) and return the target.
    Its ``shadow`` trains the same method, ε, model and hyperparameters on an attacker's graph."""
    hp = hp or Hyperparameters()
    rng = rng if rng is not None else make_generator(derive_seed(seed, 1))
    release = method.release(data, epsilon, rng)
    result = method.fit(release, data, model or method.default_model, hp, seed)

    def shadow(aux: Data, shadow_seed: int) -> Target:
        return train_target(method, aux, epsilon, shadow_seed, model=model, hp=hp)

    return target_from_fit(method, release, data, result.model, epsilon, shadow, {"accuracy": result.test_accuracy})


__all__ = ["answering_graph", "embedding_target", "model_uses_graph", "target_from_fit", "train_target"]
