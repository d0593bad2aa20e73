"""``--input``: the user's graph file read and checked against the method's input rules."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from rich.markup import escape

from privgraph.cli.checks import Prepared, _device, _method, _resolve_device, _spec
from privgraph.cli.console import _fail, err_console, user_errors
from privgraph.cli.options import InputOptions
from privgraph.input_rules import InputRequest


def _input_request(
    inputs: InputOptions, private_ratio: float | None = None, ratio_applies: bool = False
) -> InputRequest:
    """What the options and the input file's kind say about the input before a row of it is read
    (:class:`~privgraph.input_rules.InputRequest`): an edge list or an adjacency matrix (``.npz``) carries
    features only from ``--features``, a domain only from ``--domain`` and marked private edges only from
    ``--private-column``/``--private-edges``; a torch file may hold any of them (None: the data will tell).
    A registry dataset (no ``--input``) marks no private edges."""
    from privgraph.data.files import TORCH_SUFFIXES

    path = inputs.input
    if path is None:
        return InputRequest(private_edges=False, private_ratio=private_ratio, ratio_applies=ratio_applies)
    torch_file = path.suffix.lower() in TORCH_SUFFIXES
    marked = inputs.private_column is not None or inputs.private_edges is not None
    if not marked and not torch_file and _names_private(path, inputs.comment):
        marked = None  # a header column named `private` may be the flag (privgraph.data.tables): the data will tell
    return InputRequest(
        source=path.name,
        user_input=True,
        features=True if inputs.features is not None else (None if torch_file else False),
        private_edges=None if marked is None else True if marked else (None if torch_file else False),
        domain=True if inputs.domain is not None else (None if torch_file else False),
        private_ratio=private_ratio,
        ratio_applies=ratio_applies,
    )


def _names_private(path: Path, comment: str | None = None) -> bool:
    """Whether the first line of an edge list (its header, if any; after blank lines and ``--comment`` lines,
    nothing more is read) names ``private``."""
    prefix = comment.encode() if comment else None
    try:
        with path.open("rb") as f:
            for _ in range(1 << 12):
                first = f.readline(1 << 16)
                if not first or (first.strip() and not (prefix and first.strip().startswith(prefix))):
                    break
    except OSError:
        return True  # unreadable here: the reader says why
    return b"private" in first.lower()


def _check_request(
    method: str, inputs: InputOptions, private_ratio: float | None = None, ratio_applies: bool = False
) -> InputRequest:
    """The method's input rules that the request alone decides (:func:`privgraph.input_rules.check_request`
    on the catalogue's flags: no torch), before anything is read; exits 2 with one line."""
    from privgraph.input_rules import check_request

    request = _input_request(inputs, private_ratio, ratio_applies)
    with user_errors():
        check_request(method, _method(method), request)
    return request


def _build_method(method: str, values: dict[str, Any]) -> Any:
    """The method built with its ``--param`` values: its ``Params`` validate the values, ranges and
    combinations (e.g. Blink's variant) before any data is read (imports torch); exits 2 with one line."""
    from privgraph.methods import get_method

    with user_errors(ValueError, TypeError):
        return get_method(method, **values)


def _input_files(inputs: InputOptions) -> tuple[float, float] | None:
    """The torch-free checks of ``--input``'s options: none of them without ``--input``, ``--domain``'s
    spelling (returned as bounds) and every named file present with a known suffix; exits 2 with one line."""
    path, features, labels, private_edges = inputs.input, inputs.features, inputs.labels, inputs.private_edges
    private_column, domain, clip, directed = inputs.private_column, inputs.domain, inputs.clip, inputs.directed
    trust_pickle = inputs.trust_pickle
    given = {
        "--features": features,
        "--labels": labels,
        "--private-edges": private_edges,
        "--private-column": private_column,
        "--domain": domain,
        "--num-classes": inputs.num_classes,
        "--clip": clip or None,
        "--directed": directed or None,
        "--trust-pickle": trust_pickle or None,
        "--comment": inputs.comment,
        "--strict": inputs.strict or None,
        "--drop-unknown": inputs.drop_unknown or None,
        "--missing-label": inputs.missing_label,
        "--label-column": inputs.label_column,
    }
    if path is None:
        stray = [flag for flag, v in given.items() if v is not None]
        if stray:
            verb = "describes" if len(stray) == 1 else "describe"
            _fail(f"{', '.join(stray)} {verb} an --input file: give --input")
        return None
    from privgraph.data.files import (
        FEATURE_SUFFIXES,
        GRAPH_SUFFIXES,
        LABEL_SUFFIXES,
        MASK_SUFFIXES,
        existing_file,
    )

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
    return bounds


