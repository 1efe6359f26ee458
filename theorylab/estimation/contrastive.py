"""Contrastive estimation of a diffusion's transition kernel (Liu §2.1, ``001_6a230b9a9faf2198.txt``).

Task (l.349-356): from observations ``x_0, x_eta, ..., x_{(2m-1) eta}`` form ``m`` pairs ``(x_{2i eta}, x')``; with
probability 1/2 ``x' = x_{(2i+1) eta}`` and ``y = 1``, otherwise ``x' ~ q`` independently and ``y = 0``. A
classifier ``h`` is trained with the squared loss ``(h - y)^2`` (2.5). The population minimiser is
``h* = p_*^eta/(p_*^eta + q)`` (Lemma 1) and the kernel estimate (2.12) inverts it: ``p = h q/(1 - h)``, which is
not normalised in general. Also: the constants of Eq 2.2, Theorem 1's sample size from the proof's own inequalities,
the excess-loss function ``r`` of Theorem 2's proof, and Lemma 5's TV bound.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from scipy.special import expit, logit

from theorylab.markov.diffusions import OU

Array = np.ndarray


# ----------------------------------------------------------------------------------------------- Eq 2.2
def eq22_printed_bound(rho: float, d: int) -> float:
    """Printed (2.2): ``B <= pi(z_*) sqrt(d/rho)`` for OU, ``pi(0) = (rho/(2 pi))^{d/2}``."""
    ou = OU(rho, d)
    return (ou.rho / (2 * math.pi)) ** (d / 2) * math.sqrt(d / ou.rho)


def eq22_corrected_bound(rho: float, d: int) -> float:
    """Corrected (2.2): ``B <= pi(z_*) (2 pi/rho)^{d/2} sqrt(d/rho)`` (= ``sqrt(d/rho)`` for OU)."""
    ou = OU(rho, d)
    return (ou.rho / (2 * math.pi)) ** (d / 2) * (2 * math.pi / ou.rho) ** (d / 2) * math.sqrt(d / ou.rho)


def eq22_symbolic(d: int):
    """Sympy ``(B, printed, corrected)`` for OU in dimension ``d`` as functions of the symbol ``rho > 0``."""
    import sympy as sp

    rho = sp.Symbol("rho", positive=True)
    B = sp.sqrt(2 / rho) * sp.gamma(sp.Rational(d + 1, 2)) / sp.gamma(sp.Rational(d, 2))
    pi0 = (rho / (2 * sp.pi)) ** sp.Rational(d, 2)
    printed = pi0 * sp.sqrt(d / rho)
    corrected = pi0 * (2 * sp.pi / rho) ** sp.Rational(d, 2) * sp.sqrt(d / rho)
    return rho, B, printed, corrected


# ----------------------------------------------------------------------------------------------- the task
@dataclass(frozen=True)
class GaussianNoise:
    """Contrast distribution ``q = N(0, var I_d)``."""

    var: float
    d: int = 1

    def __post_init__(self) -> None:
        if not (math.isfinite(self.var) and self.var > 0):
            raise ValueError(f"noise variance must be > 0, got {self.var}")

    def logpdf(self, z) -> Array:
        z = np.asarray(z, dtype=float)
        return -0.5 * np.sum(z * z, axis=-1) / self.var - 0.5 * self.d * math.log(2 * math.pi * self.var)

    def sample(self, rng: np.random.Generator, n: int) -> Array:
        return math.sqrt(self.var) * rng.standard_normal((n, self.d))


@dataclass(frozen=True)
class ContrastivePairs:
    """The contrastive task of l.349-356 on an OU ``process`` observed every ``eta`` with contrast ``q``."""

    process: OU
    eta: float
    q: GaussianNoise

    def __post_init__(self) -> None:
        if not (math.isfinite(self.eta) and self.eta > 0):
            raise ValueError(f"observation interval eta must be > 0, got {self.eta}")
        if self.q.d != self.process.d:
            raise ValueError(f"q has dimension {self.q.d}, the process {self.process.d}")

    def sample(self, rng: np.random.Generator, m: int) -> tuple[Array, Array, Array]:
        """``m`` pairs ``(z, z1, y)`` from one trajectory of ``2m`` observations (a fair coin per pair)."""
        if int(m) != m or m < 1:
            raise ValueError(f"number of pairs m must be a positive integer, got {m}")
        path = self.process.sample_path(rng, 2 * int(m), self.eta)
        z, nxt = path[0::2], path[1::2]
        y = rng.random(int(m)) < 0.5
        z1 = np.where(y[:, None], nxt, self.q.sample(rng, int(m)))
        return z, z1, y.astype(float)

    def log_kernel(self, z, z1) -> Array:
        return self.process.kernel_logpdf(z, z1, self.eta)

    def bayes_logit(self, z, z1) -> Array:
        """``logit h* = log p_*^eta(z, z1) - log q(z1)`` (Lemma 1)."""
        return self.log_kernel(z, z1) - self.q.logpdf(z1)


def bayes_classifier(log_kernel: Array, log_q: Array) -> Array:
    """Lemma 1: ``h* = p_*/(p_* + q)`` from log-densities."""
    return expit(np.asarray(log_kernel) - np.asarray(log_q))


def kernel_from_classifier(h: Array, q: Array) -> Array:
    """Eq 2.12: ``p = h q/(1 - h)`` (``h`` in (0, 1), ``q > 0``)."""
    h, q = np.asarray(h, dtype=float), np.asarray(q, dtype=float)
    if np.any((h <= 0) | (h >= 1)):
        raise ValueError("classifier outputs must lie strictly inside (0, 1)")
    return h * q / (1 - h)


def log_kernel_from_logit(logit_h: Array, log_q: Array) -> Array:
    """Eq 2.12 in log space: ``log p = logit h + log q``."""
    return np.asarray(logit_h) + np.asarray(log_q)


# ----------------------------------------------------------------------------------------------- quadrature
@dataclass(frozen=True)
class PairQuadrature:
    """Tensor quadrature for 1-D pair integrals ``E_{z ~ pi} int g(z, z1) dz1``: Gauss-Hermite nodes in ``z``
    and a trapezoid grid in ``z1`` on ``[-L, L]`` (``L`` = 12 stationary/noise standard deviations)."""

    z: Array
    wz: Array
    z1: Array
    w1: Array

    @classmethod
    def for_task(cls, task: ContrastivePairs, n_z: int = 60, n_z1: int = 801) -> PairQuadrature:
        if task.process.d != 1:
            raise ValueError("pair quadrature is implemented for d = 1")
        nodes, weights = np.polynomial.hermite_e.hermegauss(n_z)
        L = 12 * math.sqrt(max(task.process.stationary_var, task.q.var))
        z1 = np.linspace(-L, L, n_z1)
        w1 = np.full(n_z1, z1[1] - z1[0])
        w1[[0, -1]] /= 2
        return cls(nodes * math.sqrt(task.process.stationary_var), weights / weights.sum(), z1, w1)

    def grids(self) -> tuple[Array, Array]:
        return np.meshgrid(self.z, self.z1, indexing="ij")

    def integrate(self, values: Array) -> float:
        """``sum_z wz sum_z1 w1 values[z, z1]``."""
        return float(self.wz @ values @ self.w1)


def excess_risk(
    task: ContrastivePairs, logit_h: Callable[[Array, Array], Array], quad: PairQuadrature | None = None
) -> float:
    """``R(h) - R(h*) = 1/2 E_{z~pi} int (p_* + q)(h - h*)^2 dz1`` (footnote 5; the bias-variance identity)."""
    quad = PairQuadrature.for_task(task) if quad is None else quad
    Z, Z1 = quad.grids()
    zz, zz1 = Z[..., None], Z1[..., None]
    ps, q = np.exp(task.log_kernel(zz, zz1)), np.exp(task.q.logpdf(zz1))
    h, hs = expit(logit_h(Z, Z1)), expit(task.bayes_logit(zz, zz1))
    return 0.5 * quad.integrate((ps + q) * (h - hs) ** 2)


def population_risk(
    task: ContrastivePairs, logit_h: Callable[[Array, Array], Array], quad: PairQuadrature | None = None
) -> float:
    """``R(h) = 1/2 E_{z~pi} int [p_* (h - 1)^2 + q h^2] dz1`` (the squared loss (2.5) under the task)."""
    quad = PairQuadrature.for_task(task) if quad is None else quad
    Z, Z1 = quad.grids()
    ps, q = np.exp(task.log_kernel(Z[..., None], Z1[..., None])), np.exp(task.q.logpdf(Z1[..., None]))
    h = expit(logit_h(Z, Z1))
    return 0.5 * quad.integrate(ps * (h - 1) ** 2 + q * h * h)


def kernel_l1_error(
    task: ContrastivePairs, log_p: Callable[[Array, Array], Array], quad: PairQuadrature | None = None
) -> float:
    """``E_{z~pi, z1~p_*(z, .)} |p(z, z1) - p_*(z, z1)|`` (the left side of Theorem 3)."""
    quad = PairQuadrature.for_task(task) if quad is None else quad
    Z, Z1 = quad.grids()
    ps = np.exp(task.log_kernel(Z[..., None], Z1[..., None]))
    return quad.integrate(ps * np.abs(np.exp(log_p(Z, Z1)) - ps))


def kernel_masses(
    task: ContrastivePairs, log_p: Callable[[Array, Array], Array], quad: PairQuadrature | None = None
) -> Array:
    """``int p(z, z1) dz1`` at each quadrature node ``z`` (1 for a normalised kernel)."""
    quad = PairQuadrature.for_task(task) if quad is None else quad
    Z, Z1 = quad.grids()
    return np.exp(log_p(Z, Z1)) @ quad.w1


def normalised_kl(
    task: ContrastivePairs,
    log_p: Callable[[Array, Array], Array],
    normalise: bool = True,
    quad: PairQuadrature | None = None,
) -> float:
    """``E_{z~pi} KL(p_*(z, .) || p(z, .))``, with ``p(z, .)`` normalised per context first if ``normalise``
    (without it the "KL" of the unnormalised (2.12) estimate can be negative)."""
    quad = PairQuadrature.for_task(task) if quad is None else quad
    Z, Z1 = quad.grids()
    ls = task.log_kernel(Z[..., None], Z1[..., None])
    lp = log_p(Z, Z1)
    if normalise:
        lp = lp - np.log(np.exp(lp) @ quad.w1)[:, None]
    return quad.integrate(np.exp(ls) * (ls - lp))


def quadratic_features(z: Array, z1: Array) -> Array:
    """``[1, z, z1, z^2, z1^2, z z1]``: the OU log-odds ``log p_* - log q`` is exactly quadratic (well specified)."""
    z, z1 = np.asarray(z, dtype=float), np.asarray(z1, dtype=float)
    return np.stack([np.ones_like(z), z, z1, z * z, z1 * z1, z * z1], axis=-1)


def fit_quadratic_classifier(z: Array, z1: Array, y: Array, l2: float = 0.0) -> Array:
    """Minimise the empirical squared loss ``mean (expit(w . phi) - y)^2`` (2.5) over the 6 quadratic features
    (scipy L-BFGS from ``w = 0``); returns ``w``."""
    from scipy.optimize import minimize

    phi = quadratic_features(np.ravel(z), np.ravel(z1))
    scale = np.maximum(np.abs(phi).max(axis=0), 1e-12)
    X = phi / scale
    y = np.asarray(y, dtype=float)

    def fun(w):
        h = expit(X @ w)
        r = h - y
        grad = X.T @ (2 * r * h * (1 - h)) / len(y) + 2 * l2 * w
        return float(r @ r / len(y) + l2 * w @ w), grad

    res = minimize(fun, np.zeros(6), jac=True, method="L-BFGS-B", options={"maxiter": 2000, "gtol": 1e-12})
    return res.x / scale


def true_quadratic_weights(task: ContrastivePairs) -> Array:
    """The weights with ``w . phi(z, z1) = logit h*(z, z1)`` exactly (1-D OU, Gaussian ``q``)."""
    a, s2 = task.process.kernel_params(task.eta)
    v = task.q.var
    c0 = -0.5 * math.log(s2 / v)
    return np.array([c0, 0.0, 0.0, -a * a / (2 * s2), -1 / (2 * s2) + 1 / (2 * v), a / s2])


# ----------------------------------------------------------------------------------------------- Theorem 1
def thm1_lhs(mu: Array, delta_appr: Array, delta: float, K: float, C: float = 1.0) -> Array:
    """Left side of (2.20): ``C mu^{-1/2} (K sqrt(log mu) + sqrt(-log(delta - Delta_appr)))``."""
    mu, delta_appr = np.asarray(mu, dtype=float), np.asarray(delta_appr, dtype=float)
    return C / np.sqrt(mu) * (K * np.sqrt(np.log(mu)) + np.sqrt(-np.log(delta - delta_appr)))


def _thm1_args(Delta: float, delta: float, B: float, K: float) -> None:
    for name, v in (("Delta_gen", Delta), ("B", B), ("K", K)):
        if not (math.isfinite(v) and v > 0):
            raise ValueError(f"{name} must be > 0, got {v}")
    if not 0 < delta < 1:
        raise ValueError(f"delta must lie in (0, 1), got {delta}")


def min_T_thm1(
    Delta: float, delta: float, B: float = 1.0, K: float = 1.0, C: float = 1.0, mu_max: int = 10**8
) -> tuple[float, int]:
    """Smallest ``T`` (and its ``mu``) satisfying the proof's inequalities literally: (2.20) with
    ``Delta_appr = B mu^{3/2}/sqrt(T)`` (Lemma 3, constant 1) and ``Delta_appr < delta``.

    For fixed ``mu``, (2.20) holds iff ``Delta_appr <= delta - exp(-A^2)`` with ``A = Delta sqrt(mu)/C -
    K sqrt(log mu) > 0``, i.e. ``T >= B^2 mu^3/(delta - e^{-A^2})^2``; minimise over ``mu`` (a log-spaced integer
    grid refined around the best point).
    """
    _thm1_args(Delta, delta, B, K)
    mus = np.unique(np.geomspace(2, mu_max, 4000).astype(np.int64)).astype(float)

    def T_of(mu):
        A = Delta * np.sqrt(mu) / C - K * np.sqrt(np.log(mu))
        D = delta - np.exp(-(np.where(A > 0, A, 0.0) ** 2))
        ok = (A > 0) & (D > 0)
        return np.where(ok, B**2 * mu**3 / np.where(ok, D, 1.0) ** 2, np.inf)

    T = T_of(mus)
    i = int(np.argmin(T))
    if not math.isfinite(T[i]):
        raise ValueError("no mu <= mu_max satisfies (2.20); raise mu_max")
    lo, hi = int(mus[max(i - 1, 0)]), int(mus[min(i + 1, len(mus) - 1)])
    fine = np.arange(lo, hi + 1, dtype=float)
    Tf = T_of(fine)
    j = int(np.argmin(Tf))
    return float(Tf[j]), int(fine[j])


def thm1_printed_T(Delta: float, delta: float, B: float = 1.0, K: float = 1.0) -> float:
    """The printed rate ``B^2 K^3 (log 1/delta)^{3/2}/(delta^2 Delta^3)`` (constant 1)."""
    _thm1_args(Delta, delta, B, K)
    return B**2 * K**3 * math.log(1 / delta) ** 1.5 / (delta**2 * Delta**3)


def thm1_corrected_T(Delta: float, delta: float, B: float = 1.0, K: float = 1.0) -> float:
    """What (2.20) needs: ``mu ~ (K sqrt(log mu) + sqrt(log 1/delta))^2/Delta^2``, ``T ~ B^2 mu^3/delta^2``, i.e.
    ``Delta^{-6}`` up to logarithms (``mu`` solved by fixed-point iteration)."""
    _thm1_args(Delta, delta, B, K)
    mu = 2.0
    for _ in range(200):
        mu = (K * math.sqrt(math.log(max(mu, 2.0))) + math.sqrt(math.log(1 / delta))) ** 2 / Delta**2
    return B**2 * mu**3 / delta**2


def thm1_proof_mu(Delta: float, delta: float, K: float = 1.0, delta_appr: float | None = None) -> float:
    """The proof's choice ``mu = K sqrt(log(1/(delta - Delta_appr)))/Delta_gen`` (l.589)."""
    delta_appr = delta / 2 if delta_appr is None else delta_appr
    return K * math.sqrt(math.log(1 / (delta - delta_appr))) / Delta


