"""Claim checks of the topic family: closed-form block-wise optima of attention and values (Li thesis
§2.1)."""

from __future__ import annotations

from fractions import Fraction as F
from functools import cache

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from theorylab.attention.topic import stage1 as tp
from theorylab.attention.topic import stage2 as s2
from theorylab.attention.topic.counterexamples import TABLE_2_1, TABLE_2_1_SD, TABLE_2_2, separation
from theorylab.attention.topic.symbolic import (
    block_prediction_residual,
    derive_block_values,
    prop211_total_mass,
)
from theorylab.counterexamples import generate
from theorylab.languages.topic import TopicModel, empirical_masked_frequencies, frequency_vectors
from theorylab.strategies.topic import masking_rates, optimal_value_matrices, topic_models
from theorylab.testing import rejects, trivial

# Tolerances. Closed forms vs pinv/moments: entries are O(1) sums of <= V^2 float products with V <= 601, so
# round-off is ~1e-15 * V; 1e-12 leaves margin. Losses are O(1) sums of O(V T) terms: 1e-12 likewise.
EXACT_TOL = 1e-12
BERT = (0.15, 0.1, 0.1)

PARAMS = [
    TopicModel(2, 1, 1),
    TopicModel(3, 2, 1),
    TopicModel(4, 3, 2, 0.3, 0.2, 0.5),
    TopicModel(5, 4, 4, 0.05, 0.6, 0.3),
    TopicModel(10, 10, 3),
    TopicModel(20, 10, 7, 0.4, 0.05, 0.05),
    TopicModel(30, 20, 29, 0.15, 0.1, 0.85 - 0.1),
]
EXACT_PARAMS = [
    TopicModel(2, 2, 1, F(3, 20), F(1, 10), F(1, 10)),
    TopicModel(4, 3, 2, F(3, 20), F(1, 10), F(1, 10)),
    TopicModel(5, 2, 3, F(1, 3), F(1, 5), F(3, 5)),
]


@cache
def _pinv(p: TopicModel) -> np.ndarray:
    """The minimum-norm least-squares solution, computed once per parameter set (V = 601 costs ~1 s)."""
    return tp.pinv_value_matrix(p)


# asymptotic regime of Thms 2.1.3/2.1.5 (Assumptions 2.1.3-2.1.4), BERT rates
ASYMPTOTIC = [TopicModel(10**3, 10, 10), TopicModel(10**4, 10, 30), TopicModel(10**5, 10, 100)]


# ------------------------------------------------------------------------------------------ Prop 2.1.1
@pytest.mark.claim("topic.prop2.1.1", tier="exact")
def test_prop211_frequencies_sum_to_one():
    assert prop211_total_mass() == 0
    for p in EXACT_PARAMS:
        f = p.masked_frequencies()
        assert p.v * p.tau * f["present"] + p.v * (p.T - p.tau) * f["absent"] + f["mask"] == 1


@pytest.mark.claim("topic.prop2.1.1", tier="exact", control=True)
def test_prop211_control_dropped_replacement_term():
    # dropping the random-replacement mass p_m p_r / (vT) from p1 breaks the total
    for p in EXACT_PARAMS:
        f = p.masked_frequencies()
        p1_wrong = f["present"] - p.p_m * p.p_r / (p.v * p.T)
        assert p.v * p.tau * p1_wrong + p.v * (p.T - p.tau) * f["absent"] + f["mask"] != 1


def _max_z(estimates: dict, predicted: dict) -> float:
    return max(abs(estimates[k][0] - float(predicted[k])) / estimates[k][1] for k in estimates)


@pytest.mark.claim("topic.prop2.1.1", tier="property", examples=8)
@given(params=topic_models(max_T=5, max_v=4), seed=st.integers(0, 2**31))
def test_prop211_monte_carlo(params, seed):
    trivial(params.v == 1)  # one word per topic
    est = empirical_masked_frequencies(params, np.random.default_rng(seed), 300, 2000)
    # 8 examples x 3 classes: a 5-sigma band has false-alarm probability ~1e-5
    assert _max_z(est, params.masked_frequencies()) < 5


@pytest.mark.claim("topic.prop2.1.1", tier="property", control=True)
def test_prop211_monte_carlo_control(rng):
    p = TopicModel(4, 3, 2, 0.3, 0.2, 0.3)
    wrong = TopicModel(4, 3, 2, 0.3, 0.2, 0.15)  # formula with half the replacement rate
    est = empirical_masked_frequencies(p, rng, 300, 2000)
    assert _max_z(est, wrong.masked_frequencies()) > 5


# The data model has a domain (T >= 2, v >= 1, 1 <= tau <= T, word ids 1..Tv, documents of N >= 1 tokens): the library
# accepts its boundary and rejects what lies just outside with an error whose message names the problem.


@pytest.mark.claim("topic.prop2.1.1", tier="exact")
def test_prop211_data_model_is_defined_exactly_on_its_domain():
    rng = np.random.default_rng(0)
    p = TopicModel(3, 2, 1)
    # word ids 1..Tv carry topics 0..T-1 (ceil(i / v) - 1); 0 ([MASK]) and Tv + 1 have none
    assert p.topic_of(np.array([1, 2, 3, 6])).tolist() == [0, 0, 1, 2]
    for bad in (0, 7, np.array([0, 3]), np.array([3, 7])):
        rejects(lambda bad=bad: p.topic_of(bad), r"word ids must lie in 1\.\.6 \(0 is \[MASK\]")
    rejects(
        lambda: TopicModel(2, 1, 1, p_m="0.1"),
        r"p_m must be a real number \(float or Fraction\), got str",
        TypeError,
    )
    # one-token documents (N = 1) are documents: sampled, and their frequency vector is the token's indicator
    assert p.sample_documents(rng, 4, 1).shape == (4, 1)
    assert np.array_equal(frequency_vectors(np.array([[3], [0]]), p.V), np.eye(p.V)[[3, 0]])
    rejects(lambda: p.sample_documents(rng, 4, 0), r"need n >= 0 documents of length N >= 1, got n=4, N=0")
    rejects(
        lambda: frequency_vectors(np.zeros((2, 0), dtype=np.int64), p.V),
        r"tokens must be an \[n, N\] array with N >= 1",
    )
    # rates given partly as floats: the model computes in floats (only all-Fraction rates are exact)
    mixed = TopicModel(3, 2, 1, F(3, 20), 0.1, F(1, 10))
    y = mixed.word_frequencies(np.array([1]))
    assert not mixed.exact and y.dtype == np.float64
    assert np.abs(y - TopicModel(3, 2, 1, 0.15, 0.1, 0.1).word_frequencies(np.array([1]))).max() < 1e-15


class _UniformsOnBreakpoints:
    """A stand-in for ``numpy.random.Generator`` whose uniforms are given values (0.0 is the smallest value
    ``Generator.random`` returns) and whose Dirichlet draw is a fixed ``theta``."""

    def __init__(self, theta, uniforms):
        self.theta, self.uniforms, self._rng = (
            np.asarray(theta, dtype=float),
            np.asarray(uniforms),
            np.random.default_rng(0),
        )

    def dirichlet(self, alpha, size):
        return np.tile(self.theta, (size, 1))

    def random(self, shape):
        return np.broadcast_to(self.uniforms, shape).copy()

    def integers(self, low, high=None, size=None):
        return self._rng.integers(low, high, size=size)


@pytest.mark.claim("topic.prop2.1.1", tier="exact")
def test_lda_topic_of_a_token_is_the_inverse_cdf_of_its_uniform():
    # LDA tokens (lda_alpha set): topic = F^{-1}(u) = min{t : theta_1 + ... + theta_t > u} for u uniform on [0, 1).
    # On the breakpoints of the CDF (u = 0 and u = a partial sum, both reachable) this is the topic whose interval
    # [F(t-1), F(t)) contains u; a topic of weight 0 (an empty interval, e.g. an underflowed Dirichlet coordinate) is
    # never drawn
    p = TopicModel(4, 3, 2)
    theta = [0.0, 0.5, 0.0, 0.5]
    uniforms = [0.0, 0.25, 0.5, 0.75]
    docs = p.sample_documents(_UniformsOnBreakpoints(theta, uniforms), 3, 4, lda_alpha=0.1)
    assert (p.topic_of(docs) == [1, 1, 3, 3]).all()


# ------------------------------------------------------------------------------------------ population loss
@pytest.mark.claim("topic.derived.poploss", tier="exact")
def test_poploss_three_evaluations_agree_exactly():
    for p in EXACT_PARAMS:
        W = tp.optimal_value_matrix(p)
        assert tp.population_loss(W, p) == tp.minimum_loss(p) == 1 - F(1, p.tau * p.v)
        assert tp.population_loss_moments(W, p) == tp.minimum_loss(p)
        assert tp.population_loss_enumerated(W, p) == tp.minimum_loss(p)
        R = np.array(
            [[F(int(x), 7) for x in row] for row in np.random.default_rng(0).integers(-9, 9, W.shape)]
        )
        assert (
            tp.population_loss(R, p)
            == tp.population_loss_moments(R, p)
            == tp.population_loss_enumerated(R, p)
        )


@pytest.mark.claim("topic.derived.poploss", tier="exact", control=True)
def test_poploss_control_perturbed_matrix_is_worse():
    for p in EXACT_PARAMS:
        W = tp.optimal_value_matrix(p)
        W[1, 2] += F(1, 1000)  # changes one block sum: strictly above the minimum, exactly
        assert tp.population_loss(W, p) > tp.minimum_loss(p)


@pytest.mark.claim("topic.derived.poploss", tier="property")
@given(params=topic_models(max_T=6, max_v=4, sparse=False), seed=st.integers(0, 2**31))
def test_poploss_block_sums_equal_moments(params, seed):
    trivial(params.v == 1)  # one word per topic: block sums are the entries
    W = np.random.default_rng(seed).normal(size=(params.V, params.V))
    a, b = tp.population_loss(W, params), tp.population_loss_moments(W, params)
    assert abs(a - b) <= EXACT_TOL * max(1.0, abs(a))
    assert a >= tp.minimum_loss(params) - EXACT_TOL


@pytest.mark.claim("topic.derived.poploss", tier="property", control=True)
@given(params=topic_models(max_T=6, max_v=4), seed=st.integers(0, 2**31))
def test_poploss_control_wrong_moments_disagree(params, seed):
    trivial(params.v == 1)  # one word per topic
    # the same comparison rejects a loss that forgets the random-replacement offset b (a plausible slip)
    W = np.random.default_rng(seed).normal(size=(params.V, params.V))
    wrong = TopicModel(params.T, params.v, params.tau, params.p_m, params.p_c, params.p_r / 2)
    assert abs(tp.population_loss(W, params) - tp.population_loss_moments(W, wrong)) > 1e-6


