"""Claim checks of the anchor paper's auxiliary lemmas (``002_530e12373cc142da.txt``, App. D, Lemmas 2-5)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from theorylab.representations.anchor_lemmas import (
    active_set,
    deltas,
    lemma3_bound,
    lemma4_bound,
    lemma5_bound,
    positive_margin,
    random_instance,
)
from theorylab.testing import rejects, trivial


def _margin_instance(seed: int, k: int):
    """Random (a*, u*, u) with the misclassification premise ``positive_margin >= gamma/2`` (gamma set to it)."""
    rng = np.random.default_rng(seed)
    a = rng.normal(size=k) + 1.0  # mostly positive output weights (negative ones play no role here)
    us = rng.normal(size=k) + 1.5  # mostly active teacher neurons
    u = us - rng.exponential(1.5, size=k) + rng.normal(scale=0.3, size=k)  # mostly a student that falls short
    return a, us, u, 2 * positive_margin(a, us, u)


# ------------------------------------------------------------------------------------------------ Lemmas 2-3
@pytest.mark.claim("anchor.lem2", tier="exact")
@pytest.mark.claim("anchor.lem3", tier="exact")
def test_lemmas_2_3_exact_instance() -> None:
    # a* = (2, 1, -1), u* = (1, 0.5, 3), u = (0.25, 1, -1): Delta = (0.75, -0.5, 3), S = {0}; the positive-a margin
    # is 2 (1 - 0.25) + 1 (0.5 - 1) = 1 = gamma/2 with gamma = 2; Lemma 3: sum_S Delta = 0.75 >= 2 / (2 * 2) = 0.5
    a, us, u = np.array([2.0, 1.0, -1.0]), np.array([1.0, 0.5, 3.0]), np.array([0.25, 1.0, -1.0])
    assert deltas(us, u).tolist() == [0.75, -0.5, 3.0] and positive_margin(a, us, u) == 1.0
    S = active_set(a, us, u)
    assert S.tolist() == [True, False, False]
    assert deltas(us, u)[S].sum() == 0.75 >= lemma3_bound(a, S, 2.0) == 0.5
    rejects(lambda: lemma3_bound(a, np.zeros(3, dtype=bool), 2.0), r"S\(x\) is empty")


@pytest.mark.claim("anchor.lem2", tier="exact", control=True)
@pytest.mark.claim("anchor.lem3", tier="exact", control=True)
def test_lemmas_2_3_control() -> None:
    # without the premise S can be empty (a student whose positive neurons all exceed the teacher's); and the
    # bound with min_S a* instead of max_S a* fails on an instance with two active words
    a, us, u = np.array([1.0, 2.0]), np.array([0.5, 0.2]), np.array([1.0, 1.0])
    assert positive_margin(a, us, u) < 0 and not active_set(a, us, u).any()
    a, us, u = np.array([4.0, 0.5]), np.array([1.0, 1.0]), np.array([0.0, 0.0])  # margin 5 = gamma/2
    S = active_set(a, us, u)
    gamma = 2 * positive_margin(a, us, u)
    assert deltas(us, u)[S].sum() >= lemma3_bound(a, S, gamma)  # 2 >= 10/8
    assert deltas(us, u)[S].sum() < gamma / (2 * a[S].min())  # 2 < 10


@given(seed=st.integers(0, 2**32 - 1), k=st.integers(2, 8))
@settings(deadline=None)
@pytest.mark.claim("anchor.lem2", tier="property")
@pytest.mark.claim("anchor.lem3", tier="property")
def test_lemmas_2_3_property(seed: int, k: int) -> None:
    a, us, u, gamma = _margin_instance(seed, k)
    if trivial(bool(gamma <= 0)):  # the premise fails: the lemmas say nothing
        return
    S = active_set(a, us, u)
    assert S.any()
    assert deltas(us, u)[S].sum() >= lemma3_bound(a, S, gamma) * (1 - 1e-12)


# ------------------------------------------------------------------------------------------------ Lemma 4
@pytest.mark.claim("anchor.lem4", tier="exact")
def test_lemma4_tight_when_the_student_underestimates_the_bulk() -> None:
    # A = A* e^{-eps} and p_b = A*: |A* - A| = A*(1 - e^{-eps}) = the bound (attained)
    for A_star, eps in ((0.5, 0.3), (0.9, 2.0), (0.2, 1e-3)):
        A = A_star * math.exp(-eps)
        assert abs(abs(A_star - A) - lemma4_bound(A_star, A, A_star)) <= 1e-15
    rejects(lambda: lemma4_bound(0.3, 0.5, 0.4), r"need 0 < p_b <= A\* <= 1 and 0 < A <= 1")


@pytest.mark.claim("anchor.lem4", tier="exact", control=True)
def test_lemma4_control_other_side() -> None:
    # the bound p_b (e^{eps_p} - 1) (the overestimating side) fails when the student underestimates the bulk
    A_star, A = 0.5, 0.5 * math.exp(-0.7)
    assert abs(A_star - A) < A_star * (math.exp(0.7) - 1)


@given(seed=st.integers(0, 2**32 - 1))
@settings(deadline=None)
@pytest.mark.claim("anchor.lem4", tier="property")
def test_lemma4_property(seed: int) -> None:
    q = random_instance(np.random.default_rng(seed))
    trivial(bool(q["eps_p"] < 1e-9))  # equal bulk probabilities: both sides 0
    assert (
        abs(q["eps_p"] - abs(math.log(q["A_star"]) - math.log(q["A"]))) <= 1e-12
    )  # eps_p as Lemma 4 defines it
    assert abs(q["A_star"] - q["A"]) >= lemma4_bound(q["A_star"], q["A"], q["A_star"]) * (1 - 1e-12)


# ------------------------------------------------------------------------------------------------ Lemma 5
def _tight_instance(b: float) -> dict[str, float]:
    """Exact anchors (eps_b = 0) and equal bulk probabilities (eps_p = 0): a bulk of two words at logit 0 for both
    models, teacher logits (2, 0) and student logits (log 2 + b, log(e^2 + 1 - 2 e^b)) on the two special words, so
    Z = Z*; the student's neuron for word 0 sits exactly at its threshold, where the bound is attained."""
    L = math.log(2) + b
    ls = np.array([2.0, 0.0, 0.0, 0.0])
    l = np.array([L, math.log(math.exp(2) + 1 - 2 * math.exp(b)), 0.0, 0.0])  # noqa: E741
    Zs, Z = np.exp(ls).sum(), np.exp(l).sum()
    delta = (2.0 - math.log(2) - b) - max(L - math.log(2) - b, 0.0)
    return {
        "lhs": abs(math.exp(2.0) / Zs - math.exp(L) / Z),
        "p_b": 2 / Zs,
        "eps_p": abs(math.log(2 / Zs) - math.log(2 / Z)),
        "delta": delta,
        "Z_gap": abs(Zs - Z),
    }


