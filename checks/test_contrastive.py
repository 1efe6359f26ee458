"""Claim checks of the contrastive family: contrastive estimation of the transition kernel of a mixing diffusion
(Liu §2.1, ``001_6a230b9a9faf2198.txt``)."""

from __future__ import annotations

import math
import warnings
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from theorylab.estimation import contrastive as C
from theorylab.estimation import contrastive_counterexamples as cx
from theorylab.markov.diffusions import OU, Langevin, gaussian_tv_1d, log_cosh_example
from theorylab.testing import rejects, trivial

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


@pytest.mark.claim("contrastive.eq2.2", tier="exact")
def test_eq22_symbolic_B_is_the_mean_norm():
    import sympy as sp

    # B = E_pi |x| = sqrt(2/rho) Gamma((d+1)/2)/Gamma(d/2); d = 2: sqrt(pi/(2 rho)) (the Rayleigh mean)
    rho, B, _, _ = C.eq22_symbolic(2)
    assert sp.simplify(B - sp.sqrt(sp.pi / (2 * rho))) == 0
    for d in (1, 2, 3, 4):
        rho, B, _, _ = C.eq22_symbolic(d)
        for r in (0.5, 2.0):
            assert abs(float(B.subs(rho, r)) - OU(r, d).mean_norm()) < 1e-14


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
    # a rational identity: sp.cancel decides it exactly (zero iff the difference is), sp.simplify only tries
    assert sp.cancel((hh - hs) ** 2 - q**2 * (p - ps) ** 2 / ((p + q) ** 2 * (ps + q) ** 2)) == 0
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
    assert sp.cancel(sp.diff(risk, h).subs(h, b / (a + b)) - 2 * (b - a)) == 0  # rational: cancel decides it
    # footnote 5 without its q^2 factor is not an identity
    p, ps, q = sp.symbols("p p_s q", positive=True)
    hh, hs = p / (p + q), ps / (ps + q)
    assert sp.cancel((hh - hs) ** 2 - (p - ps) ** 2 / ((p + q) ** 2 * (ps + q) ** 2)) != 0
    # OU: the verdict "excess risk < 1e-28" of the true weights rejects perturbed weights
    task = C.ContrastivePairs(OU(1.0), 0.5, C.GaussianNoise(1.0))
    w = C.true_quadratic_weights(task) + np.array([0.1, 0.05, -0.05, 0.02, 0.0, 0.0])
    quad = C.PairQuadrature.for_task(task)
    assert C.excess_risk(task, lambda Z, Z1: C.quadratic_features(Z, Z1) @ w, quad) > 1e-6