# ------------------------------------------------------------------------------------------ Lemma 2.1.1
@pytest.mark.claim("topic.lemma2.1.1", tier="exact")
def test_lemma211_closed_form_and_pinv_are_in_the_family(measure):
    worst = 0.0
    for p in PARAMS:
        if p.tau == p.T:
            continue
        for W in (tp.optimal_value_matrix(p), _pinv(p)):
            report = tp.is_optimal_value_matrix(W, p, tol=1e-10)
            assert report, report.violations
            worst = max(worst, report.max_violation)
    for p in EXACT_PARAMS:  # exact family members with rational u and splits
        u = np.array([F(k - 2, 3) for k in range(p.V)], dtype=object)
        splits = np.empty((p.V, p.T, p.v), dtype=object)
        splits[...] = F(1, p.v)
        if p.v > 1:
            splits[..., 0] += F(2, 5)
            splits[..., 1] -= F(2, 5)
        W = tp.value_matrix_from_family(p, u, splits)
        assert tp.is_optimal_value_matrix(W, p, tol=0)
        assert tp.population_loss(W, p) == tp.minimum_loss(p)
    measure("worst_block_condition_violation", worst)


@pytest.mark.claim("topic.lemma2.1.1", tier="exact", control=True)
def test_lemma211_control_off_family():
    for p in EXACT_PARAMS:
        W = tp.optimal_value_matrix(p)
        W[0, 0] += F(1, 100)  # row 0's [MASK] entry leaves the family
        assert not tp.is_optimal_value_matrix(W, p, tol=0)
        assert tp.population_loss(W, p) > tp.minimum_loss(p)


LEMMA_CONDITIONS = (
    "row0_block_sums",
    "row0_mask_entry",
    "cross_topic_block_sums",
    "same_topic_block_sums",
    "mask_column",
)


def _break_one_condition(W: np.ndarray, p: TopicModel, condition: str, d) -> np.ndarray:
    """``W`` plus a perturbation of size ``d`` that breaks exactly one condition of Lemma 2.1.1: every perturbation
    leaves the solved constants u unchanged (row 0's total block sum and each row's cross-topic total are kept)."""
    W = W.copy()
    v = p.v
    if condition == "row0_block_sums":  # move mass between two topic blocks of row 0
        W[0, 1] += d
        W[0, 1 + v] -= d
    elif condition == "row0_mask_entry":
        W[0, 0] += d
    elif (
        condition == "cross_topic_block_sums"
    ):  # word 1 (topic 0): move mass between its blocks of topics 1, 2
        W[1, 1 + v] += d
        W[1, 1 + 2 * v] -= d
    elif condition == "same_topic_block_sums":
        W[1, 1] += d
    elif condition == "mask_column":
        W[1, 0] += d
    return W


@pytest.mark.claim("topic.lemma2.1.1", tier="exact", control=True)
def test_lemma211_control_each_condition_alone(measure):
    # every condition of the characterisation is needed: a matrix that breaks only that one is not optimal, and the
    # predicate names exactly that condition (a predicate that skipped any one condition would call it optimal)
    for p in EXACT_PARAMS:
        W = tp.optimal_value_matrix(p)
        for condition in LEMMA_CONDITIONS:
            if condition == "cross_topic_block_sums" and p.T < 3:
                continue  # needs two other topics
            bad = _break_one_condition(W, p, condition, F(1, 50))
            report = tp.is_optimal_value_matrix(bad, p, tol=0)
            assert not report
            assert {k for k, g in report.violations.items() if g > 0} == {condition}
            assert tp.population_loss(bad, p) > tp.minimum_loss(p)  # exactly (Fractions)
    # the audit's near miss at the thesis's size: only the cross-topic sums of one row are off, excess loss 1.4e-4
    p = TopicModel(10, 10, 3)
    Syy = tp.second_moments(p)[0]
    l1, l2 = 1 + p.v, 1 + 2 * p.v
    curvature = Syy[l1, l1] + Syy[l2, l2] - 2 * Syy[l1, l2]  # excess loss per unit d^2
    d = float(np.sqrt(1.4e-4 / curvature))
    bad = _break_one_condition(tp.optimal_value_matrix(p), p, "cross_topic_block_sums", d)
    excess = tp.population_loss(bad, p) - tp.minimum_loss(p)
    assert abs(excess - 1.4e-4) < 1e-12
    report = tp.is_optimal_value_matrix(
        bad, p
    )  # default tolerance 1e-9 on block sums; the violation is d ~ 0.05
    assert not report and report.violations["cross_topic_block_sums"] > 1e3 * report.tol
    measure("near_miss_cross_topic_violation", report.violations["cross_topic_block_sums"])


@pytest.mark.claim("topic.lemma2.1.1", tier="exact")
def test_lemma211_erratum_tau_equals_T():
    arrays = generate("topic.lemma2.1.1")
    p = TopicModel(3, 2, 3)
    with pytest.raises(ValueError, match="tau <= T - 1"):
        tp.is_optimal_value_matrix(arrays["W_min_norm"], p)
    assert abs(float(arrays["loss_min_norm"]) - tp.minimum_loss(p)) < EXACT_TOL  # a minimiser ...
    assert float(arrays["block_condition_violation"]) > 1.0  # ... outside the characterised set
    # the erratum's number: the own-topic block sums miss the printed condition by exactly c3 = 1.156 (the same
    # block-condition verdict as is_optimal_value_matrix, with its tau <= T - 1 guard lifted)
    report = tp._block_conditions(arrays["W_min_norm"], p, tp.constants(p).c1, 1e-9, require_sparse=False)
    assert abs(report.violations["same_topic_block_sums"] - float(tp.constants(p).c3)) < EXACT_TOL
    assert np.abs(arrays["W_min_norm"] - arrays["W_printed"]).max() > 0.3


@pytest.mark.claim("topic.lemma2.1.1", tier="property")
@given(params=topic_models(), data=st.data())
def test_lemma211_random_family_members_are_optimal(params, data):
    trivial(params.v == 1)  # one word per topic: the within-block split is forced
    W, u = data.draw(optimal_value_matrices(params))
    report = tp.is_optimal_value_matrix(W, params, tol=1e-9)
    assert report
    assert np.allclose(report.u, u, atol=1e-9)
    assert abs(tp.population_loss(W, params) - tp.minimum_loss(params)) < 1e-10


@pytest.mark.claim("topic.lemma2.1.1", tier="property", control=True)
@given(params=topic_models(), data=st.data(), seed=st.integers(0, 2**31))
def test_lemma211_control_perturbation_outside_family(params, data, seed):
    trivial(params.v == 1)  # one word per topic
    W, _ = data.draw(optimal_value_matrices(params))
    Syy, _ = tp.second_moments(params)
    delta = 1e-2 * np.random.default_rng(seed).normal(size=W.shape)
    excess = float(np.trace(delta @ Syy.astype(float) @ delta.T))  # exact excess loss of W + delta
    assert not tp.is_optimal_value_matrix(W + delta, params, tol=1e-9)
    got = tp.population_loss(W + delta, params) - tp.minimum_loss(params)
    assert got > 0 and abs(got - excess) <= 1e-9 + 1e-8 * excess


# ------------------------------------------------------------------------------------------ Remark 2.1.8
@pytest.mark.claim("topic.remark2.1.8", tier="exact")
def test_remark218_hessian_has_rank_T():
    import sympy

    for p in EXACT_PARAMS:  # the rank in exact rational arithmetic, independent of the float eigen-solver
        Syy = tp.second_moments(p)[0]
        assert sympy.Matrix(Syy.tolist()).rank() == p.T == tp.hessian_rank(p) != 1
    for p in PARAMS:
        if p.tau < p.T and p.V <= 250:
            assert tp.hessian_rank(p) == p.T
    # the stored counterexample is what it says: its Hessian is 2 Sigma_yy of its parameters, its eigenvalues are
    # that matrix's, and its rank (recounted by SVD) is T = 4
    arrays = generate("topic.remark2.1.8")
    p = TopicModel(*(int(arrays[k]) for k in ("T", "v", "tau")))
    H = arrays["hessian_per_row"]
    assert np.abs(H - 2 * tp.second_moments(p)[0]).max() < EXACT_TOL
    assert np.abs(np.sort(arrays["eigenvalues"]) - np.linalg.eigvalsh(H)).max() < EXACT_TOL
    assert int(arrays["rank"]) == np.linalg.matrix_rank(H) == p.T == 4


@pytest.mark.claim("topic.remark2.1.8", tier="exact", control=True)
def test_remark218_control_rank_one_when_tau_equals_T():
    # the same rank computation does return 1 when every document is identical (tau = T)
    assert tp.hessian_rank(TopicModel(4, 3, 4)) == 1


# ------------------------------------------------------------------------------------------ Thm 2.1.2
@pytest.mark.claim("topic.thm2.1.2", tier="exact")
def test_thm212_closed_form_equals_pinv(measure):
    worst = 0.0
    for p in PARAMS:
        if p.tau == p.T:
            continue
        gap = np.abs(tp.optimal_value_matrix(p) - _pinv(p)).max()
        assert gap < EXACT_TOL, (p, gap)
        worst = max(worst, gap)
        assert abs(tp.population_loss(tp.optimal_value_matrix(p), p) - (1 - 1 / (p.tau * p.v))) < EXACT_TOL
    measure("max_abs_closed_form_minus_pinv", worst)


@pytest.mark.claim("topic.thm2.1.2", tier="exact")
def test_thm212_ridge_and_cvxpy_converge_to_closed_form(measure):
    p = TopicModel(3, 2, 1)
    lam = 1e-3
    ridge = tp.ridge_value_matrix(p, lam)
    solved = tp.cvxpy_value_matrix(p, lam)
    # interior-point solver accuracy ~1e-8 relative on an O(1) objective: entries to ~1e-5
    assert np.abs(solved - ridge).max() < 1e-5
    # ridge bias is O(lambda / lambda_min^+(Sigma_yy)); lambda_min^+ ~ 4e-3 here, so lambda = 1e-9 gives ~1e-6
    assert np.abs(tp.ridge_value_matrix(p, 1e-9) - tp.optimal_value_matrix(p)).max() < 1e-5
    measure("cvxpy_minus_ridge", float(np.abs(solved - ridge).max()))


@pytest.mark.claim("topic.thm2.1.2", tier="exact")
def test_thm212_sympy_derivation():
    d = derive_block_values()
    for key in ("w_diff_difference", "w_mask_col_difference", "w_mask_col_simplified_difference"):
        assert d[key] == 0, key
    assert d["contrast_difference"] == 0
    assert block_prediction_residual() == (0, 0, 0)


@pytest.mark.claim("topic.thm2.1.2", tier="exact")
def test_thm212_erratum_c1_exceeds_one():
    arrays = generate("topic.thm2.1.2")
    assert float(arrays["c1"]) > 1  # printed: c1 in (0, 1)
    assert (
        abs(float(arrays["loss_closed_form"]) - float(arrays["loss_minimum"])) < EXACT_TOL
    )  # formula still right


@pytest.mark.claim("topic.thm2.1.2", tier="exact", control=True)
def test_thm212_control_misprinted_contrast():
    # a same-topic value W_diff + c3 (the /v dropped) is rejected by the same pinv comparison
    p = TopicModel(4, 3, 2)
    k = tp.constants(p)
    W = tp.optimal_value_matrix(p)
    W[W == k.w_same] = k.w_diff + k.c3
    assert np.abs(W - _pinv(p)).max() > 0.1


