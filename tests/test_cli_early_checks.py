"""Every check that does not need the data answers before the data is read.  The reader is
replaced by one that fails the test if called, so each refusal below is shown to come with the input unread:
one line, exit 2, nothing written."""

import json

import pytest
from typer.testing import CliRunner

from privgraph.cli import app
from privgraph.input_rules import InputRequest, check_choice


def invoke(*args):
    res = CliRunner().invoke(app, [str(a) for a in args])
    return res.exit_code, " ".join(res.output.split())


@pytest.fixture
def unread(tmp_path, monkeypatch):
    """An edge list whose rows must never be read: ``read_graph`` fails the test if called."""
    import privgraph.data.io as io

    def refuse(*args, **kwargs):
        raise AssertionError("the input was read")

    monkeypatch.setattr(io, "read_graph", refuse)
    path = tmp_path / "edges.csv"
    path.write_text("source,target\n0,1\n1,2\n")
    return path


def _one_error(code, text):
    assert code == 2, text
    assert text.startswith("error:") and text.count("error:") == 1, text
    assert "the input was read" not in text


CASES = {
    "variant": (
        ["blink", "--param", "variant=hybird"],
        "variant must be one of ('hard', 'soft', 'hybrid'), got 'hybird'",
    ),
    "ratio": (["lapgraph"], "say which with --private-ratio ρ"),
    "features": (["gap-edp"], "gap-edp reads the node features, but edges.csv comes with none"),
    "range": (["blink", "--param", "degree_share=2"], "degree_share must lie in [0, 1], got 2.0"),
    # the declared bounds and rules (privgraph.param_checks): from the catalogue, before torch
    "hops": (["gap-edp", "--param", "hops=-1"], "hops must be >= 0, got -1"),
    "probability": (["blink", "--param", "soft_min_probability=1.5"], "soft_min_probability must lie in (0, 1)"),
    "combination": (["lpgnn", "--param", "delta=0.1"], "delta is the Gaussian mechanism's δ; the multibit"),
}


@pytest.mark.parametrize("case", sorted(CASES))
@pytest.mark.parametrize("command", ["release", "run", "attack"])
def test_refused_before_the_input_is_read(unread, tmp_path, case, command):
    args, needle = CASES[case]
    method, *rest = args
    out = {
        "release": ["release", method, "-o", tmp_path / "o.pt"],
        "run": ["run", method, "--db", tmp_path / "r.db"],
        "attack": ["attack", "link-stealing", "--method", method, "--db", tmp_path / "r.db"],
    }[command]
    code, text = invoke(*out, "--input", unread, *rest)
    _one_error(code, text)
    assert needle in text, text
    assert [p.name for p in tmp_path.iterdir()] == ["edges.csv"]


@pytest.mark.parametrize("case", ["variant", "features", "range", "hops", "combination"])
def test_audit_refuses_before_the_input_is_read(unread, tmp_path, case):
    args, needle = CASES[case]
    method, *rest = args
    code, text = invoke("audit", method, "--epsilon", "1", "--input", unread, *rest)
    _one_error(code, text)
    assert needle in text, text


def _ledger(path, dataset="edges.csv", budget=None):
    from privgraph.accounting.ledger import Ledger

    Ledger(path, dataset=dataset).set_budget(budget or {"adjacency list": 4.0})


@pytest.mark.parametrize(
    "kind, needle",
    [
        ("damaged", "cannot use the ledger"),
        ("another name", "is for dataset 'other', not 'edges'"),  # --ledger-name against the ledger's own
        ("over budget", "refused before any noise"),
        ("unknown unit", "cannot use the ledger"),
    ],
)
def test_the_ledger_is_checked_before_the_input_is_read(unread, tmp_path, kind, needle):
    book = tmp_path / "ledger.json"
    if kind == "damaged":
        book.write_text('{"garbage')
    elif kind == "another name":
        _ledger(book, dataset="other")
    elif kind == "over budget":
        _ledger(book, budget={"adjacency list": 0.5})
    else:
        _ledger(book)
        state = json.loads(book.read_text())
        state["budget"] = {"no such unit": {"epsilon": 1.0, "delta": 0.0}}
        book.write_text(json.dumps(state))
    before = book.read_text()
    release = ["release", "blink", "--input", unread, "--epsilon", "1", "--ledger", book]
    release += ["--ledger-name", "edges"] if kind == "another name" else []
    code, text = invoke(*release, "-o", tmp_path / "o.pt")
    _one_error(code, text)
    assert needle in text, text
    assert book.read_text() == before and not (tmp_path / "o.pt").exists()


