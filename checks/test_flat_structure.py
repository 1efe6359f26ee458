"""Claim checks of paper 000's regularity assumption and the §F structure results (``000_7523275b422019f8.txt``):
Assumption 3.1 on Theorem 3.3's product toy, Lemma F.3 (the form of the flattest solutions), Lemma F.7 (Bai & Lee's
random-feature coefficient) and the checkable part of Theorem F.6 (random features fit the pre-training task)."""

from __future__ import annotations

from fractions import Fraction
from math import sqrt

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from theorylab.landscape.flat_features import (
    downstream_preactivations,
    lemF7_coefficient,
    lemF7_moments,
    neuron_form,
    pretrain_input_count,
    pretrain_input_count_printed,
    random_feature_solution,
    target_vector,
    thmF6_width,
)
from theorylab.landscape.flat_transfer import DyckTask, OneLayerSolution, attention_features, sol1, sol2
from theorylab.landscape.manifold import ProductLogitToy
from theorylab.landscape.regularity import check_assumption31, hessian_rank, product_toy_hessian
from theorylab.testing import rejects


# ------------------------------------------------------------------------------------------- Assumption 3.1
def _rank(rows: list[list[Fraction]]) -> int:
    """Rank by exact Gaussian elimination over the rationals."""
    A = [r[:] for r in rows]
    rank, col = 0, 0
    while rank < len(A) and col < len(A[0]):
        piv = next((i for i in range(rank, len(A)) if A[i][col] != 0), None)
        if piv is None:
            col += 1
            continue
        A[rank], A[piv] = A[piv], A[rank]
        for i in range(len(A)):
            if i != rank and A[i][col] != 0:
                f = A[i][col] / A[rank][col]
                A[i] = [a - f * b for a, b in zip(A[i], A[rank], strict=True)]
        rank, col = rank + 1, col + 1
    return rank


def _grad_z(point: tuple[Fraction, ...]) -> list[Fraction]:
    out = []
    for i in range(len(point)):
        g = Fraction(1)
        for j, t in enumerate(point):
            if j != i:
                g *= t
        out.append(g)
    return out


# points of Gamma = {prod theta = z*} with rational coordinates: p = 2, 3 factors, z* = 1 and -2
_GAMMA = (
    (1, (Fraction(2), Fraction(1, 2))),
    (1, (Fraction(-3), Fraction(-1, 3))),
    (-2, (Fraction(2), Fraction(-3), Fraction(1, 3))),
    (-2, (Fraction(1, 4), Fraction(8), Fraction(-1))),
)


@pytest.mark.claim("flat.asm3.1", tier="exact")
def test_asm31_product_toy_hessian_rank_is_codimension(measure) -> None:
    # On Gamma the Hessian is sigma'(z*) grad z grad z^T (l'(z*) = sigma(z*) - p* = 0): its rank is that of the
    # rational matrix grad z grad z^T, 1 = M, and grad z != 0 makes Gamma a (p - 1) = (d - M)-dimensional manifold
    # (z* is a regular value of the polynomial z, so Gamma is C^infinity; L is analytic, hence C^3)
    ranks = []
    for z_star, pt in _GAMMA:
        gz = _grad_z(pt)
        assert any(gz) and _rank([[a * b for b in gz] for a in gz]) == 1
        th = np.array([float(t) for t in pt])
        H = product_toy_hessian(float(z_star), th)
        sp1 = ProductLogitToy(float(z_star), len(pt)).sigma_prime
        G = np.outer([float(g) for g in gz], [float(g) for g in gz])
        assert np.abs(H - sp1 * G).max() <= 1e-14 * np.abs(sp1 * G).max()
        ranks += check_assumption31(float(z_star), th[None])
    assert ranks == [1, 1, 1, 1]
    # the library Hessian against central differences of the loss (independent of the closed form)
    toy, th, e = ProductLogitToy(1.0, 2), np.array([2.0, 0.5]), 1e-4
    fd = np.array(
        [
            [
                (
                    toy.loss(th + e * (np.eye(2)[i] + np.eye(2)[j]))
                    - toy.loss(th + e * (np.eye(2)[i] - np.eye(2)[j]))
                    - toy.loss(th - e * (np.eye(2)[i] - np.eye(2)[j]))
                    + toy.loss(th - e * (np.eye(2)[i] + np.eye(2)[j]))
                )
                / (4 * e * e)
                for j in range(2)
            ]
            for i in range(2)
        ]
    )
    assert np.abs(fd - product_toy_hessian(1.0, th)).max() <= 1e-6
    measure("hessian_ranks_on_Gamma", ranks)


