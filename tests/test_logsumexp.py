"""``theorylab._logsumexp.logsumexp`` gives scipy's ``logsumexp`` to the last bit (the exact-tier checks' recorded
numbers depend on it), on vectors and on the rows of matrices, with ties at the maximum, -inf entries, strided
views and the shapes that go to scipy."""

import numpy as np
import pytest
from scipy.special import logsumexp as scipy_logsumexp

from theorylab._logsumexp import logsumexp


def _same(x, y) -> bool:
    x, y = np.asarray(x), np.asarray(y)
    return x.shape == y.shape and x.dtype == y.dtype and x.tobytes() == y.tobytes()


def _draws(rng: np.random.Generator, shape: tuple[int, ...]) -> np.ndarray:
    a = rng.normal(size=shape) * rng.choice([1e-3, 1.0, 40.0, 700.0])
    if rng.random() < 0.5:
        a = np.round(a)  # ties at the maximum (m > 1)
    if rng.random() < 0.3:
        a.flat[rng.integers(a.size)] = -np.inf
    return a


@pytest.mark.parametrize("n", [1, 2, 3, 7, 64, 1601])
def test_vectors_bitwise_equal_to_scipy(n: int) -> None:
    rng = np.random.default_rng(n)
    for _ in range(200):
        a = _draws(rng, (n,))
        assert _same(logsumexp(a), scipy_logsumexp(a))
        assert _same(logsumexp(a, axis=0, keepdims=True), scipy_logsumexp(a, axis=0, keepdims=True))


@pytest.mark.parametrize("shape", [(1, 1), (5, 2), (8, 37), (3, 400)])
def test_matrix_rows_bitwise_equal_to_scipy(shape: tuple[int, int]) -> None:
    rng = np.random.default_rng(shape[1])
    for _ in range(100):
        a = _draws(rng, shape)
        for keepdims in (False, True):
            assert _same(
                logsumexp(a, axis=1, keepdims=keepdims), scipy_logsumexp(a, axis=1, keepdims=keepdims)
            )
        view = np.sort(a, axis=1)[:, : max(1, shape[1] - 1)]  # a strided view, as the anchor bulk passes
        assert _same(logsumexp(view, axis=-1), scipy_logsumexp(view, axis=-1))
        cols = a[
            :, rng.permutation(shape[1])
        ]  # fancy-indexed columns come back F-ordered: summed in that order
        assert _same(logsumexp(cols, axis=1), scipy_logsumexp(cols, axis=1))
        f = np.asfortranarray(a)
        assert _same(logsumexp(f, axis=1), scipy_logsumexp(f, axis=1))


def test_a_fortran_ordered_matrix_of_many_rows() -> None:
    # pairwise sums along a C-ordered row and sequential sums across an F-ordered one differ in the last bit on
    # some of 4000 rows of 198 (the anchor recipe's bulk): the layout must be kept
    a = np.asfortranarray(np.random.default_rng(0).normal(size=(4000, 198)) * 3)
    assert _same(logsumexp(a, axis=1), scipy_logsumexp(a, axis=1))


def test_ties_count_and_non_finite_rows() -> None:
    a = np.array([[0.0, 0.0, -1.0], [2.0, -np.inf, -np.inf], [-np.inf, -np.inf, -np.inf], [np.inf, 0.0, 1.0]])
    assert _same(logsumexp(a[:2], axis=1), scipy_logsumexp(a[:2], axis=1))
    assert logsumexp(a[0]) == np.log1p(np.exp(-1.0) / 2) + np.log(2.0)  # two maximal entries: m = 2
    out = logsumexp(a, axis=1)  # rows with an infinite maximum go to scipy: -inf and inf as scipy gives them
    assert _same(out, scipy_logsumexp(a, axis=1)) and out[2] == -np.inf and out[3] == np.inf
    assert np.isnan(logsumexp(np.array([np.nan, 1.0])))


def test_other_shapes_and_dtypes_go_to_scipy() -> None:
    a = np.arange(24.0).reshape(2, 3, 4) / 7
    assert _same(logsumexp(a, axis=2), scipy_logsumexp(a, axis=2))
    assert _same(logsumexp(a[0], axis=0), scipy_logsumexp(a[0], axis=0))
    assert _same(logsumexp(a), scipy_logsumexp(a))
    ints = np.array([1, 2, 3])
    assert _same(logsumexp(ints), scipy_logsumexp(ints))
    assert _same(logsumexp(np.array([], float)), scipy_logsumexp(np.array([], float)))


def test_axes_other_than_the_last_go_to_scipy() -> None:
    # a 3-d array reduced along a middle axis, and a vector given a second axis (an error, as scipy raises it)
    a = np.arange(24.0).reshape(2, 3, 4) / 7
    assert _same(logsumexp(a, axis=1), scipy_logsumexp(a, axis=1))
    assert _same(logsumexp(a, axis=-1), scipy_logsumexp(a, axis=-1))
    kept = logsumexp(a, axis=1, keepdims=True)
    assert kept.shape == (2, 1, 4) and _same(kept, scipy_logsumexp(a, axis=1, keepdims=True))
    with pytest.raises(np.exceptions.AxisError):
        logsumexp(np.ones(3), axis=1)
