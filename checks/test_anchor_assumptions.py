"""Claim checks of the anchor paper's assumptions and Definition 2 (``002_530e12373cc142da.txt``, Asm 1-3 of §2,
Asm 4-7 and Def 2 of §5.1-5.2): each library quantity against a from-scratch computation of the printed formula on
the documents' constructions (Thm 1's linear head, the Thm 3 instance of ``anchor_recipe``), with the misreadings
pinned apart, and a violating instance that the library's validator names."""

from __future__ import annotations

import functools
import itertools
import math
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from theorylab.representations import (
    AnchoredHead,
    LinearHead,
    LogLinearLM,
    anchor_recipe,
    perturbed_student,
    thm3_quantities,
)
from theorylab.representations.assumptions import (
    anchor_error,
    bulk_probability,
    check_anchor_error,
    check_bulk_disjoint,
    downstream_margin,
    normalized_margin_of,
    shift_mu,
    sparse_coefficients,
    words_of_interest,
)
from theorylab.testing import rejects, trivial

# Float tolerance: every quantity below is a min / max / ratio of O(1) numbers computed in float64 from sums of at
# most 200 exponentials of logits <= 6; round-off is below 1e-13, so 1e-12 separates round-off from any misreading
# (the misreadings below differ by >= 1e-2).
TOL = 1e-12


@functools.lru_cache(maxsize=2)
def _recipe(a=(1.0, -1.0)):
    """The Thm 3 instance with 400 contexts (cached: it is not modified)."""
    return anchor_recipe(n_contexts=400, a=a, seed=0)


def _integer_lm() -> LogLinearLM:
    """5 words, d = 4, integer contexts and atoms (logits are exact in float64)."""
    atoms = np.array([[1, 0, 2, 0], [0, 1, -1, 1], [2, 1, 0, 0], [0, 0, 1, -2], [1, 1, 1, 1]], float)
    contexts = np.array([[1, 2, 0, -1], [0, -1, 1, 2], [3, 0, -2, 1]], float)
    return LogLinearLM(contexts, atoms)


# ------------------------------------------------------------------------------------------------ Asm 1
@pytest.mark.claim("anchor.asm1", tier="exact")
def test_asm1_linear_head_is_a_sparse_combination_of_teacher_atoms() -> None:
    # f* = <v*_{-i}, u*> with u* = 3 v*_1 - 2 v*_2 (the document's words 1, 2 = indices 0, 1): Thm 1's head
    lm, c = _integer_lm(), np.array([3.0, -2.0])
    u_star = c @ lm.atoms[:2]
    brute = np.array([sum(float(h[d]) * float(u_star[d]) for d in range(4)) for h in lm.contexts])
    assert np.array_equal(LinearHead(c)(lm), brute)
    assert np.abs(sparse_coefficients(u_star, lm.atoms, 2) - c).max() <= TOL
    # 1-based misreading: words 2..k+1 give another head on the same contexts
    assert np.abs(lm.contexts @ (c @ lm.atoms[1:3]) - brute).min() >= 1.0


@pytest.mark.claim("anchor.asm1", tier="exact", control=True)
def test_asm1_control_u_outside_the_span_is_named() -> None:
    lm = _integer_lm()
    rejects(lambda: sparse_coefficients(np.array([0.0, 0.0, 0.0, 1.0]), lm.atoms, 2), r"Assumption 1 fails")
    rejects(lambda: sparse_coefficients(np.ones(4), lm.atoms, 0), r"k must lie in \[1, 5\]")


# ------------------------------------------------------------------------------------------------ Asm 2
def _laws(n: int, q: int) -> list[tuple[Fraction, ...]]:
    return [
        tuple(Fraction(a, q) for a in c) for c in itertools.product(range(q + 1), repeat=n) if sum(c) == q
    ]


