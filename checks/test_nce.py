"""Claim checks of the nce family: the flat NCE landscape of a far Gaussian noise, GD vs NGD, eNCE (Liu §4.1,
``001_6a230b9a9faf2198.txt``)."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from theorylab.estimation import nce
from theorylab.estimation import nce_counterexamples as nce_cx
from theorylab.testing import rejects, trivial

# Reference step counts to ||tau - tau_*|| <= 1 from tau_q (GD eta = 8/(R^2+2), NGD eta = 0.05), population.
GD_REF = {3: 179, 4: 2155, 5: 26608}
NGD_REF = {3: 92, 4: 164, 5: 312, 6: 704}
# Quadrature tolerance: the trapezoid rules used are spectrally accurate (errors < 1e-15 relative, see
# nce.gaussian_mean_family); 1e-9 relative leaves room for the float sums of ~10^4 terms.
QTOL = 1e-9


def _grid_family(R):
    return nce.gauss_setup(R, h=min(0.05, 0.25 / R))


# ------------------------------------------------------------------------------------------ gauss_setup / lem44
@pytest.mark.claim("nce.gauss_setup", tier="exact")
def test_gauss_setup_corrected_tau_star_is_the_minimiser():
    for R in (2.0, 4.0, 8.0):
        fam, ts, tq = _grid_family(R)
        # tau_* normalises N(R, 1): alpha = log Z(R) on the grid
        assert abs(fam.log_partition(R) - ts[1]) < QTOL * ts[1]
        g = nce.nce_grad(fam, ts, ts, tq)
        assert (
            np.linalg.norm(g) < 1e-15
        )  # p = p_* pointwise: the integrand is zero up to rounding of O(1) terms
        assert np.linalg.eigvalsh(nce.nce_hessian(fam, ts, ts, tq))[0] > 0  # strict local (and global) min


@pytest.mark.claim("nce.gauss_setup", tier="exact", control=True)
def test_gauss_setup_printed_sign_is_not_stationary():
    out = nce_cx.printed_tau_star()
    assert np.linalg.norm(out["grad_printed"]) > 0.1
    assert np.linalg.norm(out["grad_corrected"]) < 1e-15


@pytest.mark.claim("nce.gauss_setup", tier="exact")
def test_gaussian_mean_family_is_the_trapezoid_rule():
    # on [0, 1] with h = 1/2 the family's mass at theta = 0 is the trapezoid sum 1/4 f(0) + 1/2 f(1/2) + 1/4 f(1)
    # of f(x) = e^{-x^2/2}: both end points (and only they) carry half a weight
    fam = nce.gaussian_mean_family(0.0, 1.0, 0.5)
    trap = 0.25 + 0.5 * math.exp(-1 / 8) + 0.25 * math.exp(-1 / 2)
    assert abs(fam.log_partition(0.0) - math.log(trap)) < 1e-15  # three terms: rounding only
    # a grid symmetric about 0 gives an even log-partition: log Z(theta) = log Z(-theta)
    sym = nce.gaussian_mean_family(-1.0, 1.0, 0.25)
    for th in (0.5, 2.0):
        assert abs(sym.log_partition(th) - sym.log_partition(-th)) < 1e-14


@pytest.mark.claim("nce.lem44", tier="exact")
def test_finite_family_statistics_base_and_points():
    """K = 3 points with features 0, 1, 3 (integers): extended statistics (f, -1), counting base measure (log 1 =
    0), points labelled 0..K-1; so log Z(theta) = log(1 + e^theta + e^{3 theta})."""
    fam = nce.finite_family([[0], [1], [3]])
    assert (
        np.array_equal(fam.stats, [[0.0, -1.0], [1.0, -1.0], [3.0, -1.0]]) and fam.stats.dtype == np.float64
    )
    assert np.array_equal(fam.log_base, np.zeros(3)) and np.array_equal(fam.points, [0, 1, 2])
    assert abs(fam.log_partition(np.array([0.5])) - math.log(1 + math.exp(0.5) + math.exp(1.5))) < 1e-14
    tau = fam.normalised(Fraction(1, 2))  # an exact parameter is read as a float64 one
    assert tau.dtype == np.float64 and np.array_equal(tau, fam.normalised(0.5))
    exact = nce.ExpFamily(
        [[Fraction(v), Fraction(-1)] for v in (0, 1, 3)], [Fraction(0)] * 3
    )  # read as float64
    assert exact.stats.dtype == np.float64 and np.array_equal(exact.log_density(tau), fam.log_density(tau))


def _random_finite_family(rng, K, d):
    feats = rng.normal(size=(K, d))
    fam = nce.finite_family(feats)
    th_s, th_q = rng.normal(size=d), rng.normal(size=d)
    return fam, fam.normalised(th_s), fam.normalised(th_q)


@pytest.mark.claim("nce.lem44", tier="exact")
def test_lem44_minimiser_on_finite_families(rng):
    from scipy.optimize import minimize

    for _ in range(4):
        fam, ts, tq = _random_finite_family(rng, 6, 2)
        start = ts + rng.normal(size=3)
        res = minimize(
            lambda t, fam=fam, ts=ts, tq=tq: nce.nce_loss(fam, t, ts, tq),
            start,
            jac=lambda t, fam=fam, ts=ts, tq=tq: nce.nce_grad(fam, t, ts, tq),
            method="BFGS",
            options={"gtol": 1e-13},
        )
        # strongly convex with curvature >= 1e-3 here, gradient tolerance 1e-13: parameter error << 1e-6
        assert np.linalg.norm(res.x - ts) < 1e-6
        assert abs(res.x[-1] - fam.log_partition(ts[:-1])) < 1e-6  # alpha recovers log Z


@pytest.mark.claim("nce.lem44", tier="exact", control=True)
def test_lem44_misspecified_alpha_is_not_stationary(rng):
    fam, ts, tq = _random_finite_family(rng, 6, 2)
    wrong = ts + np.array([0.0, 0.0, 0.3])  # alpha != log Z
    assert np.linalg.norm(nce.nce_grad(fam, wrong, ts, tq)) > 1e-3


@pytest.mark.claim("nce.lem44", tier="property")
@settings(deadline=None)
@given(seed=st.integers(0, 2**31), K=st.integers(3, 10), d=st.integers(1, 3))
def test_lem44_property_gradient_vanishes_only_at_tau_star(seed, K, d):
    rng = np.random.default_rng(seed)
    fam, ts, tq = _random_finite_family(rng, K, d)
    trivial(bool(np.allclose(ts, tq)))  # noise = data: the NCE loss is flat in the log-partition
    assert np.linalg.norm(nce.nce_grad(fam, ts, ts, tq)) < 1e-15
    other = ts + rng.normal(size=d + 1)
    # convexity: the gradient at another point has positive inner product with (tau - tau_*)
    assert nce.nce_grad(fam, other, ts, tq) @ (other - ts) > 0


# ------------------------------------------------------------------------------------------ lem45
def _fd_grad(f, x, eps=1e-6):
    return np.array([(f(x + eps * e) - f(x - eps * e)) / (2 * eps) for e in np.eye(len(x))])


@pytest.mark.claim("nce.lem45", tier="property")
@settings(deadline=None)
@given(seed=st.integers(0, 2**31), K=st.integers(3, 10), d=st.integers(1, 3))
def test_lem45_gradient_and_hessian_formulas(seed, K, d):
    rng = np.random.default_rng(seed)
    fam, ts, tq = _random_finite_family(rng, K, d)
    trivial(bool(np.allclose(ts, tq)))  # noise = data
    tau = ts + rng.normal(size=d + 1)
    g = nce.nce_grad(fam, tau, ts, tq)
    H = nce.nce_hessian(fam, tau, ts, tq)
    # central differences: truncation O(eps^2 * third derivative) ~ 1e-12, rounding ~1e-16/eps = 1e-10
    assert np.allclose(g, _fd_grad(lambda t: nce.nce_loss(fam, t, ts, tq), tau), atol=1e-7)
    Hfd = np.array([_fd_grad(lambda t, i=i: nce.nce_grad(fam, t, ts, tq)[i], tau) for i in range(d + 1)])
    assert np.allclose(H, Hfd, atol=1e-7)
    assert np.linalg.eigvalsh(H)[0] >= -1e-12  # PSD
    assert np.allclose(nce.nce_grad_fn(fam, ts, tq)(tau), g, atol=1e-14)
    assert np.allclose(nce.nce_grad_fn(fam, ts, tq, form="fused")(tau), g, atol=1e-13)


@pytest.mark.claim("nce.lem45", tier="property", control=True)
def test_lem45_control_hessian_without_p_star_weight(rng):
    # dropping p_* from the weight (p_* + q) p q/(p + q)^2 gives a matrix the finite differences reject
    fam, ts, tq = _random_finite_family(rng, 6, 2)
    tau = ts + rng.normal(size=3)
    lp, lq = fam.log_density(tau), fam.log_density(tq)
    s = 1 / (1 + np.exp(lq - lp))
    w = 0.5 * np.exp(lq) * s * (1 - s)
    wrong = (fam.stats * w[:, None]).T @ fam.stats
    Hfd = np.array([_fd_grad(lambda t, i=i: nce.nce_grad(fam, t, ts, tq)[i], tau) for i in range(3)])
    assert not np.allclose(wrong, Hfd, atol=1e-7)


# ------------------------------------------------------------------------------------------ prop7
@pytest.mark.claim("nce.prop7", tier="exact")
def test_prop7_corrected_loss_range(measure):
    for R in (3.0, 6.0):
        fam, ts, tq = _grid_family(R)
        assert abs(nce.nce_loss(fam, tq, ts, tq) - math.log(2)) < QTOL  # L(tau_q) = log 2 exactly
        # the landscape routine agrees with the direct loss on the full grid
        assert abs(nce.landscape_constants(R).L_star - nce.nce_loss(fam, ts, ts, tq)) < QTOL * math.exp(
            -(R**2) / 8
        )
    Rs = np.arange(5.0, 21.0)
    scaled = np.array([nce.landscape_constants(R).L_star_scaled for R in Rs])
    corrected = scaled * Rs  # L_* R e^{R^2/8}
    measure("L_star_R_exp_at_5_10_20", [round(float(v), 4) for v in corrected[[0, 5, 15]]])
    assert np.all((corrected >= 1.5) & (corrected <= math.sqrt(2 * math.pi)))
    assert np.all(np.diff(corrected) > 0)  # increasing towards sqrt(2 pi)
    assert math.sqrt(2 * math.pi) - corrected[-1] < 0.06


@pytest.mark.claim("nce.prop7", tier="exact", control=True)
def test_prop7_printed_interval_fails_from_R4(measure):
    out = nce_cx.prop7_r4()
    lo, hi = out["printed_interval"]
    inside = (out["L_star_times_exp_R2_over_8"] >= lo) & (out["L_star_times_exp_R2_over_8"] <= hi)
    measure(
        "L_star_exp_R2_over_8",
        dict(zip(out["R"].tolist(), np.round(out["L_star_times_exp_R2_over_8"], 4).tolist(), strict=True)),
    )
    measure("L_star_exp_R2_over_8_list", np.round(out["L_star_times_exp_R2_over_8"], 4).tolist())
    assert inside.tolist() == [True, False, False, False, False]  # R = 3 inside, R >= 4 outside


# ------------------------------------------------------------------------------------------ lem46
@pytest.mark.claim("nce.lem46", tier="exact")
def test_lem46_smoothness_at_optimum(measure):
    Rs = [2.0, 4.0, 6.0, 10.0, 16.0]
    ratios = []
    for R in Rs:
        lc = nce.landscape_constants(R)
        ratios.append(lc.sigma_max_scaled / R)
        assert lc.sigma_max <= nce.lem46_bound(R)
    measure("sigma_max_over_R_exp", [round(r, 4) for r in ratios])
    assert abs(ratios[-1] - math.sqrt(math.pi / 2) / 8) < 2e-3  # asymptote 0.1567
    # the direct grid Hessian agrees with the centred routine
    fam, ts, tq = _grid_family(4.0)
    H = nce.nce_hessian(fam, ts, ts, tq)
    assert abs(np.linalg.eigvalsh(H)[-1] - nce.landscape_constants(4.0).sigma_max) < QTOL


@pytest.mark.claim("nce.lem46", tier="exact")
def test_landscape_constants_run_clean_where_the_softplus_underflows():
    """At R = 100 the grid reaches -R y < -745, where e^{-Ry} underflows and the masked branch takes log 0: no
    warning may escape, and sigma_max e^{R^2/8} / R is at its asymptote sqrt(pi/2)/8 (the correction is O(R^-2):
    4e-4 at R = 16, so under 1e-4 here)."""
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        lc = nce.landscape_constants(100.0)
    assert abs(lc.sigma_max_scaled / 100.0 - math.sqrt(math.pi / 2) / 8) < 1e-4


@pytest.mark.claim("nce.lem46", tier="exact", control=True)
def test_lem46_control_bound_without_R_fails():
    # the bound is tight up to the constant 0.1567 sqrt(2 pi) = 0.39: dropping its factor R makes it false
    R = 10.0
    assert nce.landscape_constants(R).sigma_max > nce.lem46_bound(R) / R


# ------------------------------------------------------------------------------------------ lem47
LEM47_RS = np.arange(10.0, 61.0, 2.0)


def _lem47_fit():
    smin = np.array([nce.landscape_constants(R).sigma_min_scaled for R in LEM47_RS])
    return smin, nce.fit_power(LEM47_RS, smin, corrections=2)


@pytest.mark.claim("nce.lem47", tier="exact")
def test_lem47_corrected_exponent_minus_5(measure):
    smin, (b, (lo, hi)) = _lem47_fit()
    measure("lem47_exponent", round(b, 5))
    measure("lem47_exponent_ci95", [round(lo, 5), round(hi, 5)])
    # the data are deterministic (quadrature error < 1e-12 relative): the interval measures the misfit of the
    # truncated 1/R^2 expansion, and more correction terms move the estimate monotonically to -5
    assert abs(b + 5) < 0.01 and hi - lo < 0.01
    # calibration of the interval itself: on synthetic power laws with known Gaussian noise (sd 0.01 in log y) the
    # 95% interval covers the true exponent in 90-99% of 400 replicates (binomial sd of the coverage: 1.1%)
    syn = np.random.default_rng(0)
    cover = 0
    for _ in range(400):
        ys = 3.0 * LEM47_RS**-5.0 * np.exp(2.0 / LEM47_RS**2 + 0.01 * syn.standard_normal(len(LEM47_RS)))
        _, (slo, shi) = nce.fit_power(LEM47_RS, ys, corrections=2)
        cover += slo <= -5 <= shi
    measure("fit_power_coverage_95", cover / 400)
    assert 0.90 <= cover / 400 <= 0.99
    ests = [nce.fit_power(LEM47_RS, smin, corrections=k)[0] for k in (0, 1, 2, 3)]
    measure("lem47_exponent_by_corrections", [round(e, 5) for e in ests])
    assert np.all(np.diff(np.abs(np.array(ests) + 5)) < 0)
    # the prefactor approaches 2 pi^2 sqrt(pi/2) = 24.74
    ratio = smin[-1] / nce.lem47_corrected_rate(LEM47_RS[-1])
    measure("sigma_min_R5_exp_at_60", round(float(smin[-1] * LEM47_RS[-1] ** 5), 3))
    assert 0.97 < ratio < 1.0


@pytest.mark.claim("nce.lem47", tier="exact")
def test_landscape_next_order_terms_at_large_R(measure):
    # far in the asymptotic regime the relative corrections are c / R^2: L_* R e^{R^2/8} = sqrt(2 pi) (1 - c_L/R^2)
    # and sigma_min R^5 e^{R^2/8} / (2 pi^2 sqrt(pi/2)) = 1 - c_s/R^2; c_L, c_s measured at R = 100, 400, 1000
    # agree to 0.3% (the next terms are O(1/R^4)); a quadrature error above 1e-9 relative at R = 1000 would show
    cl, cs = [], []
    for R in (100.0, 400.0, 1000.0):
        lc = nce.landscape_constants(R)
        cl.append((math.sqrt(2 * math.pi) - lc.L_star_scaled * R) * R * R)
        cs.append((1 - lc.sigma_min_scaled / nce.lem47_corrected_rate(R)) * R * R)
    measure("landscape_R2_corrections_L_sigma_min", [round(cl[-1], 3), round(cs[-1], 3)])
    assert max(cl) - min(cl) < 0.003 * cl[-1] and 20 < cl[-1] < 25
    assert max(cs) - min(cs) < 0.003 * cs[-1] and 25 < cs[-1] < 32


@pytest.mark.claim("nce.lem46", tier="exact")
def test_landscape_constants_grow_with_the_window():
    # L_* and H_* are integrals of non-negative (resp. PSD) integrands over [-w, w]: a wider window never gives a
    # smaller L_* or sigma_max, and w = 12 is converged (the tails beyond 6 weigh < phi(6) ~ 1e-8)
    Ls, smaxs = [], []
    for w in (0.5, 1.0, 2.0, 6.0, 12.0):
        lc = nce.landscape_constants(2.0, half_width=w)
        Ls.append(lc.L_star_scaled)
        smaxs.append(lc.sigma_max_scaled)
    assert np.all(np.diff(Ls) > -1e-15) and np.all(np.diff(smaxs) > -1e-15)
    assert Ls[0] < 0.5 * Ls[-1]  # the window [-1/2, 1/2] misses about half of L_*
    assert abs(Ls[3] - Ls[4]) < 1e-8 * Ls[4] and abs(smaxs[3] - smaxs[4]) < 1e-8 * smaxs[4]


@pytest.mark.claim("nce.lem47", tier="exact", control=True)
def test_lem47_printed_rate_rejected():
    smin, (b, (lo, hi)) = _lem47_fit()
    assert not lo <= -1 <= hi  # the printed exponent -1 is far outside the interval
    # the printed rate e^{-R^2/8}/R (scaled by e^{R^2/8}: 1/R); sigma_min over it vanishes like R^-4
    assert [nce.lem47_printed_rate(R) for R in (4.0, 10.0)] == [0.25, 0.1]
    rel = smin / np.array([nce.lem47_printed_rate(R) for R in LEM47_RS])
    assert np.all(np.diff(rel) < 0) and rel[-1] < 30 / LEM47_RS[-1] ** 4
    out = nce_cx.lem47_rates()
    assert np.all(np.diff(out["sigma_min_times_R_exp"]) < 0) and out["sigma_min_times_R_exp"][-1] < 1e-3


# ------------------------------------------------------------------------------------------ lem48
@pytest.mark.claim("nce.lem48", tier="exact")
def test_lem48_exact_hessian_at_q():
    import sympy as sp

    R = sp.Symbol("R", positive=True)
    H = sp.Matrix([[R**2 + 2, -R], [-R, 2]]) / 8
    lam = (R**2 + 4) / 16 + R * sp.sqrt(R**2 + 4) / 16
    # lam is the larger root of the characteristic polynomial lam^2 - tr lam + det
    assert sp.expand(lam**2 - H.trace() * lam + H.det()) == 0
    assert sp.expand((lam - H.trace() / 2) ** 2 - ((H[0, 0] - H[1, 1]) / 2) ** 2 - H[0, 1] ** 2) == 0
    # sigma_max < R^2/2 for every R > 1: (R^2+4)/16 + R sqrt(R^2+4)/16 <= (R^2+3)/8 < R^2/2
    for Rv in (3.0, 4.0, 8.0, 16.0):
        H_num = nce.landscape_constants(Rv).H_q
        assert np.allclose(H_num, nce.hessian_at_q_closed_form(Rv), rtol=QTOL, atol=QTOL)
        smax = nce.sigma_max_q_closed_form(Rv)
        assert abs(smax - np.linalg.eigvalsh(H_num)[-1]) < QTOL * smax
        assert nce.lem48_corrected(Rv) <= smax < nce.lem48_printed(Rv)
        # the corrected bound is the Rayleigh quotient at e_1, (R^2 + 2)/8, within 1/8 of sigma_max:
        # sigma_max - (R^2 + 2)/8 = (R sqrt(R^2 + 4) - R^2)/16 < 1/8 (as R sqrt(R^2 + 4) < R^2 + 2)
        assert nce.lem48_corrected(Rv) == nce.hessian_at_q_closed_form(Rv)[0, 0] == (Rv * Rv + 2) / 8
        assert smax - nce.lem48_corrected(Rv) < 1 / 8


@pytest.mark.claim("nce.lem48", tier="exact", control=True)
def test_lem48_printed_bound_fails_at_R4(measure):
    out = nce_cx.lem48_r4()
    measure(
        "sigma_max_H_q_and_printed_bound_R4", [round(float(out["sigma_max"]), 4), float(out["printed_bound"])]
    )
    assert out["sigma_max"] < out["printed_bound"]
    # the printed Eq 4.58 drops the off-diagonal -R: that matrix is not the Hessian
    dropped = np.diag(np.diag(nce.hessian_at_q_closed_form(4.0)))
    assert not np.allclose(dropped, out["H_q_quadrature"], atol=1e-3)


@pytest.mark.claim(
    "nce.lem48",
    tier="property",
    no_trivial="every draw is a grid Gaussian family with R in [1.5, 12], where the two bounds differ",
)
@settings(deadline=None)
@given(R=st.floats(1.5, 12.0))
def test_lem48_property_quadrature_matches_closed_form(R):
    fam, ts, tq = _grid_family(R)
    H = nce.nce_hessian(fam, tq, ts, tq)
    assert np.allclose(H, nce.hessian_at_q_closed_form(R), rtol=QTOL, atol=QTOL)
    assert nce.lem48_corrected(R) <= np.linalg.eigvalsh(H)[-1] < nce.lem48_printed(R)


# ------------------------------------------------------------------------------------------ thm17 (GD) and cor2 (NGD)
@pytest.mark.claim("nce.thm17", tier="exact")
def test_thm17_gd_step_counts(measure):
    counts = {R: nce.gauss_steps(R, "gd", max_steps=30_000).steps_to_radius for R in GD_REF}
    measure("gd_steps", counts)
    measure("gd_steps_R3_R4_R5", [counts[R] for R in sorted(counts)])
    assert counts == GD_REF
    # log(steps) grows superlinearly in R: fit log steps = a + b R^2
    Rs = np.array(sorted(counts), dtype=float)
    b, a = np.polyfit(Rs**2, np.log([counts[int(R)] for R in Rs]), 1)
    measure("gd_log_steps_slope_in_R2", round(float(b), 4))
    assert _superlinear(Rs, [counts[int(R)] for R in Rs])


def _superlinear(Rs, steps):
    """Verdict: log(steps) = a + b R^2 with b > 0.1 (e^{R^2/8} has b = 1/8; Lemma 49's kappa >= 0.6 keeps
    b >= 0.075 asymptotically, our measured GD b is ~0.3, polynomial step counts on R = 3..6 have b < 0.08)."""
    b = np.polyfit(np.asarray(Rs, float) ** 2, np.log(np.asarray(steps, float)), 1)[0]
    return b > 0.1


@pytest.mark.claim("nce.thm17", tier="exact", control=True)
def test_thm17_control_polynomial_series_rejected():
    assert _superlinear([3, 4, 5], [179, 2155, 26608])
    assert not _superlinear([3, 4, 5, 6], [92, 164, 312, 704])  # the NGD counts are polynomial
    assert not _superlinear([3, 4, 5, 6], [3**3, 4**3, 5**3, 6**3])


@pytest.mark.claim("nce.thm17", tier="property")
@settings(deadline=None)
@given(R=st.floats(2.0, 12.0), b_rel=st.floats(-3.0, 3.0), c_rel=st.floats(-1.0, 1.0))
def test_claim6_gradient_norm_bound(R, b_rel, c_rel):
    fam, ts, tq = _grid_family(R)
    tau = np.array([b_rel * R, c_rel * R * R])
    trivial(bool(np.allclose(tau, ts)))  # at tau_*: the gradient vanishes
    g = nce.nce_grad(fam, tau, ts, tq)
    assert np.linalg.norm(g) <= 32 * max(R, abs(tau[0]))


@pytest.mark.claim("nce.thm17", tier="property")
def test_thm17_gd_r6_not_reached_and_forms_agree(figure):
    # R = 6: GD needs > 2e5 steps (catalog); here: not reached within 30,000 steps (more than R = 5 needs);
    # both gradient forms give the same count at R = 4
    r6 = nce.gauss_steps(6, "gd", max_steps=30_000)
    assert r6.steps_to_radius is None and r6.distances[-1] > 1.5
    assert nce.gauss_steps(4, "gd", form="direct", h=0.02).steps_to_radius == GD_REF[4]
    from theorylab.estimation.nce_plots import steps_figure

    ngd = {R: nce.gauss_steps(R, "ngd").steps_to_radius for R in NGD_REF}
    figure(steps_figure(GD_REF, ngd, gd_cap={6: 30_000}), "nce_gd_vs_ngd")
    # the Lemma 47 fit is drawn here: matplotlib is too slow to import in the exact tier
    from theorylab.estimation.nce_plots import exponent_figure

    smin, (b, ci) = _lem47_fit()
    figure(exponent_figure(LEM47_RS, smin, b, ci), "nce_lem47_exponent")


@pytest.mark.claim("nce.cor2", tier="exact")
def test_cor2_ngd_polynomial_step_counts(measure):
    runs = {R: nce.gauss_steps(R, "ngd") for R in NGD_REF}
    counts = {R: r.steps_to_radius for R, r in runs.items()}
    measure("ngd_steps", counts)
    measure("ngd_steps_R3_to_R6", [counts[R] for R in sorted(counts)])
    assert counts[3] == NGD_REF[3] and counts[4] == NGD_REF[4]
    # R >= 5: the count is ill-conditioned (perturbing tau_0 by 1e-12 moves it by +-2, see gauss_steps): the
    # reference values are reproduced to within 3 steps
    for R in (5, 6):
        assert abs(counts[R] - NGD_REF[R]) <= 3
    # polynomial: log-log slope ~2.4, and far below GD from R = 4 on
    slope = np.polyfit(np.log(list(counts)), np.log(list(counts.values())), 1)[0]
    measure("ngd_loglog_slope", round(float(slope), 3))
    assert 1.5 < slope < 3.5
    for R in (4, 5):
        assert counts[R] * 10 < GD_REF[R]
    # Thm 19's bound with the corrected kappa_* (beta_u = beta_l = 1 on the ball): T <= kappa ||tau_0 - tau_*||^2
    for R in (4, 6):
        k = nce.landscape_constants(R).kappa
        assert counts[R] <= k * runs[R].distances[0] ** 2


#: NGD at Theorem 19's step eta = delta / sqrt(kappa_*), delta = 1/R, from tau_q to the delta-ball. R = 3, 4 exact;
#: from R = 5 on the count moves by up to 2 when eta is perturbed by 1e-12 (zig-zag across the valley): within 3.
THM19_STEP_REF = {3: 87, 4: 334, 5: 1132, 6: 3077, 7: 7303, 8: 15652}


def thm19_step_run(R: int):
    kappa = nce.landscape_constants(R).kappa
    delta = 1.0 / R
    eta = delta / math.sqrt(kappa)
    return nce.gauss_steps(R, "ngd", eta=eta, radius=delta, max_steps=10**5), eta, delta


def within_printed_rate(Rs, counts, power: float = 8.0) -> bool:
    """Verdict for O(R^6/delta^2) at delta = 1/R, i.e. O(R^8), on a finite range: count / R^power never increases
    (every local log-log slope is at most ``power``)."""
    scaled = np.asarray(counts, float) / np.asarray(Rs, float) ** power
    return bool(np.all(np.diff(scaled) <= 0))


@pytest.mark.claim("nce.cor2", tier="exact")
def test_cor2_ngd_at_theorem19_step_size_against_the_printed_rate(measure):
    counts, start, ratios = {}, {}, []
    for R in THM19_STEP_REF:
        run, eta, delta = thm19_step_run(R)
        counts[R], start[R] = run.steps_to_radius, run.distances[0]
        # NGD moves exactly eta per step: at least the straight-line travel, and the zig-zag costs at most 25% more
        travel = (run.distances[0] - delta) / eta
        ratios.append(counts[R] / travel)
        assert travel <= counts[R] <= 1.25 * travel, (R, counts[R], travel)
    measure("NGD steps at Thm 19's step, delta = 1/R, R = 3..8", [counts[R] for R in sorted(counts)])
    measure("steps / straight-line travel, R = 3..8", [round(r, 3) for r in ratios])
    assert counts[3] == 87 and counts[4] == 334
    assert all(abs(counts[R] - THM19_STEP_REF[R]) <= 3 for R in (5, 6, 7, 8))
    Rs = np.array(sorted(counts), float)
    slope = float(np.polyfit(np.log(Rs), np.log([counts[int(R)] for R in Rs]), 1)[0])
    measure("NGD steps at Thm 19's step: log-log slope in R", round(slope, 3))
    assert 5.0 < slope < 5.6  # measured 5.33: about R^6 (distance R^2 x sqrt(kappa_*) R^3 x 1/delta = R)
    assert within_printed_rate(Rs, [counts[int(R)] for R in Rs])  # consistent with the printed O(R^6/delta^2)
    # what the proof route certifies, Thm 19's T = kappa_* ||tau_0 - tau_*||^2 / delta^2 ~ R^12, is far above
    for R in (3, 8):
        assert counts[R] < nce.landscape_constants(R).kappa * (start[R] * R) ** 2 / 50


@pytest.mark.claim("nce.cor2", tier="exact", control=True)
def test_cor2_control_gd_counts_exceed_the_printed_rate():
    # one ingredient changed: the gradient is not normalised (GD at Thm 17's step); the same verdict rejects it
    assert not within_printed_rate([3, 4, 5], [GD_REF[R] for R in (3, 4, 5)])


@pytest.mark.claim("nce.cor2", tier="exact")
def test_gauss_steps_stop_at_the_requested_radius():
    # the step count is the first t with ||tau_t - tau_*|| <= radius, for the radius asked for (not the default 1)
    for method in ("gd", "ngd"):
        for radius in (2.0, 1.5):
            r = nce.gauss_steps(3, method, radius=radius, h=0.05)
            t = r.steps_to_radius
            assert t is not None and r.n_steps == t
            assert r.distances[t] <= radius < r.distances[t - 1]


@pytest.mark.claim("nce.cor2", tier="exact", control=True)
def test_cor2_control_printed_kappa_and_gd():
    # the printed kappa (Lemma 46/47: R^2 up to constants) with the printed O(R^6) is not what the landscape has:
    # the measured kappa_*/R^6 stays bounded away from 0 while kappa_*/R^2 grows without bound
    ks = [nce.landscape_constants(R).kappa for R in (10.0, 20.0, 40.0)]
    assert ks[2] / 40**2 > 10 * ks[0] / 10**2
    assert 0.006 < ks[2] / 40**6 < ks[0] / 10**6 < 0.01
    # GD with the NGD step budget fails at R = 5 (the separation is real)
    assert nce.gauss_steps(5, "gd", max_steps=312).steps_to_radius is None


@pytest.mark.claim(
    "nce.cor2",
    tier="property",
    no_trivial="every draw starts at distance >= 2 from tau_* and must travel to the 1-ball",
)
@settings(deadline=None)
@given(R=st.floats(2.0, 5.5), eta=st.floats(0.02, 0.1))
def test_ngd_distance_monotone_until_ball(R, eta):
    r = nce.gauss_steps(R, "ngd", eta=eta, h=0.05, max_steps=4000)
    assert r.steps_to_radius is not None
    d = r.distances[: r.steps_to_radius + 1]
    assert np.all(np.diff(d) < 0)  # every NGD step moves closer to tau_* until the 1-ball
    assert np.all(np.diff(d) >= -eta - 1e-12)


# ------------------------------------------------------------------------------------------ thm19 / lem51
def _quadratic(rng, kappa, d=3):
    Q, _ = np.linalg.qr(rng.normal(size=(d, d)))
    eig = np.geomspace(1.0, kappa, d)
    return Q @ np.diag(eig) @ Q.T


@pytest.mark.claim("nce.thm19", tier="property")
@settings(deadline=None)
@given(seed=st.integers(0, 2**31), kappa=st.floats(2.0, 200.0), delta=st.floats(0.05, 0.5))
def test_thm19_ngd_on_quadratics(seed, kappa, delta):
    rng = np.random.default_rng(seed)
    H = _quadratic(rng, kappa)
    tau0 = rng.normal(size=3) * 3
    trivial(bool(np.linalg.norm(tau0) <= delta))  # starts inside the ball: no step is taken
    gamma = delta / math.sqrt(kappa)
    run = nce.ngd(lambda t: H @ t, tau0, gamma, target=np.zeros(3), radius=delta, max_steps=10**6)
    d2 = run.distances**2
    outside = run.distances[:-1] > delta
    # Eq 4.7-4.9: each step outside the delta-ball decreases ||tau - tau_*||^2 by at least gamma^2
    assert np.all(d2[:-1][outside] - d2[1:][outside] >= gamma**2 * (1 - 1e-9))
    assert run.steps_to_radius <= kappa * d2[0] / delta**2


@pytest.mark.claim("nce.thm19", tier="property")
def test_ngd_step_count_is_the_first_step_inside_the_ball():
    # the step count Thm 19 bounds: 0 for a start inside the ball; along an eigen-axis every NGD step moves exactly
    # eta toward tau_*, so from distance 3.01 the first distance <= 0.5 comes after ceil(2.51 / 0.05) = 51 steps
    H = np.diag([1.0, 4.0])
    inside = nce.ngd(
        lambda t: H @ t, np.array([0.1, 0.0]), 0.05, target=np.zeros(2), radius=0.5, max_steps=10
    )
    assert inside.steps_to_radius == 0
    run = nce.ngd(
        lambda t: H @ t, np.array([3.01, 0.0]), 0.05, target=np.zeros(2), radius=0.5, max_steps=1000
    )
    assert run.steps_to_radius == 51 and abs(run.distances[51] - 0.46) < 1e-12
    # the ball is closed: a step that lands exactly on its boundary (1 - 0.5 = 0.5, exact in binary) is inside
    edge = nce.ngd(lambda t: H @ t, np.array([1.0, 0.0]), 0.5, target=np.zeros(2), radius=0.5, max_steps=5)
    assert edge.steps_to_radius == 1 and edge.distances[1] == 0.5 and edge.n_steps == 1
    on = nce.gd(lambda t: H @ t, np.array([0.0, 0.5]), 0.1, target=np.zeros(2), radius=0.5, max_steps=5)
    assert on.steps_to_radius == 0 and on.n_steps == 0


@pytest.mark.claim("nce.thm19", tier="property", control=True)
def test_thm19_control_large_step_violates_decrease(rng):
    H = _quadratic(rng, 100.0)
    delta = 0.1
    gamma = delta / 10
    run = nce.ngd(
        lambda t: H @ t,
        rng.normal(size=3) * 3,
        50 * gamma,
        target=np.zeros(3),
        radius=delta,
        max_steps=2000,
        stop=False,
    )
    d2 = run.distances**2
    outside = run.distances[:-1] > delta
    assert np.any(d2[:-1][outside] - d2[1:][outside] < (50 * gamma) ** 2)


# ------------------------------------------------------------------------------------------ lem53 (eNCE)
@pytest.mark.claim("nce.lem53", tier="exact")
def test_lem53_ence_identities_gaussian():
    import sympy as sp

    R, th, al = sp.symbols("R theta alpha", real=True)
    da = al - sp.log(sp.sqrt(2 * sp.pi))
    L = sp.exp(-th * R / 2 + th**2 / 8 + da / 2) / 2 + sp.exp(th**2 / 8 - da / 2) / 2
    star = {th: R, al: R**2 / 2 + sp.log(sp.sqrt(2 * sp.pi))}
    assert sp.simplify(L.subs(star) - sp.exp(-(R**2) / 8)) == 0  # min L_exp = BC
    grad = [sp.simplify(sp.diff(L, v).subs(star)) for v in (th, al)]
    assert grad == [0, 0]
    H = sp.hessian(L, (th, al)).subs(star)
    target = sp.exp(-(R**2) / 8) / 4 * sp.Matrix([[R**2 / 4 + 1, -R / 2], [-R / 2, 1]])
    assert sp.simplify(H - target) == sp.zeros(2, 2)
    # the quadrature implementation agrees with the closed form
    for Rv in (3.0, 6.0):
        fam, ts, tq = _grid_family(Rv)
        assert abs(nce.ence_loss(fam, ts, ts, tq) - math.exp(-(Rv**2) / 8)) < QTOL
        assert abs(nce.bhattacharyya(fam, ts, tq) - math.exp(-(Rv**2) / 8)) < QTOL
        Hq = nce.ence_hessian(fam, ts, ts, tq)
        assert np.allclose(Hq, nce.ence_hessian_star_closed_form(Rv), rtol=QTOL, atol=QTOL * 1e-3)
        tau = ts + np.array([0.3, -0.7])
        assert abs(nce.ence_loss(fam, tau, ts, tq) - nce.ence_loss_closed_form(Rv, tau)) < QTOL


@pytest.mark.claim("nce.lem53", tier="exact", control=True)
def test_lem53_control_nce_hessian_and_bc_squared():
    R = 4.0
    fam, ts, tq = _grid_family(R)
    target = nce.ence_hessian_star_closed_form(R)
    assert not np.allclose(nce.nce_hessian(fam, ts, ts, tq), target, rtol=1e-3)
    assert not np.allclose(target * math.exp(-(R**2) / 8), nce.ence_hessian(fam, ts, ts, tq), rtol=1e-3)


@pytest.mark.claim("nce.lem53", tier="property")
@settings(deadline=None)
@given(seed=st.integers(0, 2**31), K=st.integers(3, 12), d=st.integers(1, 3))
def test_lem53_identity_on_finite_families(seed, K, d):
    rng = np.random.default_rng(seed)
    fam, ts, tq = _random_finite_family(rng, K, d)
    trivial(bool(np.allclose(ts, tq)))  # noise = data: BC = 1, every identity degenerates
    bc = nce.bhattacharyya(fam, ts, tq)
    mid = (ts[:-1] + tq[:-1]) / 2
    # BC = Z(mid)/sqrt(Z_* Z_q)
    assert abs(bc - math.exp(fam.log_partition(mid) - (ts[-1] + tq[-1]) / 2)) < 1e-12
    assert abs(nce.ence_loss(fam, ts, ts, tq) - bc) < 1e-12
    H = nce.ence_hessian(fam, ts, ts, tq)
    assert np.allclose(H, bc / 4 * fam.second_moment(mid), atol=1e-12)
    assert np.linalg.norm(nce.ence_grad(fam, ts, ts, tq)) < 1e-13
    other = ts + rng.normal(size=d + 1)
    assert nce.ence_loss(fam, other, ts, tq) > bc
    assert np.linalg.eigvalsh(nce.ence_hessian(fam, other, ts, tq))[0] >= -1e-12
    # gradient and Hessian away from tau_* against central differences of the loss and of the gradient
    # (truncation ~eps^2 f''' ~1e-12, rounding ~1e-16 |f|/eps ~1e-10 |f|; 1e-6 relative is far from any factor error)
    g = nce.ence_grad(fam, other, ts, tq)
    scale = max(1.0, nce.ence_loss(fam, other, ts, tq))
    assert np.allclose(
        g, _fd_grad(lambda t: nce.ence_loss(fam, t, ts, tq), other), rtol=1e-6, atol=1e-7 * scale
    )
    Hfd = np.array([_fd_grad(lambda t, i=i: nce.ence_grad(fam, t, ts, tq)[i], other) for i in range(d + 1)])
    assert np.allclose(nce.ence_hessian(fam, other, ts, tq), Hfd, rtol=1e-6, atol=1e-7 * scale)


# ------------------------------------------------------------------------------------------ domains
# The objects have a domain (extended statistic with last column -1, parameters of the right shape, grids with
# lo < hi and h > 0, a positive gap R): the boundary instances are accepted, the ones just outside are rejected
# with an error whose message begins with the name of the problem.


@pytest.mark.claim("nce.lem44", tier="exact")
def test_exponential_families_are_defined_on_their_domain():
    fam = nce.ExpFamily(np.array([[0.0, -1.0], [1.0, -1.0]]), np.zeros(2))  # k = 2: the smallest family
    assert fam.dim == 2 and abs(fam.log_partition(0.0) - math.log(2)) < 1e-15
    rejects(lambda: nce.ExpFamily(np.full((3, 1), -1.0), np.zeros(3)), r"stats must be \(n, k\) with k >= 2")
    rejects(lambda: nce.ExpFamily(np.full(3, -1.0), np.zeros(3)), r"stats must be \(n, k\) with k >= 2")
    rejects(lambda: fam.log_density([0.0, 0.0, 0.0]), r"tau must have shape \(2,\), got \(3,\)$")
    rejects(lambda: fam.log_partition([0.0, 0.0]), r"theta must have shape \(1,\), got \(2,\)$")
    assert nce.gaussian_mean_family(0.0, 0.5, 0.5).stats.shape == (2, 2)  # one step: the smallest grid
    rejects(lambda: nce.gaussian_mean_family(1.0, 1.0, 0.1), r"need finite lo < hi, got lo=1.0, hi=1.0$")
    rejects(lambda: nce.gaussian_mean_family(0.0, 1.0, 0.0), r"grid spacing h must be > 0, got 0.0$")
    assert nce.gauss_setup(2.0, h=0.5, pad=0.5)[0].stats.shape == (7, 2)
    rejects(lambda: nce.gauss_setup(2.0, pad=0.0), r"pad must be > 0, got 0.0$")
    rejects(lambda: nce.gauss_setup(0.0), r"the mean gap R must be a finite number > 0, got 0.0$")
    rejects(
        lambda: nce.gauss_steps(3, "gd", form="newton", max_steps=0),
        r"form must be 'direct' or 'fused', got 'newton'$",
    )
    # gauss_setup's default grid spacing is 0.05 (the grid the NGD counts were measured on)
    fam_default, _, _ = nce.gauss_setup(2.0)
    assert np.allclose(np.diff(fam_default.points), 0.05, rtol=0, atol=1e-12)
    # integer inputs are read as floats: statistics, parameters and a zero-step run keep float64
    assert nce.gaussian_stats(np.array([1, 2])).dtype == np.float64
    run0 = nce.ngd(lambda t: t, np.array([3, 4]), 0.5, target=np.zeros(2), radius=1.0, max_steps=0)
    assert run0.tau.dtype == np.float64 and run0.distances[0] == 5.0
    # both step rules need a finite eta > 0: a negative finite eta and an infinite one are refused
    for method in (nce.gd, nce.ngd):
        for eta in (-0.1, 0.0, math.inf):
            rejects(
                lambda method=method, eta=eta: method(lambda t: t, np.ones(2), eta, target=np.zeros(2)),
                r"step size eta must be > 0, got ",
            )


@pytest.mark.claim("nce.lem47", tier="exact")
def test_fit_power_domain_and_exact_inputs():
    xs = LEM47_RS[:6]
    # exact rationals are read as floats: the fit of y = 3 x^-5 exactly gives b = -5
    b, _ = nce.fit_power([Fraction(int(x)) for x in xs], 3.0 * xs**-5.0, corrections=1)
    assert abs(b + 5) < 1e-9
    assert (
        abs(nce.fit_power(xs[:4], 3.0 * xs[:4] ** -5.0, corrections=1)[0] + 5) < 1e-9
    )  # 4 points, 3 unknowns
    rejects(
        lambda: nce.fit_power(xs[:3], xs[:3], corrections=1), r"need more than 3 points for the fit, got 3$"
    )
    rejects(lambda: nce.fit_power(xs, xs[:5]), r"xs and ys must be 1-D arrays of equal length$")
    rejects(lambda: nce.fit_power(-xs, xs), r"xs and ys must be positive$")


@pytest.mark.claim("nce.lem45", tier="property")
def test_sample_nce_gradient_at_the_noise_parameter():
    # at tau = tau_q, u = 0 and expit(0) = 1/2: the empirical gradient is 1/4 (mean_Q T - mean_* T)
    # = [(mean x_q - mean x_*)/4, 0] for T(x) = [x, -1]
    xs, xq = np.array([2.0, 3.0, 5.0]), np.array([-1.0, 1.0])
    assert np.array_equal(nce.gaussian_stats(xs), np.array([[2.0, -1.0], [3.0, -1.0], [5.0, -1.0]]))
    g = nce.sample_nce_grad(nce.tau_q(), xs, xq, nce.tau_q())
    assert np.allclose(g, [(0.0 - 10 / 3) / 4, 0.0], rtol=0, atol=1e-15)
    # one sample of each is enough: with tau = tau_q + [0.7, 0.2], u = 0.7 x - 0.2 and the gradient is
    # 1/2 (-expit(-u(x_*)) T(x_*) + expit(u(x_q)) T(x_q))
    tau = nce.tau_q() + np.array([0.7, 0.2])
    g1 = nce.sample_nce_grad(tau, [1.5], [-0.5], nce.tau_q())
    us, uq = 0.7 * 1.5 - 0.2, 0.7 * -0.5 - 0.2
    expect = 0.5 * (
        -np.array([1.5, -1.0]) / (1 + math.exp(us)) + np.array([-0.5, -1.0]) / (1 + math.exp(-uq))
    )
    assert np.allclose(g1, expect, rtol=0, atol=1e-15)
    rejects(lambda: nce.sample_nce_grad(tau, [], [1.0], nce.tau_q()), "need at least one sample from each")
    rejects(lambda: nce.sample_nce_grad(tau, [1.0], [], nce.tau_q()), "need at least one sample from each")


# ------------------------------------------------------------------------------------------ exp (sample-based)
def _sample_run(rng, R, method, steps, batch, swap_labels=False):
    """GD / NGD on the empirical NCE loss with fresh samples each step (1-D Gaussians)."""
    ts, tq = nce.tau_star(R), nce.tau_q()
    eta = nce.gd_eta(R) if method == "gd" else 0.05
    tau = tq.copy()
    dists = [np.linalg.norm(tau - ts)]
    for _ in range(steps):
        xs, xq = rng.normal(R, 1.0, batch), rng.normal(0.0, 1.0, batch)
        if swap_labels:  # control: labels independent of the source
            pool = np.concatenate([xs, xq])
            rng.shuffle(pool)
            xs, xq = pool[:batch], pool[batch:]
        g = nce.sample_nce_grad(tau, xs, xq, tq)
        tau = tau - eta * (g if method == "gd" else g / np.linalg.norm(g))
        dists.append(np.linalg.norm(tau - ts))
    d = np.array(dists)
    hit = np.flatnonzero(d <= 1.0)
    return (int(hit[0]) if hit.size else None), d


def _verdict(pop_steps, sample_hits, budget):
    """Converges-where-predicted: every seed reaches the 1-ball within the budget iff the population run does."""
    predicted = pop_steps is not None and pop_steps <= budget
    observed = all(h is not None and h <= budget for h in sample_hits)
    return predicted == observed and (not predicted or all(h is not None for h in sample_hits))


@pytest.mark.claim("nce.exp", tier="trained")
def test_exp_sample_nce_converges_and_stalls_where_predicted(rng, scale, measure):
    budget, batch, seeds = (400, 8000, 3) if scale == "small" else (600, 20000, 5)
    out = {}
    # R = 5 NGD is not used: its late-phase population gradient (~1e-3) is below the sampling noise of a 4,000
    # batch, so the sample run needs ~400 steps instead of 311 (measured); R = 4 NGD is in the regime where the
    # population analysis transfers
    for R, method in ((3, "gd"), (5, "gd"), (4, "ngd")):
        pop = nce.gauss_steps(R, method, max_steps=budget, stop=False)
        runs = [_sample_run(rng, R, method, budget, batch) for _ in range(seeds)]
        hits = [h for h, _ in runs]
        out[f"R{R}_{method}"] = {
            "population": pop.steps_to_radius,
            "samples": hits,
            "final_dist": [round(float(d[-1]), 3) for _, d in runs],
        }
        assert _verdict(pop.steps_to_radius, hits, budget)
        # sample runs track the population trajectory (final distance within 10% or 0.2)
        for _, d in runs:
            assert abs(d[-1] - pop.distances[-1]) <= max(0.2, 0.1 * pop.distances[-1])
        if pop.steps_to_radius is not None:
            # beat the untrained baseline (tau_q) by a wide margin and match the population count within 15%
            assert all(abs(h - pop.steps_to_radius) <= 0.15 * pop.steps_to_radius for h in hits)
            assert max(d[-1] for _, d in runs) < 0.2 * pop.distances[0]
    measure("sample_runs", out)


@pytest.mark.claim("nce.exp", tier="trained", control=True)
def test_exp_control_shuffled_labels(rng):
    budget = 400
    pop = nce.gauss_steps(3, "gd", max_steps=budget, stop=False)
    hits = [_sample_run(rng, 3, "gd", budget, 4000, swap_labels=True)[0] for _ in range(2)]
    assert not _verdict(pop.steps_to_radius, hits, budget)
