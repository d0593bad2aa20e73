"""`privgraph.audit`: run a method's release many times on two neighbouring inputs and bound ε from below.

For every unit of the method (:mod:`privgraph.audit.definitions`):

1. release D₀ and D₁ ``samples`` times each, every release with its own
   random stream (``derive_seed(seed, unit, side, i)``);
2. score each release (the claimed mechanism's likelihood ratio where known,
   else a logistic regression fitted on the selection half);
3. choose the threshold and its direction on the first half of each side's
   samples, count false positives and negatives on the second half;
4. ε_LB: the 95 % Clopper–Pearson bound of :mod:`privgraph.audit.bounds`;
5. verdict (:func:`verdict`) against the ε the user asked for, per unit (the
   request and the method's declared split: :attr:`Neighbours.requested`):
   "VIOLATION" when ε_LB exceeds it (a correct mechanism gets a false alarm
   with probability ≤ 5 % per unit) or when the release's claim differs from
   it, else "consistent"; where nothing was asked (a non-private method, an
   optional ε left out), ε_LB against the claim, and "no claim" when the
   release states no guarantee for the unit.
"""

from __future__ import annotations

import math
import time
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np
from torch_geometric.data import Data, HeteroData

from privgraph.accounting import PrivacyGuarantee
from privgraph.audit.bounds import CONFIDENCE, split_half_test
from privgraph.audit.definitions import AuditInput, definition
from privgraph.audit.neighbours import ASKED, Neighbours, claimed_guarantee
from privgraph.device import DeviceLike, on_device
from privgraph.mechanisms import derive_seed, make_generator
from privgraph.methods import Method, Task
from privgraph.progress import ProgressHook
from privgraph.release import json_safe
from privgraph.request import MethodLike, ReleaseRequest

CONSISTENT, VIOLATION, NO_CLAIM = "consistent", "VIOLATION", "no claim"
DEFAULT_SAMPLES = 1000
# a claim may fall short of the ε asked by this share, never exceed it: the DP-SGD accountant calibrates σ by
# bisection and states the ε it reaches, just below the target (privgraph.accounting.rdp.noise_multiplier_for)
CLAIM_SHORTFALL = 0.01


@dataclass
class AuditRow:
    """One audited unit: the claim, the bound, the test and the verdict."""

    method: str
    unit: str
    label: str
    trust_model: str
    epsilon: float  # claimed (inf: no claim)
    requested: float | None  # the ε the user's request implies for this unit (None: nothing was asked)
    delta: float
    epsilon_lb: float
    samples: int  # releases per input
    evaluation: int  # of which counted for the rates (the rest chose the threshold)
    fpr: float
    fnr: float
    ceiling: float  # the largest ε_LB these samples can show (no errors at all)
    test: str
    verdict: str
    seconds: float
    notes: list[str] = field(default_factory=list)

    @property
    def ratio(self) -> float | None:
        """ε_LB / ε (how tight the audit is), None without a positive finite claim."""
        return self.epsilon_lb / self.epsilon if 0 < self.epsilon < math.inf else None

    def to_dict(self) -> dict[str, Any]:
        return json_safe({**asdict(self), "ratio": self.ratio})


@dataclass
class AuditReport:
    """The audit of one method at one ε: a row per unit."""

    method: str
    epsilon: float | None
    params: dict[str, Any]
    seed: int
    confidence: float
    input: str
    rows: list[AuditRow]

    @property
    def violation(self) -> bool:
        return any(r.verdict == VIOLATION for r in self.rows)

    def to_dict(self) -> dict[str, Any]:
        return {
            "method": self.method,
            "epsilon": self.epsilon,
            "params": self.params,
            "seed": self.seed,
            "confidence": self.confidence,
            "input": self.input,
            "violation": self.violation,
            "rows": [r.to_dict() for r in self.rows],
        }


def claim_mismatch(epsilon: float, requested: float | None) -> str | None:
    """Why a claim of ``epsilon`` does not answer the request (a row's note), or None when it does (or
    nothing was asked)."""
    if requested is None:
        return None
    if math.isinf(epsilon):
        return f"states no guarantee where {requested:.4g} was asked"
    if epsilon > requested * (1 + 1e-9) + 1e-12 or epsilon < requested * (1 - CLAIM_SHORTFALL):
        return f"claims {epsilon:.4g} where {requested:.4g} was asked"
    return None


