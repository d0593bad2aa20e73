"""A keyed pseudo-random function: Philox-4x32-10 (Salmon et al., SC'11), vectorised.

``prf_uniform(keys, counters)`` maps each (key, counter) pair to a uniform on
(0, 1), deterministically.  A node that owns a secret key can thus define an
arbitrarily long random vector (one entry per counter, e.g. per other node)
without storing it, and any entry can be evaluated on demand — the lazy
representation of randomized-response reports used for link LDP.  Philox is a
counter-based generator that passes TestU01's BigCrush; it is a statistical,
not a cryptographic, PRF.

:func:`philox_uniform` is the same function compiled (numba), for kernels
that evaluate it once per pair or per MCMC step without temporaries.
"""

from __future__ import annotations

import numba as nb
import numpy as np

from privgraph.mechanisms.randomness import RandomSource, integers

_M0, _M1 = np.uint64(0xD2511F53), np.uint64(0xCD9E8D57)
_W0, _W1 = np.uint64(0x9E3779B9), np.uint64(0xBB67AE85)
_MASK = np.uint64(0xFFFFFFFF)
_S32 = np.uint64(32)


def philox4x32(counter: tuple[np.ndarray, ...], key: tuple[np.ndarray, np.ndarray], rounds: int = 10):
    """Philox-4x32 on broadcastable uint32 words (held in uint64 arrays)."""
    c0, c1, c2, c3 = (np.asarray(c, dtype=np.uint64) & _MASK for c in counter)
    k0, k1 = (np.asarray(k, dtype=np.uint64) & _MASK for k in key)
    for _ in range(rounds):
        p0 = _M0 * c0
        p1 = _M1 * c2
        hi0, lo0 = p0 >> _S32, p0 & _MASK
        hi1, lo1 = p1 >> _S32, p1 & _MASK
        c0, c1, c2, c3 = hi1 ^ c1 ^ k0, lo1, hi0 ^ c3 ^ k1, lo0
        k0 = (k0 + _W0) & _MASK
        k1 = (k1 + _W1) & _MASK
    return c0, c1, c2, c3


def draw_key(rng: RandomSource) -> np.uint64:
    """A fresh secret Philox key (62 random bits) from a generator or the OS source."""
    return np.uint64(int(integers(2**62, (1,), rng)[0]))


def prf_uniform(keys: np.ndarray, counters: np.ndarray, stream: int = 0) -> np.ndarray:
    """Uniforms on (0, 1) with 53-bit resolution for each (key, counter) pair.

    ``keys`` are uint64 node keys, ``counters`` int64 indices (broadcast
    together); ``stream`` separates independent uses of the same keys.
    """
    keys = np.asarray(keys, dtype=np.uint64)
    counters = np.asarray(counters, dtype=np.int64).astype(np.uint64)
    w0, w1, _, _ = philox4x32(
        (counters & _MASK, counters >> _S32, np.uint64(stream) & _MASK, np.uint64(0)),
        (keys & _MASK, keys >> _S32),
    )
    bits53 = ((w0 << _S32) | w1) >> np.uint64(11)
    return (bits53.astype(np.float64) + 0.5) / float(2**53)


_S11 = np.uint64(11)
_INV53 = 1.0 / float(2**53)


@nb.njit(inline="always", cache=True)
def philox_uniform(key: np.uint64, counter: np.int64, stream: np.uint64) -> float:
    """Compiled Philox-4x32-10 uniform of (key, counter, stream): the value of ``prf_uniform``."""
    return (float(philox_bits53(key, counter, stream)) + 0.5) * _INV53


def uniform_below_bits(p: float) -> int:
    """The integer T with ``philox_uniform(…) < p`` ⟺ ``philox_bits53(…) < T``: the uniform is the
    monotone map b ↦ (b + 0.5)·2⁻⁵³ of the 53 bits, so T is the count of bit patterns whose uniform
    (in float64, as computed) falls below p — found by bisection, exact.  Lets compiled loops
    compare integers (which vectorise) instead of converting each draw to a float."""
    lo, hi = 0, 2**53  # invariant: uniform(lo) < p, and every b ≥ hi has uniform(b) ≥ p (or b is out of range)
    if not (np.float64(lo) + 0.5) * _INV53 < p:
        return 0
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (mid, hi) if (np.float64(mid) + 0.5) * _INV53 < p else (lo, mid)
    return hi


@nb.njit(inline="always", cache=True)
def philox_bits53(key: np.uint64, counter: np.int64, stream: np.uint64) -> np.uint64:
    """The 53 random bits behind :func:`philox_uniform` (compiled Philox-4x32-10)."""
    c = np.uint64(counter)
    c0 = c & _MASK
    c1 = c >> _S32
    c2 = stream & _MASK
    c3 = np.uint64(0)
    k0 = key & _MASK
    k1 = key >> _S32
    for _ in range(10):
        p0 = _M0 * c0
        p1 = _M1 * c2
        hi0 = p0 >> _S32
        lo0 = p0 & _MASK
        hi1 = p1 >> _S32
        lo1 = p1 & _MASK
        c0, c1, c2, c3 = hi1 ^ c1 ^ k0, lo1, hi0 ^ c3 ^ k1, lo0
        k0 = (k0 + _W0) & _MASK
        k1 = (k1 + _W1) & _MASK
    return ((c0 << _S32) | c1) >> _S11
