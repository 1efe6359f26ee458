"""Claim checks of the mple family: masked pseudolikelihood on exactly enumerated Ising models (Li thesis Ch. 4,
``003_69b23422e33c905a.txt`` §4.1.1-4.1.2, proofs §4.3)."""

from __future__ import annotations

from fractions import Fraction as F

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from theorylab.estimation.pseudolikelihood import (
    C_k,
    H_k,
    MaskLaw,
    asymptotic_covariance,
    fit_kpl,
    fit_population,
    information_matrix,
    k_masks,
    pl_parts,
)
from theorylab.ising import IsingModel, adaptive_block_dynamics, block_dynamics, k_gibbs, state_index
from theorylab.ising import counterexamples as ce
from theorylab.ising.counterexamples import ALL_MASKS, MISSPECIFIED
from theorylab.ising.samplers import block_matrix
from theorylab.markov import FiniteChain
from theorylab.nn.threads import with_threads
from theorylab.strategies.ising import ising_models, mask_laws, random_ising
from theorylab.testing import rejects, trivial

# Tolerances. Matrices here are sums of <= 2^5 * 2^5 products of probabilities and O(1) statistics, so
# round-off is ~1e-15; identities are asserted to 1e-12 (absolute, entries are O(1)) and Loewner/psd statements
# to -1e-10 relative to the largest eigenvalue (inversions of H with condition number <= ~1e3 amplify round-off).
EXACT_TOL = 1e-12
PSD_TOL = 1e-10

#: Tr Gamma^k of the N=4 full pairwise Ising model, h=0 (Figs 4.1-4.2 settings), to 2 decimals.
TRACE_TABLE = {
    (0.0, "unordered"): (28.0, 15.2, 11.33, 10.0),
    (0.05, "unordered"): (28.26, 15.34, 11.45, 10.11),
    (0.05, "ordered"): (29.14, 15.79, 11.82, 10.48),
    (0.3, "unordered"): (43.73, 23.46, 17.82, 16.33),
    (0.3, "ordered"): (188.27, 101.53, 79.04, 75.60),
}


def full_model(J: float, convention: str, N: int = 4) -> IsingModel:
    return IsingModel(np.zeros(N), J * (np.ones((N, N)) - np.eye(N)), convention)


def j0_trace(N: int, k: int) -> float:
    """Closed form at J = 0: N * N/k + C(N,2) / (1 - C(N-2,k)/C(N,k))."""
    from math import comb

    return N * N / k + comb(N, 2) / (1 - comb(N - 2, k) / comb(N, k))


def loewner_decreasing(Gs: list[np.ndarray], tol: float = PSD_TOL) -> bool:
    """Gamma^1 >= Gamma^2 >= ... in the Loewner order (to tol relative to the largest eigenvalue)."""
    for A, B in zip(Gs, Gs[1:], strict=False):
        if np.linalg.eigvalsh(A - B)[0] < -tol * max(1.0, np.linalg.eigvalsh(A)[-1]):
            return False
    return True


def inversion_tol(*Hs: np.ndarray) -> float:
    """Relative round-off of statements about inverses of the H's: inverting H loses ~eps * cond(H) relative
    accuracy (times 100 for the <= 2^5-term sums that build H); never below PSD_TOL. Strongly coupled random models
    reach cond(H) ~ 1e7, where a fixed 1e-10 is below the round-off."""
    return max(PSD_TOL, 100 * np.finfo(float).eps * max(np.linalg.cond(H) for H in Hs))


def strictly_decreasing(Gs: list[np.ndarray], margin: float = 1e-8) -> bool:
    """The printed 'strictly improves': every Gamma^k - Gamma^{k+1} positive definite."""
    return all(np.linalg.eigvalsh(A - B)[0] > margin for A, B in zip(Gs, Gs[1:], strict=False))


def traces_decreasing(traces) -> bool:
    return all(a >= b for a, b in zip(traces, traces[1:], strict=False))


def inv_sqrt(A: np.ndarray) -> np.ndarray:
    w, U = np.linalg.eigh(A)
    return U @ np.diag(w**-0.5) @ U.T


def poincare_ratio(model, masks, weights=None) -> tuple[float, float]:
    """(lambda_min(I^-1/2 H I^-1/2), gap of the block dynamics) for Thm 4.1.2."""
    law = MaskLaw(tuple(masks), np.asarray(weights)) if weights is not None else masks
    H = H_k(model, law)
    R = inv_sqrt(information_matrix(model))
    chain = block_dynamics(model, masks, weights) if not isinstance(masks, int) else k_gibbs(model, masks)
    return float(np.linalg.eigvalsh(R @ H @ R)[0]), chain.spectral_gap()


# --------------------------------------------------------------------------------------------- Lemma 4.1.2
def _torch_hessian_and_score_cov(model: IsingModel, phi: np.ndarray, data: np.ndarray, k: int):
    """Nonlinear parametrisation theta = (a, tanh(b)): the Hessian (autograd) of the exact population k-PL loss
    and E[s s^T] with s = grad_phi log p(x_K | x_-K) (autograd Jacobian), both at phi."""
    import torch

    fam = model.exp_family()
    T = torch.tensor(fam.T)
    N = model.N
    masks = k_masks(N, k)
    px = torch.tensor(data)
    same = [torch.tensor(fam.group_index(K)) for K in masks]
    logG = [torch.where(g[:, None] == g[None, :], 0.0, -torch.inf).double() for g in same]

    def log_conditionals(p):
        theta = torch.cat([p[:N], torch.tanh(p[N:])])
        logit = T @ theta
        return torch.stack([logit - torch.logsumexp(logit[None, :] + lg, dim=1) for lg in logG])  # (M, S)

    def loss(p):
        return -(log_conditionals(p) * px[None, :]).sum() / len(masks)

    p0 = torch.tensor(phi, dtype=torch.float64)
    H = torch.autograd.functional.hessian(loss, p0).numpy()
    J = torch.autograd.functional.jacobian(log_conditionals, p0).numpy()  # (M, S, d)
    w = data / len(masks)
    V = np.einsum("s,msi,msj->ij", w, J, J)
    return H, V


LEM412_CASES = [(3, 1), (4, 2), (4, 4), (5, 3)]


def _tanh_model(phi: np.ndarray, N: int) -> IsingModel:
    return IsingModel.from_natural(np.concatenate([phi[:N], np.tanh(phi[N:])]), N)


