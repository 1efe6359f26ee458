"""Claim checks of Liu §2.2.1's Definition 2 (identifiability up to a permutation of the hidden states) and
Assumptions 5 (doubly stochastic T, stationary start) and 9 (unit-norm means): the library's relation and
validators against a from-scratch brute force, on the constructions the chapter uses."""

from __future__ import annotations

import itertools
from fractions import Fraction as F

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from theorylab.hmm import (
    GHMM,
    HMM,
    example_247,
    householder_pair,
    lemma7_pair,
    predictor_gap,
    same_up_to_relabeling,
    theorem4_pair,
)
from theorylab.hmm.constructions import random_doubly_stochastic, random_ghmm, random_hmm, theorem8_case2_pair
from theorylab.testing import rejects, trivial

O8 = np.array([[4, 1, 1], [2, 4, 1], [1, 2, 4], [1, 1, 2]]) / 8  # column-stochastic, rank 3 (dyadic: exact)
T8 = np.array([[4, 3, 1], [1, 2, 5], [3, 3, 2]]) / 8  # doubly stochastic, det 8^-2 != 0, no symmetry


def _perm_matrix(p) -> np.ndarray:
    k = len(p)
    P = np.zeros((k, k))
    P[list(p), range(k)] = 1  # (X P)[:, i] = X[:, p[i]]
    return P


def _def2_related(O, T, O2, T2, wrong: bool = False) -> bool:
    """Def 2 by brute force: a permutation matrix Pi with O = O2 Pi and T = Pi^T T2 Pi (exact equality);
    ``wrong`` uses the misreading T = Pi T2 Pi^T."""
    for p in itertools.permutations(range(O.shape[1])):
        P = _perm_matrix(p)
        conj = P @ T2 @ P.T if wrong else P.T @ T2 @ P
        if np.array_equal(O, O2 @ P) and np.array_equal(T, conj):
            return True
    return False


# ---------------------------------------------------------------- Definition 2


@pytest.mark.claim("hmm.def2_identifiability", tier="exact")
def test_def2_relabeling_relation(measure) -> None:
    m = HMM(O8, T8)
    agree = 0
    for p in itertools.permutations(range(3)):
        m2 = m.relabel(p)
        assert np.array_equal(m2.O, O8 @ _perm_matrix(p)) and np.array_equal(
            m2.T, _perm_matrix(p).T @ T8 @ _perm_matrix(p)
        )
        assert _def2_related(m.O, m.T, m2.O, m2.T) and same_up_to_relabeling(m, m2, tol=0.0)
        for task in ("x2|x1", "x2x3|x1", "x1x3|x2"):  # relabelling never changes an optimal predictor
            assert predictor_gap(m, m2, task) <= 1e-15
        agree += 1
    # a pair with equal x3|x1 predictors that is not related (Theorem 4): that task does not suffice
    a, b = theorem4_pair(3)
    assert predictor_gap(a, b, "x3|x1") < 1e-12 and not same_up_to_relabeling(a, b, tol=1e-6)
    assert not _def2_related(a.O, a.T, b.O, b.T)
    measure("relabelings_checked", agree)
    rejects(lambda: m.relabel((0, 0, 1)), r"perm must be a permutation of range\(3\)")
    rejects(
        lambda: same_up_to_relabeling(m, GHMM(np.eye(3), T8)), r"compare two HMMs or two GHMMs", TypeError
    )


@pytest.mark.claim("hmm.def2_identifiability", tier="exact", control=True)
def test_def2_control_other_conjugation() -> None:
    # T = Pi T2 Pi^T (the misreading) does not relate an HMM to its relabelling by a 3-cycle
    m = HMM(O8, T8)
    m2 = m.relabel((1, 2, 0))
    assert not _def2_related(m.O, m.T, m2.O, m2.T, wrong=True)


# ---------------------------------------------------------------- Assumption 5


def _reverse(T: np.ndarray, pi: np.ndarray) -> np.ndarray:
    """R[j, i] = P(h_t = j | h_{t+1} = i) = T[i, j] pi[j] / (T pi)[i] (column-stochastic convention)."""
    nxt = T.dot(pi)
    return np.array(
        [[T[i, j] * pi[j] / nxt[i] for i in range(len(pi))] for j in range(len(pi))], dtype=object
    )


