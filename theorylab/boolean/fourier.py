"""Fourier analysis of functions on the hypercube {-1, +1}^d, exactly.

Convention: point index ``i`` in ``[0, 2^d)`` has coordinate ``x_j = -1`` when bit ``j`` of ``i`` is set, else
``+1``; a set ``S`` of coordinates is the bit mask ``sum(2**j for j in S)``. Then the character is
``chi_S(x) = (-1)^popcount(i & S)`` and the Fourier coefficient is ``hat f(S) = 2^-d sum_x f(x) chi_S(x)``.
The transform is the fast Walsh-Hadamard transform: ``d`` butterfly passes of ``2^d`` additions each, so a function
on 2^20 points takes milliseconds; integer values stay exact (the unnormalised sums are integers).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from fractions import Fraction
from math import comb

import numpy as np

MAX_D = 26  # 2^26 float64 values = 512 MiB: the largest transform we allow
MAX_CUBE_D = 22  # hypercube(d) materialises 2^d x d int8 points: 88 MiB at d = 22


def _check_d(d: int, limit: int = MAX_D) -> int:
    if isinstance(d, bool) or not isinstance(d, int | np.integer):
        raise TypeError(f"d must be an int, got {type(d).__name__}")
    if d < 0:
        raise ValueError(f"d must be >= 0, got {d}")
    if d > limit:
        raise ValueError(f"d = {d} is too large for exact enumeration of 2^d points (limit d <= {limit})")
    return int(d)


def subset_mask(S: Iterable[int], d: int) -> int:
    """The bit mask of a set ``S`` of coordinates in ``range(d)``."""
    S = list(S)
    if any(not isinstance(j, int | np.integer) or not 0 <= j < d for j in S):
        raise ValueError(f"coordinates must be ints in [0, {d}), got {S}")
    if len(set(S)) != len(S):
        raise ValueError(f"coordinates must be distinct, got {S}")
    return int(sum(1 << int(j) for j in S))


def hypercube(d: int) -> np.ndarray:
    """All 2^d points of {-1,+1}^d as an int8 array ``[2^d, d]`` in the module's index convention."""
    d = _check_d(d, MAX_CUBE_D)
    idx = np.arange(2**d, dtype=np.int64)[:, None]
    bits = (idx >> np.arange(d, dtype=np.int64)[None, :]) & 1
    return (1 - 2 * bits).astype(np.int8)


def characters(d: int, S: Iterable[int]) -> np.ndarray:
    """chi_S on every point of the cube, as int8 +-1 values (length 2^d)."""
    d = _check_d(d, MAX_D)
    mask = subset_mask(S, d)
    idx = np.arange(2**d, dtype=np.int64)
    par = np.zeros(2**d, dtype=np.int64)
    m = idx & mask
    while m.any():
        par ^= m & 1
        m = m >> 1
    return (1 - 2 * par).astype(np.int8)


def walsh_transform(values: np.ndarray) -> np.ndarray:
    """Unnormalised Walsh-Hadamard transform ``W[S] = sum_x f(x) chi_S(x)`` of the 2^d values of ``f``.

    Exact for integer inputs (int64 sums; overflow-free while ``2^d max|f| < 2^63``); float inputs are summed in
    float64 with the usual ``d * eps * sum|f|`` round-off.
    """
    v = np.asarray(values)
    if v.ndim != 1:
        raise ValueError(f"values must be a 1-D array of length 2^d, got shape {v.shape}")
    n = v.shape[0]
    if n < 1 or n & (n - 1):
        raise ValueError(f"the number of values must be a power of two 2^d, got {n}")
    d = _check_d(n.bit_length() - 1)
    out = v.astype(np.int64 if np.issubdtype(v.dtype, np.integer) or v.dtype == bool else np.float64)
    for j in range(d):
        h = 1 << j
        blocks = out.reshape(-1, 2, h)
        a, b = blocks[:, 0, :].copy(), blocks[:, 1, :]
        blocks[:, 0, :] += b
        blocks[:, 1, :] = a - b
    return out


def _values(f: Callable[[np.ndarray], np.ndarray] | np.ndarray, d: int) -> np.ndarray:
    if callable(f):
        vals = np.asarray(f(hypercube(d)))
    else:
        vals = np.asarray(f)
    if vals.shape != (2**d,):
        raise ValueError(
            f"f must give one value per point of the cube: expected shape {(2**d,)}, got {vals.shape}"
        )
    if not (np.issubdtype(vals.dtype, np.number) or vals.dtype == bool):
        raise TypeError(f"f must give real numbers, got values of dtype {vals.dtype}")
    if np.iscomplexobj(vals):
        raise TypeError("f must give real numbers, got complex values")
    bad = ~np.isfinite(vals) if np.issubdtype(vals.dtype, np.floating) else None
    if bad is not None and bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise ValueError(
            f"f has {int(bad.sum())} NaN or infinite values (first at point {i}: {float(vals[i])})"
        )
    return vals


