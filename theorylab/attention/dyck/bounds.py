r"""Finite-length results for the Dyck Transformer: approximate balance (Thm 2, Cor 2), Lemma 24, Lemma 41,
and a finite analogue of "indistinguishability from a single component" (Thm 3 / Cor 3).

Thm 2 (Liu §3.6.2.1.2 = Li Thm 2.2.2), re-derived with the query made explicit. Fix a closing query
$\rho=(j,c)$, $1\le c\le D-1$, a pair type $i$ and $\ell_0\in0..D-1$, and the prefixes

$$p=\text{open}_i^{\ell_0}(\text{open}_i\text{close}_i)^{n}\text{close}_i^{\ell_0},\quad
p_x=p\oplus t_x\oplus\text{open}_j\text{close}_j,\quad n=\lfloor(N-2\ell_0-c-2)/2\rfloor,$$

with $t_1=\mathbf t$, $t_2=\mathbf t'$ the stacks of (3.35). Their pre-LN vectors are $A_p+Q(\rho,t_x)$ with
$A_p=\sum_{\ell\le\ell_0}S_{\rho,i,\ell}+nS_{\rho,i,\ell_0+1}$. If the model is $\epsilon$-good on both and
$g^{(2)}$ is $\gamma$-Lipschitz, the LN outputs differ by at least
$\epsilon'=(\sqrt2(1-q)-2\sqrt\epsilon)/\gamma$, so Lemma 24 gives $\|A_p\|\le R_{\epsilon'}P_\rho$ with
$R_{\epsilon'}=4/\epsilon'+1$, and telescoping over $\ell_0$ gives $\|S_{\rho,i,\ell}\|\le
16DR_{\epsilon'}P_\rho/N$ for $N>8D$.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass

import numpy as np

from theorylab.attention.dyck.balance import (
    DyckSolution,
    DyckWeights,
    _pair_columns,
    _query_columns,
    _u_table,
    close_index,
    closing_queries,
    construct_solution,
    open_index,
    pair_effects,
    random_balanced_attention,
    with_value_offsets,
)

__all__ = [
    "lemma24_radius",
    "lemma24_radius_printed",
    "lemma24_gap",
    "approx_balance_constant",
    "ApproxBalanceReport",
    "approx_balance_report",
    "weight_decay_threshold",
    "min_prefix_probability_bound",
    "layer_norm_c",
    "softmax_l1_bound",
    "lemma41_printed",
    "lemma41_corrected",
    "same_component_pair",
]


# -------------------------------------------------------------------------------------------- Lemma 24
def lemma24_radius(eps: float) -> float:
    r"""Scale-free $R_\epsilon=4/\epsilon+1$: $\|r\|\ge R_\epsilon\max(\|a\|,\|b\|)$ implies
    $\|\frac{a+r}{\|a+r\|}-\frac{b+r}{\|b+r\|}\|\le\epsilon$."""
    if not eps > 0:
        raise ValueError(f"eps must be > 0, got {eps}")
    return 4.0 / eps + 1.0


def lemma24_radius_printed(eps: float, r0: float) -> float:
    r"""The printed $R_\epsilon=4r_0/\epsilon+1$ (not scale-free; too small when $r_0<1$)."""
    return 4.0 * r0 / eps + 1.0


def lemma24_gap(a: np.ndarray, b: np.ndarray, r: np.ndarray) -> float:
    r"""$\|\frac{a+r}{\|a+r\|}-\frac{b+r}{\|b+r\|}\|$."""
    x, y = a + r, b + r
    return float(np.linalg.norm(x / np.linalg.norm(x) - y / np.linalg.norm(y)))


# ----------------------------------------------------------------------------------------------- Thm 2
def approx_balance_constant(depth: int, q: float, gamma: float, eps: float) -> float:
    r"""$C_{\gamma,\epsilon,D}=16DR_{\epsilon'}$ with $\epsilon'=(\sqrt2(1-q)-2\sqrt\epsilon)/\gamma$ (Thm 2).

    Raises ``ValueError`` when $\epsilon$ is not "sufficiently small" ($\epsilon'\le0$).
    """
    if depth < 1 or not 0 < q < 1 or not 0 < gamma < np.inf or not 0 <= eps < np.inf:
        raise ValueError(f"need depth >= 1, 0 < q < 1, gamma > 0, eps >= 0; got {depth}, {q}, {gamma}, {eps}")
    eps_prime = (math.sqrt(2) * (1 - q) - 2 * math.sqrt(eps)) / gamma
    if eps_prime <= 0:
        raise ValueError(f"eps = {eps} is too large: the two targets are only sqrt(2)(1-q) apart")
    return 16 * depth * lemma24_radius(eps_prime)


@dataclass(frozen=True)
class ApproxBalanceReport:
    r"""Thm 2 at one length: ``premise`` (the proof's prefix pairs are separated by $\ge\epsilon'$ after LN,
    which near-optimality with a $\gamma$-Lipschitz decoder forces) and ``worst_ratio`` $=\max\|S\|N/(CP)$
    (the bound holds iff it is $\le1$)."""

    length: int
    premise: bool
    min_separation: float
    eps_prime: float
    constant: float
    worst_ratio: float

    @property
    def holds(self) -> bool:
        """Thm 2's implication at this length: premise => bound."""
        return (not self.premise) or self.worst_ratio <= 1.0


def _stacks(w: DyckWeights, G, V, j: int, c: int):
    rho = close_index(j, c, w.depth)
    start = 2 * w.k * w.depth
    base = np.exp(G[start, rho]) * V[:, start]
    for idx in (open_index(j, c + 1, w.depth), rho):
        base = base + np.exp(G[idx, rho]) * V[:, idx]
    Q = {}
    for stack in itertools.product(range(w.k), repeat=c):
        cols = [open_index(t, l + 1, w.depth) for l, t in enumerate(stack)]
        Q[stack] = base + (np.exp(G[cols, rho])[None, :] * V[:, cols]).sum(axis=1)
    best = min(Q, key=lambda s: np.linalg.norm(Q[s]))
    second = min((s for s in Q if s[-1] != best[-1]), key=lambda s: np.linalg.norm(Q[s]))
    return Q[best], Q[second]


def approx_balance_report(
    w: DyckWeights, length: int, q: float = 0.5, gamma: float = 1.0, eps: float = 0.0, rate: int = 1
) -> ApproxBalanceReport:
    """Evaluate Thm 2 on weights ``w`` at sequence length ``length`` (see the module docstring).

    ``rate`` is the power of $N$ in the bound (1 in the theorem; a larger value gives a false, stronger bound,
    used as a negative control).
    """
    if w.k < 2:
        raise ValueError("Thm 2 needs k >= 2 (P is undefined for one bracket type)")
    if length <= 8 * w.depth:
        raise ValueError(f"Thm 2 needs N > 8D = {8 * w.depth}, got {length}")
    C = approx_balance_constant(w.depth, q, gamma, eps)
    eps_prime = (math.sqrt(2) * (1 - q) - 2 * math.sqrt(eps)) / gamma
    G, V = _u_table(w)
    S = pair_effects(w)  # [query, i, level, m]
    min_sep, worst = np.inf, 0.0
    for qi, (j, c) in enumerate(closing_queries(w.k, w.depth)):
        Qt, Qt2 = _stacks(w, G, V, j, c)
        P = float(np.linalg.norm(Qt2))
        for i in range(w.k):
            for l0 in range(w.depth):
                n = (length - 2 * l0 - c - 2) // 2
                Ap = S[qi, i, :l0].sum(axis=0) + n * S[qi, i, l0]
                x, y = Ap + Qt, Ap + Qt2
                nx, ny = np.linalg.norm(x), np.linalg.norm(y)
                sep = float(np.linalg.norm(x / nx - y / ny)) if nx > 0 and ny > 0 else 0.0
                min_sep = min(min_sep, sep)
            norms = np.linalg.norm(S[qi, i], axis=-1)
            worst = max(worst, float(norms.max() * length**rate / (C * P)))
    return ApproxBalanceReport(length, bool(min_sep >= eps_prime), float(min_sep), eps_prime, C, worst)


def weight_decay_threshold(k: int, q: float, length: int, eps: float, theta_norm: float) -> float:
    r"""Cor 2: $\lambda_N=2\epsilon\,(q(1-q)/k^2)^N/\|\theta^*\|^2$.

    For $\lambda\le\lambda_N$ the regularised minimiser has excess loss $\le\lambda\|\theta^*\|^2/2\le
    (q(1-q)/k^2)^N\epsilon$ (compare with the exact construction $\theta^*$), which is Thm 2's premise.
    """
    if k < 1 or not 0 < q < 1 or length < 1 or eps <= 0 or theta_norm <= 0:
        raise ValueError("need k >= 1, 0 < q < 1, length >= 1, eps > 0, theta_norm > 0")
    return 2.0 * eps * (q * (1 - q) / k**2) ** length / theta_norm**2


def min_prefix_probability_bound(k: int, q: float, length: int) -> float:
    """$(q(1-q)/k^2)^N$, the lower bound on the probability of any length-$N$ prefix used in Thm 2's proof."""
    if k < 1 or not 0 < q < 1 or length < 0:
        raise ValueError(f"need k >= 1, 0 < q < 1, length >= 0; got k={k}, q={q}, length={length}")
    return (q * (1 - q) / k**2) ** length


def layer_norm_c(x: np.ndarray, C: float) -> np.ndarray:
    r"""$\mathrm{LN}_C(x)=\mathcal P_\perp x/\max(\|\mathcal P_\perp x\|,C)$ (3.24), along the last axis."""
    if not C > 0:
        raise ValueError(f"C must be > 0, got {C}")
    x = np.asarray(x, dtype=np.float64)
    c = x - x.mean(axis=-1, keepdims=True)
    return c / np.maximum(np.linalg.norm(c, axis=-1, keepdims=True), C)


def softmax_l1_bound(eps: float) -> float:
    r"""Lemma 31: $\|x-y\|_\infty\le\epsilon\Rightarrow\|\mathrm{softmax}(x)-\mathrm{softmax}(y)\|_1\le e^{2\epsilon}-1$."""
    if not eps >= 0:
        raise ValueError(f"eps must be >= 0 (a sup-norm distance), got {eps}")
    return float(np.expm1(2 * eps))


# -------------------------------------------------------------------------------------------- Lemma 41
def _lemma41_input(x, M: float) -> np.ndarray:
    x = np.asarray(x, dtype=np.float64)
    if x.ndim != 1 or x.size == 0:
        raise ValueError(f"x must be a non-empty vector, got shape {x.shape}")
    if not np.all(np.isfinite(x)):
        raise ValueError("x contains NaN or inf")
    if not 0 < M < np.inf:
        raise ValueError(f"M (the margin of the nonzero entry) must be finite and > 0, got {M}")
    return x


def lemma41_printed(x: np.ndarray, M: float) -> float:
    r"""Lemma 41 as printed: $\sum_i i(\mathrm{ReLU}(x_i)-\mathrm{ReLU}(x_i-M)+M)/M$ (1-based $i$)."""
    x = _lemma41_input(x, M)
    i = np.arange(1, len(x) + 1)
    return float(np.sum(i * (np.maximum(x, 0) - np.maximum(x - M, 0) + M) / M))


def lemma41_corrected(x: np.ndarray, M: float) -> float:
    r"""Corrected Lemma 41: $\sum_i i(\mathrm{ReLU}(x_i)-\mathrm{ReLU}(x_i-M))/M$ returns the 1-based index of
    the unique entry $\ge M$ when all other entries are 0."""
    x = _lemma41_input(x, M)
    i = np.arange(1, len(x) + 1)
    return float(np.sum(i * (np.maximum(x, 0) - np.maximum(x - M, 0)) / M))


# ----------------------------------------------------------------------------- Thm 3 (finite analogue)
def same_component_pair(
    k: int, depth: int, component: str, rng: np.random.Generator, scale: float = 1.0
) -> tuple[DyckSolution, DyckSolution]:
    """Two models that one weight matrix cannot tell apart.

    ``component="W_V"``: identical embeddings and value matrix, different attention $M$ (different attention
    patterns), both exact generators - same function, different mechanism. ``component="M"``: identical
    embeddings and attention, different value matrices; the first is exact, the second (offsets shifted) is
    not.
    """
    if component == "W_V":
        M1 = random_balanced_attention(k, depth, rng, scale)
        M2 = random_balanced_attention(k, depth, rng, scale)
        shift = (
            construct_solution(k, depth, M1).offsets.ravel()
            - construct_solution(k, depth, M2).offsets.ravel()
        )
        opens, _ = _pair_columns(k, depth)
        for col in _query_columns(k, depth):  # same shift at every query: M2 stays balanced, offsets match M1
            M2[opens, col] += shift
        return construct_solution(k, depth, M1), construct_solution(k, depth, M2)
    if component == "M":
        exact = construct_solution(k, depth, random_balanced_attention(k, depth, rng, scale))
        offsets = exact.offsets.copy()
        offsets[0, 0] += 1.0
        return exact, with_value_offsets(exact, offsets)
    raise ValueError(f"component must be 'W_V' or 'M', got {component!r}")
