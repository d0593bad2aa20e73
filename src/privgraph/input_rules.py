"""A method's input rules, in one place, split into what the request alone decides and what needs the data.

:meth:`privgraph.methods.Method.check_input` applies them to a method class; the command line applies the same
functions to the catalogue's entry of the method (:mod:`privgraph.catalogue`: the same flags, without torch),
so that every rule whose answer is known from the options and the input file's kind refuses the request before
a single row is read.  This module imports nothing heavy.

The flags a method declares (class attributes of :class:`~privgraph.methods.Method`, copied into the catalogue):
``heterogeneous`` (takes a HeteroData), ``needs_features`` (its release reads ``data.x``), ``needs_domain`` (its
local feature mechanism needs a declared public feature domain: :func:`declared_domain`) and ``needs_private_edges`` (it
reads ``data.private_edge_mask``: the private edges are marked in the input or drawn at ``--private-ratio``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from privgraph.accounting.validation import check_domain

# how Python declares the features' domain, in the message that refuses a feature method without one
PYTHON_DOMAIN = "read_graph(..., domain=(lo, hi)) or data.feature_domain = (lo, hi)"


FLAGS = ("heterogeneous", "needs_features", "needs_domain", "needs_private_edges", "simple_graph")


def flags_of(method: Any) -> dict[str, bool]:
    """The rule flags of a method class (or instance) or of its catalogue entry (a dict)."""
    if isinstance(method, dict):
        return {name: bool(method.get(name, False)) for name in FLAGS}
    return {name: bool(getattr(method, name, False)) for name in FLAGS}


@dataclass(frozen=True)
class InputRequest:
    """What a request says about its input before any of it is read.  Each ``bool | None`` is True or False
    when the request decides it and None when only the data can tell.

    source: how the input is named in the messages (``edges.csv``).
    user_input: the user's own file (``--input``), not a registry dataset.
    features: the input carries node features (``--features`` given: True; an edge list without it: False).
    private_edges: the input marks its private edges (``--private-column``/``--private-edges``: True; an
        edge list without them whose first line names no ``private`` column, or a registry dataset: False).
    domain: a public feature domain is declared (``--domain``).
    private_ratio: ``--private-ratio``, or None.
    ratio_applies: the command draws private edges at ``--private-ratio`` (run, attack, release).
    """

    source: str = "the input"
    user_input: bool = False
    features: bool | None = None
    private_edges: bool | None = None
    domain: bool | None = None
    private_ratio: float | None = None
    ratio_applies: bool = False


def check_request(name: str, method: Any, request: InputRequest) -> None:
    """The rules the request alone decides (``method``: the class, an instance or its catalogue entry);
    ``ValueError`` with one line on the first that fails."""
    flags = flags_of(method)
    if flags["needs_features"] and not flags["heterogeneous"] and request.user_input and request.features is False:
        raise ValueError(features_message(name, request.source))
    if flags["needs_domain"] and request.user_input and request.domain is False:
        raise ValueError(domain_message(name, request.source))
    if flags["needs_private_edges"] and request.ratio_applies and request.private_ratio is None:
        if request.private_edges is False:
            raise ValueError(private_ratio_message(name, request.user_input))


def check_data(name: str, method: Any, data: Any, request: InputRequest | None = None) -> None:
    """The rules that need the data read (``data``: a PyG ``Data`` or ``HeteroData``); ``ValueError`` (a
    ``TypeError`` for the wrong kind of graph) with one line on the first that fails."""
    flags = flags_of(method)
    request = request or InputRequest()
    homogeneous = not hasattr(data, "node_types")
    if homogeneous == flags["heterogeneous"]:
        raise TypeError(
            f"{name} takes a {'HeteroData' if flags['heterogeneous'] else 'homogeneous graph (Data)'}, but "
            f"{request.source} holds a {type(data).__name__}"
        )
    if homogeneous and flags["needs_features"] and getattr(data, "x", None) is None:
        raise ValueError(features_message(name, request.source))
    if homogeneous and not data.num_nodes:
        raise ValueError(f"{name}: {request.source} has no nodes: there is nothing to release")
    if flags["needs_features"]:
        check_finite_features(data, request.source)
    if homogeneous and getattr(data, "edge_index", None) is None:
        raise ValueError(f"{name} needs data.edge_index")
    if flags["needs_domain"] and homogeneous:
        declared_domain(name, data, source=request.source)
    marked = "private_edge_mask" in data if homogeneous else False
    if flags["needs_private_edges"] and request.ratio_applies and request.private_ratio is None and not marked:
        raise ValueError(private_ratio_message(name, request.user_input))


def check_finite_features(data: Any, source: str = "the input") -> None:
    """Every node feature is a finite number (each node type's ``x`` of a HeteroData): ``ValueError`` naming how
    many are NaN or ±inf, before any noise (a NaN read as a feature propagated into every aggregate)."""
    import torch  # the rules above run before torch; this one has the data, hence torch, already

    stores = data.node_stores if hasattr(data, "node_types") else [data]
    for store in stores:
        x = store.get("x") if hasattr(store, "get") else getattr(store, "x", None)
        if not torch.is_tensor(x) or not x.is_floating_point():
            continue
        bad = int((~torch.isfinite(x)).sum())
        if bad:
            where = f" (node type {store._key!r})" if getattr(store, "_key", None) else ""
            raise ValueError(
                f"the features of {source}{where} hold {bad} non-finite values (NaN or ±inf): "
                "fill or drop them before a release"
            )


def check_choice(name: str, value: Any, choices: tuple[Any, ...] | list[Any]) -> None:
    """A parameter whose values are a fixed set (``param(..., choices=...)``): ``ValueError`` otherwise, in the
    same words from ``Params`` and from the command line's check of the catalogue (before torch)."""
    if value not in tuple(choices):
        raise ValueError(f"{name} must be one of {tuple(choices)}, got {value!r}")


def private_ratio_message(name: str, user_input: bool) -> str:
    return (
        f"method {name!r} protects private edges: say which with --private-ratio ρ "
        "(a seeded random fraction of the edges is marked private)"
        + (", or mark them in the input (--private-column, --private-edges)" if user_input else "")
    )


def features_message(name: str, source: str) -> str:
    return (
        f"{name} reads the node features, but {source} comes with none: give --features FILE "
        "(the link-level methods release a graph without features)"
    )


def declared_domain(
    name: str, data: Any, domain: Any = None, source: str = "the input", argument: str = PYTHON_DOMAIN
) -> tuple[float, float]:
    """The features' public domain: ``domain`` when given, else ``data.feature_domain``; ``ValueError``
    (:func:`domain_message`) when neither declares one.  The one rule of the command line and of Python: a
    local feature mechanism's ε holds within a declared range, never one assumed ([0, 1]) or read from the
    data (which would leak)."""
    value = domain if domain is not None else getattr(data, "feature_domain", None)
    if value is None:
        raise ValueError(domain_message(name, source, argument))
    return check_domain(value, "the feature domain")


def domain_message(name: str, source: str, argument: str = PYTHON_DOMAIN) -> str:
    return (
        f"{name} perturbs the features within a public domain, but none is declared for {source}: "
        "give --domain LO,HI on the command line, "
        f"{argument} in Python (the features' range, fixed without looking at them, e.g. 0,1)"
    )