def _softmax_rows(z: np.ndarray) -> np.ndarray:
    p = np.exp(z - z.max(axis=1, keepdims=True))
    return p / p.sum(axis=1, keepdims=True)


def _softmax_net_hessian(W1: np.ndarray, W2: np.ndarray) -> np.ndarray:
    """Hessian of the population cross-entropy of logits_j = W2 tanh(W1 e_j) (uniform one-hot contexts j) at a
    saturated point (targets = the model's own conditionals): there it equals the Gauss-Newton matrix
    mean_j J_j^T (diag p_j - p_j p_j^T) J_j, the residual term being sum_c (p - p*)_c Hess(logit_c) = 0. Parameters
    are (vec W1, vec W2), row-major."""
    h, n = W1.shape
    c = W2.shape[0]
    blocks = []
    for j in range(n):
        a = np.tanh(W1[:, j])
        J1 = np.zeros((c, h, n))
        J1[:, :, j] = W2 * (1 - a**2)[None, :]  # d logit_c / d W1[i, j] = W2[c, i] (1 - a_i^2)
        J2 = np.einsum("ck,i->cki", np.eye(c), a)  # d logit_c / d W2[k, i] = delta_ck a_i
        J = np.hstack([J1.reshape(c, -1), J2.reshape(c, -1)])
        z = W2 @ a
        p = np.exp(z - z.max())
        p /= p.sum()
        blocks.append(J.T @ (np.diag(p) - np.outer(p, p)) @ J)
    return np.mean(blocks, axis=0)


@pytest.mark.claim("flat.asm3.1", tier="exact")
def test_asm31_lemma32_model_rank_is_constant_along_gamma(rng, measure) -> None:
    # Lemma 3.2's model (tanh, 5 one-hot contexts, 4 classes, hidden 3: d = 27) at a saturated teacher and at a point
    # of Gamma moved along the softmax shift W2 -> W2 + 1 w^T (it adds w^T tanh(W1 x) to every logit: same f): the
    # Hessian has rank M = n_ctx (c - 1) = 15 (the independent conditional probabilities) at both, with a spectral
    # gap of more than 1e6 between the 15th and 16th eigenvalue (float64 round-off is ~1e-15 of the largest)
    W1, W2 = rng.normal(size=(3, 5)), rng.normal(size=(4, 3))
    P = _softmax_rows((W2 @ np.tanh(W1)).T)  # the teacher's conditionals: saturation

    def loss(theta: np.ndarray) -> float:
        z = (theta[15:].reshape(4, 3) @ np.tanh(theta[:15].reshape(3, 5))).T
        return float(-np.mean(np.sum(P * np.log(_softmax_rows(z)), axis=1)))

    theta, e = np.concatenate([W1.ravel(), W2.ravel()]), 1e-3
    H = _softmax_net_hessian(W1, W2)
    ev, vecs = np.linalg.eigh(H)
    # second differences of the loss along 6 random unit directions and 2 null directions of H: v^T H v (central
    # differences: error O(e^2) ~ 1e-6 of the largest eigenvalue, round-off 1e-16 / e^2 = 1e-10)
    dirs = list(rng.normal(size=(6, 27))) + [vecs[:, 0], vecs[:, 1]]
    for v in dirs:
        v = v / np.linalg.norm(v)
        second = (loss(theta + e * v) - 2 * loss(theta) + loss(theta - e * v)) / e**2
        assert abs(second - v @ H @ v) <= 1e-5 * ev[-1]
    gaps = []
    for w in ([0.0, 0.0, 0.0], [-2.0, 0.5, 1.1]):
        ev = np.linalg.eigvalsh(_softmax_net_hessian(W1, W2 + np.array(w)[None, :]))[::-1]
        assert ev[14] > 1e-6 * ev[0] and np.abs(ev[15:]).max() < 1e-10 * ev[0]
        gaps.append(float(ev[14] / max(np.abs(ev[15:]).max(), 1e-300)))
    measure("min spectral gap at rank 15 (Lemma 3.2 model)", min(gaps))


