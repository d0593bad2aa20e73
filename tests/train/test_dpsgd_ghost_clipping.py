"""Ghost clipping: eq. 22's clipped sum from per-example gradients never formed equals the
one-example-at-a-time reference in every HeteDP topology, and the step's noise is N(0, σ²C²)."""

import math

import pytest
import torch
from torch import nn

from privgraph.data import hetero_sbm_graph
from privgraph.data.hetero import node_inputs
from privgraph.methods.hetedp.topology import TOPOLOGY_MODES, message_relations
from privgraph.nn.hetero import RelationalVGAEEncoder
from privgraph.train.dpsgd import RowTable, TableCall, ghost_clipped_noisy_gradient, linear_clipped_sum
from privgraph.train.link_prediction import LinkInputs, example_loss, input_tables, table_losses

ET, REV = ("paper", "to", "author"), ("author", "to", "paper")


def _batch(mode: str, self_connection: bool = True, batch: int = 9, negatives: int = 3, ids: bool = False):
    d = hetero_sbm_graph(seed=0, num_papers=60, num_authors=40)
    relations = message_relations(d.edge_types, ET, REV, mode)
    inputs = LinkInputs.build(node_inputs(d, dim=5, seed=0), d.edge_index_dict, relations)
    torch.manual_seed(0)
    model = RelationalVGAEEncoder(
        {t: v.shape[1] for t, v in inputs.x.items()}, ["paper", "author"], relations, 8, 4, self_connection
    )
    g = torch.Generator().manual_seed(1)
    edges = d[ET].edge_index[:, torch.randint(0, d[ET].edge_index.shape[1], (batch,), generator=g)]
    neg_u = torch.randint(0, 60, (batch, negatives), generator=g)
    neg_v = torch.randint(0, 40, (batch, negatives), generator=g)
    sources, destinations = torch.cat([edges[0, :, None], neg_u], 1), torch.cat([edges[1, :, None], neg_v], 1)
    draws = torch.randn(batch, 2 * (negatives + 1), 4, generator=g) * 3
    rows = (inputs.rows("paper", sources), inputs.rows("author", destinations), draws)
    if ids:
        return model, rows, relations, inputs, (sources, destinations, draws)
    return model, rows, relations


def _example(rows, i):
    (xs, ms), (xd, md), draws = rows
    return (xs[i], {k: m[i] for k, m in ms.items()}), (xd[i], {k: m[i] for k, m in md.items()}), draws[i]


def _reference(model, rows, clip):
    """A loop over the examples: each one's loss alone, backward, its gradient clipped, then summed."""
    total = {k: torch.zeros_like(p) for k, p in model.named_parameters()}
    norms = []
    for i in range(rows[2].shape[0]):
        model.zero_grad()
        example_loss(model, None, "paper", "author", *_example(rows, i), 0.5).backward()
        grads = {k: torch.zeros_like(p) if p.grad is None else p.grad.clone() for k, p in model.named_parameters()}
        norm = torch.sqrt(sum((v**2).sum() for v in grads.values()))
        norms.append(float(norm))
        for k, v in grads.items():
            total[k] += v * min(1.0, clip / float(norm))
    return total, torch.tensor(norms)


@pytest.mark.parametrize("self_connection", [True, False])
@pytest.mark.parametrize("mode", TOPOLOGY_MODES)
def test_ghost_clipped_sum_equals_the_one_example_loop(mode, self_connection):
    model, rows, relations = _batch(mode, self_connection)
    assert (len(relations) > 0) == (mode != "node")
    _, norms = _reference(model, rows, math.inf)
    clip = float(norms.median())  # about half the examples are clipped
    for c in (clip, math.inf):
        want, want_norms = _reference(model, rows, c)
        got, got_norms = linear_clipped_sum(model, lambda: example_loss(model, None, "paper", "author", *rows, 0.5), c)
        assert list(got) == list(want)  # the model's parameter order (the noise is drawn in it)
        assert torch.allclose(got_norms, want_norms, rtol=1e-5, atol=1e-6)
        for k in want:
            assert torch.allclose(got[k], want[k], atol=1e-5), (mode, c, k)
        if c == clip:
            assert 0 < int((got_norms > c).sum()) < len(got_norms)
            for k in (f"rel.{'__'.join(r)}.weight" for r in relations):
                assert float(got[k].abs().sum()) > 0  # the messages' weights are trained


