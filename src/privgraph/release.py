"""`PrivateRelease`: what a method releases from the user's graph, with its guarantees.

A release is a one-time act (design notes): privatize once, keep the result,
train on it as often as you like (post-processing).  The release holds

* ``data`` — a *new* PyG ``Data``/``HeteroData`` with only what was released
  (privatized features, a privatized graph, embeddings) and the fields the
  method's setting declares public (e.g. the labels and the split for node
  classification).  The raw private fields are never copied in;
* ``report`` — the :class:`~privgraph.accounting.PrivacyReport`, one
  guarantee per unit (features, labels, links, ...);
* ``fields`` — the status of every field of the *input*: privatized (by what),
  public as given, or withheld;
* ``details`` — the mechanism's diagnostics (noise scales, MCMC traces, ...);
* ``randomness`` — how the noise was drawn (the OS source, or a seed: then
  anyone with the seed can regenerate the noise, and the report says so);
* ``model_state`` — released model weights, for methods that release a model
  (HeteDP's link reconstructor).

``save`` writes ``data`` in one of three formats that open without privgraph or PyG
(:mod:`privgraph.release_formats`): ``pt`` (default; ``torch.load(PATH)`` gives a dict of
plain tensors), ``npz`` (``numpy.load``) or ``csv`` (edge lists and node tables); the rest as
JSON beside it (``PATH.json``: the report, the status of every field, parameters, randomness,
details, and each file's size and SHA-256), and a released model's weights to ``PATH.model.pt``; every file
is written atomically, the report last, and an existing release is replaced only with ``overwrite=True``
(:mod:`privgraph.release_files`).  ``load`` checks every file against the report, then reads a ``pt``
release back with ``weights_only=True`` (a file that needs more, which could run code, is
refused), and the pickled PyG object older releases hold (``privgraph-release/1``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from torch import Tensor
from torch_geometric.data import Data, HeteroData
from torch_geometric.utils import is_undirected

from privgraph.accounting import PrivacyReport, Unit
from privgraph.data.safe_load import load_torch_file
from privgraph.release_files import Staging, check_output, check_room, verify_release
from privgraph.release_formats import (
    FILE_FORMATS,
    FORMAT,
    FORMAT_V1,
    data_files,
    from_payload,
    read_ids,
    write,
    write_ids,
)
from privgraph.version import __version__

PUBLIC = "public: copied as given"
DIAGNOSTICS_WITHHELD = (
    "withheld: the release details are data-dependent diagnostics (exact counts, clipping "
    "rates, MCMC traces) not covered by the guarantee; keep them for the curator with "
    "include_diagnostics=True (--diagnostics)"
)
WITHHELD = "withheld: not in the release"
UNTRUSTED_RELEASE = "privgraph writes a release of tensors and plain values only: this file is not one as written"
NODE_IDS_NOTE = (
    "the node ids are released as given (public, like the node count): the file's own ids, in the id map "
    "beside the release"
)
IN_CLEAR = ("public", "written in clear", "derived without protection")  # statuses of unprotected fields
# node-level DP (a node added or removed with all its data): the node set itself is private
NODE_SET_UNITS = (Unit.NODE_WITH_EDGES,)
NODE_SET_WITHHELD = (
    "withheld: under node-level DP the node set is private (a per-node field, the node count or the node ids "
    "would tell a graph from the graph with one more node)"
)


def hides_node_set(unit: str) -> bool:
    """Whether a release protecting ``unit`` must publish nothing of the node set: no node count, no per-node
    field, no id map (node-level DP; its metadata is the same on G and G − v)."""
    return unit in NODE_SET_UNITS


@dataclass
class PrivateRelease:
    """A method's one-time release of a graph (module docstring)."""

    method: str
    params: dict[str, Any]
    epsilon: float | None
    data: Data | HeteroData
    report: PrivacyReport
    fields: dict[str, str] = field(default_factory=dict)
    details: dict[str, Any] = field(default_factory=dict)
    randomness: dict[str, Any] = field(default_factory=dict)
    model_state: dict[str, Tensor] | None = None
    version: str = __version__
    provenance: dict[str, Any] = field(default_factory=dict)  # where the input came from (dataset, data seed)
    # the local reports the untrusted server collected (link-LDP methods: each node's randomized adjacency
    # list and noisy degree), in memory only for privgraph.audit: ``save`` never writes them (the released
    # graph is their post-processing); the object may evaluate reports lazily from the input it was built on
    reports: Any = field(default=None, repr=False)
    # what the curator trained inside the release, in memory only, never saved (HeteDP: the link model
    # with its inputs, which in message-passing mode read the protected edges the release withholds)
    trained: Any = field(default=None, repr=False)
    # the input's own node ids (an edge list naming its nodes: read_graph's data.node_ids), node i's id at i:
    # released as given (public, like the node count), written to PATH.ids.csv
    node_ids: list[str] | None = None

    def metadata(
        self, include_diagnostics: bool = False, file_format: str = "pt", files: list[str] | None = None
    ) -> dict[str, Any]:
        """Everything but the tensors, JSON-ready; the details only with ``include_diagnostics``;
        ``file_format`` and ``files`` (names) say where the data was written."""
        raw = self.fields_in_clear()
        lines = [self.report.plain_summary(), *self.report.lines()]
        if raw:
            lines.append(f"fields written in clear (not protected): {', '.join(raw)}")
        return json_safe(
            {
                "format": FORMAT,
                "file_format": file_format,
                "files": files or [],
                "edge_direction": self.edge_direction(),
                "node_ids": _ids_path(Path(files[0])).name if files and self.node_ids is not None else None,
                "method": self.method,
                "params": self.params,
                "epsilon": self.epsilon,
                "privacy": self.report.to_dict(),
                "report": lines,
                "fields": self.fields,
                "raw_fields": raw,
                "randomness": self.randomness,
                "provenance": self.provenance,
                "details": self.details if include_diagnostics else DIAGNOSTICS_WITHHELD,
                "version": self.version,
            }
        )

    def edge_direction(self) -> str | None:
        """How the edge list reads (the csv's ``source,target`` rows): ``"both directions"`` when every edge
        (u, v) comes with (v, u), an undirected graph listed as PyG stores it (count a pair once: u < v);
        ``"as listed"`` otherwise; ``None`` without a homogeneous edge list."""
        edge_index = getattr(self.data, "edge_index", None) if isinstance(self.data, Data) else None
        if edge_index is None or edge_index.numel() == 0:
            return None
        return "both directions" if is_undirected(edge_index, num_nodes=self.data.num_nodes) else "as listed"

    def fields_in_clear(self) -> list[str]:
        """The input fields written as given (public, or by a non-private method): not protected."""
        return [name for name, status in self.fields.items() if status.startswith(IN_CLEAR)]

    def save(
        self,
        path: str | Path,
        include_diagnostics: bool = False,
        format: str = "pt",
        mkdir: bool = False,
        overwrite: bool = False,
    ) -> tuple[Path, Path]:
        """Write ``data`` to ``path`` in ``format`` (``pt``, ``npz`` or ``csv``: module docstring of
        :mod:`privgraph.release_formats`), the report and metadata to ``path.json`` and released
        model weights, if any, to ``path.model.pt``.  Returns the first data file and the report.
        A missing folder is an error (``FileNotFoundError``) unless ``mkdir``; an existing release
        (``FileExistsError``) unless ``overwrite``; a symbolic link, ``-`` or a name too long always
        (:func:`~privgraph.release_files.check_output`, checked before anything is written).  The files
        are written atomically, the report last with each file's size and SHA-256: a failed or killed
        save leaves the previous release or the new one (:mod:`privgraph.release_files`); a full disk
        is one :class:`~privgraph.release_files.NoSpaceError` line.

        ``details`` are diagnostics computed on the raw data (e.g. how many rows were clipped,
        the exact number of private edges, the MCMC's likelihood trace): they are not covered by
        the guarantee, so they are left out unless ``include_diagnostics`` (the curator's copy)."""
        path = Path(path)
        if format not in FILE_FORMATS:
            raise ValueError(f"unknown release format {format!r}: one of {', '.join(FILE_FORMATS)}")
        names = [f.name for f in self.files(path, format)]
        check_output(path, file_format=format, overwrite=overwrite, mkdir=mkdir, names=names)
        if mkdir:
            path.parent.mkdir(parents=True, exist_ok=True)
        if format == "pt":  # its tensors are stored as they are: their bytes are what the files take at least
            check_room(path, self._tensor_bytes())
        with Staging(path, overwrite=overwrite) as stage:
            files = write(self.data, path, format, self.method, self.node_ids, stage=stage)
            if self.node_ids is not None:
                write_ids(self.node_ids, stage.open(_ids_path(path)))
                files.append(_ids_path(path))
            if self.model_state is not None:
                stage.torch_save({k: v.detach().cpu() for k, v in self.model_state.items()}, _model_path(path))
            stage.seal()
            stage.commit(_report_path(path), self.metadata(include_diagnostics, format, [f.name for f in files]))
        return files[0], _report_path(path)

    def _tensor_bytes(self) -> int:
        """The bytes of the release's tensors (the data's and a model's), a storage shared by views counted once."""
        values = [v for store in self.data.stores for v in store.values()] + list((self.model_state or {}).values())
        sizes: dict[int, int] = {}
        for v in values:
            if isinstance(v, Tensor):
                key = v.untyped_storage().data_ptr()
                sizes[key] = max(sizes.get(key, 0), v.numel() * v.element_size())
        return sum(sizes.values())

    def files(self, path: str | Path, format: str = "pt") -> list[Path]:
        """Every file :meth:`save` writes for ``path`` and ``format``: the data, the report, the model."""
        path = Path(path)
        model = [_model_path(path)] if self.model_state is not None else []
        ids = [_ids_path(path)] if self.node_ids is not None else []
        return [*data_files(self.data, path, format), *ids, _report_path(path), *model]

    @classmethod
    def load(cls, path: str | Path) -> PrivateRelease:
        """Read a release written by :meth:`save` (details and params come back as JSON values;
        :func:`privgraph.load_release` also types the params by the method's ``Params``): a ``pt``
        release, or one of the older format (the pickled PyG object).  The tensors are read with
        ``torch.load(weights_only=True)`` (PyG's data classes allow-listed for the older format): a
        file that holds anything else is refused (``ValueError``), as unpickling it could run code.
        ``npz`` and ``csv`` releases are for recipients without privgraph, not read back."""
        path = Path(path)
        report_path = _report_path(path)
        meta, located = verify_release(path)  # every file against the report's size and SHA-256
        if meta.get("format") not in (FORMAT, FORMAT_V1):
            raise ValueError(f"{report_path} is not a privgraph release report (format {meta.get('format')!r})")
        file_format = meta.get("file_format", "pt")
        if file_format != "pt":
            raise ValueError(
                f"{path} is a release in the {file_format} format, written for recipients without privgraph "
                "(numpy.load, a csv reader); privgraph reads a release back from the pt format"
            )
        if located and path.name not in located:
            raise ValueError(f"{report_path} does not list {path.name}: not the report of this release")
        data = load_torch_file(located.get(path.name, path), hint=UNTRUSTED_RELEASE)
        if meta["format"] == FORMAT:
            try:
                data = from_payload(data)
            except ValueError as err:
                raise ValueError(f"{path}: {err}; {UNTRUSTED_RELEASE}") from None
        elif not isinstance(data, (Data, HeteroData)):
            raise ValueError(f"{path} holds a {type(data).__name__}, not a PyG object; {UNTRUSTED_RELEASE}")
        model_file = located.get(_model_path(path).name) if located else _model_path(path)  # listed, if checked
        model = load_torch_file(model_file, hint=UNTRUSTED_RELEASE) if model_file and model_file.exists() else None
        details = meta["details"] if isinstance(meta["details"], dict) else {}
        ids = meta.get("node_ids")
        node_ids = read_ids(located.get(ids, path.with_name(ids)), data.num_nodes) if ids else None
        return cls(
            meta["method"],
            meta["params"],
            meta["epsilon"],
            data,
            PrivacyReport.from_dict(meta["privacy"]),
            meta["fields"],
            details,
            meta["randomness"],
            model,
            meta["version"],
            meta.get("provenance", {}),
            node_ids=node_ids,
        )

    def __repr__(self) -> str:
        eps = "—" if self.epsilon is None else f"{self.epsilon:g}"
        return f"PrivateRelease({self.method}, ε={eps}, data={self.data}, {'; '.join(self.report.lines()[:2])})"


