"""Issue 30, item 2: no report carries a number computed from private data that no noise covers.

For every registered method and each of its units, the neighbouring inputs of the method's audit
definition (:mod:`privgraph.audit.definitions`: the unit's two worlds, released through the
method's own code) are released with the same seed, and everything a recipient reads besides the
released tensors — the report's lines, the guarantees and the release JSON (parameters, field
statuses, randomness; the diagnostics are withheld by default) — must be identical.  A count, a
sampling rate or a sensitivity read from the private data would differ between the two worlds.
"""

from __future__ import annotations

import pytest

from privgraph.audit.definitions import AuditInput, definition
from privgraph.audit.runner import default_input
from privgraph.mechanisms import make_generator
from privgraph.methods import METHODS, Task
from privgraph.release import PrivateRelease
from privgraph.request import ReleaseRequest

EPSILON = 2.0
SHORT = {  # keep the slow ones short (the report's wording does not depend on these)
    "edgerr": {"mcmc_steps": 300},
    "privhrg": {"mcmc_steps": 300},
    "heterorr": {},  # the default max(1000·n, 2·10⁵) moves: 300 do not pass EdgeRR's convergence check here
    "ppcvgae": {"epochs": 5},
    "vgae": {"epochs": 5},
    "dpgcn": {"epochs": 5},
    "hetedp": {"epochs": 1, "batch_size": 30},
}


def _method(name: str):
    cls = METHODS[name]
    method = cls(**SHORT.get(name, {}))
    data = default_input(method)
    if getattr(method.params, "edge_type", "unset") is None:  # as privgraph.audit sets HeteDP up on that graph
        from privgraph.audit.graphs import HETERO_EDGE_TYPE

        method = method.with_params(edge_type=HETERO_EDGE_TYPE, edge_count=60)
    if getattr(method.params, "num_train", "unset") is None:  # node-level DP-SGD's public N, as the audit sets it
        method = method.with_params(num_train=int(data.train_mask.sum()))
    return method, data


def _public_view(release) -> dict:
    """What a recipient reads besides the released tensors."""
    if isinstance(release, PrivateRelease):
        return {"lines": release.report.lines(), "json": release.metadata()}
    return {"guarantee": release.guarantee.to_dict()}  # an embedding release step (PPCVGAE's family)


@pytest.mark.parametrize("name", sorted(METHODS))
def test_neighbours_get_identical_reports(name):
    method, data = _method(name)
    label = 1.0 if METHODS[name].task == Task.NODE_CLASSIFICATION and not METHODS[name].heterogeneous else None
    request = ReleaseRequest.build(method, epsilon=EPSILON if METHODS[name].private else None, label_epsilon=label)
    inp = AuditInput(data, request)
    runs = {}
    for nb in definition(name)(method, inp):
        runs.setdefault(id(nb.run), nb)
    assert runs, f"{name} has no audited unit"
    for nb in runs.values():
        views = [_public_view(nb.run(side, make_generator(11))) for side in (0, 1)]
        assert views[0] == views[1], f"{name}, unit {nb.label}: the report differs between neighbours"
