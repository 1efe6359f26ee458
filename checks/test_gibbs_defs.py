"""Claim checks of the definitions and assumptions of Li thesis §4.1.4 (``003_69b23422e33c905a.txt``): the Ising model
(Def 4.1.12, Eq 4.6), the k-Gibbs sampler (Def 4.1.10, Eq 4.3), the independent parallel sampler (Def 4.1.11,
Eq 4.4), and Assumptions 4.1.5-4.1.7 of the clique model. The library objects are compared with from-scratch
brute force of the printed formulas (explicit loops over states, subsets and edges) on small instances."""

from __future__ import annotations

from fractions import Fraction
from itertools import combinations, product
from math import ceil, comb, exp, log

import numpy as np
import pytest

from theorylab.ising import (
    CliqueCountChain,
    IsingModel,
    assumption_4_1_5,
    assumption_4_1_6,
    assumption_4_1_7,
    clique_model,
    independent_parallel,
    k_gibbs,
)
from theorylab.strategies.ising import random_ising
from theorylab.testing import rejects

# Transition matrices of <= 2^4 states built from exp and normalisations: round-off ~1e-15 per entry; 1e-12 leaves
# room and is far below the differences of the misreadings (>= 1e-2 on these instances).
TOL = 1e-12


def brute_states(N: int) -> list[tuple[int, ...]]:
    """Product order of the document's library convention: -1 before +1, x_0 slowest."""
    return list(product((-1, 1), repeat=N))


def brute_ising(h, J, edges, ordered: bool = False, spins=(-1, 1)) -> np.ndarray:
    """Eq (4.5) (``ordered=False``: sum over unordered edges {i,j}) or Eq (4.6) (``ordered=True``: sum over i != j),
    by explicit loops; ``spins`` = (0, 1) is the 0/1 misreading."""
    N = len(h)
    w = []
    for x in product(spins, repeat=N):
        e = sum(h[i] * x[i] for i in range(N))
        for i, j in edges:
            e += (2 if ordered else 1) * J[i][j] * x[i] * x[j]
        w.append(exp(e))
    w = np.array(w)
    return w / w.sum()


def brute_conditional(p: np.ndarray, N: int, K, x, y) -> float:
    """p(y_K | x_{-K}) from the joint by summing over the states agreeing with x off K."""
    states = brute_states(N)
    rest = [i for i in range(N) if i not in K]
    den = sum(p[s] for s, z in enumerate(states) if all(z[i] == x[i] for i in rest))
    num = sum(
        p[s] for s, z in enumerate(states) if all(z[i] == x[i] for i in rest) and all(z[i] == y[i] for i in K)
    )
    return num / den


def brute_k_gibbs(p: np.ndarray, N: int, k: int) -> np.ndarray:
    """Eq (4.3): K uniform over the k-subsets, X_K ~ p(. | X_{-K}), X_{-K} kept."""
    states = brute_states(N)
    S = len(states)
    P = np.zeros((S, S))
    subsets = list(combinations(range(N), k))
    for a, x in enumerate(states):
        for b, y in enumerate(states):
            for K in subsets:
                if all(x[i] == y[i] for i in range(N) if i not in K):
                    P[a, b] += brute_conditional(p, N, K, x, y) / len(subsets)
    return P


def brute_independent(p: np.ndarray, N: int) -> np.ndarray:
    """Eq (4.4): every coordinate i drawn from p(. | x_{-i}) at once, independently."""
    states = brute_states(N)
    S = len(states)
    P = np.ones((S, S))
    for a, x in enumerate(states):
        for b, y in enumerate(states):
            for i in range(N):
                P[a, b] *= brute_conditional(p, N, (i,), x, y)
    return P


def brute_systematic_scan(p: np.ndarray, N: int) -> np.ndarray:
    """The misreading of Eq (4.4) as one sweep of sequential Gibbs (coordinate i sees the updated y_{<i})."""
    states = brute_states(N)
    S = len(states)
    P = np.ones((S, S))
    for a, x in enumerate(states):
        for b, y in enumerate(states):
            for i in range(N):
                z = tuple(y[:i]) + tuple(x[i:])
                P[a, b] *= brute_conditional(p, N, (i,), z, y)
    return P


def random_instance(seed: int, N: int) -> tuple[np.ndarray, np.ndarray, list[tuple[int, int]]]:
    model = random_ising(np.random.default_rng(seed), N, "unordered")
    edges = [(i, j) for i, j in combinations(range(N), 2) if model.J[i, j] != 0]
    return model.h, model.J, edges


