"""Langevin diffusions ``dx = -grad f(x) dt + sqrt(2) dW`` with stationary law ``pi ~ e^{-f}`` (Liu §2.1, Eq 2.1,
``001_6a230b9a9faf2198.txt``).

:class:`OU` is the quadratic case ``f = rho |x|^2/2``: the transition over time ``t`` is exactly
``N(e^{-rho t} z, (1 - e^{-2 rho t})/rho I)`` and ``pi = N(0, I/rho)``, so paths are sampled without discretisation
error and total-variation distances to ``pi`` are computed exactly (1-D: the two Gaussian densities cross at the
roots of a quadratic). The beta-mixing coefficient ``beta(t) = E_{z~pi} TV(P^t(z, .), pi)`` (Def 1, Eq 2.16) is a
Gauss-Hermite average of these TVs. :class:`Langevin` is the general case: Euler-Maruyama paths and, in 1-D, the
transition kernel on a grid from the discretised generator (a matrix exponential).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache

import numpy as np
from scipy.special import ndtr

Array = np.ndarray


def _positive(name: str, value: float) -> float:
    value = float(value)
    if not (math.isfinite(value) and value > 0):
        raise ValueError(f"{name} must be a finite number > 0, got {value}")
    return value


def _dim(d: int) -> int:
    if int(d) != d or d < 1:
        raise ValueError(f"dimension d must be a positive integer, got {d}")
    return int(d)


def gaussian_tv_1d(m1: float, s1: float, m2: float, s2: float) -> float:
    """Exact ``TV(N(m1, s1^2), N(m2, s2^2))``: ``sum over the regions where p1 > p2 of (P1 - P2)``."""
    s1, s2 = _positive("s1", s1), _positive("s2", s2)
    # log p1 - log p2 = A x^2 + B x + C
    A = 1 / (2 * s2**2) - 1 / (2 * s1**2)
    B = m1 / s1**2 - m2 / s2**2
    C = m2**2 / (2 * s2**2) - m1**2 / (2 * s1**2) + math.log(s2 / s1)
    if abs(A) < 1e-14 * (1 / s1**2 + 1 / s2**2):
        if B == 0:
            return 0.0
        r = -C / B
        cdf1, cdf2 = ndtr((r - m1) / s1), ndtr((r - m2) / s2)
        return float(abs(cdf1 - cdf2))
    disc = B * B - 4 * A * C
    if disc <= 0:
        return 0.0  # two normalised densities that never cross are equal
    r1, r2 = sorted(((-B - math.sqrt(disc)) / (2 * A), (-B + math.sqrt(disc)) / (2 * A)))
    d1 = ndtr((r2 - m1) / s1) - ndtr((r1 - m1) / s1)
    d2 = ndtr((r2 - m2) / s2) - ndtr((r1 - m2) / s2)
    # between the roots the sign of A x^2 + B x + C is -sign(A)
    return float(abs(d1 - d2))


@lru_cache(maxsize=8)
def _leggauss(n: int) -> tuple[Array, Array]:
    return np.polynomial.legendre.leggauss(n)


@dataclass(frozen=True)
class OU:
    """Ornstein-Uhlenbeck process ``dx = -rho x dt + sqrt(2) dW`` on ``R^d`` (Langevin with ``f = rho |x|^2/2``).

    ``rho > 0`` is the strong-convexity constant (Assumption 1); ``rho <= 0`` is not mixing and is rejected.
    """

    rho: float
    d: int = 1

    def __post_init__(self) -> None:
        rho = float(self.rho)
        if not math.isfinite(rho) or rho <= 0:
            raise ValueError(
                f"OU needs rho > 0 to be mixing (stationary law N(0, I/rho)), got rho={self.rho}"
            )
        object.__setattr__(self, "rho", rho)
        object.__setattr__(self, "d", _dim(self.d))

    # stationary law -------------------------------------------------------------------------------------
    @property
    def stationary_var(self) -> float:
        """Per-coordinate variance ``1/rho`` of ``pi``."""
        return 1.0 / self.rho

    def stationary_logpdf(self, z) -> Array:
        """``log pi(z)`` for ``z`` of shape ``(..., d)``."""
        z = np.asarray(z, dtype=float)
        return -0.5 * self.rho * np.sum(z * z, axis=-1) + 0.5 * self.d * math.log(self.rho / (2 * math.pi))

    def sample_stationary(self, rng: np.random.Generator, n: int) -> Array:
        return rng.standard_normal((n, self.d)) / math.sqrt(self.rho)

    def mean_norm(self) -> float:
        """``B = E_pi |x| = sqrt(2/rho) Gamma((d+1)/2)/Gamma(d/2)``."""
        return math.sqrt(2 / self.rho) * math.exp(math.lgamma((self.d + 1) / 2) - math.lgamma(self.d / 2))

    # transitions ----------------------------------------------------------------------------------------
    def kernel_params(self, t: float) -> tuple[float, float]:
        """``(a, s^2)`` with ``P^t(z, .) = N(a z, s^2 I)``: ``a = e^{-rho t}``, ``s^2 = (1 - e^{-2 rho t})/rho``."""
        t = _positive("time t", t)
        return math.exp(-self.rho * t), -math.expm1(-2 * self.rho * t) / self.rho

    def kernel_logpdf(self, z, z1, eta: float) -> Array:
        """``log p_*^eta(z, z1)``: the log density of ``x_{t+eta}`` at ``z1`` given ``x_t = z`` (Eq 2.3)."""
        a, s2 = self.kernel_params(eta)
        z, z1 = np.asarray(z, dtype=float), np.asarray(z1, dtype=float)
        r = z1 - a * z
        return -0.5 * np.sum(r * r, axis=-1) / s2 - 0.5 * self.d * math.log(2 * math.pi * s2)

    def sample_path(self, rng: np.random.Generator, n: int, eta: float) -> Array:
        """``n`` observations ``x_0, x_eta, ..., x_{(n-1) eta}`` from stationarity, exact transitions: ``(n, d)``."""
        if int(n) != n or n < 1:
            raise ValueError(f"number of observations n must be a positive integer, got {n}")
        a, s2 = self.kernel_params(eta)
        noise = rng.standard_normal((int(n), self.d))
        x = np.empty((int(n), self.d))
        x[0] = noise[0] / math.sqrt(self.rho)
        s = math.sqrt(s2)
        # x_k = a^k x_0 + sum_j a^{k-j} s e_j: a linear recursion, run as a cumulative filter
        from scipy.signal import lfilter

        drive = noise * s
        drive[0] = x[0]
        return lfilter([1.0], [1.0, -a], drive, axis=0)

    # mixing ---------------------------------------------------------------------------------------------
    def tv_from(self, z: float, t: float) -> float:
        """``TV(P^t(z, .), pi)`` exactly (1-D)."""
        if self.d != 1:
            raise ValueError("tv_from is implemented for d = 1 (the two laws are 1-D Gaussians)")
        a, s2 = self.kernel_params(t)
        return gaussian_tv_1d(a * float(z), math.sqrt(s2), 0.0, math.sqrt(1 / self.rho))

    def tv_from_many(self, z, t: float) -> Array:
        """``TV(P^t(z, .), pi)`` for an array of 1-D starting points (vectorised :func:`gaussian_tv_1d`)."""
        if self.d != 1:
            raise ValueError("tv_from_many is implemented for d = 1")
        a, s2 = self.kernel_params(t)
        m1 = a * np.asarray(z, dtype=float)
        v2 = 1 / self.rho
        A = 1 / (2 * v2) - 1 / (2 * s2)  # < 0: the kernel is narrower than pi
        if (
            abs(A) * v2 < 1e-12
        ):  # equal variances to rounding: TV(N(m, s^2), N(0, s^2)) = 2 Phi(|m|/(2 s)) - 1
            return 2 * ndtr(np.abs(m1) / (2 * math.sqrt(v2))) - 1
        B = m1 / s2
        C = -(m1**2) / (2 * s2) + 0.5 * math.log(v2 / s2)
        root = np.sqrt(np.maximum(B * B - 4 * A * C, 0.0))
        r1, r2 = (-B - root) / (2 * A), (-B + root) / (2 * A)
        s1, sd = math.sqrt(s2), math.sqrt(v2)
        d1 = ndtr((r2 - m1) / s1) - ndtr((r1 - m1) / s1)
        d2 = ndtr(r2 / sd) - ndtr(r1 / sd)
        return np.abs(d1 - d2)

    def beta_mixing(self, t: float, n_nodes: int = 400) -> float:
        """``beta(t) = E_{z~pi} TV(P^t(z, .), pi)`` (Def 1) by Gauss-Legendre quadrature on ``[0, 12]`` standard
        deviations, doubled.

        ``TV(z)`` is even in ``z`` with a kink at ``z = 0`` (the two crossing points merge there), so the integral
        is ``2 int_0^inf`` of a function smooth on the integration range (tail beyond 12 sd: < e^{-72}); 400 nodes
        agree with adaptive ``scipy.integrate.quad`` to ~1e-12. (A Gauss-Hermite rule across the kink is off by
        ~1e-4 at t = 2.)
        """
        if self.d != 1:
            raise ValueError("beta_mixing is implemented for d = 1")
        _positive("time t", t)
        x, w = _leggauss(int(n_nodes))
        v = 6.0 * (x + 1.0)  # [0, 12]
        dens = np.exp(-v * v / 2) / math.sqrt(2 * math.pi)
        return float(2 * 6.0 * w @ (self.tv_from_many(v / math.sqrt(self.rho), t) * dens))


@dataclass(frozen=True)
class Langevin:
    """Langevin diffusion ``dx = -grad f(x) dt + sqrt(2) dW`` on ``R^d``; ``f`` (up to a constant) and ``grad_f``
    vectorised over leading axes, ``rho`` a strong-convexity constant of ``f`` (Assumption 1, required > 0)."""

    f: Callable[[Array], Array]
    grad_f: Callable[[Array], Array]
    rho: float
    d: int = 1

    def __post_init__(self) -> None:
        if not callable(self.f) or not callable(self.grad_f):
            raise TypeError("f and grad_f must be callables")
        rho = float(self.rho)
        if not math.isfinite(rho) or rho <= 0:
            raise ValueError(f"Langevin needs a strongly convex f (rho > 0) to be mixing, got rho={self.rho}")
        object.__setattr__(self, "rho", rho)
        object.__setattr__(self, "d", _dim(self.d))

    def sample_path(self, rng: np.random.Generator, n: int, eta: float, substeps: int = 20, x0=None) -> Array:
        """Euler-Maruyama with ``substeps`` per observation interval ``eta``; ``(n, d)`` observations."""
        eta = _positive("eta", eta)
        if int(substeps) != substeps or substeps < 1:
            raise ValueError(f"substeps must be a positive integer, got {substeps}")
        dt = eta / substeps
        x = np.zeros(self.d) if x0 is None else np.asarray(x0, dtype=float).reshape(self.d)
        out = np.empty((int(n), self.d))
        for k in range(int(n)):
            out[k] = x
            for _ in range(int(substeps)):
                x = x - self.grad_f(x) * dt + math.sqrt(2 * dt) * rng.standard_normal(self.d)
        return out

    def kernel_on_grid(self, eta: float, grid) -> Array:
        """1-D transition matrix ``K[i, j] ~ p^eta(x_i, x_j) * h`` on a uniform ``grid`` (rows sum to 1).

        The generator ``L g = g'' - f' g'`` is discretised as the reversible birth-death chain with rates
        ``(1/h^2) exp(-(f(x_{j}) - f(x_i))/2)`` to the neighbours (detailed balance w.r.t. ``e^{-f}`` exactly, first
        order in ``h``); ``K = expm(eta Q)``.
        """
        if self.d != 1:
            raise ValueError("kernel_on_grid is implemented for d = 1")
        eta = _positive("eta", eta)
        from scipy.linalg import expm

        x = np.asarray(grid, dtype=float)
        h = np.diff(x)
        if x.ndim != 1 or len(x) < 3 or not np.allclose(h, h[0]):
            raise ValueError("grid must be a uniform 1-D grid with at least 3 points")
        fx = self.f(x)
        up = np.exp(-(fx[1:] - fx[:-1]) / 2) / h[0] ** 2
        down = np.exp(-(fx[:-1] - fx[1:]) / 2) / h[0] ** 2
        Q = np.diag(up, 1) + np.diag(down, -1)
        Q -= np.diag(Q.sum(axis=1))
        return expm(eta * Q)


def log_cosh_example(rho: float = 1.0, d: int = 1) -> Langevin:
    """The non-quadratic example ``f(x) = rho |x|^2/2 + sum_j log cosh x_j`` (rho-strongly convex, C^inf, linear
    growth: Assumptions 1-3)."""
    rho = _positive("rho", rho)

    def f(x):
        x = np.asarray(x, dtype=float)
        return (
            rho * x * x / 2 + np.logaddexp(x, -x) - math.log(2)
            if d == 1
            else (np.sum(rho * x * x / 2 + np.logaddexp(x, -x) - math.log(2), axis=-1))
        )

    return Langevin(f, lambda x: rho * np.asarray(x) + np.tanh(x), rho, d)
