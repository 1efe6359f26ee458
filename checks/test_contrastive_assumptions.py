"""Claim checks of Liu §2.1's Assumptions 1-4, Lemma 2 (the beta-mixing generalisation bound of Mohri and
Rostamizadeh) and Lemma 3 (the pair sequence's beta-mixing rate), exactly on small instances."""

from __future__ import annotations

import itertools
import math
from fractions import Fraction as F

import numpy as np
import pytest
import sympy as sp
from hypothesis import given, settings
from hypothesis import strategies as st

from theorylab.estimation.generalization import (
    all_functions_rademacher,
    empirical_rademacher,
    frequency_law,
    gap_tail,
    indicator_rademacher,
    lemma2_bound,
    threshold_rademacher,
    two_state_chain,
)
from theorylab.markov.assumptions import quadratic_constants
from theorylab.markov.diffusions import OU
from theorylab.markov.pair_chain import beta_mixing, pair_chain, pair_stationary
from theorylab.testing import rejects, trivial

# ---------------------------------------------------------------- Assumptions 1-3


@pytest.mark.claim("contrastive.ass1_3_potential", tier="exact")
def test_ass1_3_constants_of_quadratic_potentials(measure) -> None:
    for rho in (F(1, 2), F(1), F(3)):  # OU: f = rho |x|^2 / 2
        c = quadratic_constants([[rho, 0], [0, rho]])
        assert (c.rho, c.L0, c.L1, c.K) == (rho, rho, 0, rho)
        assert abs(float(sp.log(c.Z)) + float(OU(float(rho), d=2).stationary_logpdf(np.zeros(2)))) < 1e-14
    A = sp.Matrix([[2, 1], [1, 2]])  # anisotropic: eigenvalues 1 and 3 (from scratch: (4 -+ sqrt(16 - 12))/2)
    c = quadratic_constants(A)
    assert (c.rho, c.L0, c.L1, c.K) == (1, 3, 0, 3) and c.Z == 2 * sp.pi / sp.sqrt(3)
    x, y = sp.symbols("x1:3"), sp.symbols("y1:3")
    X, Y = sp.Matrix(x), sp.Matrix(y)
    f = lambda v: (v.T * A * v)[0] / 2  # noqa: E731
    gap = sp.expand(f(X) - f(Y) - (A * Y).dot(X - Y) - ((X - Y).T * A * (X - Y))[0] / 2)
    assert gap == 0  # f(x) = f(y) + <grad f(y), x - y> + (x - y)^T A (x - y)/2 <= ... + L0 |x - y|^2 / 2
    # linear growth: |A z| <= 3 (1 + |z|) everywhere, and no K < 3 works (z along the top eigenvector)
    rng = np.random.default_rng(13)
    z = rng.standard_normal((1000, 2)) * rng.exponential(10, (1000, 1))
    An = np.array(A, dtype=float)
    assert np.all(np.linalg.norm(z @ An, axis=1) <= 3 * (1 + np.linalg.norm(z, axis=1)))
    v = np.array([1.0, 1.0]) / math.sqrt(2) * 1000
    ratio = np.linalg.norm(An @ v) / (1 + np.linalg.norm(v))
    assert 2.996 < ratio < 3
    measure("growth_ratio_at_1000", float(ratio))
    rejects(lambda: quadratic_constants([[1, 1], [1, 1]]), r"Assumption 1: f is not strongly convex")
    rejects(lambda: quadratic_constants([[1, 2], [0, 1]]), r"A must be symmetric")
    rejects(lambda: OU(0.0), r"OU needs rho > 0")


@pytest.mark.claim("contrastive.ass1_3_potential", tier="exact", control=True)
def test_ass1_3_control_growth_constant_rho() -> None:
    # reading Assumption 3's K as the convexity constant rho = 1 fails on the anisotropic potential
    c = quadratic_constants([[2, 1], [1, 2]])
    v = np.array([1.0, 1.0]) / math.sqrt(2) * 10
    assert np.linalg.norm(np.array([[2, 1], [1, 2]]) @ v) > float(c.rho) * (1 + np.linalg.norm(v))


# ---------------------------------------------------------------- Assumption 4


def _ratio(R, m: int) -> float:
    return float(R) / math.sqrt(math.log(m) / m)


