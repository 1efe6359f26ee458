"""Counterexamples to printed statements of Liu §2.1 (contrastive learning of diffusions)."""

from __future__ import annotations

import numpy as np

from theorylab.counterexamples import register, verifier
from theorylab.estimation import contrastive as C
from theorylab.markov.diffusions import OU

CONVENTIONS = (
    "OU(rho): dX = -rho X dt + sqrt(2) dW in dimension 1 (stationary law N(0, 1/rho)); B = E_pi |x|; t is time; "
    "TV distances are total variation between laws"
)


@register("contrastive.eq2.2", "1-D OU, rho = 1: B = 0.798 > printed bound pi(0) sqrt(1/rho) = 0.399")
def eq22_ou() -> dict[str, np.ndarray]:
    rhos = np.array([0.5, 1.0, 2.0, 4.0, 8.0])
    return {
        "rho": rhos,
        "B": np.array([OU(r).mean_norm() for r in rhos]),
        "printed_bound": np.array([C.eq22_printed_bound(r, 1) for r in rhos]),
        "corrected_bound": np.array([C.eq22_corrected_bound(r, 1) for r in rhos]),
    }


@verifier("contrastive.eq2.2")
def _eq22_check(a) -> tuple[bool, str]:
    """For some stored rho the printed bound (recomputed) is below B = E|x| (recomputed), while the corrected bound
    is above B for every rho."""
    rhos = [float(r) for r in a["rho"]]
    B = np.array([OU(r).mean_norm() for r in rhos])
    printed = np.array([C.eq22_printed_bound(r, 1) for r in rhos])
    corrected = np.array([C.eq22_corrected_bound(r, 1) for r in rhos])
    fails = [r for r, p, b in zip(rhos, printed, B, strict=True) if p < b]
    ok = bool(fails) and bool((corrected >= B).all())
    return (
        ok,
        f"printed bound below B at rho = {fails}; e.g. rho = {rhos[1]:g}: B = {B[1]:.4g} > {printed[1]:.4g}",
    )


@register(
    "contrastive.lemma5",
    "OU rho = 1 from z = 5: TV 0.910 / 0.660 / 0.266 > B/sqrt(2 pi t) at t = 0.5 / 1 / 2",
)
def lemma5_z5() -> dict[str, np.ndarray]:
    ou = OU(1.0)
    ts = np.array([0.5, 1.0, 2.0])
    return {
        "t": ts,
        "tv_from_5": np.array([ou.tv_from(5.0, t) for t in ts]),
        "bound": np.array([C.lemma5_bound(ou.mean_norm(), t) for t in ts]),
        "beta": np.array([ou.beta_mixing(t) for t in ts]),
    }


@verifier("contrastive.lemma5")
def _lemma5_check(a) -> tuple[bool, str]:
    """From z = 5 the TV distance to stationarity (recomputed) exceeds the printed bound B/sqrt(2 pi t) at every
    stored t."""
    ou = OU(1.0)
    ts = [float(t) for t in a["t"]]
    tv = np.array([ou.tv_from(5.0, t) for t in ts])
    bound = np.array([C.lemma5_bound(ou.mean_norm(), t) for t in ts])
    return bool(
        (tv > bound).all()
    ), f"t = {ts}: TV {np.round(tv, 3).tolist()} > bound {np.round(bound, 3).tolist()}"


@register("contrastive.thm1", "minimal T from (2.17)+(2.20) scales like Delta^-6.4, not the printed Delta^-3")
def thm1_table() -> dict[str, np.ndarray]:
    Ds = np.geomspace(0.01, 0.2, 8)
    rows = [C.min_T_thm1(D, 0.05) for D in Ds]
    mu = C.thm1_proof_mu(0.05, 0.05)
    return {
        "Delta_gen": Ds,
        "min_T": np.array([r[0] for r in rows]),
        "mu_opt": np.array([r[1] for r in rows]),
        "printed_T": np.array([C.thm1_printed_T(D, 0.05) for D in Ds]),
        "proof_mu_at_0.05": np.asarray(mu),
        "lhs_2_20_at_proof_mu": np.asarray(C.thm1_lhs(mu, 0.025, 0.05, 1.0)),
    }


@verifier("contrastive.thm1")
def _thm1_check(a) -> tuple[bool, str]:
    """The minimal T from (2.17)+(2.20) (recomputed) falls like Delta^s with s < -5.5 (log-log slope), far from
    the printed Delta^-3."""
    Ds = np.asarray(a["Delta_gen"], float)
    T = np.array([C.min_T_thm1(float(D), 0.05)[0] for D in Ds])
    slope = float(np.polyfit(np.log(Ds), np.log(T), 1)[0])
    return (
        slope < -5.5,
        f"log-log slope of the minimal T over Delta in [{Ds[0]:g}, {Ds[-1]:g}]: {slope:.2f} (printed -3)",
    )