def _fd_hessian_and_score_cov(phi: np.ndarray, N: int, data: np.ndarray, k: int, step: float = 1e-3):
    """theta = (a, tanh b): central finite-difference Hessian of the exact population k-PL loss in phi, and
    E[s s^T] with s = grad_phi log p(x_K | x_-K) = D (T - E[T | x_-K]), D = d theta / d phi (diagonal)."""
    fam = _tanh_model(phi, N).exp_family()

    def loss(p):
        return pl_parts((fam, np.concatenate([p[:N], np.tanh(p[N:])])), k, data).loss

    d = phi.size
    H = np.zeros((d, d))
    E = np.eye(d) * step
    for i in range(d):
        for j in range(i, d):
            H[i, j] = H[j, i] = (
                loss(phi + E[i] + E[j])
                - loss(phi + E[i] - E[j])
                - loss(phi - E[i] + E[j])
                + loss(phi - E[i] - E[j])
            ) / (4 * step**2)
    D = np.concatenate([np.ones(N), 1 - np.tanh(phi[N:]) ** 2])
    V = pl_parts((fam, np.concatenate([phi[:N], np.tanh(phi[N:])])), k, data).score_cov
    return H, D[:, None] * V * D[None, :]


# Central differences with step 1e-3: truncation error ~ step^2/6 * |4th derivative| (<= ~30 for tanh-parametrised
# log-partition functions at |phi| <= 1, measured worst 2.5e-6), round-off eps * |L| / step^2 ~ 1e-10; so 1e-5
# separates "equal" from the control's 0.4-size difference.
FD_TOL = 1e-5


