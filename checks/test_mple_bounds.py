"""Claim checks of the asymptotic and finite-sample machinery of Li thesis Ch. 4 (``003_69b23422e33c905a.txt``): asymptotic
normality of MPLE (Lemma 4.1.1 with the regularity conditions of Lemma 4.3.9), Assumptions 4.1.1, 4.1.3 and 4.1.4 for
the pairwise Ising family on a box, Hoeffding's inequality (Lemma 4.3.4), and the generalization bounds of Lemma
4.3.5 and Corollary 4.3.2."""

from __future__ import annotations

from fractions import Fraction as F
from itertools import combinations, product
from math import comb, exp, log, sqrt

import mpmath as mp
import numpy as np
import pytest
from scipy.special import expit

from theorylab.estimation.pseudolikelihood import asymptotic_covariance, information_matrix, pl_parts
from theorylab.ising import IsingModel
from theorylab.ising.expfam import FiniteExpFamily
from theorylab.ising.finite_sample import conditional_kl, pl_kl_loss, support_margin
from theorylab.ising.generalization import (
    cor_4_3_2_deviation,
    covering_cells,
    hoeffding_failure,
    lemma_4_3_5,
    lipschitz_constant,
    log_conditionals,
    support_margin_box,
    touching_statistics,
    two_mask_deviation_tail,
)
from theorylab.testing import rejects

MODEL = IsingModel(np.array([0.3, -0.2, 0.1]), np.array([[0, 0.5, -0.4], [0.5, 0, 0.2], [-0.4, 0.2, 0]]))
PAIRS = list(combinations(range(3), 2))


# ------------------------------------------------------------------------------------------------ Lemma 4.1.1 / 4.3.9
def design(N: int, k: int) -> tuple[np.ndarray, np.ndarray]:
    """Cells (state, mask) and, per cell, the rows A with log p_theta(x_K | x_{-K}) = log-softmax over the
    alternatives: for k = 1 the single-mask loss of cell (x, i) is softplus(-A . theta) with A = 2 x_i df_i/dtheta;
    for k = N it is -theta . T(x) + log Z (returned as T)."""
    X = np.array(list(product((-1, 1), repeat=N)), float)
    T = np.hstack([X, np.stack([X[:, i] * X[:, j] for i, j in combinations(range(N), 2)], axis=1)])
    if k == N:
        return T, T
    rows = []
    for x in X:
        for i in range(N):
            a = np.zeros(T.shape[1])
            a[i] = 2 * x[i]
            for c, (u, v) in enumerate(combinations(range(N), 2)):
                if i in (u, v):
                    a[N + c] = 2 * x[i] * x[v if i == u else u]
            rows.append(a)
    return np.array(rows), T


def batched_newton(counts: np.ndarray, A: np.ndarray, T: np.ndarray, k_is_N: bool) -> np.ndarray:
    """From-scratch minimisers of the empirical single-mask k-PL loss for R count vectors at once (k = 1: weighted
    logistic regression on the cells; k = N: the exponential-family MLE)."""
    R, d = counts.shape[0], A.shape[1]
    w = counts / counts.sum(axis=1, keepdims=True)
    theta = np.zeros((R, d))
    for _ in range(60):
        if k_is_N:
            logits = theta @ T.T
            p = np.exp(logits - logits.max(axis=1, keepdims=True))
            p /= p.sum(axis=1, keepdims=True)
            mean = p @ T
            grad = mean - w @ T
            H = np.einsum("rs,si,sj->rij", p, T, T) - mean[:, :, None] * mean[:, None, :]
        else:
            z = theta @ A.T
            sig = expit(z)
            grad = -((1 - sig) * w) @ A
            H = np.einsum("rs,si,sj->rij", w * sig * (1 - sig), A, A)
        theta = theta - np.linalg.solve(H, grad[:, :, None])[:, :, 0]
        if np.abs(grad).max() < 1e-12:
            break
    return theta