def test_output_and_results_paths_before_the_input_is_read(unread, tmp_path):
    code, text = invoke("release", "blink", "--input", unread, "-o", tmp_path / "missing" / "o.pt")
    _one_error(code, text)
    assert "--mkdir" in text
    (tmp_path / "folder.pt").mkdir()
    code, text = invoke("release", "blink", "--input", unread, "-o", tmp_path / "folder.pt")
    _one_error(code, text)
    assert "it is a folder" in text
    (tmp_path / "db").mkdir()  # a folder where the results database should be
    code, text = invoke("run", "blink", "--input", unread, "--db", tmp_path / "db")
    _one_error(code, text)
    assert "cannot write the results database" in text


def test_the_rules_are_the_methods_own():
    """One place: Method.check_input applies privgraph.input_rules, the same rules the command line applies to
    the catalogue's flags."""
    from privgraph.catalogue import method_entry
    from privgraph.input_rules import check_request, flags_of
    from privgraph.methods import get_method, method_class

    for name in ("lapgraph", "gap-edp", "lpgnn", "blink"):
        assert flags_of(method_class(name)) == flags_of(method_entry(name))
    edge_list = InputRequest(source="edges.csv", user_input=True, features=False, private_edges=False, domain=False)
    with pytest.raises(ValueError, match="reads the node features, but edges.csv comes with none"):
        method_class("gap-edp").check_input(edge_list)
    with pytest.raises(ValueError, match="reads the node features, but edges.csv comes with none"):
        check_request("gap-edp", method_entry("gap-edp"), edge_list)
    ratio = InputRequest(private_edges=False, ratio_applies=True)
    with pytest.raises(ValueError, match="--private-ratio"):
        method_class("lapgraph").check_input(ratio)
    method_class("lapgraph").check_input(InputRequest(private_edges=False, private_ratio=0.5, ratio_applies=True))
    with pytest.raises(ValueError, match="variant must be one of"):
        get_method("blink", variant="hybird")
    with pytest.raises(ValueError, match="variant must be one of"):
        check_choice("variant", "hybird", method_entry("blink")["choices"]["variant"])


def test_the_catalogues_spend_is_the_methods_own():
    """Where the catalogue computes a release's spend without torch (plain_spend), it equals planned_spend."""
    from privgraph.catalogue import declared_spend, method_entry
    from privgraph.methods import METHODS, get_method

    plain = [name for name in METHODS if method_entry(name)["plain_spend"]]
    assert "blink" in plain and "gap-edp" not in plain
    for name in plain:
        assert declared_spend(method_entry(name), 1.0, {}) == get_method(name).planned_spend(1.0), name


def _violations(entry):
    """One value per declared constraint of a catalogue ``entry`` that breaks it alone (the others at their
    defaults): (parameter values, what it breaks).  A bound: just outside each finite end; a choice: a value
    not among them; a rule: the values of :data:`RULE_BREAKERS`."""
    from privgraph.param_checks import _parse_bound

    out = []
    for name, bound in entry["bounds"].items():
        low, high, low_in, high_in = _parse_bound(bound)
        integer = entry["params"][name].startswith("int")
        for end, inside, step in ((low, low_in, -1), (high, high_in, 1)):
            if end in (float("inf"), float("-inf")):
                continue
            value = end + step if inside else end
            out.append(({name: int(value) if integer else float(value)}, f"bound {name} {bound}"))
        if not integer:
            out.append(({name: float("nan")}, f"bound {name} (NaN)"))
    for name in entry["choices"]:
        out.append(({name: "not-a-choice"}, f"choices of {name}"))
    for rule in entry["rules"]:
        out.append((RULE_BREAKERS[rule], f"rule {rule}"))
    return out


