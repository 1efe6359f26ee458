"""Claim checks of mple.thm4.1.4 (Li thesis §4.1.3, proof §4.3.4): the finite-sample TV bound of MPLE and its parts
(Prop 4.3.1 through C_AT >= 1/gap, Prop 4.3.2, Lemma 4.3.6), on Ising models with N = 2 or 3 by exact enumeration."""

from __future__ import annotations

import itertools
import math
from fractions import Fraction as F

import numpy as np
import pytest

from theorylab.ising.finite_sample import (
    conditional_kl,
    empirical_tv_tail,
    kl,
    pl_kl_loss,
    simulate_tv_bound,
    support_margin,
    tensorization_ratio,
    tv_bound_lemma436,
)
from theorylab.ising.model import IsingModel
from theorylab.ising.samplers import block_dynamics
from theorylab.testing import rejects

MODEL3 = IsingModel(np.array([0.2, -0.1, 0.3]), np.array([[0, 0.8, 0.5], [0.8, 0, -0.4], [0.5, -0.4, 0]]))


def _slowest_direction(chain, q: np.ndarray) -> tuple[float, np.ndarray]:
    """``(1/gap, f)``: the relaxation time and the eigenfunction of the second eigenvalue of a reversible chain."""
    d = np.sqrt(q)
    S = d[:, None] * chain.P / d[None, :]
    w, v = np.linalg.eigh((S + S.T) / 2)
    return 1 / (1 - w[-2]), v[:, -2] / d


# ------------------------------------------------------------------------------------------------ Prop 4.3.1: C_AT
@pytest.mark.claim("mple.thm4.1.4", tier="exact")
def test_tensorization_constant_is_at_least_the_relaxation_time(measure) -> None:
    # r = q (1 + eps f) with f the slowest eigenfunction of the k-block dynamics: KL(r, q) / L_PL(q; r) tends to
    # 1/gap at rate O(eps) (both sides are eps^2/2 times Var f and the Dirichlet form, plus O(eps^3)), so
    # C_AT(q) >= 1/gap; for k = N the loss is KL(r, q) itself and the ratio is 1.
    q = MODEL3.probs()
    got = []
    for k in (1, 2):
        relax, f = _slowest_direction(block_dynamics(MODEL3, k), q)
        errs = []
        for eps in (1e-2, 1e-3):
            r = q * (1 + eps * f)
            errs.append(abs(tensorization_ratio(r / r.sum(), q, 3, k) - relax))
        got.append((relax, errs[1]))
        assert errs[1] <= 1e-3 * relax and errs[1] <= errs[0] / 5  # first-order convergence
    measure("relaxation_time_k1_k2", [got[0][0], got[1][0]])
    rng = np.random.default_rng(0)
    for _ in range(5):
        r = rng.dirichlet(np.ones(8))
        assert abs(pl_kl_loss(r, q, 3, 3) - kl(r, q)) <= 1e-12  # k = N: C_AT = 1 exactly
    rejects(
        lambda: pl_kl_loss(np.ones(4) / 4, q, 3, 1),
        r"r must be a probability vector over the 2\^N = 8 states",
    )


@pytest.mark.claim("mple.thm4.1.4", tier="exact", control=True)
def test_tensorization_control_other_directions() -> None:
    # the limit 1/gap is attained only along the slowest direction: random directions give clearly less
    q = MODEL3.probs()
    relax, _ = _slowest_direction(block_dynamics(MODEL3, 1), q)
    rng = np.random.default_rng(1)
    for _ in range(5):
        f = rng.normal(size=8)
        r = q * (1 + 1e-3 * f)
        assert tensorization_ratio(r / r.sum(), q, 3, 1) < relax - 0.5


# ------------------------------------------------------------------------------------------------ Prop 4.3.2
GRID = list(itertools.product((-0.5, 0.0, 0.5), (-0.5, 0.0, 0.5), (-0.5, 0.0, 0.5, 1.0)))
LAWS = np.array([IsingModel(np.array([a, b]), np.array([[0, j], [j, 0]])).probs() for a, b, j in GRID])
TRUTH = IsingModel(np.array([0.4, 0.1]), np.array([[0, 1.6], [1.6, 0]])).probs()  # off the grid: misspecified
MASKS2 = [(0,), (1,), (0, 1)]


@pytest.mark.claim("mple.thm4.1.4", tier="exact")
def test_prop_4_3_2_conditional_kl_in_0_ln_inv_beta(measure) -> None:
    # for the class's support margin beta every conditional KL of an empirical law against a member lies in
    # [0, ln 1/beta], and the upper end is approached (an empirical law concentrated on the least likely state)
    beta = support_margin(LAWS, 2, MASKS2)
    measure("beta_grid", beta)
    rng = np.random.default_rng(2)
    worst = 0.0
    for p_tilde in [rng.multinomial(20, TRUTH) / 20 for _ in range(20)] + [np.eye(4)[i] for i in range(4)]:
        for q in LAWS:
            for K in MASKS2:
                c = conditional_kl(p_tilde, q, 2, K)
                assert c.min() >= -1e-15 and c.max() <= math.log(1 / beta) + 1e-12
                worst = max(worst, c.max())
    measure("max_conditional_kl_over_ln_inv_beta", worst / math.log(1 / beta))
    assert worst >= 0.9 * math.log(1 / beta)
    rejects(lambda: conditional_kl(np.full(4, 0.3), LAWS[0], 2, (0,)), r"^r must be a probability vector")


