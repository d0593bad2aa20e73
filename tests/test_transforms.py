"""privgraph.transforms: the methods and mechanisms as PyG transforms."""

import copy
import math

import pytest
import torch
import torch_geometric.transforms as T
from torch_geometric.data import Data, InMemoryDataset
from torch_geometric.utils import to_dense_adj

import privgraph as pg
from privgraph.accounting import PrivacyReport, Unit
from privgraph.mechanisms import MultiBit as MultiBitMechanism
from privgraph.transforms import LabelRR, LinkLDP, MultiBit, Privatize, RepeatedReleaseError, privacy_report


@pytest.fixture(scope="module")
def graph(sbm) -> Data:
    """Non-negative features (not in [0, 1] before NormalizeFeatures), labels and a split."""
    data = sbm(num_nodes=120, num_classes=3, num_features=12, avg_degree=5.0, homophily=0.8, feature_signal=0.3, seed=3)
    data.x = data.x * 3.0  # outside [0, 1]: only NormalizeFeatures makes it LPGNN's input
    return data


def test_compose_with_pyg_gives_privatize_release(graph):
    out = T.Compose([T.NormalizeFeatures(), Privatize("lpgnn", epsilon=1, seed=0)])(graph)
    expected = pg.privatize(T.NormalizeFeatures()(copy.copy(graph)), "lpgnn", epsilon=1, seed=0)
    assert torch.equal(out.x, expected.data.x) and torch.equal(out.edge_index, expected.data.edge_index)
    assert torch.equal(out.y, expected.data.y) and torch.equal(out.train_mask, expected.data.train_mask)
    assert not torch.equal(out.x, T.NormalizeFeatures()(copy.copy(graph)).x)  # noise was added
    report = privacy_report(out)
    assert isinstance(report, PrivacyReport) and report.to_dict() == expected.report.to_dict()
    assert report.by_unit()[Unit.NODE_FEATURES].epsilon == 1.0
    assert "privacy_report" not in graph  # the input is not touched
    assert pg.Privatize is Privatize  # the package's lazy name


def test_second_application_refused_unless_composed(graph):
    first = T.Compose([T.NormalizeFeatures(), Privatize("lpgnn", epsilon=1, seed=0)])(graph)
    first.feature_domain = (0.0, 1.0)  # a release carries no domain: the second one declares its own
    with pytest.raises(RepeatedReleaseError, match="compose=True"):
        Privatize("lpgnn", epsilon=1, seed=1)(first)
    again = Privatize("lpgnn", epsilon=2, seed=1, compose=True, clip=True)(first)  # estimates leave [0, 1]
    assert privacy_report(again).by_unit()[Unit.NODE_FEATURES].epsilon == 3.0
    assert [g.epsilon for g in privacy_report(again).guarantees] == [1.0, 2.0]


def test_same_graph_twice_gives_the_same_release_and_composes_with_fresh_noise(graph, tmp_path):
    """PyG's habit: ``dataset[0]`` read twice gives the same data.  An equal copy of the input (a
    dataset's ``__getitem__``) through the same transform, or a fresh one of the same settings, returns the same
    release: no new noise, no new charge on the ledger; ``compose=True`` asks for fresh noise, charged."""
    normalized = T.NormalizeFeatures()(copy.copy(graph))
    ledger = pg.Ledger(tmp_path / "book.json", {Unit.NODE_FEATURES: 1.5}, dataset="sbm")
    once = Privatize("lpgnn", epsilon=1, ledger=ledger)  # the OS source: a new release would differ
    first = once(normalized)
    again = once(copy.copy(normalized))
    fresh = Privatize("lpgnn", epsilon=1, ledger=ledger)(copy.copy(normalized))
    assert torch.equal(first.x, again.x) and torch.equal(first.x, fresh.x)
    assert privacy_report(again).by_unit()[Unit.NODE_FEATURES].epsilon == 1.0
    assert len(ledger.entries) == 1  # one release, charged once
    again.x.zero_()  # the cached release is not shared: changing one copy changes no other
    assert torch.equal(once(copy.copy(normalized)).x, first.x)
    composing = Privatize("lpgnn", epsilon=1, seed=0, compose=True)
    a, b, c = (composing(normalized) for _ in range(3))
    assert [privacy_report(r).by_unit()[Unit.NODE_FEATURES].epsilon for r in (a, b, c)] == [1.0, 2.0, 3.0]
    assert not torch.equal(a.x, b.x) and not torch.equal(b.x, c.x)  # a seeded transform never repeats its noise
    assert composing.releases == 3


