"""Claim checks of SCB's mechanism (seed ``004_4bd75c3751e9130c.txt``): Stage 2's threshold rule and recursion
(Lemmas E.1, E.2, E.9), the concentration lemmas (B.9-B.13), the proximal-vs-SGD experiment (§5.1) and App. I's
Gaussian-noise simulations. Every formula is a reconstruction (the document lost its mathematics): an exact match
proves the reconstruction consistent, not that it is the paper's."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from theorylab.attention.scb import SCBTask, line_coordinates, line_point, mu_inner, random_scb_task
from theorylab.attention.scb.dynamics import population_loss_enumerated
from theorylab.attention.scb.stage2 import (
    binomial_mean_tail,
    chebyshev_batch,
    grad_noise_stats,
    kept_support,
    noisy_two_d_escape,
    population_loss,
    preconditioned_grad_samples,
    recursion_first_passage,
    recursion_level,
    recursion_passage_bound,
    round_and_project,
    run_stage2,
    separation_margin,
    separation_threshold,
    simulate_stage2,
    support_gap,
    transfer_first_step,
)
from theorylab.testing import rejects, trivial

# Enumerated expectations: sums of <= 1024 products of O(1) float64 numbers; see checks/test_scb.py.
EXACT_TOL = 1e-12


def _fraction_task(T: int) -> tuple[Fraction, np.ndarray]:
    """A Q [T, 3] of Fractions with supports of sizes 2, 3, 1 and q_min = 1/5."""
    F = Fraction
    Q = np.full((T, 3), F(0), dtype=object)
    Q[0, 0], Q[3, 0] = F(4, 5), F(1, 5)
    Q[1, 1], Q[2, 1], Q[5, 1] = F(1, 2), F(1, 4), F(1, 4)
    Q[4, 2] = F(1)
    return F(1, 5), Q


def _adversarial(Q: np.ndarray, beta: Fraction, d: Fraction) -> np.ndarray:
    """``A(beta) + Delta_A``, ``||Delta_A||_inf = d``, column sums kept: in every column the smallest on-support
    entry drops by d and one off-support entry rises by d (the worst case for a threshold)."""
    T = Q.shape[0]
    A = (1 - beta) * Fraction(1, T) + beta * Q
    for k in range(Q.shape[1]):
        on = [t for t in range(T) if Q[t, k] > 0]
        off = [t for t in range(T) if Q[t, k] == 0]
        A[min(on, key=lambda t: Q[t, k]), k] -= d
        A[off[0], k] += d
    return A


# ------------------------------------------------------------------------------------------------ stage2: E.1, E.2
@pytest.mark.claim("scb.stage2", tier="exact")
def test_lemma_e1_threshold_rule_exact() -> None:
    # Exact rationals: below the margin beta q_min / 2 the threshold keeps exactly supp(Q); at the margin the worst
    # case ties (an off-support entry is kept): the sufficient condition is tight.
    T = 8
    q_min, Q = _fraction_task(T)
    support = np.asarray(Q > 0, dtype=bool)
    for beta in (Fraction(3, 10), Fraction(1), Fraction(7, 5)):
        theta, m = separation_threshold(T, beta, q_min), separation_margin(beta, q_min)
        assert theta == (1 - beta) / 8 + beta / 10 and m == beta / 10
        for d in (Fraction(0), m / 2, m * Fraction(999, 1000)):
            assert np.array_equal(kept_support(_adversarial(Q, beta, d), theta), support)
        assert not np.array_equal(kept_support(_adversarial(Q, beta, m), theta), support)  # the tie at d = m
    # Lemma E.2: rounding then projecting gives every dropped entry of a column the same value (1 - kept sum)/T
    A = (_adversarial(Q, Fraction(3, 10), Fraction(1, 200))).astype(float)
    out = round_and_project(A, float(separation_threshold(T, Fraction(3, 10), q_min)))
    for k in range(3):
        off = out[~support[:, k], k]
        kept_sum = A[support[:, k], k].sum()
        assert np.abs(off - (1 - kept_sum) / T).max() <= EXACT_TOL
        assert np.abs(out[support[:, k], k] - A[support[:, k], k] - (1 - kept_sum) / T).max() <= EXACT_TOL
    assert np.abs(out.sum(axis=0) - 1).max() <= EXACT_TOL


@pytest.mark.claim("scb.stage2", tier="exact", control=True)
def test_lemma_e1_control_wrong_thresholds() -> None:
    # the same verdict (exact support recovery below the margin) rejects a threshold that forgets the factor
    # (1 - beta) of the off-support level, and a margin without the 1/2
    T = 8
    q_min, Q = _fraction_task(T)
    support = np.asarray(Q > 0, dtype=bool)
    beta = Fraction(3, 10)
    m = separation_margin(beta, q_min)
    wrong_theta = Fraction(1, T) + beta * q_min / 2
    d = m - beta / (2 * T)  # inside the correct margin
    assert np.array_equal(
        kept_support(_adversarial(Q, beta, d), separation_threshold(T, beta, q_min)), support
    )
    assert not np.array_equal(kept_support(_adversarial(Q, beta, d), wrong_theta), support)
    d = Fraction(3, 2) * m  # inside a margin beta q_min (no 1/2): no threshold separates
    A = _adversarial(Q, beta, d)
    assert max(A[~support[:, 0], 0]) >= min(A[support[:, 0], 0])  # column 0 (q_min there): off reaches on


@given(
    seed=st.integers(0, 2**32 - 1), T=st.integers(2, 40), beta=st.floats(0.05, 2.0), u=st.floats(0.0, 0.98)
)
@settings(deadline=None)
@pytest.mark.claim("scb.stage2", tier="property")
def test_lemma_e1_threshold_rule_property(seed: int, T: int, beta: float, u: float) -> None:
    rng = np.random.default_rng(seed)
    Qs = int(rng.integers(1, max(1, T // 2) + 1))  # a support of at most half the positions
    task = random_scb_task(rng, 3, T, Qs)
    support = task.Q > 0
    trivial(bool(support.all()))  # nothing off the support: any threshold below q_min works
    q_min = support_gap(task)
    noise = rng.uniform(-1, 1, size=(T, 3))
    noise -= noise.mean(axis=0)
    scale = np.abs(noise).max()
    A = line_point(task, 0.0, beta)[1] + (u * separation_margin(beta, q_min) / scale) * noise
    assert np.array_equal(kept_support(A, separation_threshold(T, beta, q_min)), support)


# ------------------------------------------------------------------------------------------------ stage2: E.9
@pytest.mark.claim("scb.stage2", tier="exact")
def test_lemma_e9_recursion_exact(measure) -> None:
    # extremal sequence x_{t+1} = (1 - a) x_t + b, exact: x_t = b/a + (1 - a)^t (x_0 - b/a)
    a, b, x0 = Fraction(1, 10), Fraction(1, 100), Fraction(10)
    level = recursion_level(a, b)
    assert level == Fraction(1, 5)
    t = recursion_first_passage(a, b, x0)
    # first t with 1/10 + (9/10)^t 99/10 <= 1/5, i.e. (9/10)^t <= 1/99: t = 44
    assert t == 44 and (Fraction(9, 10) ** 43) * 99 > 1 >= (Fraction(9, 10) ** 44) * 99
    bound = recursion_passage_bound(float(a), float(b), float(x0))
    measure("passage_44_vs_bound", [t, bound])
    assert t <= bound and abs(bound - 20 * math.log(50)) <= 1e-12
    x = level  # started at the level it never leaves it
    for _ in range(200):
        x = (1 - a) * x + b
        assert x <= level
    assert recursion_first_passage(a, b, level) == 0
    rejects(lambda: recursion_level(Fraction(0), b), r"Lemma E.9 needs 0 < a <= 1 and b > 0")


@pytest.mark.claim("scb.stage2", tier="exact", control=True)
def test_lemma_e9_control() -> None:
    # a bound without the 1/a (log(a x_0 / 2b)) is violated, and the level b/a (no factor 2) is never reached
    a, b, x0 = Fraction(1, 10), Fraction(1, 100), Fraction(10)
    assert recursion_first_passage(a, b, x0) > math.log(float(a * x0 / (2 * b)))
    x = x0
    for _ in range(1000):
        x = (1 - a) * x + b
    assert x > b / a  # x_t - b/a = (9/10)^t 99/10 > 0 for every t


@given(
    a=st.floats(0.01, 1.0),
    b=st.floats(1e-4, 1.0),
    percent=st.integers(50, 10**6),
    slack=st.lists(st.floats(0.0, 1.0), min_size=1, max_size=8),
)
@settings(deadline=None)
@pytest.mark.claim("scb.stage2", tier="property")
def test_lemma_e9_recursion_property(a: float, b: float, percent: int, slack: list[float]) -> None:
    level = recursion_level(a, b)
    x0 = percent / 100 * level
    trivial(x0 <= level)  # already below the level: only the invariance part is exercised
    s = [b * v for v in slack]  # any x_{t+1} <= (1 - a) x_t + b: a nonnegative slack below the extremal step
    t = recursion_first_passage(a, b, x0, slack=s)
    assert t <= math.ceil(recursion_passage_bound(a, b, x0) - 1e-12)
    x = x0
    for i in range(t + 300):
        if i >= t:
            assert x <= level * (1 + 1e-12)
        x = (1 - a) * x + b - s[i % len(s)]


# ------------------------------------------------------------------------------------------------ stage2: B_2 flat in T
def _strong_task(T: int) -> SCBTask:
    """N = 3, mu uniform (P = 0.9 C + 0.05 I + 0.05 C^2, C the cyclic shift), Q_s <= 2 with q_min = 0.4; the
    supports sit at positions k and T/2 + k, so the instances differ only in T."""
    C = np.roll(np.eye(3), 1, axis=0)
    Q = np.zeros((T, 3))
    for k in range(3):
        Q[k, k], Q[T // 2 + k, k] = 0.6, 0.4
    return SCBTask(0.9 * C + 0.05 * np.eye(3) + 0.05 * C @ C, np.full(3, 1 / 3), Q)


STAGE2_TS = (32, 512, 2048)
STAGE2_STEPS = 300
LAM = (
    0.1  # between the per-step noise 3 sigma / sqrt(B) (B >= 1024) and the on-support signal K_P q_min = 0.19
)


def _stage2_dA2(T: int, B: int, lam: float | None) -> float:
    task = _strong_task(T)
    V, A = simulate_stage2(task, np.random.default_rng(2), B=B, steps=STAGE2_STEPS, lam=lam)
    dA = line_coordinates(task, V, A)[3]
    return mu_inner(dA, dA, task.mu)


@pytest.mark.claim("scb.stage2", tier="property")
def test_stage2_batch_independent_of_T(measure) -> None:
    # App. I's Gaussian-noise simulation (exact expected gradients + N(0, 1/B) per entry, seed 2): at B_2 = 1024
    # the proximal Stage 2 keeps ||Delta_A||_mu^2 below 1e-3 for T = 32 .. 2048 (the l1 step zeroes the noise on
    # the T - Q_s useless entries), while plain SGD at the same batch lets it grow with T
    prox = [_stage2_dA2(T, 1024, LAM) for T in STAGE2_TS]
    sgd = [_stage2_dA2(T, 1024, None) for T in STAGE2_TS]
    measure("dA2_prox_B1024_T32_512_2048", prox)
    measure("dA2_sgd_B1024_T32_512_2048", sgd)
    assert max(prox) <= 1e-3
    assert sgd[-1] >= 100 * sgd[0] and sgd[0] < sgd[1] < sgd[2]


@pytest.mark.claim("scb.stage2", tier="property", control=True)
def test_stage2_control_without_l1(measure) -> None:
    # the same verdict rejects Stage 2 without the l1 weight (plain preconditioned SGD after the same rounding)
    no_l1 = [_stage2_dA2(T, 1024, 0.0) for T in STAGE2_TS]
    measure("dA2_lam0_B1024_T32_512_2048", no_l1)
    assert max(no_l1) > 1e-3


# ------------------------------------------------------------------------------------------------ sec5.1
@pytest.mark.claim("scb.sec5.1", tier="exact")
def test_population_loss_closed_form() -> None:
    # the metric of the experiment: the exact population loss for any (V, A) (Lemma B.4) equals enumeration
    task = random_scb_task(np.random.default_rng(1), 3, 4, 2)
    rng = np.random.default_rng(4)
    for _ in range(4):
        V, A = rng.normal(size=(3, 3)), rng.normal(size=(4, 3))
        assert abs(population_loss(task, V, A) - population_loss_enumerated(task, V, A)) <= EXACT_TOL


@pytest.mark.claim("scb.sec5.1", tier="exact", control=True)
def test_population_loss_control_uncentred() -> None:
    # dropping the centring -mu mu^T of E[X a b^T X^T] (Lemma B.4) breaks the agreement
    task = random_scb_task(np.random.default_rng(1), 3, 4, 2)
    V, A = np.random.default_rng(4).normal(size=(3, 3)), np.random.default_rng(5).normal(size=(4, 3))
    mu = task.mu
    D = np.diag(mu)
    aq, aa = (A * task.Q).sum(0), (A * A).sum(0)
    wrong = 0.5 * sum(
        mu[k]
        * (
            1
            - 2 * aq[k] * np.trace(task.P.T @ V @ D)
            + aa[k] * np.trace(V.T @ V @ D)
            + A[:, k].sum() ** 2 * mu @ V.T @ V @ mu
            - 2 * A[:, k].sum() * mu @ task.P.T @ V @ mu
        )
        for k in range(3)
    )
    assert abs(wrong - population_loss_enumerated(task, V, A)) > 1e-3


SEC51_TS = (32, 512, 2048)
SEC51_BS = (256, 4096)


def _excess_ratio(T: int, B: int, lam: float) -> float:
    """Loss excess of plain SGD over that of the proximal Stage 2 (same noise seed, same steps)."""
    task = _strong_task(T)
    Ls = population_loss(task, task.P, task.Q)
    out = []
    for lm in (None, lam):
        V, A = simulate_stage2(task, np.random.default_rng(2), B=B, steps=STAGE2_STEPS, lam=lm)
        out.append(population_loss(task, V, A) - Ls)
    return out[0] / out[1]


def _gap_grows_with_T_over_B(r: dict[tuple[int, int], float]) -> bool:
    """The verdict of §5.1's shape: at each B the SGD/prox excess ratio rises with T; SGD is not worse at the
    smallest T/B and is at least 5x worse at the largest."""
    rising = all(
        r[(T1, B)] < r[(T2, B)] for B in SEC51_BS for T1, T2 in zip(SEC51_TS[:-1], SEC51_TS[1:], strict=True)
    )
    return rising and r[(SEC51_TS[0], SEC51_BS[-1])] <= 1.0 and r[(SEC51_TS[-1], SEC51_BS[0])] >= 5.0


@pytest.mark.claim("scb.sec5.1", tier="property")
def test_prox_vs_sgd_gap_grows_with_T_over_B(measure) -> None:
    r = {(T, B): _excess_ratio(T, B, LAM) for T in SEC51_TS for B in SEC51_BS}
    measure("sgd_over_prox_excess", {f"T{T}_B{B}": v for (T, B), v in r.items()})
    measure("ratio_T32B4096_T512B256_T2048B256", [r[(32, 4096)], r[(512, 256)], r[(2048, 256)]])
    assert _gap_grows_with_T_over_B(r)


@pytest.mark.claim("scb.sec5.1", tier="property", control=True)
def test_prox_vs_sgd_control_zero_l1() -> None:
    # with lambda = 0 the "proximal" run is SGD after a rounding: the same verdict finds no growing gap
    r = {(T, B): _excess_ratio(T, B, 0.0) for T in SEC51_TS for B in SEC51_BS}
    assert not _gap_grows_with_T_over_B(r)


# ------------------------------------------------------------------------------------------------ lemB9_B13
@pytest.mark.claim("scb.lemB9_B13", tier="exact")
def test_lemma_b9_chebyshev_batch_exact(measure) -> None:
    # Z = a Rademacher sign (sigma^2 = 1): the mean of B = ceil(1/(delta eps^2)) copies misses by >= eps with
    # probability <= delta, computed exactly from the binomial law
    ratios = []
    for delta, eps in (
        (Fraction(1, 10), Fraction(1, 5)),
        (Fraction(1, 20), Fraction(1, 10)),
        (Fraction(1, 4), Fraction(1, 2)),
    ):
        B = chebyshev_batch(1, delta, eps)
        assert B == math.ceil(1 / (delta * eps**2))
        tail = binomial_mean_tail(B, eps)
        ratios.append(float(tail / delta))
        assert tail <= delta
    measure("tail_over_delta", ratios)  # Chebyshev is loose: far below 1
    rejects(lambda: chebyshev_batch(1, 1, Fraction(1, 2)), r"need sigma2 > 0, 0 < delta < 1, eps > 0")
    rejects(
        lambda: chebyshev_batch(0, Fraction(1, 10), Fraction(1, 5)), r"need sigma2 > 0"
    )  # no noise, no batch


@pytest.mark.claim("scb.lemB9_B13", tier="exact", control=True)
def test_lemma_b9_control_without_delta() -> None:
    # B = ceil(sigma^2 / eps^2) (the 1/delta dropped) misses the same guarantee
    for delta, eps in ((Fraction(1, 20), Fraction(1, 10)), (Fraction(1, 10), Fraction(1, 5))):
        assert binomial_mean_tail(math.ceil(1 / eps**2), eps) > delta


def _stochastic(rng: np.random.Generator, rows: int, cols: int) -> np.ndarray:
    return rng.dirichlet(np.ones(rows), size=cols).T


@pytest.mark.claim("scb.lemB9_B13", tier="exact")
def test_lemma_b10_linf_bound_by_enumeration(measure) -> None:
    # every per-sample preconditioned A-gradient, over all contexts and labels, has entries <= 2 / min mu when V and
    # A have probability columns; the largest entry does not grow with T
    rng = np.random.default_rng(6)
    worst = []
    for T in (2, 3, 4, 5):
        task = random_scb_task(np.random.default_rng(T), 3, T, min(2, T))
        V, A = _stochastic(rng, 3, 3), _stochastic(rng, T, 3)
        xs, k, _ = task.contexts()
        n = len(k)
        xs, k = np.repeat(xs, 3, axis=0), np.repeat(k, 3)
        y = np.tile(np.eye(3), (n, 1))
        from theorylab.attention.scb.dynamics import per_sample_grads, precondition

        _, gA = precondition(*per_sample_grads(V, A, xs, k, y), task.mu)
        worst.append(float(np.abs(gA).max() * task.mu.min()))
        assert np.abs(gA).max() <= 2 / task.mu.min() + EXACT_TOL
    measure("max_linf_times_mu_min_T2_to_5", worst)


@pytest.mark.claim("scb.lemB9_B13", tier="exact", control=True)
def test_lemma_b10_control_off_simplex() -> None:
    # the bound needs probability columns: V with large entries (unit column sums, off the simplex) breaks it
    task = random_scb_task(np.random.default_rng(3), 3, 3, 2)
    V = np.array([[6.0, -5.0, 0.0], [-5.0, 6.0, 0.0], [0.0, 0.0, 1.0]])
    A = np.full((3, 3), 1 / 3)
    xs, k, _ = task.contexts()
    from theorylab.attention.scb.dynamics import per_sample_grads, precondition

    _, gA = precondition(*per_sample_grads(V, A, xs, k, np.eye(3)[np.zeros(len(k), dtype=int)]), task.mu)
    assert np.abs(gA).max() > 2 / task.mu.min()


def _noise_at(T: int) -> dict[str, float]:
    task = random_scb_task(np.random.default_rng(1), 3, T, 2)
    V, A = line_point(task, 0.5, 0.3)
    return grad_noise_stats(task, V, A, np.random.default_rng(T), 4000) | {"mu_min": float(task.mu.min())}


@pytest.mark.claim("scb.lemB9_B13", tier="property")
def test_gradient_variance_grows_like_T_while_linf_stays_bounded(measure) -> None:
    # Monte Carlo (4000 samples, seeds T) at (alpha, beta) = (0.5, 0.3), N = 3, Q_s = 2: E||G_A - E G_A||_F^2 / T is
    # the same at T = 64 and 512 (to 5 standard errors), ~0.17; the largest entry stays below 2 / min mu
    lo, hi = _noise_at(64), _noise_at(512)
    measure("var_over_T_T64_T512", [lo["var"] / 64, hi["var"] / 512])
    measure("linf_T64_T512", [lo["linf"], hi["linf"]])
    se = math.hypot(lo["var_se"] / 64, hi["var_se"] / 512)
    assert abs(hi["var"] / 512 - lo["var"] / 64) <= 5 * se
    assert 0.1 <= hi["var"] / 512 <= 0.25
    assert max(lo["linf"], hi["linf"]) <= 2 / lo["mu_min"] and hi["linf"] <= lo["linf"] + 0.1


@pytest.mark.claim("scb.lemB9_B13", tier="property", control=True)
def test_signal_projection_variance_is_flat_control() -> None:
    # the same "grows like T" verdict rejects the variance of the signal projection <G_A, Q_c>_mu / K_Q (the
    # first-order term of Lemma B.12), which stays O(1): only the l2 noise of the whole matrix scales with T
    out = []
    for T in (64, 512):
        task = random_scb_task(np.random.default_rng(1), 3, T, 2)
        V, A = line_point(task, 0.5, 0.3)
        _, gA = preconditioned_grad_samples(task, V, A, np.random.default_rng(T), 4000)
        proj = np.einsum("k,btk,tk->b", task.mu, gA, task.Qc) / task.K_Q
        out.append(float(proj.var(ddof=1)))
    assert out[1] / out[0] < 2  # var / T falls by ~8x from T = 64 to 512: not linear in T


# ------------------------------------------------------------------------------------------------ App. I, Stage 1
ETA = 0.1


def _escape_rate(T: int, B: float) -> float:
    return noisy_two_d_escape(T, B, np.random.default_rng(0), runs=4000, eta=ETA)


@pytest.mark.claim("scb.appI", tier="property")
def test_stage1_batch_scales_as_T_squared(measure) -> None:
    # linearised at (0, 0) the sum u = alpha + beta (K_P = K_Q = 1) follows u+ = (1 + eta) u + eta/T + noise of
    # variance 2 eta^2 / B, so the escape sign is right with probability Phi(sqrt(B (2 + eta) / (2 eta)) / T):
    # at B = T^2 2 eta / (2 + eta) that is Phi(1) = 0.8413 for every T. 4000 runs (seed 0), SE <= 0.006.
    rates = [_escape_rate(T, T * T * 2 * ETA / (2 + ETA)) for T in (32, 128, 512)]
    measure("right_sign_rate_at_B_T2_T32_128_512", rates)
    phi1 = 0.5 * (1 + math.erf(1 / math.sqrt(2)))
    se = math.sqrt(phi1 * (1 - phi1) / 4000)
    assert all(abs(r - phi1) <= 4 * se + 0.005 for r in rates)  # 0.005: the nonlinear terms, O(delta_1 eta)


@pytest.mark.claim("scb.appI", tier="property", control=True)
def test_stage1_batch_control_other_exponents(measure) -> None:
    # the same verdict rejects B_1 ~ T (matched at T = 32) and the heuristic B_1 ~ T^2 / log T
    base = 32 * 32 * 2 * ETA / (2 + ETA)
    lin = _escape_rate(512, base * 512 / 32)
    tlog = _escape_rate(512, base * 512**2 / 32**2 * math.log(32) / math.log(512))
    measure("right_sign_rate_T512_B_linear_and_T2_over_logT", [lin, tlog])
    phi1 = 0.5 * (1 + math.erf(1 / math.sqrt(2)))
    se = math.sqrt(phi1 * (1 - phi1) / 4000)
    assert lin < phi1 - 4 * se - 0.005 and tlog < phi1 - 4 * se - 0.005


# ------------------------------------------------------------------------------------------------ Thm 4.1 (transfer)
def _pretrained() -> np.ndarray:
    """A pretrained V_0: half the downstream P, half uniform (doubly stochastic, mu shared, alpha_0 = 1/2)."""
    C = np.roll(np.eye(3), 1, axis=0)
    return 0.5 * (0.9 * C + 0.05 * np.eye(3) + 0.05 * C @ C) + 0.5 / 3


@pytest.mark.claim("scb.transfer_sim", tier="property")
def test_transfer_batch_flat_in_T(measure) -> None:
    # App. I's noise model, B = 1024 at every stage: one A-step from uniform attention (eta_A = 0.5/(alpha_0 K_P),
    # seed 3), Lemma E.1's rounding, 300 proximal Stage-2 steps (seed 2): the support is recovered and
    # ||Delta_A||_mu^2 <= 1e-3 at T = 32, 512 and 2048; no Stage 1, so no T^2 batch
    out = []
    for T in STAGE2_TS:
        task = _strong_task(T)
        A1, b1 = transfer_first_step(task, _pretrained(), np.random.default_rng(3), B=1024)
        V, A = simulate_stage2(
            task, np.random.default_rng(2), B=1024, steps=STAGE2_STEPS, lam=LAM, start=(_pretrained(), A1, b1)
        )
        _, beta, _, dA = line_coordinates(task, V, A)
        kept = kept_support(A, separation_threshold(T, beta, support_gap(task)))
        out.append((b1, mu_inner(dA, dA, task.mu), bool(np.array_equal(kept, task.Q > 0))))
    measure("beta1_T32_512_2048", [o[0] for o in out])
    measure("dA2_T32_512_2048", [o[1] for o in out])
    assert all(abs(o[0] - 0.5) <= 0.1 and o[1] <= 1e-3 and o[2] for o in out)


@pytest.mark.claim("scb.transfer_sim", tier="property", control=True)
def test_transfer_control_scratch_at_the_same_batch(measure) -> None:
    # from scratch, Stage 1 at the same batch B = 1024 escapes with the right sign only about half the time at
    # T = 2048 (App. I's 2-D map, 4000 runs): the same "works at every T" verdict rejects scratch training
    rate = noisy_two_d_escape(2048, 1024, np.random.default_rng(0), runs=4000, eta=ETA)
    measure("scratch_right_sign_rate_T2048_B1024", rate)
    assert rate < 0.6


# ------------------------------------------------------------------------------------------------ pinned values
@pytest.mark.claim("scb.stage2", tier="exact")
def test_round_and_project_keeps_an_entry_equal_to_the_threshold() -> None:
    # App. E.1 drops entries *below* theta: an entry equal to theta is kept. Dyadic values, so exact in float64:
    # column [1/2, 1/4, 1/8, 1/8] at theta = 1/4 keeps [1/2, 1/4, 0, 0] and adds (1 - 3/4)/4 = 1/16 to each entry
    A = np.array([[0.5, 0.25], [0.25, 0.25], [0.125, 0.25], [0.125, 0.25]])
    out = round_and_project(A, 0.25)
    assert np.array_equal(out[:, 0], [0.5625, 0.3125, 0.0625, 0.0625])
    assert np.array_equal(out[:, 1], A[:, 1])  # every entry equals theta: all kept, nothing to add


@pytest.mark.claim("scb.appI", tier="property")
def test_noiseless_escape_takes_the_map_s_step_count() -> None:
    # sigma = 0 leaves App. I's 2-D map alpha+ = alpha + eta((1 - alpha)/T + beta(1 - alpha beta)),
    # beta+ = beta + eta alpha(1 - alpha beta) (K_P = K_Q = 1) from (0, 0): at T = 4, eta = 0.1 it first reaches
    # max(|alpha|, |beta|) >= 0.9 at step 28 (a drift beta/(1 - alpha beta) would take 23, beta alone 25)
    a = b = 0.0
    n = 0
    while max(abs(a), abs(b)) < 0.9:
        a, b = a + 0.1 * ((1 - a) / 4 + b * (1 - a * b)), b + 0.1 * a * (1 - a * b)
        n += 1
    assert n == 28

    def escape(max_steps: int) -> float:
        rng = np.random.default_rng(0)
        return noisy_two_d_escape(4, 1.0, rng, runs=3, eta=0.1, sigma=0.0, delta1=0.9, max_steps=max_steps)

    assert escape(28) == 1.0
    rejects(lambda: escape(27), r"3 runs did not escape within 27 steps")
    for B in (0.0, -1.0):
        rejects(
            lambda B=B: noisy_two_d_escape(4, B, np.random.default_rng(0), runs=3),
            rf"^need T >= 1, B > 0 and runs >= 1, got T=4, B={B}, runs=3$",
        )


@pytest.mark.claim("scb.stage2", tier="exact")
def test_run_stage2_one_plain_step_is_the_mean_preconditioned_gradient_step() -> None:
    # one plain step (lam=None) of batch B from (V(0.3), A(0.3)) equals V - (eta/K_Q) mean_b G_V^b,
    # A - (eta/K_P) mean_b G_A^b with the per-sample preconditioned gradients of the same B draws (the
    # preconditioner is linear, so mean and preconditioning commute; float64 round-off only)
    task = random_scb_task(np.random.default_rng(1), 3, 4, 2)
    for B in (1, 5):
        res = run_stage2(task, np.random.default_rng(7), B=B, steps=1, eta=0.05)
        V, A = line_point(task, 0.3, 0.3)
        GV, GA = preconditioned_grad_samples(task, V, A, np.random.default_rng(7), B)
        alpha, beta, _, dA = line_coordinates(
            task, V - 0.05 / task.K_Q * GV.mean(axis=0), A - 0.05 / task.K_P * GA.mean(axis=0)
        )
        assert abs(res.alpha - alpha) <= EXACT_TOL and abs(res.beta - beta) <= EXACT_TOL
        assert abs(res.dA_inf - np.abs(dA).max()) <= EXACT_TOL
        assert res.alpha != 0.3  # the step moved
    still = run_stage2(task, np.random.default_rng(7), B=5, steps=0)
    assert abs(still.alpha - 0.3) <= EXACT_TOL and abs(still.beta - 0.3) <= EXACT_TOL
    # rounding at Lemma E.1's threshold keeps exactly supp(Q) on the line (beta = 0.3); at beta = 0 the threshold
    # is infinite, nothing is kept, and the normalised A is 0 (error max Q)
    assert still.support_ok
    flat = run_stage2(task, np.random.default_rng(7), B=5, steps=0, beta0=0.0)
    assert not flat.support_ok and flat.A_norm_err == task.Q.max()
