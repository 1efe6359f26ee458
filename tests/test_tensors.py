"""Library tests of theorylab.tensors: Kruskal rank, CP decomposition, factor matching."""

from fractions import Fraction

import numpy as np
import pytest

from theorylab.tensors import (
    cp_decompose,
    cp_to_tensor,
    kruskal_condition,
    kruskal_rank,
    match_factors,
    nonunique_decomposition,
)


def test_kruskal_rank_certificates_and_methods():
    assert kruskal_rank(np.eye(4), report=True).method == "full-column-rank"
    A = np.array([[1.0, 2.0, 0.0], [0.0, 0.0, 1.0]])
    rep = kruskal_rank(A, report=True)
    assert rep.rank == 1 and rep.method == "parallel-columns" and set(rep.witness) == {0, 1}
    Z = np.array([[1.0, 0.0], [1.0, 0.0]])
    assert kruskal_rank(Z, report=True).method == "zero-column"
    assert kruskal_rank(Z) == 0


def test_kruskal_rank_generic_wide_matrix_is_row_count():
    A = np.random.default_rng(0).standard_normal((3, 7))
    assert kruskal_rank(A) == 3
    assert (
        kruskal_rank(A, method="primal")
        == kruskal_rank(A, method="dual")
        == kruskal_rank(A, method="brute")
        == 3
    )


def test_kruskal_rank_planted_circuit_uses_dual_search():
    rng = np.random.default_rng(1)
    A = rng.standard_normal((8, 9))
    A[:, 8] = A[:, 0] + A[:, 1] - A[:, 2]  # smallest dependent set has size 4
    rep = kruskal_rank(A, report=True)
    assert rep.rank == 3 and rep.method == "nullity-one" and set(rep.witness) == {0, 1, 2, 8}


def test_kruskal_rank_exact_rational_input():
    A = np.array([[Fraction(1, 3), Fraction(2, 3), 1], [1, 2, Fraction(1, 7)]], dtype=object)
    rep = kruskal_rank(A, report=True)
    assert rep.exact and rep.rank == 1  # columns 0 and 1 are parallel
    B = np.array([[1, 0, 1, 1], [0, 1, 1, 2], [0, 0, 0, 0]])
    assert kruskal_rank(B) == kruskal_rank(B, method="brute") == 2


def test_kruskal_rank_float_tolerance():
    A = np.array([[1.0, 1.0], [0.0, 1e-13]])
    assert kruskal_rank(A) == 2
    assert kruskal_rank(A, tol=1e-10) == 1


@pytest.mark.parametrize(
    "bad, err",
    [
        (np.zeros(3), ValueError),
        (np.array([[np.nan, 1.0]]), ValueError),
        (np.array([[1j]]), TypeError),
        (np.array([["a"]]), TypeError),
        (np.zeros((2, 0)), ValueError),
    ],
)
def test_kruskal_rank_rejects_bad_input(bad, err):
    with pytest.raises(err):
        kruskal_rank(bad)


def test_kruskal_rank_unknown_method():
    with pytest.raises(ValueError, match="unknown method"):
        kruskal_rank(np.eye(2), method="magic")


def test_kruskal_condition():
    rng = np.random.default_rng(2)
    A, B, C = (rng.standard_normal((4, 3)) for _ in range(3))
    cond = kruskal_condition(A, B, C)
    assert cond.holds and cond.k_ranks == (3, 3, 3) and bool(cond)
    C[:, 1] = C[:, 0]
    assert not kruskal_condition(A, B, C)
    with pytest.raises(ValueError, match="same number of columns"):
        kruskal_condition(A, B, C[:, :2])


def test_cp_decompose_jennrich_exact_and_als():
    rng = np.random.default_rng(3)
    A, B, C = rng.standard_normal((6, 3)), rng.standard_normal((5, 3)), rng.standard_normal((4, 3))
    W = cp_to_tensor(A, B, C)
    cp = cp_decompose(W, 3)
    assert cp.residual < 1e-12 and cp.method == "jennrich"
    assert all(X.flags.c_contiguous for X in cp.factors)  # later products round by layout: keep it fixed
    assert match_factors(B, cp.B).error < 1e-10
    assert np.max(np.abs(cp.tensor() - W)) < 1e-12
    refined = cp_decompose(W, 3, refine=True)
    assert refined.method == "jennrich+als" and refined.residual < 1e-12
    assert cp_decompose(W, 3, method="als").residual < 1e-4


def test_cp_decompose_rejects_bad_input():
    with pytest.raises(ValueError, match="3-tensor"):
        cp_decompose(np.zeros((2, 2)), 1)
    with pytest.raises(ValueError, match="NaN"):
        cp_decompose(np.full((2, 2, 2), np.nan), 1)
    with pytest.raises(ValueError, match="rank"):
        cp_decompose(np.ones((2, 2, 2)), 0)
    with pytest.raises(ValueError, match="Jennrich needs"):
        cp_decompose(np.ones((5, 2, 2)), 3)
    with pytest.raises(ValueError, match="unknown method"):
        cp_decompose(np.ones((2, 2, 2)), 1, method="magic")


def test_match_factors_permutation_scale_sign():
    rng = np.random.default_rng(4)
    X = rng.standard_normal((5, 4))
    perm = np.array([2, 0, 3, 1])
    Y = np.empty_like(X)
    Y[:, perm] = X * np.array([2.0, -1.0, 0.5, -3.0])
    m = match_factors(X, Y)
    assert np.array_equal(m.perm, perm) and m.error < 1e-12
    assert np.allclose(m.apply(Y), X)
    exact = match_factors(X, X[:, perm], scale=False)
    assert exact.error == 0 and np.array_equal(X[:, perm][:, exact.perm], X)
    with pytest.raises(ValueError, match="same shape"):
        match_factors(X, X[:, :2])


def test_nonunique_decomposition_needs_parallel_columns():
    rng = np.random.default_rng(5)
    A, B, C = (rng.standard_normal((4, 3)) for _ in range(3))
    with pytest.raises(ValueError, match="sufficient"):
        nonunique_decomposition(A, B, C)
    B[:, 2] = 4.0 * B[:, 1]
    A2, B2, C2 = nonunique_decomposition(A, B, C)
    assert np.max(np.abs(cp_to_tensor(A2, B2, C2) - cp_to_tensor(A, B, C))) < 1e-12
    assert match_factors(A, A2).error > 1e-3


def test_cp_to_tensor_rejects_bad_factors():
    with pytest.raises(ValueError, match="same number of columns"):
        cp_to_tensor(np.ones((2, 2)), np.ones((2, 3)), np.ones((2, 2)))
    with pytest.raises(ValueError, match="2-d"):
        cp_to_tensor(np.ones(2), np.ones((2, 1)), np.ones((2, 1)))
    with pytest.raises(ValueError, match="NaN"):
        cp_to_tensor(np.full((2, 2), np.nan), np.ones((2, 2)), np.ones((2, 2)))
    with pytest.raises(TypeError, match="real"):
        cp_to_tensor(np.ones((2, 2), dtype=complex), np.ones((2, 2)), np.ones((2, 2)))