@pytest.mark.claim("flat.asm3.1", tier="exact", control=True)
def test_asm31_control_z_star_zero_is_not_a_manifold() -> None:
    # z* = 0: Gamma = union of coordinate hyperplanes; where two cross, grad z = 0 and the Hessian vanishes
    for pt in ((0.0, 0.0), (0.0, 0.0, 5.0)):
        assert hessian_rank(product_toy_hessian(0.0, np.array(pt))) == 0
        rejects(lambda pt=pt: check_assumption31(0.0, [pt]), r"Assumption 3.1 fails at point 0")
    assert check_assumption31(0.0, [[0.0, 3.0]]) == [1]  # away from the crossing the rank is still 1
    rejects(lambda: ProductLogitToy(0.0, 2), r"z_star must be finite and non-zero")
    rejects(lambda: check_assumption31(1.0, [[2.0, 2.0]]), r"point 0 is not on Gamma")


# ------------------------------------------------------------------------------------------------ Lemma F.3
def _split(T: int, m_minus: int, m_plus: int, shares_minus, shares_plus, zeros: int = 0) -> OneLayerSolution:
    """A flattest solution: I_- neurons c_i [1; 0], u_i = -c_i / sqrt(T) with sum c_i^2 = m T^{3/2} (likewise I_+
    with -c_i), plus ``zeros`` dead neurons; m = m_minus + m_plus + zeros."""
    m = m_minus + m_plus + zeros
    rows, u = [], []
    for sign, shares in ((1.0, shares_minus), (-1.0, shares_plus)):
        s = np.asarray(shares, float) / np.sum(shares)
        for c in np.sqrt(s * m * T**1.5):
            rows.append(np.concatenate([np.full(T, sign * c), np.zeros(T)]))
            u.append(-sign * c / sqrt(T))
    rows += [np.zeros(2 * T)] * zeros
    u += [0.0] * zeros
    return OneLayerSolution(np.array(rows), np.array(u))


def _mask_pairs(T: int, pairs_minus: int, pairs_plus: int) -> OneLayerSolution:
    """Case 2 of the proof: neuron pairs c [1; +-eps] (eps alternating +-1) that each fire on half of the masked
    inputs with value 2c/T; |u| = 2c/sqrt(T); sum over pairs of 4 c^2 = m T^{3/2} per group."""
    m = 2 * (pairs_minus + pairs_plus)
    eps = np.where(np.arange(T) % 2 == 0, 1.0, -1.0)
    rows, u = [], []
    for sign, pairs in ((1.0, pairs_minus), (-1.0, pairs_plus)):
        c = sqrt(m * T**1.5 / (4 * pairs))
        for _ in range(pairs):
            for e in (eps, -eps):
                rows.append(np.concatenate([np.full(T, sign * c), sign * c * e]))
                u.append(-sign * 2 * c / sqrt(T))
    return OneLayerSolution(np.array(rows), np.array(u))


def _flattest_instances():
    out = [(T, sol1(DyckTask(T), m)) for T in (6, 8) for m in (2, 4)]
    out.append((6, _split(6, 2, 3, (1, 3), (1, 1, 2), zeros=1)))
    out.append((6, _mask_pairs(6, 1, 2)))
    out.append((8, _mask_pairs(8, 2, 1)))
    return out


