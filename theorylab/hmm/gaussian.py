"""G-HMM posterior geometry (Lemma 8, Claim 4) and the full conditional law (Theorem 9, eq. 2.78-2.79).

* Posterior Jacobian (2.64): $\\nabla_x\\phi=(\\mathrm{diag}\\,\\phi-\\phi\\phi^\\top)(M-x\\mathbb
  1^\\top)^\\top$ (the $x\\mathbb 1^\\top$ term vanishes since
  $(\\mathrm{diag}\\,\\phi-\\phi\\phi^\\top)\\mathbb 1=0$).
* Claim 4: in $\\mathrm{col}(M)$ the non-zero solution of $(2\\mu_i-v)^\\top v=0$ for all $i$ is
  $v^*=2u/\\|u\\|^2$, $u=(M^\\dagger)^\\top\\mathbb 1$, and $M-v^*\\mathbb 1^\\top=HM$.
* Theorem 9: $p(x_2\\mid x_1)=(2\\pi)^{-d/2}\\psi(x_2)^\\top T\\phi(x_1)$ with
  $\\psi_i(x)=e^{-\\|x-\\mu_i\\|^2/2}$; given $M$, $k$ points with invertible $\\Psi_X$, $\\Phi_X$ give
  $T=\\Psi_X^{-\\top}P\\,\\Phi_X^{-1}$ (2.79).
"""

from __future__ import annotations

import numpy as np

from theorylab.hmm.models import GHMM

__all__ = [
    "posterior_jacobian",
    "claim4_vector",
    "conditional_density",
    "transition_from_density",
    "affine_log_ratio_residual",
]


def posterior_jacobian(model: GHMM, x) -> np.ndarray:
    """$\\partial\\phi_i/\\partial x_j$ at one point ``x`` (shape (k, d)), in the printed form (2.64)."""
    x = np.asarray(x, dtype=float)
    phi = model.posterior(x)
    return (np.diag(phi) - np.outer(phi, phi)) @ (model.M - np.outer(x, np.ones(model.k))).T


def claim4_vector(M) -> np.ndarray:
    """$v^*=2u/\\|u\\|^2$ with $u=(M^\\dagger)^\\top\\mathbb 1$: the projection of 0 onto the affine hull of $\\{2\\mu_i\\}$."""
    M = np.asarray(M, dtype=float)
    u = np.linalg.pinv(M).T @ np.ones(M.shape[1])
    return 2 * u / (u @ u)


def _psi(model: GHMM, x: np.ndarray) -> np.ndarray:
    return np.exp(-0.5 * np.sum((x[..., None, :] - model.M.T) ** 2, axis=-1))


def conditional_density(model: GHMM, x2, x1) -> np.ndarray:
    """$p(x_2\\mid x_1)=(2\\pi)^{-d/2}\\psi(x_2)^\\top T\\phi(x_1)$ for paired points of shape (n, d)."""
    x1 = np.asarray(x1, dtype=float)
    x2 = np.asarray(x2, dtype=float)
    if x1.shape != x2.shape or x1.shape[-1] != model.d:
        raise ValueError(f"x1 and x2 must have the same shape (..., {model.d})")
    w = model.posterior(x1) @ model.T.T  # P(h2 | x1)
    return (2 * np.pi) ** (-model.d / 2) * np.sum(_psi(model, x2) * w, axis=-1)


def transition_from_density(density, M, points) -> np.ndarray:
    """Eq. (2.79): with known means ``M`` and ``k`` points $X$, $P_{ab}=(2\\pi)^{d/2}p(x_a\\mid x_b)$ equals
    $\\Psi_X^\\top T\\Phi_X$, so $T=\\Psi_X^{-\\top}P\\Phi_X^{-1}$. ``density(x2, x1)`` takes paired (n, d)
    arrays."""
    M = np.asarray(M, dtype=float)
    X = np.asarray(points, dtype=float)
    d, k = M.shape
    if X.shape != (k, d):
        raise ValueError(f"need k = {k} points of dimension {d}, got shape {X.shape}")
    helper = GHMM(M, np.eye(k), norm=None, validate=False)
    Psi = _psi(helper, X).T  # (k, n): Psi[i, a] = psi_i(x_a)
    Phi = helper.posterior(X).T  # (k, n)
    a, b = np.meshgrid(np.arange(k), np.arange(k), indexing="ij")
    P = (2 * np.pi) ** (d / 2) * np.asarray(density(X[a.ravel()], X[b.ravel()])).reshape(k, k)
    return np.linalg.solve(Psi.T, P) @ np.linalg.inv(Phi)


def affine_log_ratio_residual(q, X) -> float:
    """How far $\\log(q_i(x)/q_1(x))$ is from affine in $x$ (least-squares residual, max over $i$).

    A G-HMM posterior (equal norms) has exactly affine log-ratios $(\\mu_i-\\mu_1)^\\top x$; Lemma 8 says a
    linear map $R$ of a posterior is again a posterior only if $R$ is a permutation. Returns ``inf`` when some
    entry of ``q`` is not positive (then $q$ is not a posterior at all)."""
    q = np.asarray(q, dtype=float)
    if np.any(q <= 0):
        return float("inf")
    L = np.log(q[:, 1:]) - np.log(q[:, :1])
    design = np.column_stack([X, np.ones(len(X))])
    coef = np.linalg.lstsq(design, L, rcond=None)[0]
    return float(np.max(np.abs(design @ coef - L)))
