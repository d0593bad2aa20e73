"""Graph validation at the privacy boundary.

Every sensitivity in the package assumes a *simple* graph: one column per
directed edge, and for undirected graphs both directions of each edge with the
same private flag.  A duplicated column is counted twice (a degree, a
dendrogram count, a DP-SGD example), so removing that link moves the statistic
by 2 and the claimed ε doubles; an edge listed in one direction only is seen
by some counts and not others.  :func:`check_graph` detects all of this
(vectorised torch, O(E log E), nothing dense); the mechanisms call it with
``duplicates="refuse"``, and :func:`validate_graph` is the ``Data``-level
clean-up for the API boundary (``duplicates="coalesce"``).
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field

import torch
from torch import Tensor
from torch_geometric.data import Data

DUPLICATE_MODES = ("refuse", "coalesce")


@dataclass
class CheckedGraph:
    """A validated edge set: ``edge_index`` (long), the aligned ``private_edge_mask`` (bool) or
    None, ``notes`` on what was cleaned, and ``kept`` — the original columns kept, in order
    (None when nothing was removed), to align any other per-edge tensor."""

    edge_index: Tensor
    private_edge_mask: Tensor | None = None
    notes: list[str] = field(default_factory=list)
    kept: Tensor | None = None


class Note(str):
    """A note on what reading changed, with counts taken from the data; ``public`` says the same
    without them, for a release's report (a count of the input's edges or values is a statistic of
    the private graph: it stays with the curator, on the console and in the diagnostics)."""

    public: str

    def __new__(cls, text: str, public: str) -> Note:
        note = super().__new__(cls, text)
        note.public = public
        return note


def public_note(note: str) -> str:
    """``note`` as a release's report may state it (:class:`Note`)."""
    return getattr(note, "public", note)


def input_graph_notes(notes: list[str] | tuple[str, ...]) -> list[str]:
    """What reading the input changed, as a release's report states it (:func:`public_note`: no counts)."""
    return [f"input graph: {public_note(note)}" for note in notes]


def plural(count: int, noun: str, many: str | None = None) -> str:
    """``count`` and ``noun`` in agreement: ``plural(1, "edge")`` is "1 edge", ``plural(2, "edge")``
    "2 edges"; ``many`` is an irregular plural."""
    return f"{count} {noun if count == 1 else many or noun + 's'}"


def _pair(key: Tensor, num_dst: int) -> tuple[int, int]:
    k = int(key)
    return k // num_dst, k % num_dst


def _sizes(num_nodes: int | tuple[int, int], undirected: bool) -> tuple[int, int]:
    """(number of source ids, number of destination ids)."""
    if isinstance(num_nodes, tuple):
        if undirected:
            raise ValueError("a bipartite (num_src, num_dst) edge set cannot be checked as undirected")
        sizes = tuple(int(s) for s in num_nodes)
    else:
        sizes = (int(num_nodes), int(num_nodes))
    if len(sizes) != 2 or min(sizes) < 0:
        raise ValueError(f"num_nodes must be >= 0 (or a pair of them), got {num_nodes!r}")
    return sizes


def _check_shape(edge_index: Tensor, what: str) -> Tensor:
    if edge_index is None:
        raise ValueError(f"{what} is missing: the graph has no edges to check")
    edge_index = torch.as_tensor(edge_index)
    if edge_index.dim() != 2 or edge_index.shape[0] != 2:
        raise ValueError(
            f"{what} must have shape [2, E], got {tuple(edge_index.shape)}; "
            "stack the sources and destinations as two rows"
        )
    if edge_index.numel() == 0:
        return edge_index.long()
    if edge_index.is_floating_point() or edge_index.is_complex() or edge_index.dtype == torch.bool:
        raise ValueError(f"{what} must hold integer node ids, got dtype {edge_index.dtype}; convert it with .long()")
    return edge_index.long()


