"""Counterexamples to printed statements of Liu §4.1 (NCE landscape), one generator per erratum."""

from __future__ import annotations

import numpy as np

from theorylab.counterexamples import register, verifier
from theorylab.estimation import nce

CONVENTIONS = (
    "Gaussian mean family on a grid (step 0.05), tau = [theta, alpha] with log-density theta x - x^2/2 + alpha; "
    "p_* = N(R, 1), noise q = N(0, 1); scaled constants are multiplied by e^{R^2/8}"
)


@register("nce.prop7", "R = 4: L_* e^{R^2/8} = 0.446 lies outside the printed [1/2, 2]")
def prop7_r4() -> dict[str, np.ndarray]:
    Rs = np.array([3.0, 4.0, 6.0, 10.0, 16.0])
    scaled = np.array([nce.landscape_constants(R).L_star_scaled for R in Rs])
    return {
        "R": Rs,
        "L_star_times_exp_R2_over_8": scaled,
        "printed_interval": np.array(nce.PROP7_PRINTED_INTERVAL),
    }


@verifier("nce.prop7")
def _prop7_check(a) -> tuple[bool, str]:
    """L_* e^{R^2/8} (recomputed) lies outside the printed interval [1/2, 2] for some stored R."""
    lo, hi = nce.PROP7_PRINTED_INTERVAL
    Rs = [float(r) for r in a["R"]]
    scaled = [nce.landscape_constants(R).L_star_scaled for R in Rs]
    out = [(R, round(v, 4)) for R, v in zip(Rs, scaled, strict=True) if not lo <= v <= hi]
    return bool(out), f"(R, L_* e^(R^2/8)) outside [{lo:g}, {hi:g}]: {out}"


@register("nce.lem47", "sigma_min(H_*) R e^{R^2/8} -> 0: the printed Theta(e^{-R^2/8}/R) fails")
def lem47_rates() -> dict[str, np.ndarray]:
    Rs = np.array([4.0, 6.0, 10.0, 16.0, 20.0])
    smin = np.array([nce.landscape_constants(R).sigma_min_scaled for R in Rs])
    return {"R": Rs, "sigma_min_times_R_exp": smin * Rs, "sigma_min_times_R5_exp": smin * Rs**5}


@verifier("nce.lem47")
def _lem47_check(a) -> tuple[bool, str]:
    """sigma_min(H_*) R e^{R^2/8} (recomputed) falls by more than 10x over the stored R: not Theta(1)."""
    Rs = [float(r) for r in a["R"]]
    v = np.array([nce.landscape_constants(R).sigma_min_scaled * R for R in Rs])
    return v[0] / v[-1] > 10, f"R = {Rs}: sigma_min R e^(R^2/8) = {[f'{x:.3g}' for x in v]}"


@register("nce.lem48", "R = 4: sigma_max(H(tau_q)) = 2.368 < R^2/2 = 8")
def lem48_r4() -> dict[str, np.ndarray]:
    R = 4.0
    H = nce.landscape_constants(R).H_q
    return {
        "R": np.asarray(R),
        "H_q_quadrature": H,
        "H_q_closed_form": nce.hessian_at_q_closed_form(R),
        "sigma_max": np.asarray(np.linalg.eigvalsh(H)[-1]),
        "printed_bound": np.asarray(nce.lem48_printed(R)),
    }


@verifier("nce.lem48")
def _lem48_check(a) -> tuple[bool, str]:
    """sigma_max of the closed-form H(tau_q) at the stored R is below the printed R^2/2."""
    R = float(a["R"])
    smax = float(np.linalg.eigvalsh(nce.hessian_at_q_closed_form(R))[-1])
    bound = nce.lem48_printed(R)
    return smax < bound, f"R = {R:g}: sigma_max(H(tau_q)) = {smax:.4g} < printed {bound:.4g}"


@register("nce.gauss_setup", "the printed tau_* = [R, -R^2/2 - log sqrt(2 pi)] is not a stationary point")
def printed_tau_star() -> dict[str, np.ndarray]:
    R = 4.0
    fam, ts, tq = nce.gauss_setup(R)
    printed = np.array([R, -(R**2) / 2 - nce.LOG_SQRT_2PI])
    return {
        "tau_printed": printed,
        "grad_printed": nce.nce_grad(fam, printed, ts, tq),
        "tau_corrected": ts,
        "grad_corrected": nce.nce_grad(fam, ts, ts, tq),
    }


@verifier("nce.gauss_setup")
def _gauss_setup_check(a) -> tuple[bool, str]:
    """The NCE gradient (recomputed on the grid family) at the printed tau_* is far from 0 (> 0.1), at the
    corrected tau_* it vanishes (< 1e-12)."""
    R = float(a["tau_printed"][0])
    fam, ts, tq = nce.gauss_setup(R)
    g_printed = float(np.linalg.norm(nce.nce_grad(fam, np.asarray(a["tau_printed"], float), ts, tq)))
    g_fixed = float(np.linalg.norm(nce.nce_grad(fam, ts, ts, tq)))
    return (
        g_printed > 0.1 and g_fixed < 1e-12,
        f"R = {R:g}: |grad| at printed tau_* {g_printed:.3g}, at corrected {g_fixed:.1e}",
    )
