"""The optimiser runs of ``theorylab.estimation.nce`` off the Gaussian (2-parameter) path: a 3-parameter run pins its
distances, its hitting step and its step count, and a zero gradient keeps normalised GD where it is."""

import numpy as np

from theorylab.estimation.nce import gd, ngd

TARGET = np.array([1.0, -2.0, 0.5])
START = TARGET + np.array([3.0, 4.0, 12.0])  # 13 away from the target


def test_ngd_in_three_dimensions_walks_the_ray_one_unit_per_step() -> None:
    # grad = tau - target: each NGD step of eta = 1 moves one unit along the ray to the target, so the distances
    # are 13, 12, 11, ... (to round-off, ~1e-14 here) and the run first enters the ball of radius 2.5 at step 11
    run = ngd(lambda t: t - TARGET, START, 1.0, target=TARGET, radius=2.5)
    assert run.steps_to_radius == 11 and run.n_steps == 11
    np.testing.assert_allclose(run.distances, 13.0 - np.arange(12), rtol=0, atol=1e-12)
    np.testing.assert_allclose(run.tau, TARGET + 2 / 13 * np.array([3.0, 4.0, 12.0]), rtol=0, atol=1e-12)
    long = ngd(lambda t: t - TARGET, START, 1.0, target=TARGET, radius=2.5, max_steps=5, stop=False)
    assert long.steps_to_radius is None and long.n_steps == 5 and len(long.distances) == 6


def test_gd_in_three_dimensions_keeps_running_without_stop() -> None:
    # tau - target halves each step: distances 13 / 2**t; within radius 1 from t = 4 on (13/16)
    run = gd(lambda t: t - TARGET, START, 0.5, target=TARGET, radius=1.0, max_steps=6, stop=False)
    assert run.steps_to_radius == 4 and run.n_steps == 6
    np.testing.assert_allclose(run.distances, 13.0 / 2.0 ** np.arange(7), rtol=1e-14, atol=0)


def test_a_zero_gradient_keeps_ngd_in_place() -> None:
    for tau0 in (TARGET, TARGET[:2]):  # both paths: the 3-parameter one and the Gaussian one
        run = ngd(lambda t, c=tau0: t - c, tau0, 0.3, target=tau0, radius=0.1, max_steps=3, stop=False)
        assert np.array_equal(run.tau, tau0) and np.array_equal(run.distances, np.zeros(4))
        assert run.steps_to_radius == 0 and run.n_steps == 3
