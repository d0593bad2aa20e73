"""HeteDP topology learning with DP-SGD: per-example clipping, noise, accounting."""

import math

import pytest
import torch
from opacus.accountants import RDPAccountant
from sklearn.metrics import roc_auc_score
from torch.func import grad, vmap

from privgraph.accounting.rdp import RDP_ORDERS, noise_multiplier_for, rdp_epsilon
from privgraph.data import hetero_sbm_graph
from privgraph.data.hetero import HeteroTask, link_split
from privgraph.methods.hetedp.topology import TOPOLOGY_MODES, message_relations
from privgraph.nn.hetero import RelationalVGAEEncoder
from privgraph.train.dpsgd import DPSGDConfig, clipped_noisy_gradient
from privgraph.train.link_prediction import (
    LinkInputs,
    example_loss,
    link_scores,
    neighbour_means,
    train_link_model_dp,
)


def _per_example(seed=0, n=6):
    torch.manual_seed(seed)
    rel = ("c", "r", "b")
    model = RelationalVGAEEncoder({"a": 5, "b": 4, "c": 3}, ["a", "b"], [rel], 8, 6)
    xs, xd = torch.randn(n, 4, 5) * 5, torch.randn(n, 4, 4) * 5  # u, v and 3 negative pairs
    md = {"c__r__b": torch.randn(n, 4, 3)}
    draws = torch.randn(n, 8, 6)
    params = {k: p.detach() for k, p in model.named_parameters()}
    fn = vmap(grad(lambda p, a, b, d: example_loss(model, p, "a", "b", a, b, d)), in_dims=(None, 0, 0, 0))
    return model, params, fn(params, (xs, {}), (xd, md), draws), (xs, xd, md, draws)


def test_vmapped_per_example_gradients_equal_one_by_one_autograd():
    model, params, grads, (xs, xd, md, draws) = _per_example()
    assert float(grads["rel.c__r__b.weight"].abs().sum()) > 0  # the relation's weight is trained
    for i in range(xs.shape[0]):
        model.zero_grad()
        example_loss(
            model,
            dict(model.named_parameters()),
            "a",
            "b",
            (xs[i], {}),
            (xd[i], {k: m[i] for k, m in md.items()}),
            draws[i],
        ).backward()
        for name, p in model.named_parameters():
            assert torch.allclose(grads[name][i], p.grad, atol=1e-5)


def test_neighbour_means_are_one_rgcn_aggregation():
    x = {"a": torch.randn(4, 3), "b": torch.randn(3, 2)}
    ei = torch.tensor([[0, 1, 3, 2], [0, 0, 0, 2]])  # a → b; b1 has no neighbour
    means = neighbour_means(x, {("a", "r", "b"): ei}, [("a", "r", "b")])[("a", "r", "b")]
    assert torch.allclose(means[0], x["a"][[0, 1, 3]].mean(0))
    assert torch.allclose(means[2], x["a"][2]) and torch.equal(means[1], torch.zeros(3))


def test_clipping_bounds_each_examples_contribution():
    _, _, grads, _ = _per_example()
    clip = 0.5
    full, norms = clipped_noisy_gradient(grads, clip, 0.0, 1.0, None)
    assert float(norms.min()) > clip  # all examples are clipped here
    for drop in range(norms.numel()):
        rest = {k: torch.cat([g[:drop], g[drop + 1 :]]) for k, g in grads.items()}
        without, _ = clipped_noisy_gradient(rest, clip, 0.0, 1.0, None)
        diff = torch.sqrt(sum(((full[k] - without[k]) ** 2).sum() for k in full))
        assert float(diff) <= clip + 1e-5  # sensitivity of the summed gradient: C
        assert float(diff) == pytest.approx(clip, rel=1e-4)


def test_noise_std_equals_sigma_times_c_and_is_divided_by_the_expected_batch():
    shapes = {"w": (200, 100), "b": (100,)}
    zero = {k: torch.zeros((0, *s)) for k, s in shapes.items()}
    sigma, clip, batch = 1.3, 0.7, 4.0
    noisy, _ = clipped_noisy_gradient(zero, clip, sigma * clip, batch, torch.Generator().manual_seed(0))
    values = torch.cat([v.flatten() for v in noisy.values()]).double() * batch
    k = values.numel()
    assert abs(float((values**2).sum()) / (sigma * clip) ** 2 - k) < 5 * math.sqrt(2 * k)


