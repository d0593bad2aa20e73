"""The dataset registry: one entry per dataset, read by the loaders, `privgraph datasets`, the
error messages and docs/datasets.md."""

import json
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from privgraph.cli import app
from privgraph.data import dataset_info, load, load_sensitive, registry
from privgraph.data.hetero import load_hetero
from privgraph.data.registry import (
    EVALUATION_TASKS,
    GRAPHS,
    HETEROGENEOUS,
    HOMOGENEOUS,
    KINDS,
    SENSITIVE,
    DatasetInfo,
    dataset_names,
    get_dataset,
    list_datasets,
    markdown_table,
    register_dataset,
)

DOCS = Path(__file__).resolve().parents[2] / "docs" / "datasets.md"
BEGIN, END = "<!-- datasets table", "<!-- end of the datasets table -->"


@pytest.fixture
def scratch_registry(monkeypatch):
    """A copy of the registry that the test may register into."""
    list_datasets()  # every loader module registered
    monkeypatch.setattr(dataset_info, "_REGISTRY", dict(dataset_info._REGISTRY))  # the store


def test_every_dataset_has_a_kind_loader_source_and_tasks():
    entries = list_datasets()
    assert len(entries) >= 20
    for info in entries:
        assert info.kind in KINDS and info.graph in GRAPHS, info.key
        assert callable(info.loader) and info.source and info.name, info.key
        assert info.tasks and set(info.tasks) <= set(EVALUATION_TASKS), info.key
        assert (info.layout is None) == info.synthetic, info.key
        if info.graph == SENSITIVE:
            assert info.sensitive and "attribute" in info.tasks, info.key
        if info.graph == HETEROGENEOUS:
            assert info.hetero is not None and ("hetero-nc" in info.tasks) == (info.hetero.node_type is not None)
        json.dumps(info.describe())


def test_the_evaluation_tasks_are_the_pipelines():
    from privgraph.experiments.tasks import TASK_CLASSES

    assert set(EVALUATION_TASKS) == set(TASK_CLASSES)


def test_synthetic_names_are_registered_datasets():
    assert get_dataset("sbm", HOMOGENEOUS).synthetic and get_dataset("sbm", HETEROGENEOUS).synthetic
    planted = get_dataset("planted", SENSITIVE)
    assert planted.synthetic and get_dataset("sbm", SENSITIVE) is planted  # the attribute task's sbm
    assert get_dataset("sbm", HOMOGENEOUS, SENSITIVE).graph == HOMOGENEOUS  # homogeneous first
    assert load("sbm", seed=1, num_nodes=80, num_features=6).num_nodes == 80
    assert int(load_sensitive("sbm", seed=1, num_nodes=60).sens.numel()) == 60
    assert load_hetero("sbm", seed=1, num_papers=30, num_authors=20)["paper"].x.shape[0] == 30


def test_names_and_aliases_resolve_whatever_their_case_and_separators():
    assert get_dataset("FacebookPagePage", HOMOGENEOUS).key == "facebook"
    assert get_dataset("Recidivism", SENSITIVE).key == "bail"
    assert get_dataset("pokec_z", SENSITIVE).key == get_dataset("PokecZ", SENSITIVE).key == "pokec-z"
    assert get_dataset("DBLP-MAGNN", HETEROGENEOUS).key == "dblp-magnn"
    assert get_dataset("dblp-hetedp", HETEROGENEOUS).base == "dblp-magnn"


def test_a_name_taken_among_a_graphs_datasets_is_refused(scratch_registry):
    def loader(root, seed):
        raise AssertionError("never loaded")

    fields = dict(graph=HOMOGENEOUS, name="X", source="test", tasks=("nc",), layout="X/raw")
    with pytest.raises(ValueError, match="'cora' is taken by 'cora' among the homogeneous datasets"):
        register_dataset("cora", **fields)(loader)
    with pytest.raises(ValueError, match="'Face_Book' is taken by 'facebook'"):
        register_dataset("toy", aliases=("Face_Book",), **fields)(loader)
    with pytest.raises(ValueError, match="'TOY' is taken by 'toy'"):
        register_dataset("toy", aliases=("TOY",), **fields)(loader)
    register_dataset("cora", **{**fields, "graph": SENSITIVE, "sensitive": "s"})(loader)  # another loader's names
    register_dataset("toy", **fields)(loader)
    assert "toy" in dataset_names(HOMOGENEOUS)


