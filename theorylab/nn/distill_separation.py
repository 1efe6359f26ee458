"""The first distillation step behind Theorems 22-23 of Liu §4.2 (``001_6a230b9a9faf2198.txt``): how well one
population gradient step of a symmetric-init student separates the support S of a (d, k)-sparse parity, when the
teacher is the final one (``f_T = chi_S``, one-shot distillation) or an intermediate checkpoint with a degree-1
component on S (``f_T = chi_S + c sum_{l in S} x_l``, Corollary 3's hypothesis, progressive distillation).

The student ``f_S = sum_i a_i relu(<w_i, x> + b_i)`` starts at ``f_S = 0`` (mirrored pairs), so the hinge loss
``max(0, 1 - f_S f_T)`` is active everywhere and the first-layer gradient is
``g_ij = -a_i E[f_T(x) 1[<w_i, x> + b_i >= 0] x_j]``. For odd d and ``|b_i| < 1``,
``1[<w_i, x> + b_i >= 0] = (1 + Maj(w_i . x))/2`` and Majority has no even-degree mass (``zeta_r = 0``, r even), so
with ``|a_i| = 1/m`` and even k:

* one-shot: ``m |g_ij| = |zeta_{k-1}|/2`` on S and ``|zeta_{k+1}|/2`` off S;
* progressive: ``m |g_ij| = |c + zeta_{k-1} chi_{S \\ j}(w_i)|/2`` on S and ``|zeta_{k+1}|/2`` off S.

The separation margin ``gap = m (min_{j in S} |g_ij| - max_{j not in S} |g_ij|)`` is then
``(|zeta_{k-1}| - |zeta_{k+1}|)/2 = Theta(d^{-(k-1)/2})`` (one-shot) and ``(c - |zeta_{k-1}| - |zeta_{k+1}|)/2``
(progressive, when some neuron has each sign), and a batch of ``B = ceil(8 r^2 ln(2 m d/delta)/gap^2)`` samples
(``r = max |f_T|``, Hoeffding plus a union bound over the md entries as in Claim 8) resolves every entry to within
``gap/(2m)``: ``Theta(d^{k-1} log)`` samples one-shot against ``O(c^{-2} log)`` progressive.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from fractions import Fraction

import numpy as np

from theorylab.boolean.fourier import hypercube, majority_coefficient
from theorylab.nn.distill import TwoLayerReLU

__all__ = [
    "teacher_values",
    "distillation_first_layer_gradient",
    "separation_gap",
    "gap_closed_form",
    "claim8_batch",
]


def _support(d: int, S: Sequence[int]) -> tuple[int, ...]:
    S = tuple(int(s) for s in S)
    if not S or len(set(S)) != len(S) or any(not 0 <= s < d for s in S):
        raise ValueError(f"S must be distinct coordinates in 0..{d - 1}, got {S}")
    return S


def teacher_values(
    d: int, S: Sequence[int], c: float = 0.0, degree_one_on: Sequence[int] | None = None
) -> np.ndarray:
    """``f_T = chi_S + c sum_{l in L} x_l`` on every point of ``hypercube(d)`` (``L = S`` unless
    ``degree_one_on`` is given; ``c = 0`` is the final teacher of one-shot distillation)."""
    S = _support(d, S)
    L = S if degree_one_on is None else _support(d, degree_one_on)
    x = hypercube(d).astype(np.float64)
    return np.prod(x[:, list(S)], axis=1) + float(c) * x[:, list(L)].sum(axis=1)


def distillation_first_layer_gradient(
    student: TwoLayerReLU, f_teacher: np.ndarray, chunk: int = 512
) -> np.ndarray:
    """``g_ij = -a_i E[f_T(x) 1[<w_i, x> + b_i >= 0] x_j]`` over the cube (``f_T`` given on ``hypercube(d)``),
    the population gradient of ``max(0, 1 - f_S f_T)`` at a student with ``f_S = 0``."""
    m, d = student.W.shape
    f = np.asarray(f_teacher, dtype=np.float64)
    if f.shape != (2**d,):
        raise ValueError(
            f"f_teacher must give one value per point of the cube, shape ({2**d},), got {f.shape}"
        )
    x = hypercube(d).astype(np.float64)
    fx = (f[:, None] * x).T  # [d, 2^d]
    out = np.empty_like(student.W)
    for s in range(0, m, chunk):
        ind = (x @ student.W[s : s + chunk].T + student.b[s : s + chunk] >= 0).astype(np.float64)
        out[s : s + chunk] = -(fx @ ind).T * student.a[s : s + chunk, None] / 2**d
    return out


def separation_gap(g: np.ndarray, S: Sequence[int]) -> float:
    """``m (min_{i, j in S} |g_ij| - max_{i, j not in S} |g_ij|)``: the margin by which thresholding ``|g_ij|``
    picks out S for every neuron (negative: no threshold works)."""
    m, d = g.shape
    S = _support(d, S)
    off = [j for j in range(d) if j not in S]
    if not off:
        raise ValueError("S covers every coordinate: nothing to separate")
    a = np.abs(g)
    return float(m * (a[:, list(S)].min() - a[:, off].max()))


def gap_closed_form(d: int, k: int, c: Fraction | int = 0) -> Fraction:
    """``(|zeta_{k-1}| - |zeta_{k+1}|)/2`` for ``c = 0`` (one-shot) and ``(c - |zeta_{k-1}| - |zeta_{k+1}|)/2``
    for ``c > |zeta_{k-1}|`` (progressive, both signs of ``chi_{S \\ j}(w_i)`` present); d odd, k even."""
    if d % 2 == 0 or k % 2 or not 2 <= k <= d - 1:
        raise ValueError(f"need odd d and even k with 2 <= k <= d - 1, got d = {d}, k = {k}")
    z1, z2 = abs(majority_coefficient(d, k - 1)), abs(majority_coefficient(d, k + 1))
    c = Fraction(c)
    if c == 0:
        return (z1 - z2) / 2
    if c <= z1:
        raise ValueError(f"the progressive closed form needs c > |zeta_(k-1)| = {float(z1):.3g}, got c = {c}")
    return (c - z1 - z2) / 2


def claim8_batch(gap: float, m: int, d: int, delta: float, value_range: float = 1.0) -> int:
    """``ceil(8 r^2 ln(2 m d/delta)/gap^2)``: with it, Hoeffding (per-sample entries in ``[-r/m, r/m]``) and a
    union bound over the md entries keep every entry within ``gap/(2m)`` of its population value w.p.
    ``>= 1 - delta``."""
    if not gap > 0:
        raise ValueError(f"the separation gap must be > 0, got {gap}")
    if not 0 < delta < 1:
        raise ValueError(f"delta must lie in (0, 1), got {delta}")
    return math.ceil(8 * value_range**2 * math.log(2 * m * d / delta) / gap**2)
