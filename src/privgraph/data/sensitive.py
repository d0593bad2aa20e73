"""Graphs with a sensitive node attribute (PPCVGAE, §6.1): German credit, Recidivism
(Bail), Credit defaulter and Pokec-z/-n, as released by NIFTY (Agarwal et al.
2021) and FairGNN (Dai & Wang 2021).

``load_sensitive(name)`` returns a PyG ``Data`` with

* ``x`` — the non-sensitive features, min–max normalised to [0, 1] per column
  by :func:`minmax_normalize` (constant columns dropped).  The sensitive
  attribute is *not* among them: PPCVGAE conditions on ``s`` separately, and
  a release must not carry it;
* ``y`` — the utility label (0/1), ``sens`` — the sensitive attribute (0/1);
* ``edge_index`` — undirected, without self-loops or duplicate rows;
* ``private_mask`` — a seeded random 70 % of the nodes whose ``sens`` is to be
  protected (P), the others are public (Q); ``train/val/test_mask`` a seeded
  random 50/30/20 split (stratified by ``y``), as the paper.

Raw files (a table and an edge list) are read from ``$PRIVGRAPH_DATA/<Folder>/raw``;
each dataset's folder and files are in the registry (``privgraph datasets``).
Feature choices follow NIFTY/FairGNN's loaders: German drops ``PurposeOfLoan``
(categorical) and ``OtherLoansAtStore``, Gender Female = 1; Pokec labels > 1
become 1 and nodes with label −1 are in no split.  Edge counts: the paper's
Table 1 counts ``(directed edges + n)/2`` (NIFTY's adjacency with self-loops), e.g.
German (43,484 + 1,000)/2 = 22,242.
"""

from __future__ import annotations

import csv
import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from privgraph.data.dataset_info import DATA_ENV, SENSITIVE, register_dataset
from privgraph.data.dataset_info import find_dataset as get_dataset  # its own graph's: all registered when it runs
from privgraph.data.datasets import DatasetUnavailableError

if TYPE_CHECKING:
    import numpy as np
    from torch_geometric.data import Data


@dataclass(frozen=True)
class SensitiveSpec:
    """How a table with a sensitive attribute is read: its files and columns."""

    name: str
    folder: str
    table: str
    edges: str
    label: str
    sensitive: str
    drop: tuple[str, ...] = ()
    id_column: str | None = None


def _register(key: str, spec: SensitiveSpec, source: str, **metadata: Any) -> None:
    """Register a dataset read by :func:`_read` from ``spec``'s files."""

    def loader(root: str | os.PathLike | None, seed: int) -> Data:
        return _read(spec, root)

    register_dataset(
        key,
        graph=SENSITIVE,
        name=spec.name,
        source=source,
        tasks=("nc", "attribute"),
        layout=f"{spec.folder}/raw",
        files=(spec.table, spec.edges),
        sensitive=spec.sensitive,
        **metadata,
    )(loader)


_register(
    "german",
    SensitiveSpec(
        "German",
        "German",
        "german.csv",
        "german_edges.txt",
        "GoodCustomer",
        "Gender",
        ("PurposeOfLoan", "OtherLoansAtStore"),
    ),
    "NIFTY (Agarwal et al. 2021)",
)
_register(
    "bail",
    SensitiveSpec("Recidivism", "Bail", "bail.csv", "bail_edges.txt", "RECID", "WHITE"),
    "NIFTY (Agarwal et al. 2021)",
    aliases=("recidivism",),
)
_register(
    "credit",
    SensitiveSpec("Credit", "Credit", "credit.csv", "credit_edges.txt", "NoDefaultNextMonth", "Age"),
    "NIFTY (Agarwal et al. 2021)",
)
_register(
    "pokec-z",
    SensitiveSpec(
        "Pokec-z",
        "Pokec",
        "region_job.csv",
        "region_job_relationship.txt",
        "I_am_working_in_field",
        "region",
        id_column="user_id",
    ),
    "FairGNN (Dai & Wang 2021)",
)
_register(
    "pokec-n",
    SensitiveSpec(
        "Pokec-n",
        "Pokec",
        "region_job_2.csv",
        "region_job_2_relationship.txt",
        "I_am_working_in_field",
        "region",
        id_column="user_id",
    ),
    "FairGNN (Dai & Wang 2021)",
)


@register_dataset(
    "planted",
    graph=SENSITIVE,
    name="SBM (planted attribute)",
    aliases=("sbm",),
    source="built in: privgraph.data.sensitive_sbm_graph",
    tasks=("nc", "attribute"),
    synthetic=True,
    sensitive="planted",
)
def _planted(root: str | os.PathLike | None, seed: int, **params: Any) -> Data:
    from privgraph.data.synthetic import sensitive_sbm_graph

    return sensitive_sbm_graph(seed=seed, **params)