# ----------------------------------------------------------------------------------------------- Theorem 2
def r_excess(s, varrho) -> Array:
    """Pointwise excess loss (2.23) with ``p = p_*(1 + s)``, ``varrho = p_*/q``:
    ``r(s) = (varrho s/((varrho (1 + s) + 1)(varrho + 1)))^2``."""
    s, v = np.asarray(s, dtype=float), np.asarray(varrho, dtype=float)
    return (v * s / ((v * (1 + s) + 1) * (v + 1))) ** 2


def r_second_derivative(s, varrho) -> Array:
    """``r''(s) = -2 varrho^2 (2 varrho s - varrho - 1)/((varrho + 1)(varrho s + varrho + 1)^4)``: positive iff
    ``s < 1/2 + 1/(2 varrho)``."""
    s, v = np.asarray(s, dtype=float), np.asarray(varrho, dtype=float)
    return -2 * v**2 * (2 * v * s - v - 1) / ((v + 1) * (v * s + v + 1) ** 4)


def r_symbolic():
    """Sympy ``(s, varrho, r, r'')`` with ``r''`` differentiated from (2.23)."""
    import sympy as sp

    s, v = sp.symbols("s varrho", real=True)
    r = (v * s / ((v * (1 + s) + 1) * (v + 1))) ** 2
    return s, v, r, sp.diff(r, s, 2)