# ------------------------------------------------------------------------------------------------ Def 4.1.12, Eq 4.6
@pytest.mark.claim("gibbs.def4.1.10-12", tier="exact")
def test_ising_model_is_eq_4_5_and_the_clique_model_eq_4_6(measure) -> None:
    for seed, N in [(0, 3), (1, 4)]:
        h, J, edges = random_instance(seed, N)
        got = IsingModel(h, J, "unordered").probs()
        assert np.abs(got - brute_ising(h, J, edges)).max() <= TOL
    # pinned: two spins, h = 0, J = 1 on the edge: p(+,+) = e / (2e + 2/e) under Eq (4.5), e^2/(2e^2 + 2e^-2)
    # under the literal ordered sum of Eq (4.6) (each edge twice)
    J2 = np.array([[0.0, 1.0], [1.0, 0.0]])
    pin = IsingModel(np.zeros(2), J2, "unordered").probs()[3]
    assert abs(pin - exp(1) / (2 * exp(1) + 2 * exp(-1))) <= TOL
    assert abs(IsingModel(np.zeros(2), J2, "ordered").probs()[3] - exp(2) / (2 * exp(2) + 2 * exp(-2))) <= TOL
    measure("Def 4.1.12 pin p(+,+) at N = 2, h = 0, J = 1", pin)
    # Eq (4.6): clique C with J on every pair i != j (ordered) plus isolated vertices
    h6 = np.array([0.3, 0.2, 0.1, -0.2, 0.05])
    Jc = np.zeros((5, 5))
    for i, j in combinations(range(3), 2):
        Jc[i, j] = Jc[j, i] = 0.7
    got6 = clique_model(5, range(3), h6, 0.7, "ordered").probs()
    assert np.abs(got6 - brute_ising(h6, Jc, list(combinations(range(3), 2)), ordered=True)).max() <= TOL
    rejects(lambda: IsingModel(np.zeros(2), np.array([[0.0, 1.0], [0.5, 0.0]])), r"J must be symmetric")
    rejects(lambda: IsingModel(np.zeros(2), np.eye(2)), r"J must have a zero diagonal")
    rejects(lambda: clique_model(4, [0], 0.1, 1.0), r"the clique must be >= 2 distinct vertices")


@pytest.mark.claim("gibbs.def4.1.10-12", tier="exact", control=True)
def test_ising_control_misreadings() -> None:
    # the same comparison rejects the ordered (doubled) pair sum and 0/1 spins for Def 4.1.12
    h, J, edges = random_instance(0, 3)
    got = IsingModel(h, J, "unordered").probs()
    assert np.abs(got - brute_ising(h, J, edges, ordered=True)).max() > 1e-2
    assert np.abs(got - brute_ising(h, J, edges, spins=(0, 1))).max() > 1e-2


# ------------------------------------------------------------------------------------------------ Defs 4.1.10-4.1.11
@pytest.mark.claim("gibbs.def4.1.10-12", tier="exact")
def test_k_gibbs_and_independent_parallel_are_eqs_4_3_and_4_4(measure) -> None:
    h, J, edges = random_instance(2, 3)
    model = IsingModel(h, J, "unordered")
    p = brute_ising(h, J, edges)
    for k in (1, 2, 3):
        assert np.abs(k_gibbs(model, k).P - brute_k_gibbs(p, 3, k)).max() <= TOL
    P_ind = independent_parallel(model).P
    assert np.abs(P_ind - brute_independent(p, 3)).max() <= TOL
    # pins: 3-Gibbs (k = N) draws a fresh exact sample, so every row is p; the independent sampler's row from x
    # gives positive mass to every state (a product of N conditionals in (0, 1))
    assert np.abs(k_gibbs(model, 3).P - p[None, :]).max() <= TOL
    assert P_ind.min() > 0
    measure("TV(independent-parallel row at all -1, p)", 0.5 * float(np.abs(P_ind[0] - p).sum()))
    rejects(lambda: k_gibbs(model, 0), r"k must lie in 1..N = 1..3")
    rejects(lambda: k_gibbs(model, 4), r"k must lie in 1..N = 1..3")
    rejects(lambda: independent_parallel(p), r"model must be an IsingModel", TypeError)


@pytest.mark.claim("gibbs.def4.1.10-12", tier="exact", control=True)
def test_samplers_control_misreadings() -> None:
    # k read as the number of kept coordinates (resample N - k) and Eq (4.4) read as a sequential sweep: the same
    # comparisons reject both
    h, J, edges = random_instance(2, 3)
    model = IsingModel(h, J, "unordered")
    p = brute_ising(h, J, edges)
    assert np.abs(k_gibbs(model, 1).P - brute_k_gibbs(p, 3, 2)).max() > 1e-2
    assert np.abs(independent_parallel(model).P - brute_systematic_scan(p, 3)).max() > 1e-2


# ------------------------------------------------------------------------------------------------ Assumptions 4.1.5-7
def printed_4_1_5(h, J, C) -> bool:
    """Assumption 4.1.5 in exact rationals: h_G = sum_C h_i > sum_{i not in C} |h_i| and J - ||h||_1 >= J0 > 0."""
    h = [Fraction(v) for v in h]
    hG = sum(h[i] for i in C)
    out = sum(abs(h[i]) for i in range(len(h)) if i not in C)
    return hG > 0 and hG > out and Fraction(J) - sum(abs(v) for v in h) > 0