@pytest.mark.parametrize("sigma, rate, steps", [(1.1, 0.01, 1000), (0.8, 0.05, 200), (4.0, 0.2, 50)])
def test_accountant_matches_opacus(sigma, rate, steps):
    """Independent implementation: Opacus' RDP accountant on the orders where its sums are stable."""
    ours = rdp_epsilon(sigma, rate, steps, 1e-5)
    theirs = RDPAccountant()
    theirs.history = [(sigma, rate, steps)]
    assert ours == pytest.approx(theirs.get_epsilon(1e-5, alphas=[a for a in RDP_ORDERS if a <= 512]), rel=0.01)


@pytest.mark.parametrize("target", [0.01, 1.0])
def test_noise_multiplier_meets_the_target_and_is_not_loose(target):
    sigma = noise_multiplier_for(target, 1e-5, 0.02, 500)
    assert rdp_epsilon(sigma, 0.02, 500, 1e-5) <= target
    assert rdp_epsilon(sigma * 0.95, 0.02, 500, 1e-5) > target


def test_dp_training_spends_its_budget_and_noise_costs_accuracy():
    d = hetero_sbm_graph(seed=0, num_papers=600, num_authors=400)
    task = HeteroTask("paper", ("paper", "to", "author"), ("author", "to", "paper"))
    train, _, test = link_split(d, task, 0.1, 0.2, seed=0)
    et = task.edge_type
    config = DPSGDConfig(batch_size=128, epochs=20, lr=0.01, edge_count=int(train[et].edge_label_index.shape[1]))
    aucs: dict[float | None, list[float]] = {1.0: [], None: []}
    for rng in range(3):  # the mean over three draws: one draw's AUC at ε = 1 ranged 0.49–0.57
        for eps in (1.0, None):  # None: same sampling and loss, no clipping or noise
            inputs = LinkInputs({"paper": d["paper"].x, "author": d["author"].x})
            res = train_link_model_dp(inputs, train[et].edge_label_index, et, eps, 1e-5, config, rng=rng)
            assert res.steps == round(20 / res.sample_rate)
            assert res.epsilon <= eps if eps is not None else res.epsilon == math.inf
            scores = link_scores(res.model, inputs, et, test[et].edge_label_index)
            aucs[eps].append(roc_auc_score(test[et].edge_label.numpy(), scores.numpy()))
    private, noiseless = (sum(aucs[e]) / 3 for e in (1.0, None))
    assert noiseless > 0.6 and noiseless > private + 0.1  # chance: 0.5 (measured means: 0.67 and 0.52)


def test_bad_settings_fail_clearly():
    with pytest.raises(ValueError, match="clip"):
        DPSGDConfig(clip=0)
    for bad in (0, 2.5, True):
        with pytest.raises(ValueError, match="edge_count"):
            DPSGDConfig(edge_count=bad)
    with pytest.raises(ValueError, match="epsilon_s"):
        noise_multiplier_for(0.0, 1e-5, 0.1, 10)
    with pytest.raises(ValueError, match="delta"):
        rdp_epsilon(1.0, 0.1, 10, 2.0)


def test_training_adds_sigma_times_c_each_step_and_the_accountant_covers_it(monkeypatch):
    """The loop's own noise: every step calls eq. 22 with std σ·C (C ≠ 1 here) over the expected batch,
    and σ, q, T reported give ε ≤ the target."""
    import privgraph.train.link_prediction as link_prediction

    calls = []
    real = link_prediction.ghost_clipped_noisy_gradient

    def spy(model, losses, clip, noise_std, expected_batch, generator):
        calls.append((clip, noise_std, expected_batch))
        return real(model, losses, clip, noise_std, expected_batch, generator)

    monkeypatch.setattr(link_prediction, "ghost_clipped_noisy_gradient", spy)
    d = hetero_sbm_graph(seed=1)
    edges = d["paper", "to", "author"].edge_index
    config = DPSGDConfig(batch_size=64, epochs=2, clip=0.3, edge_count=1000)  # a public bound, not |E|
    inputs = LinkInputs({"paper": d["paper"].x, "author": d["author"].x})
    res = train_link_model_dp(inputs, edges, ("paper", "to", "author"), 0.5, 1e-5, config, rng=0)
    assert edges.shape[1] != 1000 and res.steps == round(2 / (64 / 1000))
    assert len(calls) == res.steps
    assert all(c == (0.3, pytest.approx(res.noise_multiplier * 0.3), 64) for c in calls)
    assert res.sample_rate == pytest.approx(64 / 1000)
    assert rdp_epsilon(res.noise_multiplier, res.sample_rate, res.steps, 1e-5) <= 0.5


