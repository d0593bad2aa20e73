"""A ledger's relation units ``"edge of (src, rel, dst)"`` are validated against the dataset's relations
(the audit's ``"edge of (paper, to, autor)"`` limited nothing) and written in one form."""

from __future__ import annotations

import pytest
import torch
from torch_geometric.data import Data, HeteroData

from privgraph.accounting import BudgetExceeded, Ledger, LedgerError, Spend, Unit
from privgraph.accounting.guarantee import canonical_unit, relation_of, relation_unit
from privgraph.methods import get_method

WROTE = relation_unit(("paper", "to", "author"))


def hetero() -> HeteroData:
    g = torch.Generator().manual_seed(0)
    data = HeteroData()
    data["paper"].x = torch.rand(6, 3, generator=g)
    data["author"].x = torch.rand(4, 3, generator=g)
    data["paper", "to", "author"].edge_index = torch.tensor([[0, 1, 2], [0, 1, 3]])
    data["author", "rev_to", "paper"].edge_index = torch.tensor([[0, 1, 3], [0, 1, 2]])
    return data


def test_relation_units_are_parsed_exactly():
    assert WROTE == "edge of ('paper', 'to', 'author')"
    assert canonical_unit("edge of (paper, to, author)") == WROTE == canonical_unit("edge of ( 'paper','to', author )")
    for bad in ("edge of (", "edge of (paper, to)", "edge of (a, b, c, d)", "edge of (a, , c)", "edge of a, b, c"):
        assert relation_of(bad) is None and not Unit.is_known(bad), bad
    with pytest.raises(LedgerError, match="unknown privacy unit 'edge of \\(paper, to\\)'"):
        Ledger("/nonexistent/x.json", {"edge of (paper, to)": 1.0})


def test_a_misspelled_relation_is_refused_before_any_noise(tmp_path):
    data = hetero()
    book = Ledger(tmp_path / "typo.json", {"edge of (paper, to, autor)": 0.5}, dataset="dblp")
    for _ in range(3):  # the audit's three releases at ε = 1: each refused, nothing recorded
        with pytest.raises(LedgerError, match="names \"edge of \\('paper', 'to', 'autor'\\)\", not a relation.*"
                           "edge of \\('paper', 'to', 'author'\\)"):  # fmt: skip
            book.reserve([Spend(WROTE, 1.0)], "hetedp", data=data)
    assert book.entries == [] and book.fingerprint is None
    # written without quotes, the relation is the methods' unit, and it limits them
    right = Ledger(tmp_path / "right.json", {"edge of (paper, to, author)": 1.5}, dataset="dblp")
    assert list(right.budget) == [WROTE]
    right.reserve([Spend(WROTE, 1.0)], "hetedp", data=data)
    with pytest.raises(BudgetExceeded, match="edge of \\('paper', 'to', 'author'\\): spent \\(1, 0\\)"):
        right.reserve([Spend(WROTE, 1.0)], "hetedp", data=data)
    # once the first release recorded the relations, a misspelled budget is refused when it is set
    assert right.fingerprint["relations"] == [["author", "rev_to", "paper"], ["paper", "to", "author"]]
    with pytest.raises(LedgerError, match="not a relation of its dataset"):
        right.set_budget({"edge of (paper, to, autor)": 1.0})
    with pytest.raises(LedgerError, match="not a relation of its dataset"):  # a method's unit is checked too
        right.check([Spend(relation_unit(("paper", "cites", "paper")), 0.1)])
    assert list(right.budget) == [WROTE]


def test_a_relation_unit_on_a_homogeneous_graph_and_star_on_a_heterogeneous_one(tmp_path):
    flat = Data(x=torch.rand(5, 2), edge_index=torch.tensor([[0, 1], [1, 0]]))
    book = Ledger(tmp_path / "flat.json", {WROTE: 1.0}, dataset="mine")
    with pytest.raises(LedgerError, match="none: the graph is homogeneous"):
        book.reserve([Spend(Unit.EDGE, 0.1)], "gap-edp", data=flat)
    # "*" budgets each relation of the data: a release protecting one relation writes the other in clear
    star = Ledger(tmp_path / "star.json", {"*": 5.0}, dataset="dblp")
    spend = get_method("hetedp", edge_type=("paper", "to", "author"), edge_count=3, batch_size=2).planned_spend(1.0)
    with pytest.raises(BudgetExceeded, match="edge of \\('author', 'rev_to', 'paper'\\): .*does not bound it"):
        star.reserve(spend, "hetedp", data=hetero())


def test_edgerr_charges_what_it_writes(tmp_path):
    """EdgeRR writes every public edge in clear: ε = ∞ on the plain edge unit (declared and reported), ε on the
    private edges; privHRG, with every edge private, writes none."""
    edgerr = get_method("edgerr")
    spend = {s.unit: s.epsilon for s in edgerr.planned_spend(1.0)}
    assert spend == {Unit.PRIVATE_EDGE: 1.0, Unit.EDGE: float("inf")}
    assert Unit.EDGE not in {s.unit for s in get_method("privhrg").planned_spend(1.0)}
    book = Ledger(tmp_path / "edge.json", {Unit.EDGE: 5.0}, dataset="mine")
    with pytest.raises(BudgetExceeded, match="edge: spent \\(0, 0\\), this release does not bound it"):
        book.reserve(edgerr.planned_spend(1.0), "edgerr")
    private = Ledger(tmp_path / "private.json", {Unit.PRIVATE_EDGE: 1.0}, dataset="mine")
    private.reserve(edgerr.planned_spend(1.0), "edgerr")
    assert private.totals()[Unit.PRIVATE_EDGE].epsilon == 1.0
    with pytest.raises(BudgetExceeded, match="private edge"):
        private.reserve(edgerr.planned_spend(0.1), "edgerr")
