"""The soft cap and its PTR test (mechanisms/soft_cap.py; docs/methods/gap.md, "Node level"): Lemma 1 by
direct ΔF with worst-case rows, Lemmas 2–3 by exhaustive search on 5-node graphs, and the pitfalls of a PTR
release (the ``test_trap_*`` tests: sender weights, h(d) = Γ(d+1), the fixed point Γ, the threshold, the test's
randomness source)."""

from __future__ import annotations

import itertools
import math
from decimal import Decimal, getcontext

import pytest
import torch

from privgraph.mechanisms import make_generator
from privgraph.mechanisms import soft_cap as sc


def _graph(pairs: list[tuple[int, int]], n: int) -> torch.Tensor:
    ei = torch.tensor(pairs, dtype=torch.long).t() if pairs else torch.empty(2, 0, dtype=torch.long)
    return sc.clean_simple_graph(ei, n)


def _without(ei: torch.Tensor, v: int) -> torch.Tensor:
    return ei[:, (ei[0] != v) & (ei[1] != v)]


def _delta_f(ei: torch.Tensor, n: int, v: int, d: int, x: torch.Tensor) -> float:
    """‖(F_G(X) − F_{G−v}(X))_{w≠v}‖, each side's weights from its own degrees."""
    smaller = _without(ei, v)
    f = sc.soft_capped_sum(x, ei, sc.sender_weights(sc.degrees(ei, n), d))
    g = sc.soft_capped_sum(x, smaller, sc.sender_weights(sc.degrees(smaller, n), d))
    diff = (f - g).to(torch.float64)
    diff[v] = 0
    return float(diff.norm())


def _ls(ei: torch.Tensor, n: int, d: int, removed: int | None = None) -> float:
    deg = sc.degrees(ei, n)
    if removed is not None:  # G − v: v's row gone (an isolated node has h = 0 unless D ≤ 0)
        deg = torch.cat([deg[:removed], deg[removed + 1 :]])
    return sc.local_sensitivity(deg, d)


def test_lemma_1_local_sensitivity_by_direct_delta_with_worst_case_rows():
    """ΔF_w has coefficient a(d_v) > 0 on x_v and a(d_u) − a(d_u − 1) ≤ 0 on the shared x_u, so x_v = e, x_u = −e
    attains the sup over unit rows (triangle inequality); random unit rows stay below it."""
    gen = torch.Generator().manual_seed(0)
    checked = 0
    for _ in range(60):
        n = int(torch.randint(4, 13, (1,), generator=gen))
        p = float(torch.rand(1, generator=gen)) * 0.8 + 0.1
        pairs = [(i, j) for i, j in itertools.combinations(range(n), 2) if float(torch.rand(1, generator=gen)) < p]
        ei = _graph(pairs, n)
        deg = sc.degrees(ei, n)
        for d in (1, 2, 3, 5):
            for v in range(n):
                worst = -torch.ones(n, 1, dtype=torch.float64)
                worst[v] = 1.0
                delta = _delta_f(ei, n, v, d, worst)
                nbrs = ei[1, ei[0] == v]
                bound = math.sqrt(min(int(deg[v]), d)) + math.sqrt(d) * sum(
                    sc.gamma(int(deg[u])) for u in nbrs.tolist() if int(deg[u]) >= d + 1
                )
                assert delta <= bound + 1e-9
                assert bound <= min(_ls(ei, n, d), _ls(_without(ei, v), n, d, removed=v)) + 1e-9
                rows = torch.nn.functional.normalize(torch.randn(n, 4, generator=gen, dtype=torch.float64), dim=-1)
                assert _delta_f(ei, n, v, d, rows) <= delta + 1e-9
                checked += 1
    assert checked > 500


def _all_graphs(n: int):
    pairs = list(itertools.combinations(range(n), 2))
    for mask in range(1 << len(pairs)):
        yield [pairs[i] for i in range(len(pairs)) if mask >> i & 1]


def _degree_seq(pairs: list[tuple[int, int]], nodes: tuple[int, ...]) -> torch.Tensor:
    keep = set(nodes)
    deg = dict.fromkeys(nodes, 0)
    for a, b in pairs:
        if a in keep and b in keep:
            deg[a] += 1
            deg[b] += 1
    return torch.tensor([deg[u] for u in nodes], dtype=torch.long)