@pytest.mark.claim("hmm.ass5_doubly_stochastic", tier="exact")
def test_ass5_uniform_stationary_and_reversed_chain(measure) -> None:
    Tq = np.array([[F(int(v), 8) for v in row] for row in (T8 * 8)], dtype=object)
    u = np.array([F(1, 3)] * 3, dtype=object)
    assert (Tq.dot(u) == u).all()  # the uniform law is stationary: h_t uniform for every t
    assert (_reverse(Tq, u) == Tq.T).all()  # the reversed chain has transition T^T
    # the constructions of the chapter satisfy it (validated on construction; sums to 1e-12)
    models = [*theorem4_pair(3), *theorem4_pair(4), *example_247(exact=True)]
    models += [random_hmm(5, 3, np.random.default_rng(s)) for s in range(3)]
    gap = max(max(np.abs(mm.T.sum(0) - 1).max(), np.abs(mm.T.sum(1) - 1).max()) for mm in models)
    assert gap <= 1e-12
    measure("max_row_col_sum_gap", float(gap))
    # where it fails: Lemma 7's signed Householder partner has 1^T T~ = -1^T, excluded by Assumption 5
    g = random_ghmm(4, 3, np.random.default_rng(7))
    h = householder_pair(g)
    assert np.allclose(h.T.sum(axis=0), -1, atol=1e-12)
    rejects(lambda: GHMM(h.M, h.T), r"Assumption 5: T has negative entries|Assumption 5: columns of T")
    T_col = np.array([[0.5, 0.5, 0.5], [0.25, 0.25, 0.25], [0.25, 0.25, 0.25]])
    rejects(lambda: HMM(O8, T_col), r"Assumption 5: T must be doubly stochastic")


@pytest.mark.claim("hmm.ass5_doubly_stochastic", tier="exact", control=True)
def test_ass5_control_column_stochastic_only() -> None:
    # a column-stochastic T that is not doubly stochastic: the uniform law is not stationary, reversal is not T^T
    Tq = np.array(
        [[F(1, 2), F(1, 2), F(1, 4)], [F(1, 4), F(1, 4), F(1, 4)], [F(1, 4), F(1, 4), F(1, 2)]], dtype=object
    )
    u = np.array([F(1, 3)] * 3, dtype=object)
    assert not (Tq.dot(u) == u).all()
    pi = np.array([F(5, 12), F(1, 4), F(1, 3)], dtype=object)
    assert (Tq.dot(pi) == pi).all() and not (_reverse(Tq, pi) == Tq.T).all()


@given(seed=st.integers(0, 2**32 - 1), k=st.integers(2, 6))
@settings(deadline=None, max_examples=30)
@pytest.mark.claim("hmm.ass5_doubly_stochastic", tier="property")
def test_ass5_property(seed: int, k: int) -> None:
    T = random_doubly_stochastic(k, np.random.default_rng(seed))
    u = np.full(k, 1 / k)
    trivial(bool(np.allclose(T, np.eye(k)[np.argmax(T, axis=0)], atol=1e-3)))  # (nearly) a permutation
    assert np.abs(T @ u - u).max() <= 1e-12
    R = (T * u[None, :]).T / (T @ u)[None, :]
    assert np.abs(R - T.T).max() <= 1e-12


# ---------------------------------------------------------------- Assumption 9


def _footnote8_posterior(M: np.ndarray, x: np.ndarray) -> np.ndarray:
    logits = -0.5 * ((x[:, :, None] - M[None]) ** 2).sum(axis=1)
    w = np.exp(logits - logits.max(axis=1, keepdims=True))
    return w / w.sum(axis=1, keepdims=True)


@pytest.mark.claim("hmm.ass9_unit_means", tier="exact")
def test_ass9_unit_means_on_the_constructions(measure) -> None:
    rng = np.random.default_rng(9)
    g = random_ghmm(5, 3, rng)
    partners = [g, lemma7_pair(g, w=rng.standard_normal(5)), theorem8_case2_pair(random_ghmm(3, 2, rng))]
    gap = max(np.abs(np.linalg.norm(p.M, axis=0) - 1).max() for p in partners)
    assert gap <= 1e-12  # each is validated by GHMM(norm=1) on construction
    measure("max_norm_gap", float(gap))
    # footnote 8's posterior; with equal norms it is softmax(M^T x): it depends on M only through M^T x
    x = rng.standard_normal((7, 5))
    post = g.posterior(x)
    assert np.abs(post - _footnote8_posterior(g.M, x)).max() <= 1e-14
    z = x @ g.M
    soft = np.exp(z - z.max(1, keepdims=True))
    assert np.abs(post - soft / soft.sum(1, keepdims=True)).max() <= 1e-14
    rejects(lambda: GHMM(g.M * np.array([1, 1, 2]), g.T), r"Assumption 9: means must have norm 1")
    assert GHMM(g.M * 3, g.T, norm=3.0).k == 3  # footnote 9: any known common norm
    rejects(lambda: GHMM(g.M, g.T, norm=-1.0), r"norm must be positive")


@pytest.mark.claim("hmm.ass9_unit_means", tier="exact", control=True)
def test_ass9_control_unequal_norms() -> None:
    # without equal norms the posterior is not softmax(M^T x): the -|mu_i|^2/2 offsets matter
    rng = np.random.default_rng(9)
    g = random_ghmm(5, 3, rng)
    M = g.M * np.array([1.0, 1.0, 2.0])
    x = rng.standard_normal((7, 5))
    z = x @ M
    soft = np.exp(z - z.max(1, keepdims=True))
    assert np.abs(_footnote8_posterior(M, x) - soft / soft.sum(1, keepdims=True)).max() > 0.05
