"""Audit of the DP-SGD step HeteDP trains with (Nasr et al. 2021's strongest adversary).

HeteDP's end-to-end audit (:mod:`~privgraph.audit.definitions`, many short
runs, the final model's score of one canary edge) is a black-box test: it
cannot reach the accountant's ε.  This audit checks the calibration itself —
the noise multiplier σ the RDP accountant gives for (ε, δ, q, T)
(:func:`privgraph.accounting.rdp.noise_multiplier_for`) and the noisy clipped
sum of :func:`privgraph.train.dpsgd.clipped_noisy_gradient` — against a
white-box adversary: full batch (q = 1), every one of the T noisy sums
observed, and *Dirac canaries*: in D₁ example k's gradient is C·e_k (on a
coordinate no other example touches), in D₀ it is absent.  Coordinate k of
the T sums is then one sample of the mechanism for canary k; the test is the
Gaussian likelihood ratio, their sum over the steps.  Many canaries share
one call (one coordinate each, independent noise per coordinate), as in
Steinke, Nasr & Jagielski 2023's one-run audits, so 10⁵ samples cost seconds.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np
import torch

from privgraph.accounting import TrustModel, rdp
from privgraph.audit.bounds import CONFIDENCE, split_half_test
from privgraph.audit.runner import AuditRow, verdict
from privgraph.mechanisms import check_delta, check_epsilon, derive_seed, make_generator
from privgraph.train import dpsgd

CHUNK = 2048  # canaries per call (the per-example gradients are CHUNK × CHUNK)


@dataclass
class StepAuditRow(AuditRow):
    """An :class:`AuditRow` with the DP-SGD run's steps and noise multiplier."""

    steps: int = 1
    noise_multiplier: float = 0.0


def _sums(side: int, count: int, steps: int, sigma: float, clip: float, seed: int, chunk: int) -> np.ndarray:
    out = []
    for c, start in enumerate(range(0, count, chunk)):
        k = min(chunk, count - start)
        grads = {"w": clip * torch.eye(k, dtype=torch.float64) if side else torch.zeros((1, k), dtype=torch.float64)}
        rng = make_generator(derive_seed(seed, side, c))
        total = torch.zeros(k, dtype=torch.float64)
        for _ in range(steps):
            noisy, _ = dpsgd.clipped_noisy_gradient(grads, clip, sigma * clip, 1.0, rng)
            total += noisy["w"]
        out.append(total.numpy())
    return np.concatenate(out)


def audit_dpsgd(epsilon: float, delta: float = 1e-5, steps: int = 1, samples: int = 200_000, clip: float = 1.0,
                seed: int = 0, confidence: float = CONFIDENCE, chunk: int = CHUNK) -> StepAuditRow:
    """Audit σ = noise_multiplier_for(ε, δ, q = 1, ``steps``) with ``samples`` Dirac canaries per input
    (module docstring).  The claim is (ε, δ) per training example."""
    epsilon, delta = check_epsilon(epsilon), check_delta(delta)
    if samples < 4 or steps < 1:
        raise ValueError("need samples >= 4 and steps >= 1")
    start = time.perf_counter()
    sigma = rdp.noise_multiplier_for(epsilon, delta, 1.0, steps)
    scores = [_sums(side, samples, steps, sigma, clip, seed, chunk) for side in (0, 1)]
    half = samples // 2
    outcome, ceiling = split_half_test(scores[0], scores[1], delta, confidence)
    return StepAuditRow(
        "dp-sgd step", "training example", "one example (Dirac canary)", TrustModel.CENTRAL, epsilon, delta,
        outcome.epsilon_lb, samples, samples - half, outcome.fpr, outcome.fnr, ceiling,
        "canary absent vs present; Σ_t of the canary's coordinate of the T noisy sums (the Gaussian likelihood "
        "ratio)", verdict(epsilon, outcome.epsilon_lb), time.perf_counter() - start,
        [f"σ = {sigma:.4g} from the RDP accountant for q = 1 and T = {steps}"], steps, sigma)