def test_lemmas_2_and_3_by_exhaustive_search_on_five_nodes():
    """Every graph on 5 labelled nodes and every induced subgraph within node distance 2: Γ(G″) ≤ Γ_k(G) for G″ at
    distance k ≤ 2 (both directions), Γ_k(G) ≤ Γ_{k+1}(G′) for neighbours, |k*(G) − k*(G′)| ≤ 1, and k* ≥ 1 ⇒
    LS ≤ Λ√D — in the fixed point the code uses."""
    nodes = tuple(range(5))
    subsets = [s for r in (3, 4, 5) for s in itertools.combinations(nodes, r)]
    seen: set[tuple] = set()
    for pairs in _all_graphs(5):
        hists = {s: sc.degree_histogram(_degree_seq(pairs, s)) for s in subsets}
        key = tuple(sorted((s, tuple(sorted(h.items()))) for s, h in hists.items()))
        if key in seen:
            continue
        seen.add(key)
        for d, lam in ((1, 1.2), (2, 1.5), (3, 2.0), (2, 3.0)):
            limit = sc.threshold_fixed(lam)
            kstar = {s: sc.distance_to_uncovered(_degree_seq(pairs, s), d, lam) for s in subsets}
            for s in subsets:
                gk = [sc.gamma_k_fixed(hists[s], d, k) for k in range(4)]
                assert (kstar[s] == 0) == (gk[0] > limit)
                if kstar[s] >= 1:
                    assert sc.local_sensitivity(_degree_seq(pairs, s), d) <= lam * math.sqrt(d) + 1e-12
                for t in subsets:
                    dist = len(set(s) ^ set(t))
                    if dist == 0 or dist > 2:
                        continue
                    assert sc.gamma_k_fixed(hists[t], d, 0) <= gk[dist]  # Lemma 2, first part
                    if dist == 1:
                        assert all(gk[k] <= sc.gamma_k_fixed(hists[t], d, k + 1) for k in range(3))
                        assert abs(kstar[s] - kstar[t]) <= 1  # Lemma 3
    assert len(seen) > 30


def test_trap_3_sender_weights_bound_a_hub_that_receiver_weights_do_not():
    """A 1000-leaf star, D = 4: removing the hub moves each leaf's row by a(1000) = √(4/1000) with the weight on
    the sender (‖Δ‖ = 2 ≤ LS), by 1 with the weight on the receiver (‖Δ‖ = √1000 ≈ 31.6)."""
    n, d = 1001, 4
    ei = _graph([(0, i) for i in range(1, n)], n)
    x = torch.ones(n, 1, dtype=torch.float64)
    sender = _delta_f(ei, n, 0, d, x)
    assert sender == pytest.approx(2.0) and sender <= _ls(ei, n, d)
    w = sc.sender_weights(sc.degrees(ei, n), d)
    receiver = sc.soft_capped_sum(x, ei, torch.ones(n, dtype=torch.float64)) * w[:, None]
    receiver_without = torch.zeros_like(receiver)  # without the hub every leaf is isolated
    assert float((receiver - receiver_without)[1:].norm()) == pytest.approx(math.sqrt(1000))


def test_trap_5_h_at_d_is_gamma_of_d_plus_one():
    """Hub + K_{50,10}, D = 10, Λ = 1.5: the pair is uncovered (ΔF > Λ√D), so k*(G − hub) must be 0; the naive
    h(d) = 1[d > D]γ(d) would give 1."""
    d, lam = 10, 1.5
    side_a, side_b = list(range(1, 51)), list(range(51, 61))  # 50 nodes of degree 10 = D, 10 of degree 50
    pairs = [(a, b) for a in side_a for b in side_b] + [(0, a) for a in side_a]
    n = 61
    ei = _graph(pairs, n)
    worst = -torch.ones(n, 1, dtype=torch.float64)
    worst[0] = 1.0
    assert _delta_f(ei, n, 0, d, worst) > lam * math.sqrt(d)  # uncovered
    rest = sc.degrees(_without(ei, 0), n)[1:]
    assert sc.distance_to_uncovered(rest, d, lam) == 0
    naive = sum(sc.gamma(int(x)) for x in rest.tolist() if x > d)
    assert naive <= lam - 1  # the naive Γ(G − v) would pass: k* ≥ 1


def test_trap_6_fixed_point_gamma_is_an_exact_monotone_upper_bound_and_k_star_ignores_order():
    getcontext().prec = 60
    s = Decimal(sc.SCALE)
    previous = None
    for dd in [1, 2, 3, 10, 11, 101, 401, 10**3, 10**6, 10**6 + 1, 10**9]:
        exact = s * (1 - (Decimal(dd - 1) / Decimal(dd)).sqrt())
        got = sc.gamma_fixed(dd)
        assert Decimal(got) >= exact and Decimal(got) - exact <= 2
        if previous is not None:
            assert got <= previous
        previous = got
    assert abs(float(torch.tensor(sc.gamma(10**6), dtype=torch.float32)) - 1 / (2 * 10**6)) < 1e-9
    deg = torch.randint(0, 60, (500,), generator=torch.Generator().manual_seed(1))
    k = sc.distance_to_uncovered(deg, 40, 1.5)
    assert k == sc.distance_to_uncovered(deg[torch.randperm(500)], 40, 1.5)
    limit = sc.threshold_fixed(1.5)  # k* is the least k past the threshold
    hist = sc.degree_histogram(deg)
    assert sc.gamma_k_fixed(hist, 40, k) > limit and (k == 0 or sc.gamma_k_fixed(hist, 40, k - 1) <= limit)


