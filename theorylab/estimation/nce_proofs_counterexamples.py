"""Counterexamples to printed statements of the NCE proofs (Liu §4.1.3), one generator per erratum."""

from __future__ import annotations

import math

import numpy as np

from theorylab.counterexamples import register, verifier
from theorylab.estimation import nce

CONVENTIONS = (
    "prop8: Gaussian mean family of nce.gauss_setup(R), tau = [theta, alpha], p_* = N(R, 1), q = N(0, 1); "
    "directions are unit rows u, excess = L(tau_* + delta u) - L(tau_*). lem60: a finite family on the stored "
    "points, P_* = Q at theta = 0.3, kappa = cond(H_*) in the 2-norm"
)


def prop8_excess(R: float, delta: float, n_directions: int = 64) -> dict[str, np.ndarray]:
    """``L(tau_* + delta u) - L(tau_*)`` over unit directions u (half circle plus the two eigenvectors of H_*),
    its Taylor value ``delta^2/2 u^T H_* u`` and Prop 8's printed value ``R e^{-R^2/8} delta^2``."""
    fam, ts, tq = nce.gauss_setup(R)
    base = nce.nce_loss(fam, ts, ts, tq)
    hess = nce.nce_hessian(fam, ts, ts, tq)
    theta = np.linspace(0.0, math.pi, n_directions, endpoint=False)
    dirs = np.vstack([np.stack([np.cos(theta), np.sin(theta)], axis=1), np.linalg.eigh(hess)[1].T])
    excess = np.array([nce.nce_loss(fam, ts + delta * u, ts, tq) - base for u in dirs])
    return {
        "R": np.asarray(R),
        "delta": np.asarray(delta),
        "directions": dirs,
        "excess": excess,
        "taylor": 0.5 * delta**2 * np.einsum("ij,jk,ik->i", dirs, hess, dirs),
        "printed": np.asarray(R * math.exp(-(R**2) / 8) * delta**2),
        "kappa_star": np.asarray(float(np.linalg.cond(hess))),
    }


@register("nce.prop8", "R = 4, delta = 0.01: the excess loss ranges over a factor 87 across directions")
def prop8_r4() -> dict[str, np.ndarray]:
    return prop8_excess(4.0, 0.01)


@register("nce.lem60", "P_* = Q: kappa_* = lambda_max/lambda_min, twice Lemma 60's printed bound")
def lem60_p_equals_q() -> dict[str, np.ndarray]:
    fam = nce.finite_family(np.array([[0.0], [1.0], [2.5], [-1.0]]))
    theta = np.array([0.3])
    tau = fam.normalised(theta)
    hess = nce.nce_hessian(fam, tau, tau, tau)
    second = fam.second_moment(theta)
    lam = np.linalg.eigvalsh(second)
    return {
        "hessian": hess,
        "second_moment": second,
        "kappa_star": np.asarray(np.linalg.cond(hess)),
        "printed_bound": np.asarray(lam[-1] / (2 * lam[0])),
    }


@verifier("nce.prop8")
def _prop8_check(a) -> tuple[bool, str]:
    """The excess loss, recomputed along the stored directions, is not one number: Prop 8's equality fails."""
    R, delta = float(a["R"]), float(a["delta"])
    fam, ts, tq = nce.gauss_setup(R)
    base = nce.nce_loss(fam, ts, ts, tq)
    excess = np.array([nce.nce_loss(fam, ts + delta * u, ts, tq) - base for u in np.asarray(a["directions"])])
    spread = float(excess.max() / excess.min()) if (excess > 0).all() else math.inf
    return (
        spread > 2,
        f"R = {R:g}, delta = {delta:g}: excess ranges over a factor {spread:.3g} across directions",
    )


@verifier("nce.lem60")
def _lem60_check(a) -> tuple[bool, str]:
    """kappa_* recomputed from the stored Hessian exceeds the printed bound recomputed from the second moment."""
    kappa = float(np.linalg.cond(np.asarray(a["hessian"])))
    lam = np.linalg.eigvalsh(np.asarray(a["second_moment"]))
    printed = float(lam[-1] / (2 * lam[0]))
    return kappa > printed, f"kappa_* = {kappa:.4g} vs printed bound {printed:.4g}"