@pytest.mark.claim("anchor.asm2", tier="exact")
def test_asm2_mu_is_min_ratio_at_most_one_and_one_iff_equal(measure) -> None:
    laws = _laws(3, 3)  # every law on 3 contexts with probabilities in thirds: 10 laws, 100 pairs
    named = 0
    for pre, ds in itertools.product(laws, laws):
        mu = min(p / d for p, d in zip(pre, ds, strict=True) if d > 0)  # the printed definition, exactly
        assert mu <= 1 and ((mu == 1) == (pre == ds))
        if mu == 0:
            named += 1
            rejects(lambda pre=pre, ds=ds: shift_mu(pre, ds), r"Assumption 2 fails")
        else:
            assert abs(shift_mu([float(p) for p in pre], [float(d) for d in ds]) - float(mu)) <= TOL
    assert named == 63  # pairs with a downstream context of pre-training probability 0
    # the Thm 3 instance: uniform pre-training, uniform downstream on |h_1| >= gamma: mu = #DS / N exactly
    r = _recipe()
    n_ds = int(np.count_nonzero(r.ds_weights))
    mu = shift_mu(r.teacher.weights, r.ds_weights)
    assert abs(mu - n_ds / 400) <= TOL and abs(r.evaluate(r.teacher).mu - mu) <= TOL
    measure("mu_recipe_400", mu)


@pytest.mark.claim("anchor.asm2", tier="exact", control=True)
def test_asm2_control_inverted_ratio() -> None:
    # the misreading p_DS / p_pre is N / #DS > 1 on the same instance: outside (0, 1], rejected by the same verdict
    r = _recipe()
    on = r.ds_weights > 0
    inverted = float(np.min(r.ds_weights[on] / r.teacher.weights[on]))
    assert not 0 < inverted <= 1
    rejects(lambda: shift_mu([0.5, 0.5, 0.0], [0.0, 0.5, 0.5]), r"Assumption 2 fails")


# ------------------------------------------------------------------------------------------------ Asm 3
@pytest.mark.claim("anchor.asm3", tier="exact")
def test_asm3_margin_of_the_thm3_instance(measure) -> None:
    # a* = (1, -1), b* = 0, exact teacher anchor: f* = relu(h_1) - relu(-h_1) = h_1, labels sign(h_1)
    r = _recipe()
    f_star = r.teacher_head(r.teacher)
    h1 = r.teacher.contexts[:, 0]
    assert np.abs(f_star - h1).max() <= TOL
    labels = np.where(h1 > 0, 1, -1)
    brute = min(abs(float(x)) for x, w in zip(h1, r.ds_weights, strict=True) if w > 0)
    gamma = downstream_margin(f_star, labels, r.ds_weights)
    assert abs(gamma - brute) <= TOL and abs(r.evaluate(r.teacher).gamma - gamma) <= TOL and gamma >= 0.5
    measure("gamma_recipe_400", gamma)


@pytest.mark.claim("anchor.asm3", tier="exact", control=True)
def test_asm3_control_a_mislabelled_context_is_named() -> None:
    r = _recipe()
    f_star = r.teacher_head(r.teacher)
    labels = np.where(f_star > 0, 1, -1)
    labels[int(np.flatnonzero(r.ds_weights)[0])] *= -1
    rejects(lambda: downstream_margin(f_star, labels, r.ds_weights), r"Assumption 3 fails")


# ---------------------------------------------------------------------------------------------- Asm 4-5
def _full_head(lm: LogLinearLM, a_full, b_full, v0) -> np.ndarray:
    """f*(x) = sum over the whole vocabulary of a_j relu(<h, v_j - v_0> - b_j), by loops."""
    out = []
    for h in lm.contexts:
        s = 0.0
        for j in range(lm.n_words):
            s += a_full[j] * max(float(h @ (lm.atoms[j] - v0)) - b_full[j], 0.0)
        out.append(s)
    return np.array(out)


