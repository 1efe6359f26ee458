"""Concentration steps and regularity constants of MPLE on Ising models (Li thesis §4.1.2-4.1.3, proofs §4.3.4 and
§4.3.10 of ``003_69b23422e33c905a.txt``).

- Hoeffding (Lemma 4.3.4): independent $Y_i\\in[a,b]$, $P(|S_n-\\mathbb E S_n|\\ge t)\\le2e^{-2t^2/(n(b-a)^2)}$.
- Lemma 4.3.5: $|\\hat L_{PL}(\\theta)-\\tilde L_{PL}(\\theta)|<2^N\\epsilon\\ln\\frac1\\beta+\\frac tn$ except with probability
  $\\frac{2^{N-2}|\\Omega|^N}{\\epsilon^2m}+2e^{-2t^2/(n\\ln^2(1/\\beta))}$; Corollary 4.3.2 (uniform over a cover of
  $C_\\epsilon(\\Theta)$ cells): deviation $(\\sqrt{2^{3N-1}|\\Omega|^NC_\\epsilon/(m\\delta)}+\\sqrt{\\ln(4C_\\epsilon/\\delta)/(2n)})
  \\ln\\frac1\\beta+\\epsilon$ w.p. $\\ge1-\\delta$.
- Exact mask-sampling tail: with two masks drawn with probabilities $(\\pi,1-\\pi)$ independently of X and all n data
  points equal, $\\hat L-\\tilde L=(\\hat\\pi-\\pi)(D_0-D_1)$ with $m n\\hat\\pi\\sim\\mathrm{Bin}(mn,\\pi)$.
- Assumptions 4.1.1, 4.1.3, 4.1.4 for the pairwise Ising family on a box $\\|\\theta\\|_\\infty\\le a$: the score of
  $\\log p_\\theta(x_K\\mid x_{-K})$ is $T(x)-\\mathbb E_\\theta[T\\mid x_{-K}]$, each entry in $(-2,2)$, nonzero only for the
  statistics that touch K; the log-conditional is concave in θ, so its minimum over the box (the margin β) is at a
  vertex; cubes of side $\\epsilon/(2\\,\\mathrm{Lip})$ with $\\mathrm{Lip}=2\\max_K\\#\\{\\text{statistics touching }K\\}$ (ℓ∞ to
  ℓ1) give the partition of Assumption 4.1.4, so $C_\\epsilon\\le\\lceil2a/\\mathrm{side}\\rceil^d$.
"""

from __future__ import annotations

import math
from itertools import combinations, product

import numpy as np

from theorylab.ising.model import IsingModel


def _positive(name: str, v) -> float:
    if isinstance(v, bool) or not isinstance(v, (int, float, np.integer, np.floating)):
        raise TypeError(f"{name} must be a real number, got {type(v).__name__}")
    if not (math.isfinite(v) and v > 0):
        raise ValueError(f"{name} must be positive and finite, got {v}")
    return float(v)


def _count(name: str, v) -> int:
    if isinstance(v, bool) or not isinstance(v, (int, np.integer)):
        raise TypeError(f"{name} must be an integer, got {type(v).__name__}")
    if v < 1:
        raise ValueError(f"{name} must be >= 1, got {v}")
    return int(v)


def _probability(name: str, v) -> float:
    v = _positive(name, v)
    if v >= 1:
        raise ValueError(f"{name} must lie in (0, 1), got {v}")
    return v


def hoeffding_failure(n: int, t: float, a: float, b: float) -> float:
    """Lemma 4.3.4's failure probability $2e^{-2t^2/(n(b-a)^2)}$ for $|S_n-\\mathbb E S_n|\\ge t$."""
    n, t = _count("n", n), _positive("t", t)
    if not (math.isfinite(a) and math.isfinite(b)) or b <= a:
        raise ValueError(f"the range [a, b] must have a < b, got a = {a}, b = {b}")
    return 2 * math.exp(-2 * t * t / (n * (b - a) ** 2))


def lemma_4_3_5(N: int, q: int, m: int, n: int, eps: float, t: float, beta: float) -> dict[str, float]:
    """Lemma 4.3.5 with sequences of length N over q symbols, m masks per sequence, n sequences: the failure
    probability and the deviation bound."""
    N, q, m, n = _count("N", N), _count("q", q), _count("m", m), _count("n", n)
    eps, t, beta = _positive("eps", eps), _positive("t", t), _probability("beta", beta)
    logb = math.log(1 / beta)
    return {
        "failure": 2 ** (N - 2) * q**N / (eps * eps * m) + 2 * math.exp(-2 * t * t / (n * logb * logb)),
        "deviation": 2**N * eps * logb + t / n,
    }


