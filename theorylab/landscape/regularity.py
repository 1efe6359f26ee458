"""Assumption 3.1 of ``000_7523275b422019f8.txt``: $L\\in C^3$ and the global minimisers $\\Gamma$ form a
$(d-M)$-dimensional $C^2$ submanifold with $\\mathrm{rank}\\,\\nabla^2L(\\theta)=M$ for every $\\theta\\in\\Gamma$.

On the product toy of Theorem 3.3 (``ProductLogitToy``: logit $z=\\prod_{i\\le p}\\theta_i$, cross-entropy against
$\\mathrm{Bern}(\\sigma(z^*))$), $\\nabla^2L=\\sigma'(z)\\nabla z\\nabla z^\\top+(\\sigma(z)-\\sigma(z^*))\\nabla^2z$, which on
$\\Gamma=\\{z=z^*\\}$ is $\\sigma'(z^*)\\nabla z\\nabla z^\\top$: rank 1 where $\\nabla z\\ne0$. For $z^*\\ne0$ every point
of $\\Gamma$ has all $\\theta_i\\ne0$, so $\\nabla z\\ne0$, $z^*$ is a regular value and $\\Gamma$ is a smooth
$(p-1)$-manifold with $M=1$. For $z^*=0$, $\\Gamma$ is a union of coordinate hyperplanes: where two of them cross,
$\\nabla z=0$ and the rank drops to 0 (``check_assumption31`` names it).
"""

from __future__ import annotations

import numpy as np

from theorylab.landscape.manifold import ProductLogitToy, _sigmoid

__all__ = ["check_assumption31", "hessian_rank", "product_toy_hessian"]


def product_toy_hessian(z_star: float, theta) -> np.ndarray:
    """$\\nabla^2L(\\theta)$ of the product toy for any real $z^*$ (including 0, where Asm 3.1 fails):
    $\\sigma'(z)\\nabla z\\nabla z^\\top+(\\sigma(z)-\\sigma(z^*))\\nabla^2z$, $(\\nabla^2z)_{ij}=\\prod_{l\\ne i,j}\\theta_l$."""
    theta = np.asarray(theta, dtype=float)
    if theta.ndim != 1 or theta.size < 2 or not np.all(np.isfinite(theta)) or not np.isfinite(z_star):
        raise ValueError("theta must be a finite vector of p >= 2 factors and z_star finite")
    p = theta.size
    z = float(np.prod(theta))
    gz = np.array([np.prod(np.delete(theta, i)) for i in range(p)])
    hz = np.zeros((p, p))
    for i in range(p):
        for j in range(p):
            if i != j:
                hz[i, j] = np.prod(np.delete(theta, [i, j]))
    s = _sigmoid(z)
    return s * (1 - s) * np.outer(gz, gz) + (s - _sigmoid(z_star)) * hz


def hessian_rank(H: np.ndarray, rtol: float = 1e-9) -> int:
    """Number of eigenvalues of the symmetric ``H`` above ``rtol`` times the largest (0 for the zero matrix)."""
    ev = np.abs(np.linalg.eigvalsh(np.asarray(H, dtype=float)))
    top = float(ev.max()) if ev.size else 0.0
    return int(np.sum(ev > rtol * top)) if top > 0 else 0


def check_assumption31(z_star: float, points, M: int = 1) -> list[int]:
    """Asm 3.1 on the product toy at the given points of $\\Gamma$ (rows): each must satisfy $z=z^*$ (to 1e-12
    relative), have a non-zero constraint gradient (so $\\Gamma$ is a manifold there) and Hessian rank ``M``.
    Returns the ranks; ``ValueError`` naming the first failing point."""
    P = np.atleast_2d(np.asarray(points, dtype=float))
    ranks = []
    for k, th in enumerate(P):
        z = float(np.prod(th))
        if abs(z - z_star) > 1e-12 * max(1.0, abs(z_star)):
            raise ValueError(f"point {k} is not on Gamma: z = {z:.6g} != z* = {z_star:.6g}")
        gz = ProductLogitToy(1.0, th.size).grad_z(th)
        r = hessian_rank(product_toy_hessian(z_star, th))
        if not np.any(gz) or r != M:
            raise ValueError(
                f"Assumption 3.1 fails at point {k}: grad z = {gz.tolist()}, rank of the Hessian {r} != M = {M}"
            )
        ranks.append(r)
    return ranks