def simulate_root_n_errors(k: int, n: int, reps: int, seed: int) -> np.ndarray:
    """sqrt(n) (theta_hat - theta*) for ``reps`` data sets of n (X, K) pairs, X ~ MODEL, K uniform (single mask)."""
    N = MODEL.N
    A, T = design(N, k)
    cells = MODEL.probs() if k == N else np.repeat(MODEL.probs() / N, N)
    counts = np.random.default_rng(seed).multinomial(n, cells, size=reps).astype(float)
    theta_hat = batched_newton(counts, A, T, k == N)
    return np.sqrt(n) * (theta_hat - MODEL.natural_parameters())


def normality_verdict(Z: np.ndarray, Gamma: np.ndarray) -> dict[str, float]:
    """Does sqrt(n)(theta_hat - theta*) look like N(0, Gamma)? Mean of n|err|^2 against Tr Gamma (4 standard errors
    plus a 3% finite-n allowance), every covariance entry within 4 standard errors + 3% of max|Gamma|, and a KS test
    of the slowest direction's standardised projection against N(0, 1) (critical value 1.95/sqrt(R), level 1e-3)."""
    from scipy.stats import kstest, norm  # scipy.stats (~1 s) only where a check needs it, not at collection

    R = Z.shape[0]
    z = (Z**2).sum(axis=1)
    trace_ok = abs(z.mean() - np.trace(Gamma)) <= 4 * z.std() / np.sqrt(R) + 0.03 * np.trace(Gamma)
    prods = Z[:, :, None] * Z[:, None, :]
    se = prods.std(axis=0) / np.sqrt(R)
    entries_ok = bool(np.all(np.abs(prods.mean(axis=0) - Gamma) <= 4 * se + 0.03 * np.abs(Gamma).max()))
    w, V = np.linalg.eigh(Gamma)
    proj = Z @ V[:, -1] / np.sqrt(w[-1])
    ks = kstest(proj, norm.cdf).statistic
    return {
        "mean_n_err2": float(z.mean()),
        "trace": float(np.trace(Gamma)),
        "ok": bool(trace_ok and entries_ok and ks <= 1.95 / np.sqrt(R)),
        "ks": float(ks),
    }


@pytest.mark.claim("mple.lem4.1.1", tier="exact")
def test_lemma_4_3_9_conditions_and_the_sandwich_for_ising_kpl(measure) -> None:
    # Lemma 4.3.9's conditions for k-PL on the pairwise Ising family: the loss is convex (Prop 4.3.6) with a positive
    # definite Hessian at theta* = the model (realizability: the gradient vanishes), so theta* is the unique minimiser;
    # the per-sample loss is Lipschitz in theta with the bounded B(x) = Lip of Assumption 4.1.4; then Gamma is the
    # sandwich H^-1 Cov(score) H^-1, which equals H^-1 under realizability (Lemma 4.1.2)
    N = MODEL.N
    mins = []
    for k in range(1, N + 1):
        parts = pl_parts(MODEL, k)
        assert np.abs(parts.grad).max() <= 1e-12
        lam = np.linalg.eigvalsh(parts.hessian)
        mins.append(float(lam[0]))
        assert lam[0] > 1e-2
        Hinv = np.linalg.inv(parts.hessian)
        G = asymptotic_covariance(MODEL, k)
        assert np.abs(G - Hinv @ parts.score_cov @ Hinv).max() <= 1e-10 and np.abs(G - Hinv).max() <= 1e-10
    assert np.abs(asymptotic_covariance(MODEL, N) - np.linalg.inv(information_matrix(MODEL))).max() <= 1e-10
    masks = [(i,) for i in range(N)]
    assert lipschitz_constant(N, masks) == 2 * touching_statistics(N, (0,)) == 6.0
    measure("Lemma 4.3.9: smallest Hessian eigenvalue at theta*, k = 1..3", mins)


@pytest.mark.claim("mple.lem4.1.1", tier="exact", control=True)
def test_lemma_4_3_9_control_non_identifiable_family_is_refused() -> None:
    # a repeated statistic makes the Hessian singular: Lemma 4.3.9's condition fails and the library refuses
    fam = MODEL.exp_family()
    T = np.hstack([fam.T, fam.T[:, :1]])
    dup = FiniteExpFamily(fam.states, T)
    theta = np.concatenate([MODEL.natural_parameters(), [0.0]])
    rejects(
        lambda: asymptotic_covariance((dup, theta), 1), r"the Hessian of the PL loss at theta\* is singular"
    )