def test_default_source_is_the_os(graph):
    normalized = T.NormalizeFeatures()(copy.copy(graph))
    for transform in (Privatize("lpgnn", epsilon=1), MultiBit(1.0), LinkLDP(1.0), LabelRR(1.0)):
        notes = privacy_report(transform(normalized)).guarantees[0].notes
        assert any("os.urandom" in n for n in notes), transform
    seeded = privacy_report(MultiBit(1.0, seed=7)(normalized)).guarantees[0].notes
    assert any("REPRODUCIBLE" in n and "seed 7" in n for n in seeded)


def test_bad_arguments_are_clear_value_errors():
    with pytest.raises(ValueError, match="unknown method"):
        Privatize("no-such-method", epsilon=1)
    with pytest.raises(ValueError, match="give epsilon"):
        Privatize("lpgnn")
    with pytest.raises(ValueError, match="takes no epsilon"):
        Privatize("gcn-raw", epsilon=1)
    with pytest.raises(ValueError, match="not both"):
        Privatize("lpgnn", epsilon=1, seed=0, rng=torch.Generator())
    with pytest.raises(ValueError, match="node-classification"):
        Privatize("ppcvgae", epsilon=1)
    with pytest.raises(ValueError):
        MultiBit(-1.0)
    with pytest.raises(ValueError):
        LinkLDP(1.0, degree_share=1.5)


def test_multibit_has_the_mechanisms_support_and_guarantee(graph):
    normalized = T.NormalizeFeatures()(copy.copy(graph))
    out = MultiBit(2.0, m=3, seed=0)(normalized)
    scale, offset = MultiBitMechanism(2.0, m=3).rectifier(normalized.x.shape[1])
    support = (torch.tensor([-1.0, 0.0, 1.0], dtype=torch.float64) * scale + offset).to(torch.float32)
    assert set(out.x.unique().tolist()) <= set(support.tolist())
    assert torch.equal((out.x != support[1]).sum(dim=1), torch.full((graph.num_nodes,), 3))  # m features per node
    assert torch.equal(out.edge_index, graph.edge_index) and torch.equal(out.y, graph.y)  # other fields kept
    g = privacy_report(out).by_unit()[Unit.NODE_FEATURES]
    assert g.epsilon == 2.0 and g.mechanism == "multibit"
    raw = MultiBit(2.0, m=3, rectify=False, seed=0)(normalized)
    assert set(raw.x.unique().tolist()) == {-1.0, 0.0, 1.0}
    assert torch.equal(raw.x != 0, out.x != support[1])  # the same draw, rectified or not
    with pytest.raises(ValueError, match="outside the declared domain"):
        MultiBit(2.0)(graph)  # features in [0, 3]: refused, not silently clipped


def test_link_ldp_returns_the_servers_graph_and_guarantee(graph):
    data = copy.copy(graph)
    data.edge_weight = torch.ones(data.edge_index.shape[1])
    out = LinkLDP(2.0, degree_share=0.2, seed=0)(data)
    dense = to_dense_adj(out.edge_index, max_num_nodes=graph.num_nodes)[0]
    truth = to_dense_adj(graph.edge_index, max_num_nodes=graph.num_nodes)[0]
    p_flip = 1 / (1 + math.exp(0.8 * 2.0))
    flips = (dense != truth).float()
    off_diagonal = graph.num_nodes * (graph.num_nodes - 1)
    assert dense.diagonal().sum() == 0
    rate = float(flips.sum()) / off_diagonal
    assert abs(rate - p_flip) < 4 * math.sqrt(p_flip * (1 - p_flip) / off_diagonal), (rate, p_flip)
    assert not torch.equal(dense, dense.T)  # i's and j's reports on a pair are independent: directed
    assert "edge_weight" not in out  # described the true edges
    assert out.noisy_degree.shape == (graph.num_nodes,) and torch.equal(out.x, graph.x)
    g = privacy_report(out).by_unit()[Unit.ADJACENCY_LIST]
    assert g.epsilon == 2.0 and "Blink" in g.mechanism