@pytest.mark.claim("mple.thm4.1.4", tier="exact")
def test_conditional_kl_in_closed_form_from_exact_rationals() -> None:
    # N = 2, K = {0}: r uniform, q = (1, 3, 3, 1)/8 in product order; given x_1 the conditional of x_0 is (1/2, 1/2)
    # under r and (1/4, 3/4) or (3/4, 1/4) under q, so every state's KL is (1/2) ln(4/3); laws given as Fractions
    # are read as floats (one float64 rounding: 1e-15)
    r, q = [F(1, 4)] * 4, [F(1, 8), F(3, 8), F(3, 8), F(1, 8)]
    for laws in ((r, q), ([float(v) for v in r], [float(v) for v in q])):
        c = conditional_kl(*laws, 2, (0,))
        assert c.dtype == np.float64 and np.abs(c - 0.5 * math.log(4 / 3)).max() < 1e-15


@pytest.mark.claim("mple.thm4.1.4", tier="exact", control=True)
def test_prop_4_3_2_control_margin_of_the_truth_only() -> None:
    # Assumption 4.1.3 is over the whole class: the margin of the data law alone (here uniform) does not bound the KLs
    beta_truth = support_margin([np.full(4, 0.25)], 2, MASKS2)
    worst = max(conditional_kl(np.eye(4)[i], q, 2, K).max() for i in range(4) for q in LAWS for K in MASKS2)
    assert worst > math.log(1 / beta_truth)


# ------------------------------------------------------------------------------------------------ Lemma 4.3.6
P4 = [F(1, 8), F(1, 4), F(1, 4), F(3, 8)]


@pytest.mark.claim("mple.thm4.1.4", tier="exact")
def test_lemma_4_3_6_exact_multinomial(measure) -> None:
    # n = 16 draws from a 4-state law: Pr(TV(p_tilde, p) >= sqrt(|Omega|^{3N} / (16 delta n))) summed exactly over
    # all 969 count vectors is <= delta (Chebyshev + union bound: very loose)
    tails = []
    for delta in (F(1, 2), F(9, 10)):
        thr = F(tv_bound_lemma436(4, float(delta), 16)).limit_denominator(10**9)
        tail = empirical_tv_tail(P4, 16, thr)
        tails.append(float(tail))
        assert tail <= delta
    measure("tail_delta_half_and_0.9", tails)
    assert empirical_tv_tail(P4, 16, F(1, 10)) > F(4, 5)  # the empirical law is typically 0.1 away in TV
    rejects(lambda: tv_bound_lemma436(4, 1.0, 16), r"need 0 < delta < 1 and n >= 1")


@pytest.mark.claim("mple.thm4.1.4", tier="exact", control=True)
def test_lemma_4_3_6_control_masks_for_sequences() -> None:
    # the proof's Chebyshev step writes m (masks per sequence) for n: with m = 100 n the threshold is 10x smaller
    # and the same verdict fails
    delta = F(1, 2)
    thr = F(tv_bound_lemma436(4, float(delta), 1600)).limit_denominator(10**9)
    assert empirical_tv_tail(P4, 16, thr) > delta


# ------------------------------------------------------------------------------------------------ the whole bound
C_AT_LOWER = np.array(
    [
        1 / block_dynamics(IsingModel(np.array([a, b]), np.array([[0, j], [j, 0]])), 1).spectral_gap()
        for a, b, j in GRID
    ]
)  # 1/gap <= C_AT: checking the bound with this lower bound is stronger than the theorem


def _draws(n: int, m: int, reps: int) -> list[dict[str, float]]:
    return [
        simulate_tv_bound(LAWS, TRUTH, 2, 1, np.random.default_rng(s), n=n, m=m, delta=0.1, C_AT=C_AT_LOWER)
        for s in range(reps)
    ]


@pytest.mark.claim("mple.thm4.1.4", tier="property")
def test_theorem_4_1_4_simulated_at_N2(measure) -> None:
    # N = 2, 1-PL masks, a 36-member grid class (C_eps = 36, eps -> 0), misspecified truth, delta = 0.1,
    # n = 10^5 sequences, m = 10^9 masks each (mask counts drawn as multinomials), seeds 0..19: the bound holds in
    # every draw (the theorem allows a delta share of failures) and is not vacuous (right side < 1)
    out = _draws(10**5, 10**9, 20)
    tv, rhs = np.array([o["tv"] for o in out]), np.array([o["rhs"] for o in out])
    measure("tv_and_median_rhs", [float(tv.max()), float(np.median(rhs))])
    assert (tv < rhs).mean() >= 0.9 and rhs.max() < 1 and tv.min() > 0.01
    # the reported margin is the class's over the 1-PL masks (0,), (1,) (Assumption 4.1.3), the same in every draw
    assert all(o["beta"] == support_margin(LAWS, 2, [(0,), (1,)]) for o in out)


@pytest.mark.claim("mple.thm4.1.4", tier="property", control=True)
def test_theorem_4_1_4_control_without_the_loss_term(measure) -> None:
    # without L_hat(theta_hat) the right side would promise consistency; under misspecification it fails once n and
    # m are large (n = 10^9, m = 10^15), while the full bound still holds
    out = _draws(10**9, 10**15, 5)
    measure("tv_rhs_rhs_without_loss", [out[0]["tv"], out[0]["rhs"], out[0]["rhs_without_loss"]])
    assert all(o["tv"] >= o["rhs_without_loss"] for o in out) and all(o["tv"] < o["rhs"] for o in out)