@pytest.mark.claim("mple.lem4.1.1", tier="property")
def test_lemma_4_1_1_root_n_errors_are_normal_with_the_sandwich_covariance(measure) -> None:
    # seeds 4111 (k = 1) and 4113 (k = N = 3, the MLE of Def 4.1.1 with covariance I^-1); n = 4000, 2000 data sets
    for k, seed in ((1, 4111), (3, 4113)):
        Z = simulate_root_n_errors(k, 4000, 2000, seed)
        v = normality_verdict(Z, asymptotic_covariance(MODEL, k))
        measure(f"Lemma 4.1.1 k = {k}: mean n err^2, Tr Gamma, KS", [v["mean_n_err2"], v["trace"], v["ks"]])
        assert v["ok"], (k, v)


@pytest.mark.claim("mple.lem4.1.1", tier="property", control=True)
def test_lemma_4_1_1_control_mle_covariance_for_k1(measure) -> None:
    # the same verdict rejects the MLE's covariance I^-1 for the 1-PL estimator (Tr 8.8 against Tr Gamma^1 = 18.2)
    Z = simulate_root_n_errors(1, 4000, 2000, 4111)
    v = normality_verdict(Z, np.linalg.inv(information_matrix(MODEL)))
    measure("Lemma 4.1.1 control: mean n err^2 vs Tr I^-1", [v["mean_n_err2"], v["trace"]])
    assert not v["ok"]


# ------------------------------------------------------------------------------------------------ Assumptions 4.1.x
@pytest.mark.claim("mple.assumptions4.1.1-4", tier="exact")
def test_assumptions_4_1_1_4_1_3_4_1_4_on_the_box(measure) -> None:
    N, a = 2, 0.75
    masks = [(0,), (1,)]
    d = 3
    # 4.1.1: scores T(x) - E[T | x_-K] have entries in (-2, 2) and Hessians -Cov(T | x_-K) entries in [-1, 1], for
    # every theta (also far outside the box); checked with central differences of the log-conditionals
    rng = np.random.default_rng(4101)
    worst = 0.0
    for theta in [rng.uniform(-a, a, d) for _ in range(5)] + [np.array([30.0, -30.0, 30.0])]:
        for K in masks:
            g = np.array(
                [
                    (log_conditionals(theta + e, N, K) - log_conditionals(theta - e, N, K)) / 2e-6
                    for e in np.eye(d) * 1e-6
                ]
            )
            worst = max(worst, float(np.abs(g).max()))
            assert np.abs(g).max() < 2 + 1e-6
    # 4.1.3: on the box the margin is attained at a vertex: beta = sigma(-2 (a + a)) for 1-PL at N = 2, and no
    # interior point goes below it
    beta = support_margin_box(N, a, masks)
    assert abs(beta - expit(-4 * a)) <= 1e-12
    inner = min(
        float(np.exp(log_conditionals(rng.uniform(-a, a, d), N, K).min())) for _ in range(30) for K in masks
    )
    assert beta <= inner
    # 4.1.4: cubes of side eps / (2 Lip) (Lip = 2 x 2 statistics touching K = 4 here): log-conditionals move by at
    # most eps/2 inside a cube, including at the saturated corner where the bound is nearly attained
    eps = 0.1
    side, cells = covering_cells(N, a, eps, masks)
    assert side == eps / 8 and cells == int(np.ceil(2 * a / side)) ** d
    spread = 0.0
    for theta in [rng.uniform(-a, a - side, d) for _ in range(30)] + [np.array([-a, 0.0, -a])]:
        corner = theta + side * np.array([1.0, 0.0, 1.0])
        for K in masks:
            spread = max(
                spread, float(np.abs(log_conditionals(theta, N, K) - log_conditionals(corner, N, K)).max())
            )
    assert spread <= eps / 2
    measure(
        "Assumptions 4.1.1/4.1.3/4.1.4: max |score|, beta, C_eps, max change in a cube (eps/2 = 0.05)",
        [worst, beta, cells, spread],
    )
    rejects(lambda: support_margin_box(N, 0.0, masks), r"a \(the box half-width\) must be positive")
    rejects(lambda: IsingModel(np.array([np.inf, 0.0]), np.zeros((2, 2))), r"h and J must be finite")
    rejects(lambda: MODEL.exp_family().probs(np.r_[np.inf, np.zeros(5)]), r"theta must be finite")


