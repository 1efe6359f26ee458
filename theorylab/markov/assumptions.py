"""Assumptions 1-3 of Liu §2.1 on the potential $f$ of the Langevin diffusion (2.1), exactly for quadratic
potentials $f(x)=\\frac12x^\\top Ax$ (the Ornstein-Uhlenbeck family the chapter instantiates).

* Assumption 1 ($\\rho$-strong convexity): $\\rho=\\lambda_{\\min}(A)>0$;
* Assumption 2 ($f$ $L_0$-smooth, $\\nabla f$ $L_1$-smooth): $L_0=\\lambda_{\\max}(A)$; $\\nabla f=Ax$ is linear, so its
  Jacobian is constant and $L_1=0$;
* Assumption 3 (linear growth $\\|\\nabla f(z)\\|\\le K(1+\\|z\\|)$): the least $K$ is
  $\\sup_z\\|Az\\|/(1+\\|z\\|)=\\lambda_{\\max}(A)$ (approached along the top eigenvector, never attained).
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["QuadraticConstants", "quadratic_constants"]


@dataclass(frozen=True)
class QuadraticConstants:
    """The exact constants of Assumptions 1-3 for $f=\\frac12x^\\top Ax$ (sympy numbers), and
    $Z_\\pi=\\int e^{-f}=(2\\pi)^{d/2}\\det(A)^{-1/2}$."""

    rho: object
    L0: object
    L1: object
    K: object
    Z: object


def quadratic_constants(A) -> QuadraticConstants:
    """Constants of Assumptions 1-3 for $f(x)=\\frac12x^\\top Ax$ with a symmetric matrix ``A`` (entries int,
    Fraction or sympy Rational: exact). ``ValueError`` naming Assumption 1 when $\\lambda_{\\min}(A)\\le0$ (then
    $\\int e^{-f}=\\infty$ and there is no stationary law)."""
    import sympy as sp

    try:
        M = sp.Matrix(A).applyfunc(sp.S)
    except (TypeError, ValueError, sp.SympifyError) as err:
        raise TypeError(f"A must be a square matrix of exact numbers, got {A!r}") from err
    if M.rows == 0 or M.rows != M.cols:
        raise ValueError(f"A must be a non-empty square matrix, got shape {M.shape}")
    if M != M.T:
        raise ValueError("A must be symmetric (f(x) = x^T A x / 2 only sees its symmetric part)")
    if any(not v.is_Rational for v in M):
        raise TypeError("A must have exact rational entries (int, Fraction or sympy Rational)")
    eig = M.eigenvals(multiple=True)
    lo, hi = min(eig), max(eig)
    if not lo > 0:
        raise ValueError(
            f"Assumption 1: f is not strongly convex: lambda_min(A) = {lo} <= 0 (the integral of e^-f diverges)"
        )
    d = M.rows
    return QuadraticConstants(
        rho=lo, L0=hi, L1=sp.Integer(0), K=hi, Z=(2 * sp.pi) ** sp.Rational(d, 2) / sp.sqrt(M.det())
    )