@pytest.mark.claim("topic.thm2.1.2", tier="exact")
def test_thm212_finite_pool_reference_is_the_min_norm_least_squares_fit():
    # the trained tier's reference W_ls: on a finite pool of masked documents, the minimum-norm minimiser of
    # sum_d sum_{j in M_d} |W y_d - x_j|^2 (y_d the masked document's token frequencies, x_j the original word)
    # -- recomputed by numpy's lstsq on the stacked regression, one row per masked position
    from theorylab.attention.topic.model import least_squares_value_matrix
    from theorylab.languages.topic import TopicMLMTask

    p = TopicModel(3, 2, 1)
    masked, docs, in_m = TopicMLMTask(p, pool=40, pool_length=8, pool_seed=3).pool_arrays()
    assert masked.shape == docs.shape == in_m.shape == (40, 8) and in_m.any()
    assert np.array_equal(masked[~in_m], docs[~in_m]) and (p.topic_of(docs) >= 0).all()
    y = frequency_vectors(masked, p.V)
    d, j = np.nonzero(in_m)
    W_T = np.linalg.lstsq(y[d], np.eye(p.V)[docs[d, j]], rcond=None)[0]  # min-norm solution of Y W^T = X
    # both are pseudo-inverse solutions of a 7 x 7 system with O(1) entries: agreement to ~1e-14
    assert np.abs(least_squares_value_matrix(masked, docs, in_m, p.V) - W_T.T).max() < 1e-10


@pytest.mark.claim("topic.thm2.1.2", tier="exact", control=True)
def test_thm212_stage1_verdict_accepts_the_optimum_and_rejects_the_diagonal_optimum():
    # the trained tier's verdict read on closed forms: W* against itself passes with zero gaps; the diagonal optimum
    # D^V has the full contrast c3 (gap 0) but no off-diagonal same-topic mass (gap exactly 1), so it fails
    from theorylab.attention.topic.model import stage1_verdict

    p = TopicModel(4, 3, 2)
    W = tp.optimal_value_matrix(p)
    same = stage1_verdict(W, W, p)
    assert same["ok"] and same["relative_gap"] == 0 == same["relative_gap_offdiag"]
    assert abs(same["contrast"] - float(tp.constants(p).c3)) < EXACT_TOL
    diagonal = stage1_verdict(tp.diagonal_value_matrix(p), W, p)
    assert not diagonal["ok"] and diagonal["relative_gap"] < EXACT_TOL
    assert abs(diagonal["relative_gap_offdiag"] - 1) < EXACT_TOL and diagonal["contrast_offdiag"] == 0


@pytest.mark.claim("topic.thm2.1.2", tier="property")
@given(params=topic_models(max_T=8, max_v=6, exact=True))
def test_thm212_signs_and_minimum_norm(params):
    trivial(params.v == 1)  # one word per topic: every block is a single entry
    k = tp.constants(params)
    assert k.w_same > 0 > k.w_diff
    assert k.w_mask_col == (k.c2 + 1) / (k.c2**2 + params.T * params.v) > 0
    W = tp.optimal_value_matrix(params)
    V, T, v = params.V, params.T, params.v
    # the printed matrix is a minimiser (exactly) ...
    assert tp.is_optimal_value_matrix(W, params, tol=0)
    # ... and orthogonal to every direction of the optimal set, hence its unique minimum-norm member (the lambda -> 0
    # limit). The directions are the zero-sum redistributions inside a block (W must be constant on each block) and,
    # per row, the u-direction: -c2 on column 0, +1 on every word column.
    blocks = W[:, 1:].reshape(V, T, v)
    assert np.all(blocks == blocks[:, :, :1])
    assert np.all(-k.c2 * W[:, 0] + W[:, 1:].sum(axis=1) == 0)
    assert np.abs(W.astype(float) - tp.pinv_value_matrix(params)).max() < 1e-10


@pytest.mark.claim("topic.thm2.1.2", tier="property", control=True)
@given(params=topic_models(max_T=8, max_v=6))
def test_thm212_control_non_min_norm_member(params):
    trivial(params.v == 1)  # one word per topic
    # another optimal member (u shifted) is optimal but is not the pinv (min-norm) solution
    u = np.full(params.V, 0.3)
    W = tp.value_matrix_from_family(params, u)
    assert tp.is_optimal_value_matrix(W, params, tol=1e-9)
    assert np.abs(W - tp.pinv_value_matrix(params)).max() > 1e-3


# ------------------------------------------------------------------------------------------ Thm 2.1.1
@pytest.mark.claim("topic.thm2.1.1", tier="exact")
def test_thm211_embedding_optima():
    for p in EXACT_PARAMS:
        k = tp.constants(p)
        E = tp.optimal_embedding(p)
        assert tp.is_optimal_embedding(E, p, tol=0)
        assert tp.embedding_loss(E, p) == tp.minimum_loss(p)
        assert sum(E[i, i] for i in range(p.V)) == p.T * k.c3  # trace T c3
        assert np.linalg.matrix_rank(E.astype(float)) == p.T
        D = tp.thesis_example_embedding(p)
        D[0, 0] = 0 * k.c3  # c3 diag(0, 1, ..., 1)
        assert tp.is_optimal_embedding(D, p, tol=0) and tp.embedding_loss(D, p) == tp.minimum_loss(p)


@pytest.mark.claim("topic.thm2.1.1", tier="exact")
def test_thm211_erratum_printed_example_not_optimal(measure):
    arrays = generate("topic.thm2.1.1")
    assert float(arrays["loss_printed"]) > float(arrays["loss_optimal"]) + 1e-3
    for p in EXACT_PARAMS:
        E = tp.thesis_example_embedding(p)
        assert not tp.is_optimal_embedding(E, p, tol=0)
        assert tp.embedding_loss(E, p) > tp.minimum_loss(p)
    measure("loss_c3I_T3_v2_tau1", float(arrays["loss_printed"]))


@pytest.mark.claim("topic.thm2.1.1", tier="exact")
def test_thm211_min_trace_sdp(measure):
    # an interior-point SDP solve (cvxpy/Clarabel) of min tr E over the optimal PSD set; solver accuracy ~1e-8
    for p in (TopicModel(3, 2, 1), TopicModel(4, 3, 2)):
        gap = np.abs(tp.cvxpy_min_trace_embedding(p) - tp.optimal_embedding(p)).max()
        assert gap < 1e-5
        measure(f"sdp_minus_closed_form_T{p.T}_v{p.v}", float(gap))


@pytest.mark.claim("topic.thm2.1.1", tier="exact", control=True)
def test_thm211_control_non_psd_member():
    # a member of the block-sum family that is not PSD cannot be W^E^T W^E: rejected
    p = EXACT_PARAMS[1]
    E = tp.optimal_embedding(p)
    E[1, 1] -= 1
    E[1, 2] += 1
    E[2, 1] += 1
    E[2, 2] -= 1
    report = tp.is_optimal_embedding(E, p, tol=0)
    assert not report and report.violations["psd"] > 0


@pytest.mark.claim("topic.thm2.1.1", tier="property")
@given(params=topic_models(max_T=6, max_v=5, exact=True))
def test_thm211_min_trace_optimum(params):
    trivial(params.v == 1)  # one word per topic: E* is c3 diag(0, 1, ..., 1)
    E = tp.optimal_embedding(params)
    assert tp.is_optimal_embedding(E, params, tol=0)
    assert tp.embedding_loss(E, params) == tp.minimum_loss(params)


@pytest.mark.claim("topic.thm2.1.1", tier="property", control=True)
@given(params=topic_models(max_T=6, max_v=5, exact=True))
def test_thm211_control_printed_example(params):
    trivial(params.v == 1)  # one word per topic
    E = tp.thesis_example_embedding(params)
    assert not tp.is_optimal_embedding(E, params, tol=0)
    assert tp.embedding_loss(E, params) > tp.minimum_loss(params)


# ------------------------------------------------------------------------------------------ Thm 2.1.3
@pytest.mark.claim("topic.thm2.1.3", tier="exact")
def test_thm213_closed_form_loss_matches_direct_evaluation():
    for p in (TopicModel(6, 4, 2, 0.3, 0.2, 0.3), TopicModel(10, 10, 3)):
        for conv in s2.CONVENTIONS:
            W = s2.frozen_value_matrix(p, "block", conv)
            for al, be in ((1.0, 1.0), (0.5, 3.0), (2.0, 40.0)):
                gamma = (p.v - 1) / p.v * al + be / p.v
                closed = float(s2.block_attention_loss(gamma, p, conv))
                assert abs(closed - s2.attention_loss_explicit(W, al, be, p, conv == "literal")) < EXACT_TOL


@pytest.mark.claim("topic.thm2.1.3", tier="exact")
def test_thm213_optimum_agrees_with_direct_minimisation(measure):
    import warnings

    from scipy.optimize import OptimizeWarning

    p = TopicModel(6, 4, 2, 0.3, 0.2, 0.3)
    for conv in s2.CONVENTIONS:
        gamma, loss = s2.optimal_gamma(p, conv)
        # the direct search runs at its stated precision: scipy knows every option it is given (an unknown one is
        # ignored with an OptimizeWarning, and Nelder-Mead falls back to its default xatol = 1e-4)
        with warnings.catch_warnings():
            warnings.simplefilter("error", OptimizeWarning)
            al, be, loss_direct = s2.explicit_optimal_attention(
                s2.frozen_value_matrix(p, "block", conv), p, conv == "literal"
            )
        # the minimum is quadratic: a 1e-13 loss tolerance pins gamma to ~1e-5 relative
        assert abs(loss - loss_direct) < 1e-12
        assert abs(((p.v - 1) / p.v * al + be / p.v) / gamma - 1) < 1e-4
    measure("gamma_star_T6_v4_tau2", gamma)


@pytest.mark.claim("topic.thm2.1.3", tier="exact")
def test_thm213_interval_in_asymptotic_regime(measure):
    for p in ASYMPTOTIC:
        k = s2.stage2_constants(p)
        for conv in s2.CONVENTIONS:
            gamma, _ = s2.optimal_gamma(p, conv)
            assert s2.gamma_in_interval(p, gamma, "proved") and s2.gamma_in_interval(p, gamma, "stated")
        gamma, _ = s2.optimal_gamma(p, "thesis")
        measure(f"gamma_star_T{p.T}", gamma)
        measure(f"gamma_star_formula_T{p.T}", k.gamma_star)
    k = s2.stage2_constants(TopicModel(10, 10, 3))
    assert abs(k.lambda1 - 0.5773) < 1e-4 and abs(k.c5 - 0.3713) < 1e-4  # printed constant vs the proof's


