"""Unit tests of theorylab.estimation.nce, theorylab.estimation.contrastive and theorylab.markov.diffusions: bad
input, shapes, and the library routines against independent computations."""

from __future__ import annotations

import math

import numpy as np
import pytest

from theorylab.counterexamples import generate
from theorylab.estimation import contrastive as C
from theorylab.estimation import nce
from theorylab.markov.diffusions import OU, Langevin, gaussian_tv_1d, log_cosh_example


# ------------------------------------------------------------------------------------------ bad input
@pytest.mark.parametrize("R", [0.0, -1.0, float("nan"), float("inf")])
def test_nonpositive_gap_rejected(R):
    with pytest.raises(ValueError, match="mean gap R must be a finite number > 0"):
        nce.gauss_setup(R)
    with pytest.raises(ValueError, match="mean gap R"):
        nce.landscape_constants(R)
    with pytest.raises(ValueError, match="mean gap R"):
        nce.tau_star(R)


@pytest.mark.parametrize("eta", [0.0, -0.1, float("nan")])
def test_nonpositive_step_rejected(eta):
    fam, ts, tq = nce.gauss_setup(2.0)
    g = nce.nce_grad_fn(fam, ts, tq)
    with pytest.raises(ValueError, match="step size eta must be > 0"):
        nce.gd(g, tq, eta, target=ts)
    with pytest.raises(ValueError, match="step size eta must be > 0"):
        nce.ngd(g, tq, eta, target=ts)


def test_bad_runner_arguments():
    fam, ts, tq = nce.gauss_setup(2.0)
    g = nce.nce_grad_fn(fam, ts, tq)
    with pytest.raises(ValueError, match="radius must be > 0"):
        nce.gd(g, tq, 0.1, target=ts, radius=0)
    with pytest.raises(ValueError, match="max_steps"):
        nce.gd(g, tq, 0.1, target=ts, max_steps=-1)
    with pytest.raises(ValueError, match="method must be 'gd' or 'ngd'"):
        nce.gauss_steps(2.0, "adam")
    with pytest.raises(ValueError, match="form must be 'direct' or 'fused'"):
        nce.nce_grad_fn(fam, ts, tq, form="other")


def test_family_validation():
    with pytest.raises(ValueError, match="last sufficient statistic must be the constant -1"):
        nce.ExpFamily(np.ones((3, 2)), np.zeros(3))
    with pytest.raises(ValueError, match="log_base must have shape"):
        nce.ExpFamily(np.column_stack([np.arange(3.0), -np.ones(3)]), np.zeros(4))
    with pytest.raises(ValueError, match="features must be"):
        nce.finite_family(np.ones(3))
    with pytest.raises(ValueError, match="grid spacing h must be > 0"):
        nce.gaussian_mean_family(-1, 1, 0)
    with pytest.raises(ValueError, match="tau must have shape"):
        nce.nce_loss(nce.finite_family(np.eye(3)), np.zeros(2), np.zeros(4), np.zeros(4))
    with pytest.raises(ValueError, match="need at least one sample"):
        nce.sample_nce_grad(np.zeros(2), np.array([]), np.array([1.0]), nce.tau_q())


@pytest.mark.parametrize("rho", [0.0, -1.0, float("nan")])
def test_non_mixing_diffusions_rejected(rho):
    with pytest.raises(ValueError, match="rho > 0"):
        OU(rho)
    with pytest.raises(ValueError, match="rho > 0"):
        Langevin(lambda x: x * x, lambda x: 2 * x, rho)


def test_non_positive_definite_noise_and_bad_task():
    with pytest.raises(ValueError, match="noise variance must be > 0"):
        C.GaussianNoise(0.0)
    with pytest.raises(ValueError, match="noise variance must be > 0"):
        C.GaussianNoise(-2.0)
    with pytest.raises(ValueError, match="observation interval eta must be > 0"):
        C.ContrastivePairs(OU(1.0), 0.0, C.GaussianNoise(1.0))
    with pytest.raises(ValueError, match="q has dimension 2"):
        C.ContrastivePairs(OU(1.0), 0.5, C.GaussianNoise(1.0, 2))
    with pytest.raises(ValueError, match="strictly inside"):
        C.kernel_from_classifier(np.array([1.0]), np.array([1.0]))
    with pytest.raises(ValueError, match="time t must be a finite number > 0"):
        OU(1.0).kernel_params(0.0)
    with pytest.raises(ValueError, match="dimension d"):
        OU(1.0, 0)
    with pytest.raises(ValueError, match="s1 must be"):
        gaussian_tv_1d(0, 0, 0, 1)
    with pytest.raises(ValueError, match="delta must lie in"):
        C.min_T_thm1(0.1, 1.5)
    with pytest.raises(ValueError, match="Delta_gen must be > 0"):
        C.min_T_thm1(0.0, 0.05)
    with pytest.raises(TypeError, match="callables"):
        Langevin(1.0, 2.0, 1.0)


def test_fit_power_validation_and_recovery():
    x = np.geomspace(1, 100, 20)
    b, (lo, hi) = nce.fit_power(x, 3 * x**-2.5 * np.exp(0.5 / x**2), corrections=1)
    assert abs(b + 2.5) < 1e-9 and lo <= -2.5 <= hi
    with pytest.raises(ValueError, match="positive"):
        nce.fit_power([1, 2, 3, 4, 5], [1, -1, 1, 1, 1])
    with pytest.raises(ValueError, match="need more than"):
        nce.fit_power([1, 2, 3], [1, 2, 3])


