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
    "hermite_quadrature_expectation",
    "lindsay_basak_means",
    "claim5_coefficients",
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


# ---------------------------------------------------------------- Lemma 9 (Lindsay-Basak), Claim 5


def _quadrature(density, d: int, nodes: int) -> tuple[np.ndarray, np.ndarray]:
    """Tensor Gauss-Hermite grid (n, d) and the weights of $\\int p\\,g\\approx\\sum_i\\omega_i g(y_i)$: the
    standard-normal rule times $p/\\varphi$ at the nodes."""
    from numpy.polynomial.hermite_e import hermegauss

    if d < 1 or nodes < 2:
        raise ValueError(f"need d >= 1 and nodes >= 2, got d = {d}, nodes = {nodes}")
    x, w = hermegauss(nodes)
    w = w / np.sqrt(2 * np.pi)  # weights of the standard normal
    grid = np.stack(np.meshgrid(*([x] * d), indexing="ij"), axis=-1).reshape(-1, d)
    weight = np.prod(np.stack(np.meshgrid(*([w] * d), indexing="ij"), axis=-1).reshape(-1, d), axis=1)
    phi = np.exp(-0.5 * np.sum(grid**2, axis=1)) / (2 * np.pi) ** (d / 2)
    return grid, weight * np.asarray(density(grid), dtype=float) / phi


def hermite_quadrature_expectation(density, d: int, functions, nodes: int = 40) -> np.ndarray:
    """$E_p[g(Y)]$ for each $g$ in ``functions`` (callables of points (n, d) -> (n,)) under the density ``density``
    (a black box: points (n, d) -> (n,)) on $\\mathbb R^d$, by tensor Gauss-Hermite quadrature with the standard
    normal weight: $\\int p\\,g=\\int\\varphi\\,(p/\\varphi)\\,g$. For a unit-covariance Gaussian mixture $p/\\varphi$ is
    entire, so the rule converges faster than geometrically (``nodes`` per dimension)."""
    grid, omega = _quadrature(density, d, nodes)
    return np.array([omega @ np.asarray(g(grid), dtype=float) for g in functions])


def _hermite_stack(x: np.ndarray, count: int) -> np.ndarray:
    """Probabilists' Hermite polynomials $He_0..He_{count-1}$ at ``x``, stacked on a new first axis, by the recurrence
    $He_{n+1}=x\\,He_n-n\\,He_{n-1}$ ($E[He_n(\\xi+Z)]=\\xi^n$ for $Z\\sim\\mathcal N(0,1)$)."""
    he = np.empty((count, *np.shape(x)))
    he[0] = 1.0
    if count > 1:
        he[1] = x
    for n in range(1, count - 1):
        he[n + 1] = x * he[n] - n * he[n - 1]
    return he


def _hankel_along(grid, omega, v, k: int):
    """Deconvolved moments $m_n=E[He_n(u^\\top Y)]$, $n<2k$, along $u=v/|v|$, their $k\\times k$ Hankel matrix and its
    singular values."""
    he = _hermite_stack(grid @ (v / np.linalg.norm(v)), 2 * k)
    m = he @ omega
    H = m[np.add.outer(np.arange(k), np.arange(k))]
    return he, m, H, np.linalg.svd(H, compute_uv=False)