@pytest.mark.claim("topic.thm2.1.3", tier="exact")
def test_thm213_attention_family_is_realisable_and_read_exactly():
    # the family of Assumption 2.1.2 is realised by the one-layer model (W^K = I, W^Q = log-ratios), and the
    # statistic that reads trained models recovers its ratios exactly on a balanced document (every word of the
    # present topics twice, plus [MASK] tokens): there every word query has the same normaliser
    import torch

    from theorylab.attention.topic.model import attention_by_pair_type, ratio_attention

    p = TopicModel(4, 3, 2)
    rng = np.random.default_rng(0)
    words = np.r_[np.repeat(np.arange(1, 1 + 2 * p.v), 2), np.zeros(4, dtype=np.int64)]
    docs = np.stack([rng.permutation(words) for _ in range(3)])
    for alpha, beta in ((3.0, 20.0), (0.5, 8.0), (2.0, 0.25)):
        stats = attention_by_pair_type(ratio_attention(p, alpha, beta), docs, p)
        # float64 softmax of O(1) scores: relative round-off ~1e-15
        assert abs(stats["alpha_hat"] / alpha - 1) < 1e-12 and abs(stats["beta_hat"] / beta - 1) < 1e-12
        assert abs(stats["gamma_hat"] / (((p.v - 1) * alpha + beta) / p.v) - 1) < 1e-12
        Z = 2 * (beta + alpha * (p.v - 1) + p.v * (p.tau - 1)) + 4  # the common normaliser (4 [MASK] keys)
        assert abs(stats["different_topic"] * Z - 1) < 1e-12
    # the family's ratios are positive: the smallest float ratio is realised, a zero ratio (log 0) is refused
    assert ratio_attention(p, 5e-324, 1.0).attention(torch.as_tensor(docs)).isfinite().all()
    for alpha, beta, name in ((0.0, 1.0, "alpha"), (1.0, 0.0, "beta"), (1.0, float("inf"), "beta")):
        with pytest.raises(ValueError, match=rf"^attention ratio {name} must be positive and finite, got"):
            ratio_attention(p, alpha, beta)


# T -> infinity with tau = o(T) (Assumption 2.1.3): tau grows like T^(1/2) here, v = 10, BERT rates
LEADING_ORDER_SEQUENCE = [(10**3, 10), (10**4, 30), (10**5, 100), (10**6, 300), (10**7, 1000)]


@pytest.mark.claim("topic.thm2.1.3", tier="exact")
def test_thm213_leading_order_gamma_is_the_limit(measure):
    # the derived leading-order optimum gamma* = ((tau-1) + c4 p_m p_r tau)/(c4 - 1) is the limit of the exact
    # finite-size optimum: the relative error is positive, shrinks strictly along the sequence, and is O(1/tau)
    # (tau * error stays in [0.1, 1]; measured 0.38-0.48). A formula off by a constant factor 1 + e would leave an
    # error that tends to e instead (tau * error -> infinity).
    errors = []
    for T, tau in LEADING_ORDER_SEQUENCE:
        p = TopicModel(T, 10, tau)
        gamma, _ = s2.optimal_gamma(p, "thesis")
        errors.append(gamma / s2.stage2_constants(p).gamma_star - 1)
        assert 0.1 < tau * errors[-1] < 1.0
    assert all(0 < b < a for a, b in zip(errors, errors[1:], strict=False))
    measure("gamma_leading_order_relative_error", [float(f"{e:.3g}") for e in errors])


@pytest.mark.claim("topic.thm2.1.3", tier="exact", control=True)
def test_thm213_control_interval_ends():
    # both ends are strict and sit where the theorem puts them: just inside passes, just outside fails
    for p in ASYMPTOTIC + [TopicModel(10, 10, 3)]:
        k = s2.stage2_constants(p)
        hi = k.lambda2 * p.T
        assert s2.gamma_in_interval(p, hi * (1 - 1e-9)) and not s2.gamma_in_interval(p, hi * (1 + 1e-9))
        for constant, c in (("proved", k.c5), ("stated", k.lambda1)):
            lo = c * (p.tau - 1)
            assert s2.gamma_in_interval(p, lo * (1 + 1e-9), constant)
            assert not s2.gamma_in_interval(p, lo * (1 - 1e-9), constant)
    # the printed constants at BERT rates, recomputed from the printed formulas (a = 0.865, p_m p_r = 0.015)
    k = s2.stage2_constants(TopicModel(10, 10, 3))
    assert abs(k.lambda2 - 100 * (0.865 / 0.015 + 1)) < 1e-9 and abs(k.lambda2 * 10 - 58666.67) < 0.01
    assert abs(k.lambda1 - (0.865 + 0.015) * (1 + 0.135) / (2 * 0.865)) < 1e-12


@pytest.mark.claim("topic.thm2.1.3", tier="exact", control=True)
def test_thm213_control_uniform_attention_rejected():
    # uniform attention (gamma = 1, the stage-1 solution) is outside the interval in the asymptotic regime
    for p in ASYMPTOTIC:
        assert not s2.gamma_in_interval(p, 1.0, "proved")


@pytest.mark.claim("topic.thm2.1.3", tier="property", examples=10)
@given(params=topic_models(max_T=6, max_v=5))
def test_thm213_only_gamma_matters(params):
    trivial(params.v == 1)  # one word per topic: gamma = beta, nothing to show
    for conv in s2.CONVENTIONS:
        W = s2.frozen_value_matrix(params, "block", conv)
        assert s2.gamma_only_gap(W, params, conv == "literal") < 1e-13


@pytest.mark.claim("topic.thm2.1.3", tier="property", control=True, examples=10)
@given(params=topic_models(max_T=6, max_v=5).filter(lambda p: p.v > 1))
def test_thm213_control_diagonal_matrix_depends_on_alpha_beta(params):
    trivial(params.v == 1)  # one word per topic
    W = s2.frozen_value_matrix(params, "diagonal", "thesis")
    assert s2.gamma_only_gap(W, params, False) > 1e-6


ASYMPTOTIC_DRAW = "every draw is in the asymptotic regime: T >= 1000, 5 <= tau <= T/100, v > (c4 + 1)^2 + 1"