@pytest.mark.claim("contrastive.ass4_rademacher", tier="exact")
def test_ass4_threshold_class(measure) -> None:
    # the closed form equals the definition (2.8) enumerated over all signs
    for m in (1, 2, 3, 5, 7):
        V = [[int(i >= k) for i in range(m)] for k in range(m + 1)]
        assert empirical_rademacher(V) == threshold_rademacher(m)
    assert [threshold_rademacher(m) for m in (1, 2, 3, 4)] == [1, F(3, 4), F(7, 12), F(17, 32)]
    ms = (2, 3, 4, 8, 16, 24)
    R = [threshold_rademacher(m) for m in ms]
    # Massart: R_m <= sqrt(2 log(m + 1)/m), i.e. Assumption 4 with K <= sqrt(2 log 3/log 2) = 1.78 for all m
    assert all(float(r) <= math.sqrt(2 * math.log(m + 1) / m) for r, m in zip(R, ms, strict=True))
    ratios = [_ratio(r, m) for r, m in zip(R, ms, strict=True)]
    assert all(a > b for a, b in itertools.pairwise(ratios))  # 1.27 -> 0.65: decreasing
    assert abs(ratios[-1] - 0.6507) < 1e-4
    measure("threshold_ratio_m24", ratios[-1])
    rejects(lambda: empirical_rademacher([[1] * 21]), r"exhaustive enumeration needs m <= 20")
    rejects(lambda: threshold_rademacher(0), r"m must be >= 1")


@pytest.mark.claim("contrastive.ass4_rademacher", tier="exact", control=True)
def test_ass4_control_all_functions() -> None:
    # all {0,1}-functions (infinite VC dimension): R_m >= 1/2, so R_m / sqrt(log m / m) -> infinity;
    # with the thresholds' K = 1.78 the assumption fails at m = 64
    assert all(all_functions_rademacher(m) >= F(1, 2) for m in (1, 2, 5, 16, 64))
    assert all_functions_rademacher(4) == F(11, 16)
    K = math.sqrt(2 * math.log(3) / math.log(2))
    assert _ratio(all_functions_rademacher(64), 64) > K


# ---------------------------------------------------------------- Lemma 2


M_OBS = 640
DELTA = 0.1


def _beta_two_state(pi, a: F, k: int) -> float:
    return 2 * float(pi[0] * pi[1]) * abs(1 - 2 * float(a)) ** k