def _check_range(edge_index: Tensor, sizes: tuple[int, int], what: str) -> None:
    if edge_index.numel() == 0:
        return
    bad = (edge_index < 0).any(0) | (edge_index[0] >= sizes[0]) | (edge_index[1] >= sizes[1])
    count = int(bad.sum())
    if count:
        col = edge_index[:, bad.nonzero()[0, 0]].tolist()
        bounds = f"[0, {sizes[0]})" if sizes[0] == sizes[1] else f"[0, {sizes[0]}) × [0, {sizes[1]})"
        raise ValueError(
            f"{what} has {plural(count, 'edge')} with node ids outside {bounds} (e.g. {tuple(col)}); "
            "pass the right num_nodes or drop those edges"
        )


def _check_mask(mask, num_edges: int, what: str) -> Tensor | None:
    if mask is None:
        return None
    mask = torch.as_tensor(mask)
    if mask.shape != (num_edges,):
        raise ValueError(
            f"private_edge_mask must have one entry per column of {what} ({num_edges}), got shape {tuple(mask.shape)}"
        )
    if mask.dtype != torch.bool:
        if mask.is_floating_point() or not bool(((mask == 0) | (mask == 1)).all()):
            raise ValueError(f"private_edge_mask must be boolean (or 0/1 integers), got dtype {mask.dtype}")
        mask = mask.bool()
    return mask


def _check_self_loops(edge_index: Tensor, what: str) -> None:
    loops = edge_index[0] == edge_index[1]
    count = int(loops.sum())
    if count:
        node = int(edge_index[0, loops.nonzero()[0, 0]])
        raise ValueError(
            f"{what} has {plural(count, 'self-loop')} (e.g. ({node}, {node})); a node is not its own "
            "link here: remove them with torch_geometric.utils.remove_self_loops"
        )


def _first_columns(inverse: Tensor, num_unique: int) -> Tensor:
    """For each unique key, the first column holding it."""
    columns = torch.arange(inverse.numel(), device=inverse.device)
    first = torch.full((num_unique,), inverse.numel(), dtype=torch.long, device=inverse.device)
    return first.scatter_reduce(0, inverse, columns, reduce="amin")


def _coalesce(
    edge_index: Tensor, mask: Tensor | None, keys: Tensor, inverse: Tensor, counts: Tensor, num_dst: int, what: str
) -> CheckedGraph:
    """Keep the first copy of each duplicated column (original order); copies must share their flag."""
    if mask is not None:
        private = torch.zeros(keys.numel(), dtype=torch.long, device=keys.device).index_add_(0, inverse, mask.long())
        mixed = (private > 0) & (private < counts)
        if bool(mixed.any()):
            raise ValueError(
                f"{what} has {plural(int(mixed.sum()), 'duplicated edge')} whose copies disagree on "
                f"private_edge_mask (e.g. {_pair(keys[mixed][0], num_dst)}); decide whether each "
                "such edge is private, then drop the extra copies"
            )
    kept = _first_columns(inverse, keys.numel()).sort().values
    merged = edge_index.shape[1] - kept.numel()
    note = Note(
        f"{plural(merged, 'duplicate edge')} merged ({what}: {edge_index.shape[1]} → {kept.numel()} columns)",
        f"duplicate edges merged ({what})",
    )
    return CheckedGraph(edge_index[:, kept], None if mask is None else mask[kept], [note], kept)


def one_way_edges(edge_index: Tensor, num_nodes: int) -> Tensor:
    """Which columns have no reverse column (self-loops are their own reverse)."""
    keys = edge_index[0] * num_nodes + edge_index[1]
    return ~torch.isin(edge_index[1] * num_nodes + edge_index[0], keys)