def _raw_dir(spec: SensitiveSpec, root: str | os.PathLike | None) -> Path:
    base = root if root is not None else os.environ.get(DATA_ENV)
    if not base:
        raise DatasetUnavailableError(
            f"{spec.name}: set ${DATA_ENV} (or pass root=) to the folder holding {spec.folder}/raw/{spec.table}"
        )
    return Path(base) / spec.folder / "raw"


def _read_table(path: Path) -> tuple[list[str], list[list[str]]]:
    with open(path, newline="") as fh:
        rows = list(csv.reader(fh))
    return rows[0], rows[1:]


def _encode(column: list[str], positive: str | None = None) -> np.ndarray:
    import numpy as np

    if positive is not None:
        return np.array([v == positive for v in column], dtype=np.int64)
    return np.array([float(v) for v in column], dtype=np.float64)


def load_sensitive(
    name: str,
    root: str | os.PathLike | None = None,
    seed: int = 0,
    private_ratio: float = 0.7,
    train_ratio: float = 0.5,
    val_ratio: float = 0.3,
    **options: Any,
) -> Data:
    """Load a graph with a sensitive attribute (module docstring).  The synthetic ``planted``
    (also ``sbm``) is generated from ``seed``, ``private_ratio`` and ``options`` (its parameters),
    with its own 50/30/20 split."""
    if not 0.0 < private_ratio < 1.0:
        raise ValueError(f"private_ratio must lie in (0, 1), got {private_ratio}")
    info = get_dataset(name, SENSITIVE)
    if info.synthetic:
        return info.build(root, seed, private_ratio=private_ratio, **options)
    from privgraph.data.splits import split_sensitive

    return split_sensitive(info.build(root, seed, **options), seed, private_ratio, train_ratio, val_ratio)


def _read(spec: SensitiveSpec, root: str | os.PathLike | None) -> Data:
    """The graph of ``spec``'s files: features normalised, ``sens`` kept apart, no split yet."""
    import numpy as np
    import torch
    from torch_geometric.data import Data
    from torch_geometric.utils import coalesce, remove_self_loops, to_undirected

    from privgraph.data.transforms import minmax_normalize

    raw = _raw_dir(spec, root)
    table, edges = raw / spec.table, raw / spec.edges
    if not table.is_file():
        raise DatasetUnavailableError(f"{spec.name}: {table} not found")
    if not edges.is_file():
        raise DatasetUnavailableError(
            f"{spec.name}: the edge file {edges} is missing (our copy of Credit defaulter has none); "
            "the graph cannot be loaded without it"
        )
    header, rows = _read_table(table)
    columns = {h: [r[i] for r in rows] for i, h in enumerate(header)}
    for required in (spec.label, spec.sensitive):
        if required not in columns:
            raise ValueError(f"{table}: no column {required!r}")
    if spec.sensitive == "Gender":
        sens = _encode(columns[spec.sensitive], positive="Female")
    else:
        sens = _encode(columns[spec.sensitive]).astype(np.int64)
    labels = _encode(columns[spec.label]).astype(np.int64)
    if spec.label == "GoodCustomer":  # {-1, 1} → {0, 1}
        labels = (labels > 0).astype(np.int64)
    if spec.id_column is not None:  # Pokec (FairGNN): labels > 1 → 1, sensitive > 0 → 1, −1 unlabeled
        labels = np.where(labels > 1, 1, labels)
        sens = (sens > 0).astype(np.int64)
    skip = {spec.label, spec.sensitive, *spec.drop} | ({spec.id_column} if spec.id_column else set())
    feature_names = [h for h in header if h not in skip]
    x = np.stack([_encode(columns[h]) for h in feature_names], axis=1)

    pairs = np.loadtxt(edges, dtype=np.float64, ndmin=2).astype(np.int64)
    n = len(rows)
    if spec.id_column is not None:
        ids = np.array([int(float(v)) for v in columns[spec.id_column]], dtype=np.int64)
        lookup = dict(zip(ids.tolist(), range(n)))
        mapped = np.array([[lookup.get(a, -1), lookup.get(b, -1)] for a, b in pairs.tolist()], dtype=np.int64)
        pairs = mapped[(mapped >= 0).all(axis=1)]
    if pairs.size and (pairs.min() < 0 or pairs.max() >= n):
        raise ValueError(f"{edges}: node ids outside 0..{n - 1}")
    edge_index, _ = remove_self_loops(torch.from_numpy(pairs.T.copy()))
    edge_index = coalesce(to_undirected(edge_index, num_nodes=n), num_nodes=n)

    data = minmax_normalize(Data(x=torch.from_numpy(x), y=torch.from_numpy(labels), edge_index=edge_index, num_nodes=n))
    data.sens = torch.from_numpy(sens)
    data.name = spec.name
    data.feature_names = [h for h, col in zip(feature_names, x.T) if col.max() > col.min()]
    data.sensitive_name = spec.sensitive
    data.num_classes = 2  # each dataset's binary prediction task (its schema), never read from the labels
    return data