def cor_4_3_2_deviation(
    N: int, q: int, m: int, n: int, delta: float, cells: int, beta: float, eps: float
) -> float:
    """Corollary 4.3.2's uniform deviation bound (w.p. >= 1 - delta over a cover of ``cells`` = C_eps cells)."""
    N, q, m, n, cells = _count("N", N), _count("q", q), _count("m", m), _count("n", n), _count("cells", cells)
    delta, beta = _probability("delta", delta), _probability("beta", beta)
    eps = _positive("eps", eps)
    first = math.sqrt(2 ** (3 * N - 1) * q**N * cells / (m * delta))
    second = math.sqrt(math.log(4 * cells / delta) / (2 * n))
    return (first + second) * math.log(1 / beta) + eps


def two_mask_deviation_tail(pi: float, draws: int, spread: float, threshold: float) -> float:
    """Exactly $P(|\\hat\\pi-\\pi|\\cdot\\mathrm{spread}\\ge\\mathrm{threshold})$ for $\\mathrm{draws}\\cdot\\hat\\pi\\sim
    \\mathrm{Bin}(\\mathrm{draws},\\pi)$: the law of $|\\hat L-\\tilde L|$ (sup over a class: spread = $\\max|D_0-D_1|$)
    when two masks are drawn w.p. $(\\pi,1-\\pi)$ and every data point is the same state."""
    from scipy.stats import binom  # here, not at module level: scipy.stats takes ~1 s to import

    pi = _probability("pi", pi)
    draws = _count("draws", draws)
    spread, threshold = _positive("spread", spread), _positive("threshold", threshold)
    r = threshold / spread * draws  # |count - draws pi| >= r
    hi = math.ceil(draws * pi + r - 1e-9 * max(1.0, r))
    lo = math.floor(draws * pi - r + 1e-9 * max(1.0, r))
    return float(binom.sf(hi - 1, draws, pi) + (binom.cdf(lo, draws, pi) if lo >= 0 else 0.0))


# ------------------------------------------------------------------------------------------ Assumptions 4.1.1-4.1.4
def _box_check(N: int, a: float) -> tuple[int, float]:
    return _count("N", N), _positive("a (the box half-width)", a)


def touching_statistics(N: int, K) -> int:
    """Number of pairwise-Ising statistics $x_i$, $x_ix_j$ that involve a coordinate of K (the nonzero score entries)."""
    K = set(K)
    return len(K) + sum(1 for i, j in combinations(range(N), 2) if i in K or j in K)


def log_conditionals(theta, N: int, K) -> np.ndarray:
    """$\\log p_\\theta(x_K\\mid x_{-K})$ for every state (product order) of the full pairwise Ising model."""
    model = IsingModel.from_natural(np.asarray(theta, dtype=float), N)
    lp = model.log_probs()
    keep = [i for i in range(N) if i not in set(K)]
    X = model.states()
    key = ((X[:, keep] + 1) // 2) @ (1 << np.arange(len(keep))) if keep else np.zeros(len(X), dtype=np.int64)
    mass = np.zeros(int(key.max()) + 1)
    np.add.at(mass, key, np.exp(lp))
    return lp - np.log(mass[key])


def support_margin_box(N: int, a: float, masks) -> float:
    """Assumption 4.1.3's β for the box $\\|\\theta\\|_\\infty\\le a$ of the pairwise family: the log-conditional is
    concave in θ, so its minimum is at one of the $2^d$ vertices (enumerated)."""
    N, a = _box_check(N, a)
    d = N + N * (N - 1) // 2
    if d > 16:
        raise ValueError(f"the box has 2^{d} vertices: enumerate at most 2^16 (N <= 5)")
    out = 1.0
    for signs in product((-a, a), repeat=d):
        for K in masks:
            out = min(out, float(np.exp(log_conditionals(np.array(signs), N, K).min())))
    return out


def lipschitz_constant(N: int, masks) -> float:
    """Sup over θ, x and K of the ℓ1 norm of the score (each nonzero entry below 2): the ℓ∞-to-|Δ log p| constant."""
    N = _count("N", N)
    return 2.0 * max(touching_statistics(N, K) for K in masks)


def covering_cells(N: int, a: float, eps: float, masks) -> tuple[float, int]:
    """Assumption 4.1.4 on the box: (cube side, number of cubes) with side $\\epsilon/(2\\,\\mathrm{Lip})$, so that
    $|\\log p_{\\theta_1}-\\log p_{\\theta_2}|\\le\\mathrm{Lip}\\cdot\\mathrm{side}=\\epsilon/2$ inside a cube."""
    N, a = _box_check(N, a)
    eps = _positive("eps", eps)
    side = eps / (2 * lipschitz_constant(N, masks))
    d = N + N * (N - 1) // 2
    return side, math.ceil(2 * a / side) ** d
