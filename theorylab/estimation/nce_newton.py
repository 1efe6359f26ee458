"""Damped Newton on the population Gaussian NCE (Liu §4.1.3, Theorem 18 / Lemma 59).

``tau <- tau - eta H(tau)^{-1} grad L(tau)`` with the step ``eta = lambda_rho/lambda_M`` of Theorem 18, where
``lambda_rho = min_theta sigma_min(H(tau_theta))`` and ``lambda_M = max_theta sigma_max(H(tau_theta))`` over the
normalised parameters ``tau_theta = [theta, theta^2/2 + log sqrt(2 pi)]``, ``theta in Theta = [0, R]``.
"""

from __future__ import annotations

import math

import numpy as np
from scipy.special import expit

from theorylab.estimation import nce

Array = np.ndarray


def newton_step_size(R: float, n_grid: int = 201, h: float = 0.1) -> tuple[float, float, float]:
    """``(lambda_rho, lambda_M, eta = lambda_rho/lambda_M)`` over a grid of ``Theta = [0, R]``."""
    fam, ts, tq = nce.gauss_setup(R, h=h)
    if int(n_grid) != n_grid or n_grid < 2:
        raise ValueError(f"n_grid must be an integer >= 2, got {n_grid}")
    thetas = np.linspace(0.0, R, int(n_grid))
    eigs = np.array(
        [np.linalg.eigvalsh(nce.nce_hessian(fam, fam.normalised(np.array([t])), ts, tq)) for t in thetas]
    )
    lam_rho, lam_m = float(eigs[:, 0].min()), float(eigs[:, -1].max())
    return lam_rho, lam_m, lam_rho / lam_m


def damped_newton(
    R: float, eta: float, radius: float = 1.0, max_steps: int = 10**6, h: float = 0.1
) -> nce.Run:
    """Damped Newton from ``tau_q`` to the ``radius`` ball around ``tau_*`` (gradient and Hessian fused: one
    exponential per step)."""
    if not (math.isfinite(eta) and 0 < eta <= 1):
        raise ValueError(f"the Newton step size eta must be in (0, 1], got {eta}")
    fam, ts, tq = nce.gauss_setup(R, h=h)
    S = fam.stats
    if S.shape[1] != 2:
        raise ValueError("damped_newton is the 2-parameter Gaussian NCE")
    ps, q = np.exp(fam.log_density(ts)), np.exp(fam.log_density(tq))
    sq = S @ tq
    # with s = p/(p+q) = expit(T.(tau - tau_q)) on the grid and A = (p_* + q)/2:
    #   grad = sum (A s - p_*/2) T,   H = sum A s (1 - s) T T^T,   T T^T stored as [x^2, x y, y^2]
    SS = np.stack([S[:, 0] ** 2, S[:, 0] * S[:, 1], S[:, 1] ** 2], axis=1)
    A = 0.5 * (ps + q)
    M = np.concatenate([S, SS], axis=1)  # one product gives the first term of grad and of H
    c0, c1 = ((0.5 * ps) @ S).tolist()
    tau = np.array(tq, dtype=float)

    def step(t: Array) -> Array:
        s = expit(S @ t - sq)
        As = A * s
        g0, g1, a, b, c = (As @ M).tolist()
        a2, b2, c2 = ((As * s) @ SS).tolist()
        g0, g1, a, b, c = g0 - c0, g1 - c1, a - a2, b - b2, c - c2
        f = eta / (a * c - b * b)  # 2x2 solve in closed form
        tau[0], tau[1] = t[0] - f * (c * g0 - b * g1), t[1] - f * (a * g1 - b * g0)
        return tau

    return nce._run(step, tq, ts, radius, max_steps, stop=True)