def test_label_rr_and_chaining_different_units(graph):
    normalized = T.NormalizeFeatures()(copy.copy(graph))
    out = T.Compose([MultiBit(1.0, seed=0), LabelRR(2.0, seed=1, compose=True)])(normalized)
    assert "y" not in out and out.num_classes == 3 and out.label_epsilon == 2.0
    collected = graph.train_mask | graph.val_mask
    assert bool((out.y_reported[~collected] == -1).all()) and bool((out.y_reported[collected] >= 0).all())
    report = privacy_report(out)
    assert report.by_unit()[Unit.NODE_LABEL].epsilon == 2.0 and report.by_unit()[Unit.NODE_FEATURES].epsilon == 1.0
    assert report.per_node.epsilon == 3.0
    with pytest.raises(RepeatedReleaseError):
        T.Compose([MultiBit(1.0, seed=0), LabelRR(2.0, seed=1)])(normalized)


class TinyDataset(InMemoryDataset):
    """An in-memory dataset of two small graphs, processed into ``root``."""

    def __init__(self, root, graphs, transform=None, pre_transform=None):
        self.graphs = graphs
        super().__init__(root, transform, pre_transform, force_reload=True)
        self.load(self.processed_paths[0])

    @property
    def raw_file_names(self):
        return []

    @property
    def processed_file_names(self):
        return ["data.pt"]

    def download(self):
        pass

    def process(self):
        items = [copy.copy(g) for g in self.graphs]
        if self.pre_transform is not None:
            items = [self.pre_transform(g) for g in items]
        self.save(items, self.processed_paths[0])


def _two_graphs(graph):
    other = copy.copy(graph)
    other.x = graph.x.flip(0)
    return [graph, other]


def test_pre_transform_releases_once_and_survives_disk(graph, tmp_path):
    pre = T.Compose([T.NormalizeFeatures(), Privatize("lpgnn", epsilon=1, seed=0)])
    ds = TinyDataset(tmp_path, _two_graphs(graph), pre_transform=pre)
    first, again = ds[0], ds[0]
    assert torch.equal(first.x, again.x)  # read twice, released once
    assert privacy_report(first).by_unit()[Unit.NODE_FEATURES].epsilon == 1.0
    assert not torch.equal(ds[0].x, ds[1].x)
    reloaded = torch.load(ds.processed_paths[0], weights_only=True)  # the report is allow-listed, no code runs
    assert reloaded is not None
    expected = pg.privatize(T.NormalizeFeatures()(copy.copy(graph)), "lpgnn", epsilon=1, seed=0)
    assert torch.equal(first.x, expected.data.x)


def test_transform_re_releases_on_each_access(graph, tmp_path):
    ds = TinyDataset(tmp_path, _two_graphs(graph), transform=T.Compose([T.NormalizeFeatures(), MultiBit(1.0)]))
    first = ds[0]
    ds[1]  # one release of each graph
    assert torch.equal(ds[0].x, first.x)  # read again: the same release, no new noise
    counting = TinyDataset(
        tmp_path, _two_graphs(graph), transform=T.Compose([T.NormalizeFeatures(), MultiBit(1.0, compose=True)])
    )
    spent = [privacy_report(counting[0]).by_unit()[Unit.NODE_FEATURES].epsilon for _ in range(3)]
    assert spent == [1.0, 2.0, 3.0]


def test_the_same_data_is_recognised_by_its_content_not_the_object(graph):
    """ "The same data": equal values in the fields the transform protects (x for LPGNN), whatever object holds
    them — a fresh Data with the same tensors, an extra attribute, another dtype of the same values.  One feature
    scaled by 0.999999 is different content (a ledger still counts it: see the ledger test below)."""
    normalized = T.NormalizeFeatures()(copy.copy(graph))
    once = Privatize("lpgnn", epsilon=1, seed=0)
    once(normalized)
    rebuilt = Data(**{k: v.clone() if torch.is_tensor(v) else v for k, v in normalized.items()})
    rebuilt.comment = torch.tensor([1.0])  # one extra attribute: not the same input, the same protected content
    with pytest.raises(RepeatedReleaseError, match="already released the same protected content"):
        once(rebuilt)
    as_double = copy.copy(normalized)
    as_double.x = normalized.x.double()  # the same values in another dtype: the same input, the same release
    assert torch.equal(once(as_double).x, once(normalized).x)
    scaled = copy.copy(normalized)
    scaled.x = normalized.x.clone()
    scaled.x[0, 0] *= 0.999999
    if scaled.x[0, 0] != normalized.x[0, 0]:  # a changed value: different data for the transform's memory
        once(scaled)
    other_edges = copy.copy(normalized)  # LPGNN protects x: the same features over other edges are the same data
    other_edges.edge_index = normalized.edge_index[:, :10]
    with pytest.raises(RepeatedReleaseError):
        once(other_edges)