@pytest.mark.parametrize("mode", TOPOLOGY_MODES)
def test_what_one_protected_edge_changes_in_each_mode(mode):
    """Remove one training edge of the protected relation (and its reverse) from the graph: in edge
    and node modes every *other* example's gradient is unchanged (the sum moves by ≤ C); in message-passing
    mode the examples that touch its endpoints change too — clipping bounds no edge there."""
    from privgraph.data.hetero import link_split as split
    from privgraph.data.hetero import node_inputs

    d = hetero_sbm_graph(seed=0, num_papers=80, num_authors=50)
    task = HeteroTask("paper", ("paper", "to", "author"), ("author", "to", "paper"))
    et, rev = task.edge_type, task.reverse
    train, _, _ = split(d, task, 0.1, 0.2, seed=0)
    examples = train[et].edge_label_index
    u, v = (int(i) for i in examples[:, 0])
    neighbour = dict(train.edge_index_dict)
    for rel, (a, b) in ((et, (u, v)), (rev, (v, u))):
        ei = neighbour[rel]
        neighbour[rel] = ei[:, ~((ei[0] == a) & (ei[1] == b))]
        assert neighbour[rel].shape[1] == ei.shape[1] - 1
    relations = message_relations(train.edge_types, et, rev, mode)
    assert (et in relations) == (mode == "message-passing")
    assert (("subject", "to", "paper") in relations) == (mode != "node")
    x = node_inputs(d, dim=4, seed=0)
    torch.manual_seed(0)
    model = RelationalVGAEEncoder({t: v.shape[1] for t, v in x.items()}, ["paper", "author"], relations, 8, 4)
    params = {k: p.detach() for k, p in model.named_parameters()}
    rest = examples[:, 1:]
    g = torch.Generator().manual_seed(1)
    neg_u = torch.randint(0, d["paper"].num_nodes, (rest.shape[1], 3), generator=g)
    neg_v = torch.randint(0, d["author"].num_nodes, (rest.shape[1], 3), generator=g)
    draws = torch.randn(rest.shape[1], 8, 4, generator=g)
    fn = vmap(grad(lambda p, s, t, z: example_loss(model, p, "paper", "author", s, t, z)), in_dims=(None, 0, 0, 0))

    def flat_grads(edge_index_dict):
        inputs = LinkInputs.build(x, edge_index_dict, relations)
        grads = fn(
            params,
            inputs.rows("paper", torch.cat([rest[0, :, None], neg_u], 1)),
            inputs.rows("author", torch.cat([rest[1, :, None], neg_v], 1)),
            draws,
        )
        return torch.cat([g.flatten(1) for g in grads.values()], dim=1)

    moved = (flat_grads(train.edge_index_dict) - flat_grads(neighbour)).norm(dim=1) > 1e-6
    touches = (rest[0] == u) | (rest[1] == v) | (neg_u == u).any(1) | (neg_v == v).any(1)
    if mode != "message-passing":
        assert not moved.any()
    else:
        assert touches.any() and moved[touches].all() and not moved[~touches].any()


def test_without_self_connection_a_node_reads_its_neighbours_only():
    """self_connection=False (the authors' TopoDP): the embedding ignores the node's own input, and
    the per-example gradients under vmap still equal one-by-one autograd; the default reads it."""
    torch.manual_seed(0)
    rel = ("c", "r", "b")
    x, m = torch.randn(4, 4), {"c__r__b": torch.randn(4, 3)}
    for own in (True, False):
        torch.manual_seed(0)
        model = RelationalVGAEEncoder({"a": 5, "b": 4, "c": 3}, ["a", "b"], [rel], 8, 6, self_connection=own)
        mu, _ = model("b", x, m)
        mu_other, _ = model("b", x + 10 * torch.randn(4, 4), m)
        assert torch.equal(mu, mu_other) is (not own)
        assert not torch.equal(mu, model("b", x, {"c__r__b": m["c__r__b"] + 1})[0])  # the messages count
    xs, xd, draws = torch.randn(3, 4, 5), torch.randn(3, 4, 4), torch.randn(3, 8, 6)
    md = {"c__r__b": torch.randn(3, 4, 3)}
    params = {k: p.detach() for k, p in model.named_parameters()}
    grads = vmap(grad(lambda p, a, b, d: example_loss(model, p, "a", "b", a, b, d)), in_dims=(None, 0, 0, 0))(
        params, (xs, {}), (xd, md), draws
    )
    assert float(grads["inp.b.weight"].abs().sum()) == 0  # b's own input is not read
    for i in range(3):
        model.zero_grad()
        example_loss(
            model,
            dict(model.named_parameters()),
            "a",
            "b",
            (xs[i], {}),
            (xd[i], {k: v[i] for k, v in md.items()}),
            draws[i],
        ).backward()
        for name, p in model.named_parameters():
            if p.grad is not None:
                assert torch.allclose(grads[name][i], p.grad, atol=1e-5)
    with pytest.raises(ValueError, match="self_connection"):
        DPSGDConfig(self_connection="no")
