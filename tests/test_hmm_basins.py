"""The E5 basin radius and statistical floor (``theorylab.hmm.basins``)."""

import numpy as np
import pytest

from theorylab.hmm import GHMM, theorem8_case2_pair
from theorylab.hmm.basins import (
    _tangent_basis,
    basin_radius,
    ghmm_predictor_error,
    ghmm_tangent_curvatures,
    ghmm_tangent_moments,
    statistical_floor,
)
from theorylab.testing import rejects

pytest.importorskip("torch")


def _model() -> GHMM:
    return GHMM(np.eye(3)[:, :2], np.array([[0.8, 0.2], [0.2, 0.8]]))


def test_predictor_error_is_zero_for_the_model_and_its_twin():
    m = _model()
    err, se = ghmm_predictor_error(m, [m, theorem8_case2_pair(m)], "x1x3|x2", n=2000)
    assert np.all(err < 1e-28) and np.all(se < 1e-28)  # the same predictor: zero up to round-off


def test_tangent_basis_is_orthonormal_and_orthogonal_to_the_constraints():
    M = np.linalg.qr(np.random.default_rng(0).standard_normal((4, 3)))[0]
    Q = _tangent_basis(M, 3)
    assert Q.shape == (21, 13)  # 3 (4 - 1) for unit columns + (3 - 1)^2 for doubly stochastic
    assert np.allclose(Q.T @ Q, np.eye(13), atol=1e-12)
    dM, dT = (Q[:12].T.reshape(13, 4, 3), Q[12:].T.reshape(13, 3, 3))
    assert np.abs(np.einsum("dj,sdj->sj", M, dM)).max() < 1e-12
    assert np.abs(dT.sum(axis=1)).max() < 1e-12 and np.abs(dT.sum(axis=2)).max() < 1e-12


def test_G_is_the_curvature_of_the_predictor_error_and_bounds_the_distance():
    """On the same Monte Carlo points, (eps(t delta) + eps(-t delta)) / (2 t^2) = delta^T G delta + O(t^2) for a
    tangent delta (here the odd terms cancel; t = 1e-3 leaves a relative O(1e-6)); sqrt(eps / mu) bounds the
    distance; the floor is tr(G^-1 V) / N."""
    m = _model()
    n = 4000
    G, V = ghmm_tangent_moments(m, "x1x3|x2", n=n)
    Q = _tangent_basis(m.M, 2)
    delta = np.zeros(10)
    delta[6:] = [-1.0, 1.0, 1.0, -1.0]  # T -> T + t [[-1, 1], [1, -1]]: doubly stochastic
    delta[[0, 2]] = [0.0, 0.5]  # first mean column (1, 0, 0) moves along (0, 0.5, 0): orthogonal to it
    c = Q.T @ delta
    assert np.allclose(Q @ c, delta, atol=1e-12)  # delta is tangent
    t = 1e-3

    def moved(s):
        return GHMM(m.M + s * delta[:6].reshape(3, 2), m.T + s * delta[6:].reshape(2, 2), validate=False)

    e = ghmm_predictor_error(m, [moved(t), moved(-t)], "x1x3|x2", n=n)[0]
    assert np.isclose(e.sum() / (2 * t**2), c @ G @ c, rtol=1e-4)
    mu = np.linalg.eigvalsh(G)[0]
    assert np.isclose(mu, ghmm_tangent_curvatures(m, "x1x3|x2", n=n)[0], rtol=1e-12)
    assert np.abs(t * delta).max() <= basin_radius(
        e[0], mu
    )  # the distance (max abs entry) is within the radius
    assert np.isclose(statistical_floor(G, V, 1000), np.trace(np.linalg.solve(G, V)) / 1000, rtol=1e-14)


def test_basins_reject_bad_input():
    m = _model()
    rejects(lambda: basin_radius(1e-3, 0.0), "mu must be a positive curvature")
    rejects(lambda: basin_radius(-1.0, 1.0), "predictor errors must be >= 0")
    rejects(lambda: statistical_floor(np.eye(2), np.eye(2), 0), "n_samples must be a positive integer")
    rejects(lambda: ghmm_predictor_error(m, [m], "x2|x1"), "task must be one of")
    rejects(lambda: ghmm_predictor_error(m, [m], "x1x3|x2", n=1), "n must be an integer >= 2")
    rejects(lambda: ghmm_tangent_moments(np.eye(2), "x1x3|x2"), "model must be a GHMM", TypeError)
