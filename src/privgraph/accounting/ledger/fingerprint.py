"""The public fingerprint a ledger binds to one dataset: the node count, and at the owner's choice a hash of
the graph's content (:func:`content_digest`)."""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from typing import Any


def content_digest(data: Any, fields: Iterable[str] | None = None, key: bytes | None = None) -> str:
    """A hash of the data's content: for every node and edge store (in order of its key), the values of its
    tensors (``fields`` only, when given) with their names and shapes, floating values as float64 and the
    others as int64, so a copy, a reordered or extra attribute, or another dtype of the same values hashes
    the same; one changed value does not.  Keyed (BLAKE2b) with ``key``, else SHA-256."""
    import torch

    h = hashlib.blake2b(key=key, digest_size=32) if key else hashlib.sha256()
    wanted = None if fields is None else set(fields)
    stores = getattr(data, "stores", [data])
    for store in sorted(stores, key=lambda s: repr(getattr(s, "_key", None))):
        h.update(repr(getattr(store, "_key", None)).encode())
        for name in sorted(store.keys()):
            value = store[name]
            if not torch.is_tensor(value) or (wanted is not None and name not in wanted):
                continue
            t = value.detach().cpu().reshape(-1)
            t = t.to(torch.float64) if t.is_floating_point() else t.to(torch.int64)
            h.update(repr((name, tuple(value.shape))).encode())
            h.update(t.contiguous().numpy().tobytes())
    return h.hexdigest()


def data_relations(data: Any) -> list[tuple[str, ...]] | None:
    """A heterogeneous graph's relations ``(src, rel, dst)``, sorted; None for a homogeneous one."""
    types = getattr(data, "edge_types", None) if hasattr(data, "node_types") else None
    return None if types is None else sorted(tuple(str(t) for t in r) for r in types)


# the fields whose values are the graph's content for a ledger's content hash (not the split, not annotations)
CONTENT_FIELDS = ("x", "edge_index", "y", "sens", "edge_attr", "edge_weight")


def fingerprint_of(data: Any, content_hash: bool = False) -> dict[str, Any]:
    """The public fingerprint a ledger binds to: the node count (treated as public), and with ``content_hash``
    the SHA-256 of the graph's content (:data:`CONTENT_FIELDS` by :func:`content_digest`: the owner's choice
    to record it)."""
    out: dict[str, Any] = {"num_nodes": int(data.num_nodes)}
    relations = data_relations(data)
    if relations is not None:  # a heterogeneous graph's schema (public): its relation units are checked against it
        out["relations"] = [list(r) for r in relations]
    if content_hash:
        out["content_sha256"] = content_digest(data, CONTENT_FIELDS)
    return out


__all__ = ["CONTENT_FIELDS", "content_digest", "data_relations", "fingerprint_of"]