@pytest.mark.claim("flat.lemF.3", tier="exact")
def test_lemF3_flattest_solutions_have_the_form_and_fire_by_the_sign_of_g(measure) -> None:
    ratios = []
    for T, s in _flattest_instances():
        task = DyckTask(T)
        # the lemma's hypothesis: zero loss and equality in the (corrected) Lemma F.1 bound 4 / (m sqrt T)
        assert s.loss(task) <= 1e-25
        tr = s.trace_zero_loss(task, atol=1e-9)  # Case 2 neurons sit at the kink (pre-activation 0) on 1/4
        assert abs(tr - 4 / (s.m * sqrt(T))) <= 1e-12 * tr
        ratios.append(tr * s.m * sqrt(T) / 4)
        c, pattern = neuron_form(s.V, T)
        live = c != 0
        assert np.array_equal(np.sign(c[live]), -np.sign(s.u[live])) and not np.any(
            s.u[~live]
        )  # I_- has c > 0
        pre, g = downstream_preactivations(s.V, task)
        assert np.abs(pre - np.outer(-g, c) / T).max() <= 1e-12 * np.abs(c).max()  # V_i^T h = -c_i g* / T
        for i in np.flatnonzero(live):
            active = pre[:, i] > 1e-12
            want = g < 0 if s.u[i] < 0 else g > 0  # I_- fires iff g* < 0, I_+ iff g* > 0 (Fact F.2's labels)
            assert np.array_equal(active, want)
            assert np.abs(pre[active, i] - abs(c[i]) * np.abs(g[active]) / T).max() <= 1e-12 * abs(c[i])
        if np.any(pattern):
            assert set(np.unique(pattern[live]).tolist()) == {-1, 1}
    measure("max |trace m sqrt(T) / 4 - 1|", max(abs(r - 1) for r in ratios))


def _mixed_flattest(T: int, plain: list[float], pairs: list[float], eps: np.ndarray, sign: float):
    """One group (sign +1: I_-, -1: I_+) of plain neurons (weights ``plain``) and Case-2 pairs (weights ``pairs``,
    mask patterns +-eps[p]); returns rows, u and the group's sum of c_i^2 + 4 c_p^2 before scaling."""
    rows, u = [], []
    for c in plain:
        rows.append(np.concatenate([np.full(T, sign * c), np.zeros(T)]))
        u.append(-sign * c / sqrt(T))
    for c, e in zip(pairs, eps, strict=True):
        for s in (e, -e):
            rows.append(np.concatenate([np.full(T, sign * c), sign * c * s]))
            u.append(-sign * 2 * c / sqrt(T))
    return rows, u, sum(c * c for c in plain) + sum(4 * c * c for c in pairs)