@pytest.mark.parametrize("self_connection", [True, False])
@pytest.mark.parametrize("mode", TOPOLOGY_MODES)
def test_input_layers_applied_to_whole_tables_give_the_same_clipped_sum(mode, self_connection):
    """table_losses (each type's input layer applied once to its node table, the means aggregated in the
    hidden dimension, the norms from the tables' Gram matrices) gives the per-example losses, norms and
    clipped sum of the one-example-at-a-time autograd reference; and input_tables leaves a type's rows
    gathered when that costs fewer products (here: every type with a batch of 1 row per call)."""
    model, rows, relations, inputs, ids = _batch(mode, self_connection, ids=True)
    tables = input_tables(inputs, ["paper", "author"], self_connection, 8, 1e6)  # every type that can be: tabled
    expected = {"paper", "author"} if self_connection else set()
    expected |= {r[0] for r in relations if r[2] in ("paper", "author")}
    assert set(tables) == expected
    assert not input_tables(inputs, ["paper", "author"], self_connection, 8, 1.0)
    senders = {r[0] for r in relations}  # without the means' aggregation, a type that sends them is gathered
    assert set(input_tables(LinkInputs(inputs.x, inputs.means), ["paper", "author"], self_connection, 8, 1e6)) == (
        expected - senders
    )
    loss, calls = table_losses(model, inputs, tables, "paper", "author", *ids, 0.5)
    assert {c.layer for c in calls} == {f"inp.{t}" for t in tables}
    assert torch.allclose(loss, example_loss(model, None, "paper", "author", *rows, 0.5), rtol=1e-5, atol=1e-5)
    _, norms = _reference(model, rows, math.inf)
    for c in (float(norms.median()), math.inf):
        want, want_norms = _reference(model, rows, c)
        got, got_norms = linear_clipped_sum(
            model, lambda: table_losses(model, inputs, tables, "paper", "author", *ids, 0.5), c
        )
        assert list(got) == list(want)
        assert torch.allclose(got_norms, want_norms, rtol=1e-5, atol=1e-6)
        for k in want:
            assert torch.allclose(got[k], want[k], atol=1e-5), (mode, c, k)
        if c < math.inf:
            assert 0 < int((got_norms > c).sum()) < len(got_norms)
            for t in tables:
                assert float(got[f"inp.{t}.weight"].abs().sum()) > 0


def test_an_example_moves_the_ghost_sum_by_at_most_c():
    """Sensitivity of the clipped sum: dropping one example changes it by ≤ C (= C when clipped)."""
    model, rows, _ = _batch("edge")
    clip = 0.05

    def summed(keep):
        (xs, ms), (xd, md), draws = rows
        sub = (
            (xs[keep], {k: m[keep] for k, m in ms.items()}),
            (xd[keep], {k: m[keep] for k, m in md.items()}),
            draws[keep],
        )
        return linear_clipped_sum(model, lambda: example_loss(model, None, "paper", "author", *sub), clip)

    full, norms = summed(torch.arange(9))
    assert float(norms.min()) > clip
    for drop in range(9):
        without, _ = summed(torch.tensor([i for i in range(9) if i != drop]))
        diff = torch.sqrt(sum(((full[k] - without[k]) ** 2).sum() for k in full))
        assert float(diff) == pytest.approx(clip, rel=1e-4)


@pytest.mark.parametrize("empty", [False, True])
def test_the_ghost_step_adds_gaussian_noise_of_std_sigma_c_over_the_expected_batch(empty):
    """The noisy step minus the clipped sum, times the expected batch, is N(0, σ²C²) per coordinate:
    its sum of squares over k coordinates is σ²C²·χ²_k (within 5 standard deviations), its mean is 0,
    and an empty batch (losses=None) still draws it."""
    model, rows, _ = _batch("message-passing", batch=6)
    sigma, clip, expected = 1.7, 0.3, 5.0
    k = sum(p.numel() for p in model.parameters())
    assert k > 400
    losses = None if empty else (lambda: example_loss(model, None, "paper", "author", *rows))
    values = []
    for seed in range(20):  # 20 steps' draws: k·20 samples
        noisy, _ = ghost_clipped_noisy_gradient(
            model, losses, clip, sigma * clip, expected, torch.Generator().manual_seed(seed)
        )
        clean, _ = ghost_clipped_noisy_gradient(model, losses, clip, 0.0, expected, None)
        values.append(torch.cat([(noisy[n] - clean[n]).flatten() for n in noisy]).double() * expected)
    z = torch.cat(values) / (sigma * clip)
    n = z.numel()
    assert abs(float((z**2).sum()) - n) < 5 * math.sqrt(2 * n)
    assert abs(float(z.mean())) < 5 / math.sqrt(n)
    if not empty:
        assert float(torch.cat([v.flatten() for v in clean.values()]).abs().sum()) > 0


def test_ghost_clipping_refuses_what_it_cannot_split_by_example():
    class WithScale(nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = nn.Linear(3, 2)
            self.scale = nn.Parameter(torch.ones(2))

        def forward(self, x):
            return self.lin(x) * self.scale

    m = WithScale()
    with pytest.raises(ValueError, match="nn.Linear"):
        linear_clipped_sum(m, lambda: m(torch.randn(4, 3)).sum(-1), 1.0)
    lin = nn.Linear(3, 2)
    with pytest.raises(ValueError, match="leading dimension"):  # a call on a row shared by every example
        linear_clipped_sum(lin, lambda: lin(torch.randn(1, 3)).sum() + torch.zeros(4), 1.0)
    x = torch.randn(5, 3)
    rows = RowTable.build(torch.eye(5).to_sparse(), x)
    assert torch.allclose(rows.gram, x @ x.t(), atol=1e-6)

    def both():  # the layer called on gathered rows and read from a table in one batch
        index = torch.arange(4)[:, None]
        out = rows.outputs(lin.weight)[index] + lin.bias
        return (lin(x[index]) + out).sum((1, 2)), [TableCall("", out, index, rows)]

    with pytest.raises(ValueError, match="not also called"):
        linear_clipped_sum(lin, both, 1.0)
