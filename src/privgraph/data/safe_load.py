"""Loading a torch file safely: ``torch.load(weights_only=True)`` with PyG's data classes
(``Data``, ``HeteroData`` and their storages) allow-listed, so a file cannot run code when it is
read; ``trust_pickle`` unpickles anything (and runs the file's code).  Importing this module
allow-lists PyG's data classes for ``torch.load`` (:func:`allow_pyg_objects_in_torch_load`)."""

from __future__ import annotations

import pickle
import re
import warnings
from pathlib import Path
from typing import Any

import torch
from torch_geometric.data import Data, HeteroData

from privgraph.data.files import first_line, input_error


def pyg_safe_globals() -> list[type]:
    """PyG's data classes (``Data``, ``HeteroData`` and their storages): they hold tensors and plain
    values only, so ``torch.load(weights_only=True)`` may rebuild them.  ``AttrType`` is the enum a storage
    caches its attributes' kinds under (``_cached_attr``) once PyG has looked at them: a ``Data`` that
    privgraph or PyG has read names it when saved."""
    from torch_geometric.data import feature_store, graph_store
    from torch_geometric.data.data import DataEdgeAttr, DataTensorAttr
    from torch_geometric.data.storage import AttrType, BaseStorage, EdgeStorage, GlobalStorage, NodeStorage

    return [
        Data,
        HeteroData,
        DataEdgeAttr,
        DataTensorAttr,
        GlobalStorage,
        NodeStorage,
        EdgeStorage,
        BaseStorage,
        AttrType,
        feature_store.TensorAttr,
        graph_store.EdgeAttr,
        graph_store.EdgeLayout,
        feature_store._FieldStatus,
    ]


def allow_pyg_objects_in_torch_load() -> None:
    """Let ``torch.load(path, weights_only=True)`` (torch's default) read a released PyG ``Data`` /
    ``HeteroData``: privgraph adds :func:`pyg_safe_globals` to torch's safe globals when
    :mod:`privgraph.data` is imported."""
    torch.serialization.add_safe_globals(pyg_safe_globals())


def weights_only_caches(data: Data | HeteroData) -> Data | HeteroData:
    """``data`` (changed in place) with each storage's attribute cache a plain ``dict`` holding every
    ``AttrType`` key, so that ``torch.save(data)`` reads back with ``torch.load(weights_only=True)``.

    PyG creates the cache lazily as ``defaultdict(set)``, which torch's safe unpickler cannot rebuild ("Can
    only SETITEMS for dict"); a plain dict with all three keys behaves the same for PyG (it only ever indexes
    those keys) and pickles as a dict of sets of strings."""
    from torch_geometric.data.storage import AttrType

    for store in data.stores:
        cache = store.__dict__.get("_cached_attr") or {}
        store.__dict__["_cached_attr"] = {kind: set(cache.get(kind, ())) for kind in AttrType}
    return data


TRUST_PICKLE_NOTE = (
    "trusted with --trust-pickle (trust_pickle=True): unpickled with torch.load(weights_only=False), "
    "which runs any code the file holds"
)


def load_torch_file(path: str | Path, trust_pickle: bool = False, hint: str = "") -> Any:
    """``torch.load`` of ``path`` with ``weights_only=True`` and PyG's data classes allow-listed.  A file
    that needs any other object (code that would run on unpickling) raises :class:`~privgraph.data.io.GraphInputError`,
    one line ending with ``hint``; ``trust_pickle`` loads it with ``weights_only=False`` (runs its code)."""
    path = Path(path)
    try:
        if trust_pickle:
            return torch.load(path, weights_only=False)
        allow_pyg_objects_in_torch_load()  # not torch's safe_globals(): leaving it drops them for everyone
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)  # torch's note on an unusual pickle protocol
            return torch.load(path, weights_only=True)
    except pickle.UnpicklingError as exc:
        if trust_pickle or "weights only" not in str(exc).lower():
            raise input_error(f"cannot read {path} with torch.load: {first_line(exc)}") from exc
        found = re.search(r"GLOBAL ([\w.]+)", str(exc))
        if found is None:
            raise input_error(
                f"cannot read {path} with torch.load(weights_only=True): not a torch.save file of tensors, "
                f"plain values and PyG data classes; {hint}"
            ) from None
        raise input_error(
            f"refusing to unpickle {path}: it names {found.group(1)}, which is not a tensor, a plain value "
            f"or a PyG data class (unpickling it could run code); {hint}"
        ) from None
    except Exception as exc:  # noqa: BLE001 - unpickling can raise anything
        raise input_error(f"cannot read {path} with torch.load: {first_line(exc)}") from exc


allow_pyg_objects_in_torch_load()