def _read_input(
    inputs: InputOptions,
    method: str,
    device: str | None = None,
    request: InputRequest | None = None,
    split_seed: int | None = 0,
) -> tuple[Any, list[str]]:
    """The user's graph file (``--input``) read and checked against ``method`` (its features, an
    undirected graph for a link-level method), and the notes on what reading changed; (None, [])
    without ``--input``.  ``device`` (:func:`_device`'s) must be present before the file is read, and the
    rules the request decides (``request``, :func:`_check_request`; made here when not given) are checked
    before it is.  ``split_seed`` (``--seed``): the split of a labelled graph read without one, as
    :func:`~privgraph.data.read_graph` adds it in Python.  Bad input exits 2 with one line."""
    if inputs.input is None:
        _input_files(inputs)
        return None, []
    bounds = _input_files(inputs)
    if request is None:
        request = _check_request(method, inputs)
    path, features, labels, private_edges = inputs.input, inputs.features, inputs.labels, inputs.private_edges
    private_column, clip, directed, trust_pickle = (
        inputs.private_column,
        inputs.clip,
        inputs.directed,
        inputs.trust_pickle,
    )
    from privgraph.data.files import TORCH_SUFFIXES

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
            split_seed=split_seed,
            comment=inputs.comment,
            strict=inputs.strict,
            drop_unknown=inputs.drop_unknown,
            missing_label=inputs.missing_label,
            label_column=inputs.label_column,
        )
    with user_errors(ValueError, TypeError):
        cls.check_input(request, data)  # the rules that need the data (privgraph.input_rules.check_data)
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
    if inputs.num_classes is not None and isinstance(data, Data):
        stored = getattr(data, "num_classes", None)
        if stored is not None and stored != inputs.num_classes:
            _fail(f"--num-classes {inputs.num_classes} differs from num_classes={stored} stored in {path.name}")
        data.num_classes = inputs.num_classes  # the public label set (label LDP's k), declared
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
    before_read: Callable[[Any], None] | None = None,
    **fields: Any,
) -> tuple[Any, list[str]]:
    """The spec of run, attack and release, once :func:`~privgraph.cli.checks._prepare` has checked the options: the
    method's input rules the request decides (:func:`_check_request`), the method built with its parameters
    (:func:`_build_method`) and ``before_read`` on it (the command's own checks: release's ledger), all before
    ``--input`` is read (:func:`_read_input`); then :func:`_spec` on it (the dataset's name, the graph,
    ``--data-root`` and the device; ``fields``: the command's own).  Returns the spec and the notes on what
    reading changed."""
    from privgraph.catalogue import task_entry

    try:
        evaluation = task_entry(_method(method), fields.get("task"))
    except ValueError:
        evaluation = None  # an unknown --task: _prepare has refused it
    nc = evaluation is not None and evaluation["name"] == "nc"  # the task that draws private edges at ρ
    _input_files(inputs)
    request = _check_request(method, inputs, fields.get("private_ratio"), ratio_applies=nc)
    _resolve_device(_device(device))
    built = _build_method(method, prepared[0])
    if before_read is not None:
        before_read(built)
    data, notes = _read_input(inputs, method, device, request, split_seed=fields.get("seed", 0))
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


def read_for_methods(inputs: InputOptions, methods: list[str], seed: int) -> Any:
    """``--input`` read once for every compared method, with ``release``'s rules and checks: each method's rules
    the request decides, before the file is read; the graph read for the strictest of them (a simple graph when
    one needs it: ``_read_input``); then each one's rules that need the data.  None without ``--input``."""
    if inputs.input is None:
        return None
    from privgraph.catalogue import method_entry
    from privgraph.methods import method_class

    requests = {m: _check_request(m, inputs) for m in methods}
    strictest = next((m for m in methods if method_entry(m).get("simple_graph")), methods[0])
    data, _ = _read_input(inputs, strictest, request=requests[strictest], split_seed=seed)
    for m in methods:
        with user_errors(ValueError, TypeError):
            method_class(m).check_input(requests[m], data)
    return data