def judge(epsilon: float, epsilon_lb: float, requested: float | None = None) -> tuple[str, list[str]]:
    """The verdict and its reasons: VIOLATION when ε_LB exceeds the ε asked or the claim ``epsilon`` differs
    from it (:func:`claim_mismatch`), else consistent; with nothing asked, ε_LB against the claim (no claim
    when it is ε = ∞)."""
    if requested is None:
        if math.isinf(epsilon):
            return NO_CLAIM, []
        if epsilon_lb > epsilon + 1e-12:
            return VIOLATION, [f"ε_LB = {epsilon_lb:.3g} is above the claimed {epsilon:.4g}"]
        return CONSISTENT, []
    reasons = []
    mismatch = claim_mismatch(epsilon, requested)
    if mismatch is not None:
        reasons.append(f"the release {mismatch}")
    if epsilon_lb > requested + 1e-12:
        reasons.append(f"ε_LB = {epsilon_lb:.3g} is above the {requested:.4g} asked")
    return (VIOLATION if reasons else CONSISTENT), reasons


def verdict(epsilon: float, epsilon_lb: float, requested: float | None = None) -> str:
    """The verdict of :func:`judge`."""
    return judge(epsilon, epsilon_lb, requested)[0]


def learned_score(selection: tuple[np.ndarray, np.ndarray]):
    """A logistic regression (standardised features) fitted on the selection half: its decision function."""
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    x = np.concatenate(selection)
    y = np.concatenate([np.zeros(len(selection[0])), np.ones(len(selection[1]))])
    if np.ptp(x, axis=0).max(initial=0.0) == 0.0:  # nothing varies: every score ties
        return lambda values: np.zeros(len(values))
    model = make_pipeline(StandardScaler(), LogisticRegression(max_iter=1000)).fit(x, y)
    return model.decision_function


def audit_units(
    method: Method,
    units: list[Neighbours],
    index: int,
    samples: int,
    seed: int,
    confidence: float = CONFIDENCE,
    progress: ProgressHook | None = None,
    epsilon: float | None = None,
) -> list[AuditRow]:
    """Release both inputs ``samples`` times, test, bound (module docstring).  ``units`` share their
    neighbouring inputs and ``run`` (one release, several observations: u's report and the whole
    graph); release i of side s draws from ``derive_seed(seed, index, s, i)``.  ``epsilon``: the ε
    asked, the request of the units left at :data:`~privgraph.audit.neighbours.ASKED`."""
    if samples < 4:
        raise ValueError(f"the audit needs at least 4 samples per input (half choose the threshold), got {samples}")
    start = time.perf_counter()
    observations: list[list[list[np.ndarray]]] = [[[], []] for _ in units]
    claims: list[Any] = [None] * len(units)
    task = f"audit {method.name}: {units[0].label}"
    for side in (0, 1):
        for i in range(samples):
            release = units[0].run(side, make_generator(derive_seed(seed, index, side, i)))
            for k, nb in enumerate(units):
                if i == 0 and side == 0:
                    claims[k] = (nb.claim or (lambda rel, u=nb.unit: claimed_guarantee(rel, u)))(release)
                observations[k][side].append(np.asarray(nb.observe(release), dtype=np.float64).ravel())
            if progress is not None:
                progress(task, side * samples + i + 1, 2 * samples)
    seconds = time.perf_counter() - start
    rows = []
    for nb, obs, claim in zip(units, observations, claims):
        if len({o.shape for side in obs for o in side}) > 1:
            raise ValueError(f"{method.name}: the observations of {nb.label!r} differ in length between releases")
        requested = epsilon if nb.requested is ASKED else nb.requested
        rows.append(_row(method, nb, [np.stack(o) for o in obs], claim, requested, samples, confidence, seconds))
    return rows


def _row(
    method: Method,
    neighbours: Neighbours,
    obs: list[np.ndarray],
    claim: PrivacyGuarantee | None,
    requested: float | None,
    samples: int,
    confidence: float,
    seconds: float,
) -> AuditRow:
    """Choose the test on the first half of each side, count its errors on the second, bound ε."""
    half = samples // 2
    score = neighbours.score or learned_score((obs[0][:half], obs[1][:half]))  # fitted on the selection half
    epsilon = math.inf if claim is None or not claim.is_private else claim.epsilon
    delta = 0.0 if claim is None else claim.delta
    outcome, ceiling = split_half_test(score(obs[0]), score(obs[1]), delta, confidence)
    notes = list(neighbours.notes)
    if claim is None:
        notes.append("the release states no guarantee for this unit")
    result, reasons = judge(epsilon, outcome.epsilon_lb, requested)
    return AuditRow(
        method.name,
        neighbours.unit,
        neighbours.label,
        claim.trust_model if claim else "—",
        epsilon,
        requested,
        delta,
        outcome.epsilon_lb,
        samples,
        samples - half,
        outcome.fpr,
        outcome.fnr,
        ceiling,
        neighbours.test,
        result,
        seconds,
        notes + reasons,
    )