@pytest.mark.claim("anchor.lem5", tier="exact")
def test_lemma5_attained_at_the_threshold(measure) -> None:
    ratios = []
    for b in (-0.5, 0.0, 0.3):
        q = _tight_instance(b)
        assert q["Z_gap"] <= 1e-12 and q["eps_p"] <= 1e-15
        bound = lemma5_bound(b, 0.0, q["eps_p"], q["p_b"], q["delta"])
        ratios.append(q["lhs"] / bound)
        assert abs(q["lhs"] - bound) <= 1e-12 * q["lhs"]
    measure("lhs_over_bound_b", ratios)


@pytest.mark.claim("anchor.lem5", tier="exact", control=True)
def test_lemma5_control_without_p_b() -> None:
    # dropping the bulk probability p_b < 1 from the bound makes it fail on the same tight instances
    for b in (-0.5, 0.0, 0.3):
        q = _tight_instance(b)
        assert q["lhs"] < lemma5_bound(b, 0.0, q["eps_p"], 1.0, q["delta"])


@given(seed=st.integers(0, 2**32 - 1))
@settings(deadline=None)
@pytest.mark.claim("anchor.lem5", tier="property")
def test_lemma5_property(seed: int) -> None:
    q = random_instance(np.random.default_rng(seed), boost=4.0)
    active = q["delta"] > 0
    if trivial(not bool(active.any())):  # no word with Delta_j > 0: nothing to check
        return
    for j in np.flatnonzero(active):
        bound = lemma5_bound(q["b_star"][j], q["eps_b"], q["eps_p"], q["A_star"], q["delta"][j])
        assert abs(q["p_star"][j] - q["p"][j]) >= bound * (1 - 1e-12)