@given(
    T=st.sampled_from([6, 8]),
    n_plain=st.tuples(st.integers(0, 3), st.integers(0, 3)),
    n_pairs=st.tuples(st.integers(0, 2), st.integers(0, 2)),
    zeros=st.integers(0, 2),
    seed=st.integers(0, 2**32 - 1),
)
@settings(deadline=None, max_examples=25)
@pytest.mark.claim(
    "flat.lemF.3",
    tier="property",
    no_trivial="every draw is a flattest solution with at least one live neuron per group, random weights and mask "
    "patterns; the form and the firing pattern are checked neuron by neuron",
)
def test_lemF3_random_flattest_solutions(T, n_plain, n_pairs, zeros, seed) -> None:
    rng = np.random.default_rng(seed)
    rows, u, m_live = [], [], 0
    groups = []
    for g, sign in enumerate((1.0, -1.0)):
        k_plain, k_pairs = n_plain[g], n_pairs[g]
        if k_plain + k_pairs == 0:
            k_plain = 1
        r, v, total = _mixed_flattest(
            T,
            list(rng.uniform(0.2, 2.0, k_plain)),
            list(rng.uniform(0.2, 2.0, k_pairs)),
            rng.choice([-1.0, 1.0], (k_pairs, T)),
            sign,
        )
        groups.append((r, v, total))
        m_live += len(r)
    m = m_live + zeros
    for r, v, total in groups:  # scale each group so that its sum c^2 + 4 c_p^2 is m T^{3/2} (zero loss)
        k = sqrt(m * T**1.5 / total)
        rows += [row * k for row in r]
        u += [x * k for x in v]
    s = OneLayerSolution(np.array(rows + [np.zeros(2 * T)] * zeros), np.array(u + [0.0] * zeros))
    task = DyckTask(T)
    assert s.loss(task) <= 1e-20
    tr = s.trace_zero_loss(task, atol=1e-9)
    assert abs(tr - 4 / (m * sqrt(T))) <= 1e-10 * tr
    c, _ = neuron_form(s.V, T, atol=1e-9)
    pre, g = downstream_preactivations(s.V, task)
    assert np.abs(pre - np.outer(-g, c) / T).max() <= 1e-9
    for i in np.flatnonzero(c):
        assert np.array_equal(pre[:, i] > 1e-9, g < 0 if s.u[i] < 0 else g > 0)


@pytest.mark.claim("flat.lemF.3", tier="exact", control=True)
def test_lemF3_control_printed_labels_and_a_non_flattest_interpolant() -> None:
    task = DyckTask(6)
    s = sol1(task, 2)
    # printed: i in I_- (u < 0) has V_i^T h = c_i > 0 when g* = 1. On the pre-training inputs (g* = +-1), Sol1's
    # I_- neuron is off on every g* = 1 input (and on on every g* = -1 input): the printed labels are swapped
    X, y = task.pretrain_support()
    pre = attention_features(X) @ s.V.T
    i_minus = int(np.flatnonzero(s.u < 0)[0])
    assert not np.any(pre[y == 1, i_minus] > 0) and np.all(pre[y == -1, i_minus] > 0)
    # an interpolant not of the form (random features, min-norm head) is strictly sharper: not flattest
    rf = sol2(task, 300, np.random.default_rng(0))
    assert rf.loss(task) <= 1e-20 and rf.trace_zero_loss(task) > 2 * 4 / (rf.m * sqrt(6))
    rejects(lambda: neuron_form(rf.V, 6), r"Lemma F.3 form fails at neuron 0")


# ------------------------------------------------------------------------------------------------ Lemma F.7
def _half_normal_moments() -> tuple[Fraction, Fraction]:
    """For X ~ N(0, 1): E[relu(X)^2] = E[X^2] / 2 = 1/2 and E[relu(X)^4] = E[X^4] / 2 = 3/2 (X is symmetric; the
    Gaussian moments E[X^{2k}] = (2k - 1)!!)."""
    return Fraction(1, 2), Fraction(3, 2)


