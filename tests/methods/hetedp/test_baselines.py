"""metapath2vec's metapath per dataset (HeteDP §V baselines): the choice, its wiring into the
``nc`` task, and why the metapath matters (a graph where only one metapath carries the classes)."""

import torch
from sklearn.linear_model import LogisticRegression
from torch_geometric.data import HeteroData

from privgraph.data.hetero import METAPATHS, TASKS
from privgraph.experiments import ExperimentSpec, run_experiment
from privgraph.methods.hetedp import baselines
from privgraph.methods.hetedp.baselines import M2V_METAPATHS, metapath2vec_embeddings, metapath2vec_metapath


def test_every_chosen_metapath_exists_and_walks_from_the_labelled_type_back_to_it():
    for dataset, name in M2V_METAPATHS.items():
        path = metapath2vec_metapath(dataset)
        assert path == METAPATHS[dataset][name]
        target = TASKS[dataset].node_type
        assert path[0][0] == target and path[-1][-1] == target
        assert all(a[-1] == b[0] for a, b in zip(path, path[1:]))  # a walkable chain
    # DBLP: Dong et al.'s author–paper–venue–paper–author, not the co-author path APA
    assert [et[-1] for et in metapath2vec_metapath("dblp-magnn")] == ["paper", "conference", "paper", "author"]
    assert metapath2vec_metapath("sbm") == next(iter(METAPATHS["sbm"].values()))  # not listed: the first


def test_the_nc_task_walks_the_chosen_metapath(monkeypatch):
    seen = []

    def fake(edge_index_dict, metapath, num_nodes_dict, seed, epochs=10, walks=None):
        seen.append(list(metapath))
        return {"paper": torch.randn(num_nodes_dict["paper"], 8, generator=torch.Generator().manual_seed(seed))}

    monkeypatch.setattr(baselines, "metapath2vec_embeddings", fake)
    monkeypatch.setitem(M2V_METAPATHS, "sbm", "PSP")
    run_experiment(ExperimentSpec(method="metapath2vec", task="nc", trials=1))
    assert seen == [METAPATHS["sbm"]["PSP"]]


def _one_informative_relation(n: int = 240, classes: int = 3, seed: int = 0) -> HeteroData:
    """Papers whose subject is their class and whose (single) author is drawn at random."""
    g = torch.Generator().manual_seed(seed)
    y = torch.arange(n) % classes
    subject = y * 2 + torch.randint(0, 2, (n,), generator=g)  # 2 subjects per class
    author = torch.randint(0, n, (n,), generator=g)
    data = HeteroData()
    data["paper"].y, data["author"].num_nodes, data["subject"].num_nodes = y, n, 2 * classes
    data["paper"].num_nodes = n
    for other, idx in (("author", author), ("subject", subject)):
        ei = torch.stack([torch.arange(n), idx])
        data["paper", "to", other].edge_index = ei
        data[other, "to", "paper"].edge_index = ei.flip(0)
    return data


def test_the_metapath_decides_what_the_embedding_knows():
    """The failure the per-dataset choice fixes (APA on MAGNN's DBLP): walks along a metapath that
    carries no class signal give chance-level embeddings; the informative one separates the classes."""
    data = _one_informative_relation()
    sizes = {t: data[t].num_nodes for t in data.node_types}
    y = data["paper"].y.numpy()
    train = torch.arange(data["paper"].num_nodes) % 2 == 0
    acc = {}
    for name in ("PAP", "PSP"):
        z = metapath2vec_embeddings(data.edge_index_dict, METAPATHS["sbm"][name], sizes, seed=0, epochs=3)["paper"]
        clf = LogisticRegression(max_iter=2000).fit(z[train].numpy(), y[train.numpy()])
        acc[name] = float((clf.predict(z[~train].numpy()) == y[(~train).numpy()]).mean())
    assert acc["PSP"] > 0.8 and acc["PAP"] < 0.5, acc  # 3 classes: chance 1/3
