"""A node-level release publishes nothing of the node set.

For every registered method whose unit is a whole node (node-level DP: :func:`privgraph.release.hides_node_set`),
the graph G with one more isolated node v (not training) and G − v are released with the same seed and saved:
the file's metadata, the report, the JSON, the files written and the data file's content must be identical
(no exact node count, no id map, no per-node field, no note that depends on the input), and the ledger's
fingerprint stays in the curator's ledger.
"""

from __future__ import annotations

import json
from dataclasses import fields

import pytest
import torch

import privgraph as pg
from privgraph.accounting import Ledger, Unit
from privgraph.audit.neighbours import with_isolated_node
from privgraph.audit.runner import default_input
from privgraph.methods import METHODS
from privgraph.release import NODE_SET_WITHHELD, hides_node_set

NODE_LEVEL = sorted(name for name, cls in METHODS.items() if hides_node_set(cls.unit))
FAST = {"epochs": 1, "encoder_epochs": 1, "batch_size": 8, "hidden": 4}  # wherever the method has them


def test_the_node_level_methods_are_found():
    assert {"gap-ndp", "node-dpsgd"} <= set(NODE_LEVEL)
    assert not hides_node_set(Unit.EDGE) and not hides_node_set(Unit.NODE_FEATURES)


def _method(name):
    cls = METHODS[name]
    names = {f.name for f in fields(cls.Params)}
    method = cls(**{k: v for k, v in FAST.items() if k in names})
    data = default_input(method)
    if "num_train" in names:
        method = method.with_params(num_train=int(data.train_mask.sum()))
    return method, data


def _payload(value):
    """A data file's content, its tensors by shape and dtype."""
    if isinstance(value, dict):
        return {k: _payload(v) for k, v in value.items()}
    if torch.is_tensor(value):
        return ("tensor", tuple(value.shape), str(value.dtype))
    return value


@pytest.mark.parametrize("name", NODE_LEVEL)
def test_a_node_level_release_is_the_same_on_g_and_g_minus_v(name, tmp_path):
    method, smaller = _method(name)
    bigger = with_isolated_node(smaller)
    seen = []
    for i, data in enumerate((bigger, smaller)):
        data = data.clone()
        data.node_ids = [f"n{j}" for j in range(data.num_nodes)]  # an edge list's own ids: never released here
        folder = tmp_path / str(i)
        folder.mkdir()
        # a budget on the method's own unit (restricted node-DP is not node-DP: a node budget refuses it)
        ledger = Ledger(folder / "book.json", {method.claim_unit(): 100.0}, dataset="mine")
        rel = pg.privatize(data, method, epsilon=4.0, seed=3, ledger=ledger)
        assert rel.node_ids is None and "num_nodes" not in rel.data
        assert all(rel.fields[k] == NODE_SET_WITHHELD for k in method.public_fields if k in data)
        path, report = rel.save(folder / "rel.pt")
        text = report.read_text()
        assert "fingerprint" not in text and str(data.num_nodes) not in json.loads(text)["report"][0]
        seen.append(
            {
                "files": sorted(p.name for p in folder.iterdir() if p.name != "book.json"),
                "json": _sizes_only(json.loads(text)),
                "lines": rel.report.lines(),
                "payload": _payload(torch.load(path)),
                "model": _payload(torch.load(folder / "rel.pt.model.pt")) if rel.model_state else None,
            }
        )
    assert "rel.pt.ids.csv" not in seen[0]["files"]
    for key in seen[0]:
        assert seen[0][key] == seen[1][key], f"{name}: the release's {key} differs between G and G − v"


def _sizes_only(metadata: dict) -> dict:
    """The report with each file's checksum reduced to its size and rows: the SHA-256 is a function of the file
    (the noisy release, or the weights trained on the data: covered by the noise), a size would tell n."""
    out = dict(metadata)
    out["checksums"] = {
        name: {k: v for k, v in entry.items() if k != "sha256"} for name, entry in out.get("checksums", {}).items()
    }
    return out