@pytest.mark.claim("anchor.asm4_5", tier="exact")
def test_asm4_5_words_of_interest_relabelled_first_and_a_disjoint_bulk() -> None:
    rng = np.random.default_rng(4)
    lm = LogLinearLM(rng.normal(size=(30, 5)), rng.normal(size=(10, 5)))
    a_full, b_full = np.zeros(10), np.zeros(10)
    a_full[[3, 7]], b_full[[3, 7]] = (1.5, -0.5), (0.2, -0.3)
    v0 = rng.normal(size=5)
    f_star = _full_head(lm, a_full, b_full, v0)
    idx = words_of_interest(a_full)
    assert idx.tolist() == [3, 7]
    perm = np.concatenate([idx, np.setdiff1d(np.arange(10), idx)])  # WLOG: words of interest first
    relabelled = LogLinearLM(lm.contexts, lm.atoms[perm])
    head = AnchoredHead(a_full[idx], b_full[idx], v0)
    assert np.abs(head(relabelled) - f_star).max() <= TOL
    moved = lm.atoms.copy()
    moved[[0, 5, 9]] += 3.0  # atoms outside the words of interest: f* does not move
    assert np.array_equal(_full_head(LogLinearLM(lm.contexts, moved), a_full, b_full, v0), f_star)
    # Asm 5 on the Thm 3 instance: bulk = words 2..n-1, words of interest 0, 1
    r = _recipe()
    assert check_bulk_disjoint(r.bulk, 2).tolist() == list(range(2, 200))


@pytest.mark.claim("anchor.asm4_5", tier="exact", control=True)
def test_asm4_5_control() -> None:
    rng = np.random.default_rng(4)
    lm = LogLinearLM(rng.normal(size=(30, 5)), rng.normal(size=(10, 5)))
    a_full, b_full, v0 = np.zeros(10), np.zeros(10), rng.normal(size=5)
    a_full[[3, 7]] = (1.5, -0.5)
    moved = lm.atoms.copy()
    moved[3] += 3.0  # a word of interest: f* moves
    assert (
        np.abs(
            _full_head(LogLinearLM(lm.contexts, moved), a_full, b_full, v0)
            - _full_head(lm, a_full, b_full, v0)
        ).max()
        > 0.1
    )
    rejects(lambda: words_of_interest(np.zeros(4)), r"Assumption 4: f\* reads no word")
    r = _recipe()
    bad = np.arange(1, 200)  # the bulk holds word 1, a word of interest
    rejects(lambda: check_bulk_disjoint(bad, 2), r"Assumption 5: the bulk must not contain")
    t, h = r.teacher, r.teacher_head
    rejects(
        lambda: thm3_quantities(t, t, h, h, bad, r.ds_weights), r"Assumption 5: the bulk must not contain"
    )


# ---------------------------------------------------------------------------------------------- Asm 6-7
@pytest.mark.claim("anchor.asm6_7", tier="exact")
def test_asm6_7_bulk_probability_and_anchor_error_of_the_thm3_instance(measure) -> None:
    r = _recipe()
    t = r.teacher
    z = t.contexts @ t.atoms.T
    ratios = [float(np.exp(row[2:]).sum() / np.exp(row).sum()) for row in z]  # Z*_bulk / Z*, plain sums
    # bulk logits are 0 and the two special logits log 198 +- h_1: Z*_bulk / Z* = 1 / (1 + 2 cosh h_1)
    closed = 1 / (1 + 2 * math.cosh(float(np.abs(t.contexts[:, 0]).max())))
    p_b = bulk_probability(t, r.bulk)
    assert (
        abs(min(ratios) - closed) <= TOL and abs(p_b - closed) <= TOL and abs(r.evaluate(t).p_b - p_b) <= TOL
    )
    assert abs(float(np.mean(ratios)) - p_b) > 1e-2  # the mean over contexts is another number
    bulk_probability(t, r.bulk, p_b=closed * (1 - 1e-9))
    # Asm 7: the teacher's anchor <h, v0*> = log 198 = log Z*_bulk exactly; a perturbed student refit by least
    # squares has a small error, and eps_b <= gamma / (4 k max|a*|) holds
    assert anchor_error(t, r.teacher_head.anchors(t), r.bulk) <= TOL
    s = perturbed_student(r, 3e-4, np.random.default_rng(1))
    sh = r.student_head(s)
    eps_b = max(anchor_error(t, r.teacher_head.anchors(t), r.bulk), anchor_error(s, sh.anchors(s), r.bulk))
    q = r.evaluate(s, sh)
    assert abs(q.eps_b - eps_b) <= TOL and 0 < eps_b <= check_anchor_error(eps_b, q.gamma, r.a)
    measure("p_b_recipe_400", p_b)
    measure("eps_b_student_sigma3e-4", eps_b)