@st.composite
def _asymptotic_params(draw):
    T = draw(st.sampled_from([10**3, 3 * 10**3, 10**4, 10**5]))
    tau = draw(st.integers(5, T // 100))
    p_m, p_c, p_r = draw(masking_rates(bert_like=True))
    c4 = 1 / (1 - (1 - p_c) * p_m)
    v = draw(st.integers(int((c4 + 1) ** 2 + 1) + 1, 60))
    return TopicModel(T, v, tau, p_m, p_c, p_r)


@pytest.mark.claim("topic.thm2.1.3", tier="property", examples=15, no_trivial=ASYMPTOTIC_DRAW)
@given(params=_asymptotic_params())
def test_thm213_interval_random_parameters(params):
    for conv in s2.CONVENTIONS:
        gamma, _ = s2.optimal_gamma(params, conv)
        assert s2.gamma_in_interval(params, gamma, "proved")
        assert s2.gamma_in_interval(params, gamma, "stated")


# ------------------------------------------------------------------------------------------ Thm 2.1.5
@pytest.mark.claim("topic.thm2.1.5", tier="exact")
def test_thm215_closed_form_loss_matches_direct_evaluation():
    for p in (TopicModel(6, 4, 2, 0.3, 0.2, 0.3), TopicModel(10, 10, 3)):
        for conv in s2.CONVENTIONS:
            W = s2.frozen_value_matrix(p, "diagonal", conv)
            for al, be in ((1.0, 1.0), (0.5, 3.0), (2.0, 40.0)):
                closed = float(s2.diagonal_attention_loss(al, be, p, conv))
                assert abs(closed - s2.attention_loss_explicit(W, al, be, p, conv == "literal")) < EXACT_TOL
    p = TopicModel(6, 4, 2, 0.3, 0.2, 0.3)
    al, be, loss = s2.optimal_diagonal_attention(p)
    al2, be2, loss2 = s2.explicit_optimal_attention(s2.frozen_value_matrix(p, "diagonal", "thesis"), p, False)
    assert abs(loss - loss2) < 1e-12 and abs(be / be2 - 1) < 1e-4


@pytest.mark.claim("topic.thm2.1.5", tier="exact")
def test_thm215_bounds_and_beta_star(measure):
    # bounds at every point of the T -> infinity sequence, and the derived leading-order beta* as the limit: the
    # relative error is positive, shrinks strictly and is O(1/tau) (tau * error in [0.1, 1]; measured 0.25-0.34); a
    # formula off by a constant factor 1 + e would leave an error tending to e
    errors = []
    for T, tau in LEADING_ORDER_SEQUENCE[:4]:
        p = TopicModel(T, 10, tau)
        k = s2.stage2_constants(p)
        al, be, _ = s2.optimal_diagonal_attention(p)
        assert s2.diagonal_bounds_hold(p, al, be)
        errors.append(be / k.beta_star - 1)
        assert 0.1 < tau * errors[-1] < 1.0
        measure(f"alpha_beta_star_T{p.T}_v{p.v}", [al, be])
    assert all(0 < b < a for a, b in zip(errors, errors[1:], strict=False))
    measure("beta_leading_order_relative_error", [float(f"{e:.3g}") for e in errors])
    al, be, _ = s2.optimal_diagonal_attention(TopicModel(100, 300, 20))  # Fig. 2.7's setting: alpha* -> 0
    assert al < 1e-6 < 1e4 < be
    measure("alpha_star_T100_v300_tau20", al)


@pytest.mark.claim("topic.thm2.1.5", tier="exact", control=True)
def test_thm215_control_uniform_attention_rejected():
    for p in (TopicModel(10**4, 10, 30), TopicModel(10**5, 20, 100)):
        assert not s2.diagonal_bounds_hold(p, 1.0, 1.0)
    # each of the three bounds is strict and sits where the theorem puts it; the printed constants at BERT rates
    # (catalog: v = 10 gives 0.088, 447.1, 0.1285; v = 300 gives 2.64, 986.9, 0.00387)
    for p, (l3, l4, l5) in (
        (TopicModel(10**4, 10, 30), (0.088, 447.1, 0.1285)),
        (TopicModel(10**4, 300, 30), (2.64, 986.9, 0.00387)),
    ):
        k = s2.stage2_constants(p)
        assert (
            abs(k.lambda3 / l3 - 1) < 1e-3
            and abs(k.lambda4 / l4 - 1) < 1e-3
            and abs(k.lambda5 / l5 - 1) < 2e-3
        )
        lo, hi = k.lambda3 * p.tau, k.lambda4 * p.T
        mid = (lo * hi) ** 0.5
        ok = lambda al, be, p=p: s2.diagonal_bounds_hold(p, al, be)  # noqa: E731
        assert ok(1e-9, mid) and ok(1e-9, lo * (1 + 1e-9)) and ok(1e-9, hi * (1 - 1e-9))
        assert not ok(1e-9, lo * (1 - 1e-9)) and not ok(1e-9, hi * (1 + 1e-9))
        assert not ok(1e-9, lo) and not ok(1e-9, hi)  # strict: the ends themselves are outside
        assert ok(k.lambda5 * mid * (1 - 1e-9), mid) and not ok(k.lambda5 * mid * (1 + 1e-9), mid)
        assert not ok(k.lambda5 * mid, mid)


@pytest.mark.claim("topic.thm2.1.5", tier="property", examples=6, no_trivial=ASYMPTOTIC_DRAW)
@given(params=_asymptotic_params())
def test_thm215_bounds_random_parameters(params):
    al, be, _ = s2.optimal_diagonal_attention(params)
    assert s2.diagonal_bounds_hold(params, al, be)


@pytest.mark.claim("topic.thm2.1.5", tier="property", control=True, examples=6, no_trivial=ASYMPTOTIC_DRAW)
@given(params=_asymptotic_params())
def test_thm215_control_alpha_equal_beta_rejected(params):
    al, be, _ = s2.optimal_diagonal_attention(params)
    assert not s2.diagonal_bounds_hold(params, be, be)  # alpha = beta violates alpha < lambda5 beta


# ------------------------------------------------------------------------------------------ Table 2.1 caption
SIGNIFICANT = 2.0  # a difference counts when it exceeds 2 combined printed SDs, sqrt(sd_a^2 + sd_b^2)


def _caption_verdict(table: dict, sds: dict) -> dict[str, list[str]]:
    """Per inequality of the caption, the rows that contradict it significantly and the rows that support it
    significantly (a single-run row without deviations counts for neither)."""
    out: dict[str, list[str]] = {}
    for name, (i, j) in (
        ("same_word>same_topic", (0, 1)),
        ("same_topic>diff_topic", (1, 2)),
        ("same_word>diff_topic", (0, 2)),
    ):
        z = {row: separation(table[row][i], sds[row][i], table[row][j], sds[row][j]) for row in table}
        out[name + ":contradicted"] = [row for row, x in z.items() if x < -SIGNIFICANT]
        out[name + ":supported"] = [row for row, x in z.items() if x > SIGNIFICANT]
    return out


@pytest.mark.claim("topic.table2.1", tier="exact")
def test_table21_caption_against_printed_deviations(measure):
    verdict = _caption_verdict(TABLE_2_1, TABLE_2_1_SD)
    # the caption's first inequality (same-word > same-topic-different-word) is contradicted significantly in exactly
    # two rows and supported significantly in one; Adam 0.003 (1.75 SDs) and SGD 0.01 (one run) are undecided
    assert verdict["same_word>same_topic:contradicted"] == ["Adam 0.01", "Adam 0.03"]
    assert verdict["same_word>same_topic:supported"] == ["SGD 0.03"]
    # the second (same-topic-different-word > different-topic) holds significantly in every row with deviations
    # (5.8 to 10.9 SDs) and by 58% in the single run
    assert verdict["same_topic>diff_topic:contradicted"] == []
    assert verdict["same_topic>diff_topic:supported"] == [r for r in TABLE_2_1 if r != "SGD 0.01"]
    assert TABLE_2_1["SGD 0.01"][1] > 1.5 * TABLE_2_1["SGD 0.01"][2]
    # "different-topic is the smallest" fails in one row: Adam 0.03's same-word attention is below it by 5.3 SDs
    assert verdict["same_word>diff_topic:contradicted"] == ["Adam 0.03"]
    # what Thm 2.1.3 is about holds in every row: gamma_hat = ((v-1) alpha_hat + beta_hat) / v > 1 (v = 10)
    gammas = [((10 - 1) * st_ / dt + sw / dt) / 10 for sw, st_, dt in TABLE_2_1.values()]
    assert min(gammas) > 1.3
    z = generate("topic.table2.1")["same_word_minus_same_topic_in_sds"]
    measure("same_word_minus_same_topic_in_sds", [round(float(x), 2) for x in z])
    measure("gamma_hat_range", [round(min(gammas), 3), round(max(gammas), 3)])


@pytest.mark.claim("topic.table2.1", tier="exact", control=True)
def test_table21_control_verdict_detects_a_consistent_and_a_reversed_table():
    # a table whose rows follow the caption is not flagged, and one with the second inequality reversed is
    consistent = {k: (max(sw, st_) * 1.5, st_, dt) for k, (sw, st_, dt) in TABLE_2_1.items()}
    verdict = _caption_verdict(consistent, TABLE_2_1_SD)
    assert verdict["same_word>same_topic:contradicted"] == [] == verdict["same_topic>diff_topic:contradicted"]
    reversed_ = {k: (sw, dt, st_) for k, (sw, st_, dt) in TABLE_2_1.items()}
    sds = {k: (a, c, b) for k, (a, b, c) in TABLE_2_1_SD.items()}
    assert len(_caption_verdict(reversed_, sds)["same_topic>diff_topic:contradicted"]) == 4


# ------------------------------------------------------------------------------------------ Props 2.1.2 / 2.1.3
RATIOS = [(F(2), F(5)), (F(1, 3), F(7, 2)), (F(5, 2), F(1, 4))]


def _base_weight(A: np.ndarray, p: TopicModel, q: int):
    """a0 * N for the query showing word q (0-based): the mass on one key of ratio 1 (a word of another topic)
    divided by that key's frequency."""
    other_topic = (q // p.v + 1) % p.T
    l = other_topic * p.v  # first word of that topic (0-based word id)
    freq = p.word_frequencies(np.arange(p.tau))
    return A[1 + l, q] / freq[1 + l]


@pytest.mark.claim("topic.prop2.1.2", tier="exact")
def test_prop212_printed_normalisers(measure):
    # on an infinitely long document (exact Fractions), attention of the family of Assumption 2.1.2, normalised over
    # keys with [MASK] keys outside the normaliser: every column sums to 1 and a0 N = 1/z1 (query in a present
    # topic) or 1/z2 (query in an absent topic), z as printed
    for p in EXACT_PARAMS:
        for alpha, beta in RATIOS:
            A = s2.attended_frequencies(p, alpha, beta)
            assert all(c == 1 for c in A.sum(axis=0))
            z1, z2 = s2.prop212_normalisers(p, alpha, beta)
            for q in range(p.T * p.v):
                present = q // p.v < p.tau
                assert _base_weight(A, p, q) == 1 / (z1 if present else z2)
    # float rates give the float array of the same numbers (round-off of a few products and one division: 1e-15)
    exact = s2.attended_frequencies(EXACT_PARAMS[1], *RATIOS[0])
    floats = s2.attended_frequencies(TopicModel(4, 3, 2, 0.15, 0.1, 0.1), 2.0, 5.0)
    assert floats.dtype == np.float64 and np.abs(floats - exact.astype(float)).max() < 1e-15
    measure(
        "z1_z2_T4_v3_tau2_alpha2_beta5", [float(z) for z in s2.prop212_normalisers(EXACT_PARAMS[1], 2, 5)]
    )


@pytest.mark.claim("topic.prop2.1.2", tier="exact", control=True)
def test_prop212_control_mask_keys_in_the_normaliser():
    # if [MASK] keys took the base weight (the "literal" reading), the same comparison fails: a0 N = 1/(z + m0)
    for p in EXACT_PARAMS:
        alpha, beta = RATIOS[0]
        A = s2.attended_frequencies(p, alpha, beta, mask_keys=True)
        z1, _ = s2.prop212_normalisers(p, alpha, beta)
        assert _base_weight(A, p, 0) == 1 / (z1 + p.m0) != 1 / z1


@st.composite
def _ratio_pairs(draw):
    """(alpha, beta) as Fractions in [1/10, 10], not both 1 (uniform attention is the trivial instance)."""
    ratio = st.fractions(F(1, 10), F(10), max_denominator=12).filter(lambda x: x > 0)
    alpha, beta = draw(ratio), draw(ratio)
    return alpha, beta


@pytest.mark.claim("topic.prop2.1.2", tier="property")
@given(params=topic_models(max_T=5, max_v=4, exact=True), ratios=_ratio_pairs())
def test_prop212_random_parameters(params, ratios):
    alpha, beta = ratios
    trivial(bool(alpha == 1 and beta == 1))  # uniform attention
    A = s2.attended_frequencies(params, alpha, beta)
    z1, z2 = s2.prop212_normalisers(params, alpha, beta)
    assert all(c == 1 for c in A.sum(axis=0))
    assert _base_weight(A, params, 0) == 1 / z1  # word 0 is in topic 0, present
    if params.tau < params.T:
        assert _base_weight(A, params, params.T * params.v - 1) == 1 / z2  # the last topic is absent


@pytest.mark.claim("topic.prop2.1.2", tier="property", control=True)
@given(params=topic_models(max_T=5, max_v=4, exact=True), ratios=_ratio_pairs())
def test_prop212_control_random_parameters(params, ratios):
    # a normaliser that forgets the absent topics' keys (p2 v (T - tau)) is rejected whenever there are any
    alpha, beta = ratios
    trivial(bool(alpha == 1 and beta == 1))
    A = s2.attended_frequencies(params, alpha, beta)
    z1, _ = s2.prop212_normalisers(params, alpha, beta)
    wrong = z1 - params.p2 * params.v * (params.T - params.tau)
    assert _base_weight(A, params, 0) != 1 / wrong


@pytest.mark.claim("topic.prop2.1.3", tier="exact")
def test_prop213_eight_cases(measure):
    # every entry of [X~A] on the infinite document falls in one of the eight printed cases and equals its formula
    # exactly, for any set of present topics
    for p in EXACT_PARAMS:
        for alpha, beta in RATIOS:
            printed = s2.prop213_cases(p, alpha, beta)
            for topics in (tuple(range(p.tau)), tuple(range(p.T - p.tau, p.T))):
                A = s2.attended_frequencies(p, alpha, beta, topics=topics)
                table = s2.prop213_case_table(p, A, topics)
                assert set(table) <= set(printed) and len(table) >= 6
                assert all(values == {printed[key]} for key, values in table.items())
    p = TopicModel(10, 10, 3)
    measure(
        "cases_T10_v10_tau3_alpha1_beta7",
        {f"{q}/{k}": float(x) for (q, k), x in s2.prop213_cases(p, 1, 7).items()},
    )


@pytest.mark.claim("topic.prop2.1.3", tier="exact", control=True)
def test_prop213_control_swapped_ratios():
    # the same comparison rejects the table with alpha and beta swapped (same-word vs same-topic confused)
    p = EXACT_PARAMS[1]
    alpha, beta = RATIOS[0]
    table = s2.prop213_case_table(p, s2.attended_frequencies(p, alpha, beta))
    swapped = s2.prop213_cases(p, beta, alpha)
    assert table[("present", "same_word")] != {swapped[("present", "same_word")]}


@pytest.mark.claim("topic.prop2.1.3", tier="property")
@given(params=topic_models(max_T=5, max_v=4, exact=True), ratios=_ratio_pairs(), data=st.data())
def test_prop213_random_parameters(params, ratios, data):
    alpha, beta = ratios
    trivial(bool(alpha == 1 and beta == 1))
    topics = data.draw(st.permutations(range(params.T)))[: params.tau]
    A = s2.attended_frequencies(params, alpha, beta, topics=topics)
    printed = s2.prop213_cases(params, alpha, beta)
    table = s2.prop213_case_table(params, A, topics)
    assert all(values == {printed[key]} for key, values in table.items())


@pytest.mark.claim("topic.prop2.1.3", tier="property", control=True)
@given(params=topic_models(max_T=5, max_v=4, exact=True), ratios=_ratio_pairs())
def test_prop213_control_literal_mask_keys(params, ratios):
    # with [MASK] keys at the base weight every entry moves off the printed value (the normaliser gains m0)
    alpha, beta = ratios
    trivial(bool(alpha == 1 and beta == 1))
    A = s2.attended_frequencies(params, alpha, beta, mask_keys=True)
    printed = s2.prop213_cases(params, alpha, beta)
    table = s2.prop213_case_table(params, A)
    assert all(values != {printed[key]} for key, values in table.items())


# ------------------------------------------------------------------------------------------ softmax (2.5)
@pytest.mark.claim("topic.def.softmax", tier="exact")
def test_softmax_erratum_printed_normalisation_breaks_prop212(measure):
    arrays = generate("topic.def.softmax")
    # the printed formula exp(A_ij) / sum_l exp(A_il) normalises each key's weights over the queries: on the
    # infinite document of the counterexample the query columns sum to 0.48 and 0.94, not 1, so f = W^V X~ A is not
    # an average of value vectors and Prop 2.1.2's a0 = 1/(z N) is wrong; the column-wise softmax that the proofs use
    # gives columns summing to 1
    assert np.abs(arrays["column_sums_printed"] - 1).min() > 0.05
    assert np.abs(arrays["column_sums_corrected"] - 1).max() < EXACT_TOL
    p = TopicModel(*(int(arrays[k]) for k in ("T", "v", "tau")), F(3, 20), F(1, 10), F(1, 10))
    printed = s2.attended_frequencies(p, F(2), F(5), normalise="queries")
    assert all(c != 1 for c in printed.sum(axis=0))  # exactly (Fractions)
    # the model implements the corrected softmax: on a real token sequence each query's weights over keys sum to 1
    import torch

    from theorylab.attention.topic.model import ratio_attention

    model = ratio_attention(p, 2.0, 5.0)
    tokens = torch.as_tensor(np.array([[1, 1, 1, 2, 4, 0, 7, 9, 9, 12]]))
    A = model.attention(tokens)[0]
    assert torch.allclose(A.sum(dim=0), torch.ones(10, dtype=A.dtype), atol=1e-12)
    assert not torch.allclose(A.sum(dim=1), torch.ones(10, dtype=A.dtype), atol=1e-3)
    measure("column_sums_printed", sorted({round(float(x), 4) for x in arrays["column_sums_printed"]}))


@pytest.mark.claim("topic.def.softmax", tier="exact", control=True)
def test_softmax_control_balanced_document_hides_the_typo():
    # the typo is invisible where every key sees the same total: with uniform scores on a document that uses every
    # word equally often and no [MASK], both normalisations coincide; the check above relies on an unbalanced one
    p = TopicModel(3, 2, 2, F(3, 20), F(1, 10), F(1, 10))
    from theorylab.attention.topic.model import ratio_attention

    model = ratio_attention(p, 1.0, 1.0)
    import torch

    tokens = torch.as_tensor(np.array([[1, 2, 3, 4, 5, 6, 1, 2, 3, 4, 5, 6]]))
    A = model.attention(tokens)[0]
    assert torch.allclose(A.sum(dim=0), A.sum(dim=1), atol=1e-12)


# ------------------------------------------------------------------------------------------ Table 2.2
def _diagonal_ordering(table: dict) -> dict[str, list[str]]:
    """Rows that support / contradict, by more than 2 combined printed SDs, the caption's two inequalities:
    same-word > different-topic and different-topic > same-topic-different-word."""
    out: dict[str, list[str]] = {}
    for name, (i, j) in (("same_word>diff_topic", (0, 2)), ("diff_topic>same_topic", (2, 1))):
        z = {row: separation(*table[row][i], *table[row][j]) for row in table}
        out[name + ":supported"] = [row for row, x in z.items() if x > SIGNIFICANT]
        out[name + ":contradicted"] = [row for row, x in z.items() if x < -SIGNIFICANT]
    return out


@pytest.mark.claim("topic.table2.2", tier="exact")
def test_table22_ordering(measure):
    verdict = _diagonal_ordering(TABLE_2_2)
    # same-word >> different-topic in both rows (99 and 37 SDs); different-topic > same-topic-different-word in both
    # rows, significantly only at lr 0.003 (4.1 SDs; 1.5 SDs at lr 0.01); nothing contradicts the caption
    assert verdict["same_word>diff_topic:supported"] == ["0.003", "0.01"]
    assert verdict["diff_topic>same_topic:supported"] == ["0.003"]
    assert verdict["same_word>diff_topic:contradicted"] == [] == verdict["diff_topic>same_topic:contradicted"]
    # the table's ratios satisfy Thm 2.1.5's conclusions read at the experiment's size (T = v = 10, ~3 topics per
    # document): lambda3 tau < beta_hat < lambda4 T and alpha_hat < lambda5 beta_hat
    p = TopicModel(10, 10, 3)
    for (sw, _), (st_, _), (dt, _) in TABLE_2_2.values():
        assert s2.diagonal_bounds_hold(p, st_ / dt, sw / dt)
    # and the exact finite-size optimum of the diagonal case at that size has the same ordering, in both [MASK]
    # conventions: beta* >> 1 > alpha* (alpha* = 0.98: the landscape is nearly flat in alpha)
    for conv in s2.CONVENTIONS:
        alpha, beta, _ = s2.optimal_diagonal_attention(p, conv)
        assert beta > 10 > 1 > alpha
        measure(f"alpha_beta_star_T10_v10_tau3_{conv}", [round(alpha, 4), round(beta, 2)])
    measure(
        "beta_hat_alpha_hat",
        {r: [round(sw / dt, 2), round(st_ / dt, 3)] for r, ((sw, _), (st_, _), (dt, _)) in TABLE_2_2.items()},
    )


@pytest.mark.claim("topic.table2.2", tier="exact", control=True)
def test_table22_control_block_table_fails_the_diagonal_ordering():
    # the same verdict applied to Table 2.1 (block-wise W^V) finds no row with the diagonal ordering
    as_pairs = {r: tuple(zip(TABLE_2_1[r], TABLE_2_1_SD[r], strict=True)) for r in TABLE_2_1}
    verdict = _diagonal_ordering(as_pairs)
    assert verdict["diff_topic>same_topic:supported"] == []
    assert len(verdict["diff_topic>same_topic:contradicted"]) == 4


# ------------------------------------------------------------------------------------------ Figs 2.5 / 2.6
FIG_BLOCK_MEANS = {  # mean of the 1000 block entries; mean and SD of a random subset of 1000 non-block entries
    "fig2.5": (0.00552563, -0.00015675332, 0.00060286524),
    "fig2.6": (0.006545205, -0.0006503917, 0.0006370574),
}


def _block_statistics(W: np.ndarray, p: TopicModel, rng: np.random.Generator, n: int = 1000) -> tuple:
    """The figures' statistics: the mean of the same-topic word-word entries, and the mean and SD of a random
    subset of ``n`` different-topic entries."""
    Ww = np.asarray(W, dtype=float)[1:, 1:]
    same = np.kron(np.eye(p.T, dtype=bool), np.ones((p.v, p.v), dtype=bool))
    other = rng.choice(Ww[~same], size=n, replace=False)
    return float(Ww[same].mean()), float(other.mean()), float(other.std(ddof=1))


@pytest.mark.claim("topic.fig2.5_2.6", tier="exact")
def test_fig25_26_block_means(measure, rng):
    p = TopicModel(10, 10, 3)
    c3_over_v = float(tp.constants(p).c3) / p.v
    for fig, (block, other, sd) in FIG_BLOCK_MEANS.items():
        se = sd / np.sqrt(1000)  # standard error of the printed non-block subset mean
        assert block > 10 * abs(other)  # the printed "over 10x" (35.3x and 10.06x)
        assert (
            block - other
        ) / se > 100  # the blocks are real: > 100 standard errors above the non-block mean
        # but far from an optimum: every minimiser has block mean - non-block mean = c3 / v = 0.116 (Lemma 2.1.1);
        # the printed panels reach 5% and 6% of it (weak blocks: stopped long before convergence)
        assert 0.03 < (block - other) / c3_over_v < 0.08
        measure(f"{fig}_ratio_to_nonblock_mean", round(block / abs(other), 2))
        measure(f"{fig}_share_of_optimal_contrast", round((block - other) / c3_over_v, 4))
    # Fig 2.6's "over 10x" is inside the sampling error of its 1000-entry subset: 3 SE more non-block mass gives 9.2x
    block, other, sd = FIG_BLOCK_MEANS["fig2.6"]
    assert block / (abs(other) + 3 * sd / np.sqrt(1000)) < 10
    # the statistic applied to the optimum itself: the closed form and the diagonal optimum both show it (the
    # figure's statistic cannot tell blocks from a diagonal: the diagonal lies inside the blocks)
    for W in (tp.optimal_value_matrix(p), tp.diagonal_value_matrix(p)):
        block, other, _ = _block_statistics(W, p, rng)
        assert abs(block - other - c3_over_v) < 1e-2 and block > 10 * abs(other)


@pytest.mark.claim("topic.fig2.5_2.6", tier="exact", control=True)
def test_fig25_26_control_scrambled_optimum(rng):
    # relabelled words (no topic lines up with a block) fail the figure's verdict
    p = TopicModel(10, 10, 3)
    perm = _scramble(p)
    block, other, _ = _block_statistics(tp.optimal_value_matrix(p).astype(float)[np.ix_(perm, perm)], p, rng)
    assert not block > 10 * abs(other)


@pytest.mark.claim("topic.fig2.5_2.6", tier="property")
@given(params=topic_models(max_T=6, max_v=5, exact=True), data=st.data())
def test_fig25_26_every_optimum_has_contrast_c3_over_v(params, data):
    # Lemma 2.1.1 => for every minimiser, mean(same-topic word entries) - mean(different-topic word entries) = c3/v
    # exactly, whatever its within-block spread and row offsets u (rational family members, exact)
    trivial(params.v == 1)
    V, T, v = params.V, params.T, params.v
    u = np.array([F(data.draw(st.integers(-20, 20)), 7) for _ in range(V)], dtype=object)
    splits = np.empty((V, T, v), dtype=object)
    for i in range(V):
        for t in range(T):
            w = [F(data.draw(st.integers(-5, 9)), 4) for _ in range(v - 1)]
            splits[i, t] = w + [1 - sum(w, F(0))]
    W = tp.value_matrix_from_family(params, u, splits)
    Ww = W[1:, 1:]
    same = np.kron(np.eye(T, dtype=bool), np.ones((v, v), dtype=bool))
    assert Ww[same].sum() / same.sum() - Ww[~same].sum() / (~same).sum() == tp.constants(params).c3 / v


@pytest.mark.claim("topic.fig2.5_2.6", tier="property", control=True)
@given(params=topic_models(max_T=6, max_v=5, exact=True), data=st.data())
def test_fig25_26_control_off_family(params, data):
    # moving mass from the own block to another block of one row changes the contrast (and leaves the family)
    trivial(params.v == 1)
    W = tp.optimal_value_matrix(params)
    d = F(data.draw(st.integers(1, 9)), 10)
    W[1, 1] -= d
    W[1, 1 + params.v] += d
    Ww = W[1:, 1:]
    same = np.kron(np.eye(params.T, dtype=bool), np.ones((params.v, params.v), dtype=bool))
    assert Ww[same].sum() / same.sum() - Ww[~same].sum() / (~same).sum() != tp.constants(params).c3 / params.v


# ------------------------------------------------------------------------------------------ two-stage (exact
@pytest.mark.claim("topic.claim.two_stage", tier="exact")
def test_two_stage_gradient_scales(rng, measure):
    from theorylab.attention.topic.model import initial_gradient_norms

    p = TopicModel(10, 10, 3)
    zero = initial_gradient_norms(p, 0.0, rng)
    assert zero["W_K"] == 0.0 and zero["W_Q"] == 0.0 and zero["W_V"] > 0  # zero init never leaves uniform
    for s in (1e-4, 1e-3, 1e-2):
        g = initial_gradient_norms(p, s, rng)
        ratio = g["W_K"] / g["W_V"]
        assert ratio < s  # O(s) (measured O(s^2): the value matrix is also at scale s)
        measure(f"gradK_over_gradV_at_{s:g}", ratio)


@pytest.mark.claim("topic.claim.two_stage", tier="exact", control=True)
def test_two_stage_control_large_init(rng):
    from theorylab.attention.topic.model import initial_gradient_norms

    g = initial_gradient_norms(TopicModel(10, 10, 3), 1.0, rng)
    assert not g["W_K"] / g["W_V"] < 1.0


# ------------------------------------------------------------------------------------------ trained tier
TRAINED_PARAMS = TopicModel(10, 10, 3)  # the thesis's synthetic setting (T = v = 10), BERT masking rates


def _sizes(scale: str, small: dict, full: dict) -> dict:
    return small if scale == "small" else full


@pytest.fixture(scope="module")
def stage1_run(request):
    """Stage 1: frozen uniform attention, W^V trained (Adam) on a fixed pool of masked documents; also the same run
    stopped at 10% of its budget (the early-stopping baseline)."""

    from theorylab.attention.topic.model import TopicAttentionConfig, least_squares_value_matrix
    from theorylab.languages.topic import TopicMLMTask
    from theorylab.nn.train import Budget, train

    scale, device = request.getfixturevalue("scale"), request.getfixturevalue("device")
    # small: CPU CI budget; full: the thesis's document length (~100-150 -> 128), 10k documents, batch 40,
    # 20 epochs (5000 steps), 5 seeds; sized for --device cuda (not measured here)
    z = _sizes(
        scale,
        dict(pool=4000, N=64, steps=500, batch=32, seeds=(0, 1, 2)),
        dict(pool=10_000, N=128, steps=5000, batch=40, seeds=(0, 1, 2, 3, 4)),
    )
    p = TRAINED_PARAMS
    task = TopicMLMTask(p, pool=z["pool"], pool_length=z["N"], pool_seed=7)
    runs = {}
    for name, steps, seeds in (("full", z["steps"], z["seeds"]), ("tenth", z["steps"] // 10, z["seeds"][:1])):
        budget = Budget(steps=steps, batch_size=z["batch"], seq_len=z["N"], lr=1e-2, eval_batches=0)
        runs[name] = train(task, TopicAttentionConfig(V=p.V), budget, seeds=seeds, device=device, threads=1)
    W_ls = least_squares_value_matrix(*task.pool_arrays(), p.V)
    weights = lambda r: [m.W_V.detach().cpu().numpy().astype(float) for m in r.models]  # noqa: E731
    return weights(runs["full"]), W_ls, runs["full"], weights(runs["tenth"])[0]


def _stage1_baselines(W_tenth: np.ndarray) -> dict[str, np.ndarray]:
    """What a stage-1 verdict must reject: an untrained model (W^V = 0, its initialisation), the run stopped at 10%
    of its budget, optima of other instances with the same vocabulary size (other masking rates; 25 topics of 4
    words), and the diagonal optimum D^V shifted by -1e-3 (every optimum has full contrast c3, blocks or not)."""
    p = TRAINED_PARAMS
    return {
        "untrained": np.zeros((p.V, p.V)),
        "tenth_budget": W_tenth,
        "W*_other_rates": tp.optimal_value_matrix(TopicModel(10, 10, 3, 0.3, 0.1, 0.1)).astype(float),
        "W*_T25_v4": tp.optimal_value_matrix(TopicModel(25, 4, 3)).astype(float),
        "diagonal_shifted": tp.diagonal_value_matrix(p).astype(float) - 1e-3,
    }


@pytest.mark.claim("topic.thm2.1.2", tier="trained")
def test_thm212_trained_value_matrix_is_block_wise(stage1_run, measure, figure):
    from theorylab.attention.topic.model import block_contrast, stage1_verdict
    from theorylab.attention.topic.plots import block_pattern_figure

    p = TRAINED_PARAMS
    Ws, W_ls, result, W_tenth = stage1_run
    # the verdict (stage1_verdict, rel_tol 5%): both contrasts within 5% of the least-squares optimum on the same
    # documents. Derived from the run: the trained seeds sit within 2.2% (off-diagonal) and 0.8% (full contrast) of
    # it; the 10%-budget model is 11-12% off on the off-diagonal contrast (its diagonal, 0.13, has not yet grown to
    # the finite-data value 0.22); the diagonal optimum has off-diagonal contrast 0; W* with other rates has full
    # contrast c3 = 1.37 (23% off); 5% sits between the trained seeds and the nearest baseline.
    verdicts = [stage1_verdict(W, W_ls, p) for W in Ws]
    assert all(v["ok"] for v in verdicts), verdicts
    baselines = {name: stage1_verdict(W, W_ls, p) for name, W in _stage1_baselines(W_tenth).items()}
    assert not any(v["ok"] for v in baselines.values()), baselines
    k = tp.constants(p)
    measure("contrast_trained_per_seed", [round(v["contrast"], 4) for v in verdicts])
    measure("contrast_offdiag_trained_per_seed", [round(v["contrast_offdiag"], 4) for v in verdicts])
    measure("contrast_least_squares_same_data", [verdicts[0]["reference"], verdicts[0]["reference_offdiag"]])
    measure("contrast_closed_form_c3", float(k.c3))
    measure(
        "baseline_gaps_full_offdiag",
        {n: [round(v["relative_gap"], 3), round(v["relative_gap_offdiag"], 3)] for n, v in baselines.items()},
    )
    measure(
        "diag_vs_offdiag_trained",
        [block_contrast(Ws[0], p)["mean_diag"], block_contrast(Ws[0], p)["mean_same_offdiag"]],
    )
    measure("rel_frobenius_gap_to_least_squares", float(np.linalg.norm(Ws[0] - W_ls) / np.linalg.norm(W_ls)))
    measure("train_seconds", result.seconds)
    # LDA documents (the thesis's experiments: Dir(0.1) topic mixtures, no fixed tau): the same statistic of the
    # least-squares optimum stays near c3 (catalog: 1.144); a loose 10% band, since LDA is outside the theorem
    from theorylab.attention.topic.model import least_squares_value_matrix
    from theorylab.languages.topic import TopicMLMTask

    lda = TopicMLMTask(p, lda_alpha=0.1, pool=4000, pool_length=64, pool_seed=8)
    lda_contrast = block_contrast(least_squares_value_matrix(*lda.pool_arrays(), p.V), p)["contrast"]
    assert abs(lda_contrast / float(k.c3) - 1) < 0.1
    measure("contrast_least_squares_lda_documents", lda_contrast)
    fig = block_pattern_figure(
        {
            "closed form W^V* (infinite docs)": tp.optimal_value_matrix(p),
            "least squares, same finite data": W_ls,
            "trained (seed 0)": Ws[0],
        }
    )
    figure(fig, "topic_blocks")


def _scramble(p: TopicModel) -> np.ndarray:
    """A relabelling of the words that sends word k of topic t to word t of topic k (v = T): every new block holds
    one word of each old topic, so no topic block survives (a random permutation may keep a few)."""
    if p.v != p.T:
        raise ValueError("the transpose scramble needs v == T")
    words = np.arange(p.T * p.v).reshape(p.T, p.v).T.ravel()
    return np.r_[0, 1 + words]


@pytest.mark.claim("topic.thm2.1.2", tier="trained", control=True)
def test_thm212_trained_control_scrambled_vocabulary(stage1_run):
    from theorylab.attention.topic.model import stage1_verdict

    p = TRAINED_PARAMS
    Ws, W_ls, _, _ = stage1_run
    perm = _scramble(p)
    assert not stage1_verdict(Ws[0][np.ix_(perm, perm)], W_ls, p)["ok"]
    # the relabelling cannot disguise a diagonal matrix (it stays diagonal), which the verdict rejects anyway
    D = tp.diagonal_value_matrix(p).astype(float)
    assert np.array_equal(D[np.ix_(perm, perm)], D) and not stage1_verdict(D, W_ls, p)["ok"]


@pytest.fixture(scope="module")
def stage2_run(request):
    """Stage 2: W^V frozen to the closed-form W^V*, W^K and W^Q trained (Adam) from a small random init; also the
    same run stopped at 10% of its budget."""

    from theorylab.attention.topic.model import TopicAttentionConfig
    from theorylab.languages.topic import TopicMLMTask
    from theorylab.nn.train import Budget, train

    scale, device = request.getfixturevalue("scale"), request.getfixturevalue("device")
    z = _sizes(
        scale,
        dict(N=64, steps=300, batch=32, seeds=(0, 1)),
        dict(N=128, steps=3000, batch=40, seeds=(0, 1, 2, 3, 4)),
    )
    p = TRAINED_PARAMS
    W_star = tp.optimal_value_matrix(p).astype(np.float32)
    cfg = TopicAttentionConfig(
        V=p.V, train_attention=True, init_attention=1e-3, fixed_value=tuple(map(tuple, W_star.tolist()))
    )
    results = {}
    for name, steps, seeds in (("full", z["steps"], z["seeds"]), ("tenth", z["steps"] // 10, z["seeds"][:1])):
        budget = Budget(steps=steps, batch_size=z["batch"], seq_len=z["N"], lr=1e-2, eval_batches=0)
        results[name] = train(TopicMLMTask(p), cfg, budget, seeds=seeds, device=device, threads=1)
    rng = np.random.default_rng(11)
    masked, _ = p.mask_documents(rng, p.sample_documents(rng, 100, z["N"]))
    return cfg, results["full"], masked, results["tenth"].models[0]


def _stage2_baselines(cfg, tenth) -> dict:
    """What a stage-2 verdict must reject: the untrained model (its initialisation), the run stopped at 10% of its
    budget, and the exact optimal attention of another instance (tau = 1: gamma* = 0.113, realised exactly)."""
    from theorylab.attention.topic.model import ratio_attention

    other = s2.optimal_gamma(TopicModel(10, 10, 1))[0]
    return {
        "untrained": cfg.build(0).cpu(),
        "tenth_budget": tenth.cpu(),
        "optimum_tau1": ratio_attention(TRAINED_PARAMS, other, other),
    }


@pytest.mark.claim("topic.thm2.1.3", tier="trained")
def test_thm213_trained_attention_prefers_same_topic(stage2_run, measure):
    from theorylab.attention.topic.model import (
        attention_by_pair_type,
        attention_gap_closed,
        attention_verdict,
    )

    p = TRAINED_PARAMS
    cfg, result, masked, tenth = stage2_run
    stats = [attention_by_pair_type(m.cpu(), masked, p) for m in result.models]
    # the verdict (attention_verdict): gamma_hat closes >= 90% of the loss gap between uniform attention and gamma*
    # on the exact landscape L(gamma) of Thm 2.1.3, and different-topic attention is the smallest. Derived from the
    # run: the trained seeds close 99.5% and 99.7% (gamma_hat = 5.9, 6.1 vs gamma* = 7.04); the 10%-budget model closes
    # 5% (gamma_hat = 1.05), the untrained one 0, the optimum of tau = 1 -162%; 0.9 (gamma_hat in (3.6, 17)) leaves
    # margin on both sides.
    assert all(attention_verdict(s, p) for s in stats), stats
    # and the learned gamma lies in Thm 2.1.3's interval with the printed constant (lambda_1 (tau - 1) = 1.15 here;
    # T = 10 is far from the asymptotic regime, so this is the finite-size reading of the conclusion)
    assert all(s2.gamma_in_interval(p, s["gamma_hat"], "stated") for s in stats), stats
    base = {n: attention_by_pair_type(m, masked, p) for n, m in _stage2_baselines(cfg, tenth).items()}
    assert not any(attention_verdict(b, p) for b in base.values()), base
    measure("gamma_hat_per_seed", [round(s["gamma_hat"], 3) for s in stats])
    measure("gap_closed_per_seed", [round(attention_gap_closed(s["gamma_hat"], p), 4) for s in stats])
    measure("baseline_gamma_hat", {n: round(b["gamma_hat"], 3) for n, b in base.items()})
    measure(
        "baseline_gap_closed", {n: round(attention_gap_closed(b["gamma_hat"], p), 3) for n, b in base.items()}
    )
    measure("alpha_hat_beta_hat_seed0", [round(stats[0]["alpha_hat"], 3), round(stats[0]["beta_hat"], 3)])
    measure("gamma_star_infinite_docs_thesis_convention", s2.optimal_gamma(p, "thesis")[0])


@pytest.mark.claim("topic.thm2.1.3", tier="trained", control=True)
def test_thm213_trained_control_initial_attention(stage2_run):
    from theorylab.attention.topic.model import attention_by_pair_type, attention_verdict

    cfg, _, masked, _ = stage2_run
    stats = attention_by_pair_type(cfg.build(0), masked, TRAINED_PARAMS)
    assert not attention_verdict(stats, TRAINED_PARAMS)
    assert not s2.gamma_in_interval(TRAINED_PARAMS, stats["gamma_hat"], "stated")


@pytest.fixture(scope="module")
def embedding_run(request):
    """Thm 2.1.1: frozen uniform attention, W^V = I, the theorem's fixed bias; only W^E (d x V) trained (Adam) on a
    fixed pool of masked documents; also the same run stopped at 10% of its budget."""
    from theorylab.attention.topic.model import TopicEmbeddingConfig
    from theorylab.languages.topic import TopicMLMTask
    from theorylab.nn.train import Budget, train

    scale, device = request.getfixturevalue("scale"), request.getfixturevalue("device")
    # small: CPU CI budget (d = 32 >= T); full: the thesis's documents (~100-150 tokens -> 128, 10k documents, batch
    # 40) and the released code's embedding width (d = V), 5 seeds; sized for --device cuda (not run here)
    p = TRAINED_PARAMS
    z = _sizes(
        scale,
        dict(pool=4000, N=64, steps=300, batch=32, d=32, seeds=(0, 1)),
        dict(pool=10_000, N=128, steps=3000, batch=40, d=p.V, seeds=(0, 1, 2, 3, 4)),
    )
    task = TopicMLMTask(p, pool=z["pool"], pool_length=z["N"], pool_seed=7)
    cfg = TopicEmbeddingConfig(
        V=p.V, d=z["d"], bias=tuple(tp.embedding_bias(p).astype(float).tolist()), init=0.05
    )
    runs = {}
    for name, steps, seeds in (("full", z["steps"], z["seeds"]), ("tenth", z["steps"] // 10, z["seeds"][:1])):
        # lr 3e-3: at 1e-2 the block contrast forms within 50 steps, so a 10%-budget model could not be told apart
        budget = Budget(steps=steps, batch_size=z["batch"], seq_len=z["N"], lr=3e-3, eval_batches=0)
        runs[name] = train(task, cfg, budget, seeds=seeds, device=device, threads=1)
    gram = lambda m: m.gram().detach().cpu().numpy().astype(float)  # noqa: E731
    return (
        [gram(m) for m in runs["full"].models],
        gram(runs["tenth"].models[0]),
        gram(cfg.build(0)),
        runs["full"],
    )


@pytest.mark.claim("topic.thm2.1.1", tier="trained")
def test_thm211_trained_embeddings_are_block_wise(embedding_run, measure, figure):
    from theorylab.attention.topic.model import embedding_verdict, top_eigen_share
    from theorylab.attention.topic.plots import block_pattern_figure

    p = TRAINED_PARAMS
    Es, E_tenth, E_init, result = embedding_run
    # the verdict (embedding_verdict): contrast v(E_same - E_diff) within 10% of c3 = 1.156, and off-diagonal contrast
    # >= 0.8 c3. Derived from the run: the trained seeds are 4.5% below c3 (the finite-document optimum of the
    # value-matrix problem on the same pool is 3.6% below) with off-diagonal contrast 0.90 c3; the nearest baselines
    # are the optimum of another instance (other masking rates: 18.5% above) and the 10%-budget model (36% below); the
    # diagonal optimum c3 diag(0, 1, ..., 1) has off-diagonal contrast 0.
    verdicts = [embedding_verdict(E, p) for E in Es]
    assert all(v["ok"] for v in verdicts), verdicts
    diagonal = tp.thesis_example_embedding(p).astype(float)
    diagonal[0, 0] = 0.0
    baselines = {
        "untrained": E_init,
        "tenth_budget": E_tenth,
        "E*_other_rates": tp.optimal_embedding(TopicModel(10, 10, 3, 0.3, 0.1, 0.1)).astype(float),
        "diagonal_optimum": diagonal,
    }
    rejected = {n: embedding_verdict(E, p) for n, E in baselines.items()}
    assert not any(v["ok"] for v in rejected.values()), rejected
    measure("contrast_trained_per_seed", [round(v["contrast"], 4) for v in verdicts])
    measure("contrast_offdiag_trained_per_seed", [round(v["contrast_offdiag"], 4) for v in verdicts])
    measure(
        "baseline_contrasts",
        {n: [round(v["contrast"], 3), round(v["contrast_offdiag"], 3)] for n, v in rejected.items()},
    )
    measure("top_T_eigen_share_word_block_seed0", top_eigen_share(Es[0][1:, 1:], p.T))
    measure("train_seconds", result.seconds)
    fig = block_pattern_figure(
        {"min-trace optimum E*": tp.optimal_embedding(p), "trained W^E^T W^E (seed 0)": Es[0]}
    )
    figure(fig, "topic_embeddings")


@pytest.mark.claim("topic.thm2.1.1", tier="trained", control=True)
def test_thm211_trained_control_scrambled_vocabulary(embedding_run):
    from theorylab.attention.topic.model import embedding_verdict

    Es, _, _, _ = embedding_run
    perm = _scramble(TRAINED_PARAMS)
    assert not embedding_verdict(Es[0][np.ix_(perm, perm)], TRAINED_PARAMS)["ok"]


@pytest.fixture(scope="module")
def joint_run(request):
    """K, Q, V trained jointly with plain SGD from a small init, norms logged along the way."""

    from theorylab.attention.topic.model import TopicAttentionConfig, weight_norms
    from theorylab.languages.topic import TopicMLMTask
    from theorylab.nn.train import Budget, train

    scale, device = request.getfixturevalue("scale"), request.getfixturevalue("device")
    z = _sizes(
        scale, dict(N=64, steps=800, batch=32, seeds=(0,)), dict(N=128, steps=3000, batch=40, seeds=(0, 1, 2))
    )
    p = TRAINED_PARAMS
    cfg = TopicAttentionConfig(V=p.V, train_attention=True, init_value=1e-2, init_attention=1e-2)
    norms = lambda step, models: {
        f"norm_{k}": [weight_norms(m)[k] for m in models] for k in ("W_K", "W_Q", "W_V")
    }
    # sum-of-squares loss: lr 20 is stable (top Hessian eigenvalue ~0.05) and makes stage 1 take ~50 steps
    budget = Budget(
        steps=z["steps"],
        batch_size=z["batch"],
        seq_len=z["N"],
        lr=20.0,
        optimizer="sgd",
        eval_every=z["steps"] // 40,
        eval_batches=0,
    )
    result = train(TopicMLMTask(p), cfg, budget, seeds=z["seeds"], device=device, eval_fn=norms, threads=1)
    init = [weight_norms(cfg.build(s)) for s in z["seeds"]]
    curves = {}
    for key in ("W_K", "W_Q", "W_V"):
        steps, values = result.curve(f"norm_{key}")
        curves[key] = np.column_stack([[n[key] for n in init], values])
    return np.r_[0, steps], curves


@pytest.mark.claim("topic.claim.two_stage", tier="trained")
def test_two_stage_trained(joint_run, measure, figure):
    from theorylab.attention.topic.model import stage_onsets

    steps, curves = joint_run
    for s in range(curves["W_V"].shape[0]):
        onsets = stage_onsets(steps, curves["W_K"][s], curves["W_Q"][s], curves["W_V"][s])
        assert onsets["t_V"] < onsets["t_KQ"] < np.inf, onsets
        measure(f"t_V_seed{s}", onsets["t_V"])
        measure(f"t_KQ_seed{s}", onsets["t_KQ"])
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(4.5, 3))
    for key in ("W_K", "W_Q", "W_V"):
        ax.plot(steps, curves[key][0] / curves[key][0][-1], label=f"||{key}|| / final")
    ax.set_xlabel("SGD step")
    ax.legend(fontsize=8)
    figure(fig, "topic_two_stage")


@pytest.mark.claim("topic.claim.two_stage", tier="trained", control=True)
def test_two_stage_trained_control_swapped_roles(joint_run):
    from theorylab.attention.topic.model import stage_onsets

    steps, curves = joint_run
    # feeding the value-norm curve as the key/query curves: "K/Q" then move first and the verdict must fail
    onsets = stage_onsets(steps, curves["W_V"][0], curves["W_V"][0], curves["W_K"][0] * curves["W_Q"][0])
    assert not onsets["t_V"] < onsets["t_KQ"] < np.inf