@pytest.mark.claim("contrastive.lemma2_mixing_bound", tier="exact")
def test_lemma2_bound_holds_on_two_state_chains(measure) -> None:
    # (2.9) for the indicator class: the formula equals the average of (2.8) over all i.i.d. samples
    mu = 4
    brute = (
        sum(
            empirical_rademacher([[int(x == 0) for x in s], [int(x == 1) for x in s]])
            for s in itertools.product((0, 1), repeat=mu)
        )
        / 2**mu
    )
    assert abs(indicator_rademacher(0.5, mu) - float(brute)) < 1e-15 and brute == F(3, 8)
    # the visit-count law equals a brute force over all 2^8 paths of an asymmetric chain
    P, pi = two_state_chain(F(1, 5), F(1, 2))
    brute_law = np.zeros(9)
    for path in itertools.product((0, 1), repeat=8):
        prob = pi[path[0]] * np.prod([P[x, y] for x, y in itertools.pairwise(path)])
        brute_law[path.count(0)] += float(prob)
    assert np.abs(frequency_law(P, pi, 8) - brute_law).max() < 1e-15
    tails = {}
    for a, mus in ((F(3, 10), (8, 16, 32)), (F(1, 50), (2,))):
        P, pi = two_state_chain(a, a)
        law = frequency_law(P, pi, M_OBS)
        assert abs(law.sum() - 1) < 1e-12
        for mu in mus:  # every admissible mu (delta > 2 (mu - 1) beta(m / 2 mu)) satisfies (2.17)
            B = lemma2_bound(
                indicator_rademacher(0.5, mu), mu, DELTA, _beta_two_state(pi, a, M_OBS // (2 * mu))
            )
            tails[a, mu] = gap_tail(law, 0.5, B)
            assert tails[a, mu] <= DELTA
        bad = mus[-1] * 2
        rejects(
            lambda a=a, pi=pi, bad=bad: lemma2_bound(
                0.1, bad, DELTA, _beta_two_state(pi, a, M_OBS // (2 * bad))
            ),
            r"Lemma 2 needs delta > 2 \(mu - 1\) beta\(T/2mu\) = (0\.6451|0\.1145),",
        )
    # non-vacuous on the fast chain: at mu = 32 the bound is 0.36 < max Phi = 1/2
    B32 = lemma2_bound(
        indicator_rademacher(0.5, 32), 32, DELTA, _beta_two_state((F(1, 2), F(1, 2)), F(3, 10), 10)
    )
    appr = 2 * 31 * 0.5 * 0.4**10  # Delta = 2 (mu - 1) beta(m / 2 mu), beta(k) = |1 - 2a|^k / 2
    assert abs(B32 - indicator_rademacher(0.5, 32) - math.sqrt(math.log(2 / (DELTA - appr)) / 64)) < 1e-12
    assert 0.35 < B32 < 0.37
    measure("lemma2_bound_fast_mu32", B32)
    # i.i.d. bound (mu = m, no blocking) is fine on the fast chain
    B_iid = lemma2_bound(indicator_rademacher(0.5, M_OBS), M_OBS, DELTA, 0.0)
    P, pi = two_state_chain(F(3, 10), F(3, 10))
    assert abs(B_iid - 0.0799047) < 1e-6
    assert abs(gap_tail(frequency_law(P, pi, M_OBS), 0.5, B_iid) - 0.0075308) < 1e-6  # <= delta
    rejects(lambda: two_state_chain(0, F(1, 2)), r"a and b must lie in \(0, 1\]")


@pytest.mark.claim("contrastive.lemma2_mixing_bound", tier="exact", control=True)
def test_lemma2_control_iid_bound_on_a_sticky_chain(measure) -> None:
    # ignoring the dependence (the i.i.d. bound with mu = m) fails on a slowly mixing chain
    B_iid = lemma2_bound(indicator_rademacher(0.5, M_OBS), M_OBS, DELTA, 0.0)
    P, pi = two_state_chain(F(1, 50), F(1, 50))
    tail = gap_tail(frequency_law(P, pi, M_OBS), 0.5, B_iid)
    assert tail > DELTA and abs(tail - 0.5633908) < 1e-6
    measure("iid_bound_violation_sticky", tail)


# ---------------------------------------------------------------- Lemma 3


@pytest.mark.claim("contrastive.lemma3_pair_rate", tier="exact")
def test_lemma3_pair_beta_rate_on_ou(measure) -> None:
    ou = OU(1.0)
    B = ou.mean_norm()  # sqrt(2/pi)
    eta = 0.5
    # beta_{S_X}(i) = beta_base(2 i eta) (Lemma 4) <= B / sqrt(2 pi * 2 i eta) (Lemma 5, averaged)
    betas = [ou.beta_mixing(2 * i * eta) for i in (1, 2, 3, 4)]
    bounds = [B / math.sqrt(2 * math.pi * 2 * i * eta) for i in (1, 2, 3, 4)]
    assert all(b <= c for b, c in zip(betas, bounds, strict=True))
    assert abs(betas[0] - 0.12714) < 1e-5 and abs(betas[1] - 0.04364) < 1e-5
    scaled = [b * math.sqrt(i) for b, i in zip(betas, (1, 2, 3, 4), strict=True)]
    assert all(x > y for x, y in itertools.pairwise(scaled))  # sqrt(t) beta(t) decreases
    measure("beta_pair_i1_i2", betas[:2])
    # on a finite chain the pair sequence has exactly the base chain's coefficient at lag 2i (Lemma 4)
    P = np.array([[F(1, 2), F(1, 2)], [F(1, 4), F(3, 4)]], dtype=object)
    pi = np.array([F(1, 3), F(2, 3)], dtype=object)
    T, K = pair_chain(P, np.array([F(1, 2), F(1, 2)], dtype=object))
    ps = pair_stationary(pi, K)
    assert [beta_mixing(T, ps, i) for i in (1, 2, 3)] == [beta_mixing(P, pi, 2 * i) for i in (1, 2, 3)]


@pytest.mark.claim("contrastive.lemma3_pair_rate", tier="exact", control=True)
def test_lemma3_control_periodic_chain() -> None:
    # a periodic chain is not beta-mixing: its pair sequence keeps beta = 1/2, so sqrt(t) beta(t) grows
    P = np.array([[F(0), F(1)], [F(1), F(0)]], dtype=object)
    pi = np.array([F(1, 2), F(1, 2)], dtype=object)
    T, K = pair_chain(P, pi)
    ps = pair_stationary(pi, K)
    scaled = [float(beta_mixing(T, ps, i)) * math.sqrt(i) for i in (1, 2, 3, 4)]
    assert all(x < y for x, y in itertools.pairwise(scaled))


@given(rho=st.floats(0.25, 4.0), eta=st.floats(0.1, 1.0))
@settings(deadline=None, max_examples=25)
@pytest.mark.claim("contrastive.lemma3_pair_rate", tier="property")
def test_lemma3_property(rho: float, eta: float) -> None:
    ou = OU(rho)
    B = ou.mean_norm()
    for i in (1, 2, 3):
        t = 2 * i * eta
        beta = ou.beta_mixing(t)
        trivial(bool(beta < 1e-12))
        assert beta <= B / math.sqrt(2 * math.pi * t)


@given(a=st.fractions(F(1, 20), F(1, 2)), b=st.fractions(F(1, 20), F(1, 2)), delta=st.floats(0.05, 0.3))
@settings(deadline=None, max_examples=25)
@pytest.mark.claim("contrastive.lemma2_mixing_bound", tier="property")
def test_lemma2_property(a: F, b: F, delta: float) -> None:
    m = 256
    P, pi = two_state_chain(a, b)
    law = frequency_law(P, pi, m)
    lam = abs(1 - float(a) - float(b))
    admissible = []
    for mu in (2, 4, 8, 16, 32):
        beta = 2 * float(pi[0] * pi[1]) * lam ** (m // (2 * mu))
        if delta > 2 * (mu - 1) * beta:
            admissible.append((mu, beta))
    if trivial(not admissible):
        return
    for mu, beta in admissible:
        B = lemma2_bound(indicator_rademacher(float(pi[0]), mu), mu, delta, beta)
        assert gap_tail(law, float(pi[0]), B) <= delta
