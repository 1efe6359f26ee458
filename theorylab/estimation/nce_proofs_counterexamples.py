"""Counterexamples to printed statements of the NCE proofs (Liu §4.1.3), one generator per erratum."""

from __future__ import annotations

import math

import numpy as np

from theorylab.counterexamples import register, verifier
from theorylab.estimation import nce

CONVENTIONS = (
    "prop8: Gaussian mean family of nce.gauss_setup(R), tau = [theta, alpha], p_* = N(R, 1), q = N(0, 1); "
    "directions are unit rows u, excess = L(tau_* + delta u) - L(tau_*). lem60: a finite family on the stored "
    "points, P_* = Q at theta = 0.3, kappa = cond(H_*) in the 2-norm. lem49: nce.gauss_setup(R, h=0.05), the "
    "annulus point tau = tau_* + 0.2 R u with u = (-1, 0) (b = 0.8 R, c = c_*), projected gradient "
    "g = |<grad L(tau), (tau_* - tau)/||tau_* - tau||>|, kappa = -8 log(g)/R^2. lem54: "
    "Gaussian family on [-14, 14] (h = 0.05), Theta = [-w, w], theta_* = w, theta_q = -w, tau = [theta, alpha] "
    "with T = [x, -1], shift c e_alpha with c = 1/beta_Z = 1/w; lambda's over a 201-point grid of Theta"
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


def lem49_projection(R: float, rho: float = 0.2, angle: float = math.pi, h: float = 0.05) -> float:
    """``|<grad L(tau), (tau_* - tau)/||tau_* - tau||>|`` at ``tau = tau_* + rho R (cos a, sin a)``."""
    fam, ts, tq = nce.gauss_setup(R, h=h)
    u = np.array([math.cos(angle), math.sin(angle)])
    return float(abs(nce.nce_grad(fam, ts + rho * R * u, ts, tq) @ u))


def lem49_exponent(R: float, rho: float = 0.2, angle: float = math.pi) -> float:
    """The exponent ``kappa = -8 log(projected gradient)/R^2`` of Lemma 49 (the O(1) prefactor set to 1)."""
    return -8.0 * math.log(lem49_projection(R, rho, angle)) / R**2


@register("nce.lem49", "b = 0.8 R on the annulus: the projected gradient decays like exp(-(9/16) R^2/8)")
def lem49_inner_edge() -> dict[str, np.ndarray]:
    Rs = np.array([16.0, 24.0, 32.0, 48.0, 64.0])
    proj = np.array([lem49_projection(R) for R in Rs])
    return {
        "R": Rs,
        "projected_gradient": proj,
        "times_exp_printed": proj * np.exp(0.75 * Rs**2 / 8),
        "times_exp_corrected": proj * np.exp(9 / 16 * Rs**2 / 8),
    }


@verifier("nce.lem49")
def _lem49_check(a) -> tuple[bool, str]:
    """Recomputed projected gradients times exp(3R^2/32) grow without bound (so no O(1) prefactor with
    kappa >= 3/4 exists), while times exp(9R^2/128) they stay in a bounded band."""
    Rs = np.asarray(a["R"], dtype=float)
    proj = np.array([lem49_projection(R) for R in Rs])
    printed = proj * np.exp(0.75 * Rs**2 / 8)
    corrected = proj * np.exp(9 / 16 * Rs**2 / 8)
    ok = bool(np.all(np.diff(printed) > 0) and printed[-1] > 1e20 and np.ptp(np.log(corrected)) < 0.1)
    return (
        ok,
        f"g exp(3R^2/32) = {printed[0]:.3g} .. {printed[-1]:.3g}; g exp(9R^2/128) in [{corrected.min():.3g}, {corrected.max():.3g}]",
    )


def lem54_alpha_shift(theta_half_width: float = 0.1, h: float = 0.05) -> dict[str, np.ndarray]:
    """eNCE Hessian at ``tau_* + c e_alpha`` with ``c = 1/beta_Z`` on the Gaussian family with
    ``Theta = [-w, w]`` (``beta_Z = w``, ``theta_* = w``, ``theta_q = -w``): since ``T = [x, -1]``,
    ``H(tau_* + c e_alpha) = cosh(c/2) H_*`` exactly."""
    w = float(theta_half_width)
    if not 0 < w < 1:
        raise ValueError(f"theta_half_width must be in (0, 1) (beta_Z = w < 1), got {w}")
    fam = nce.gaussian_mean_family(-14.0, 14.0, h)
    ts, tq = fam.normalised(np.array([w])), fam.normalised(np.array([-w]))
    c = 1.0 / w  # |d log Z/d theta| = |theta| <= w on Theta
    lam = np.array([np.linalg.eigvalsh(fam.second_moment(np.array([t]))) for t in np.linspace(-w, w, 201)])
    return {
        "theta_half_width": np.asarray(w),
        "c": np.asarray(c),
        "hess_star": nce.ence_hessian(fam, ts, ts, tq),
        "hess_shifted": nce.ence_hessian(fam, ts + np.array([0.0, c]), ts, tq),
        "lam_max": np.asarray(lam[:, -1].max()),
        "lam_min": np.asarray(lam[:, 0].min()),
    }


@register(
    "nce.lem54", "Gaussian family, Theta = [-0.1, 0.1], u = e_alpha, c = 1/beta_Z = 10: ratio cosh(5) = 74"
)
def lem54_gaussian() -> dict[str, np.ndarray]:
    return lem54_alpha_shift(0.1)


@verifier("nce.lem54")
def _lem54_check(a) -> tuple[bool, str]:
    """Recompute both eNCE Hessians: sigma_max(H(tau_* + c e_alpha))/sigma_max(H_*) exceeds the printed
    beta_u = 2e lambda_max/lambda_min."""
    b = lem54_alpha_shift(float(a["theta_half_width"]))
    ratio = float(np.linalg.eigvalsh(b["hess_shifted"])[-1] / np.linalg.eigvalsh(b["hess_star"])[-1])
    beta_u = float(2 * math.e * b["lam_max"] / b["lam_min"])
    return (
        ratio > beta_u,
        f"sigma_max ratio {ratio:.4g} (cosh(c/2) = {math.cosh(float(b['c']) / 2):.4g}) > beta_u {beta_u:.4g}",
    )
