"""Claim checks of the checkable part of Liu Theorem 3 (contrastive.thm3, which stays open: its O(.) constant is
not specified): the inequality chain (2.30)-(2.32) of its proof on finite state spaces, exactly, with the two
printed slips as controls."""

from __future__ import annotations

from fractions import Fraction as F

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from theorylab.estimation.contrastive_global import r_q, thm3_chain
from theorylab.testing import rejects, trivial

P3 = np.array(
    [[F(1, 2), F(1, 4), F(1, 4)], [F(1, 3), F(1, 3), F(1, 3)], [F(0), F(3, 4), F(1, 4)]], dtype=object
)
PI3 = np.array([F(2, 7), F(3, 7), F(2, 7)], dtype=object)  # P3's stationary law
Q3 = np.array([F(1, 6), F(1, 2), F(1, 3)], dtype=object)
P_HAT = np.array(
    [[F(1, 4), F(1, 2), F(1, 4)], [F(1, 3), F(1, 6), F(1, 2)], [F(1, 8), F(5, 8), F(1, 4)]], dtype=object
)


@pytest.mark.claim("contrastive.thm3", tier="exact")
def test_thm3_proof_chain_exact(measure) -> None:
    c = thm3_chain(PI3, P3, P_HAT, Q3)
    assert (c.l1, c.risk_pstar, c.excess) == (F(43, 336), F(97, 9450), F(135949, 8890560))
    assert c.l1**2 <= c.risk_pstar * c.weight  # (2.32): Cauchy-Schwarz
    assert c.risk_pstar <= 2 * c.excess  # (2.30): E_{p*} (dr)^2 <= 2 (R(h) - R(h*)) = 4 eps_tr at most
    # (2.31) with absolute values, at every cell: r_q'(max) |p - p*| <= |r_q(p) - r_q(p*)|
    Q = np.broadcast_to(Q3, (3, 3))
    top = np.maximum(P_HAT, P3)
    assert (Q / (top + Q) ** 2 * abs(P_HAT - P3) <= abs(r_q(P_HAT, Q) - r_q(P3, Q))).all()
    measure("l1_and_bound", [float(c.l1), float((c.risk_pstar * c.weight) ** 0.5)])
    rejects(lambda: thm3_chain(PI3, P3, P_HAT, np.array([0, F(1, 2), F(1, 2)], dtype=object)), r"q must be")
    rejects(lambda: thm3_chain(PI3, P3 * 2, P_HAT, Q3), r"P_star must be a 3 x 3 matrix")


@pytest.mark.claim("contrastive.thm3", tier="exact", control=True)
def test_thm3_control_printed_steps() -> None:
    # (2.31) without absolute values fails when p < p*: r'(max)(p - p*) = -1/9 > r(1) - r(2) = -1/6 (q = 1)
    p, p_star, q = F(1), F(2), F(1)
    assert q / (max(p, p_star) + q) ** 2 * (p - p_star) > r_q(p, q) - r_q(p_star, q)
    # "the first term is bounded by 2 eps_tr" (l.686): with excess risk 2 eps_tr, E_{p*}(dr)^2 reaches 3.6 eps_tr
    # when the error sits where q is small (q = (1/20, 1/20, 9/10), i.i.d. chain with law (9/20, 9/20, 1/10))
    row = [F(9, 20), F(9, 20), F(1, 10)]
    c = thm3_chain(
        np.array(row, dtype=object),
        np.array([row] * 3, dtype=object),
        np.array([[F(6, 20), F(12, 20), F(1, 10)]] * 3, dtype=object),
        np.array([F(1, 20), F(1, 20), F(9, 10)], dtype=object),
    )
    assert c.risk_pstar / c.excess == F(9, 5) and c.risk_pstar > c.excess


@given(seed=st.integers(0, 2**32 - 1), n=st.integers(2, 6))
@settings(deadline=None, max_examples=40)
@pytest.mark.claim("contrastive.thm3", tier="property")
def test_thm3_chain_property(seed: int, n: int) -> None:
    rng = np.random.default_rng(seed)
    P_star = rng.dirichlet(np.ones(n), size=n)
    P = rng.dirichlet(np.ones(n), size=n)
    q = rng.dirichlet(np.ones(n))
    w, v = np.linalg.eig(P_star.T)
    pi = np.abs(np.real(v[:, np.argmin(np.abs(w - 1))]))
    pi /= pi.sum()
    c = thm3_chain(pi, P_star, P, q)
    trivial(bool(c.l1 < 1e-9))
    assert c.l1 <= np.sqrt(c.risk_pstar * c.weight) * (1 + 1e-12)
    assert c.risk_pstar <= 2 * c.excess * (1 + 1e-12)