def printed_4_1_7(N: int, size: int, k: int, delta: Fraction) -> bool:
    """Assumption 4.1.7 in exact rationals."""
    return k >= size and k >= N - delta * (N + 1) / ((4 - delta) * size + delta)


@pytest.mark.claim("gibbs.assumptions4.1.5-7", tier="exact")
def test_assumption_validators_match_the_printed_inequalities(measure) -> None:
    # Assumption 4.1.5 on a grid of dyadic fields (exact in binary floating point), including both boundaries
    grid = (-0.5, -0.25, 0.0, 0.25, 0.5)
    agree = 0
    for h in product(grid, repeat=3):
        for J in (0.5, 1.0, 1.25, 1.5, 2.0):
            got = assumption_4_1_5(np.array(h), J, (0, 1)) is not None
            assert got == printed_4_1_5(h, J, (0, 1)), (h, J)
            agree += 1
    # boundaries: h_G equal to the outside mass fails; J equal to ||h||_1 fails (J0 must be > 0)
    assert assumption_4_1_5(np.array([0.25, 0.25, 0.5]), 2.0, (0, 1)) is None
    assert assumption_4_1_5(np.array([0.5, 0.25, 0.25]), 1.0, (0, 1)) is None
    assert assumption_4_1_5(np.array([0.5, 0.25, 0.25]), 1.25, (0, 1)) == 0.25
    # Assumption 4.1.7 exactly (delta = 1/2, |C| = 25): k = N - 1 is first allowed at N = 175 (Remark 4.1.4)
    d = Fraction(1, 2)
    for N in range(25, 200):
        for k in range(max(1, N - 2), N + 1):
            assert assumption_4_1_7(N, 25, k, 0.5) == printed_4_1_7(N, 25, k, d), (N, k)
    first = min(N for N in range(26, 400) if printed_4_1_7(N, 25, N - 1, d))
    assert first == 175
    # Assumption 4.1.6: the smallest clique for (delta, M) = (1/2, 1) is 25 = ceil(8 (1 + ln 8)), and each of its
    # three inequalities fails just below its threshold
    hG, J0 = 0.5 * log(2 * 3.5 / 0.5), 25 * log(2) / 2
    assert ceil(8 * (1 + log(8))) == 25 and assumption_4_1_6(25, hG, J0, 0.5, 1)
    assert not assumption_4_1_6(24, hG, J0, 0.5, 1)
    assert not assumption_4_1_6(25, hG - 1e-9, J0, 0.5, 1)
    assert not assumption_4_1_6(25, hG, J0 - 1e-9, 0.5, 1)
    measure(
        "Assumption 4.1.5 grid cases agreeing with the printed inequality; first N with k = N-1 (|C|=25)",
        [agree, first],
    )
    # the document's instances: Fig 4.3 (N = 10, |C| = 4, h_i = 5 for all i) violates 4.1.5 for every J (h_G = 20
    # < 30); with the fields on the clique only it holds once J > 20
    h_fig = np.full(10, 5.0)
    assert all(assumption_4_1_5(h_fig, J, range(4)) is None for J in (1.0, 10.0, 100.0))
    h_clique = np.r_[np.full(4, 5.0), np.zeros(6)]
    assert (
        assumption_4_1_5(h_clique, 20.0, range(4)) is None
        and assumption_4_1_5(h_clique, 21.0, range(4)) == 1.0
    )


@pytest.mark.claim("gibbs.assumptions4.1.5-7", tier="exact", control=True)
def test_assumption_4_1_7_control_violating_instance_breaks_the_separation(measure) -> None:
    # N = 26, |C| = 25, delta = 1/2, Assumption 4.1.6's smallest instance: k = N satisfies 4.1.7 and k-Gibbs lands in
    # R1 in one step from all -1 with probability >= 1 - delta; k = N - 1 violates it and the validator says so,
    # and then the one-step probability is at most P(K contains C) = 1/26: Corollary 4.1.1 (1) fails
    size, N, delta = 25, 26, 0.5
    hG, J0 = 0.5 * log(2 * (4 - delta) / delta), 0.5 * size * log(2)
    cc = CliqueCountChain(size, hG / size, hG + J0, "unordered")
    good = float(cc.k_gibbs(N, N).P[0, size])
    bad = float(cc.k_gibbs(N, N - 1).P[0, size])
    assert assumption_4_1_7(N, size, N, delta) and not assumption_4_1_7(N, size, N - 1, delta)
    assert good >= 1 - delta and bad <= comb(N - size, N - 1 - size) / comb(N, N - 1) + TOL
    assert bad < 1 - delta
    measure("P(k-Gibbs in R1 after one step from all -1): k = N, k = N - 1 (N = 26, |C| = 25)", [good, bad])