@pytest.mark.claim("mple.assumptions4.1.1-4", tier="exact", control=True)
def test_assumptions_control_too_coarse_cover_and_too_large_margin() -> None:
    # twice the cube side (forgetting the factor 2 of the score bound) breaks the eps/2 requirement at a saturated
    # corner, and 1.01 beta is not a margin of the box (its vertex goes below)
    N, a, eps = 2, 5.0, 0.1
    masks = [(0,), (1,)]
    side, _ = covering_cells(N, a, eps, masks)
    theta = np.array([-a, 0.0, -a])
    corner = theta + 2 * side * np.array([1.0, 0.0, 1.0])
    change = float(np.abs(log_conditionals(theta, N, (0,)) - log_conditionals(corner, N, (0,))).max())
    assert change > eps / 2
    beta = support_margin_box(N, 0.75, masks)
    vertex = min(
        float(np.exp(log_conditionals(np.array([-0.75, 0.0, -0.75]) * s, N, K).min()))
        for s in (1, -1)
        for K in masks
    )
    assert vertex < 1.01 * beta


# ------------------------------------------------------------------------------------------------ Lemma 4.3.4
def binomial_two_sided_tail(n: int, p: F, t: F) -> F:
    """Exactly P(|S_n - n p| >= t) for S_n ~ Bin(n, p) (Y_i in [0, 1])."""
    return sum(
        (comb(n, j) * p**j * (1 - p) ** (n - j) for j in range(n + 1) if abs(j - n * p) >= t), start=F(0)
    )


@pytest.mark.claim("mple.lem4.3.4", tier="exact")
def test_hoeffding_against_exact_binomial_tails(measure) -> None:
    # every atom t = |j - n p| of Bin(n, p), n = 1..24, p in {1/2, 1/3, 1/10}: the exact tail is below the bound
    closest = 0.0
    for n in range(1, 13):
        for p in (F(1, 2), F(1, 3), F(1, 10)):
            for t in sorted({abs(j - n * p) for j in range(n + 1)} - {0}):
                exact = float(binomial_two_sided_tail(n, p, t))
                bound = hoeffding_failure(n, float(t), 0.0, 1.0)
                assert exact <= bound
                closest = max(closest, exact / bound)
    # pinned: n = 1, p = 1/2, t = 1/2: the tail is 1 and the bound 2 e^{-1/2} = 1.213; scaling Y to [a, b] scales t
    assert abs(hoeffding_failure(1, 0.5, 0.0, 1.0) - 2 * exp(-0.5)) <= 1e-15
    assert abs(hoeffding_failure(3, 2.0, -1.0, 1.0) - hoeffding_failure(3, 1.0, 0.0, 1.0)) <= 1e-15
    measure("Lemma 4.3.4: largest exact tail / Hoeffding bound (n <= 12)", closest)
    rejects(lambda: hoeffding_failure(0, 1.0, 0.0, 1.0), r"n must be >= 1")
    rejects(lambda: hoeffding_failure(2, 1.0, 1.0, 1.0), r"the range \[a, b\] must have a < b")
    rejects(lambda: hoeffding_failure(2, -1.0, 0.0, 1.0), r"t must be positive and finite")


@pytest.mark.claim("mple.lem4.3.4", tier="exact", control=True)
def test_hoeffding_control_wrong_constants() -> None:
    # a one-sided constant (no factor 2) or twice the exponent fails at n = 1, p = 1/2, t = 1/2 (exact tail 1)
    exact = float(binomial_two_sided_tail(1, F(1, 2), F(1, 2)))
    assert exact > hoeffding_failure(1, 0.5, 0.0, 1.0) / 2
    assert exact > 2 * exp(-4 * 0.25 / 1)


