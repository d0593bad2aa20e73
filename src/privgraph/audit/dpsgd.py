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

``gradient_step="paper"`` audits the HeteDP authors' step
(:func:`privgraph.train.dpsgd.paper_gradient_step`, not DP) against the ε the
paper claims for the same σ: its rescaling to unit norm couples the
coordinates, so each sample is its own call — a 2-coordinate gradient, the
canary's C·e₁ or nothing, everything else zero (a neighbouring pair of
batches like any other) — and the score is the first coordinate of the
T steps' sum.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np
import torch

from privgraph.accounting import TrustModel, rdp
from privgraph.audit.bounds import CONFIDENCE, split_half_test
from privgraph.audit.runner import AuditRow, judge
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


def _paper_sums(side: int, count: int, steps: int, sigma: float, clip: float, seed: int) -> np.ndarray:
    rng = make_generator(derive_seed(seed, side, 1 << 20))  # a stream apart from _sums
    canary = torch.tensor([clip if side else 0.0, 0.0], dtype=torch.float64)
    out = np.empty(count)
    for i in range(count):
        out[i] = sum(
            float(dpsgd.paper_gradient_step({"b": canary}, clip, sigma * clip, rng)["b"][0]) for _ in range(steps)
        )
    return out


def audit_dpsgd(
    epsilon: float,
    delta: float = 1e-5,
    steps: int = 1,
    samples: int = 200_000,
    clip: float = 1.0,
    seed: int = 0,
    confidence: float = CONFIDENCE,
    chunk: int = CHUNK,
    gradient_step: str = "dpsgd",
) -> StepAuditRow:
    """Audit σ = noise_multiplier_for(ε, δ, q = 1, ``steps``) with ``samples`` Dirac canaries per input
    (module docstring).  The claim is (ε, δ) per training example — for ``gradient_step="paper"``
    (the authors' step, which states no guarantee) the one the paper claims for the same σ."""
    epsilon, delta = check_epsilon(epsilon), check_delta(delta)
    if samples < 4 or steps < 1:
        raise ValueError("need samples >= 4 and steps >= 1")
    if gradient_step not in dpsgd.GRADIENT_STEPS:
        raise ValueError(f"gradient_step must be one of {dpsgd.GRADIENT_STEPS}, got {gradient_step!r}")
    start = time.perf_counter()
    sigma = rdp.noise_multiplier_for(epsilon, delta, 1.0, steps)
    notes = [f"σ = {sigma:.4g} from the RDP accountant for q = 1 and T = {steps}"]
    if gradient_step == "paper":
        scores = [_paper_sums(side, samples, steps, sigma, clip, seed) for side in (0, 1)]
        label = "dp-sgd step — gradient_step=paper, NOT DP: vs the paper's claimed ε"
        test = "canary absent vs present; Σ_t of the canary's coordinate of the T steps (2 coordinates, one call each)"
        notes.append("the authors' step states no guarantee (ε = ∞); the row tests the (ε, δ) the paper claims")
    else:
        scores = [_sums(side, samples, steps, sigma, clip, seed, chunk) for side in (0, 1)]
        label = "one example (Dirac canary)"
        test = (
            "canary absent vs present; Σ_t of the canary's coordinate of the T noisy sums (the Gaussian "
            "likelihood ratio)"
        )
    half = samples // 2
    outcome, ceiling = split_half_test(scores[0], scores[1], delta, confidence)
    result, reasons = judge(epsilon, outcome.epsilon_lb, epsilon)  # the claim is the ε asked: σ is calibrated to it
    return StepAuditRow(
        "dp-sgd step",
        "training example",
        label,
        TrustModel.CENTRAL,
        epsilon,
        epsilon,
        delta,
        outcome.epsilon_lb,
        samples,
        samples - half,
        outcome.fpr,
        outcome.fnr,
        ceiling,
        test,
        result,
        time.perf_counter() - start,
        notes + reasons,
        steps=steps,
        noise_multiplier=sigma,
    )