@pytest.mark.claim("contrastive.lemma1", tier="exact")
def test_task_densities_and_quadrature():
    # q = N(0, v): log q(0) = -1/2 log(2 pi v) per coordinate; it integrates to 1
    for v in (0.5, 2.0):
        q = C.GaussianNoise(v, 2)
        assert float(q.logpdf(np.zeros(2))) == pytest.approx(-math.log(2 * math.pi * v), rel=1e-15)
    ou = OU(2.0, 2)
    lp = ou.stationary_logpdf(np.array([[1.0, 2.0], [0.0, 0.0]]))  # one value per point: sum over coordinates
    assert lp.shape == (2,) and lp == pytest.approx(
        [-5.0 + math.log(2 / (2 * math.pi)), math.log(1 / math.pi)]
    )
    task = C.ContrastivePairs(OU(0.5), 0.5, C.GaussianNoise(3.0))
    quad = C.PairQuadrature.for_task(task)
    # the z rule: 60-point Gauss-Hermite for pi = N(0, 1/rho), exact on moments up to degree 119
    assert len(quad.z) == 60 and quad.wz.sum() == pytest.approx(1.0, rel=1e-14)
    for k in (2, 4, 10):
        assert quad.wz @ quad.z**k == pytest.approx(math.prod(range(1, k, 2)) * 2.0 ** (k // 2), rel=1e-12)
    # the z1 rule: trapezoid on [-L, L], L = 12 max(sd_pi, sd_q): exact on linear functions
    L = 12 * math.sqrt(3.0)
    assert quad.z1[0] == -L and quad.z1[-1] == pytest.approx(L, rel=1e-15)
    assert quad.w1.sum() == pytest.approx(2 * L, rel=1e-14) and quad.w1 @ (quad.z1 + L) == pytest.approx(
        2 * L * L
    )
    assert np.exp(task.q.logpdf(quad.z1[:, None])) @ quad.w1 == pytest.approx(1.0, rel=1e-12)
    # integer inputs are exact: features of z = 3, z1 = 2^32 (z1^2 = 2^64 does not fit an int64)
    assert C.quadratic_features(np.array([3]), np.array([2**32])).tolist() == [
        [1.0, 3.0, 2.0**32, 9.0, 2.0**64, 3 * 2.0**32]
    ]
    # logit of clipped probabilities: finite at 0 and 1
    assert C.logit_clip(np.array([0.0, 0.5, 1.0])) == pytest.approx(
        [math.log(1e-12), 0.0, -math.log(1e-12)], rel=1e-3
    )


@pytest.mark.claim("contrastive.lemma1", tier="exact")
def test_kernel_estimate_functionals_closed_forms():
    task = C.ContrastivePairs(OU(1.0), 0.5, C.GaussianNoise(1.0))
    quad = C.PairQuadrature.for_task(task, n_z=20, n_z1=801)
    ls = lambda Z, Z1: task.log_kernel(Z[..., None], Z1[..., None])  # noqa: E731
    two = lambda Z, Z1: ls(Z, Z1) + math.log(2.0)  # noqa: E731
    # p = 2 p_*: masses 2, L1 error E int p_*^2 = (4 pi s^2)^{-1/2} (Remark 1), normalised KL 0, raw "KL" -log 2
    assert np.allclose(C.kernel_masses(task, ls, quad), 1.0, rtol=1e-12)
    assert np.allclose(C.kernel_masses(task, two, quad), 2.0, rtol=1e-12)
    # the default quadrature (60 Gauss-Hermite nodes) is used when none is given, and a given one is used as given:
    # h = 1/2 has R = (1/8) int (p_* + q), 1/4 exactly, but 0.3986 on a 4 x 7 grid whose trapezoid misses q's mass
    masses = C.kernel_masses(task, ls)
    # (the z1 window [-L, L] truncates the kernel at the outermost nodes: 1.8e-5 there, round-off in the centre)
    assert (
        masses.shape == (60,) and np.abs(masses - 1).max() < 1e-4 and np.abs(masses[25:35] - 1).max() < 1e-12
    )
    coarse = C.PairQuadrature.for_task(task, n_z=4, n_z1=7)
    half = lambda Z, Z1: np.zeros_like(Z)  # noqa: E731
    Zc, Z1c = coarse.grids()
    mass = np.exp(task.log_kernel(Zc[..., None], Z1c[..., None])) + np.exp(task.q.logpdf(Z1c[..., None]))
    assert C.population_risk(task, half, coarse) == pytest.approx(coarse.integrate(mass) / 8, rel=1e-12)
    assert abs(C.population_risk(task, half, coarse) - 0.3986) < 1e-4
    assert abs(C.population_risk(task, half) - 0.25) < 1e-12
    assert type(OU(1).rho) is float and OU(1).rho == 1.0  # rho is stored as a float
    assert C.kernel_l1_error(task, ls, quad) == 0.0
    assert C.kernel_l1_error(task, two, quad) == pytest.approx(
        C.remark1_expected_density(OU(1.0), 0.5), rel=1e-9
    )
    assert abs(C.normalised_kl(task, two, quad=quad)) < 1e-12
    assert C.normalised_kl(task, two, normalise=False, quad=quad) == pytest.approx(-math.log(2.0), rel=1e-12)
    # a kernel with the right mean and variance t^2: KL(N(m, s^2) || N(m, t^2)) = log(t/s) + s^2/(2 t^2) - 1/2
    a, s2 = task.process.kernel_params(0.5)
    t2 = 2 * s2
    wide = lambda Z, Z1: -((Z1 - a * Z) ** 2) / (2 * t2) - 0.5 * math.log(2 * math.pi * t2)  # noqa: E731
    assert C.normalised_kl(task, wide, quad=quad) == pytest.approx(0.5 * math.log(2) + 0.25 - 0.5, rel=1e-9)


@pytest.mark.claim("contrastive.lemma1", tier="property")
def test_quadratic_classifier_fit_recovers_a_well_specified_model():
    # (scipy.optimize import, ~1 s: kept out of the exact tier)
    # soft labels y = expit(w . phi) exactly: the squared loss has minimum 0 at w, which the fit recovers
    task = C.ContrastivePairs(OU(1.0), 0.5, C.GaussianNoise(1.0))
    w = C.true_quadratic_weights(task)
    g = np.random.default_rng(1)
    z, z1 = g.normal(size=300), g.normal(size=300) * 1.5
    y = 1 / (1 + np.exp(-C.quadratic_features(z, z1) @ w))
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a well-posed fit runs without optimiser warnings
        fit = C.fit_quadratic_classifier(z, z1, y)
    assert np.allclose(fit, w, atol=1e-4)
    # a ridge penalty pulls the weights toward 0 (in the fit's scaled coordinates the norm shrinks)
    ridge = C.fit_quadratic_classifier(z, z1, y, l2=1e-2)
    assert np.linalg.norm(ridge) < np.linalg.norm(fit) and not np.allclose(ridge, w, atol=1e-2)


@pytest.mark.claim("contrastive.def1", tier="exact")
def test_gaussian_tv_equal_variances_and_far_times():
    from scipy.special import erf

    # equal variances: TV(N(m1, s^2), N(m2, s^2)) = 2 Phi(|m1 - m2|/(2 s)) - 1 = erf(|m1 - m2|/(2 sqrt 2 s))
    for m1, m2, sd in ((1.0, 0.0, 1.0), (3.0, 1.0, 2.0), (-2.0, 1.0, 0.5)):
        assert gaussian_tv_1d(m1, sd, m2, sd) == pytest.approx(
            erf(abs(m1 - m2) / (2 * math.sqrt(2) * sd)), rel=1e-12
        )
    # at rho t = 20 the kernel variance equals 1/rho to rounding: TV(P^t(z), pi) = erf(e^{-rho t} |z| sqrt(rho)/(2 sqrt 2))
    ou = OU(2.0)
    zs = np.array([-5.0, 1.0, 4.0])
    ref = erf(math.exp(-20) * np.abs(zs) * math.sqrt(2.0) / (2 * math.sqrt(2)))
    assert np.allclose(ou.tv_from_many(zs, 10.0), ref, rtol=1e-6, atol=0)
    # float32 inputs are read exactly and evaluated in double precision (a float32 pipeline loses 1e-8 relative)
    z32 = np.array([0.1, 2.3], dtype=np.float32)
    assert np.array_equal(ou.tv_from_many(z32, 0.5), ou.tv_from_many(z32.astype(float), 0.5))
    s32 = np.array([0.1, 1e-3, -0.5], dtype=np.float32)
    assert np.array_equal(C.r_excess(s32, 2.0), C.r_excess(s32.astype(float), 2.0))
    # r'' at an integer varrho = 2^32 (varrho^2 does not fit an int64): r''(0) = 2 v^2/(v + 1)^4
    v = 2**32
    assert C.r_second_derivative(0.0, v) == pytest.approx(2.0 * v * v / (v + 1.0) ** 4, rel=1e-12, abs=0)


@pytest.mark.claim("contrastive.def1", tier="exact")
def test_langevin_paths_and_grid_kernel():
    ex = log_cosh_example(1.5)
    x = np.array([-2.0, 0.0, 0.7])
    # f = rho x^2/2 + log cosh x (f(0) = 0), grad f = rho x + tanh x; in d = 2 the sum over coordinates
    assert np.allclose(ex.f(x), 1.5 * x * x / 2 + np.log(np.cosh(x)), rtol=1e-14, atol=1e-15)
    assert np.allclose(ex.grad_f(x), 1.5 * x + np.tanh(x), rtol=1e-14)
    ex2 = log_cosh_example(1.5, d=2)
    assert ex2.f(np.array([[-2.0, 0.7]]))[0] == pytest.approx(float(ex.f(x)[[0, 2]].sum()), rel=1e-14)
    # the grid kernel: a stochastic matrix reversible w.r.t. e^{-f} (detailed balance), whose generator's spectral
    # gap is rho for the OU f = x^2/2 (Hermite eigenfunctions) up to O(h^2): K's second eigenvalue ~ e^{-rho eta}
    grid = np.linspace(-5, 5, 61)
    ou_lang = Langevin(lambda x: x * x / 2, lambda x: x, 1.0)
    K = ou_lang.kernel_on_grid(0.5, grid)
    pi = np.exp(-grid * grid / 2)
    assert np.allclose(K.sum(axis=1), 1.0, atol=1e-12) and np.all(K > -1e-12)
    assert np.allclose(pi[:, None] * K, (pi[:, None] * K).T, atol=1e-12)
    lam = np.sort(np.linalg.eigvals(K).real)[-2]
    assert lam == pytest.approx(math.exp(-0.5), rel=3e-3)  # measured 1.7e-3 at h = 1/6
    Kc = ex.kernel_on_grid(0.5, grid)
    pic = np.exp(-ex.f(grid))
    assert np.allclose(pic[:, None] * Kc, (pic[:, None] * Kc).T, atol=1e-12)


@pytest.mark.claim("contrastive.lemma1", tier="property")
def test_sampled_pairs_and_paths_have_the_kernel_statistics():
    # (sampling imports scipy.signal, ~2 s: kept out of the exact tier)
    task = C.ContrastivePairs(OU(0.5), 0.5, C.GaussianNoise(3.0))
    # pairs: z1 ~ p_*^eta(z, .) when y = 1, z1 ~ q independent of z when y = 0
    z, z1, y = task.sample(np.random.default_rng(0), 4000)
    assert z.shape == z1.shape == (4000, 1) and set(np.unique(y)) == {0.0, 1.0}
    a, s2 = task.process.kernel_params(task.eta)
    pos, neg = y == 1, y == 0
    res = z1[pos, 0] - a * z[pos, 0]
    # 4000 pairs, ~2000 per class: sample variances within 4 standard errors (sd of a variance ~ sqrt(2/n) rel)
    assert abs(res.var() / s2 - 1) < 4 * math.sqrt(2 / pos.sum())
    assert abs(z1[neg, 0].var() / 3.0 - 1) < 4 * math.sqrt(2 / neg.sum())
    assert abs(np.corrcoef(z[neg, 0], z1[neg, 0])[0, 1]) < 4 / math.sqrt(neg.sum())
    ou_lang = Langevin(lambda x: x * x / 2, lambda x: x, 1.0)
    # Euler-Maruyama paths start at x0; OU paths from stationarity: variance 1/rho, lag-1 correlation e^{-rho eta}
    g = np.random.default_rng(2)
    path = ou_lang.sample_path(g, 3, 0.1, substeps=2, x0=[1.5])
    assert path.shape == (3, 1) and path[0, 0] == 1.5 and np.all(np.isfinite(path)) and path[1, 0] != 1.5
    assert ou_lang.sample_path(g, 2, 0.1)[0, 0] == 0.0
    lp = ou_lang.sample_path(g, 2000, 0.5, substeps=5)[100:, 0]
    assert abs(lp.var() - 1.0) < 0.15 and abs(np.corrcoef(lp[:-1], lp[1:])[0, 1] - math.exp(-0.5)) < 0.1
    op = OU(2.0).sample_path(g, 20000, 0.25)[:, 0]
    # 20,000 observations, correlation time 2: variances and correlations within ~5 standard errors
    assert abs(op.var() * 2.0 - 1) < 0.05 and abs(np.corrcoef(op[:-1], op[1:])[0, 1] - math.exp(-0.5)) < 0.03


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


def _T_of(mu, Delta, delta, B=1.0, K=1.0, Cc=1.0):
    """T needed at a given mu by (2.20) with Delta_appr = B mu^{3/2}/sqrt(T): B^2 mu^3/(delta - e^{-A^2})^2."""
    A = Delta * math.sqrt(mu) / Cc - K * math.sqrt(math.log(mu))
    D = delta - math.exp(-(A**2)) if A > 0 else -1.0
    return B * B * mu**3 / D**2 if D > 0 else math.inf


@pytest.mark.claim("contrastive.thm1", tier="exact")
def test_thm1_sample_sizes_solve_their_defining_equations():
    for D in (0.05, 0.2):
        T, mu = C.min_T_thm1(D, 0.05)
        # T is the integer-mu minimiser of the proof's T(mu); (2.20) holds with equality at Delta_appr(T)
        assert T == pytest.approx(_T_of(mu, D, 0.05), rel=1e-12)
        assert _T_of(mu - 1, D, 0.05) >= T and _T_of(mu + 1, D, 0.05) >= T
        dap = mu**1.5 / math.sqrt(T)
        assert float(C.thm1_lhs(mu, dap, 0.05, 1.0)) == pytest.approx(D, rel=1e-9)
        # T scales like B^2 (the default is B = 1), the minimising mu does not depend on B
        T2, mu2 = C.min_T_thm1(D, 0.05, B=2.0)
        assert mu2 == mu and T2 == pytest.approx(4 * T, rel=1e-12)
        # the corrected rate: mu is the fixed point of mu = (K sqrt(log mu) + sqrt(log 1/delta))^2/Delta^2
        muc = (C.thm1_corrected_T(D, 0.05) * 0.05**2) ** (1 / 3)
        fixed = (math.sqrt(math.log(muc)) + math.sqrt(math.log(1 / 0.05))) ** 2 / D**2
        assert muc == pytest.approx(fixed, rel=1e-9)
    # closed forms at delta = 1/e (log 1/delta = 1): printed T = 1/(delta^2 Delta^3) = e^2/Delta^3; the proof's
    # mu with Delta_appr = delta/2 at delta = 2/e is K sqrt(log e)/Delta = K/Delta
    assert C.thm1_printed_T(0.5, math.exp(-1)) == pytest.approx(8 * math.e**2, rel=1e-14)
    assert C.thm1_proof_mu(0.5, 2 / math.e) == pytest.approx(2.0, rel=1e-14)
    assert C.thm1_proof_mu(0.25, 0.5, K=3.0, delta_appr=0.5 - math.exp(-4)) == pytest.approx(24.0, rel=1e-14)


@pytest.mark.claim("contrastive.thm1", tier="exact")
def test_contrastive_objects_are_defined_on_their_domain():
    assert C.thm1_printed_T(1e-100, 0.5) > 0 and C.thm1_printed_T(0.1, 1e-150) > 0  # just inside
    for args, msg in (
        ((0.0, 0.05), r"Delta_gen must be > 0, got 0.0$"),
        ((0.1, 0.05, 0.0), r"B must be > 0, got 0.0$"),
        ((0.1, 0.05, 1.0, 0.0), r"K must be > 0, got 0.0$"),
        ((0.1, 1.0), r"delta must lie in \(0, 1\), got 1.0$"),
        ((0.1, 0.0), r"delta must lie in \(0, 1\), got 0.0$"),
    ):
        rejects(lambda args=args: C.thm1_printed_T(*args), msg)
        rejects(lambda args=args: C.thm1_corrected_T(*args), msg)
    h = np.array([1e-300, 0.5, 1 - 2**-53])  # strictly inside (0, 1)
    assert np.all(np.isfinite(C.kernel_from_classifier(h, np.ones(3))))
    for bad in (0.0, 1.0):
        rejects(
            lambda bad=bad: C.kernel_from_classifier(np.array([0.5, bad]), np.ones(2)),
            r"classifier outputs must lie strictly inside \(0, 1\)$",
        )
    rejects(lambda: OU(1.0).beta_mixing(0.0), r"time t must be a finite number > 0, got 0.0$")
    lang = Langevin(lambda x: x * x / 2, lambda x: x, 1.0)
    rejects(
        lambda: Langevin(lambda x: x, lambda x: 1.0, 0.0), r"Langevin needs a strongly convex f \(rho > 0\)"
    )
    rejects(lambda: Langevin(1.0, lambda x: x, 1.0), r"f and grad_f must be callables$", TypeError)
    rejects(lambda: Langevin(lambda x: x, 2.0, 1.0), r"f and grad_f must be callables$", TypeError)
    rejects(lambda: log_cosh_example(0.0), r"rho must be a finite number > 0, got 0.0$")
    rejects(lambda: lang.sample_path(np.random.default_rng(0), 3, 0.0), r"eta must be a finite number > 0")
    rejects(lambda: lang.kernel_on_grid(0.0, np.linspace(-1, 1, 5)), r"eta must be a finite number > 0")
    assert lang.kernel_on_grid(0.5, np.array([-1.0, 0.0, 1.0])).shape == (3, 3)  # 3 points: the smallest grid
    # spacings within np.allclose's relative 1e-5 of the first one count as uniform
    near = np.cumsum([0.0, 1.0, 1 + 0.9e-5, 1 - 0.9e-5])
    assert np.allclose(lang.kernel_on_grid(0.5, near).sum(axis=1), 1.0, atol=1e-12)
    for grid in (np.array([0.0, 1.0]), np.array([0.0, 1.0, 3.0]), np.zeros((3, 3))):
        rejects(
            lambda grid=grid: lang.kernel_on_grid(0.5, grid),
            r"grid must be a uniform 1-D grid with at least 3 points$",
        )


@pytest.mark.claim("contrastive.thm1", tier="exact", control=True)
def test_thm1_control_the_proofs_mu_gives_the_printed_exponent():
    # one ingredient changed: mu from the proof's choice (l.589, mu ~ 1/Delta) instead of the mu that (2.20)
    # needs; T = B^2 mu^3 / delta^2 then scales like Delta^-3 (the printed rate) and the same slope verdict
    # rejects it
    Tq = np.array([C.thm1_proof_mu(D, 0.05) ** 3 / 0.05**2 for D in DELTAS])
    slope = np.polyfit(np.log(DELTAS), np.log(Tq), 1)[0]
    assert not -7 <= slope <= -5.5 and abs(slope + 3) < 1e-9
    out = cx.thm1_table()
    assert np.all(out["printed_T"] < out["min_T"])  # the printed T is too small to satisfy (2.20)


# ------------------------------------------------------------------------------------------ Theorem 2
@pytest.mark.claim("contrastive.thm2", tier="exact")
def test_thm2_r_second_derivative(measure):
    import sympy as sp

    s, v, r, r2 = C.r_symbolic()
    closed = -2 * v**2 * (2 * v * s - v - 1) / ((v + 1) * (v * s + v + 1) ** 4)
    # rational in s, varrho: zero iff the numerator of the difference over one denominator is the zero
    # polynomial (exact; expanding it is ~6x cheaper than sp.cancel's multivariate gcd with (vs + v + 1)^4)
    assert sp.Poly(sp.numer(sp.together(r2 - closed)), s, v).is_zero
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


@pytest.mark.claim("contrastive.lemma1", tier="exact")
def test_ou_kernel_and_bayes_logit_in_closed_form():
    """d = 2, rho = 1/2, eta = 1 (a = e^{-1/2}, s^2 = 2(1 - e^{-1})), q = N(0, 3 I): the transition log-density,
    the Bayes logit log p - log q (Lemma 1) and Eq 2.12 in log space against the Gaussian formulas written out;
    the stationary variance 1/rho, the printed (2.2) constant (rho/2pi)^{d/2} sqrt(d/rho) and a replayed draw of
    the stationary law. Round-off: a dozen flops on O(1) numbers -> 1e-13."""
    ou, q = OU(0.5, 2), C.GaussianNoise(3.0, 2)
    pairs = C.ContrastivePairs(ou, 1.0, q)
    z, z1 = np.array([[0.4, -1.2], [2.0, 0.5]]), np.array([[1.0, 0.3], [-0.7, 2.2]])
    a, s2 = math.exp(-0.5), 2 * (1 - math.exp(-1))
    log_p = np.array(
        [
            -((u1 - a * u) @ (u1 - a * u)) / (2 * s2) - math.log(2 * math.pi * s2)
            for u, u1 in zip(z, z1, strict=True)
        ]
    )
    log_q = np.array([-(u1 @ u1) / 6 - math.log(6 * math.pi) for u1 in z1])
    assert np.abs(ou.kernel_logpdf(z, z1, 1.0) - log_p).max() < 1e-13
    assert np.abs(pairs.bayes_logit(z, z1) - (log_p - log_q)).max() < 1e-13
    assert np.abs(C.log_kernel_from_logit(log_p - log_q, log_q) - log_p).max() < 1e-13
    assert ou.stationary_var == 2.0
    assert abs(C.eq22_printed_bound(0.5, 2) - (0.25 / math.pi) * 2.0) < 1e-15
    assert abs(C.eq22_printed_bound(2.0, 3) - math.pi**-1.5 * math.sqrt(1.5)) < 1e-15
    # one observation is a stationary draw; the pointwise excess loss (2.23) at s = 1/2, varrho = 2 is (1/12)^2,
    # with varrho given exactly or as a float; the pair quadrature refuses d = 2 by its message
    path = ou.sample_path(np.random.default_rng(7), 1, 1.0)
    assert np.array_equal(path, np.random.default_rng(7).standard_normal((1, 2)) / math.sqrt(0.5))
    for varrho in (2.0, Fraction(2)):
        r = C.r_excess(0.5, varrho)
        assert r.dtype == np.float64 and abs(r - 1 / 144) < 1e-16
    rejects(lambda: C.PairQuadrature.for_task(pairs), r"^pair quadrature is implemented for d = 1$")
    for rho in (0.0, -1.0, math.inf):  # rho = 0 is Brownian motion: no stationary law
        rejects(lambda rho=rho: OU(rho), r"^OU needs rho > 0 to be mixing")
    draws = ou.sample_stationary(np.random.default_rng(7), 5)
    assert draws.shape == (5, 2)
    assert np.array_equal(draws, np.random.default_rng(7).standard_normal((5, 2)) / math.sqrt(0.5))