# ------------------------------------------------------------------------------------------------ Lemma 4.3.5, Cor 4.3.2
GRID = list(product((-0.5, 0.0, 0.5), (-0.5, 0.0, 0.5), (-0.5, 0.0, 0.5, 1.0)))
LAWS = np.array([IsingModel(np.array([a, b]), np.array([[0, j], [j, 0]])).probs() for a, b, j in GRID])


def point_mass_kl_gap(q: np.ndarray, state: int) -> float:
    """|D_0 - D_1| for the empirical law concentrated on ``state``: D_K = -log q(x_K | x_-K) (N = 2, K = {0}, {1})."""
    r = np.eye(4)[state]
    return abs(float(conditional_kl(r, q, 2, (0,))[state] - conditional_kl(r, q, 2, (1,))[state]))


def cor431(N, q, m, n, d):
    return mp.sqrt(mp.mpf(2) ** (3 * N - 1) * q**N / (m * d)) + mp.sqrt(mp.log(4 / d) / (2 * n))


def cor432(N, q, m, n, d, C):
    return mp.sqrt(mp.mpf(2) ** (3 * N - 1) * q**N * C / (m * d)) + mp.sqrt(mp.log(4 * C / d) / (2 * n))


def theorem_B(N, q, m, n, d, C):
    return mp.sqrt(mp.mpf(2) ** (3 * N) * q**N * C / (m * d)) + mp.sqrt(mp.log(8 * C / d) / (2 * n))


def constant_points() -> list[tuple]:
    """Random (N, q, m, n, delta, C) at 50 digits (seed 4352)."""
    mp.mp.dps = 50
    rng = np.random.default_rng(4352)
    return [
        (
            int(rng.integers(1, 6)),
            int(rng.integers(2, 5)),
            int(rng.integers(1, 10**6)),
            int(rng.integers(1, 10**4)),
            mp.mpf(int(rng.integers(1, 99))) / 100,
            int(rng.integers(1, 100)),
        )
        for _ in range(5)
    ]


