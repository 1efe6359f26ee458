r"""The lower-bound and hardness constructions of Li §3.1 (`003_69b23422e33c905a.txt`) and two instances that refute
natural conjectures.

* Thm 3.1.1 (parity secret): with $M=2^{D-1}$ candidate secrets under a uniform prior, the optimal always-correct
  algorithm queries distinct length-$(D-1)$ prefixes and stops by elimination after $M-1$ negatives, so the exact
  minimax expected number of oracle calls is $(M-1)(M+2)/(2M)\approx2^{D-2}$, not the printed $2^{D-1}$ (derived;
  by Yao's principle it is also the randomized minimax, attained by a uniformly random query order).
* Thm 3.1.2 (knapsack): $A=\{s:\sum_is_iX_i=c\}$ with a full-support oracle; generation solves subset sum.
* Prop 3.1.2: $A=\{s:\exists i,s_i=0\}$, uniform oracle; TRS puts $2^{-(D-1)}$ on $1^{D-1}0$, so
  $\mathrm{TV}(q,p_A)=2^{-(D-1)}-1/(2^D-1)$ (derived).
* The argmax trap (derived): Algorithm 1 re-generates erased positions greedily, so it can keep re-creating the
  error it erased.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from fractions import Fraction
from functools import cache

import numpy as np

from theorylab.generation.oracles import TabularOracle, UniformOracle
from theorylab.generation.verifiers import _check_D

__all__ = [
    "parity_language",
    "parity_minimax_queries",
    "parity_printed_bound",
    "parity_optimal_cost",
    "parity_order_cost",
    "subset_sum_language",
    "subset_sum_solve",
    "subset_sum_generate",
    "prop312_instance",
    "prop312_tv",
    "argmax_trap",
]

Prefix = tuple[int, ...]


# ----------------------------------------------------------------------------------------------- Thm 3.1.1


def parity_language(D: int) -> frozenset[Prefix]:
    """$A=\\{s\\in\\{0,1\\}^D:\\sum_is_i\\equiv0\\}$."""
    D = _check_D(D)
    return frozenset(s for s in itertools.product((0, 1), repeat=D) if sum(s) % 2 == 0)


def parity_minimax_queries(D: int) -> Fraction:
    """$(M-1)(M+2)/(2M)$ with $M=2^{D-1}$ (derived exact minimax, Las-Vegas algorithms)."""
    M = 2 ** (_check_D(D) - 1)
    return Fraction((M - 1) * (M + 2), 2 * M)


def parity_printed_bound(D: int) -> int:
    """The printed lower bound $2^{D-1}$ of Thm 3.1.1."""
    return 2 ** (_check_D(D) - 1)


def parity_optimal_cost(D: int) -> Fraction:
    """Exhaustive Bellman recursion over every deterministic adaptive strategy, uniform prior on the secret.

    A query of length $<D-1$ returns a fair coin whatever the secret (no information, cost 1); a length-$(D-1)$
    query $s$ reveals only whether $s=\\hat s$. The state is the set $S$ of secrets still possible (uniform
    posterior); the algorithm may output only when the valid output is determined ($|S|=1$), else it would output
    an invalid string for some secret. $f(S)=\\min_{q}[1+\\frac{|S|-1}{|S|}f(S\\setminus q)]$ over $q\\in S$
    (uninformative queries only add cost)."""
    D = _check_D(D)
    M = 2 ** (D - 1)
    if D > 5:
        raise ValueError(f"exhaustive strategy search is limited to D <= 5 (2^(2^(D-1)) states), got D={D}")

    @cache
    def f(mask: int) -> Fraction:
        n = mask.bit_count()
        if n == 1:
            return Fraction(0)
        best = None
        for q in range(M):
            if mask >> q & 1:
                cost = 1 + Fraction(n - 1, n) * f(mask & ~(1 << q))
                best = cost if best is None or cost < best else best
        return best

    if D == 1:
        return Fraction(0)
    return f((1 << M) - 1)


def parity_order_cost(order: Sequence[Sequence[int]], secret: Sequence[int]) -> int:
    """Oracle calls of the query-in-order algorithm: query the candidates of ``order`` (all $2^{D-1}$ secrets)
    until one is confirmed, or stop after $M-1$ negatives (elimination). Raises if ``order`` is not a permutation."""
    cand = [tuple(int(b) for b in s) for s in order]
    secret = tuple(int(b) for b in secret)
    M = 2 ** len(secret)
    if len(set(cand)) != M or any(len(s) != len(secret) for s in cand):
        raise ValueError(f"order must list each of the {M} candidate secrets once")
    return min(cand.index(secret) + 1, M - 1)


# ----------------------------------------------------------------------------------------------- Thm 3.1.2


def _check_knapsack(weights: Sequence[int], c: int) -> tuple[tuple[int, ...], int]:
    w = tuple(int(x) for x in weights)
    if not w:
        raise ValueError("weights must be non-empty")
    if any(x < 0 for x in w) or int(c) < 0:
        raise ValueError("knapsack weights and target must be non-negative integers")
    return w, int(c)


def subset_sum_language(weights: Sequence[int], c: int) -> frozenset[Prefix]:
    """$A=\\{s\\in\\{0,1\\}^D:\\sum_is_iX_i=c\\}$ by brute force over $2^D$ strings."""
    w, c = _check_knapsack(weights, c)
    return frozenset(
        s
        for s in itertools.product((0, 1), repeat=len(w))
        if sum(x for x, b in zip(w, s, strict=True) if b) == c
    )


def subset_sum_solve(weights: Sequence[int], c: int) -> Prefix | None:
    """A lexicographically smallest solution via the DP verifier, or None (infeasible)."""
    from theorylab.generation.verifiers import SubsetSumVerifier  # noqa: PLC0415

    V = SubsetSumVerifier(weights, c)
    if not V.peek(()):
        return None
    s: Prefix = ()
    for _ in range(V.D):
        s = s + ((0,) if V.peek(s + (0,)) else (1,))
    return s


def subset_sum_generate(weights: Sequence[int], c: int, rng: np.random.Generator):
    """TRS on the uniform oracle with the exact DP process verifier: an element of $A$, or None (FAIL) iff the
    instance is infeasible. Returns ``(output, Generation)``."""
    from theorylab.generation.algorithms import tokenwise_rejection_sampling  # noqa: PLC0415
    from theorylab.generation.verifiers import SubsetSumVerifier  # noqa: PLC0415

    V = SubsetSumVerifier(weights, c)
    if not V(()):
        return None, None
    run = tokenwise_rejection_sampling(UniformOracle(2), V.D, V, rng)
    return run.tokens, run


# ----------------------------------------------------------------------------------------------- Prop 3.1.2


def prop312_instance(D: int) -> tuple[UniformOracle, frozenset[Prefix]]:
    """Uniform oracle on $\\{0,1\\}$ and $A=\\{s\\in\\{0,1\\}^D:\\exists i,s_i=0\\}$."""
    D = _check_D(D)
    return UniformOracle(2), frozenset(s for s in itertools.product((0, 1), repeat=D) if 0 in s)


def prop312_tv(D: int) -> Fraction:
    """$2^{-(D-1)}-1/(2^D-1)$ (derived closed form of TV(TRS law, $p_A$))."""
    D = _check_D(D)
    return Fraction(1, 2 ** (D - 1)) - Fraction(1, 2**D - 1)


# ----------------------------------------------------------------------------------------------- argmax trap


def argmax_trap(D: int = 4, trap: Sequence[Fraction] = (Fraction(1, 5), Fraction(1, 5), Fraction(3, 5))):
    """$\\Sigma=\\{0,1,2\\}$, $A$ = strings of length $D$ without token 2; the oracle puts ``trap`` on $(0,1,2)$ at
    position 2 (prefix length 1; argmax = the invalid token 2) and is uniform on $\\{0,1\\}$ elsewhere.
    Returns ``(oracle, A)``."""
    D = _check_D(D)
    if D < 2:
        raise ValueError("the argmax trap needs D >= 2")
    trap = tuple(Fraction(p) for p in trap)
    half = (Fraction(1, 2), Fraction(1, 2), Fraction(0))

    def law(prefix: Prefix):
        return trap if len(prefix) == 1 else half

    A = frozenset(s for s in itertools.product((0, 1), repeat=D))
    return TabularOracle(3, law), A