def test_transforms_with_a_ledger_are_refused_once_the_budget_is_spent(graph, tmp_path):
    normalized = T.NormalizeFeatures()(copy.copy(graph))
    ledger = pg.Ledger(tmp_path / "book.json", {Unit.NODE_FEATURES: 2.0}, dataset="sbm")
    composing = Privatize("lpgnn", epsilon=1, seed=0, compose=True, ledger=ledger)
    composing(normalized)
    composing(normalized)
    with pytest.raises(pg.accounting.BudgetExceeded, match="node feature vector"):
        composing(normalized)  # compose=True does not lift the budget
    # other transforms and other objects of the same dataset are counted in the same ledger
    scaled = copy.copy(normalized)
    scaled.x = normalized.x * 0.999999
    with pytest.raises(pg.accounting.BudgetExceeded):
        MultiBit(0.5, seed=1, ledger=ledger)(scaled)
    # LinkLDP writes the features in clear: it does not bound the feature budget (fail closed per unit)
    with pytest.raises(pg.accounting.BudgetExceeded, match="node feature vector: .*does not bound it"):
        LinkLDP(0.1, seed=2, ledger=ledger)(copy.copy(graph))
    links = pg.Ledger(tmp_path / "links.json", {Unit.ADJACENCY_LIST: 1.0}, dataset="sbm")
    LinkLDP(1.0, seed=2, ledger=links)(copy.copy(graph))
    with pytest.raises(pg.accounting.BudgetExceeded, match="adjacency list"):
        LinkLDP(0.5, seed=3, ledger=links)(copy.copy(graph))
    assert [e.method for e in ledger.entries] == ["lpgnn", "lpgnn"] and len(links.entries) == 1
    assert ledger.totals()[Unit.NODE_FEATURES].epsilon == 2.0
    # a graph of another size is refused before any noise
    smaller = Data(x=normalized.x[:50], y=normalized.y[:50], train_mask=normalized.train_mask[:50], num_nodes=50)
    with pytest.raises(pg.accounting.LedgerError, match="node count"):
        LabelRR(1.0, ledger=ledger)(smaller)
    assert len(ledger.entries) == 2


def test_pygs_canonical_script_runs_with_one_transform_added(graph, tmp_path):
    """PyG's GCN example as written, with ``pg.Privatize`` added to its ``T.Compose``: the feature
    domain declared on the transform (``domain=``), ``dataset.num_features`` (which reads ``dataset[0]``),
    ``dataset[0]`` read again and a ``DataLoader``: one release, the same each time."""
    from torch_geometric.loader import DataLoader

    transform = T.Compose([T.NormalizeFeatures(), pg.Privatize("lpgnn", epsilon=1.0, domain=(0, 1))])
    single = copy.copy(graph)
    del single.feature_domain  # as a PyG dataset gives it: no domain on the data
    dataset = TinyDataset(tmp_path, [single], transform=transform)
    assert dataset.num_features == graph.num_features
    data = dataset[0]
    assert torch.equal(dataset[0].x, data.x) and privacy_report(data).by_unit()[Unit.NODE_FEATURES].epsilon == 1.0
    batch = next(iter(DataLoader(dataset, batch_size=1)))
    assert torch.equal(batch.x, data.x)
    with pytest.raises(ValueError, match="takes no domain"):
        pg.Privatize("blink", epsilon=1.0, domain=(0, 1))
    with pytest.raises(ValueError, match="domain"):
        pg.Privatize("lpgnn", epsilon=1.0, domain=(0, 1e300))


def test_every_method_listed_for_node_classification_is_a_transform():
    """Every method ``pg.list_methods("node classification")`` lists builds as a ``Privatize`` (
    ``hetedp-features``, a heterogeneous one, was refused as "not node classification"), and a HeteroData
    release read twice through it is the same release."""
    from privgraph.data.synthetic import hetero_sbm_graph

    for name, info in pg.list_methods("node classification").items():
        Privatize(name, epsilon=1.0 if info["private"] else None)
    transform = Privatize("hetedp-features", epsilon=1.0)
    data = hetero_sbm_graph(seed=0)
    first, again = transform(data), transform(copy.copy(data))
    assert all(torch.equal(first[t].x, again[t].x) for t in first.node_types if "x" in first[t])
    with pytest.raises(ValueError, match="Privatize takes node-classification"):
        Privatize("hetedp", epsilon=1.0)
