"""SGD near a manifold of minimisers and the Riemannian flow on $\\mathrm{Tr}\\nabla^2L$ (Thm 3.3 of
``000_7523275b422019f8.txt``, after Li, Wang and Arora 2021).

$\\Gamma=\\{\\theta: c(\\theta)=0\\}$ with a $C^1$ constraint $c:\\mathbb R^d\\to\\mathbb R^M$ of full rank $M$; the
tangent projector is $P(\\theta)=I-J^\\top(JJ^\\top)^{-1}J$, $J=\\partial c/\\partial\\theta$. ODE (1):
$\\dot\\theta=-\\tfrac14P(\\theta)\\nabla\\mathrm{Tr}\\nabla^2L(\\theta)$ (the printed $P^\\perp_\\Gamma$ is Li et al.'s
notation for the tangent projection).

Toy with a closed form (``ProductLogitToy``): one context, two classes, logit $z=\\prod_i\\theta_i$, truth
$p^*=\\sigma(z^*)$. On $\\Gamma=\\{z=z^*\\}$, $\\mathrm{Tr}\\nabla^2L=\\sigma'(z^*)\\|\\nabla z\\|^2$; for two factors,
$a=\\sqrt{z^*}e^s$, $b=\\sqrt{z^*}e^{-s}$, the flow is $\\dot s=-\\tfrac{\\sigma'(z^*)}2\\tanh 2s$, i.e.
$\\sinh 2s(t)=\\sinh 2s_0\\,e^{-\\sigma'(z^*)t}$.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

__all__ = ["MinimizerManifold", "ProductLogitToy", "riemannian_flow", "sgd_chains", "toy_flow_closed_form"]


def _sigmoid(z):
    return 0.5 * (1.0 + np.tanh(0.5 * np.asarray(z, dtype=float)))


@dataclass(frozen=True)
class MinimizerManifold:
    """$\\Gamma=\\{c(\\theta)=0\\}$ from ``constraint`` (R^d -> R^M) and its Jacobian ``jacobian`` (R^d -> M x d)."""

    constraint: Callable[[np.ndarray], np.ndarray]
    jacobian: Callable[[np.ndarray], np.ndarray]

    def residual(self, theta) -> float:
        return float(np.max(np.abs(np.atleast_1d(self.constraint(np.asarray(theta, dtype=float))))))

    def tangent_projector(self, theta) -> np.ndarray:
        J = np.atleast_2d(self.jacobian(np.asarray(theta, dtype=float)))
        gram = J @ J.T
        scale = np.trace(gram)
        if not scale > 0 or abs(np.linalg.det(gram / scale)) < 1e-14:
            raise ValueError("constraint Jacobian is rank deficient at theta: Gamma is not a manifold there")
        return np.eye(J.shape[1]) - J.T @ np.linalg.solve(gram, J)


def riemannian_flow(
    trace_grad: Callable[[np.ndarray], np.ndarray],
    manifold: MinimizerManifold,
    theta0,
    times,
    *,
    coefficient: float = 0.25,
    rtol: float = 1e-10,
    atol: float = 1e-12,
) -> np.ndarray:
    """Solve $\\dot\\theta=-c\\,P_\\Gamma(\\theta)\\nabla\\mathrm{Tr}H(\\theta)$ (ODE (1): $c=\\tfrac14$) with
    ``scipy.integrate.solve_ivp`` (DOP853); returns theta at ``times`` (len(times), d). ``theta0`` must be on Gamma."""
    from scipy.integrate import solve_ivp

    theta0 = np.asarray(theta0, dtype=float)
    if theta0.ndim != 1 or not np.all(np.isfinite(theta0)):
        raise ValueError("theta0 must be a finite 1-D vector")
    if manifold.residual(theta0) > 1e-8:
        raise ValueError(f"theta0 is not on Gamma (constraint residual {manifold.residual(theta0):.3g})")
    times = np.asarray(times, dtype=float)
    if times.ndim != 1 or times[0] < 0 or np.any(np.diff(times) < 0):
        raise ValueError("times must be a non-decreasing 1-D array of non-negative times")

    def rhs(_, th):
        return -coefficient * manifold.tangent_projector(th) @ trace_grad(th)

    sol = solve_ivp(rhs, (0.0, float(times[-1])), theta0, t_eval=times, method="DOP853", rtol=rtol, atol=atol)
    if not sol.success:
        raise RuntimeError(f"solve_ivp failed: {sol.message}")
    return sol.y.T


def sgd_chains(
    sample_grad: Callable[[np.ndarray, np.random.Generator], np.ndarray],
    theta0,
    eta: float,
    n_steps: int,
    n_chains: int,
    rng: np.random.Generator,
    *,
    record_every: int | None = None,
):
    """``n_chains`` independent SGD chains $\\theta\\leftarrow\\theta-\\eta\\,g(\\theta,\\xi)$ run together: ``sample_grad``
    maps the (n_chains, d) states to (n_chains, d) stochastic gradients (one fresh sample per chain and step).
    Returns the final states, or (final, snapshots) with ``record_every``."""
    if not eta > 0:
        raise ValueError(f"eta must be positive, got {eta}")
    if int(n_chains) < 1 or int(n_steps) < 0:
        raise ValueError("n_chains must be >= 1 and n_steps >= 0")
    theta = np.tile(np.asarray(theta0, dtype=float), (int(n_chains), 1))
    snaps = []
    for k in range(int(n_steps)):
        if record_every and k % record_every == 0:
            snaps.append(theta.copy())
        theta = theta - eta * sample_grad(theta, rng)
    if record_every:
        snaps.append(theta.copy())
        return theta, np.array(snaps)
    return theta


@dataclass(frozen=True)
class ProductLogitToy:
    """Logit $z=\\prod_{i\\le p}\\theta_i$, label $y\\sim\\mathrm{Bern}(\\sigma(z^*))$, loss $-\\log p_\\theta(y)$."""

    z_star: float = 1.0
    p: int = 2

    def __post_init__(self) -> None:
        if self.p < 2:
            raise ValueError(f"p must be >= 2 factors, got {self.p}")
        if not np.isfinite(self.z_star) or self.z_star == 0:
            raise ValueError("z_star must be finite and non-zero (Gamma must be a manifold)")

    @property
    def sigma_prime(self) -> float:
        s = _sigmoid(self.z_star)
        return float(s * (1 - s))

    def grad_z(self, theta: np.ndarray) -> np.ndarray:
        """$\\partial z/\\partial\\theta_i=\\prod_{j\\ne i}\\theta_j$ (prefix times suffix products; no division)."""
        theta = np.asarray(theta, dtype=float)
        if self.p == 2:
            return theta[..., ::-1].copy()
        ones = np.ones(theta.shape[:-1] + (1,))
        left = np.concatenate([ones, np.cumprod(theta[..., :-1], axis=-1)], axis=-1)
        right = np.concatenate([np.cumprod(theta[..., :0:-1], axis=-1)[..., ::-1], ones], axis=-1)
        return left * right

    def manifold(self) -> MinimizerManifold:
        return MinimizerManifold(
            lambda th: np.array([np.prod(th) - self.z_star]), lambda th: self.grad_z(th)[None]
        )

    def loss(self, theta) -> float:
        z = np.prod(theta)
        ps = _sigmoid(self.z_star)
        return float(-(ps * np.log(_sigmoid(z)) + (1 - ps) * np.log(_sigmoid(-z))))

    def trace_hessian(self, theta) -> float:
        """$\\sigma'(z)\\|\\nabla z\\|^2+(\\sigma(z)-p^*)\\mathrm{Tr}\\nabla^2z$ with $\\mathrm{Tr}\\nabla^2z=0$."""
        theta = np.asarray(theta, dtype=float)
        s = _sigmoid(np.prod(theta))
        return float(s * (1 - s) * np.sum(self.grad_z(theta) ** 2))

    def trace_grad(self, theta) -> np.ndarray:
        """Gradient of ``trace_hessian`` (exact, by the product rule)."""
        theta = np.asarray(theta, dtype=float)
        z = np.prod(theta)
        s = _sigmoid(z)
        gz = self.grad_z(theta)
        q = np.sum(gz**2)
        # d/dtheta_j sum_i (prod_{l != i} theta_l)^2 = sum_{i != j} 2 gz_i^2 / theta_j
        dq = np.array([2 * (q - gz[j] ** 2) / theta[j] for j in range(self.p)])
        return s * (1 - s) * (1 - 2 * s) * q * gz + s * (1 - s) * dq

    def sample_grad(self, theta: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """One fresh label per chain: $\\nabla_\\theta(-\\log p_\\theta(y))=(\\sigma(z)-y)\\nabla z$."""
        z = np.prod(theta, axis=1)
        y = rng.random(theta.shape[0]) < _sigmoid(self.z_star)
        return (_sigmoid(z) - y)[:, None] * self.grad_z(theta)

    def point(self, s: float) -> np.ndarray:
        """The point $(\\sqrt{z^*}e^s,\\sqrt{z^*}e^{-s})$ of Gamma (p = 2, z* > 0)."""
        if self.p != 2 or self.z_star <= 0:
            raise ValueError("point(s) is defined for p = 2 and z_star > 0")
        r = np.sqrt(self.z_star)
        return np.array([r * np.exp(s), r * np.exp(-s)])


def toy_flow_closed_form(s0, t, sigma_prime: float):
    """$s(t)=\\tfrac12\\operatorname{asinh}(\\sinh(2s_0)e^{-\\sigma'(z^*)t})$ (p = 2)."""
    return 0.5 * np.arcsinh(np.sinh(2 * np.asarray(s0, dtype=float)) * np.exp(-sigma_prime * np.asarray(t)))