def lindsay_basak_means(density, d: int, k: int, direction=None, nodes: int = 40, rng=None, tries: int = 8):
    """Lemma 9 (Lindsay-Basak 1993, Prop. 4.3), constructively: the means and weights of a $k$-component Gaussian
    mixture with identity covariance on $\\mathbb R^d$ from moments of its ``density`` (a black box).

    Along a unit ``direction`` $v$ whose projections $\\xi_j=v^\\top\\mu_j$ are distinct (the lemma's hypothesis),
    the deconvolved moments $m_n=E[He_n(v^\\top Y)]=\\sum_jw_j\\xi_j^n$, $n<2k$, determine the atoms $\\xi_j$ as the
    roots of the monic polynomial solving the Hankel system $\\sum_{i<k}c_im_{i+n}=-m_{k+n}$ (Prony), and the weights
    from the Vandermonde system; the mixed moments $E[He_n(v^\\top Y)\\,u^\\top Y]=\\sum_jw_j\\xi_j^n\\,u^\\top\\mu_j$
    ($u\\perp v$) give the other coordinates. Without ``direction``, ``tries`` random directions are drawn (the
    thesis's rotation remark: almost every direction has distinct projections) and the one with the best
    conditioned Hankel matrix is used. Returns ``(means (d, k), weights (k,), hankel_singular_values)``; raises
    ``ValueError`` when the Hankel matrix is singular (repeated projections: the hypothesis fails)."""
    if k < 1:
        raise ValueError(f"k must be >= 1, got {k}")
    if direction is None:
        rng = np.random.default_rng(0) if rng is None else rng
        candidates = [rng.standard_normal(d) for _ in range(max(1, tries))]
    else:
        v = np.asarray(direction, dtype=float)
        if v.shape != (d,) or not np.linalg.norm(v) > 0:
            raise ValueError(f"direction must be a non-zero vector of length d = {d}")
        candidates = [v]
    grid, omega = _quadrature(density, d, nodes)
    (he, m, H, sv), v = max(
        ((_hankel_along(grid, omega, v, k), v) for v in candidates), key=lambda r: r[0][3][-1] / r[0][3][0]
    )
    if sv[-1] <= 1e-9 * sv[0]:
        raise ValueError(
            "the Hankel matrix of the projected moments is singular: the projections of the means on this direction "
            "are not distinct (Lemma 9's hypothesis fails); rotate (use another direction)"
        )
    basis = np.linalg.qr(np.column_stack([v, np.eye(d)]))[0][:, :d]
    basis[:, 0] *= np.sign(basis[:, 0] @ v)  # first column = v / |v|; the others span its complement
    mixed = (he[:k] * omega) @ (grid @ basis[:, 1:])  # (k, d - 1): E[He_n(u^T Y) b_r^T Y]
    c = np.linalg.solve(H, -m[k : 2 * k])
    xi = np.roots(np.concatenate([[1.0], c[::-1]]))
    if np.max(np.abs(xi.imag)) > 1e-6 * max(1.0, np.max(np.abs(xi))):
        raise ValueError("the moment polynomial has complex roots: not a k-component unit-covariance mixture")
    xi = np.sort(xi.real)
    V = np.vander(xi, k, increasing=True).T  # V[n, j] = xi_j^n
    w = np.linalg.solve(V, m[:k])
    other = np.linalg.solve(V, mixed) / w[:, None]  # (k, d - 1)
    means = basis @ np.column_stack([xi, other]).T
    return means, w, sv


def claim5_coefficients(U, v, tol: float = 1e-10) -> np.ndarray:
    """Claim 5 constructively: for linearly independent columns $u_i$ of ``U`` and a $v$ with $\\{u_i-v\\}$ linearly
    dependent, the affine coefficients $\\beta$ ($\\sum_i\\beta_i=1$, $v=U\\beta$) from a null vector $\\alpha$ of
    $[u_i-v]$ as in (2.68)-(2.69): $\\beta=\\alpha/\\sum_i\\alpha_i$. Raises ``ValueError`` if the $u_i$ are dependent or
    the $u_i-v$ independent (relative tolerance ``tol`` on singular values)."""
    U = np.asarray(U, dtype=float)
    v = np.asarray(v, dtype=float)
    if U.ndim != 2 or v.shape != (U.shape[0],):
        raise ValueError(f"U must be (d, k) and v of length d, got {U.shape} and {v.shape}")
    k = U.shape[1]
    s = np.linalg.svd(U, compute_uv=False)
    if len(s) < k or s[-1] <= tol * s[0]:
        raise ValueError("the u_i must be linearly independent")
    D = U - v[:, None]
    _, sd, Vt = np.linalg.svd(D)
    if len(sd) == k and sd[-1] > tol * max(sd[0], s[0]):
        raise ValueError("the u_i - v are linearly independent: Claim 5 says nothing")
    alpha = Vt[-1]  # sum_i alpha_i (u_i - v) = 0
    total = alpha.sum()
    if (
        abs(total) <= tol * np.abs(alpha).max()
    ):  # then U alpha = 0 with alpha != 0, impossible for independent U
        raise ValueError("null vector with zero sum: the u_i are dependent")
    return alpha / total
