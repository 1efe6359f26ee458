"""Fig 4.2 of Liu §4.1.6 (``001_6a230b9a9faf2198.txt``), 1-D panel: NCE with GD, NCE with NGD and eNCE with NGD on
the Gaussian-mean setup (``P_* = N(R, 1)``, ``Q = N(0, 1)``, ``R = 16``), 100 updates from ``tau_q``, the best
step size of a grid per method, plotting the best distance ``min_{s <= t} ||tau_s - tau_*||`` so far.

The text gives neither the step-size grid nor the batch; the defaults follow the claim catalog's reading (grid
``1e-3, 1e-2, 1e-1, 1``, fresh batches of ``10^4`` samples from each distribution per step). ``population`` runs use
the quadrature gradients of :mod:`theorylab.estimation.nce`; ``sample`` runs the empirical gradients.

Empirical eNCE gradient (``u = T . (tau - tau_q)``, base measures cancel):
``grad L_exp = 1/4 mean_Q[e^{u/2} T] - 1/4 mean_*[e^{-u/2} T]``.

16-D panel (the catalog's reading of the text's "Uniform[8 x 0.75, 8 x 1.5]"): ``Q = N(0, I)``,
``P_* = N(0, diag(s))`` with ``s_i ~ Uniform[6, 12]``; statistics ``T(x) = [-x_i^2/2 (16), x_i (16), -1]`` and
``tau = [1/s_i, mu_i/s_i, sum_i (mu_i^2/(2 s_i) + log(2 pi s_i)/2)]`` (footnote 7), 33 parameters. Only sample runs
exist (no quadrature in 16 dimensions).
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from theorylab.estimation import nce

Array = np.ndarray

FIG42_ETAS = (1e-3, 1e-2, 1e-1, 1.0)
FIG42_METHODS = ("nce_gd", "nce_ngd", "ence_ngd")

__all__ = [
    "FIG42_ETAS",
    "FIG42_METHODS",
    "sample_ence_grad",
    "best_distances",
    "population_run",
    "sample_run",
    "diag_gaussian_stats",
    "diag_gaussian_tau",
    "setup_16d",
    "sample_run_16d",
    "best_over_grid",
]


def sample_ence_grad(tau, x_star, x_q, t_q, stats: Callable[[Array], Array] = nce.gaussian_stats) -> Array:
    """Empirical eNCE gradient ``1/4 mean_Q[e^{u/2} T] - 1/4 mean_*[e^{-u/2} T]`` from samples of ``P_*`` and ``Q``."""
    tau, t_q = np.asarray(tau, dtype=float), np.asarray(t_q, dtype=float)
    Ts, Tq = stats(x_star), stats(x_q)
    if len(Ts) == 0 or len(Tq) == 0:
        raise ValueError("need at least one sample from each of P_* and Q")
    us, uq = Ts @ (tau - t_q), Tq @ (tau - t_q)
    return 0.25 * ((np.exp(uq / 2) @ Tq) / len(Tq) - (np.exp(-us / 2) @ Ts) / len(Ts))


def _check_method(method: str) -> tuple[str, bool]:
    if method not in FIG42_METHODS:
        raise ValueError(f"method must be one of {FIG42_METHODS}, got {method!r}")
    loss, opt = method.split("_")
    return loss, opt == "ngd"


def best_distances(
    step_grad: Callable[[Array], Array], eta: float, normalise: bool, R: float, steps: int
) -> Array:
    """``min_{s <= t} ||tau_s - tau_*||`` for ``t = 0..steps`` of GD (or NGD if ``normalise``) from ``tau_q``;
    ``step_grad`` is called once per update (a fresh batch for sample runs)."""
    if not (math.isfinite(eta) and eta > 0):
        raise ValueError(f"step size eta must be > 0, got {eta}")
    if int(steps) != steps or steps < 1:
        raise ValueError(f"steps must be a positive integer, got {steps}")
    ts, tau = nce.tau_star(R), nce.tau_q()
    d = np.empty(int(steps) + 1)
    d[0] = np.linalg.norm(tau - ts)
    for t in range(1, int(steps) + 1):
        g = step_grad(tau)
        n = float(np.linalg.norm(g))
        if normalise:
            g = g / n if n > 0 else g
        tau = tau - eta * g
        d[t] = np.linalg.norm(tau - ts) if np.all(np.isfinite(tau)) else np.inf
    return np.minimum.accumulate(d)


def population_run(R: float, method: str, eta: float, steps: int = 100, h: float = 0.1) -> Array:
    """Best distances of one population run (quadrature gradient on ``[-12, R + 12]``, spacing ``h``; the trapezoid
    error ``exp(-2 pi^2/(|theta| h))`` is below 1e-5 for ``|theta| <= 16``)."""
    loss, normalise = _check_method(method)
    fam, ts, tq = nce.gauss_setup(R, h=h)
    if loss == "nce":
        grad = nce.nce_grad_fn(fam, ts, tq)
    else:

        def grad(tau: Array) -> Array:
            return nce.ence_grad(fam, tau, ts, tq)

    return best_distances(grad, eta, normalise, R, steps)


def sample_run(
    R: float, method: str, eta: float, rng: np.random.Generator, steps: int = 100, batch: int = 10_000
) -> Array:
    """Best distances of one sample run: a fresh batch of ``batch`` samples from each of ``P_*`` and ``Q`` per
    update."""
    loss, normalise = _check_method(method)
    if not isinstance(rng, np.random.Generator):
        raise TypeError(f"rng must be a numpy Generator, got {type(rng).__name__}")
    if int(batch) != batch or batch < 1:
        raise ValueError(f"batch must be a positive integer, got {batch}")
    tq = nce.tau_q()
    estimator = nce.sample_nce_grad if loss == "nce" else sample_ence_grad

    def grad(tau: Array) -> Array:
        return estimator(tau, rng.normal(R, 1.0, int(batch)), rng.normal(0.0, 1.0, int(batch)), tq)

    with np.errstate(over="ignore", invalid="ignore"):
        return best_distances(grad, eta, normalise, R, steps)


def diag_gaussian_stats(x) -> Array:
    """``T(x) = [-x^2/2, x, -1]`` (coordinate-wise) for ``x`` of shape ``(n, d)``: ``(n, 2d + 1)``."""
    x = np.asarray(x, dtype=float)
    if x.ndim != 2:
        raise ValueError(f"x must be an (n, d) array of samples, got shape {x.shape}")
    return np.column_stack([-(x**2) / 2, x, -np.ones(len(x))])


def diag_gaussian_tau(variances) -> Array:
    """Extended parameter of ``N(0, diag(variances))``: ``[1/s, 0, sum log(2 pi s)/2]``."""
    s = np.asarray(variances, dtype=float)
    if s.ndim != 1 or not np.all(s > 0):
        raise ValueError("variances must be a 1-D array of positive numbers")
    return np.concatenate([1 / s, np.zeros(len(s)), [0.5 * np.log(2 * np.pi * s).sum()]])


def setup_16d(rng: np.random.Generator, d: int = 16) -> tuple[Array, Array, Array]:
    """``(variances s_i ~ Uniform[6, 12], tau_*, tau_q)`` of the 16-D panel."""
    s = rng.uniform(6.0, 12.0, int(d))
    return s, diag_gaussian_tau(s), diag_gaussian_tau(np.ones(int(d)))


def sample_run_16d(
    variances, method: str, eta: float, rng: np.random.Generator, steps: int = 100, batch: int = 10_000
) -> Array:
    """Best distances of one 16-D sample run from ``tau_q`` (``P_* = N(0, diag(s))``, ``Q = N(0, I)``)."""
    loss, normalise = _check_method(method)
    s = np.asarray(variances, dtype=float)
    ts, tq = diag_gaussian_tau(s), diag_gaussian_tau(np.ones(len(s)))
    estimator = nce.sample_nce_grad if loss == "nce" else sample_ence_grad
    if not (math.isfinite(eta) and eta > 0):
        raise ValueError(f"step size eta must be > 0, got {eta}")
    tau = tq.copy()
    d = np.empty(int(steps) + 1)
    d[0] = np.linalg.norm(tau - ts)
    with np.errstate(over="ignore", invalid="ignore"):
        for t in range(1, int(steps) + 1):
            xs = rng.normal(size=(int(batch), len(s))) * np.sqrt(s)
            xq = rng.normal(size=(int(batch), len(s)))
            g = estimator(tau, xs, xq, tq, stats=diag_gaussian_stats)
            n = float(np.linalg.norm(g))
            tau = tau - eta * (g / n if normalise and n > 0 else g)
            d[t] = np.linalg.norm(tau - ts) if np.all(np.isfinite(tau)) else np.inf
    return np.minimum.accumulate(d)


def best_over_grid(runs: dict[float, Array]) -> tuple[float, float]:
    """``(eta, final best distance)`` of the step size whose run ends nearest to ``tau_*``."""
    if not runs:
        raise ValueError("no runs to choose from")
    eta = min(runs, key=lambda e: float(runs[e][-1]))
    return eta, float(runs[eta][-1])