# for each rule of privgraph.param_checks: parameter values that break it (the others at their defaults)
RULE_BREAKERS = {
    "delta_of_gaussian": {"mechanism": "multibit", "delta": 0.1},
    "no_batch_norm": {"batch_norm": True},
    "whole_num_train": {"num_train": 0},
    "split_epsilons": {"epsilon_e": 25.0},
    "feature_share_unused": {"features": "none", "feature_share": 0.3},
    "feature_options": {"calibration": "paper", "feature_dim": 4},
    "authors_inputs_mode": {"nc_model": "link-vgae", "nc_inputs": "authors-han", "topology": "edge"},
    "over_bound_enforced": {"over_bound": "sample"},
    "no_hops": {"hops": 2},
    "test_delta_below": {"delta": 1e-6, "test_delta": 1e-5},
}


def test_every_declared_constraint_refuses_as_the_params_do(capsys):
    """For every method and attack, each declared bound, choice and rule of the catalogue (what the command line checks
    before torch) refuses a value that breaks it with the line its ``Params`` raises: one declaration, one
    check (privgraph.param_checks).  The rules' breakers are complete (a new rule without one fails)."""
    import typer

    from privgraph.attacks import ATTACKS
    from privgraph.catalogue import attack_entry, method_entry
    from privgraph.cli.checks import _check_declared
    from privgraph.methods import METHODS
    from privgraph.param_checks import RULES

    assert set(RULE_BREAKERS) == set(RULES)
    checked = 0
    every = [(m, cls, method_entry(m)) for m, cls in METHODS.items()]
    every += [(a, cls, attack_entry(a)) for a, cls in ATTACKS.items()]
    for method, cls, entry in every:
        for values, what in _violations(entry):
            with pytest.raises(ValueError) as raised:
                cls.Params.build(method, values)
            capsys.readouterr()
            with pytest.raises(typer.Exit) as exited:
                _check_declared(entry, values)
            assert exited.value.exit_code == 2, (method, what)
            assert " ".join(capsys.readouterr().err.split()) == f"error: {raised.value}", (method, what)
            checked += 1
    assert checked > 100, checked


def test_the_declarations_are_the_params_own():
    """The catalogue's bounds, choices and rules are those the Params fields and class declare."""
    import dataclasses

    from privgraph.catalogue import method_entry
    from privgraph.methods import METHODS

    for method, cls in METHODS.items():
        entry, declared = method_entry(method), dataclasses.fields(cls.Params)
        assert entry["bounds"] == {f.name: f.metadata["bound"] for f in declared if "bound" in f.metadata}
        assert entry["choices"] == {f.name: list(f.metadata["choices"]) for f in declared if "choices" in f.metadata}
        assert entry["rules"] == [r.__name__ for r in cls.Params.rules]
    assert method_entry("gap-edp")["bounds"]["hops"] == ">= 0"
    assert method_entry("lpgnn")["rules"] == ["delta_of_gaussian"]


@pytest.mark.parametrize(
    "value, ok",
    [(0.5, True), (0.0, False), (1.0, False), (float("nan"), False), (True, False), ("0.5", False), (None, True)],
)
def test_a_bound_refuses_what_lies_outside(value, ok):
    from privgraph.param_checks import check_bound

    if ok:
        check_bound("delta", value, "in (0, 1)")
    else:
        with pytest.raises(ValueError, match=r"delta must lie in \(0, 1\), got"):
            check_bound("delta", value, "in (0, 1)")
    check_bound("hops", 0, ">= 0")
    with pytest.raises(ValueError, match="hops must be >= 0, got -1"):
        check_bound("hops", -1, ">= 0")
    with pytest.raises(ValueError, match="noise_floor must lie in"):
        check_bound("noise_floor", float("inf"), "in [0, inf)")