def _check_symmetric(
    edge_index: Tensor, mask: Tensor | None, num_nodes: int, what: str, sorted_keys: tuple[Tensor, Tensor] | None = None
) -> None:
    """Every (u, v) has its (v, u), with the same private flag (no duplicates left).

    Two sorts, O(E log E): the edge set is symmetric iff the sorted keys u·n + v equal the sorted
    reverse keys v·n + u (distinct keys), and then position t of both orders holds (u, v) and
    (v, u), whose flags must agree.  Only a defect pays for locating it (binary search).
    ``sorted_keys`` are ``torch.sort(src·n + dst)``'s values and order when already computed."""
    src, dst = edge_index
    keys, order = sorted_keys if sorted_keys is not None else torch.sort(src * num_nodes + dst)
    reverse_sorted, reverse_order = torch.sort(dst * num_nodes + src)
    if torch.equal(keys, reverse_sorted):
        if mask is None or torch.equal(mask[order], mask[reverse_order]):
            return
    del reverse_sorted, reverse_order
    reverse = (dst * num_nodes + src)[order]
    pos = torch.searchsorted(keys, reverse).clamp_max(max(keys.numel() - 1, 0))
    missing = keys[pos] != reverse
    count = int(missing.sum())
    if count:
        where = f"e.g. {_pair(keys[missing][0], num_nodes)} without its reverse"
        if mask is not None and bool(mask[order][missing].any()):
            raise ValueError(
                f"{what} has {plural(count, 'edge')} listed in one direction only, "
                f"{int(mask[order][missing].sum())} of them private ({where}); an undirected "
                "graph lists each edge in both directions with the same private flag: add the "
                "reverse columns (torch_geometric.utils.to_undirected, then copy the flags)"
            )
        raise ValueError(
            f"{what} is directed: {plural(count, 'edge is', 'edges are')} listed in one direction "
            f"only ({where}); an undirected graph needs both directions: use "
            "torch_geometric.utils.to_undirected"
        )
    if mask is not None:
        flags = mask[order]
        mixed = flags != flags[pos]
        if bool(mixed.any()):
            raise ValueError(
                f"private_edge_mask is not symmetric: "
                f"{plural(int(mixed.sum()) // 2, 'undirected edge is', 'undirected edges are')} "
                f"private in one direction only (e.g. {_pair(keys[mixed][0], num_nodes)}); give "
                "both directions of an edge the same flag"
            )


def check_graph(
    edge_index: Tensor,
    num_nodes: int | tuple[int, int],
    *,
    undirected: bool,
    self_loops: bool = False,
    duplicates: str = "refuse",
    private_edge_mask: Tensor | None = None,
    what: str = "edge_index",
) -> CheckedGraph:
    """Validate ``edge_index`` [2, E] on ``num_nodes`` nodes (or ``(num_src, num_dst)`` for a
    bipartite relation, where self-loops are not checked): integer ids in range, no
    self-loops unless allowed, no duplicate
    columns (``"refuse"``: error; ``"coalesce"``: the first copy is kept, with a note), and if
    ``undirected`` both directions of each edge with the same ``private_edge_mask`` flag.
    Raises ``ValueError`` naming the defect, its count and the fix; ``what`` names the input."""
    if duplicates not in DUPLICATE_MODES:
        raise ValueError(f"duplicates must be one of {DUPLICATE_MODES}, got {duplicates!r}")
    sizes = _sizes(num_nodes, undirected)
    edge_index = _check_shape(edge_index, what)
    mask = _check_mask(private_edge_mask, edge_index.shape[1], what)
    _check_range(edge_index, sizes, what)
    if not self_loops and not isinstance(num_nodes, tuple):
        _check_self_loops(edge_index, what)
    # one sort finds duplicates (equal neighbours) and serves the symmetry check; torch.unique's
    # inverse and counts are computed only when there are duplicates to report or merge
    sorted_keys = torch.sort(edge_index[0] * sizes[1] + edge_index[1])
    checked = CheckedGraph(edge_index, mask)
    if bool((sorted_keys[0][1:] == sorted_keys[0][:-1]).any()):
        keys, inverse, counts = torch.unique(
            edge_index[0] * sizes[1] + edge_index[1], return_inverse=True, return_counts=True
        )
        sorted_keys = None  # the columns change when coalesced
        if duplicates == "refuse":
            repeated = counts > 1
            listed = plural(int(repeated.sum()), "edge is", "edges are")
            raise ValueError(
                f"{what} has {plural(edge_index.shape[1] - keys.numel(), 'duplicate column')}: "
                f"{listed} listed more than once (e.g. "
                f"{_pair(keys[repeated][0], sizes[1])}, {int(counts[repeated][0])} times); every copy "
                "would be counted, multiplying the sensitivity: coalesce them first "
                "(privgraph.data.validate_graph or torch_geometric.utils.coalesce)"
            )
        checked = _coalesce(edge_index, mask, keys, inverse, counts, sizes[1], what)
    if undirected:
        _check_symmetric(checked.edge_index, checked.private_edge_mask, sizes[0], what, sorted_keys)
    return checked