@pytest.mark.claim("anchor.asm6_7", tier="exact", control=True)
def test_asm6_7_control() -> None:
    r = _recipe()
    t = r.teacher
    closed = 1 / (1 + 2 * math.cosh(float(np.abs(t.contexts[:, 0]).max())))
    rejects(lambda: bulk_probability(t, r.bulk, p_b=closed + 1e-3), r"Assumption 6 fails")
    # a per-context shift of the student's logits (same probabilities) scored with the teacher's fixed anchor:
    # the anchor error is max |tau| and Asm 7 is named
    tau = np.linspace(-1.0, 1.0, t.contexts.shape[0])
    s = t.shift_contexts(tau)
    eps_b = anchor_error(s, r.teacher_head.anchors(t), r.bulk)
    assert abs(eps_b - 1.0) <= TOL
    rejects(lambda: check_anchor_error(eps_b, 0.5, r.a), r"Assumption 7 fails")


# ------------------------------------------------------------------------------------------------ Def 2
def _gamma_brute(z, a, b) -> float:
    return min(abs(sum(a[j] * max(row[j] - b[j], 0.0) for j in range(len(a)))) for row in z)


@pytest.mark.claim("anchor.def2", tier="exact")
def test_def2_normalized_margin_pinned(measure) -> None:
    # Gamma = gamma / (k max|a*|): with a* = (2, -1/2) on the Thm 3 instance, gamma / 4; the misreadings
    # gamma / sum|a*| (= gamma / 2.5), gamma / max|a*| (no k: gamma / 2) and gamma / (k min|a*|) (= gamma) differ
    r = _recipe(a=(2.0, -0.5))
    t = r.teacher
    z = t.contexts @ t.atoms[:2].T - r.teacher_head.anchors(t)[:, None]
    on = r.ds_weights > 0
    gamma = _gamma_brute(z[on], r.a, r.b)
    Gamma = normalized_margin_of(gamma, r.a)
    assert abs(Gamma - gamma / 4) <= TOL and abs(r.evaluate(t).Gamma - Gamma) <= TOL
    for wrong in (gamma / 2.5, gamma / 2, gamma):
        assert abs(wrong - Gamma) >= 0.05
    measure("Gamma_a_2_-0.5", Gamma)
    rejects(lambda: normalized_margin_of(0.5, [0.0, 0.0]), r"a must be a finite, non-zero vector")


@pytest.mark.claim("anchor.def2", tier="exact", control=True)
def test_def2_control_unnormalised_margin_is_not_invariant() -> None:
    # the text's reason for Def 2: duplicating the k terms doubles gamma; Gamma is unchanged, gamma / max|a*| is not
    z, a, b = np.array([[1.0, 0.25], [-0.5, 1.5]]), np.array([1.0, -2.0]), np.zeros(2)
    g1, g2 = _gamma_brute(z, a, b), _gamma_brute(np.hstack([z, z]), np.tile(a, 2), np.tile(b, 2))
    assert g2 == 2 * g1 and normalized_margin_of(g2, np.tile(a, 2)) == normalized_margin_of(g1, a)
    assert g2 / 2.0 != g1 / 2.0  # gamma / max|a*| doubles


@given(seed=st.integers(0, 2**32 - 1), r=st.integers(2, 4), log_c=st.floats(-3, 3))
@settings(deadline=None, max_examples=50)
@pytest.mark.claim("anchor.def2", tier="property")
def test_def2_invariant_to_scaling_and_duplicating_terms(seed: int, r: int, log_c: float) -> None:
    rng = np.random.default_rng(seed)
    k = int(rng.integers(1, 5))
    z, a, b = rng.normal(2.5, 1.0, size=(5, k)), rng.normal(size=k), rng.normal(scale=0.5, size=k)
    gamma = _gamma_brute(z, a, b)
    if trivial(bool(gamma == 0)):  # a context with every unit off: gamma = Gamma = 0 whatever the scaling
        return
    c = math.exp(log_c)
    scaled = _gamma_brute(np.tile(z, r), np.tile(c * a, r), np.tile(b, r))
    assert abs(scaled - r * c * gamma) <= 1e-12 * r * c * gamma * k * r
    base = normalized_margin_of(gamma, a)
    assert abs(normalized_margin_of(scaled, np.tile(c * a, r)) - base) <= 1e-12 * base * k * r