def fourier_coefficients(
    f: Callable[[np.ndarray], np.ndarray] | np.ndarray, d: int, exact: bool = False
) -> np.ndarray:
    """All 2^d Fourier coefficients ``hat f(S)`` (indexed by the bit mask of S) by a fast Walsh-Hadamard transform.

    ``f`` is either a function of the ``[2^d, d]`` array of points (see :func:`hypercube`) or the array of its
    2^d values. ``exact=True`` needs integer values and returns ``Fraction`` objects ``W[S] / 2^d``.
    """
    d = _check_d(d)
    vals = _values(f, d)
    w = walsh_transform(vals)
    if not exact:
        return w / float(2**d)
    if w.dtype != np.int64:
        raise TypeError("exact=True needs integer values of f")
    return np.array([Fraction(int(c), 2**d) for c in w], dtype=object)


def fourier_coefficient(
    f: Callable[[np.ndarray], np.ndarray] | np.ndarray, d: int, S: Iterable[int]
) -> float:
    """A single coefficient ``hat f(S) = E_x[f(x) chi_S(x)]`` by direct summation (the O(2^d) reference)."""
    d = _check_d(d, MAX_CUBE_D)
    vals = _values(f, d)
    return float(np.dot(vals.astype(np.float64), characters(d, S).astype(np.float64)) / 2**d)


def parity(x: np.ndarray, S: Iterable[int]) -> np.ndarray:
    """chi_S(x) = prod_{i in S} x_i for points ``x`` of shape ``[..., d]`` (the empty product is 1)."""
    x = np.asarray(x)
    S = list(S)
    subset_mask(S, x.shape[-1])
    return np.prod(x[..., S], axis=-1) if S else np.ones(x.shape[:-1], dtype=x.dtype)


def majority(x: np.ndarray) -> np.ndarray:
    """Maj(x) = sign(sum_i x_i) for points of odd dimension (so there are no ties)."""
    x = np.asarray(x)
    if x.shape[-1] % 2 == 0:
        raise ValueError(f"majority needs an odd number of coordinates (no ties), got d = {x.shape[-1]}")
    return np.sign(x.sum(axis=-1)).astype(np.int64)


def majority_coefficient(d: int, r: int) -> Fraction:
    """zeta_r: the Fourier coefficient of Maj_d on any set of size r, in closed form (O'Donnell, Thm 5.19).

    zeta_r = 0 for even r; for odd r,
    ``zeta_r = (-1)^((r-1)/2) * C((d-1)/2, (r-1)/2) / C(d-1, r-1) * 2^(1-d) * C(d-1, (d-1)/2)``.
    """
    d = _check_d(d, 10**6)
    if d % 2 == 0:
        raise ValueError(f"Majority is defined here for odd d only, got d = {d}")
    if not isinstance(r, int | np.integer) or not 0 <= r <= d:
        raise ValueError(f"set size r must be an int in [0, d] = [0, {d}], got {r}")
    if r % 2 == 0:
        return Fraction(0)
    sign = -1 if ((r - 1) // 2) % 2 else 1
    return (
        sign
        * Fraction(comb((d - 1) // 2, (r - 1) // 2), comb(d - 1, r - 1))
        * Fraction(2 * comb(d - 1, (d - 1) // 2), 2**d)
    )


def majority_ratio(d: int, k: int) -> Fraction:
    """|zeta_{k+1} / zeta_{k-1}| = (k-1)/(d-k) for d odd, k even, 2 <= k <= d-1 (closed form of the ratio)."""
    if k % 2 or not 2 <= k <= d - 1:
        raise ValueError(f"the ratio needs even k with 2 <= k <= d-1, got k = {k}, d = {d}")
    return abs(majority_coefficient(d, k + 1) / majority_coefficient(d, k - 1))


def printed_majority_asymptotic(d: int, i: int) -> float:
    """The printed asymptotic form of |zeta_i|, i^(-1/3) / C(d, i) (Liu §4.2 notation; wrong, see docs)."""
    return i ** (-1 / 3) / comb(d, i)


def correlations(values: np.ndarray, d: int, sets: Iterable[Iterable[int]]) -> np.ndarray:
    """Exact E_x[f(x) chi_U(x)] over all 2^d inputs for each set U (one FWHT, then a lookup)."""
    coef = fourier_coefficients(np.asarray(values, dtype=np.float64), d)
    return np.array([coef[subset_mask(U, d)] for U in sets])