@pytest.mark.claim("mple.lem4.1.2", tier="exact")
def test_lem412_hessian_equals_score_covariance_nonlinear(measure):
    rng = np.random.default_rng(412)
    worst = 0.0
    for N, k in LEM412_CASES[:3]:
        phi = rng.uniform(-1, 1, N + N * (N - 1) // 2)
        H, V = _fd_hessian_and_score_cov(phi, N, _tanh_model(phi, N).probs(), k)
        worst = max(worst, np.abs(H - V).max())
        assert np.abs(H - V).max() < FD_TOL, (N, k)
        assert np.linalg.eigvalsh(H)[0] > 0
    measure("max |finite-difference Hessian - E[ss^T]| (tanh parametrisation)", worst)


@pytest.mark.claim("mple.lem4.1.2", tier="exact")
def test_score_covariance_is_the_covariance_of_enumerated_scores():
    # 1-PL off the minimiser (data not from the model): every (x, i) has the score T(x) - E[T | x_-i], the
    # conditional mean over x and its partner with spin i flipped; Cov(s) is taken about the nonzero mean -grad L
    model = random_ising(np.random.default_rng(3), 3, "unordered")
    fam, theta = model.exp_family(), model.natural_parameters()
    data = np.random.default_rng(4).dirichlet(np.ones(2**model.N))
    p, X = fam.probs(theta), model.states()
    scores, weights = [], []
    for x in range(len(X)):
        for i in range(model.N):
            y = next(j for j in range(len(X)) if (X[j] != X[x]).sum() == 1 and X[j][i] != X[x][i])
            scores.append(fam.T[x] - (p[x] * fam.T[x] + p[y] * fam.T[y]) / (p[x] + p[y]))
            weights.append(data[x] / model.N)
    S, W = np.array(scores), np.array(weights)
    mean = W @ S
    parts = pl_parts((fam, theta), 1, data)
    assert np.abs(mean).max() > 1e-3 and np.allclose(parts.grad, -mean, atol=1e-12)
    assert np.allclose(parts.score_cov, (S * W[:, None]).T @ S - np.outer(mean, mean), atol=1e-12)
    # the all-masks estimator's score E_K s(x, K) = (1/N) sum_i s(x, i), and its covariance under the data law
    per_x = S.reshape(len(X), model.N, -1).mean(axis=1)
    m_x = data @ per_x
    assert np.allclose(
        parts.mean_score_cov, (per_x * data[:, None]).T @ per_x - np.outer(m_x, m_x), atol=1e-12
    )
    # an exact data law (Fractions, here eighths) is read as float64: the same parts as its float copy
    eighths = [F(1, 8)] * 8
    exact, floats = pl_parts((fam, theta), 1, eighths), pl_parts((fam, theta), 1, np.full(8, 0.125))
    assert exact.loss == floats.loss and np.array_equal(exact.grad, floats.grad)


@pytest.mark.claim("mple.lem4.1.2", tier="exact", control=True)
def test_lem412_control_misspecified_data_breaks_the_equality(measure):
    rng = np.random.default_rng(413)
    N, k = 4, 2
    phi = rng.uniform(-1, 1, 10)
    data = random_ising(rng, N, "unordered").probs()
    H, V = _fd_hessian_and_score_cov(phi, N, data, k)
    measure("max |Hessian - E[ss^T]| with data != model", np.abs(H - V).max())
    assert np.abs(H - V).max() > 1e-3


@pytest.mark.claim("mple.lem4.1.2", tier="property")
@settings(deadline=None)
@given(model=ising_models(2, 4), data=st.integers(0, 2**32 - 1))
def test_lem412_identity_on_random_models(model, data):
    rng = np.random.default_rng(data)
    k = int(rng.integers(1, model.N))  # k < N: k = N is the likelihood (the exact tier checks H_N = I)
    trivial(k == model.N)  # k = N: the full likelihood, H = V is Fisher's classical identity
    fam, theta = model.exp_family(), model.natural_parameters()
    # autograd Hessian and autograd score Jacobians (independent of the library's formulas)
    phi = np.concatenate([theta[: model.N], np.arctanh(np.clip(theta[model.N :] / 4, -0.99, 0.99))])
    m = IsingModel.from_natural(np.concatenate([phi[: model.N], np.tanh(phi[model.N :])]), model.N)
    H, V = _torch_hessian_and_score_cov(m, phi, m.probs(), k)
    assert np.abs(H - V).max() < 1e-10 * max(1.0, np.abs(H).max())
    # the library's exact exponential-family formulas agree too (H = E[ss^T] in theta coordinates)
    parts = pl_parts((fam, theta), k)
    assert np.abs(parts.hessian - parts.score_cov).max() < 1e-10 * max(1.0, np.abs(parts.hessian).max())


# --------------------------------------------------------------------------------------------- Theorem 4.1.1
@pytest.mark.claim("mple.thm4.1.1", tier="exact")
def test_thm411_increment_identity_and_psd(measure):
    rng = np.random.default_rng(411)
    worst = 0.0
    for N in (3, 4, 5):
        for convention in ("unordered", "ordered"):
            model = random_ising(rng, N, convention, scale=1.0)
            Hs = [H_k(model, k) for k in range(1, N + 1)]
            assert np.abs(Hs[-1] - information_matrix(model)).max() < EXACT_TOL  # H_N = I (k = N is MLE)
            for k in range(1, N):
                C = C_k(model, k)
                worst = max(worst, np.abs(Hs[k - 1] + C - Hs[k]).max())
                assert np.abs(Hs[k - 1] + C - Hs[k]).max() < EXACT_TOL
                assert np.linalg.eigvalsh(C)[0] > -EXACT_TOL
            assert loewner_decreasing([np.linalg.inv(H) for H in Hs])
    measure("max |H_k + C_k - H_{k+1}| (N=3..5)", worst)


@pytest.mark.claim("mple.thm4.1.1", tier="exact")
def test_thm411_reference_traces_figs_41_42(measure):
    for (J, convention), row in TRACE_TABLE.items():
        traces = [float(np.trace(asymptotic_covariance(full_model(J, convention), k))) for k in (1, 2, 3, 4)]
        measure(f"Tr Gamma^k, J={J} {convention}", [round(t, 4) for t in traces])
        assert np.allclose(traces, row, atol=0.005, rtol=0), (J, convention, traces)  # the table's 2 decimals
        assert traces_decreasing(traces)
        if J == 0:
            assert np.allclose(traces, [j0_trace(4, k) for k in (1, 2, 3, 4)], atol=1e-12)


#: Round-off of Gamma^k = H_k^{-1} on the J = 0.3 instance: entries O(10), cond(H) ~ 1e2, so ~1e-15 * 10 * 1e2;
#: the structural zeros of Gamma^3 - Gamma^4 measure <= 1.5e-15, its nonzero singular values >= 0.288.
RANK_ZERO, RANK_NONZERO = 1e-14, 1e-2


def numerical_rank(A: np.ndarray) -> int:
    """Rank with a clean gap: every singular value is either <= RANK_ZERO or >= RANK_NONZERO (else ValueError)."""
    sv = np.linalg.svd(A, compute_uv=False)
    if np.any((sv > RANK_ZERO) & (sv < RANK_NONZERO)):
        raise ValueError(f"no clean rank gap: singular values {sv}")
    return int((sv >= RANK_NONZERO).sum())


@pytest.mark.claim("mple.thm4.1.1", tier="exact")
def test_thm411_last_increment_has_rank_n_and_the_trace_drops(measure):
    # H_N - H_{N-1} = (1/N) sum_i Var(x_i) b_i b_i^T (total covariance; E[T | x_i] is affine in the binary x_i):
    # Gamma^{N-1} - Gamma^N has rank N, so the Loewner order is not strict there, while the trace drops strictly
    inst = ce.thm411_strict()
    model = IsingModel(inst["h"], inst["J"])
    N = int(inst["N"])
    Gs = [asymptotic_covariance(model, k) for k in range(1, N + 1)]
    sv = np.linalg.svd(Gs[2] - Gs[3], compute_uv=False)
    measure("singular values of Gamma^3 - Gamma^4 at J=0.3", [float(f"{v:.3g}") for v in sv])
    assert (sv <= RANK_ZERO).sum() == 6 and (sv >= RANK_NONZERO).sum() == 4  # rank N = 4 of d = 10
    assert numerical_rank(C_k(model, N - 1)) == N
    traces = [float(np.trace(G)) for G in Gs]
    assert round(traces[2], 2) == 17.82 and round(traces[3], 2) == 16.33  # strict in the trace (Remark 4.1.2)
    assert loewner_decreasing(Gs) and not strictly_decreasing(Gs)
    # the rank identity itself: C_{N-1} = (1/N) sum_i Var(x_i) b_i b_i^T, b_i = (E[T | x_i=1] - E[T | x_i=-1]) / 2
    p, T, X = model.probs(), model.exp_family().T, model.states()
    pieces = []
    for i in range(N):
        up = X[:, i] == 1
        m_up, m_dn = (p[up] @ T[up]) / p[up].sum(), (p[~up] @ T[~up]) / p[~up].sum()
        var = 1 - (p[up].sum() - p[~up].sum()) ** 2
        b = (m_up - m_dn) / 2
        pieces.append(var * np.outer(b, b))
    assert np.abs(C_k(model, N - 1) - sum(pieces) / N).max() < EXACT_TOL
    # on random models of both conventions: rank C_{N-1} = N (generic): the N-th singular value is >= 1e-6 of the
    # largest (measured >= 1e-4), the (N+1)-th is round-off (<= 1e-14 relative; measured <= 1e-16)
    rng = np.random.default_rng(26)
    for n in (3, 4, 5):
        for convention in ("unordered", "ordered"):
            sv = np.linalg.svd(C_k(random_ising(rng, n, convention, scale=1.0), n - 1), compute_uv=False)
            assert sv[n - 1] >= 1e-6 * sv[0] and sv[n] <= RANK_ZERO * max(1.0, sv[0]), (n, convention, sv)


@pytest.mark.claim("mple.thm4.1.1", tier="exact", control=True)
def test_thm411_control_conditioning_on_two_spins_has_full_rank():
    # one ingredient changed: k = N-2 (condition on two spins, where E[T | x_i, x_j] has the product term x_i x_j);
    # the same rank verdict finds the full d = 10, so "rank <= N" is not a property of every increment
    model = IsingModel(ce.thm411_strict()["h"], ce.thm411_strict()["J"])
    assert numerical_rank(C_k(model, 2)) == 10 > 4


@pytest.mark.claim("mple.thm4.1.1", tier="exact", control=True)
def test_thm411_control_misspecified_model_violates_monotonicity():
    inst = ce.misspecified()
    data = IsingModel(inst["h"], inst["J"]).probs()
    fam = IsingModel(np.zeros(4), np.zeros((4, 4))).exp_family([tuple(e) for e in inst["model_edges"]])
    Gs = [asymptotic_covariance((fam, np.zeros(fam.d)), k, misspecified_data=data) for k in (1, 2, 3, 4)]
    assert not loewner_decreasing(Gs)
    assert not traces_decreasing([np.trace(G) for G in Gs])


@pytest.mark.claim("mple.thm4.1.1", tier="property")
@settings(deadline=None)
@given(model=ising_models(2, 5))
def test_thm411_loewner_monotone_on_random_models(model):
    trivial(bool(np.all(model.J == 0)))  # product measure: every H_k is diagonal
    Hs = [H_k(model, k) for k in range(1, model.N + 1)]
    for k in range(1, model.N):
        C = C_k(model, k)
        scale = max(1.0, np.abs(Hs[k]).max())
        assert np.abs(Hs[k - 1] + C - Hs[k]).max() < EXACT_TOL * scale
        assert np.linalg.eigvalsh(C)[0] > -EXACT_TOL * scale
    assert loewner_decreasing([np.linalg.inv(H) for H in Hs], tol=inversion_tol(*Hs))


# --------------------------------------------------------------------------- derived: misspecification, all masks
@pytest.mark.claim("mple.derived.misspecified", tier="exact")
def test_misspecified_sandwich_trace_increases(measure):
    inst = ce.misspecified()
    data = IsingModel(inst["h"], inst["J"]).probs()
    fam = IsingModel(np.zeros(4), np.zeros((4, 4))).exp_family([tuple(e) for e in inst["model_edges"]])
    thetas = [fit_population((fam, np.zeros(fam.d)), k, data) for k in (1, 2, 3, 4)]
    traces = [
        np.trace(asymptotic_covariance((fam, np.zeros(fam.d)), k, misspecified_data=data))
        for k in (1, 2, 3, 4)
    ]
    measure("sandwich Tr Gamma^k (chain model, full-Ising data)", [round(float(t), 1) for t in traces])
    assert not traces_decreasing(traces)
    assert traces[1] > 1.3 * traces[0]  # 40,222 vs 29,101
    # derived fact: singleton moment matching makes the MLE a stationary point of (N-1)-PL
    assert np.abs(pl_parts((fam, thetas[3]), 3, data).grad).max() < 1e-9
    assert np.abs(pl_parts((fam, thetas[3]), 2, data).grad).max() > 1e-5  # but not of 2-PL (2.7e-4)


@pytest.mark.claim("mple.derived.misspecified", tier="exact", control=True)
def test_misspecified_control_realizable_sandwich_is_monotone():
    # the same verdict on a realizable fit (data = a chain Ising in the family) finds no increase
    model = IsingModel(MISSPECIFIED["h"], np.diag([0.4, -0.8, 1.1], 1) + np.diag([0.4, -0.8, 1.1], -1))
    fam = model.exp_family([(0, 1), (1, 2), (2, 3)])
    theta = model.natural_parameters([(0, 1), (1, 2), (2, 3)])
    traces = [
        np.trace(asymptotic_covariance((fam, theta), k, misspecified_data=model.probs()))
        for k in (1, 2, 3, 4)
    ]
    assert traces_decreasing(traces)


@pytest.mark.claim("mple.derived.all_masks", tier="exact")
def test_all_masks_estimator_loewner_failure(measure):
    model = IsingModel(ALL_MASKS["h"], ALL_MASKS["J"])
    N = model.N
    G_avg = [asymptotic_covariance(model, k, "all_masks") for k in range(1, N + 1)]
    G_one = [asymptotic_covariance(model, k) for k in range(1, N + 1)]
    rel = np.linalg.eigvalsh(G_avg[0] - G_avg[1])[0] / np.linalg.eigvalsh(G_avg[0])[-1]
    measure("relative lambda_min(Gamma_avg^1 - Gamma_avg^2)", rel)
    assert not loewner_decreasing(G_avg)
    assert rel < -1e-4
    Iinv = np.linalg.inv(information_matrix(model))
    for k in range(N - 2, N + 1):  # pairwise model: MLE-efficient once k >= N - 2
        assert np.abs(G_avg[k - 1] - Iinv).max() < 1e-9 * np.abs(Iinv).max()
    for Ga, Go in zip(G_avg, G_one, strict=True):  # averaging masks never hurts
        assert np.linalg.eigvalsh(Go - Ga)[0] > -PSD_TOL * np.abs(Go).max()


@pytest.mark.claim("mple.derived.all_masks", tier="exact", control=True)
def test_all_masks_control_single_mask_is_monotone_on_the_same_instance():
    model = IsingModel(ALL_MASKS["h"], ALL_MASKS["J"])
    assert loewner_decreasing([asymptotic_covariance(model, k) for k in range(1, model.N + 1)])


@pytest.mark.claim("mple.derived.all_masks", tier="property")
@settings(deadline=None)
@given(model=ising_models(3, 5))
def test_all_masks_bounds_on_random_models(model):
    trivial(bool(np.all(model.J == 0)))  # product measure: every estimator is the MLE
    N = model.N
    info = information_matrix(model)
    Iinv = np.linalg.inv(info)
    for k in range(1, N + 1):
        Ga = asymptotic_covariance(model, k, "all_masks")
        H = H_k(model, k)
        Go = np.linalg.inv(H)
        scale = np.abs(Go).max()
        tol = inversion_tol(H, info)
        assert np.linalg.eigvalsh(Go - Ga)[0] > -tol * scale
        assert np.linalg.eigvalsh(Ga - Iinv)[0] > -tol * scale  # never better than the MLE
        if k >= N - 2:
            assert np.abs(Ga - Iinv).max() < max(1e-9, 10 * tol) * scale


@pytest.mark.claim("mple.derived.all_masks", tier="property")
def test_all_masks_failure_rate(measure):
    """How often the all-masks estimator breaks Loewner monotonicity (seeded random models; N=5 always here)."""
    rng = np.random.default_rng(15)
    rates = {}
    for N in (4, 5):
        fails = 0
        for _ in range(20):
            model = random_ising(rng, N, "unordered")
            fails += not loewner_decreasing(
                [asymptotic_covariance(model, k, "all_masks") for k in range(1, N + 1)]
            )
        rates[N] = fails / 20
    measure("all-masks Loewner failure rate (N=4, N=5; 20 random models each)", [rates[4], rates[5]])
    assert rates[5] > 0  # the failure is not a one-off


# --------------------------------------------------------------------------------------------- Theorem 4.1.2
@pytest.mark.claim("mple.thm4.1.2", tier="exact")
def test_thm412_gap_bound_and_tightness(measure):
    rng = np.random.default_rng(4120)
    ratios = []
    for _ in range(3):
        model = random_ising(rng, 4, "unordered", scale=0.8)
        for k in (1, 2, 3, 4):
            lam, gap = poincare_ratio(model, k)
            assert lam >= gap - PSD_TOL, (k, lam, gap)
            ratios.append(lam / gap)
    measure(
        "min / max lambda_min(I^-1/2 H_k I^-1/2) / gap_k (3 random N=4 models)", [min(ratios), max(ratios)]
    )
    # tight at J = 0, h = 0: both equal k/N
    for k in (1, 2, 3, 4):
        lam, gap = poincare_ratio(full_model(0.0, "unordered"), k)
        assert abs(lam - k / 4) < EXACT_TOL and abs(gap - k / 4) < EXACT_TOL


@pytest.mark.claim("mple.thm4.1.2", tier="exact", control=True)
def test_thm412_control_bound_is_sharp():
    # replacing the gap by 1.01 * gap fails on the tight instance
    lam, gap = poincare_ratio(full_model(0.0, "unordered"), 2)
    assert not lam >= 1.01 * gap - PSD_TOL


@pytest.mark.claim("mple.thm4.1.2", tier="property")
@settings(deadline=None)
@given(model=ising_models(2, 4), law=st.data())
def test_thm412_random_mask_laws(model, law):
    masks, weights = law.draw(mask_laws(model.N))
    trivial(len(masks) == 1 and len(masks[0]) == model.N)  # exact sampling: gap 1
    lam, gap = poincare_ratio(model, masks, weights)
    assert lam >= gap - PSD_TOL * max(1.0, lam)


# ----------------------------------------------------------------------------- adaptive masking (4.3.1, 4.1.1)
def lem431_joint() -> tuple[dict, dict]:
    px = {(0, 0): F(1, 2), (0, 1): F(1, 3), (1, 0): F(1, 6), (1, 1): F(0)}
    pk = {
        (0, 0): (F(1, 2), F(1, 2)),
        (0, 1): (F(1, 3), F(2, 3)),
        (1, 0): (F(1, 4), F(3, 4)),
        (1, 1): (F(1, 2), F(1, 2)),
    }
    return px, pk


def cond_given_mask(px, pk, masked: int, observed_value: int, value: int, weight_index: int | None) -> F:
    """p(x_masked = value | x_other = observed_value [, K]) with the mask weight pk[x][weight_index] (None: no K)."""
    other = 1 - masked

    def weight(x):
        return px[x] * (1 if weight_index is None else pk[x][weight_index])

    states = [x for x in px if x[other] == observed_value]
    num = sum(weight(x) for x in states if x[masked] == value)
    return num / sum(weight(x) for x in states)


@pytest.mark.claim("mple.lem4.3.1", tier="exact")
def test_lem431_conditioning_on_the_mask_matters(measure):
    px, pk = lem431_joint()
    # consistent indexing (mask {i} hides x_i, its weight is pk[x][i])
    assert cond_given_mask(px, pk, 0, 0, 0, 0) == F(6, 7) != cond_given_mask(px, pk, 0, 0, 0, None) == F(3, 4)
    assert (
        cond_given_mask(px, pk, 1, 0, 0, 1) == F(9, 17) != cond_given_mask(px, pk, 1, 0, 0, None) == F(3, 5)
    )
    # the proof's reversed indexing (x_1 hidden, weight of the mask listed first): 9/13 != 3/5
    printed = cond_given_mask(px, pk, 1, 0, 0, 0)
    measure("p(x1=0 | x0=0, K) [proof's indexing] vs p(x1=0 | x0=0)", [str(printed), "3/5"])
    assert printed == F(9, 13)


@pytest.mark.claim("mple.lem4.3.1", tier="exact", control=True)
def test_lem431_control_state_independent_mask_law():
    px, _ = lem431_joint()
    pk = dict.fromkeys(px, (F(1, 3), F(2, 3)))
    for masked in (0, 1):
        assert cond_given_mask(px, pk, masked, 0, 0, masked) == cond_given_mask(px, pk, masked, 0, 0, None)


def adaptive_dirichlet_formula(model, masks, W, f, g) -> float:
    """E_{(X,K)} Cov(f, g | X_-K, K) (the Dirichlet form of Prop 4.1.1)."""
    fam = model.exp_family([])
    p = model.probs()
    total = 0.0
    for m, K in enumerate(masks):
        w = p * W[:, m]
        inv = fam.group_index(K)
        mass = np.bincount(inv, weights=w)  # P(X_-K = group, K)
        safe = np.where(mass > 0, mass, 1)
        ef = np.bincount(inv, weights=w * f) / safe
        eg = np.bincount(inv, weights=w * g) / safe
        efg = np.bincount(inv, weights=w * f * g) / safe
        total += float((mass * (efg - ef * eg)).sum())
    return total


@pytest.mark.claim("mple.prop4.1.1", tier="exact")
def test_prop411_printed_chain_is_reducible_x_chain_is_not():
    inst = ce.prop411_reducible()
    printed = FiniteChain(inst["P"])
    assert not printed.is_irreducible()
    with pytest.raises(ValueError, match="irreducible"):
        printed.spectral_gap()
    model = IsingModel(inst["h"], inst["J"])
    W = np.tile([0.5, 0.5], (4, 1))
    W[1] = [0.2, 0.8]
    x_chain = adaptive_block_dynamics(model, [(0,), (1,)], W)
    assert x_chain.is_irreducible() and x_chain.is_reversible()
    assert np.abs(x_chain.stationary() - model.probs()).max() < EXACT_TOL
    assert x_chain.spectral_gap() > 0


@pytest.mark.claim("mple.prop4.1.1", tier="exact", control=True)
def test_prop411_control_state_dependent_mask_without_the_k_factor_is_not_reversible():
    # dropping p_K(K | y) from the X-chain's conditional (a wrong adaptive dynamics) breaks stationarity of p
    model = IsingModel(np.array([0.3, -0.2]), np.array([[0, 0.7], [0.7, 0]]))
    W = np.tile([0.5, 0.5], (4, 1))
    W[1] = [0.2, 0.8]
    right = adaptive_block_dynamics(model, [(0,), (1,)], W)
    wrong = sum(W[:, m][:, None] * block_matrix(model, K) for m, K in enumerate([(0,), (1,)]))
    assert np.abs(model.probs() @ right.P - model.probs()).max() < EXACT_TOL
    assert np.abs(model.probs() @ wrong - model.probs()).max() > 1e-3


@pytest.mark.claim("mple.prop4.1.1", tier="property")
@settings(deadline=None)
@given(model=ising_models(2, 3), law=st.data(), seed=st.integers(0, 2**32 - 1))
def test_prop411_thm413_adaptive_x_chain(model, law, seed):
    masks, W = law.draw(mask_laws(model.N, adaptive=True))
    trivial(len(masks) == 1 and len(masks[0]) == model.N)  # exact sampling: gap 1
    chain = adaptive_block_dynamics(model, masks, W)
    p = model.probs()
    assert np.abs(chain.stationary() - p).max() < 1e-10
    assert chain.is_reversible()
    rng = np.random.default_rng(seed)
    f, g = rng.standard_normal((2, p.size))
    assert abs(chain.dirichlet_form(f, g) - adaptive_dirichlet_formula(model, masks, W, f, g)) < 1e-10
    # Thm 4.1.3: Gamma_ad <= I^-1 / gap, i.e. lambda_min(I^-1/2 H_ad I^-1/2) >= gap
    H = H_k(model, MaskLaw(tuple(tuple(K) for K in masks), W))
    R = inv_sqrt(information_matrix(model))
    assert np.linalg.eigvalsh(R @ H @ R)[0] >= chain.spectral_gap() - 1e-9


# --------------------------------------------------------------------------------------------- Prop 4.3.6
@pytest.mark.claim("mple.prop4.3.6", tier="property")
@settings(deadline=None)
@given(model=ising_models(2, 4), seed=st.integers(0, 2**32 - 1))
def test_prop436_pl_is_convex_for_any_data(model, seed):
    trivial(bool(np.all(model.J == 0)))  # product measure: PL is the likelihood
    rng = np.random.default_rng(seed)
    data = rng.dirichlet(np.ones(2**model.N))
    k = int(rng.integers(1, model.N + 1))
    fam, theta = model.exp_family(), model.natural_parameters()
    H = H_k((fam, theta), k, data)
    assert np.linalg.eigvalsh(H)[0] > -PSD_TOL * max(1.0, np.abs(H).max())
    other = theta + rng.standard_normal(theta.size)
    mid = pl_parts((fam, (theta + other) / 2), k, data).loss
    ends = (pl_parts((fam, theta), k, data).loss + pl_parts((fam, other), k, data).loss) / 2
    assert mid <= ends + 1e-12


@pytest.mark.claim("mple.prop4.3.6", tier="property", control=True)
def test_prop436_control_nonlinear_parametrisation_is_not_convex():
    # theta = (a, tanh b): the PL loss in (a, b) has a negative Hessian eigenvalue far from the optimum
    data = IsingModel(np.zeros(2), np.array([[0, -2.0], [-2.0, 0]])).probs()
    fam = IsingModel(np.zeros(2), np.zeros((2, 2))).exp_family()
    phi = np.array([0.0, 0.0, 1.5])
    theta = np.concatenate([phi[:2], np.tanh(phi[2:])])
    parts = pl_parts((fam, theta), 1, data)
    D = np.diag(np.concatenate([np.ones(2), 1 - np.tanh(phi[2:]) ** 2]))
    second = np.concatenate([np.zeros(2), -2 * np.tanh(phi[2:]) * (1 - np.tanh(phi[2:]) ** 2)])
    H_phi = D @ parts.hessian @ D + np.diag(parts.grad * second)
    assert np.linalg.eigvalsh(H_phi)[0] < -1e-3


# --------------------------------------------------------------------------------------------- Cor 4.3.1
def cor431_epsilon_is_consistent(eps, N, q, m, delta) -> bool:
    """epsilon must make Lemma 4.3.5's Chebyshev failure 2^{N-2} q^N / (eps^2 m) equal delta/2 and its deviation
    2^N eps equal the stated sqrt(2^{3N-1} q^N / (m delta))."""
    import sympy as sp

    fail = 2 ** (N - 2) * q**N / (eps**2 * m)
    dev = 2**N * eps
    stated = sp.sqrt(2 ** (3 * N - 1) * q**N / (m * delta))
    return sp.simplify(fail - delta / 2) == 0 and sp.simplify(dev - stated) == 0


@pytest.mark.claim("mple.cor4.3.1", tier="exact")
def test_cor431_corrected_epsilon():
    import sympy as sp

    N, q, m, delta = sp.symbols("N q m delta", positive=True)
    corrected = sp.sqrt(2 ** (N - 1) * q**N / (m * delta))
    assert cor431_epsilon_is_consistent(corrected, N, q, m, delta)
    inst = ce.cor431()
    assert float(inst["eps_printed"] / inst["eps_corrected"]) == pytest.approx(
        2.0 ** int(inst["N"]), rel=1e-12
    )


@pytest.mark.claim("mple.cor4.3.1", tier="exact", control=True)
def test_cor431_control_printed_epsilon_fails():
    import sympy as sp

    N, q, m, delta = sp.symbols("N q m delta", positive=True)
    printed = sp.sqrt(2 ** (3 * N - 1) * q**N / (m * delta))
    assert not cor431_epsilon_is_consistent(printed, N, q, m, delta)


# ------------------------------------------------------------------ the k-PL estimator on samples (Def 4.1.2)
FIT_MODEL = IsingModel(np.array([0.3, -0.2, 0.1]), np.array([[0, 0.5, -0.4], [0.5, 0, 0.2], [-0.4, 0.2, 0]]))
#: fit_kpl stops at |grad|_max < 1e-11 (Newton) or 1e-9 (gd); the first-order conditions below are evaluated
#: independently (per sample, with IsingModel.conditional), so they agree with 0 to 1e-9 plus round-off.
FIT_TOL = 1e-8


def _single_mask_gradient(theta, X, masks, idx) -> np.ndarray:
    """(1/n) sum_i [T(x_i) - E_theta[T | x_{i,-K_i}]]: the gradient of the empirical single-mask k-PL loss, from the
    model's own conditional law of x_K given x_-K (one small enumeration per sample)."""
    model = IsingModel.from_natural(theta, X.shape[1])
    T = model.sufficient_statistics()
    g = np.zeros(T.shape[1])
    for x, i in zip(X, idx, strict=True):
        K = list(masks[i])
        sub, p = model.conditional(K, x)
        Y = np.repeat(x[None], len(sub), axis=0)
        Y[:, K] = sub
        g += T[state_index(x)] - p @ T[state_index(Y)]
    return g / len(X)


@pytest.mark.claim("mple.prop4.3.6", tier="property")
def test_fit_kpl_solves_the_empirical_first_order_conditions():
    # the empirical k-PL loss is convex (Prop 4.3.6), so its minimiser is the zero of its gradient: for k = N the
    # MLE matches moments (E_theta T = mean of T over the samples); for k = 1 the per-sample conditional scores
    # average to 0. One state is left out of the sample (its mask weights are unused) and no warning is allowed.
    import warnings

    X = FIT_MODEL.sample(200, np.random.default_rng(0))
    X = X[state_index(X) != 5]
    assert len(np.unique(state_index(X))) == 7
    T = FIT_MODEL.sufficient_statistics()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for method in ("newton", "gd"):
            theta = fit_kpl(X, 3, method=method)
            moments = IsingModel.from_natural(theta, 3).probs() @ T
            assert np.abs(moments - T[state_index(X)].mean(axis=0)).max() <= FIT_TOL, method
            idx = np.arange(len(X)) % 3  # masks {0}, {1}, {2} in turn
            theta1 = fit_kpl(X, 1, masks_per_sample=idx, method=method)
            assert np.abs(_single_mask_gradient(theta1, X, k_masks(3, 1), idx)).max() <= FIT_TOL, method
            assert np.abs(theta1 - theta).max() > 1e-2  # k-PL is not the MLE on a finite sample
        # the default: one uniform random mask per sample, drawn from the seed
        idx = np.random.default_rng(7).integers(3, size=len(X))
        assert np.array_equal(fit_kpl(X, 2, seed=7), fit_kpl(X, 2, masks_per_sample=idx))


@pytest.mark.claim("mple.lem4.1.2", tier="exact")
def test_zero_probability_masks_and_default_weights_change_nothing():
    # a mask law is a law: a mask of probability 0 (first in the list) contributes nothing, and a list of masks
    # without weights is the uniform law on it (k-PL is the uniform law on the k-subsets)
    model, data = FIT_MODEL, np.random.default_rng(5).dirichlet(np.ones(8))
    with_zero = pl_parts(model, MaskLaw(((0,), (1,), (0, 2)), np.array([0.0, 0.5, 0.5])), data)
    without = pl_parts(model, MaskLaw(((1,), (0, 2)), np.array([0.5, 0.5])), data)
    for name in ("loss", "grad", "hessian", "score_cov", "mean_score_cov"):
        assert np.abs(np.asarray(getattr(with_zero, name)) - getattr(without, name)).max() <= EXACT_TOL, name
    assert np.abs(H_k(model, k_masks(3, 2)) - H_k(model, 2)).max() <= EXACT_TOL
    # a state-independent law given to the adaptive dynamics is the weighted block dynamics
    masks, w = [(0,), (1, 2), (0, 1, 2)], np.array([0.25, 0.5, 0.25])
    assert (
        np.abs(adaptive_block_dynamics(model, masks, w).P - block_dynamics(model, masks, w).P).max()
        <= EXACT_TOL
    )


@pytest.mark.claim("mple.lem4.1.2", tier="exact")
def test_models_mask_laws_and_data_are_defined_on_their_domain():
    # the boundary instances are accepted, what lies just outside is rejected with a message naming the problem
    J = np.array([[0, 0.5], [0.5, 0]])
    assert IsingModel(np.zeros(2), J + 1e-13 * np.array([[0, 1], [0, 0]])).N == 2  # symmetric to 1e-12
    rejects(
        lambda: IsingModel(np.zeros(0), np.zeros((0, 0))), r"h must be a nonempty vector, got shape \(0,\)"
    )
    rejects(lambda: IsingModel(np.zeros(2), np.zeros((2, 3))), r"J must have shape \(2, 2\), got \(2, 3\)")
    rejects(lambda: IsingModel(np.array([0, np.inf]), J), r"h and J must be finite")
    rejects(lambda: IsingModel(np.zeros(2), J + np.array([[0, 1e-11], [0, 0]])), r"J must be symmetric")
    rejects(lambda: IsingModel(np.zeros(2), J + np.eye(2)), r"J must have a zero diagonal \(x_i\^2 = 1 is a")
    chain3 = IsingModel(np.zeros(3), np.array([[0, 0.5, 0], [0.5, 0, 0.2], [0, 0.2, 0]]))
    assert chain3.natural_parameters([(0, 1), (2, 1)]).tolist() == [0, 0, 0, 0.5, 0.2]
    rejects(lambda: chain3.natural_parameters([(0, 1)]), r"J has couplings outside the given edges")
    # the conditional law of one spin is p(x_i = +1 | x_-i) = sigma(2 f_i(x)) with the local field f = h + J_eff x
    x = np.array([1, -1, -1])
    for i in range(3):
        sub, cond = FIT_MODEL.conditional([i], x)
        assert sub[:, 0].tolist() == [-1, 1]
        assert abs(cond[1] - 1 / (1 + np.exp(-2 * FIT_MODEL.local_fields(x)[i]))) <= EXACT_TOL
    # mask laws
    rejects(lambda: pl_parts(FIT_MODEL, []), r"the mask law needs at least one mask")
    rejects(
        lambda: pl_parts(FIT_MODEL, [(0, 3)]),
        r"mask \(0, 3\) must be a nonempty set of coordinates in 0\.\.2",
    )
    rejects(
        lambda: block_dynamics(FIT_MODEL, [(0,), (1, 2)], [0.5, 0.25, 0.25]),
        r"weights must have shape \(M,\) or \(S, M\) with M = 2, got \(3,\)",
    )
    rejects(
        lambda: block_dynamics(FIT_MODEL, [(0,), (1, 2)], [0.5, 0.6]), r"mask weights must be probabilities"
    )
    rejects(
        lambda: block_dynamics(FIT_MODEL, [(0,), (1,), (2,)], [0.5, 0.5, 0.0]),
        r"the masks in the support must cover all coordinates; missing \[2\]",
    )
    # data laws: sums within 1e-10 of 1 are accepted
    p = FIT_MODEL.probs()
    assert pl_parts(FIT_MODEL, 1, p * (1 + 5e-11)).loss > 0
    assert pl_parts(FIT_MODEL, 1, np.eye(8)[3]).loss > 0  # a point mass (zero entries) is a data law
    rejects(
        lambda: pl_parts(FIT_MODEL, 1, p[:4]), r"the data law must be a probability vector over the 8 states"
    )
    rejects(lambda: pl_parts(FIT_MODEL, 1, p * (1 + 1e-6)), r"the data law must be nonnegative and sum to 1")
    rejects(lambda: pl_parts(np.eye(2), 1), r"model must be an IsingModel or a pair", TypeError)
    fam = FIT_MODEL.exp_family()
    rejects(lambda: pl_parts((fam, np.zeros(5)), 1), r"theta must have shape \(6,\), got \(5,\)")
    # C_k is the increment H_{k+1} - H_k for 1 <= k < N; the estimators are named; Newton reports non-convergence
    assert np.abs(C_k(FIT_MODEL, 1) - (H_k(FIT_MODEL, 2) - H_k(FIT_MODEL, 1))).max() <= EXACT_TOL
    assert np.abs(C_k(FIT_MODEL, 2) - (H_k(FIT_MODEL, 3) - H_k(FIT_MODEL, 2))).max() <= EXACT_TOL
    for k in (0, 3):
        rejects(lambda k=k: C_k(FIT_MODEL, k), rf"C_k needs 1 <= k < N = 3, got {k}")
    rejects(
        lambda: asymptotic_covariance(FIT_MODEL, 1, "one_mask"),
        r"estimator must be one of \('single_mask', 'all_masks'\), got 'one_mask'",
    )
    theta = FIT_MODEL.natural_parameters()
    assert np.array_equal(fit_population(FIT_MODEL, 1, p, max_iter=0), theta)  # realizable: theta* = theta
    rejects(
        lambda: fit_population(FIT_MODEL, 1, p[::-1], max_iter=1), r"Newton did not converge", RuntimeError
    )
    # samples
    X = FIT_MODEL.sample(10, np.random.default_rng(0))
    rejects(lambda: fit_kpl(X[0], 1), r"samples must have shape \(n, N\), got \(3,\)")
    rejects(lambda: fit_kpl((X + 1) // 2, 1), r"samples must be ±1 spins")
    rejects(lambda: fit_kpl(X, 1, method="lbfgs"), r"method must be 'newton' or 'gd', got 'lbfgs'")


@pytest.mark.claim("mple.thm4.1.2", tier="exact")
def test_chains_are_defined_on_their_domain_and_the_dirichlet_form_is_symmetric():
    # row sums are accepted within STOCHASTIC_TOL * n (n = 4: 4e-10) and rejected beyond
    P = np.array([[0.5, 0.25, 0.125, 0.125], [0.25, 0.5, 0.125, 0.125], [0.125, 0.125, 0.5, 0.25]] * 1)
    P = np.vstack([P, [0.125, 0.125, 0.25, 0.5]])  # symmetric, doubly stochastic, dyadic: pi uniform, exact
    chain = FiniteChain(P)
    assert chain.is_reversible(
        tol=0.0
    )  # detailed balance holds exactly (pi(x)P(x,y) = pi(y)P(y,x) in binary)
    off = np.zeros((4, 4))
    off[0, 0] = 3e-10
    assert FiniteChain(P + off).n == 4
    rejects(lambda: FiniteChain(P + 2 * off), r"rows of P must sum to 1; row 0 sums to")
    rejects(
        lambda: FiniteChain("P"), r"P must be a square array of transition probabilities, got str", TypeError
    )
    rejects(lambda: FiniteChain(P[:3]), r"P must be a non-empty square matrix, got shape \(3, 4\)")
    skew = np.array(
        [[0.0, 1.0, 0.0], [0.0, 0.0, 1.0], [1.0, 0.0, 0.0]]
    )  # a cycle: irreducible, not reversible
    assert not FiniteChain(skew).is_reversible()
    rejects(lambda: FiniteChain(skew).spectral_gap(), r"spectral_gap\(\) needs a reversible chain \(detailed")
    # the Dirichlet form with g omitted is E(f, f) = <f, (I - P) f>_pi (P reversible)
    f = np.array([1.0, -2.0, 0.5, 3.0])
    assert chain.dirichlet_form(f) == chain.dirichlet_form(f, f)
    assert abs(chain.dirichlet_form(f) - f @ (f - P @ f) / 4) <= EXACT_TOL


# ------------------------------------------------------------------------------ trained: Figs 4.1-4.2 by GD
def _kpl_gd(counts: np.ndarray, fam, masks, steps: int, lr: float) -> tuple[np.ndarray, float]:
    """Full-batch gradient descent on the empirical single-mask k-PL losses of R data sets at once.

    counts: (R, S, M) frequencies of (state, mask) pairs. Returns (theta (R, d), max final gradient)."""
    import torch

    T = torch.tensor(fam.T)
    logG = torch.stack(
        [
            torch.where(
                torch.tensor(fam.group_index(K))[:, None] == torch.tensor(fam.group_index(K))[None, :],
                0.0,
                -torch.inf,
            )
            for K in masks
        ]
    ).double()  # (M, S, S)
    c = torch.tensor(counts)
    theta = torch.zeros(counts.shape[0], fam.d, dtype=torch.float64, requires_grad=True)
    opt = torch.optim.SGD([theta], lr=lr)

    def loss_fn():
        logit = theta @ T.T  # (R, S)
        lse = torch.logsumexp(logit[:, None, None, :] + logG[None], dim=-1)  # (R, M, S)
        logcond = logit[:, None, :] - lse
        return -(logcond.transpose(1, 2) * c).sum()

    for _ in range(steps):
        opt.zero_grad()
        loss = loss_fn()
        loss.backward()
        opt.step()
    opt.zero_grad()
    loss_fn().backward()
    return theta.detach().numpy(), float(theta.grad.abs().max())


FIG41 = {
    "small": {"settings": [(0.05, "unordered")], "n": 10_000, "reps": 20},
    "full": {"settings": list(TRACE_TABLE)[1:], "n": 100_000, "reps": 100},
}


@pytest.mark.claim("mple.fig4.1", tier="trained")
@with_threads(1)  # small steps: one thread, the caller's count given back afterwards
def test_fig41_kpl_by_gradient_descent(scale, measure, figure):

    spec = FIG41[scale]
    n, R = spec["n"], spec["reps"]
    for J, convention in spec["settings"]:
        model = full_model(J, convention)
        fam, theta_star = model.exp_family(), model.natural_parameters()
        predicted = [float(np.trace(asymptotic_covariance(model, k))) for k in (1, 2, 3, 4)]
        rng = np.random.default_rng(41)
        state_counts = rng.multinomial(n, model.probs(), size=R)  # (R, S), shared by all k
        nmse, zero = [], float(n * theta_star @ theta_star)
        for k in (1, 2, 3, 4):
            masks = k_masks(4, k)
            counts = np.stack(
                [
                    [rng.multinomial(c, np.full(len(masks), 1 / len(masks))) for c in row]
                    for row in state_counts
                ]
            )
            # step 1/lambda_max(I) (H_k <= I), enough steps for the condition number of H_k (exact, at theta*)
            lam_max = np.linalg.eigvalsh(information_matrix(model))[-1]
            cond = lam_max / np.linalg.eigvalsh(H_k(model, k))[0]
            theta, grad = _kpl_gd(counts / n, fam, masks, steps=max(200, int(40 * cond)), lr=1 / lam_max)
            # converged: parameter error <= grad / lambda_min(H) ~ 4e-6, negligible against sqrt(Tr Gamma / n) ~ 0.03
            assert grad < 1e-6, grad
            nmse.append(float(n * ((theta - theta_star) ** 2).sum(axis=1).mean()))
        measure(f"n*MSE J={J} {convention} (n={n}, {R} reps)", [round(v, 2) for v in nmse])
        measure(f"predicted Tr Gamma^k J={J} {convention}", [round(v, 2) for v in predicted])
        assert fig41_verdict(nmse, predicted), (nmse, predicted)
        # beats the trivial baseline, the untrained estimator theta = 0 (n * |theta*|^2 = 150 at J = 0.05)
        measure(f"n*MSE of theta = 0, J={J} {convention}", zero)
        assert all(v < 0.5 * zero for v in nmse)
        if J == 0.05:
            import matplotlib

            matplotlib.use("Agg")
            import matplotlib.pyplot as plt

            fig, ax = plt.subplots(figsize=(4, 3))
            ax.plot([1, 2, 3, 4], predicted, "o-", label="Tr $\\Gamma^k$ (exact)")
            ax.plot([1, 2, 3, 4], nmse, "s--", label=f"n·MSE, GD (n={n}, {R} reps)")
            ax.set_xlabel("k (masked tokens)")
            ax.set_ylabel("asymptotic variance")
            ax.legend()
            figure(fig, f"trace_gamma_k_J{J}_{convention}")
            plt.close(fig)


def fig41_verdict(nmse, predicted, rel: float = 0.25) -> bool:
    """k=1 worse than k=4 and n*MSE within 25% of Tr Gamma^k for every k (a 20-rep mean of a ~chi^2_10-like
    quantity has relative sd ~0.1, so 25% is ~2.5 sd)."""
    close = all(abs(a - b) <= rel * b for a, b in zip(nmse, predicted, strict=True))
    return close and nmse[0] > nmse[-1]


@pytest.mark.claim("mple.fig4.1", tier="trained", control=True)
def test_fig41_control_mle_prediction_is_rejected():
    # the same verdict, fed the MLE variance Tr I^-1 as the prediction for every k, rejects the k-PL errors
    model = full_model(0.05, "unordered")
    mle = float(np.trace(np.linalg.inv(information_matrix(model))))
    kpl = [float(np.trace(asymptotic_covariance(model, k))) for k in (1, 2, 3, 4)]
    assert not fig41_verdict(kpl, [mle] * 4)
    assert fig41_verdict(kpl, kpl)