def default_input(method: type[Method] | Method, seed: int = 0) -> Data | HeteroData:
    """The small synthetic graph a method is audited on by default (:mod:`privgraph.audit.graphs`)."""
    from privgraph.audit.graphs import audit_graph, audit_hetero_graph

    if method.heterogeneous:
        return audit_hetero_graph(seed)
    # the embedding methods encode several features (DP-GCN's sensitive subspace needs more than one), and
    # FeatureRR's released-code accounting (ε_i = d·θ_i·ε) differs from Theorem 3's only when d > 1
    several = (
        method.task == Task.EMBEDDING or getattr(getattr(method, "params", None), "accounting", None) == "released-code"
    )
    return audit_graph(seed, num_features=4) if several else audit_graph(seed)


def audit_method(
    data: Data | HeteroData | None,
    method: MethodLike,
    *,
    epsilon: float | None = None,
    delta: float | None = None,
    label_epsilon: float | None = None,
    samples: int = DEFAULT_SAMPLES,
    seed: int = 0,
    confidence: float = CONFIDENCE,
    progress: ProgressHook | None = None,
    device: DeviceLike = None,
    **params: Any,
) -> AuditReport:
    """Audit ``method`` at ``epsilon``: an :class:`AuditReport` with ε_LB and a verdict per unit
    (``privgraph.audit_method``; the arguments and their order are :func:`privgraph.privatize`'s, whose
    :class:`~privgraph.ReleaseRequest` it builds and releases many times).

    Args:
        data: the graph the neighbouring inputs are built on (None: a small synthetic graph,
            :func:`default_input`); the audited nodes are chosen in it.
        method: a registered name (with ``**params``), its ``Params`` object or a built
            :class:`~privgraph.methods.Method` (a subclass works too: that is how a miscalibrated copy is audited).
        epsilon: the ε the method is released with: each unit is judged against the ε it implies (by the
            method's declared split); its claim is read from each release's report and must match it.
        delta: the δ of the claim, for the methods that declare one (``Method.delta_param``: HeteDP, PPCVGAE, GAP,
            node-level DP-SGD, the Gaussian feature mechanism).
        samples: releases per input (half choose the threshold, half count the errors).
        seed: every release draws from its own stream derived from it.
        label_epsilon: also audit the node label unit (label LDP of node-classification methods) at this ε.
        device: where the releases train and post-process (:mod:`privgraph.device`); their noise is drawn
            on the CPU whatever the device, so the audit checks the same mechanism everywhere.
    """
    method = ReleaseRequest.build(method, epsilon=epsilon, delta=delta, label_epsilon=label_epsilon, **params).method
    if data is None:
        data = default_input(method, seed)
        source = "synthetic (privgraph.audit.graphs)"
        if getattr(method.params, "edge_type", "unset") is None:  # HeteDP's protected relation on that graph
            from privgraph.audit.graphs import HETERO_EDGE_TYPE

            method = method.with_params(edge_type=HETERO_EDGE_TYPE)
        if getattr(method.params, "edge_count", "unset") is None:  # DP-SGD's public N: that public graph's count
            method = method.with_params(edge_count=int(data[method.params.edge_type].edge_index.shape[1]))
        if getattr(method.params, "num_train", "unset") is None:  # node-level DP-SGD's public N: that graph's
            method = method.with_params(num_train=int(data.train_mask.sum()))
    else:
        source = "user graph"
    request = ReleaseRequest.build(method, epsilon=epsilon, label_epsilon=label_epsilon, seed=seed, device=device)
    inp = AuditInput(data, request, seed)
    units = definition(method)(method, inp)
    groups: dict[int, list[Neighbours]] = {}  # units released by the same run share their releases
    for nb in units:
        groups.setdefault(id(nb.run), []).append(nb)
    with on_device(device):
        rows = [
            row
            for k, group in enumerate(groups.values())
            for row in audit_units(method, group, k, samples, seed, confidence, progress, epsilon)
        ]
    return AuditReport(method.name, epsilon, method.params.to_dict(), seed, confidence, source, rows)