def _ids_path(path: Path) -> Path:
    return path.with_name(f"{path.name}.ids.csv")


def _report_path(path: Path) -> Path:
    return path.with_name(path.name + ".json")


def _model_path(path: Path) -> Path:
    return path.with_name(path.name + ".model.pt")


def json_safe(obj: Any) -> Any:
    """``obj`` as strict JSON values: NaN as ``None``, ±∞ as ``"inf"``/``"-inf"`` (an unprotected
    guarantee's ε), tuples as lists, small tensors as lists, anything else as its ``str``."""
    if isinstance(obj, float) and not math.isfinite(obj):
        return None if math.isnan(obj) else ("inf" if obj > 0 else "-inf")
    if isinstance(obj, dict):
        return {str(k): json_safe(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [json_safe(v) for v in obj]
    if isinstance(obj, Tensor):
        return obj.tolist() if obj.numel() <= 64 else f"tensor{tuple(obj.shape)}"
    if isinstance(obj, (str, int, bool)) or obj is None or isinstance(obj, float):
        return obj
    return str(obj)


def input_fields(data: Data | HeteroData) -> list[str]:
    """The field names of the user's graph (node/edge stores flattened as ``type.field``)."""
    if isinstance(data, HeteroData):
        out = []
        for store in data.node_stores + data.edge_stores:
            key = store._key if isinstance(store._key, str) else "__".join(store._key)
            out += [f"{key}.{name}" for name in store.keys()]
        return sorted(out)
    return sorted(k for k in data.keys() if k != "num_nodes")