@pytest.mark.claim("flat.lemF.7", tier="exact")
def test_lemF7_coefficient_moments_on_the_pretraining_inputs(measure) -> None:
    # X = v^T h ~ N(0, sx2), Y = v^T w, c = Cov = tau2 h^T w, E[Y | X] = (c / sx2) X, Var[Y | X] = sy2 - c^2 / sx2;
    # a = 2 Y / tau2. With the half-normal moments m2 = 1/2, m4 = 3/2:
    # E[relu(X) a] = (2 / tau2)(c / sx2) sx2 m2,  E[relu(X)^2 a^2] = (4 / tau2^2)((c^2 / sx2^2) sx2^2 m4 + (sy2 - c^2 /
    # sx2) sx2 m2)
    m2, m4 = _half_normal_moments()
    assert (m2, m4) == (Fraction(1, 2), Fraction(3, 2))
    task = DyckTask(6)
    T, tau2 = 6, 6.0
    H = np.unique(attention_features(task.pretrain_support()[0]), axis=0)
    assert len(H) == 240 and np.abs((H**2).sum(axis=1) - 1 / T).max() <= 1e-15  # ||h|| = 1/sqrt(T), not 1/T
    for scale, second in (("printed", 4 * T), ("g", 4 * T**2)):
        w = target_vector(T, scale)
        sx2, sy2, c = tau2 * (H**2).sum(axis=1), tau2 * (w @ w), tau2 * (H @ w)
        mean = 2 / tau2 * (c / sx2) * sx2 * float(m2)
        sq = 4 / tau2**2 * ((c / sx2) ** 2 * sx2**2 * float(m4) + (sy2 - c**2 / sx2) * sx2 * float(m2))
        got = np.array([lemF7_moments(h, w, tau2) for h in H])
        assert np.abs(got[:, 0] - mean).max() <= 1e-12 and np.abs(got[:, 0] - H @ w).max() <= 1e-12
        assert np.abs(got[:, 1] - (sq - mean**2)).max() <= 1e-9 and np.abs(got[:, 2] - second).max() <= 1e-9
    # the printed target -sqrt(T) 1^T h is g*/sqrt(T); -T 1^T h is g* (and its E a^2 = 4 T^2 = O(T^2) as printed)
    X, y = task.pretrain_support()
    Hs = attention_features(X)
    assert np.abs(Hs @ target_vector(T, "printed") - y / sqrt(T)).max() <= 1e-12
    assert np.abs(Hs @ target_vector(T, "g") - y).max() <= 1e-12
    measure("E_a2_printed_target_T6", 4 * T)
    measure("E_a2_g_target_T6", 4 * T**2)


@pytest.mark.claim("flat.lemF.7", tier="exact", control=True)
def test_lemF7_control_coefficient_without_the_factor_two() -> None:
    # a(v) = v^T w / tau2 (forgetting that the ReLU is on half of the time) has mean w^T h / 2: here -1, not -2
    h, w, tau2 = np.array([1.0, 1.0, 0.0, 0.0]) / 2, np.array([-2.0, -2.0, 0.0, 0.0]), 4.0
    assert lemF7_moments(h, w, tau2)[0] == w @ h == -2.0
    assert 0.5 * lemF7_moments(h, w, tau2)[0] == -1.0
    rejects(lambda: lemF7_coefficient(np.ones((2, 4)), w, 0.0), r"tau2 must be > 0")


@pytest.mark.claim("flat.lemF.7", tier="property")
def test_lemF7_monte_carlo(seed) -> None:
    # 2e5 draws v ~ N(0, T I) against the closed forms, 5 standard errors, on three pre-training inputs
    rng = np.random.default_rng(seed)
    T = 6
    H = attention_features(DyckTask(T).pretrain_support()[0])
    w = target_vector(T)
    v = rng.normal(0.0, sqrt(T), (200_000, 2 * T))
    a = lemF7_coefficient(v, w, float(T))
    assert abs(np.mean(a**2) - 4 * T**2) <= 5 * np.std(a**2) / sqrt(a.size)
    for h in H[rng.choice(len(H), 3, replace=False)]:
        prod = np.maximum(v @ h, 0) * a
        se = np.std(prod) / sqrt(prod.size)
        mean, var, _ = lemF7_moments(h, w, float(T))
        assert abs(prod.mean() - mean) <= 5 * se and abs(np.var(prod) - var) <= 0.05 * var
        assert abs(np.mean(np.maximum(v @ h, 0) * a / 2) - mean) > 5 * se  # control: without the factor 2


