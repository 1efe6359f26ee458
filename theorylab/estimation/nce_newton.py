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
    ls, lq = fam.log_density(ts), fam.log_density(tq)
    ps, q = np.exp(ls), np.exp(lq)
    sq = S @ tq
    if S.shape[1] != 2:
        raise ValueError("damped_newton is the 2-parameter Gaussian NCE")
    SS = np.stack([S[:, 0] ** 2, S[:, 0] * S[:, 1], S[:, 1] ** 2], axis=1)  # H = sum w [x^2, x y; x y, y^2]

    def step(tau: Array) -> Array:
        s = expit(S @ tau - sq)  # p/(p+q), log p - log q = T.(tau - tau_q)
        g0, g1 = 0.5 * (q * s - ps * (1 - s)) @ S
        a, b, c = (0.5 * (ps + q) * s * (1 - s)) @ SS
        det = a * c - b * b  # 2x2 solve in closed form
        return tau - (eta / det) * np.array([c * g0 - b * g1, a * g1 - b * g0])

    return nce._run(step, tq, ts, radius, max_steps, stop=True)