@pytest.mark.claim("mple.lem4.3.5", tier="exact")
def test_lemma_4_3_5_and_cor_4_3_2_exact_mask_tails(measure) -> None:
    from scipy.stats import norm  # scipy.stats (~1 s) only where a check needs it, not at collection

    # (i) the chain of constants: Cor 4.3.2 is Cor 4.3.1 at delta / C (union over the C cells) plus eps/2 + eps/2,
    # and Theorem 4.1.4's B is Cor 4.3.2's bracket at delta / 2 (both sides at 50 digits on random points)
    for N, q, m, n, d, C in constant_points():
        assert abs(cor431(N, q, m, n, d / C) - cor432(N, q, m, n, d, C)) < mp.mpf(10) ** -40
        assert abs(cor432(N, q, m, n, d / 2, C) - theorem_B(N, q, m, n, d, C)) < mp.mpf(10) ** -40
    # ... and the library's bounds are these formulas (Lemma 4.3.5 at N = 2, q = 2: failure 4/(eps^2 m) + Hoeffding)
    for N, q, m, n, d, C in constant_points():
        lib = cor_4_3_2_deviation(N, q, m, n, float(d), C, 0.25, 0.01)
        assert abs(lib - float(cor432(N, q, m, n, d, C) * mp.log(4) + mp.mpf("0.01"))) <= 1e-12 * lib
    pin = lemma_4_3_5(2, 2, 100, 8, eps=0.5, t=1.0, beta=exp(-1))
    assert (
        abs(pin["failure"] - (4 / 25 + 2 * exp(-0.25))) <= 1e-15
        and abs(pin["deviation"] - (2 + 1 / 8)) <= 1e-15
    )
    # (ii) the Hoeffding part is exact: L_tilde is the data average of f(X) by its definition (4.2), so Step 2's
    # deviation is 0 (a random data set of 7 points on N = 2, the grid member 5)
    data = np.random.default_rng(435).choice(4, size=7)
    p_tilde = np.bincount(data, minlength=4) / 7
    f = [
        0.5 * (conditional_kl(p_tilde, LAWS[5], 2, (0,))[x] + conditional_kl(p_tilde, LAWS[5], 2, (1,))[x])
        for x in data
    ]
    assert abs(np.mean(f) - pl_kl_loss(p_tilde, LAWS[5], 2, 1)) <= 1e-15
    # (iii) exact tails: masks {0}, {1} w.p. 1/2 each, m = 10^7 per sequence, n = 500 sequences all equal to the
    # state (+1, -1): L_hat - L_tilde = (pi_hat - 1/2)(D_0 - D_1) with 5e9 pi_hat ~ Bin(5e9, 1/2)
    beta = support_margin(LAWS, 2, [(0,), (1,)])
    m_, n_, delta = 10**7, 500, 0.1
    state = 2  # (+1, -1) in product order
    fixed = LAWS[5]
    # epsilon and t of Cor 4.3.1 (with the corrected epsilon of mple.cor4.3.1): each failure term is delta / 2
    eps, t = sqrt(2 * 4 / (m_ * delta)), sqrt(log(4 / delta) * n_ / 2) * log(1 / beta)
    lem = lemma_4_3_5(2, 2, m_, n_, eps=eps, t=t, beta=beta)
    assert abs(lem["failure"] - delta) <= 1e-12
    tail_fixed = two_mask_deviation_tail(0.5, m_ * n_, point_mass_kl_gap(fixed, state), lem["deviation"])
    assert tail_fixed <= lem["failure"]
    spread = max(point_mass_kl_gap(qq, state) for qq in LAWS)
    dev = cor_4_3_2_deviation(2, 2, m_, n_, delta, len(LAWS), beta, 1e-12)
    tail_uniform = two_mask_deviation_tail(0.5, m_ * n_, spread, dev)
    assert 0.5 * spread > dev  # not vacuous: the worst mask split would exceed it
    assert tail_uniform <= delta
    # the tail is a live quantity: at the binomial's own scale (2 standard deviations) it is about 0.046
    sd = 0.5 / np.sqrt(m_ * n_)
    live = two_mask_deviation_tail(0.5, m_ * n_, spread, 2 * sd * spread)
    assert abs(live - 2 * norm.sf(2)) <= 1e-3
    measure(
        "Lemma 4.3.5 / Cor 4.3.2: beta, exact tails (fixed theta, uniform), stated failure, uniform deviation",
        [beta, tail_fixed, tail_uniform, lem["failure"], dev],
    )
    rejects(lambda: cor_4_3_2_deviation(2, 2, m_, n_, 1.5, 36, beta, 0.1), r"delta must lie in \(0, 1\)")
    rejects(lambda: lemma_4_3_5(2, 2, 0, n_, 0.1, 0.1, beta), r"m must be >= 1")


@pytest.mark.claim("mple.lem4.3.5", tier="exact", control=True)
def test_cor_4_3_2_control_union_bound_misreadings() -> None:
    # without dividing delta by the number of cells, or with ln(4/delta), the union bound does not give Cor 4.3.2;
    # and Cor 4.3.2's bracket at delta (not delta / 2) is not Theorem 4.1.4's B
    no_C = lambda N, q, m, n, d, C: cor431(N, q, m, n, d) + 0 * C  # noqa: E731
    no_log_C = lambda N, q, m, n, d, C: (
        cor431(N, q, m, n, d / C)
        - mp.sqrt(mp.log(4 * C / d) / (2 * n))
        + mp.sqrt(  # noqa: E731
            mp.log(4 / d) / (2 * n)
        )
    )
    for N, q, m, n, d, C in constant_points():
        if C == 1:
            continue
        assert abs(no_C(N, q, m, n, d, C) - cor432(N, q, m, n, d, C)) > 1e-6
        assert abs(no_log_C(N, q, m, n, d, C) - cor432(N, q, m, n, d, C)) > 1e-6
        assert abs(cor432(N, q, m, n, d, C) - theorem_B(N, q, m, n, d, C)) > 1e-6
