"""Bad input to theorylab.boolean, theorylab.attention.sparse_parity, theorylab.attention.scb and
theorylab.nn.distill raises clear errors; small API behaviours."""

from __future__ import annotations

import numpy as np
import pytest

from theorylab.attention.scb import SCBTask, expected_preconditioned_grads, prox_project, random_scb_task
from theorylab.attention.sparse_parity import prop9_transformer, prop10_transformer
from theorylab.boolean import (
    SparseParity,
    fourier_coefficient,
    fourier_coefficients,
    hypercube,
    majority,
    majority_coefficient,
    majority_ratio,
    subset_mask,
    walsh_transform,
)
from theorylab.nn import distill as ds


def test_sparse_parity_bad_input() -> None:
    with pytest.raises(ValueError, match="sparsity k = 5 exceeds the dimension d = 3"):
        SparseParity(3, 5)
    with pytest.raises(ValueError, match="d must be a positive int"):
        SparseParity(0, 0)
    with pytest.raises(ValueError, match="distinct coordinates"):
        SparseParity(5, 2, (1, 1))
    with pytest.raises(ValueError, match="too large for exact enumeration"):
        SparseParity(30, 3).all_inputs()
    from theorylab.boolean import HierarchicalParity

    with pytest.raises(ValueError, match="need d >= 21"):
        HierarchicalParity(3, 3, 20)
    with pytest.raises(ValueError, match="D must be a positive int"):
        HierarchicalParity(-1, 3, 20)
    with pytest.raises(ValueError, match="length d = 5"):
        SparseParity(5, 2).sample_batch(np.random.default_rng(0), 4, 6)


def test_fourier_bad_input() -> None:
    with pytest.raises(ValueError, match="too large for exact enumeration"):
        hypercube(40)
    with pytest.raises(ValueError, match="too large for exact enumeration"):
        fourier_coefficients(np.zeros(4), 40)
    with pytest.raises(ValueError, match="d must be >= 0"):
        hypercube(-1)
    with pytest.raises(TypeError, match="d must be an int"):
        hypercube(2.0)
    with pytest.raises(ValueError, match="power of two"):
        walsh_transform(np.zeros(6))
    with pytest.raises(ValueError, match="one value per point"):
        fourier_coefficients(np.zeros(8), 4)
    with pytest.raises(TypeError, match="integer values"):
        fourier_coefficients(np.zeros(8), 3, exact=True)
    with pytest.raises(ValueError, match=r"1 NaN or infinite values \(first at point 5: nan\)"):
        fourier_coefficients(np.where(np.arange(8) == 5, np.nan, 1.0), 3)
    with pytest.raises(ValueError, match="NaN or infinite"):
        fourier_coefficients(lambda x: np.full(len(x), np.inf), 2)
    with pytest.raises(TypeError, match="real numbers"):
        fourier_coefficients(np.array(["a"] * 4), 2)
    with pytest.raises(ValueError, match="coordinates must be ints in"):
        subset_mask([5], 3)
    with pytest.raises(ValueError, match="odd number of coordinates"):
        majority(np.ones((2, 4)))
    with pytest.raises(ValueError, match="odd d only"):
        majority_coefficient(10, 3)
    with pytest.raises(ValueError, match="set size r"):
        majority_coefficient(9, 11)
    with pytest.raises(ValueError, match="even k"):
        majority_ratio(9, 3)


def test_fwht_matches_direct_sum() -> None:
    rng = np.random.default_rng(0)
    f = rng.integers(-5, 6, size=2**7)
    coef = fourier_coefficients(f, 7)
    for S in ([], [0], [2, 5], [0, 1, 2, 3, 4, 5, 6]):
        assert abs(coef[subset_mask(S, 7)] - fourier_coefficient(f, 7, S)) < 1e-12
    assert walsh_transform(f).dtype == np.int64


def test_constructions_bad_input() -> None:
    with pytest.raises(ValueError, match="sparsity k = 4 exceeds the dimension d = 3"):
        prop9_transformer(3, [0, 1, 2, 3])
    with pytest.raises(ValueError, match="scale c must be finite and >= 0"):
        prop9_transformer(5, [0, 1], -1.0)
    with pytest.raises(ValueError, match="distinct coordinates"):
        prop10_transformer(5, [0, 7])
    with pytest.raises(ValueError, match=r"\+-1 points of shape"):
        prop9_transformer(5, [0, 1])(np.zeros((2, 5)))


def test_distill_bad_input() -> None:
    rng = np.random.default_rng(0)
    with pytest.raises(ValueError, match="width m must be a positive int"):
        ds.symmetric_init(5, -4, 2, rng)
    with pytest.raises(ValueError, match="even width"):
        ds.symmetric_init(5, 3, 2, rng)
    with pytest.raises(ValueError, match="sparsity k = 6 exceeds"):
        ds.symmetric_init(5, 4, 6, rng)
    with pytest.raises(ValueError, match="increasing order"):
        ds.ProgressiveSchedule((5, 3))
    with pytest.raises(ValueError, match="temperature"):
        ds.distill_targets(np.zeros((1, 2)), 0.0)
    with pytest.raises(ValueError, match="width must be a positive int"):
        ds.train_mlps(SparseParity(5, 2), -3, [0], 1)
    with pytest.raises(ValueError, match="need teacher checkpoints"):
        ds.train_mlps(SparseParity(5, 2), 4, [0], 1, supervision=[ds.ProgressiveSchedule.one_shot(10)])
    with pytest.raises(ValueError, match="never reaches"):
        ds.locate_transition(np.arange(5), np.full(5, 0.5))


def test_distill_task_is_a_harness_task() -> None:
    from theorylab.nn.tasks import check_batch, check_task

    task = ds.DistillTask(SparseParity(6, 2), lambda x: np.stack([x[:, 0] * x[:, 1], -x[:, 0] * x[:, 1]], 1))
    check_task(task)
    b = check_batch(task.sample_batch(np.random.default_rng(0), 8, 6), task, 8, 6)
    x = 1 - 2 * b.inputs
    assert np.array_equal(b.targets[:, -1].argmax(1), (1 - x[:, 0] * x[:, 1]) // 2)


def test_scb_bad_input() -> None:
    good = random_scb_task(np.random.default_rng(0), 3, 4, 2)
    with pytest.raises(ValueError, match="columns of P must be probability vectors"):
        SCBTask(good.P * 2, good.mu, good.Q)
    with pytest.raises(ValueError, match="stationary"):
        SCBTask(good.P, np.array([0.5, 0.25, 0.25]), good.Q)
    with pytest.raises(ValueError, match="Q must have shape"):
        SCBTask(good.P, good.mu, good.Q[:, :2])
    with pytest.raises(ValueError, match="too many for exact enumeration"):
        random_scb_task(np.random.default_rng(0), 3, 40, 2).contexts()
    with pytest.raises(ValueError, match="unit column sums"):
        expected_preconditioned_grads(good, good.P * 2, good.Q)
    with pytest.raises(ValueError, match="threshold"):
        prox_project(good.Q, -1.0)
    with pytest.raises(ValueError, match="batch size"):
        good.sample(np.random.default_rng(0), 0)
    with pytest.raises(ValueError, match="1 <= Qs <= T"):
        random_scb_task(np.random.default_rng(0), 3, 4, 5)
