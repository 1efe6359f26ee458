"""Noise-contrastive estimation (NCE) and its exponential variant eNCE on exponential families (Liu §4.1,
``001_6a230b9a9faf2198.txt``).

An exponential family in the extended parameterisation is ``p_tau(x) = exp(log h(x) + tau . T(x))`` with
``tau = [theta, alpha]`` and ``T(x) = [T~(x), -1]``: ``alpha`` is a free estimate of ``log Z(theta)``, so ``p_tau``
is unnormalised unless ``alpha = log Z(theta)``. Every integral is a weighted sum over a point set
(:class:`ExpFamily`): a finite support (exact sums) or a quadrature grid (the quadrature weights live in
``log_base``). All densities are handled in log space.

NCE loss (Def 19, Eq 4.1), with ``u = log p - log q``:
``L(tau) = 1/2 E_*[softplus(-u)] + 1/2 E_Q[softplus(u)]``,
``grad L = 1/2 int q (p - p_*) / (p + q) T``, ``hess L = 1/2 int (p_* + q) p q / (p + q)^2 T T^T`` (Lemma 45).

eNCE loss (Def 20): ``L_exp(tau) = 1/2 E_*[sqrt(q/p)] + 1/2 E_Q[sqrt(p/q)]``; at ``tau_*`` it equals the
Bhattacharyya coefficient ``BC(P_*, Q)`` and ``hess L_exp(tau_*) = BC/4 E_{theta_mid}[T T^T]`` (Lemma 53).

The 1-D Gaussian-mean setup of §4.1.3: ``h(x) = exp(-x^2/2)``, ``T(x) = [x, -1]``, noise ``Q = N(0, 1)``, data
``P_* = N(R, 1)``, ``tau_q = [0, log sqrt(2 pi)]``, ``tau_* = [R, R^2/2 + log sqrt(2 pi)]`` (the text's minus sign
at this point is a typo: ``tau(theta) = [theta, theta^2/2 + log sqrt(2 pi)]``).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from functools import cached_property

import numpy as np
from scipy.special import expit

from theorylab._logsumexp import logsumexp

LOG_SQRT_2PI = 0.5 * math.log(2 * math.pi)
Array = np.ndarray


# ----------------------------------------------------------------------------------------------- families
@dataclass(frozen=True)
class ExpFamily:
    """Exponential family ``p_tau(x) = exp(log_base(x) + stats(x) . tau)`` on ``n`` weighted points.

    ``stats`` is ``(n, k)`` with last column ``-1`` (the extended statistic), ``log_base`` is ``(n,)`` and already
    contains ``log h(x)`` plus the log quadrature weight of each point, so ``sum exp(log_density(tau))`` is the
    integral of ``p_tau``.
    """

    stats: Array
    log_base: Array
    points: Array | None = None

    def __post_init__(self) -> None:
        stats, base = np.asarray(self.stats, dtype=float), np.asarray(self.log_base, dtype=float)
        if stats.ndim != 2 or stats.shape[1] < 2:
            raise ValueError(f"stats must be (n, k) with k >= 2, got shape {stats.shape}")
        if base.shape != (stats.shape[0],):
            raise ValueError(f"log_base must have shape ({stats.shape[0]},), got {base.shape}")
        if not np.all(stats[:, -1] == -1.0):
            raise ValueError(
                "the last sufficient statistic must be the constant -1 (extended parameterisation)"
            )
        object.__setattr__(self, "stats", stats)
        object.__setattr__(self, "log_base", base)

    @property
    def dim(self) -> int:
        """Number of parameters ``k`` (``theta`` and ``alpha``)."""
        return self.stats.shape[1]

    def _tau(self, tau) -> Array:
        tau = np.asarray(tau, dtype=float)
        if tau.shape != (self.dim,):
            raise ValueError(f"tau must have shape ({self.dim},), got {tau.shape}")
        return tau

    def log_density(self, tau) -> Array:
        """``log p_tau`` at every point (quadrature weight included)."""
        return self.log_base + self.stats @ self._tau(tau)

    def log_partition(self, theta) -> float:
        """``log Z(theta) = log sum exp(log_base + T~ . theta)``."""
        theta = np.atleast_1d(np.asarray(theta, dtype=float))
        if theta.shape != (self.dim - 1,):
            raise ValueError(f"theta must have shape ({self.dim - 1},), got {theta.shape}")
        return float(logsumexp(self.log_base + self.stats[:, :-1] @ theta))

    def normalised(self, theta) -> Array:
        """``tau(theta) = [theta, log Z(theta)]``: the parameter of the normalised density."""
        theta = np.atleast_1d(np.asarray(theta, dtype=float))
        return np.append(theta, self.log_partition(theta))

    def second_moment(self, theta) -> Array:
        """``E_theta[T T^T]`` (extended statistic) under the normalised density: the matrix of Assumption 13."""
        lp = self.log_density(self.normalised(theta))
        w = np.exp(lp - logsumexp(lp))
        return (self.stats * w[:, None]).T @ self.stats


def finite_family(features) -> ExpFamily:
    """Family on ``K`` points with sufficient statistics ``features`` (``(K, d)``), counting base measure."""
    f = np.asarray(features, dtype=float)
    if f.ndim != 2 or f.shape[0] < 2:
        raise ValueError(f"features must be (K, d) with K >= 2, got shape {f.shape}")
    return ExpFamily(np.column_stack([f, -np.ones(len(f))]), np.zeros(len(f)), np.arange(len(f)))


def gaussian_mean_family(lo: float, hi: float, h: float) -> ExpFamily:
    """Unit-variance Gaussian mean family on the trapezoid grid ``lo, lo + h, ..., hi``.

    ``T(x) = [x, -1]``, ``log_base = -x^2/2 + log(trapezoid weight)``. The trapezoid rule is spectrally accurate
    here: the integrands are analytic in a strip (the sigmoid ``expit(theta x - a)`` has poles at distance
    ``pi/|theta|``) and decay like Gaussians, so the error is ``O(exp(-2 pi^2/(|theta| h)))`` plus the tails
    beyond ``[lo, hi]``.
    """
    if not (math.isfinite(lo) and math.isfinite(hi) and hi > lo):
        raise ValueError(f"need finite lo < hi, got lo={lo}, hi={hi}")
    if not h > 0:
        raise ValueError(f"grid spacing h must be > 0, got {h}")
    n = int(round((hi - lo) / h)) + 1
    x = np.linspace(lo, hi, n)
    step = x[1] - x[0]
    w = np.full(n, step)
    w[[0, -1]] = step / 2
    return ExpFamily(np.column_stack([x, -np.ones(n)]), -(x**2) / 2 + np.log(w), x)


def _check_R(R: float) -> float:
    R = float(R)
    if not (math.isfinite(R) and R > 0):
        raise ValueError(f"the mean gap R must be a finite number > 0, got {R}")
    return R


def gauss_setup(R: float, h: float = 0.05, pad: float = 12.0) -> tuple[ExpFamily, Array, Array]:
    """The §4.1.3 instance: ``(family on [-pad, R + pad], tau_*, tau_q)`` with ``P_* = N(R, 1)``, ``Q = N(0, 1)``."""
    R = _check_R(R)
    if not pad > 0:
        raise ValueError(f"pad must be > 0, got {pad}")
    return gaussian_mean_family(-pad, R + pad, h), tau_star(R), tau_q()


def tau_star(R: float) -> Array:
    """``tau_* = [R, R^2/2 + log sqrt(2 pi)]`` (corrected sign)."""
    R = _check_R(R)
    return np.array([R, R * R / 2 + LOG_SQRT_2PI])


def tau_q() -> Array:
    """``tau_q = [0, log sqrt(2 pi)]``."""
    return np.array([0.0, LOG_SQRT_2PI])


# ----------------------------------------------------------------------------------------------- NCE / eNCE
def _logs(fam: ExpFamily, tau, t_star, t_q) -> tuple[Array, Array, Array]:
    return fam.log_density(tau), fam.log_density(t_star), fam.log_density(t_q)


def _softplus(z: Array) -> Array:
    return np.logaddexp(0.0, z)


def nce_loss(fam: ExpFamily, tau, t_star, t_q) -> float:
    """NCE loss (Eq 4.1) ``-1/2 E_* log p/(p+q) - 1/2 E_Q log q/(p+q)``."""
    lp, ls, lq = _logs(fam, tau, t_star, t_q)
    u = lp - lq
    return float(0.5 * np.exp(ls) @ _softplus(-u) + 0.5 * np.exp(lq) @ _softplus(u))


def nce_grad(fam: ExpFamily, tau, t_star, t_q) -> Array:
    """``grad L = 1/2 int q (p - p_*)/(p + q) T`` (Lemma 45)."""
    lp, ls, lq = _logs(fam, tau, t_star, t_q)
    u = lp - lq
    coef = np.exp(lq) * expit(u) - np.exp(ls) * expit(-u)
    return 0.5 * coef @ fam.stats


def nce_hessian(fam: ExpFamily, tau, t_star, t_q) -> Array:
    """``hess L = 1/2 int (p_* + q) p q/(p + q)^2 T T^T`` (Lemma 45), PSD."""
    lp, ls, lq = _logs(fam, tau, t_star, t_q)
    u = lp - lq
    w = 0.5 * (np.exp(ls) + np.exp(lq)) * expit(u) * expit(-u)
    return (fam.stats * w[:, None]).T @ fam.stats


def ence_loss(fam: ExpFamily, tau, t_star, t_q) -> float:
    """eNCE loss (Def 20) ``1/2 E_* sqrt(q/p) + 1/2 E_Q sqrt(p/q)``."""
    lp, ls, lq = _logs(fam, tau, t_star, t_q)
    u = lp - lq
    return float(0.5 * np.exp(ls - u / 2).sum() + 0.5 * np.exp(lq + u / 2).sum())


def ence_grad(fam: ExpFamily, tau, t_star, t_q) -> Array:
    """``grad L_exp = 1/4 int (sqrt(p q) - p_* sqrt(q/p)) T``."""
    lp, ls, lq = _logs(fam, tau, t_star, t_q)
    u = lp - lq
    return 0.25 * (np.exp(lq + u / 2) - np.exp(ls - u / 2)) @ fam.stats


def ence_hessian(fam: ExpFamily, tau, t_star, t_q) -> Array:
    """``hess L_exp = 1/8 int (p_* sqrt(q/p) + sqrt(p q)) T T^T``, PSD."""
    lp, ls, lq = _logs(fam, tau, t_star, t_q)
    u = lp - lq
    w = 0.125 * (np.exp(ls - u / 2) + np.exp(lq + u / 2))
    return (fam.stats * w[:, None]).T @ fam.stats


def bhattacharyya(fam: ExpFamily, tau1, tau2) -> float:
    """``BC(P_1, P_2) = int sqrt(p_1 p_2)`` for normalised parameters (= ``Z(mid)/sqrt(Z_1 Z_2)``)."""
    return float(np.exp((fam.log_density(tau1) + fam.log_density(tau2)) / 2).sum())


def nce_grad_fn(fam: ExpFamily, t_star, t_q, form: str = "direct") -> Callable[[Array], Array]:
    """Population NCE gradient for repeated calls (GD runs of 10^4-10^5 steps), with ``p_*``, ``q`` and
    ``T . tau_q`` precomputed.

    ``form="direct"``: the formula of :func:`nce_grad`, ``1/2 sum (q expit(u) - p_* expit(-u)) T``.
    ``form="fused"``: the algebraically equal ``1/2 sum (q + p_*) expit(u) T - 1/2 sum p_* T``, one matrix-vector
    product fewer, but it subtracts two O(1) sums (absolute rounding ~1e-16). GD step counts are insensitive to
    that; NGD paths at R >= 5 zig-zag in a narrow valley and amplify it (see :func:`gauss_steps`).
    """
    ps, pq = np.exp(fam.log_density(t_star)), np.exp(fam.log_density(t_q))
    stats = fam.stats
    offset = stats @ np.asarray(t_q, dtype=float)
    if form == "direct":
        half_stats = 0.5 * stats

        def grad(tau: Array) -> Array:
            u = stats @ tau - offset
            return (pq * expit(u) - ps * expit(-u)) @ half_stats

        return grad
    if form == "fused":
        weighted = (0.5 * (ps + pq))[:, None] * stats
        const = 0.5 * ps @ stats

        def fused(tau: Array) -> Array:
            return expit(stats @ tau - offset) @ weighted - const

        return fused
    raise ValueError(f"form must be 'direct' or 'fused', got {form!r}")


def gaussian_stats(x) -> Array:
    """``T(x) = [x, -1]`` of the 1-D unit-variance Gaussian mean family, ``(n, 2)``."""
    x = np.asarray(x, dtype=float)
    return np.column_stack([x, -np.ones_like(x)])


def sample_nce_grad(tau, x_star, x_q, t_q, stats: Callable[[Array], Array] = gaussian_stats) -> Array:
    """Empirical NCE gradient from samples ``x_star ~ P_*`` and ``x_q ~ Q``:
    ``1/2 mean_*[-expit(-u) T] + 1/2 mean_Q[expit(u) T]`` with ``u = T . (tau - tau_q)`` (base measures cancel)."""
    tau, t_q = np.asarray(tau, dtype=float), np.asarray(t_q, dtype=float)
    Ts, Tq = stats(x_star), stats(x_q)
    if len(Ts) == 0 or len(Tq) == 0:
        raise ValueError("need at least one sample from each of P_* and Q")
    us, uq = Ts @ (tau - t_q), Tq @ (tau - t_q)
    return 0.5 * (-(expit(-us) @ Ts) / len(Ts) + (expit(uq) @ Tq) / len(Tq))


# ----------------------------------------------------------------------------------------------- optimisers
@dataclass(frozen=True)
class Run:
    """An optimiser run: ``steps_to_radius`` is the first step ``t`` with ``||tau_t - target|| <= radius`` (None if
    not reached within ``n_steps``); ``distances[t] = ||tau_t - target||`` for ``t = 0..n_steps``."""

    steps_to_radius: int | None
    tau: Array
    n_steps: int
    distances: Array


def _run(step, tau0, target, radius: float, max_steps: int, stop: bool) -> Run:
    if not radius > 0:
        raise ValueError(f"radius must be > 0, got {radius}")
    if int(max_steps) != max_steps or max_steps < 0:
        raise ValueError(f"max_steps must be a non-negative integer, got {max_steps}")
    tau = np.array(tau0, dtype=float)
    target = np.asarray(target, dtype=float)
    dists = np.empty(int(max_steps) + 1)
    dists[0] = np.linalg.norm(tau - target)
    hit = 0 if dists[0] <= radius else None
    t = 0
    if tau.size == 2:  # the Gaussian runs: the distance in Python floats (the same subtractions and hypot)
        c0, c1 = target.tolist()

        def distance(x: Array) -> float:
            a, b = x.tolist()
            return math.hypot(a - c0, b - c1)
    else:

        def distance(x: Array) -> float:
            return np.linalg.norm(x - target)

    while t < max_steps and not (stop and hit is not None):
        tau = step(tau)
        t += 1
        dists[t] = d = distance(tau)
        if hit is None and d <= radius:
            hit = t
    return Run(hit, tau, t, dists[: t + 1])
    while t < max_steps and not (stop and hit is not None):
        tau = step(tau)
        t += 1
        dists[t] = np.linalg.norm(tau - target)
        if hit is None and dists[t] <= radius:
            hit = t
    return Run(hit, tau, t, dists[: t + 1])


def gd(
    grad, tau0, eta: float, *, target, radius: float = 1.0, max_steps: int = 10**5, stop: bool = True
) -> Run:
    """Gradient descent ``tau <- tau - eta grad(tau)``; stops at the first step inside the ``radius`` ball around
    ``target`` (if ``stop``) or after ``max_steps``."""
    if not (math.isfinite(eta) and eta > 0):
        raise ValueError(f"step size eta must be > 0, got {eta}")
    return _run(lambda t: t - eta * grad(t), tau0, target, radius, max_steps, stop)


def ngd(
    grad, tau0, eta: float, *, target, radius: float = 1.0, max_steps: int = 10**5, stop: bool = True
) -> Run:
    """Normalised gradient descent ``tau <- tau - eta grad/||grad||`` (Thm 19); a zero gradient ends the run."""
    if not (math.isfinite(eta) and eta > 0):
        raise ValueError(f"step size eta must be > 0, got {eta}")
    sqrt = math.sqrt

    def step(t: Array) -> Array:
        g = grad(t)
        n = sqrt(g.dot(g))  # np.linalg.norm of a vector: sqrt(g . g), correctly rounded either way
        return t if n == 0 else t - eta * g / n

    return _run(step, tau0, target, radius, max_steps, stop)


def gd_eta(R: float) -> float:
    """The GD step ``1/lambda_M = 8/(R^2 + 2)`` (``lambda_M`` the curvature at ``tau_q``, Lemma 48 corrected)."""
    R = _check_R(R)
    return 8.0 / (R * R + 2.0)


def gauss_steps(
    R: float,
    method: str,
    eta: float | None = None,
    radius: float = 1.0,
    max_steps: int = 10**5,
    h: float | None = None,
    form: str | None = None,
    stop: bool = True,
) -> Run:
    """GD (``eta = 8/(R^2+2)``) or NGD (``eta = 0.05``) on the population Gaussian NCE from ``tau_q`` to the
    ``radius`` ball around ``tau_*`` (the §4.1.3 experiment).

    Defaults: GD uses the ``fused`` gradient on a spacing-0.1 grid (the trapezoid error is
    ``exp(-2 pi^2/(theta h)) < 1e-17`` for ``theta <= 5``; the counts 179 / 2,155 / 26,608 are the same with the
    direct form and h = 0.02), NGD the ``direct`` gradient on a spacing-0.02 grid. NGD counts at R >= 5 are
    ill-conditioned: perturbing ``tau_0`` by 1e-12 moves them by +-2 steps (the fixed-length steps zig-zag across a
    narrow valley near ``tau_*``).
    """
    if method not in ("gd", "ngd"):
        raise ValueError(f"method must be 'gd' or 'ngd', got {method!r}")
    h = (0.1 if method == "gd" else 0.02) if h is None else h
    form = ("fused" if method == "gd" else "direct") if form is None else form
    fam, ts, tq = gauss_setup(R, h=h)
    grad = nce_grad_fn(fam, ts, tq, form=form)
    if method == "gd":
        return gd(
            grad,
            tq,
            gd_eta(R) if eta is None else eta,
            target=ts,
            radius=radius,
            max_steps=max_steps,
            stop=stop,
        )
    return ngd(
        grad, tq, 0.05 if eta is None else eta, target=ts, radius=radius, max_steps=max_steps, stop=stop
    )


# ----------------------------------------------------------------------------------------------- landscape
def _sym2_eigs(a: float, b: float, c: float, det: float) -> tuple[float, float]:
    """Eigenvalues ``(max, min)`` of ``[[a, b], [b, c]]``; ``min = det/max`` avoids cancellation."""
    lmax = (a + c) / 2 + math.hypot((a - c) / 2, b)
    return lmax, det / lmax


@dataclass(frozen=True)
class Landscape:
    """Landscape constants of the Gaussian NCE at gap ``R``. Fields ending in ``_scaled`` are multiplied by
    ``e^{R^2/8}`` (so they stay representable for large ``R``)."""

    R: float
    L_star_scaled: float
    sigma_max_scaled: float
    sigma_min_scaled: float

    @cached_property
    def H_q(self) -> Array:
        """``H(tau_q)`` by quadrature on the full grid ``[-12, R + 12]`` (computed on first use)."""
        fam, ts, tq = gauss_setup(self.R, h=min(0.05, 0.25 / self.R))
        return nce_hessian(fam, tq, ts, tq)

    @property
    def kappa(self) -> float:
        """Condition number ``kappa_* = sigma_max(H_*)/sigma_min(H_*)``."""
        return self.sigma_max_scaled / self.sigma_min_scaled

    @property
    def L_star(self) -> float:
        return self.L_star_scaled * math.exp(-(self.R**2) / 8)

    @property
    def sigma_min(self) -> float:
        return self.sigma_min_scaled * math.exp(-(self.R**2) / 8)

    @property
    def sigma_max(self) -> float:
        return self.sigma_max_scaled * math.exp(-(self.R**2) / 8)

    @property
    def sigma_max_q(self) -> float:
        """``sigma_max(H(tau_q))``."""
        return float(np.linalg.eigvalsh(self.H_q)[-1])


def landscape_constants(R: float, half_width: float = 12.0) -> Landscape:
    """``L_*``, ``sigma_max(H_*)``, ``sigma_min(H_*)`` and ``H(tau_q)`` by quadrature (Prop 7, Lemmas 46-48).

    Around the midpoint ``x = R/2 + y`` the scaled densities are ``p_* e^{R^2/8} = phi(y) e^{R y/2}`` and
    ``q e^{R^2/8} = phi(y) e^{-R y/2}``, and ``log p_* - log q = R y``. Then ``L_* e^{R^2/8} = int phi(y) e^{Ry/2}
    softplus(-R y) dy`` (the two halves of the loss are equal by ``y -> -y``) and ``H_* e^{R^2/8} = 1/2 int w
    [[x^2, -x], [-x, 1]]`` with ``w = phi(y)/(2 cosh(R y/2))``. ``sigma_min`` comes from ``det = m^2 Var_w(y)/4``
    (``m`` the mass of ``w``), computed centred, so ``kappa ~ R^6`` costs no precision. The grid spacing
    ``min(0.01, 0.25/R)`` keeps the trapezoid error below ``exp(-2 pi^2/(R h)) <= e^{-78}`` (sech poles at
    ``pi/R``). ``H(tau_q)`` is evaluated lazily on the full grid ``[-12, R + 12]``.
    """
    R = _check_R(R)
    h = min(0.01, 0.25 / R)
    n = int(round(2 * half_width / h)) + 1
    y = np.linspace(-half_width, half_width, n)
    wq = np.full(n, y[1] - y[0])
    wq[[0, -1]] /= 2
    log_phi = -(y**2) / 2 - LOG_SQRT_2PI + np.log(wq)
    ry = R * y
    # softplus(-Ry) in log space: log softplus(z) = z + log1p(e^{-z}...) ~ z for z << 0
    z = -ry
    with np.errstate(divide="ignore"):
        log_sp = np.where(z < -30, z, np.log(np.logaddexp(0.0, np.minimum(z, 700))))
    L_scaled = float(np.exp(log_phi + ry / 2 + log_sp).sum())
    w = np.exp(log_phi - np.logaddexp(ry / 2, -ry / 2))  # phi / (2 cosh(Ry/2)) with the quadrature weight
    m = w.sum()
    x = R / 2 + y
    ex, ex2 = (w @ x) / m, (w @ x**2) / m
    var_y = (w @ (y - (w @ y) / m) ** 2) / m
    a, b, c = 0.5 * m * ex2, -0.5 * m * ex, 0.5 * m
    smax, smin = _sym2_eigs(a, b, c, 0.25 * m * m * var_y)
    return Landscape(R, L_scaled, smax, smin)


# closed forms and the printed vs corrected constants -------------------------------------------------------
def hessian_at_q_closed_form(R: float) -> Array:
    """``H(tau_q) = 1/8 (E_* T T^T + E_Q T T^T) = 1/8 [[R^2 + 2, -R], [-R, 2]]`` (Lemma 48 corrected)."""
    R = _check_R(R)
    return np.array([[R * R + 2, -R], [-R, 2.0]]) / 8


def ence_loss_closed_form(R: float, tau) -> float:
    """Gaussian eNCE: ``1/2 e^{-theta R/2 + theta^2/8 + da/2} + 1/2 e^{theta^2/8 - da/2}``, ``da = alpha - alpha_q``."""
    R = _check_R(R)
    theta, alpha = np.asarray(tau, dtype=float)
    da = alpha - LOG_SQRT_2PI
    return 0.5 * math.exp(-theta * R / 2 + theta**2 / 8 + da / 2) + 0.5 * math.exp(theta**2 / 8 - da / 2)


def ence_hessian_star_closed_form(R: float) -> Array:
    """``H*_exp = BC/4 E_mid[T T^T] = e^{-R^2/8}/4 [[R^2/4 + 1, -R/2], [-R/2, 1]]`` (Lemma 53, 1-D Gaussian)."""
    R = _check_R(R)
    return math.exp(-R * R / 8) / 4 * np.array([[R * R / 4 + 1, -R / 2], [-R / 2, 1.0]])


PROP7_PRINTED_INTERVAL = (0.5, 2.0)  # L_* = c e^{-R^2/8}, c in [1/2, 2]


def lem46_bound(R: float) -> float:
    """Lemma 46: ``sigma_max(H_*) <= R e^{-R^2/8}/sqrt(2 pi)``."""
    R = _check_R(R)
    return R * math.exp(-R * R / 8) / math.sqrt(2 * math.pi)


def lem47_printed_rate(R: float) -> float:
    """Printed Lemma 47 rate ``e^{-R^2/8}/R`` (claimed ``Theta`` of ``sigma_min(H_*)``), scaled by ``e^{R^2/8}``."""
    return 1.0 / _check_R(R)


def lem47_corrected_rate(R: float) -> float:
    """Corrected asymptote ``2 pi^2 sqrt(pi/2) e^{-R^2/8}/R^5`` of ``sigma_min(H_*)``, scaled by ``e^{R^2/8}``."""
    return 2 * math.pi**2 * math.sqrt(math.pi / 2) / _check_R(R) ** 5


def lem48_printed(R: float) -> float:
    """Printed Lemma 48 lower bound ``sigma_max(H(tau_q)) >= R^2/2``."""
    return _check_R(R) ** 2 / 2


def lem48_corrected(R: float) -> float:
    """Corrected Lemma 48 lower bound ``sigma_max(H(tau_q)) >= (R^2 + 2)/8``."""
    return (_check_R(R) ** 2 + 2) / 8


def sigma_max_q_closed_form(R: float) -> float:
    """``sigma_max`` of ``1/8 [[R^2+2, -R], [-R, 2]]`` = ``(R^2 + 4)/16 + R sqrt(R^2 + 4)/16``."""
    R = _check_R(R)
    return (R * R + 4) / 16 + R * math.sqrt(R * R + 4) / 16


def fit_power(xs, ys, corrections: int = 2, level: float = 0.95) -> tuple[float, tuple[float, float]]:
    """Least-squares exponent ``b`` in ``log y = a + b log x + sum_{j=1..corrections} c_j x^{-2j}`` with a
    ``level`` t-confidence interval.

    The ``x^{-2j}`` terms absorb the finite-``x`` corrections of an asymptotic power law (for the NCE landscape the
    expansions are in ``1/R^2``). For deterministic data the interval measures the misfit of the truncated
    expansion, not noise.
    """
    from scipy import stats

    xs, ys = np.asarray(xs, dtype=float), np.asarray(ys, dtype=float)
    if xs.shape != ys.shape or xs.ndim != 1:
        raise ValueError("xs and ys must be 1-D arrays of equal length")
    if np.any(xs <= 0) or np.any(ys <= 0):
        raise ValueError("xs and ys must be positive")
    if int(corrections) != corrections or corrections < 0:
        raise ValueError(f"corrections must be a non-negative integer, got {corrections}")
    A = np.column_stack(
        [np.ones_like(xs), np.log(xs)] + [xs ** (-2.0 * j) for j in range(1, int(corrections) + 1)]
    )
    if len(xs) <= A.shape[1]:
        raise ValueError(f"need more than {A.shape[1]} points for the fit, got {len(xs)}")
    coef, *_ = np.linalg.lstsq(A, np.log(ys), rcond=None)
    resid = np.log(ys) - A @ coef
    dof = len(xs) - A.shape[1]
    cov = (resid @ resid / dof) * np.linalg.inv(A.T @ A)
    half = stats.t.ppf(0.5 + level / 2, dof) * math.sqrt(cov[1, 1])
    return float(coef[1]), (float(coef[1] - half), float(coef[1] + half))
