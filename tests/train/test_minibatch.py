"""Mini-batch training over out-of-core tables (privgraph.train.minibatch, privgraph.methods.outofcore)."""

import numpy as np
import pytest
import torch

from privgraph.data.outofcore import NodeTable, OutOfCoreGraph, csr_from_edge_index
from privgraph.data.synthetic import sbm_graph
from privgraph.mechanisms import make_generator
from privgraph.methods import get_method
from privgraph.methods.base import Hyperparameters
from privgraph.methods.outofcore import BatchGCN, blink_hard, gap_edp, lpgnn
from privgraph.nn.models import NodeClassifier
from privgraph.train.minibatch import batches, predict, row_forward, train_minibatch
from privgraph.train.node_classification import train_node_classifier


class MLP(torch.nn.Sequential):
    """Two linear layers; reads no graph (the full-batch trainer passes one)."""

    def __init__(self):
        super().__init__(torch.nn.Linear(32, 16), torch.nn.ReLU(), torch.nn.Linear(16, 4))

    def forward(self, x, edge_index=None):
        return super().forward(x)


@pytest.fixture(scope="module")
def sbm():
    return sbm_graph(num_nodes=600, num_features=32, homophily=0.9, feature_signal=0.3, seed=1)


def test_batches_cover_every_node_once():
    gen = torch.Generator().manual_seed(0)
    parts = batches(np.arange(10, 33), 5, gen)
    assert [len(b) for b in parts] == [5, 5, 5, 5, 3]
    assert sorted(np.concatenate(parts).tolist()) == list(range(10, 33))


@pytest.mark.parametrize("model", ["gcn", "mlp"])
@pytest.mark.parametrize("kprop", [0, 2])
def test_batch_gcn_equals_the_full_batch_model(sbm, tmp_path, model, kprop):
    """The batch forward (exact one- or two-hop neighbourhood) gives the full-batch NodeClassifier's logits."""
    torch.manual_seed(0)
    net = NodeClassifier(model, 32, 16, 4, dropout=0.5, kprop_steps=kprop).eval()
    x = torch.rand(sbm.num_nodes, 32)
    with torch.no_grad():
        full = net(x, sbm.edge_index)
        z = net.kprop(x, sbm.edge_index) if net.kprop is not None else x
    graph = csr_from_edge_index(sbm.edge_index, sbm.num_nodes, tmp_path)
    forward = BatchGCN(graph, NodeTable.from_tensor(tmp_path / "z.f32", z))
    nodes = np.array([5, 0, 599, 300, 17])
    torch.testing.assert_close(predict(net, forward, nodes, batch_size=2), full[nodes], rtol=1e-4, atol=1e-5)


def test_minibatch_training_reaches_full_batch_accuracy():
    """An MLP on an easy SBM's features: batches of 32 against one full batch per epoch, same epochs and
    selection; mean test accuracies over two seeds within 2 points."""
    sbm = sbm_graph(num_nodes=600, num_features=32, homophily=0.9, feature_signal=0.45, seed=1)
    x, y = sbm.x, sbm.y.numpy()
    ids = np.arange(sbm.num_nodes)
    train, val, test = (ids[sbm[m].numpy()] for m in ("train_mask", "val_mask", "test_mask"))
    accs = []
    for seed in (0, 1):
        torch.manual_seed(seed)
        net = MLP()
        full = train_node_classifier(
            net, x, torch.empty(2, 0, dtype=torch.long), sbm.y, sbm.y, sbm.train_mask, sbm.val_mask,
            sbm.test_mask, epochs=60, patience=None, weight_decay=0.0,
        )  # fmt: skip
        torch.manual_seed(seed)
        net = MLP()
        forward = row_forward(x.numpy(), ids)
        train_minibatch(net, forward, y, train, val, epochs=60, batch_size=32, seed=seed)
        mini = float((predict(net, forward, test).argmax(-1).numpy() == y[test]).mean())
        accs.append((full.test_accuracy, mini))
    full_mean, mini_mean = np.mean(accs, axis=0)
    assert full_mean > 0.85 and abs(full_mean - mini_mean) < 0.02, accs


def test_pipelines_match_their_full_batch_methods(sbm, tmp_path):
    """GAP-EDP, LPGNN and Blink-Hard out of core against the registered methods on the same SBM, ε and seed;
    the guarantee is the method's own.  Tolerance 6 points on 150 test nodes, one seed (the benchmark
    compares means over seeds on Cora and FacebookPagePage)."""
    g = OutOfCoreGraph.from_data(sbm, tmp_path)
    hp = Hyperparameters(epochs=60, patience=30)
    cases = [
        ("gap-edp", get_method("gap-edp", epochs=40, encoder_epochs=40), 2.0, {"epochs": 40, "encoder_epochs": 40}),
        ("lpgnn", get_method("lpgnn"), 2.0, {"hp": hp}),
        ("blink-hard", get_method("blink", variant="hard"), 6.0, {"hp": hp}),
    ]
    pipelines = {"gap-edp": gap_edp, "lpgnn": lpgnn, "blink-hard": blink_hard}
    for name, method, eps, kwargs in cases:
        release = method.release(sbm, eps, make_generator(0))
        full = method.fit(release, sbm, method.default_model, hp, 0)
        run = pipelines[name](g, eps, make_generator(0), seed=0, batch_size=64, **kwargs)
        assert run.guarantee.epsilon == release.guarantee.epsilon == eps
        assert run.guarantee.unit == release.guarantee.unit
        assert abs(run.test_accuracy - full.test_accuracy) < 0.06, (name, run.test_accuracy, full.test_accuracy)
    assert gap_edp(g, 2.0, make_generator(0), epochs=2, encoder_epochs=2).details["noise_std"] > 0


def test_pipelines_refuse_what_the_registered_release_path_refuses(sbm, tmp_path):
    """Out of core, as through ``privatize``: LPGNN's features need a declared domain (never an assumed [0, 1]),
    and Blink-Hard's graph must hold every link both ways (a one-direction edge is refused before any noise)."""
    undeclared = sbm.clone()
    del undeclared.feature_domain
    g = OutOfCoreGraph.from_data(undeclared, tmp_path / "undeclared")
    assert g.feature_domain is None
    with pytest.raises(ValueError, match="none is declared"):
        lpgnn(g, 1.0, make_generator(0))
    one_way = sbm.clone()
    one_way.edge_index = sbm.edge_index[:, sbm.edge_index[0] < sbm.edge_index[1]]  # each link one direction only
    with pytest.raises(ValueError, match="[Aa]symmetric|both directions|undirected"):
        blink_hard(OutOfCoreGraph.from_data(one_way, tmp_path / "one-way"), 1.0, make_generator(0))
