"""Counterexamples to printed statements of Liu §4.1 (NCE landscape), one generator per erratum."""

from __future__ import annotations

import numpy as np

from theorylab.counterexamples import register
from theorylab.estimation import nce


@register("nce.prop7", "R = 4: L_* e^{R^2/8} = 0.446 lies outside the printed [1/2, 2]")
def prop7_r4() -> dict[str, np.ndarray]:
    Rs = np.array([3.0, 4.0, 6.0, 10.0, 16.0])
    scaled = np.array([nce.landscape_constants(R).L_star_scaled for R in Rs])
    return {
        "R": Rs,
        "L_star_times_exp_R2_over_8": scaled,
        "printed_interval": np.array(nce.PROP7_PRINTED_INTERVAL),
    }


@register("nce.lem47", "sigma_min(H_*) R e^{R^2/8} -> 0: the printed Theta(e^{-R^2/8}/R) fails")
def lem47_rates() -> dict[str, np.ndarray]:
    Rs = np.array([4.0, 6.0, 10.0, 16.0, 20.0])
    smin = np.array([nce.landscape_constants(R).sigma_min_scaled for R in Rs])
    return {"R": Rs, "sigma_min_times_R_exp": smin * Rs, "sigma_min_times_R5_exp": smin * Rs**5}


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
