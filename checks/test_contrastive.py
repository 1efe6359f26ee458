"""Claim checks of the contrastive family: contrastive estimation of the transition kernel of a mixing diffusion
(Liu §2.1, ``001_6a230b9a9faf2198.txt``)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from theorylab.estimation import contrastive as C
from theorylab.estimation import contrastive_counterexamples as cx
from theorylab.markov.diffusions import OU, gaussian_tv_1d
from theorylab.testing import trivial

RHOS = (0.5, 1.0, 2.0, 4.0, 8.0)


# ------------------------------------------------------------------------------------------ Eq 2.2
@pytest.mark.claim("contrastive.eq2.2", tier="exact")
def test_eq22_corrected_bound_symbolic():
    import sympy as sp

    for d in (1, 2, 3):
        rho, B, printed, corrected = C.eq22_symbolic(d)
        # corrected bound = sqrt(d/rho) >= E|x| = sqrt(2/rho) Gamma((d+1)/2)/Gamma(d/2) (Jensen), for every rho
        ratio = sp.simplify(corrected / B)
        assert ratio.free_symbols == set() and float(ratio) >= 1
        assert sp.simplify(corrected - sp.sqrt(d / rho)) == 0
    # numeric agreement of the library's B with the sympy expression and with a Monte-Carlo-free quadrature
    for r in RHOS:
        assert abs(OU(r).mean_norm() - math.sqrt(2 / (math.pi * r))) < 1e-15
        assert C.eq22_corrected_bound(r, 1) >= OU(r).mean_norm()


@pytest.mark.claim("contrastive.eq2.2", tier="exact", control=True)
def test_eq22_printed_bound_fails_for_rho_below_4():
    import sympy as sp

    rho, B, printed, _ = C.eq22_symbolic(1)
    # printed >= B  <=>  1/sqrt(2 pi) >= sqrt(2/(pi rho))  <=>  rho >= 4
    sol = sp.solve_univariate_inequality(printed >= B, rho, relational=False)
    assert sol == sp.Interval(4, sp.oo)
    out = cx.eq22_ou()
    holds = out["printed_bound"] >= out["B"] - 1e-15
    assert holds.tolist() == [False, False, False, True, True]


# ------------------------------------------------------------------------------------------ Lemma 1
@pytest.mark.claim("contrastive.lemma1", tier="exact")
def test_lemma1_minimiser_and_excess_identity():
    import sympy as sp

    a, b, h = sp.symbols("a b h", positive=True)
    risk = a * (h - 1) ** 2 + b * h**2
    assert sp.solve(sp.diff(risk, h), h) == [a / (a + b)]
    # footnote 5: (h - h*)^2 with p = h q/(1 - h) equals q^2 (p - p*)^2/((p + q)^2 (p* + q)^2)
    p, ps, q = sp.symbols("p p_s q", positive=True)
    hh, hs = p / (p + q), ps / (ps + q)
    assert sp.simplify((hh - hs) ** 2 - q**2 * (p - ps) ** 2 / ((p + q) ** 2 * (ps + q) ** 2)) == 0
    # OU: the quadratic model at the true weights is h*, excess risk 0; the risk identity R(h) - R(h*) holds
    task = C.ContrastivePairs(OU(1.0), 0.5, C.GaussianNoise(1.0))
    w = C.true_quadratic_weights(task)
    quad = C.PairQuadrature.for_task(task)
    assert C.excess_risk(task, lambda Z, Z1: C.quadratic_features(Z, Z1) @ w, quad) < 1e-28
    w2 = w + np.array([0.1, 0.05, -0.05, 0.02, 0.0, 0.0])
    lg = lambda Z, Z1: C.quadratic_features(Z, Z1) @ w2  # noqa: E731
    lg_star = lambda Z, Z1: C.quadratic_features(Z, Z1) @ w  # noqa: E731
    diff = C.population_risk(task, lg, quad) - C.population_risk(task, lg_star, quad)
    assert abs(diff - C.excess_risk(task, lg, quad)) < 1e-12
    # the kernel is read back from the Bayes classifier: p = h q / (1 - h) inverts h = p / (p + q)
    pz, qz = np.array([0.2, 1.5, 0.01]), np.array([0.7, 0.3, 0.05])
    h = C.bayes_classifier(np.log(pz), np.log(qz))
    assert np.allclose(h, pz / (pz + qz), rtol=1e-14) and np.allclose(
        C.kernel_from_classifier(h, qz), pz, rtol=1e-13
    )


@pytest.mark.claim("contrastive.lemma1", tier="exact", control=True)
def test_lemma1_control_wrong_minimiser_and_perturbed_weights():
    import sympy as sp

    a, b, h = sp.symbols("a b h", positive=True)
    risk = a * (h - 1) ** 2 + b * h**2
    # the swapped Bayes rule b/(a + b) is not a stationary point (derivative 2(b - a), nonzero unless a = b)
    assert sp.simplify(sp.diff(risk, h).subs(h, b / (a + b)) - 2 * (b - a)) == 0
    # footnote 5 without its q^2 factor is not an identity
    p, ps, q = sp.symbols("p p_s q", positive=True)
    hh, hs = p / (p + q), ps / (ps + q)
    assert sp.simplify((hh - hs) ** 2 - (p - ps) ** 2 / ((p + q) ** 2 * (ps + q) ** 2)) != 0
    # OU: the verdict "excess risk < 1e-28" of the true weights rejects perturbed weights
    task = C.ContrastivePairs(OU(1.0), 0.5, C.GaussianNoise(1.0))
    w = C.true_quadratic_weights(task) + np.array([0.1, 0.05, -0.05, 0.02, 0.0, 0.0])
    quad = C.PairQuadrature.for_task(task)
    assert C.excess_risk(task, lambda Z, Z1: C.quadratic_features(Z, Z1) @ w, quad) > 1e-6


def _finite_kernel(rng, n):
    P = rng.dirichlet(np.ones(n), size=n)
    pi = rng.dirichlet(np.ones(n))
    q = rng.dirichlet(np.ones(n))
    return P, pi, q


def _tabular_risk(h, P, pi, q):
    # R(h) = 1/2 sum_z pi(z) sum_z1 [P(z, z1)(h - 1)^2 + q(z1) h^2]
    return 0.5 * np.sum(pi[:, None] * (P * (h - 1) ** 2 + q[None, :] * h**2))


@pytest.mark.claim("contrastive.lemma1", tier="property")
@settings(deadline=None)
@given(seed=st.integers(0, 2**31), n=st.integers(2, 8))
def test_lemma1_tabular_minimiser(seed, n):
    rng = np.random.default_rng(seed)
    P, pi, q = _finite_kernel(rng, n)
    hs = P / (P + q[None, :])
    h = np.clip(hs + rng.normal(scale=0.1, size=hs.shape), 0, 1)
    trivial(bool(np.abs(h - hs).max() < 1e-3))  # h at the minimiser: both sides vanish
    excess = _tabular_risk(h, P, pi, q) - _tabular_risk(hs, P, pi, q)
    weighted = 0.5 * np.sum(pi[:, None] * (P + q[None, :]) * (h - hs) ** 2)
    assert abs(excess - weighted) < 1e-12
    assert excess >= -1e-15


@pytest.mark.claim("contrastive.lemma1", tier="property", control=True)
def test_lemma1_control_swapped_bayes_rule(rng):
    P, pi, q = _finite_kernel(rng, 5)
    hs = P / (P + q[None, :])
    swapped = q[None, :] / (P + q[None, :])
    bumped = hs.copy()
    bumped[0, 0] += 0.05
    assert _tabular_risk(swapped, P, pi, q) > _tabular_risk(hs, P, pi, q) + 1e-6
    assert _tabular_risk(bumped, P, pi, q) > _tabular_risk(hs, P, pi, q)


# ------------------------------------------------------------------------------------------ Theorem 1
DELTAS = np.geomspace(0.01, 0.2, 8)


@pytest.mark.claim("contrastive.thm1", tier="exact")
def test_thm1_exponent_from_the_proof(measure):
    Ts = np.array([C.min_T_thm1(D, 0.05)[0] for D in DELTAS])
    slope = np.polyfit(np.log(DELTAS), np.log(Ts), 1)[0]
    measure("thm1_slope_min_T", round(float(slope), 3))
    assert -7 <= slope <= -5.5
    # the closed form mu ~ (K sqrt(log mu) + sqrt(log 1/delta))^2/Delta^2 gives the same Delta^-6 (up to logs)
    Tc = np.array([C.thm1_corrected_T(D, 0.05) for D in DELTAS])
    assert -7 <= np.polyfit(np.log(DELTAS), np.log(Tc), 1)[0] <= -5.5
    # the proof's mu (l.589) violates (2.20) at Delta = 0.05
    mu = C.thm1_proof_mu(0.05, 0.05)
    measure("proof_mu_at_delta_0.05", round(float(mu), 2))
    lhs = float(C.thm1_lhs(mu, 0.025, 0.05, 1.0))
    measure("lhs_2_20_at_proof_mu", round(lhs, 3))
    assert lhs > 10 * 0.05


@pytest.mark.claim("contrastive.thm1", tier="exact", control=True)
def test_thm1_printed_rate_fails_the_slope_check():
    Tp = np.array([C.thm1_printed_T(D, 0.05) for D in DELTAS])
    slope = np.polyfit(np.log(DELTAS), np.log(Tp), 1)[0]
    assert abs(slope + 3) < 1e-9 and not -7 <= slope <= -5.5
    out = cx.thm1_table()
    assert np.all(out["printed_T"] < out["min_T"])  # the printed T is too small to satisfy (2.20)


# ------------------------------------------------------------------------------------------ Theorem 2
@pytest.mark.claim("contrastive.thm2", tier="exact")
def test_thm2_r_second_derivative(measure):
    import sympy as sp

    s, v, r, r2 = C.r_symbolic()
    closed = -2 * v**2 * (2 * v * s - v - 1) / ((v + 1) * (v * s + v + 1) ** 4)
    assert sp.simplify(r2 - closed) == 0
    # margins: min r'' over s in [-0.99, 1/6], varrho in [1/c, c] vs the proof's 2/(1+c)^5
    S = np.linspace(-0.99, 1 / 6, 801)
    mins = {}
    for c in (1.0, 2.0, 4.0, 10.0):
        V = np.geomspace(1 / c, c, 201)
        m = float(C.r_second_derivative(S[:, None], V[None, :]).min())
        mins[c] = round(m, 4)
        assert m >= C.thm2_r_min(c)
    measure("min_r2", mins)
    measure("min_r2_c_1_2_4_10", list(mins.values()))
    assert mins[1.0] == pytest.approx(0.0756, abs=1e-4) and mins[10.0] == pytest.approx(0.0054, abs=1e-4)


@pytest.mark.claim("contrastive.thm2", tier="exact", control=True)
def test_thm2_control_convexity_fails_beyond_threshold():
    # r'' > 0 iff s < 1/2 + 1/(2 varrho): Delta_max above 3/2 + 1/(2c) breaks convexity
    c = 4.0
    s = 0.5 + 1 / (2 * c) + 0.05
    assert C.r_second_derivative(s, c) < 0


@pytest.mark.claim("contrastive.thm2", tier="property")
@settings(deadline=None)
@given(c=st.floats(1.0, 20.0), u=st.floats(0.0, 1.0), dmin=st.floats(0.05, 1.0), t=st.floats(0.0, 1.0))
def test_thm2_pointwise_core_inequality(c, u, dmin, t):
    varrho = c ** (2 * u - 1)  # in [1/c, c]
    s = (dmin - 1) + t * (1 / 6 - (dmin - 1))  # in [Delta_min - 1, 1/6]
    trivial(abs(s) < 1e-3)  # s = 0: both sides vanish
    assert C.r_excess(s, varrho) >= s * s / (1 + c) ** 5 * (1 - 1e-12)


@pytest.mark.claim("contrastive.thm2", tier="property")
@settings(deadline=None)
@given(seed=st.integers(0, 2**31), n=st.integers(3, 8), eps=st.floats(0.01, 0.15))
def test_thm2_end_to_end_on_finite_spaces(seed, n, eps):
    """Theorem 2 with exact sums: normalised p = p_*(1 + delta), |delta| <= eps <= 1/6, c_q finite."""
    rng = np.random.default_rng(seed)
    P, pi, q = _finite_kernel(rng, n)
    P = 0.5 * P + 0.5 / n  # bounded ratios
    q = 0.5 * q + 0.5 / n
    delta = rng.uniform(-eps, eps, size=P.shape)
    delta -= (P * delta).sum(axis=1, keepdims=True)  # normalise: sum_z1 p_*(z, z1) delta = 0
    p = P * (1 + delta)
    trivial(bool(np.abs(p - P).max() < 1e-9))  # p = p_*: KL and excess both 0
    assert np.all(p > 0)
    cq = float(max((P / q).max(), (q / P).max()))
    hs, h = P / (P + q), p / (p + q)
    excess = 0.5 * np.sum(pi[:, None] * (P + q) * (h - hs) ** 2)
    kl = float(np.sum(pi[:, None] * P * np.log(P / p)))
    dmin = float((p / P).min())
    # training error eps_tr + eps_* with population excess risk <= 2 eps_tr: take eps_tr = excess/2
    assert kl <= 2 * (1 + cq) ** 5 * (excess / 2) / dmin**2 + 1e-15
    assert kl >= -1e-15


# ------------------------------------------------------------------------------------------ Def 1, Lemma 5
@pytest.mark.claim("contrastive.def1", tier="exact")
def test_def1_ou_beta_mixing(measure):
    ou = OU(1.0)
    ts = [0.5, 1.0, 2.0, 5.0]
    betas = [ou.beta_mixing(t) for t in ts]
    measure("beta", [round(b, 5) for b in betas])
    # adaptive quadrature of TV(z) pi(z) (independent route; abs error ~1e-12)
    from scipy.integrate import quad

    for t, b in ((2.0, betas[2]),):  # t = 2: where a rule across the kink at z = 0 is off by 1e-4
        ref = (
            2
            * quad(
                lambda z, t=t: ou.tv_from(z, t) * math.exp(-z * z / 2) / math.sqrt(2 * math.pi),
                0,
                12,
                epsabs=1e-13,
                limit=200,
            )[0]
        )
        assert abs(ref - b) < 1e-9
    assert np.round(betas, 4).tolist() == [0.2405, 0.1271, 0.0436, 0.0021]
    # e^{-rho t} decay: log beta(t) slope in t between t = 2 and 5 is close to -rho
    slope = (math.log(betas[3]) - math.log(betas[2])) / 3
    assert -1.1 < slope < -0.9


@pytest.mark.claim("contrastive.def1", tier="exact", control=True)
def test_def1_control_tv_formula_against_direct_integration():
    # a TV that forgets the variance contraction (kernel variance 1/rho instead of s^2) disagrees
    ou = OU(1.0)
    a, s2 = ou.kernel_params(0.5)
    exact = ou.tv_from(0.0, 0.5)  # from z = 0 only the variance differs: wrong TV = 0
    wrong = gaussian_tv_1d(0.0, 1.0, 0.0, 1.0)
    assert abs(exact - wrong) > 1e-2
    from scipy.integrate import quad
    from scipy.stats import norm

    direct = quad(
        lambda x: abs(norm.pdf(x, 0.0, math.sqrt(s2)) - norm.pdf(x)) / 2,
        -20,
        20,
        points=[-1, 0, 1],
        limit=400,
    )[0]
    assert abs(direct - exact) < 1e-7 and abs(direct - wrong) > 1e-2


@pytest.mark.claim("contrastive.lemma5", tier="exact")
def test_lemma5_averaged_version_holds():
    for rho in RHOS:
        ou = OU(rho)
        for t in (0.1, 0.5, 1.0, 2.0, 5.0):
            assert ou.beta_mixing(t) <= C.lemma5_bound(ou.mean_norm(), t)


@pytest.mark.claim("contrastive.lemma5", tier="exact", control=True)
def test_lemma5_pointwise_version_fails_at_z5(measure):
    out = cx.lemma5_z5()
    measure("tv_from_5", np.round(out["tv_from_5"], 3).tolist())
    measure("pointwise_bound_at_z5", np.round(out["bound"], 3).tolist())
    assert np.round(out["tv_from_5"], 3).tolist() == [0.910, 0.660, 0.266]
    assert np.all(out["tv_from_5"] > out["bound"])
    assert np.all(out["beta"] <= out["bound"])


@pytest.mark.claim("contrastive.lemma5", tier="property")
@settings(deadline=None)
@given(rho=st.floats(0.2, 10.0), rho_t=st.floats(0.01, 24.0), z=st.floats(-10.0, 10.0))
def test_lemma5_mixing_bounds_property(rho, rho_t, z):
    # time drawn as rho t <= 24: beyond ~27 beta_mixing underflows below 1e-12 and every bound is compared with 0
    t = rho_t / rho
    ou = OU(rho)
    b = ou.beta_mixing(t)
    trivial(b < 1e-12)  # beta has underflowed: the bounds are only compared with 0
    assert b <= C.lemma5_bound(ou.mean_norm(), t)
    b_later = ou.beta_mixing(1.5 * t)
    # decreasing in t; strictly while beta is above the ~1e-15 absolute rounding of the TV differences (at
    # rho t ~ 40 both are 0.0)
    assert b_later <= b and (b < 1e-12 or b_later < b)
    # TV from z is increasing in |z|; beta is the pi-average, so TV(0) <= beta <= sup_z TV
    assert ou.tv_from(0.0, t) <= b <= ou.tv_from(abs(z) + 10 / math.sqrt(rho), t) + 1e-12


# ------------------------------------------------------------------------------------------ Remark 1
@pytest.mark.claim("contrastive.remark1", tier="exact")
def test_remark1_expected_density_scales_like_eta_minus_half(measure):
    ou = OU(1.0)
    task = C.ContrastivePairs(ou, 0.2, C.GaussianNoise(1.0))
    quad = C.PairQuadrature.for_task(task, n_z1=4001)
    Z, Z1 = quad.grids()
    val = quad.integrate(np.exp(2 * task.log_kernel(Z[..., None], Z1[..., None])))
    assert abs(val - C.remark1_expected_density(ou, 0.2)) < 1e-9
    etas = np.geomspace(1e-4, 1e-2, 6)
    ys = [C.remark1_expected_density(ou, e) for e in etas]
    slope = np.polyfit(np.log(etas), np.log(ys), 1)[0]
    measure("remark1_slope", round(float(slope), 4))
    assert abs(slope + 0.5) < 0.01
    ou2 = OU(1.0, 2)
    assert (
        abs(np.polyfit(np.log(etas), np.log([C.remark1_expected_density(ou2, e) for e in etas]), 1)[0] + 1)
        < 0.01
    )


@pytest.mark.claim("contrastive.remark1", tier="exact", control=True)
def test_remark1_control_wrong_variance():
    # (4 pi s^2)^{-1/2} with s^2 = 2 eta (the small-eta limit) misses at eta = 1 by > 10%
    ou = OU(1.0)
    assert abs((8 * math.pi) ** -0.5 / C.remark1_expected_density(ou, 1.0) - 1) > 0.1


# ------------------------------------------------------------------------------------------ trained OU
def _fit_and_score(task, rng, m, quad, shuffle=False):
    z, z1, y = task.sample(rng, m)
    if shuffle:
        y = rng.permutation(y)
    w = C.fit_quadratic_classifier(z[:, 0], z1[:, 0], y)
    lg = lambda Z, Z1: C.quadratic_features(Z, Z1) @ w  # noqa: E731
    lp = lambda Z, Z1: lg(Z, Z1) + task.q.logpdf(Z1[..., None])  # noqa: E731
    return (
        C.excess_risk(task, lg, quad),
        C.kernel_l1_error(task, lp, quad),
        C.normalised_kl(task, lp, quad=quad),
    )


@pytest.mark.claim("contrastive.trained_ou", tier="trained")
def test_trained_ou_classifier_recovers_kernel(rng, scale, measure):
    task = C.ContrastivePairs(OU(1.0), 0.5, C.GaussianNoise(1.0))
    quad = C.PairQuadrature.for_task(task)
    sizes, seeds = ((500, 5000, 50000), 3) if scale == "small" else ((500, 5000, 50000, 500000), 5)
    res = np.array(
        [[_fit_and_score(task, rng, m, quad) for _ in range(seeds)] for m in sizes]
    )  # (sizes, seeds, 3)
    mean = res.mean(axis=1)
    measure("excess_risk", dict(zip(sizes, np.round(mean[:, 0], 7).tolist(), strict=True)))
    measure("l1_error", dict(zip(sizes, np.round(mean[:, 1], 5).tolist(), strict=True)))
    measure("normalised_kl", dict(zip(sizes, np.round(mean[:, 2], 6).tolist(), strict=True)))
    measure("excess_risk_l1_kl_m500", np.round(mean[0], 7).tolist())
    measure("excess_risk_l1_kl_m5000", np.round(mean[1], 7).tolist())
    measure("excess_risk_l1_kl_m50000", np.round(mean[2], 7).tolist())
    rate = np.polyfit(np.log(sizes), np.log(mean[:, 0]), 1)[0]
    l1_rate = np.polyfit(np.log(sizes), np.log(mean[:, 1]), 1)[0]
    measure("excess_risk_rate", round(float(rate), 3))
    measure("l1_rate", round(float(l1_rate), 3))
    # well-specified parametric model: excess risk ~ 1/m, L1 error ~ m^{-1/2}
    assert -1.3 < rate < -0.7 and -0.8 < l1_rate < -0.3
    assert np.all(np.diff(mean[:, 0]) < 0) and np.all(mean[:, 2] >= 0)
    # baseline: the untrained classifier h = 1/2 (estimate p = q)
    base_l1 = C.kernel_l1_error(task, lambda Z, Z1: task.q.logpdf(Z1[..., None]) + 0 * Z, quad)
    measure("baseline_l1", round(base_l1, 4))
    assert mean[-1, 1] < 0.1 * base_l1
    # the unnormalised (2.12) estimate of the last fit: per-context masses and its naive "KL"
    z, z1, y = task.sample(rng, sizes[-1])
    w = C.fit_quadratic_classifier(z[:, 0], z1[:, 0], y)
    lp = lambda Z, Z1: C.quadratic_features(Z, Z1) @ w + task.q.logpdf(Z1[..., None])  # noqa: E731
    central = np.abs(quad.z) <= 2.0
    masses = C.kernel_masses(task, lp, quad)[central]
    measure("mass_range_central_contexts", [round(float(masses.min()), 4), round(float(masses.max()), 4)])
    measure("unnormalised_kl", round(C.normalised_kl(task, lp, normalise=False, quad=quad), 6))


@pytest.mark.claim("contrastive.trained_ou", tier="trained", control=True)
def test_trained_ou_control_shuffled_labels_and_wrong_q(rng):
    task = C.ContrastivePairs(OU(1.0), 0.5, C.GaussianNoise(1.0))
    quad = C.PairQuadrature.for_task(task)
    base_l1 = C.kernel_l1_error(task, lambda Z, Z1: task.q.logpdf(Z1[..., None]) + 0 * Z, quad)
    ex, l1, _ = _fit_and_score(task, rng, 50000, quad, shuffle=True)
    assert l1 > 0.8 * base_l1  # labels independent of the pair: h ~ 1/2, the estimate stays ~ q
    # wrong q in (2.12): N(0, 2/rho) instead of the contrast actually used
    z, z1, y = task.sample(rng, 50000)
    w = C.fit_quadratic_classifier(z[:, 0], z1[:, 0], y)
    wrong_q = C.GaussianNoise(2.0)
    lp = lambda Z, Z1: C.quadratic_features(Z, Z1) @ w + wrong_q.logpdf(Z1[..., None])  # noqa: E731
    good = _fit_and_score(task, rng, 50000, quad)[1]
    assert C.kernel_l1_error(task, lp, quad) > 10 * good
