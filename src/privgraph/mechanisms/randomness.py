"""Explicit randomness for mechanisms: a seeded ``torch.Generator`` or the OS CSPRNG.

Every sampling routine of :mod:`privgraph.mechanisms` goes through the
functions here, so a mechanism runs unchanged in *reproducible* mode (a
seeded ``torch.Generator``) and in *secure* mode (:class:`SecureRandom`, which
reads ``os.urandom``, the operating system's cryptographic source), the mode
to use for a real release.  All samplers are inverse-CDF transforms of
uniforms, so both modes draw from exactly the same distributions.

Which source a *release* uses (see ``docs/privacy.md``, "Randomness"):

* a release meant to leave the building draws from :class:`SecureRandom`
  (``privgraph release`` does by default): nothing recorded can regenerate
  its noise;
* a seeded release (``--reproducible``) is for research only: anyone who
  knows the seed regenerates the noise and subtracts it
  (:func:`reproducible_note`'s warning is added to its guarantees);
* several releases of the same data (candidates of a selection on
  validation, trials, one per ε) each draw from their own
  :func:`release_source` stream: two releases that shared a draw at two
  known scales would reveal the input exactly (e.g. x + b·L and x + b'·L
  give x), whatever their composed ε says.

Caveat (stated in the guarantees of continuous mechanisms): inverse-CDF
sampling in floating point is not the idealised real-valued mechanism
(Mironov, CCS 2012); the discrete mechanisms (multi-bit, one-bit, randomized
response) are not affected.
"""

from __future__ import annotations

import math
import os

import numpy as np
import torch

_TWO_POW_53 = float(2**53)


