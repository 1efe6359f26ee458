"""The strongly ferromagnetic clique model (Eq 4.6) of ``003_69b23422e33c905a.txt`` §4.1.3: assumptions, the
bounds of Props 4.1.4/4.1.5 and the exact count-chain reduction.

Count chain (a derived reduction): with equal fields h on the clique C and no coupling to the other vertices, the
number m of +1 clique spins is itself Markov under k-Gibbs and under the independent parallel sampler, and
$\\mathcal R_1=\\{m=|C|\\}$, $\\mathcal R_{-1}=\\{m=0\\}$. With $S=2m-|C|$ the clique energy is
$E(S)=hS+\\gamma J(S^2-|C|)/2$ ($\\gamma$ = 1 unordered, 2 ordered). Independent parallel:
$m'=\\mathrm{Bin}(m,\\sigma(2(h+\\gamma J(S-1))))+\\mathrm{Bin}(|C|-m,\\sigma(2(h+\\gamma J(S+1))))$. k-Gibbs on N spins:
$j=|K\\cap C|$ is hypergeometric, the resampled clique spins are a uniform j-subset, and the new number r of +1 among
them has law $\\propto\\binom jr e^{E(2(f+r)-|C|)}$ given the f fixed +1 spins.
"""

from __future__ import annotations

from math import comb, exp, log, tanh

import numpy as np
from scipy.special import expit, gammaln, xlog1py, xlogy

from theorylab.ising.model import gamma
from theorylab.markov import FiniteChain


def _binom_pmf(n: int, p: float) -> np.ndarray:
    """Bin(n, p) probabilities of 0..n, in log space (no overflow of the coefficients for large n)."""
    k = np.arange(n + 1)
    logc = gammaln(n + 1) - gammaln(k + 1) - gammaln(n - k + 1)
    return np.exp(logc + xlogy(k, p) + xlog1py(n - k, -p))


def _hypergeom(j: int, total: int, good: int, draws: int) -> float:
    """P(j good among ``draws`` drawn without replacement from ``total`` with ``good`` good ones)."""
    return comb(good, j) * comb(total - good, draws - j) / comb(total, draws)


class CliqueCountChain:
    """Count chains of the clique model with clique size ``size``, field ``h`` on each clique spin, coupling J."""

    def __init__(self, size: int, h: float, J: float, convention: str = "ordered") -> None:
        if not isinstance(size, (int, np.integer)) or isinstance(size, bool):
            raise TypeError("size must be an integer")
        if size < 2:
            raise ValueError(f"the clique needs >= 2 vertices, got {size}")
        if not (np.isfinite(h) and np.isfinite(J)):
            raise ValueError("h and J must be finite")
        self.c, self.h, self.J = int(size), float(h), float(J)
        self.gamma = gamma(convention)
        self.convention = convention

    def energy(self, S) -> np.ndarray:
        S = np.asarray(S, dtype=float)
        return self.h * S + self.gamma * self.J * (S**2 - self.c) / 2

    def stationary(self) -> np.ndarray:
        """Exact law of m under the model: $\\binom{|C|}m e^{E(2m-|C|)}$ normalised."""
        m = np.arange(self.c + 1)
        logw = np.log([comb(self.c, int(i)) for i in m]) + self.energy(2 * m - self.c)
        w = np.exp(logw - logw.max())
        return w / w.sum()

    def independent_parallel(self) -> FiniteChain:
        c = self.c
        P = np.zeros((c + 1, c + 1))
        for m in range(c + 1):
            S = 2 * m - c
            a = expit(2 * (self.h + self.gamma * self.J * (S - 1)))  # a + spin stays +
            b = expit(2 * (self.h + self.gamma * self.J * (S + 1)))  # a - spin turns +
            P[m] = np.convolve(_binom_pmf(m, a), _binom_pmf(c - m, b))
        return FiniteChain(P / P.sum(axis=1, keepdims=True))

    def k_gibbs(self, N: int, k: int) -> FiniteChain:
        """k-Gibbs on the N-spin model (clique plus N-|C| isolated spins)."""
        c = self.c
        if N < c:
            raise ValueError(f"N = {N} is smaller than the clique ({c})")
        if not 1 <= k <= N:
            raise ValueError(f"k must lie in 1..N = 1..{N}, got {k}")
        P = np.zeros((c + 1, c + 1))
        for m in range(c + 1):
            for j in range(max(0, k - (N - c)), min(c, k) + 1):
                pj = _hypergeom(j, N, c, k)
                for i in range(max(0, j - (c - m)), min(m, j) + 1):
                    pi = _hypergeom(i, c, m, j)
                    f = m - i
                    r = np.arange(j + 1)
                    logw = np.log([comb(j, int(t)) for t in r]) + self.energy(2 * (f + r) - c)
                    w = np.exp(logw - logw.max())
                    P[m, f + r] += pj * pi * w / w.sum()
        return FiniteChain(P / P.sum(axis=1, keepdims=True))

    def hitting_time(self, chain: FiniteChain, start: int = 0) -> float:
        """Expected hitting time of $\\mathcal R_1$ ($m=|C|$) from m = ``start`` (default all -1)."""
        return float(chain.hitting_times([self.c])[start])

    def stuck_set(self) -> np.ndarray:
        """States with clique sum <= -2 (Prop 4.1.5)."""
        return 2 * np.arange(self.c + 1) - self.c <= -2

    def stay_probability(self, chain: FiniteChain, T: int, start: int = 0) -> float:
        """P(clique sum <= -2 at every t = 0..T) from m = ``start``."""
        keep = self.stuck_set()
        if not keep[start]:
            return 0.0
        mu = np.zeros(self.c + 1)
        mu[start] = 1.0
        for _ in range(T):
            mu = (mu @ chain.P) * keep
        return float(mu.sum())


