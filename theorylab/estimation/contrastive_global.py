"""The inequality chain (2.30)-(2.32) of the proof of Liu Theorem 3 on finite state spaces (exact with Fractions).

With $r_q(p)=p/(p+q)$ (the classifier of a kernel $p$, Lemma 1) and $\\Delta r=r_q(p)-r_q(p_*)$:

* (2.31) with absolute values: $r_q'(\\max\\{p,p_*\\})\\,|p-p_*|\\le|\\Delta r|$ ($r_q$ is concave, $r_q'=q/(p+q)^2$);
* (2.32) Cauchy-Schwarz: $\\mathbb E|p-p_*|\\le\\sqrt{\\mathbb E(\\Delta r)^2}\\sqrt{\\mathbb E(\\max\\{p,p_*\\}+q)^4/q^2}$, both expectations
  over $z\\sim\\pi$, $z'\\sim p_*(z,\\cdot)$;
* (2.30): the excess risk is $R(h)-R(h^*)=\\mathbb E_{z\\sim\\pi,z'\\sim\\frac12(p_*+q)}(\\Delta r)^2$ (Lemma 1), so
  $\\mathbb E_{z'\\sim p_*}(\\Delta r)^2\\le2(R(h)-R(h^*))$, i.e. $\\le4\\epsilon_{tr}$ when the excess is $\\le2\\epsilon_{tr}$.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["r_q", "Thm3Chain", "thm3_chain"]


def r_q(p, q):
    """$r_q(p)=p/(p+q)$, elementwise."""
    return p / (p + q)


@dataclass(frozen=True)
class Thm3Chain:
    """The terms of (2.30)-(2.32): ``l1`` $=\\mathbb E_{\\pi,p_*}|p-p_*|$, ``risk_pstar`` $=\\mathbb E_{\\pi,p_*}(\\Delta r)^2$,
    ``excess`` $=R(h)-R(h^*)$, ``weight`` $=\\mathbb E_{\\pi,p_*}(\\max\\{p,p_*\\}+q)^4/q^2$."""

    l1: object
    risk_pstar: object
    excess: object
    weight: object


def _stochastic(P, name: str, n: int):
    P = np.asarray(P)
    if P.shape != (n, n) or (P < 0).any() or any(abs(s - 1) > 1e-12 for s in P.sum(axis=1)):
        raise ValueError(f"{name} must be a {n} x {n} matrix whose rows are probability vectors")
    return P


def thm3_chain(pi, P_star, P, q) -> Thm3Chain:
    """The terms of (2.30)-(2.32) for a finite chain: stationary law ``pi``, true kernel ``P_star``, estimated
    kernel ``P`` (rows normalised) and proposal ``q`` (positive); object arrays of Fractions stay exact."""
    pi = np.asarray(pi)
    n = pi.shape[0] if pi.ndim == 1 else 0
    if n == 0 or (pi < 0).any() or abs(pi.sum() - 1) > 1e-12:
        raise ValueError("pi must be a probability vector")
    P_star, P = _stochastic(P_star, "P_star", n), _stochastic(P, "P", n)
    q = np.asarray(q)
    if q.shape != (n,) or not (q > 0).all() or abs(q.sum() - 1) > 1e-12:
        raise ValueError(f"q must be a positive probability vector of length {n}")
    Q = np.broadcast_to(q, (n, n))
    dr = r_q(P, Q) - r_q(P_star, Q)
    w_star = pi[:, None] * P_star  # z ~ pi, z' ~ p_*(z, .)
    w_mix = pi[:, None] * (P_star + Q) / 2
    top = np.maximum(P, P_star) + Q
    return Thm3Chain(
        l1=(w_star * abs(P - P_star)).sum(),
        risk_pstar=(w_star * dr * dr).sum(),
        excess=(w_mix * dr * dr).sum(),
        weight=(w_star * top**4 / (Q * Q)).sum(),
    )
