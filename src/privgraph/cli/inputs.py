"""``--input``: the user's graph file read and checked against the method's input rules."""

from __future__ import annotations

from typing import Any

from rich.markup import escape

from privgraph.cli.checks import Prepared, _method, _resolve_device, _spec
from privgraph.cli.console import _fail, err_console, user_errors
from privgraph.cli.options import InputOptions


def _read_input(inputs: InputOptions, method: str, device: str | None = None) -> tuple[Any, list[str]]:
    """The user's graph file (``--input``) read and checked against ``method`` (its features, an
    undirected graph for a link-level method), and the notes on what reading changed; (None, [])
    without ``--input``.  ``device`` (:func:`_device`'s) must be present before the file is read.  Bad
    input exits 2 with one line."""
    path, features, labels, private_edges = inputs.input, inputs.features, inputs.labels, inputs.private_edges
    private_column, domain, clip, directed = inputs.private_column, inputs.domain, inputs.clip, inputs.directed
    trust_pickle = inputs.trust_pickle
    given = {
        "--features": features,
        "--labels": labels,
        "--private-edges": private_edges,
        "--private-column": private_column,
        "--domain": domain,
        "--clip": clip or None,
        "--directed": directed or None,
        "--trust-pickle": trust_pickle or None,
    }
    if path is None:
        stray = [flag for flag, v in given.items() if v is not None]
        if stray:
            verb = "describes" if len(stray) == 1 else "describe"
            _fail(f"{', '.join(stray)} {verb} an --input file: give --input")
        return None, []
    from privgraph.data.files import (
        FEATURE_SUFFIXES,
        GRAPH_SUFFIXES,
        LABEL_SUFFIXES,
        MASK_SUFFIXES,
        TORCH_SUFFIXES,
        existing_file,
    )

    _method(method)
    bounds = None
    if domain is not None:
        try:
            lo, hi = (float(v) for v in domain.split(","))
        except ValueError:
            _fail(f"--domain takes LO,HI (e.g. 0,1), got {domain!r}")
        bounds = (lo, hi)
    with user_errors():  # the files exist (no torch yet)
        existing_file(path, "graph", GRAPH_SUFFIXES)
        for file, role, suffixes in (
            (features, "features", FEATURE_SUFFIXES),
            (labels, "labels", LABEL_SUFFIXES),
            (private_edges, "private-edge mask", MASK_SUFFIXES),
        ):
            if file is not None:
                existing_file(file, role, suffixes)
    _resolve_device(device)
    from torch_geometric.data import Data

    from privgraph.data import check_graph
    from privgraph.data.io import GraphInputError, read_graph
    from privgraph.methods import method_class

    with user_errors(GraphInputError, ValueError):
        cls = method_class(method)
        data, notes = read_graph(
            path,
            features=features,
            labels=labels,
            private_edges=private_edges,
            private_column=private_column,
            domain=bounds,
            clip=clip,
            directed=directed,
            self_loops=not cls.simple_graph,
            trust_pickle=trust_pickle,
        )
    if isinstance(data, Data) == cls.heterogeneous:
        _fail(
            f"{method} takes a {'HeteroData' if cls.heterogeneous else 'homogeneous graph (Data)'}, but {path.name} "
            f"holds a {type(data).__name__}"
        )
    if isinstance(data, Data) and cls.needs_features and data.x is None:
        _fail(
            f"{method} reads the node features, but {path.name} comes with none: give --features FILE "
            "(the link-level methods release a graph without features)"
        )
    if cls.needs_domain and getattr(data, "feature_domain", None) is None:
        _fail(
            f"{method} perturbs the features within a public domain, but none is declared for {path.name}: "
            "give --domain LO,HI (the features' range, fixed without looking at them, e.g. --domain 0,1)"
        )
    if isinstance(data, Data) and cls.simple_graph:
        keep = (
            " (drop --directed to add the missing reverse edges)"
            if directed and path.suffix.lower() not in TORCH_SUFFIXES
            else ""
        )
        with user_errors(prefix=f"{method} protects the links of an undirected graph: ", suffix=keep):
            check_graph(
                data.edge_index,
                data.num_nodes,
                undirected=True,
                private_edge_mask=data.get("private_edge_mask"),
                what=f"the graph in {path.name}",
            )
    for note in notes:
        err_console.print(f"[dim]{escape(str(path))}: {escape(note)}[/dim]")
    return data, notes


def _input_spec(
    method: str,
    params: list[str],
    hparams: list[str],
    prepared: Prepared,
    inputs: InputOptions,
    dataset: str,
    device: str | None,
    **fields: Any,
) -> tuple[Any, list[str]]:
    """The spec of run, attack and release, once :func:`_prepare` has checked the options: ``--input`` read
    (:func:`_read_input`), then :func:`_spec` on it (the dataset's name, the graph, ``--data-root`` and the
    device; ``fields``: the command's own).  Returns the spec and the notes on what reading changed."""
    data, notes = _read_input(inputs, method, device)
    spec = _spec(
        method,
        params,
        hparams,
        prepared,
        dataset=inputs.dataset(dataset),
        input=data,
        data_root=inputs.root,
        device=device,
        **fields,
    )
    return spec, notes