class SecureRandom:
    """Randomness from the operating system's cryptographic source (``os.urandom``).

    Not seedable by design: use it for real releases, a seeded
    ``torch.Generator`` for experiments.
    """

    def _uint64(self, count: int) -> np.ndarray:
        return np.frombuffer(os.urandom(8 * count), dtype=np.uint64)

    def uniform(self, shape: tuple[int, ...]) -> torch.Tensor:
        """Uniforms on the open interval (0, 1), 53-bit resolution, float64."""
        count = int(np.prod(shape)) if len(shape) else 1
        bits = self._uint64(count) >> np.uint64(11)
        u = (bits.astype(np.float64) + 0.5) / _TWO_POW_53
        return torch.from_numpy(u.reshape(shape))

    def integers(self, high: int, shape: tuple[int, ...]) -> torch.Tensor:
        """Exactly uniform integers in [0, high) by rejection sampling."""
        if high <= 0:
            raise ValueError("high must be positive")
        count = int(np.prod(shape)) if len(shape) else 1
        limit = np.uint64((2**64 // high) * high - 1) if high & (high - 1) else None
        out = np.empty(count, dtype=np.uint64)
        filled = 0
        while filled < count:
            draw = self._uint64(count - filled + 8)
            if limit is not None:
                draw = draw[draw <= limit]
            take = draw[: count - filled]
            out[filled : filled + len(take)] = take
            filled += len(take)
        return torch.from_numpy((out % np.uint64(high)).astype(np.int64).reshape(shape))


RandomSource = torch.Generator | SecureRandom


def make_generator(seed: int | None = None, secure: bool = False) -> RandomSource:
    """A seeded ``torch.Generator`` (reproducible) or :class:`SecureRandom`."""
    if secure:
        if seed is not None:
            raise ValueError("secure mode draws from the OS and cannot be seeded")
        return SecureRandom()
    g = torch.Generator()
    g.manual_seed(0 if seed is None else int(seed))
    return g


SECURE_NOTE = "randomness from the OS cryptographic source (os.urandom); no seed can regenerate the noise"


def reproducible_note(seed: int, stream: tuple[int, ...] = ()) -> str:
    """The warning every private guarantee of a seeded (``--reproducible``) release carries; ``stream``:
    the part of the seed's randomness the release drew from (:func:`release_source`)."""
    source = f"seed {seed}" + (f" (stream {', '.join(map(str, stream))})" if stream else "")
    return (
        f"REPRODUCIBLE release, for research only: the noise was drawn from {source}, recorded in this "
        "report; anyone with the seed can regenerate the noise and remove it, so this release gives NO "
        "privacy protection once the seed is known"
    )


def derive_seed(*parts: int) -> int:
    """A 32-bit seed determined by ``parts`` (NumPy's SeedSequence: distinct tuples give
    statistically independent streams)."""
    return int(np.random.SeedSequence([int(p) & 0xFFFFFFFF for p in parts]).generate_state(1)[0])


def release_source(seed: int | None, *stream: int) -> RandomSource:
    """The randomness of one release: the OS source when ``seed`` is None (secure mode),
    else a generator seeded by ``derive_seed(seed, *stream)``.  Give every release of the
    same data its own ``stream`` (trial, ε index, candidate index, ...)."""
    return SecureRandom() if seed is None else make_generator(derive_seed(seed, *stream))


def _check(rng: RandomSource) -> None:
    if not isinstance(rng, (torch.Generator, SecureRandom)):
        raise TypeError(
            "rng must be a torch.Generator or privgraph.mechanisms.SecureRandom "
            f"(randomness is always explicit), got {type(rng).__name__}"
        )


def uniform(shape: tuple[int, ...], rng: RandomSource) -> torch.Tensor:
    """Float64 uniforms on (0, 1)."""
    _check(rng)
    if isinstance(rng, SecureRandom):
        return rng.uniform(tuple(shape))
    u = torch.rand(shape, generator=rng, dtype=torch.float64)
    # torch.rand is on [0, 1); move the (measure-zero) 0 inside the open interval
    return u.clamp_(min=1.0 / _TWO_POW_53)


def integers(high: int, shape: tuple[int, ...], rng: RandomSource) -> torch.Tensor:
    """Uniform int64 in [0, high)."""
    _check(rng)
    if isinstance(rng, SecureRandom):
        return rng.integers(high, tuple(shape))
    return torch.randint(0, high, shape, generator=rng)


def rand(shape: tuple[int, ...], rng: RandomSource, dtype: torch.dtype = torch.float32) -> torch.Tensor:
    """Uniforms on [0, 1): ``torch.rand`` on a generator (its own stream, so seeded runs
    keep their values), the OS source's uniforms otherwise."""
    _check(rng)
    if isinstance(rng, SecureRandom):
        return rng.uniform(tuple(shape)).to(dtype)
    return torch.rand(shape, generator=rng, dtype=dtype)


def randn(shape: tuple[int, ...], rng: RandomSource, dtype: torch.dtype = torch.float32) -> torch.Tensor:
    """Standard normals: ``torch.randn`` on a generator (its own stream), the inverse CDF
    of the OS source's uniforms otherwise."""
    _check(rng)
    if isinstance(rng, SecureRandom):
        return torch.special.ndtri(rng.uniform(tuple(shape))).to(dtype)
    return torch.randn(shape, generator=rng, dtype=dtype)


def bernoulli(p: torch.Tensor, rng: RandomSource) -> torch.Tensor:
    """Independent Bernoulli(p) draws, elementwise (bool tensor)."""
    return uniform(tuple(p.shape), rng) < p.to(torch.float64)


def poisson_subsample(n: int, q: float, rng: RandomSource) -> torch.Tensor:
    """The sorted indices of a Poisson sample of ``range(n)``: each index kept independently with probability
    ``q`` (DP-SGD's sampling), drawn in O(qn) expected time instead of n uniforms.  The kept indices of a
    Bernoulli(q) sequence are separated by independent Geometric(q) gaps on {1, 2, …}, so index_j = Σ_{i≤j} G_i − 1
    with G = 1 + ⌊log U / log(1 − q)⌋ (the inverse CDF of :func:`uniform`'s U on (0, 1)), drawn in vectorised
    chunks of about qn + 4√(qn) + 16 gaps until the running sum passes n: the kept set is the same law as
    ``uniform((n,)) < q``, not an approximation of it (up to floating-point inverse-CDF sampling, the module's
    caveat).  ``q`` ≥ 1 keeps every index without drawing."""
    if not q > 0:
        raise ValueError(f"the sampling rate q must be > 0, got {q}")
    if n <= 0:
        return torch.empty(0, dtype=torch.long)
    if q >= 1:
        return torch.arange(n)
    log_keep = math.log1p(-q)  # log(1 − q) < 0
    chunk = int(q * n + 4 * math.sqrt(q * n) + 16)
    parts, last = [], -1  # last: the previous kept index (−1 before the first)
    while last < n:
        gaps = torch.floor(torch.log(uniform((chunk,), rng)) / log_keep).clamp_(max=n) + 1  # Geometric(q) ≥ 1
        idx = last + torch.cumsum(gaps.to(torch.long), 0)
        parts.append(idx)
        last = int(idx[-1])
    kept = torch.cat(parts)
    return kept[kept < n]


def laplace(shape: tuple[int, ...], scale: float, rng: RandomSource) -> torch.Tensor:
    """Laplace(0, scale) by inverse CDF."""
    u = uniform(shape, rng) - 0.5
    return -scale * torch.sign(u) * torch.log1p(-2.0 * u.abs())


def normal(shape: tuple[int, ...], std: float, rng: RandomSource) -> torch.Tensor:
    """N(0, std²) by inverse CDF."""
    return std * torch.special.ndtri(uniform(shape, rng))


def sample_subsets(n: int, d: int, m: int, rng: RandomSource) -> torch.Tensor:
    """For each of ``n`` rows, a uniformly random ``m``-subset of ``range(d)``.

    Returns an ``(n, m)`` int64 tensor.  Small ``m`` uses Floyd's algorithm
    vectorised over rows (O(n·m²) time, no n×d buffer); large ``m`` ranks
    random keys in row blocks.
    """
    if not 1 <= m <= d:
        raise ValueError(f"need 1 <= m <= d, got m={m}, d={d}")
    if m <= 32:
        out = torch.empty((n, m), dtype=torch.long)
        for col, j in enumerate(range(d - m, d)):
            t = integers(j + 1, (n,), rng)
            taken = (out[:, :col] == t[:, None]).any(dim=1) if col else torch.zeros(n, dtype=torch.bool)
            out[:, col] = torch.where(taken, torch.full_like(t, j), t)
        return out
    block = max(1, (1 << 22) // d)
    parts = [uniform((min(block, n - s), d), rng).topk(m, dim=1).indices for s in range(0, n, block)]
    return torch.cat(parts) if parts else torch.empty((0, m), dtype=torch.long)