def thm2_r_min(c: float) -> float:
    """The proof's curvature lower bound ``2/(1 + c_q)^5`` on ``[Delta_min - 1, 1/6]``."""
    return 2 / (1 + c) ** 5


# ----------------------------------------------------------------------------------------------- Lemma 5, Remark 1
def lemma5_bound(B: float, t: float) -> float:
    """Lemma 5's bound ``B/sqrt(2 pi t)`` (printed for every starting point ``z``)."""
    if not t > 0:
        raise ValueError(f"time t must be > 0, got {t}")
    return B / math.sqrt(2 * math.pi * t)


def remark1_expected_density(process: OU, eta: float) -> float:
    """``E_{z~pi, z1~p_*^eta(z, .)} p_*^eta(z, z1) = (4 pi s^2)^{-d/2}``, ``s^2 = (1 - e^{-2 rho eta})/rho``
    (independent of ``z``; ``~ (8 pi eta)^{-d/2}`` as ``eta -> 0``)."""
    _, s2 = process.kernel_params(eta)
    return (4 * math.pi * s2) ** (-process.d / 2)


def logit_clip(h: Array, eps: float = 1e-12) -> Array:
    """``logit`` of probabilities clipped to ``[eps, 1 - eps]``."""
    return logit(np.clip(h, eps, 1 - eps))