def test_trap_7_threshold_validation_and_pass_probability_from_the_code_path():
    with pytest.raises(ValueError, match="δ_t"):
        sc.test_threshold(0.1, 0.5)
    with pytest.raises(ValueError, match="δ_t"):
        sc.test_threshold(0.1, 0.0)
    with pytest.raises(ValueError, match="ε_t"):
        sc.test_threshold(0.0, 0.1)
    assert sc.pass_probability(0, 0.1, 5e-6) == pytest.approx(5e-6)
    rng, trials = make_generator(3), 20000
    passed = sum(sc.ptr_test(0, 1.0, 0.2, rng) for _ in range(trials))  # P[pass | k* = 0] = δ_t = 0.2
    assert abs(passed / trials - 0.2) < 4 * math.sqrt(0.2 * 0.8 / trials)
    at_one = sum(sc.ptr_test(1, 1.0, 0.2, rng) for _ in range(trials))
    assert abs(at_one / trials - sc.pass_probability(1, 1.0, 0.2)) < 4 * math.sqrt(0.25 / trials)


def test_trap_8_the_test_draws_from_the_given_source():
    draws = [[sc.ptr_test(5, 0.5, 0.1, g) for _ in range(50)] for g in (make_generator(1), make_generator(1))]
    assert draws[0] == draws[1]
    assert draws[0] != [sc.ptr_test(5, 0.5, 0.1, make_generator(2)) for _ in range(50)]
    with pytest.raises(TypeError):
        sc.ptr_test(5, 0.5, 0.1, None)  # type: ignore[arg-type]


def test_cleaning_is_unconditional_and_commutes_with_node_deletion():
    """Trap 2: a multigraph with self-loops and one-way edges cleans to the simple graph, whose degrees (and so
    weights and k*) equal the coalesced version's; cleaning then deleting v equals deleting then cleaning."""
    raw = torch.tensor([[0, 0, 1, 2, 2, 3, 3], [1, 1, 2, 2, 3, 0, 0]])
    clean = sc.clean_simple_graph(raw, 4)
    assert sorted(map(tuple, clean.t().tolist())) == [(0, 1), (0, 3), (1, 0), (1, 2), (2, 1), (2, 3), (3, 0), (3, 2)]
    assert torch.equal(sc.degrees(clean, 4), torch.tensor([2, 2, 2, 2]))
    for v in range(4):
        assert torch.equal(_without(clean, v), sc.clean_simple_graph(_without(raw, v), 4))


def _pairs_of_section_4():
    """(name, edges, n, v, D) for the design's adversarial pairs, G with v; G − v isolates v."""
    k3 = [(a, b) for a in range(3) for b in range(3, 153)]
    hubs = [(0, 1)] + [(h, u) for h in (0, 1) for u in range(2, 52)]
    gen = torch.Generator().manual_seed(5)
    base = [(i, j) for i, j in itertools.combinations(range(1, 40), 2) if float(torch.rand(1, generator=gen)) < 0.2]
    deg = torch.bincount(torch.tensor(base).flatten(), minlength=40)
    universal = base + [(0, u) for u in range(1, 40) if 7 <= int(deg[u]) <= 9]
    at_bound = [(0, 1), (0, 2)] + [(1, u) for u in range(3, 12)] + [(2, u) for u in range(12, 22)]
    return [
        ("K_{3,150}, v on the small side", k3, 153, 0, 2),
        ("two adjacent hubs sharing 50 neighbours", hubs, 52, 0, 10),
        ("universal addition (v to every node of degree D−1..D+1)", universal, 40, 0, 8),
        ("neighbours exactly at D and D + 1", at_bound, 22, 0, 10),
        ("path a–b–c–d–e–f", [(i, i + 1) for i in range(5)], 6, 0, 1),
        ("isolated v", [(1, 2), (2, 3)], 4, 0, 1),
        ("clique K_41, x_v = −e", [(a, b) for a, b in itertools.combinations(range(41), 2)], 41, 0, 40),
    ]


@pytest.mark.parametrize("name, pairs, n, v, d", _pairs_of_section_4(), ids=lambda p: str(p)[:20])
def test_section_4_pairs_lemma_1_and_an_uncovered_pair_falls_back_on_both_sides(name, pairs, n, v, d):
    """Lemma 1 on each pair with worst-case rows; where the pair is uncovered (ΔF > Λ√D), k* = 0 on both sides
    (the test passes with probability δ_t exactly whichever side is the data)."""
    lam = 1.5
    ei = _graph(pairs, n)
    worst = -torch.ones(n, 1, dtype=torch.float64)
    worst[v] = 1.0
    delta = _delta_f(ei, n, v, d, worst)
    smaller = _without(ei, v)
    assert delta <= min(_ls(ei, n, d), _ls(smaller, n, d)) + 1e-9
    if name.startswith("K_{3,150}"):  # the design's must-fall-back pair is uncovered
        assert delta > lam * math.sqrt(d)
    if delta > lam * math.sqrt(d):
        for side in (ei, smaller):
            assert sc.distance_to_uncovered(sc.degrees(side, n), d, lam) == 0, name
    k, k_small = (sc.distance_to_uncovered(sc.degrees(g, n), d, lam) for g in (ei, smaller))
    assert abs(k - k_small) <= 1