def validate_graph(
    data: Data, *, undirected: bool, self_loops: bool = False, duplicates: str = "coalesce"
) -> tuple[Data, list[str]]:
    """The experiment runner's API-boundary check: :func:`check_graph` on ``data.edge_index``
    (and ``data.private_edge_mask`` if set).  Returns a shallow copy with the cleaned
    ``edge_index``, mask and other per-edge attributes (first copy of a duplicate kept), and
    the notes; ``data`` itself is never modified.  Defects that cannot be cleaned safely
    (asymmetry, self-loops, disagreeing flags) raise ``ValueError``."""
    checked = check_graph(
        data.edge_index,
        data.num_nodes,
        undirected=undirected,
        self_loops=self_loops,
        duplicates=duplicates,
        private_edge_mask=getattr(data, "private_edge_mask", None),
    )
    out = copy.copy(data)
    if checked.kept is not None:
        for key in data.edge_attrs():  # per-edge rows (edge_attr, edge_weight, ...), not other index sets
            if "index" not in key and key != "private_edge_mask" and isinstance(data[key], Tensor):
                out[key] = data[key][checked.kept]
    out.edge_index = checked.edge_index
    if checked.private_edge_mask is not None:
        out.private_edge_mask = checked.private_edge_mask
    return out, list(checked.notes)


# what every release states about the clean-up at its boundary: the same words on every input (whether the
# input had a duplicate or a self-loop is a statistic of it), so a neighbour with one duplicate edge or one
# self-loop more, which the clean-up removes, gets the same report
CLEANED_NOTE = "input graph: duplicate edges merged before the release, on every input (whether it had any is not said)"
SIMPLE_CLEANED_NOTE = (
    "input graph: duplicate edges merged and self-loops dropped before the release, on every input (whether it "
    "had any is not said)"
)


def cleaned_for_release(data: Data, *, simple: bool) -> tuple[Data, str, list[str]]:
    """The clean-up at a release's boundary, which commutes with the neighbouring relations (adding a duplicate
    edge or a self-loop changes nothing after it): a simple graph's self-loops dropped (a node is not its own
    link), then :func:`validate_graph` (duplicates merged; a simple graph must be undirected).  Returns the
    graph, the constant public note (:data:`SIMPLE_CLEANED_NOTE` or :data:`CLEANED_NOTE`) and the curator's
    notes with the counts (diagnostics: never in a report)."""
    counted: list[str] = []
    if simple and data.edge_index is not None and data.edge_index.numel():
        loops = data.edge_index[0] == data.edge_index[1]
        if bool(loops.any()):
            count, keep = int(loops.sum()), ~loops
            data = copy.copy(data)
            for key in data.edge_attrs():  # edge_index, private_edge_mask and every per-edge row
                if isinstance(data[key], Tensor) and data[key].shape[-1 if key == "edge_index" else 0] == keep.numel():
                    data[key] = data[key][:, keep] if key == "edge_index" else data[key][keep]
            counted.append(Note(f"{plural(count, 'self-loop')} dropped", "self-loops dropped"))
    data, notes = validate_graph(data, undirected=simple, self_loops=not simple)
    return data, SIMPLE_CLEANED_NOTE if simple else CLEANED_NOTE, [*counted, *notes]


__all__ = [
    "CLEANED_NOTE",
    "DUPLICATE_MODES",
    "SIMPLE_CLEANED_NOTE",
    "CheckedGraph",
    "check_graph",
    "cleaned_for_release",
    "validate_graph",
]
