"""Validators of the standing assumptions of Liu §4.1 (``001_6a230b9a9faf2198.txt``, Assumptions 11-15) on a
parameter set ``Theta`` given by points, and their closed forms for the 1-D unit-variance Gaussian mean family.

* Assumption 11: ``||theta||_2 <= omega`` on ``Theta``.
* Assumption 12: ``|log Z(theta_1) - log Z(theta_2)| <= beta_Z ||theta_1 - theta_2||``.
* Assumption 13: ``lambda_min <= sigma(E_theta[T T^T]) <= lambda_max`` (``T = [T~, -1]``, the extended statistic).
* Assumption 14: ``||grad_theta sigma_max(E_theta[T T^T])|| <= gamma_max`` (same for ``sigma_min``).
* Assumption 15: for ``||tau - tau_*|| <= 1/beta_Z``, ``sigma_max(H(tau)) <= beta_u sigma_max(H(tau_*))`` and
  ``sigma_min(H(tau)) >= beta_l sigma_min(H(tau_*))``.

Gaussian family (``T(x) = [x, -1]``, ``h(x) = e^{-x^2/2}``): ``log Z(theta) = theta^2/2 + log sqrt(2 pi)``,
``E_theta[T T^T] = [[1 + theta^2, -theta], [-theta, 1]]`` with trace ``2 + theta^2`` and determinant 1, so
``sigma_max = (2 + theta^2 + |theta| sqrt(theta^2 + 4))/2`` and ``sigma_min = 1/sigma_max``. At ``theta = 0`` the
two singular values meet (both 1) and ``sigma_max`` has a kink (one-sided slopes -1 and +1): Assumption 14's
gradient exists only off ``theta = 0``; in the Lipschitz reading ``gamma_max = omega + (omega^2 + 2)/sqrt(omega^2 +
4)`` on ``[-omega, omega]``.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from theorylab.estimation.nce import ExpFamily

__all__ = [
    "parameter_norm_bound",
    "check_assumption11",
    "log_partition_lipschitz",
    "check_assumption12",
    "fisher_singular_values",
    "check_assumption13",
    "fisher_singular_value_slopes",
    "check_assumption14",
    "hessian_ball_constants",
    "check_assumption15",
    "gaussian_fisher",
    "gaussian_sigma_max",
    "gaussian_sigma_max_slope",
    "gaussian_constants",
]

Array = np.ndarray


def _thetas(fam: ExpFamily, thetas) -> Array:
    th = np.asarray(thetas, dtype=float)
    if th.ndim == 1 and fam.dim == 2:
        th = th[:, None]
    if th.ndim != 2 or th.shape[1] != fam.dim - 1 or len(th) == 0:
        raise ValueError(
            f"thetas must be a non-empty (n, {fam.dim - 1}) array of parameters, got shape {th.shape}"
        )
    if not np.all(np.isfinite(th)):
        raise ValueError("thetas must be finite")
    return th


def _positive(name: str, value: float) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float | np.floating) or not value > 0:
        raise ValueError(f"{name} must be a number > 0, got {value!r}")
    return float(value)


# ----------------------------------------------------------------------------------------------- Assumption 11
def _points(thetas) -> Array:
    th = np.asarray(thetas, dtype=float)
    th = th[:, None] if th.ndim == 1 else th
    if th.ndim != 2 or th.size == 0 or not np.all(np.isfinite(th)):
        raise ValueError(
            f"thetas must be a non-empty (n,) or (n, d) array of finite parameters, got {th.shape}"
        )
    return th


def parameter_norm_bound(thetas) -> float:
    """The smallest ``omega`` of Assumption 11 on the points: ``max ||theta||_2``."""
    return float(np.linalg.norm(_points(thetas), axis=1).max())


def check_assumption11(thetas, omega: float) -> None:
    """ValueError naming the first parameter with ``||theta|| > omega``."""
    omega = _positive("omega", omega)
    th = _points(thetas)
    norms = np.linalg.norm(th, axis=1)
    bad = np.flatnonzero(norms > omega)
    if bad.size:
        raise ValueError(
            f"Assumption 11 fails: ||theta|| = {norms[bad[0]]:.6g} > omega = {omega:.6g} at {th[bad[0]]}"
        )


# ----------------------------------------------------------------------------------------------- Assumption 12
def log_partition_lipschitz(fam: ExpFamily, thetas) -> float:
    """The smallest ``beta_Z`` of Assumption 12 over all pairs of the points: ``max |dlog Z| / ||d theta||``."""
    th = _thetas(fam, thetas)
    if len(th) < 2:
        raise ValueError("need at least two parameters to bound a Lipschitz constant")
    logz = np.array([fam.log_partition(t) for t in th])
    i, j = np.triu_indices(len(th), 1)
    dist = np.linalg.norm(th[i] - th[j], axis=1)
    if np.any(dist == 0):
        raise ValueError("thetas must be distinct")
    return float((np.abs(logz[i] - logz[j]) / dist).max())


def check_assumption12(fam: ExpFamily, thetas, beta_z: float) -> None:
    """ValueError if some pair of the points has ``|log Z(theta_1) - log Z(theta_2)| > beta_Z ||theta_1 - theta_2||``
    (relative slack 1e-12 for rounding)."""
    beta_z = _positive("beta_Z", beta_z)
    worst = log_partition_lipschitz(fam, thetas)
    if worst > beta_z * (1 + 1e-12):
        raise ValueError(f"Assumption 12 fails: log Z has slope {worst:.6g} > beta_Z = {beta_z:.6g} on Theta")


# ----------------------------------------------------------------------------------------------- Assumption 13
def fisher_singular_values(fam: ExpFamily, thetas) -> Array:
    """``(n, 2)`` array of ``(sigma_min, sigma_max)`` of ``E_theta[T T^T]`` (extended statistic) at each point."""
    th = _thetas(fam, thetas)
    eig = np.array([np.linalg.eigvalsh(fam.second_moment(t)) for t in th])
    return np.column_stack([eig[:, 0], eig[:, -1]])


def check_assumption13(fam: ExpFamily, thetas, lam_min: float, lam_max: float) -> None:
    """ValueError naming a point where ``sigma_min < lambda_min`` or ``sigma_max > lambda_max`` (relative slack
    1e-12)."""
    lam_min, lam_max = _positive("lambda_min", lam_min), _positive("lambda_max", lam_max)
    sv = fisher_singular_values(fam, thetas)
    th = _thetas(fam, thetas)
    for k, (lo, hi) in enumerate(sv):
        if lo < lam_min * (1 - 1e-12) or hi > lam_max * (1 + 1e-12):
            raise ValueError(
                f"Assumption 13 fails at theta = {th[k]}: singular values [{lo:.6g}, {hi:.6g}] not within "
                f"[lambda_min, lambda_max] = [{lam_min:.6g}, {lam_max:.6g}]"
            )


# ----------------------------------------------------------------------------------------------- Assumption 14
def fisher_singular_value_slopes(fam: ExpFamily, thetas, step: float = 1e-4) -> Array:
    """``(n, 2)`` array of ``||grad sigma_min||, ||grad sigma_max||`` by central differences (coordinate-wise,
    spacing ``step``); meaningless where the two singular values meet (a kink)."""
    th = _thetas(fam, thetas)
    step = _positive("step", step)
    out = np.zeros((len(th), 2))
    for k, t in enumerate(th):
        g = np.zeros((2, len(t)))
        for j in range(len(t)):
            e = np.zeros(len(t))
            e[j] = step
            hi, lo = fisher_singular_values(fam, np.array([t + e, t - e]))
            g[:, j] = (hi - lo) / (2 * step)
        out[k] = np.linalg.norm(g, axis=1)
    return out


def check_assumption14(
    fam: ExpFamily, thetas, gamma_min: float, gamma_max: float, step: float = 1e-4
) -> None:
    """ValueError naming a point where a singular value of the Fisher matrix changes faster than allowed
    (relative slack 1e-6 for the central differences)."""
    gamma_min, gamma_max = _positive("gamma_min", gamma_min), _positive("gamma_max", gamma_max)
    th = _thetas(fam, thetas)
    slopes = fisher_singular_value_slopes(fam, th, step)
    for k, (smin, smax) in enumerate(slopes):
        if smin > gamma_min * (1 + 1e-6) or smax > gamma_max * (1 + 1e-6):
            raise ValueError(
                f"Assumption 14 fails at theta = {th[k]}: slopes (sigma_min, sigma_max) = ({smin:.6g}, {smax:.6g}) "
                f"exceed (gamma_min, gamma_max) = ({gamma_min:.6g}, {gamma_max:.6g})"
            )


# ----------------------------------------------------------------------------------------------- Assumption 15
def hessian_ball_constants(
    hessian: Callable[[Array], Array], tau_star, radius: float, n_dirs: int = 48, n_radii: int = 4
) -> tuple[float, float]:
    """The tightest ``(beta_u, beta_l)`` of Assumption 15 on a polar grid of the ball ``||tau - tau_*|| <= radius``
    (2-D parameters): ``max sigma_max(H)/sigma_max(H_*)`` and ``min sigma_min(H)/sigma_min(H_*)``."""
    ts = np.asarray(tau_star, dtype=float)
    if ts.shape != (2,):
        raise ValueError(f"hessian_ball_constants takes a 2-D parameter, got shape {ts.shape}")
    radius = _positive("radius", radius)
    e_star = np.linalg.eigvalsh(hessian(ts))
    if e_star[0] <= 0:
        raise ValueError("the Hessian at tau_* must be positive definite")
    ang = np.linspace(0, 2 * np.pi, int(n_dirs), endpoint=False)
    up, low = 1.0, 1.0
    for r in radius * np.arange(1, int(n_radii) + 1) / int(n_radii):
        for a in ang:
            e = np.linalg.eigvalsh(hessian(ts + r * np.array([math.cos(a), math.sin(a)])))
            up, low = max(up, e[-1] / e_star[-1]), min(low, e[0] / e_star[0])
    return float(up), float(low)


def check_assumption15(
    hessian: Callable[[Array], Array], tau_star, radius: float, beta_u: float, beta_l: float, **grid
) -> None:
    """ValueError if the Hessian leaves the Assumption 15 band somewhere on the polar grid of the ball."""
    beta_u, beta_l = _positive("beta_u", beta_u), _positive("beta_l", beta_l)
    up, low = hessian_ball_constants(hessian, tau_star, radius, **grid)
    if up > beta_u * (1 + 1e-12) or low < beta_l * (1 - 1e-12):
        raise ValueError(
            f"Assumption 15 fails within radius {radius:.6g}: sigma_max ratio {up:.6g} (beta_u = {beta_u:.6g}), "
            f"sigma_min ratio {low:.6g} (beta_l = {beta_l:.6g})"
        )


# ----------------------------------------------------------------------------------------------- Gaussian
def gaussian_fisher(theta: float) -> Array:
    """``E_theta[T T^T] = [[1 + theta^2, -theta], [-theta, 1]]`` for ``T(x) = [x, -1]``, ``x ~ N(theta, 1)``."""
    t = float(theta)
    if not math.isfinite(t):
        raise ValueError(f"theta must be finite, got {theta}")
    return np.array([[1 + t * t, -t], [-t, 1.0]])


def gaussian_sigma_max(theta: float) -> float:
    """``(2 + theta^2 + |theta| sqrt(theta^2 + 4))/2``; ``sigma_min = 1/sigma_max`` (determinant 1)."""
    t = abs(float(theta))
    return (2 + t * t + t * math.sqrt(t * t + 4)) / 2


def gaussian_sigma_max_slope(theta: float) -> float:
    """``|d sigma_max/d theta| = |theta| + (theta^2 + 2)/sqrt(theta^2 + 4)`` for ``theta != 0`` (1 from either
    side at the kink ``theta = 0``)."""
    t = abs(float(theta))
    return t + (t * t + 2) / math.sqrt(t * t + 4)


def gaussian_constants(lo: float, hi: float) -> dict[str, float]:
    """Assumptions 11-14 for the Gaussian mean family on ``Theta = [lo, hi]``: ``omega = beta_Z = max |theta|``,
    ``lambda_max = sigma_max(omega)``, ``lambda_min = 1/lambda_max``, ``gamma_max = slope(omega)``,
    ``gamma_min = max |d sigma_min/d theta| = max slope/sigma_max^2`` (on a 4001-point grid; it is 1 next to
    ``theta = 0`` and decreases in ``|theta|``)."""
    if not (math.isfinite(lo) and math.isfinite(hi) and hi > lo):
        raise ValueError(f"need finite lo < hi, got lo={lo}, hi={hi}")
    omega = max(abs(lo), abs(hi))
    lam_max = gaussian_sigma_max(omega)
    grid = np.linspace(lo, hi, 4001)
    gmin = max(gaussian_sigma_max_slope(t) / gaussian_sigma_max(t) ** 2 for t in grid)
    return {
        "omega": omega,
        "beta_Z": omega,
        "lambda_max": lam_max,
        "lambda_min": 1 / lam_max,
        "gamma_max": gaussian_sigma_max_slope(omega),
        "gamma_min": float(gmin),
    }