# ------------------------------------------------------------------------------------------ library routines
def test_ou_sample_path_matches_the_stationary_and_lag_covariance():
    ou = OU(2.0)
    x = ou.sample_path(np.random.default_rng(0), 200_000, 0.3)[:, 0]
    a, _ = ou.kernel_params(0.3)
    # 200,000 correlated draws: standard error of the variance ~ 0.5 * sqrt(2 (1+a^2)/(1-a^2) / n) ~ 3e-3
    assert abs(x.var() - 0.5) < 0.02
    assert abs(np.mean(x[1:] * x[:-1]) / x.var() - a) < 0.02


def test_gaussian_tv_special_cases():
    assert gaussian_tv_1d(0, 1, 0, 1) == 0.0
    assert abs(gaussian_tv_1d(0, 1, 1, 1) - (2 * 0.5 * math.erf(0.5 / math.sqrt(2)))) < 1e-12
    assert abs(gaussian_tv_1d(0, 1, 3, 2) - gaussian_tv_1d(3, 2, 0, 1)) < 1e-12
    ou = OU(1.0)
    assert np.allclose(ou.tv_from_many([0.0, 1.0, -2.0], 0.7), [ou.tv_from(z, 0.7) for z in (0.0, 1.0, -2.0)])


def test_langevin_grid_kernel_matches_ou():
    ou = OU(1.0)
    lang = Langevin(lambda x: x * x / 2, lambda x: x, 1.0)
    grid = np.linspace(-8, 8, 401)
    K = lang.kernel_on_grid(0.5, grid)
    assert np.allclose(K.sum(axis=1), 1, atol=1e-10)
    h = grid[1] - grid[0]
    i = 200  # z = 0
    exact = np.exp(ou.kernel_logpdf(grid[i : i + 1, None], grid[:, None], 0.5))
    assert np.abs(K[i] / h - exact).max() < 5e-3  # first-order generator discretisation, h = 0.04
    ex = log_cosh_example(1.0)
    path = ex.sample_path(np.random.default_rng(1), 200, 0.1, substeps=5)
    assert path.shape == (200, 1) and np.all(np.isfinite(path))


def test_counterexample_generators_registered():
    for gid in (
        "nce.prop7",
        "nce.lem47",
        "nce.lem48",
        "nce.gauss_setup",
        "contrastive.eq2.2",
        "contrastive.lemma5",
        "contrastive.thm1",
    ):
        out = generate(gid)
        assert out and all(isinstance(v, np.ndarray) for v in out.values())


def test_sample_gradient_is_unbiased():
    rng = np.random.default_rng(0)
    R = 2.0
    fam, ts, tq = nce.gauss_setup(R, h=0.02)
    tau = np.array([1.0, 1.5])
    g = nce.nce_grad(fam, tau, ts, tq)
    gs = nce.sample_nce_grad(tau, rng.normal(R, 1, 400_000), rng.normal(0, 1, 400_000), tq)
    assert np.allclose(gs, g, atol=5e-3)  # sd of each coordinate ~ 1/sqrt(4e5) ~ 1.6e-3


def _reference_run(step, tau0, target, radius: float, max_steps: int) -> tuple[int | None, np.ndarray]:
    """The plain loop the optimisers must agree with to the bit: numpy arrays, numpy norms (``hypot`` of the
    difference for two parameters)."""
    tau, dists, hit = np.array(tau0, float), [np.linalg.norm(np.asarray(tau0, float) - target)], None
    for t in range(1, max_steps + 1):
        tau = step(tau)
        dists.append(math.hypot(*(tau - target)) if tau.size == 2 else np.linalg.norm(tau - target))
        if dists[-1] <= radius:
            hit = t
            break
    return hit, np.array(dists)


@pytest.mark.parametrize("dim", [2, 3])
def test_gd_and_ngd_runs_equal_the_plain_loop_to_the_bit(dim: int) -> None:
    if dim == 2:
        fam, ts, tq = nce.gauss_setup(3.0, h=0.05)
    else:  # a two-statistic finite family: tau has three entries (the generic distance branch)
        fam = nce.finite_family(np.array([[0.0, 1.0], [1.0, -0.5], [2.0, 0.3], [-1.0, 0.8]]))
        ts, tq = fam.normalised(np.array([1.0, 0.5])), fam.normalised(np.array([-0.5, 0.0]))
    grad = nce.nce_grad_fn(fam, ts, tq)
    eta_gd = 2.0 if dim == 2 else 1.0
    for method, eta, step in (
        ("gd", eta_gd, lambda t: t - eta_gd * grad(t)),
        ("ngd", 0.05, lambda t: t - 0.05 * grad(t) / np.linalg.norm(grad(t))),
    ):
        run = getattr(nce, method)(grad, tq, eta, target=ts, radius=0.5, max_steps=4000)
        hit, dists = _reference_run(step, tq, ts, 0.5, 4000)
        assert run.steps_to_radius == hit is not None and hit > 10, (method, hit)
        assert run.distances.tobytes() == dists.tobytes(), method