# ---------------------------------------------------------------------------------------------- Theorem F.6
@pytest.mark.claim("flat.thmF.6", tier="exact")
def test_thmF6_expected_loss_and_width(measure) -> None:
    # E_V L = mean over the 240 inputs of Var[relu(v^T h) a] / m = (2 T^2 + 3) / m; E (1/m)|u|^2 = 4 T^2
    for T in (6, 8):
        task = DyckTask(T)
        X, _ = task.pretrain_support()
        H = attention_features(X)
        w = target_vector(T)
        var = np.mean([lemF7_moments(h, w, float(T))[1] for h in H])
        assert abs(var - (2 * T**2 + 3)) <= 1e-9
        assert len(np.unique(H, axis=0)) == pretrain_input_count(T)
    # the proof's n(h) = (T/2 - 1) binom(T, T/2 + 1) is 30 at T = 6 against 240 distinct inputs (same order
    # Theta(sqrt(T) 2^T), so the printed width keeps its order)
    assert (pretrain_input_count(6), pretrain_input_count_printed(6)) == (240, 30)
    # the printed width 2^T T^3 / eps^2 exceeds the explicit Markov width 2 (2 T^2 + 3) / (eps delta)
    for T, eps, delta in ((6, 0.1, 0.05), (8, 0.5, 0.01), (10, 1.0, 0.1)):
        assert thmF6_width(T, eps, delta) <= 2**T * T**3 / eps**2
    measure("thmF6_width_T6_eps0.1_delta0.05", thmF6_width(6, 0.1, 0.05))
    rejects(lambda: thmF6_width(6, 0.1, 1.0), r"need eps > 0 and 0 < delta < 1")


@pytest.mark.claim("flat.thmF.6", tier="exact", control=True)
def test_thmF6_control_printed_target_scale() -> None:
    # with the printed target -sqrt(T) 1^T h the random features fit g*/sqrt(T): E_V L -> (1 - 1/sqrt T)^2 E g*^2
    # = 0.352 at T = 6, not 0 as m grows
    T = 6
    task = DyckTask(T)
    rng = np.random.default_rng(0)
    V = rng.normal(0.0, sqrt(T), (4000, 2 * T))
    s = OneLayerSolution(V, lemF7_coefficient(V, target_vector(T, "printed"), float(T)))
    assert abs(s.loss(task) - (1 - 1 / sqrt(T)) ** 2) <= 0.05


@pytest.mark.claim("flat.thmF.6", tier="property")
def test_thmF6_random_features_fit_with_the_predicted_loss(seed, measure) -> None:
    rng = np.random.default_rng(seed)
    T = 6
    X, y = DyckTask(T).pretrain_support()
    H = attention_features(X)

    def loss_and_norm(m: int) -> tuple[float, float]:
        V = rng.normal(0.0, sqrt(T), (m, 2 * T))
        u = lemF7_coefficient(V, target_vector(T), float(T))  # Theorem F.6's u_r = a(V_r), no fitting
        return float(np.mean((np.maximum(H @ V.T, 0) @ u / m - y) ** 2)), float(np.mean(u**2))

    means = {}
    for m in (30, 120):
        L = np.array([loss_and_norm(m)[0] for _ in range(300)])
        assert abs(L.mean() - (2 * T**2 + 3) / m) <= 5 * L.std() / sqrt(L.size)
        means[m] = float(L.mean())
    # the theorem with explicit constants: eps = 1, delta = 1/4, m = 600: L <= eps and (1/m)|u|^2 <= 8 T^2 / delta on
    # at least a 1 - delta share of 100 draws
    eps, delta = 1.0, 0.25
    m = thmF6_width(T, eps, delta)
    draws = [loss_and_norm(m) for _ in range(100)]
    ok = sum(L <= eps and n <= 8 * T**2 / delta for L, n in draws)
    assert ok >= 100 * (1 - delta)
    s = random_feature_solution(
        DyckTask(T), 50, rng
    )  # the library's constructor is the same random-feature model
    assert s.u.shape == (50,) and abs(s.loss(DyckTask(T)) - float(np.mean((s.f(H) - y) ** 2))) <= 1e-12
    measure("mean_loss_m30_m120", [means[30], means[120]])
    measure("share_ok_m600", ok / 100)
