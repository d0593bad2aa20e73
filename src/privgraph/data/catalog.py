"""Every dataset the loaders know, with its source and whether its raw files are here.

``privgraph datasets`` prints :func:`dataset_catalog`; the experiment pipeline
checks a dataset name against it (:func:`check_dataset`) before any work.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from privgraph.data.datasets import DATA_ENV, DATASETS
from privgraph.data.hetero import HETERO_SPECS, TASKS, VARIANTS
from privgraph.data.sensitive import SENSITIVE_DATASETS

HOMOGENEOUS, HETEROGENEOUS, SENSITIVE, SYNTHETIC = "homogeneous", "heterogeneous", "sensitive attribute", "synthetic"


@dataclass(frozen=True)
class CatalogEntry:
    """One dataset: its ``--dataset`` name, kind, display name, source, the raw folder under
    ``$PRIVGRAPH_DATA`` (None for synthetic graphs) and what it is used for."""

    key: str
    kind: str
    name: str
    source: str
    folder: str | None
    tasks: str

    def available(self) -> bool | None:
        """True/False: whether ``$PRIVGRAPH_DATA`` holds its raw folder; None: built in or unknown
        (``$PRIVGRAPH_DATA`` unset)."""
        if self.folder is None:
            return None
        root = os.environ.get(DATA_ENV)
        if not root:
            return None
        return (Path(root) / self.folder).is_dir()


def dataset_catalog() -> list[CatalogEntry]:
    """The homogeneous (PyG), heterogeneous (HGB, MAGNN, HeteDP's Amazon), sensitive-attribute
    (PPCVGAE §6) and synthetic datasets."""
    out = [CatalogEntry(key, HOMOGENEOUS, spec.name, f"PyG {spec.name}", f"{spec.folder}/raw",
                        "node classification; link methods") for key, spec in DATASETS.items()]
    for key, spec in HETERO_SPECS.items():
        tasks = "node classification, link prediction" if TASKS[key].node_type else "link prediction"
        source = "HGB (PyG HGBDataset)" if spec.folder.startswith("HGB") else "MAGNN (PyG)"
        out.append(CatalogEntry(key, HETEROGENEOUS, spec.name, source, spec.folder, f"HeteDP: {tasks}"))
    for key, variant in VARIANTS.items():
        base = HETERO_SPECS[variant.base]
        out.append(CatalogEntry(key, HETEROGENEOUS, variant.name, f"{variant.base}, features on "
                                f"{', '.join(variant.featured)} only", base.folder, "HeteDP: node classification, "
                                "link prediction (controlled comparisons)"))
    out.append(CatalogEntry("amazon", HETEROGENEOUS, "Amazon (HeteDP)", "HeteDP repo (AixWinnie)",
                            "HeteDP/Amazon", "HeteDP: link prediction"))
    for key, spec in SENSITIVE_DATASETS.items():
        out.append(CatalogEntry(key, SENSITIVE, spec.name, f"NIFTY ({spec.table})",
                                f"{spec.folder}/raw", f"PPCVGAE: embeddings hiding {spec.sensitive!r}"))
    out += [CatalogEntry("sbm", SYNTHETIC, "SBM", "built in: SBM (+ planted attribute; "
                         "heterogeneous)", None, "every method")]
    return out


def check_dataset(name: str, kind: str) -> None:
    """Refuse a name the loaders of ``kind`` do not know, listing those they do."""
    from privgraph.data.datasets import resolve_name
    from privgraph.data.sensitive import resolve_sensitive

    known = [e.key for e in dataset_catalog() if e.kind in (kind, SYNTHETIC)]
    if name.lower() in known or (kind == SENSITIVE and name.lower() == "planted"):
        return
    resolver = {HOMOGENEOUS: resolve_name, SENSITIVE: resolve_sensitive}.get(kind)
    try:
        if resolver is not None:
            resolver(name)
            return
    except ValueError:
        pass
    raise ValueError(f"unknown {kind} dataset {name!r}; choose from {', '.join(known)} (`privgraph datasets`)")


__all__ = ["CatalogEntry", "check_dataset", "dataset_catalog"]
