"""Rademacher complexities (Liu Eqs 2.8-2.9, Assumption 4) and the beta-mixing generalisation bound of Mohri and
Rostamizadeh (Liu Lemma 2, Eq 2.17), computed exactly on small instances.

* $\\hat{\\mathfrak R}_S(\\mathcal H)=\\frac1m\\mathbb E_\\varepsilon\\sup_h|\\sum_i\\varepsilon_ih(x_i)|$ (2.8), by enumerating the
  $2^m$ sign vectors (:func:`empirical_rademacher`); closed forms for thresholds on $m$ distinct points
  ($\\frac1m\\mathbb E\\max_{0\\le k\\le m}|S_k|$ for a simple random walk $S$, :func:`threshold_rademacher`) and for all
  $\\{0,1\\}$-valued functions ($\\frac1m\\mathbb E\\max(P,m-P)$, $P\\sim\\mathrm{Bin}(m,\\frac12)$,
  :func:`all_functions_rademacher`).
* Lemma 2 on a two-state chain with the class $\\{\\mathbb 1[x=0],\\mathbb 1[x=1]\\}$ (losses in [0, 1]): the gap is
  $\\Phi=|f_0-\\pi_0|$ with $f_0$ the frequency of state 0 among $m$ stationary observations, whose law is exact by
  dynamic programming (:func:`frequency_law`); :func:`lemma2_bound` is the right side of (2.17).
"""

from __future__ import annotations

import itertools
import math
from fractions import Fraction
from functools import lru_cache

import numpy as np

__all__ = [
    "empirical_rademacher",
    "threshold_rademacher",
    "all_functions_rademacher",
    "indicator_rademacher",
    "two_state_chain",
    "frequency_law",
    "lemma2_bound",
    "gap_tail",
]


def _int(v, what: str, lo: int) -> int:
    if isinstance(v, bool) or not isinstance(v, (int, np.integer)):
        raise TypeError(f"{what} must be an int, got {type(v).__name__}")
    if v < lo:
        raise ValueError(f"{what} must be >= {lo}, got {v}")
    return int(v)


def empirical_rademacher(values) -> Fraction:
    """(2.8) for a finite class given by its values ``values[h, i]`` $=h(x_i)$ (integers or Fractions: exact),
    enumerating all $2^m$ sign vectors ($m\\le20$)."""
    V = np.asarray(values, dtype=object)
    if V.ndim != 2 or V.shape[0] == 0 or V.shape[1] == 0:
        raise ValueError(f"values must be a non-empty [n_functions, m] array, got shape {V.shape}")
    m = V.shape[1]
    if m > 20:
        raise ValueError(f"exhaustive enumeration needs m <= 20 points, got {m}")
    total = Fraction(0)
    for eps in itertools.product((1, -1), repeat=m):
        total += max(abs(sum(Fraction(v) * e for v, e in zip(row, eps, strict=True))) for row in V)
    return total / (2**m * m)


def threshold_rademacher(m: int) -> Fraction:
    """(2.8) for thresholds $x\\mapsto\\mathbb 1[x\\ge\\theta]$ on $m$ distinct points: $\\frac1m\\mathbb
    E\\max_{0\\le k\\le m}|S_k|$, exact by dynamic programming over (walk, running max, running min)."""
    m = _int(m, "m", 1)
    # state: (S, max S, min S) with max >= S >= min, offset by m; probability as exact integer counts
    size = 2 * m + 1
    counts = {(m, m, m): 1}
    for _ in range(m):
        nxt: dict = {}
        for (s, hi, lo), c in counts.items():
            for step in (1, -1):
                s2 = s + step
                key = (s2, max(hi, s2), min(lo, s2))
                nxt[key] = nxt.get(key, 0) + c
        counts = nxt
    assert all(0 <= k[2] <= k[0] <= k[1] < size for k in counts)
    total = sum(c * max(hi - m, m - lo) for (_, hi, lo), c in counts.items())
    return Fraction(total, 2**m * m)


def all_functions_rademacher(m: int) -> Fraction:
    """(2.8) for all $\\{0,1\\}$-valued functions on $m$ distinct points: $\\frac1m\\mathbb E\\max(P,m-P)\\ge\\frac12$."""
    m = _int(m, "m", 1)
    return Fraction(sum(math.comb(m, p) * max(p, m - p) for p in range(m + 1)), 2**m * m)