# ---------------------------------------------------------------------------------------------- assumptions
def assumption_4_1_5(h, J: float, C) -> float | None:
    """Strongly ferromagnetic (Assumption 4.1.5): $h_G>\\sum_{i\\notin C}|h_i|$ and $J_0:=J-\\|h\\|_1>0$.
    Returns $J_0$ if it holds, else None."""
    h = np.asarray(h, dtype=float)
    inC = np.zeros(h.size, dtype=bool)
    inC[list(C)] = True
    hG = h[inC].sum()
    J0 = J - np.abs(h).sum()
    return float(J0) if hG > np.abs(h[~inC]).sum() and J0 > 0 else None


def assumption_4_1_6(size: int, hG: float, J0: float, delta: float, M: int) -> bool:
    """$|C|\\ge8(1+\\ln\\frac{4M}\\delta)$, $h_G\\ge\\frac12\\ln\\frac{2(4-\\delta)}\\delta$, $J_0\\ge\\frac12|C|\\ln2$."""
    return (
        size >= 8 * (1 + log(4 * M / delta))
        and hG >= 0.5 * log(2 * (4 - delta) / delta)
        and J0 >= 0.5 * size * log(2)
    )


def assumption_4_1_7(N: int, size: int, k: int, delta: float) -> bool:
    """$k\\ge\\max\\{|C|,N-\\delta\\frac{N+1}{(4-\\delta)|C|+\\delta}\\}$."""
    return k >= max(size, N - delta * (N + 1) / ((4 - delta) * size + delta))


def prop_4_1_4_bound(N: int, size: int, k: int, J0: float, hG: float, constant: str = "corrected") -> float:
    """$1-c_{\\mathcal R_1}=\\binom{N-|C|}{k-|C|}/\\binom Nk\\cdot e^{2(J_0+h_G)}/(e^{2(J_0+h_G)}+D)$ with
    $D=e^{2J_0}+2^{|C|}-2$ (``corrected``, the proof's l.4459) or $D=e^{2J_0+2|C|-2}$ (``printed``, l.3692)."""
    if constant == "corrected":
        D = exp(2 * J0) + 2**size - 2
    elif constant == "printed":
        D = exp(2 * J0 + 2 * size - 2)
    else:
        raise ValueError("constant must be 'corrected' or 'printed'")
    ratio = comb(N - size, k - size) / comb(N, k) if k >= size else 0.0
    a = exp(2 * (J0 + hG))
    return ratio * a / (a + D)


def prop_4_1_5_bound(size: int, J0: float, delta: float) -> dict[str, float]:
    """Prop 4.1.5: $c_{\\rm stuck}=\\frac2{|C|}(-1+\\tanh(J_0)\\frac{|C|}2)^2$, $T=\\lfloor\\frac\\delta2e^{c_{\\rm stuck}}\\rfloor$;
    ``condition`` is the hidden precondition $r=-1+\\tanh(J_0)|C|/2>0$ of the Hoeffding step."""
    r = -1 + tanh(J0) * size / 2
    c = 2 / size * r**2
    return {"c_stuck": c, "T": float(int(delta / 2 * exp(c))), "r": r, "condition": float(r > 0)}


def cor_4_1_1_smallest_clique(delta: float, M: int) -> int:
    """Smallest |C| allowed by Assumption 4.1.6: $\\lceil8(1+\\ln(4M/\\delta))\\rceil$."""
    return int(np.ceil(8 * (1 + log(4 * M / delta))))
