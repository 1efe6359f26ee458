"""Claim checks of contrastive.lemma4 (Liu thesis §2.1.2.1): the pair sequence's beta-mixing coefficients are the
base chain's at twice the lag, on finite chains (exactly in rationals, and on random float chains)."""

from __future__ import annotations

from fractions import Fraction as F

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from theorylab.markov.pair_chain import beta_mixing, matrix_power, pair_chain, pair_stationary
from theorylab.testing import rejects, trivial

P3 = np.array(
    [[F(1, 2), F(1, 4), F(1, 4)], [F(1, 3), F(1, 3), F(1, 3)], [F(0), F(3, 4), F(1, 4)]], dtype=object
)
PI3 = np.array([F(2, 7), F(3, 7), F(2, 7)], dtype=object)  # P3's stationary law
Q3 = np.array([F(1, 6), F(1, 2), F(1, 3)], dtype=object)  # a proposal different from pi


@pytest.mark.claim("contrastive.lemma4", tier="exact")
def test_pair_chain_beta_equals_base_at_twice_the_lag(measure) -> None:
    assert (PI3.dot(P3) == PI3).all()
    T, K = pair_chain(P3, Q3)
    ps = pair_stationary(PI3, K)
    assert (ps.dot(T) == ps).all() and sum(ps) == 1  # pi(x) K(x, x') is stationary for the pair chain
    for i in (1, 2, 3, 4):
        assert beta_mixing(T, ps, i) == beta_mixing(P3, PI3, 2 * i)
    assert beta_mixing(T, ps, 1) == F(3, 98)
    measure("beta_pair_i1_i2", [float(beta_mixing(T, ps, 1)), float(beta_mixing(T, ps, 2))])
    # at i = 0 the identity does not hold (the pair's point mass also fixes x'); the lemma is used at i >= 1
    assert beta_mixing(T, ps, 0) == F(3067, 3528) != beta_mixing(P3, PI3, 0) == F(32, 49)
    rejects(lambda: pair_chain(P3, Q3[:2]), r"q must be a probability vector of length 3")
    rejects(lambda: beta_mixing(P3 * 2, PI3, 1), r"the rows of P must be probability vectors")
    rejects(lambda: matrix_power(P3, -1), r"the lag must be >= 0, got -1")


@pytest.mark.claim("contrastive.lemma4", tier="exact", control=True)
def test_pair_chain_control_same_lag() -> None:
    # the same equality at lag i (not 2i) is rejected: one pair-step spans two base steps
    T, K = pair_chain(P3, Q3)
    ps = pair_stationary(PI3, K)
    assert all(beta_mixing(T, ps, i) != beta_mixing(P3, PI3, i) for i in (1, 2, 3))


@given(seed=st.integers(0, 2**32 - 1), n=st.integers(2, 5), i=st.integers(1, 4))
@settings(deadline=None)
@pytest.mark.claim("contrastive.lemma4", tier="property")
def test_pair_chain_beta_property(seed: int, n: int, i: int) -> None:
    rng = np.random.default_rng(seed)
    P = rng.dirichlet(np.full(n, 0.5), size=n)
    q = rng.dirichlet(np.ones(n))
    w, v = np.linalg.eig(P.T)
    pi = np.real(v[:, np.argmin(np.abs(w - 1))])
    pi /= pi.sum()
    base = beta_mixing(P, pi, 2 * i)
    trivial(bool(base < 1e-9))  # already mixed: both sides ~0
    T, K = pair_chain(P, q)
    assert abs(beta_mixing(T, pair_stationary(pi, K), i) - base) <= 1e-12