@lru_cache(maxsize=32)
def indicator_rademacher(pi0: float, mu: int) -> float:
    """(2.9) for $\\{\\mathbb 1[x=0],\\mathbb 1[x=1]\\}$ over $\\mu$ i.i.d. draws with $P(x=0)=\\pi_0$: with $c$ zeros,
    $\\frac1\\mu\\mathbb E\\max(|S_c|,|S'_{\\mu-c}|)$ for independent sign sums, via
    $\\mathbb E\\max(A,B)=\\sum_{j\\ge1}(1-P(A<j)P(B<j))$ (floats)."""
    mu = _int(mu, "mu", 1)
    pi0 = float(pi0)
    if not 0 <= pi0 <= 1:
        raise ValueError(f"pi0 must be a probability, got {pi0}")
    cdf = np.zeros((mu + 1, mu + 2))  # cdf[n, j] = P(|S_n| < j)
    walk = np.zeros(2 * mu + 3)  # law of S_n on -mu-1 .. mu+1 (padded)
    walk[mu + 1] = 1.0
    for n in range(mu + 1):
        absolute = walk[mu + 1 : 2 * mu + 2].copy()
        absolute[1:] += walk[mu:0:-1]
        cdf[n, 1:] = np.cumsum(absolute)
        walk[1:-1] = (walk[:-2] + walk[2:]) / 2
    c = np.arange(mu + 1)
    e_max = (1 - cdf[c, 1:] * cdf[mu - c, 1:]).sum(axis=1)
    return float(_binom_pmf(mu, pi0) @ e_max / mu)


def _binom_pmf(n: int, p: float) -> np.ndarray:
    from scipy.special import gammaln, xlog1py, xlogy

    k = np.arange(n + 1)
    return np.exp(gammaln(n + 1) - gammaln(k + 1) - gammaln(n - k + 1) + xlogy(k, p) + xlog1py(n - k, -p))


def two_state_chain(a: Fraction, b: Fraction) -> tuple[np.ndarray, np.ndarray]:
    """$P=\\begin{pmatrix}1-a&a\\\\b&1-b\\end{pmatrix}$ and its stationary law $(b,a)/(a+b)$; its beta-mixing
    coefficient is $\\beta(k)=2\\pi_0\\pi_1|1-a-b|^k$."""
    a, b = Fraction(a), Fraction(b)
    if not (0 < a <= 1 and 0 < b <= 1):
        raise ValueError(f"a and b must lie in (0, 1], got a = {a}, b = {b}")
    P = np.array([[1 - a, a], [b, 1 - b]], dtype=object)
    return P, np.array([b / (a + b), a / (a + b)], dtype=object)


def frequency_law(P, pi, m: int) -> np.ndarray:
    """Law of the number of visits to state 0 among $m$ observations of the two-state chain ``P`` started at
    ``pi`` (floats; ``out[c]`` = P(c visits))."""
    m = _int(m, "m", 1)
    P = np.asarray(P, dtype=float)
    pi = np.asarray(pi, dtype=float)
    if P.shape != (2, 2) or pi.shape != (2,):
        raise ValueError("frequency_law is for a two-state chain: P of shape (2, 2), pi of shape (2,)")
    f = np.zeros((2, m + 1))  # f[s, c]: last state s, c visits to 0 so far
    f[0, 1], f[1, 0] = pi[0], pi[1]
    for _ in range(m - 1):
        g = np.zeros_like(f)
        g[0, 1:] = f[0, :-1] * P[0, 0] + f[1, :-1] * P[1, 0]
        g[1] = f[0] * P[0, 1] + f[1] * P[1, 1]
        f = g
    return f.sum(axis=0)


def lemma2_bound(rademacher: float, mu: int, delta: float, beta_block: float) -> float:
    """Right side of (2.17): $\\mathfrak R_\\mu+\\sqrt{\\log(2/(\\delta-\\Delta))/(2\\mu)}$ with
    $\\Delta=2(\\mu-1)\\beta(T/2\\mu)$; ``ValueError`` unless $\\delta>\\Delta$ (the lemma's condition)."""
    mu = _int(mu, "mu", 1)
    if not 0 < delta < 1:
        raise ValueError(f"delta must lie in (0, 1), got {delta}")
    appr = 2 * (mu - 1) * float(beta_block)
    if not delta > appr:
        raise ValueError(f"Lemma 2 needs delta > 2 (mu - 1) beta(T/2mu) = {appr:.4g}, got delta = {delta}")
    return float(rademacher) + math.sqrt(math.log(2 / (delta - appr)) / (2 * mu))


def gap_tail(law: np.ndarray, pi0: float, bound: float) -> float:
    """$P(\\Phi>\\text{bound})$ for $\\Phi=|c/m-\\pi_0|$ with ``law[c]`` the law of the count $c$."""
    law = np.asarray(law, dtype=float)
    m = len(law) - 1
    c = np.arange(m + 1)
    return float(law[np.abs(c / m - float(pi0)) > bound].sum())