def test_an_entry_missing_what_its_kind_needs_is_refused():
    def loader(root, seed):
        return None

    base = dict(key="x", name="X", source="test", loader=loader)
    with pytest.raises(ValueError, match="tasks"):
        DatasetInfo(graph=HOMOGENEOUS, tasks=(), layout="X", **base)
    with pytest.raises(ValueError, match="tasks"):
        DatasetInfo(graph=HOMOGENEOUS, tasks=("classify",), layout="X", **base)
    with pytest.raises(ValueError, match="graph must be one of"):
        DatasetInfo(graph="planar", tasks=("nc",), layout="X", **base)
    with pytest.raises(ValueError, match="needs a layout"):
        DatasetInfo(graph=HOMOGENEOUS, tasks=("nc",), **base)
    with pytest.raises(ValueError, match="sensitive attribute"):
        DatasetInfo(graph=SENSITIVE, tasks=("attribute",), layout="X", **base)
    with pytest.raises(ValueError, match="HeteroTask"):
        DatasetInfo(graph=HETEROGENEOUS, tasks=("lp",), layout="X", **base)
    with pytest.raises(ValueError, match="read from files: num_nodes set a synthetic graph only"):
        get_dataset("cora", HOMOGENEOUS).build(num_nodes=3)


def test_the_unknown_dataset_error_lists_the_registered_names():
    for graphs, what in (
        ((HOMOGENEOUS,), "homogeneous"),
        ((SENSITIVE,), "sensitive attribute"),
        ((HETEROGENEOUS,), "heterogeneous"),
    ):
        with pytest.raises(ValueError) as err:
            get_dataset("nope", *graphs)
        assert str(err.value) == (
            f"unknown {what} dataset 'nope'; choose from {', '.join(dataset_names(*graphs))} (`privgraph datasets`)"
        )
    for loader, graph in ((load, HOMOGENEOUS), (load_sensitive, SENSITIVE), (load_hetero, HETEROGENEOUS)):
        with pytest.raises(ValueError, match=", ".join(dataset_names(graph))):
            loader("nope")


def test_the_pipeline_refuses_an_unknown_dataset_with_the_registered_names():
    from privgraph.experiments import ExperimentSpec

    for method, graphs in (
        ("gcn-raw", (HOMOGENEOUS, SENSITIVE)),
        ("ppcvgae", (SENSITIVE,)),
        ("rgcn", (HETEROGENEOUS,)),
    ):
        with pytest.raises(ValueError, match=f"choose from {', '.join(dataset_names(*graphs))} "):
            ExperimentSpec(method=method, dataset="nope").validate()


def test_privgraph_datasets_lists_exactly_the_registered_names():
    res = CliRunner().invoke(app, ["datasets", "--format", "json"])
    assert res.exit_code == 0, res.output
    listed = json.loads(res.output)
    assert [(e["key"], e["graph"]) for e in listed] == [(i.key, i.graph) for i in list_datasets()]
    assert {e["key"] for e in listed} == set(dataset_names())
    table = CliRunner().invoke(app, ["datasets"], env={"COLUMNS": "200"})
    assert table.exit_code == 0
    rows = [line.split("│")[1].strip() for line in table.output.splitlines() if line.startswith("│")]
    assert [r for r in rows if r] == [i.key for i in list_datasets()]


def test_the_docs_table_is_the_registrys():
    """docs/datasets.md's table is `privgraph datasets --format markdown`'s output; regenerate it with
    that command when the registry changes."""
    text = DOCS.read_text()
    start = text.index("\n", text.index(BEGIN)) + 1
    assert text[start : text.index(END)] == markdown_table()
    res = CliRunner().invoke(app, ["datasets", "--format", "markdown"])
    assert res.exit_code == 0 and res.output == markdown_table()


def test_the_metadata_is_read_without_torch():
    """The registry and the loader modules import neither torch nor PyG (the parent package
    ``privgraph.data`` still does: it is replaced by an empty one here)."""
    code = f"""
import importlib.abc, sys, types
class Block(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):
        if name.split(".")[0] in ("torch", "torch_geometric", "sklearn"):
            raise ImportError("blocked: " + name)
sys.meta_path.insert(0, Block())
package = types.ModuleType("privgraph.data")
package.__path__ = [{str(Path(registry.__file__).parent)!r}]
sys.modules["privgraph.data"] = package
from privgraph.data.registry import list_datasets, markdown_table
print(len(list_datasets()), len(markdown_table()))
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split()[0] == str(len(list_datasets()))
