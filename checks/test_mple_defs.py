"""Claim checks of the definitions of Li thesis §4.1.1-4.1.3 (``003_69b23422e33c905a.txt``) and of the adaptive-mask
lemmas of §4.3.3: the library's MLE and Fisher information (Def 4.1.1), (weighted, k-, adaptive) pseudolikelihood
losses (Defs 4.1.2, 4.1.3, 4.1.7), Dirichlet form, Poincare constant and (adaptive) block dynamics (Defs 4.1.4-4.1.6,
4.1.8), the approximate-tensorization functional (Def 4.1.9), Lemma 4.3.2 and Lemma 4.3.3, each compared with a
from-scratch brute force of the printed formula (explicit loops over states, masks and coordinates) on Ising models
with N <= 4."""

from __future__ import annotations

from fractions import Fraction as F
from itertools import combinations, product
from math import comb, log

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from theorylab.estimation.pseudolikelihood import fit_population, information_matrix, mask_law, pl_parts
from theorylab.ising import IsingModel, adaptive_block_dynamics, block_dynamics
from theorylab.ising.finite_sample import kl, pl_kl_loss, tensorization_ratio
from theorylab.markov import FiniteChain
from theorylab.strategies.ising import ising_models, random_ising
from theorylab.testing import rejects, trivial

# Tolerances. Losses and matrices are sums of <= 2^4 * 15 products of probabilities and O(1) statistics computed in
# two orders (library vectorised, brute force in loops): round-off ~1e-15, asserted to 1e-12 absolute. Central finite
# differences with step 1e-4 on log-partition functions of |theta| <= 1.5: truncation ~step^2 * |third derivative|
# (<= 1e-8 * 8) plus round-off eps |L| / step^2 (~1e-8), so FD quantities are compared to 1e-5; the misreadings
# differ by >= 1e-2.
TOL = 1e-12
FD_TOL = 1e-5


def states(N: int) -> list[tuple[int, ...]]:
    """The library's product order: -1 before +1, x_0 slowest."""
    return list(product((-1, 1), repeat=N))


def stats(x, N: int) -> np.ndarray:
    """T(x) = (x_i; x_i x_j, i < j): the natural statistics of the full pairwise Ising family."""
    return np.array([x[i] for i in range(N)] + [x[i] * x[j] for i, j in combinations(range(N), 2)], float)


def log_joint(theta, N: int) -> np.ndarray:
    """log p_theta(x) = theta . T(x) - log Z, by a loop over the states."""
    e = np.array([float(np.dot(theta, stats(x, N))) for x in states(N)])
    return e - log(np.exp(e).sum())


def log_cond(logp: np.ndarray, N: int, K, a: int, weight=None) -> float:
    """log p(x_K | x_{-K}) at state a (or, with ``weight`` = p_K(K | .) per state, log p(x_K | x_{-K}, K) of Eq 4.1)."""
    S = states(N)
    x = S[a]
    w = np.ones(len(S)) if weight is None else np.asarray(weight, float)
    den = sum(
        np.exp(logp[b]) * w[b] for b, z in enumerate(S) if all(z[i] == x[i] for i in range(N) if i not in K)
    )
    return float(logp[a] + np.log(w[a]) - np.log(den))


def brute_pl_loss(theta, N: int, data, masks, weights) -> float:
    """Def 4.1.2: E_{X ~ data, K ~ p_K} [-log p_theta(X_K | X_{-K})]; adaptive ``weights`` (shape (S, M)) give Def
    4.1.7 with the conditional of Eq (4.1)."""
    logp = log_joint(theta, N)
    W = np.asarray(weights, float)
    total = 0.0
    for a in range(2**N):
        for m, K in enumerate(masks):
            w = W[a, m] if W.ndim == 2 else W[m]
            if data[a] * w > 0:
                total -= data[a] * w * log_cond(logp, N, K, a, W[:, m] if W.ndim == 2 else None)
    return total


def model_of(theta, N: int) -> IsingModel:
    return IsingModel.from_natural(theta, N)


def random_theta(seed: int, N: int) -> np.ndarray:
    return random_ising(np.random.default_rng(seed), N, "unordered").natural_parameters()


def fd_grad(fun, theta, step: float = 1e-4) -> np.ndarray:
    e = np.eye(len(theta)) * step
    return np.array([(fun(theta + d) - fun(theta - d)) / (2 * step) for d in e])


# ------------------------------------------------------------------------------------------------ Def 4.1.1
@pytest.mark.claim("mple.def4.1.1", tier="exact")
def test_mle_and_fisher_information_are_def_4_1_1(measure) -> None:
    N = 3
    theta = random_theta(11, N)
    p = np.exp(log_joint(theta, N))
    # Fisher information: Cov_{X ~ p_theta}(grad_theta log p_theta(X)), gradients by central differences per state
    G = np.array([fd_grad(lambda t, a=a: log_joint(t, N)[a], theta) for a in range(2**N)])
    mean = p @ G
    fisher = (G * p[:, None]).T @ G - np.outer(mean, mean)
    lib = information_matrix(model_of(theta, N))
    assert np.abs(mean).max() < FD_TOL  # the score has mean zero
    assert np.abs(lib - fisher).max() < FD_TOL
    # MLE: argmax of the empirical mean of log p_theta(X) (the library's k = N fit on an empirical law); its
    # brute-force gradient vanishes and no nearby parameter does better
    counts = np.array([3, 1, 4, 1, 5, 9, 2, 6], float)
    emp = counts / counts.sum()
    mle = fit_population(model_of(np.zeros_like(theta), N), N, emp)
    avg = lambda t: float(emp @ log_joint(t, N))  # noqa: E731
    assert np.abs(fd_grad(avg, mle)).max() < FD_TOL
    rng = np.random.default_rng(0)
    assert all(avg(mle + 1e-2 * rng.normal(size=mle.size)) < avg(mle) for _ in range(20))
    measure("Def 4.1.1: max |library Fisher - Cov(grad log p)|", float(np.abs(lib - fisher).max()))


@pytest.mark.claim("mple.def4.1.1", tier="exact", control=True)
def test_fisher_control_printed_cov_of_grad_p() -> None:
    # the text prints I = Cov(grad_theta p_theta(X)) (no log): the same comparison rejects it
    N = 3
    theta = random_theta(11, N)
    p = np.exp(log_joint(theta, N))
    G = np.array([fd_grad(lambda t, a=a: float(np.exp(log_joint(t, N)[a])), theta) for a in range(2**N)])
    mean = p @ G
    printed = (G * p[:, None]).T @ G - np.outer(mean, mean)
    assert np.abs(information_matrix(model_of(theta, N)) - printed).max() > 1e-2


# ------------------------------------------------------------------------------------------------ Defs 4.1.2-4.1.3
@pytest.mark.claim("mple.def4.1.2-3", tier="exact")
def test_weighted_and_k_pseudolikelihood_are_defs_4_1_2_and_4_1_3(measure) -> None:
    N = 4
    theta = random_theta(21, N)
    model = model_of(theta, N)
    data = np.random.default_rng(22).dirichlet(np.ones(2**N))  # any data law (not the model)
    masks, weights = [(0,), (1, 2), (2, 3), (0, 1, 3)], np.array([0.1, 0.2, 0.3, 0.4])
    got = pl_parts(model, mask_law(N, masks, weights), data).loss
    want = brute_pl_loss(theta, N, data, masks, weights)
    assert abs(got - want) <= TOL
    for k in range(1, N + 1):
        ks = list(combinations(range(N), k))
        want_k = brute_pl_loss(theta, N, data, ks, np.full(len(ks), 1 / len(ks)))
        assert abs(pl_parts(model, k, data).loss - want_k) <= TOL
    # pins: k = N is the negative log-likelihood of Def 4.1.1; at theta = 0 every conditional of |K| = k fair
    # spins is 2^-k, so the k-PL loss is exactly k ln 2
    assert abs(pl_parts(model, N, data).loss + data @ log_joint(theta, N)) <= TOL
    zero = model_of(np.zeros_like(theta), N)
    assert all(abs(pl_parts(zero, k, data).loss - k * log(2)) <= TOL for k in range(1, N + 1))
    measure("Def 4.1.2 weighted PL loss (N = 4, 4 masks, random data law)", got)
    rejects(lambda: mask_law(N, [(0,), (1, 2)]), r"the masks in the support must cover all coordinates")
    rejects(lambda: mask_law(N, masks, [0.5, 0.5, 0.5, 0.5]), r"mask weights must be probabilities")
    rejects(lambda: pl_parts(model, 0, data), r"k must lie in 1..N = 1..4")
    rejects(lambda: pl_parts(model, 1, np.ones(4) / 4), r"the data law must be a probability vector")


@pytest.mark.claim("mple.def4.1.2-3", tier="exact", control=True)
def test_pseudolikelihood_control_misreadings() -> None:
    # K read as the observed coordinates (predict the complement) and the sum over all k-subsets without the 1/C(N,k)
    # weight of Unif(K): the same comparison rejects both
    N, k = 4, 1
    theta = random_theta(21, N)
    data = np.random.default_rng(22).dirichlet(np.ones(2**N))
    got = pl_parts(model_of(theta, N), k, data).loss
    comp = [tuple(i for i in range(N) if i not in K) for K in combinations(range(N), k)]
    assert abs(got - brute_pl_loss(theta, N, data, comp, np.full(N, 1 / N))) > 1e-2
    assert (
        abs(got - brute_pl_loss(theta, N, data, list(combinations(range(N), k)), np.ones(comb(N, k)))) > 1e-2
    )


# ------------------------------------------------------------------------------------------------ Defs 4.1.4-4.1.6
def brute_block_dynamics(p: np.ndarray, N: int, masks, weights) -> np.ndarray:
    """Def 4.1.6: pick K ~ p_K, resample X_K ~ p(. | X_{-K}), keep X_{-K}."""
    S = states(N)
    logp = np.log(p)
    P = np.zeros((len(S), len(S)))
    for a, x in enumerate(S):
        for b, y in enumerate(S):
            for K, w in zip(masks, weights, strict=True):
                if all(x[i] == y[i] for i in range(N) if i not in K):
                    P[a, b] += w * np.exp(log_cond(logp, N, K, b))
    return P


def brute_dirichlet(P: np.ndarray, mu: np.ndarray, f, g) -> tuple[float, float]:
    """Def 4.1.4 both ways: <f, (I - P) g>_mu and (1/2) sum mu(x) P(x, y) (f(x) - f(y)) (g(x) - g(y))."""
    n = len(mu)
    inner = sum(mu[x] * f[x] * (g[x] - sum(P[x, y] * g[y] for y in range(n))) for x in range(n))
    double = 0.5 * sum(mu[x] * P[x, y] * (f[x] - f[y]) * (g[x] - g[y]) for x in range(n) for y in range(n))
    return inner, double


def brute_block_cov_form(p: np.ndarray, N: int, masks, weights, f, g) -> float:
    """Caputo-Parisi: E_{K ~ p_K} E_{X_{-K}} Cov_{X_K | X_{-K}}(f, g), by grouping states by x_{-K}."""
    S = states(N)
    total = 0.0
    for K, w in zip(masks, weights, strict=True):
        groups: dict[tuple, list[int]] = {}
        for a, x in enumerate(S):
            groups.setdefault(tuple(x[i] for i in range(N) if i not in K), []).append(a)
        for idx in groups.values():
            mass = sum(p[a] for a in idx)
            ef = sum(p[a] * f[a] for a in idx) / mass
            eg = sum(p[a] * g[a] for a in idx) / mass
            total += w * mass * (sum(p[a] * f[a] * g[a] for a in idx) / mass - ef * eg)
    return total


@pytest.mark.claim("mple.def4.1.4-6", tier="exact")
def test_dirichlet_form_poincare_and_block_dynamics_are_defs_4_1_4_to_4_1_6(measure) -> None:
    from scipy.linalg import expm

    N = 3
    model = random_ising(np.random.default_rng(31), N, "unordered")
    p = model.probs()
    masks, weights = [(0,), (1, 2), (0, 2)], [0.5, 0.3, 0.2]
    chain = block_dynamics(model, masks, weights)
    assert np.abs(chain.P - brute_block_dynamics(p, N, masks, weights)).max() <= TOL  # Def 4.1.6
    assert np.abs(p @ chain.P - p).max() <= TOL  # p_X is stationary
    rng = np.random.default_rng(32)
    for _ in range(3):
        f, g = rng.normal(size=8), rng.normal(size=8)
        inner, double = brute_dirichlet(chain.P, p, f, g)
        lib = chain.dirichlet_form(f, g)
        assert abs(lib - inner) <= TOL and abs(lib - double) <= TOL  # Def 4.1.4 (both printed forms)
        assert abs(lib - brute_block_cov_form(p, N, masks, weights, f, g)) <= TOL  # Caputo-Parisi form
    # Def 4.1.5: the library's constant C = 1/gap is the best one: E(f, f) - Var(f)/C is psd as a quadratic form
    # and singular (built entry by entry from the brute-force Dirichlet form on basis vectors)
    E = np.array([[brute_dirichlet(chain.P, p, u, v)[1] for v in np.eye(8)] for u in np.eye(8)])
    V = np.diag(p) - np.outer(p, p)
    C = chain.poincare_constant()
    lam = np.linalg.eigvalsh(E - V / C)
    assert lam[0] >= -TOL and np.sort(np.abs(lam))[1] <= 1e-10  # constants and the slowest mode
    # ... and it gives the chi^2 contraction stated after Def 4.1.5 for the continuous-time chain
    p0 = np.eye(8)[0]
    chi2 = lambda q: float(((q - p) ** 2 / p).sum())  # noqa: E731
    for t in (0.5, 1.0, 3.0):
        pt = p0 @ expm(t * (chain.P - np.eye(8)))
        assert chi2(pt) <= np.exp(-2 * t / C) * chi2(p0) * (1 + 1e-10)
    measure("Def 4.1.5: Poincare constant 1/gap of the 3-block dynamics", C)
    # pin: a two-state chain with P(0,1) = a, P(1,0) = b has E(f, f) = ab/(a+b) (f0 - f1)^2 and gap a + b
    two = FiniteChain(np.array([[0.7, 0.3], [0.1, 0.9]]))
    assert abs(two.dirichlet_form(np.array([1.0, 0.0])) - 0.03 / 0.4) <= TOL
    assert abs(two.poincare_constant() - 1 / 0.4) <= TOL
    rejects(lambda: chain.dirichlet_form(np.ones(4)), r"f must be a function on the 8 states")
    rejects(lambda: FiniteChain(np.array([[0.5, 0.4], [0.5, 0.5]])), r"rows of P must sum to 1")


@pytest.mark.claim("mple.def4.1.4-6", tier="exact", control=True)
def test_dirichlet_poincare_block_control_misreadings() -> None:
    N = 3
    model = random_ising(np.random.default_rng(31), N, "unordered")
    p = model.probs()
    masks, weights = [(0,), (1, 2), (0, 2)], [0.5, 0.3, 0.2]
    chain = block_dynamics(model, masks, weights)
    f = np.random.default_rng(33).normal(size=8)
    inner, _ = brute_dirichlet(chain.P, p, f, f)
    assert abs(2 * chain.dirichlet_form(f) - inner) > 1e-2  # the double sum without its 1/2
    # C = gap (instead of 1/gap) is not a Poincare constant: the slowest mode violates E(f, f) >= Var(f)/C
    E = np.array([[brute_dirichlet(chain.P, p, u, v)[1] for v in np.eye(8)] for u in np.eye(8)])
    V = np.diag(p) - np.outer(p, p)
    assert np.linalg.eigvalsh(E - V / chain.spectral_gap())[0] < -1e-2
    # block dynamics read as resampling the complement of K: a different chain
    comp = [tuple(i for i in range(N) if i not in K) for K in masks]
    assert np.abs(chain.P - brute_block_dynamics(p, N, comp, weights)).max() > 1e-2


# ------------------------------------------------------------------------------------------------ Defs 4.1.7-4.1.8
def adaptive_instance() -> tuple[IsingModel, list, np.ndarray]:
    model = random_ising(np.random.default_rng(41), 3, "unordered")
    masks = [(0,), (1,), (2,), (0, 1)]
    W = np.random.default_rng(42).dirichlet(np.ones(4), size=8)  # p_K(K | x), one row per state
    return model, masks, W


def brute_adaptive_chain(p: np.ndarray, N: int, masks, W) -> np.ndarray:
    """Def 4.1.8 on X: K ~ p_K(. | x), then X_K ~ p(. | x_{-K}, K) of Eq (4.1)."""
    S = states(N)
    logp = np.log(p)
    P = np.zeros((len(S), len(S)))
    for a, x in enumerate(S):
        for b, y in enumerate(S):
            for m, K in enumerate(masks):
                if all(x[i] == y[i] for i in range(N) if i not in K):
                    P[a, b] += W[a, m] * np.exp(log_cond(logp, N, K, b, W[:, m]))
    return P


@pytest.mark.claim("mple.def4.1.7-8", tier="exact")
def test_adaptive_pseudolikelihood_and_block_dynamics_are_defs_4_1_7_and_4_1_8(measure) -> None:
    model, masks, W = adaptive_instance()
    N, theta, p = 3, model.natural_parameters(), model.probs()
    data = np.random.default_rng(43).dirichlet(np.ones(8))
    got = pl_parts(model, mask_law(N, masks, W), data).loss
    assert abs(got - brute_pl_loss(theta, N, data, masks, W)) <= TOL  # Def 4.1.7 with Eq (4.1)
    chain = adaptive_block_dynamics(model, masks, W)
    assert np.abs(chain.P - brute_adaptive_chain(p, N, masks, W)).max() <= TOL
    # the chain on pairs (X, K) (the state remembers the block just used) has stationary law p(X) p_K(K | X)
    S, M = 8, len(masks)
    Q = np.zeros((S * M, S * M))
    for m, K in enumerate(masks):
        # step[a, b] = p_K(K | x_a) p(y_b,K | x_a,-K, K): the pair chain moves (a, any K') -> (b, K) w.p. step[a, b]
        step = brute_adaptive_chain(p, N, [K], W[:, [m]])
        for a in range(S):
            Q[a * M : (a + 1) * M, m::M] = step[a][None, :]
    pair = (p[:, None] * W).ravel()
    assert np.abs(Q.sum(axis=1) - 1).max() <= TOL and np.abs(pair @ Q - pair).max() <= TOL
    assert np.abs(p @ chain.P - p).max() <= TOL
    measure("Def 4.1.7 adaptive PL loss (N = 3, 4 masks, random p_K(K|x) and data)", got)
    rejects(
        lambda: pl_parts(model, mask_law(N, masks, W[:4]), data),
        r"an adaptive mask law needs one row p_K\(. \| x\) per state \(8\), got 4",
    )


@pytest.mark.claim("mple.def4.1.7-8", tier="exact", control=True)
def test_adaptive_control_conditional_without_the_mask_factor() -> None:
    # Eq (4.1) without p_K(K | x'): the plain conditional p(x_K | x_{-K}) gives another loss and a chain whose pair law
    # is not stationary
    model, masks, W = adaptive_instance()
    N, theta, p = 3, model.natural_parameters(), model.probs()
    data = np.random.default_rng(43).dirichlet(np.ones(8))
    logp = log_joint(theta, N)
    plain = -sum(
        data[a] * W[a, m] * log_cond(logp, N, K, a)
        for a in range(8)
        for m, K in enumerate(masks)
        if W[a, m] > 0
    )
    assert abs(pl_parts(model, mask_law(N, masks, W), data).loss - plain) > 1e-2
    P = np.zeros((8, 8))
    for m, K in enumerate(masks):
        P += W[:, [m]] * brute_block_dynamics(p, N, [K], [1.0])
    assert np.abs(p @ P - p).max() > 1e-3


# ------------------------------------------------------------------------------------------------ Lemma 4.3.2
def lemma_4_3_2_sides(pj: dict, N: int, masks, x, K, weight_of=None) -> tuple[F, F]:
    """Both sides of Eq (4.21) in exact rationals, from a joint law ``pj[(x, K')]`` over states and masks: p(x_K | x_{-K})
    and sum_{K'} p(K' | x_{-K}) p(x_K | x_{-K}, K'); ``weight_of`` replaces p(K' | x_{-K}) (a misreading)."""
    rest = [i for i in range(N) if i not in K]
    agree = [z for z in states_01(N) if all(z[i] == x[i] for i in rest)]
    px = {z: sum(pj[(z, Kp)] for Kp in masks) for z in states_01(N)}
    lhs = px[x] / sum(px[z] for z in agree)
    rhs = F(0)
    for Kp in masks:
        mass = sum(pj[(z, Kp)] for z in agree)  # P(x_{-K}, K')
        if mass == 0:
            continue
        w = mass / sum(px[z] for z in agree) if weight_of is None else weight_of(x, Kp)
        rhs += w * pj[(x, Kp)] / mass
    return lhs, rhs


def states_01(N: int) -> list[tuple[int, ...]]:
    return list(product((0, 1), repeat=N))


def lemma_4_3_1_joint() -> tuple[dict, list]:
    """Lemma 4.3.1's example (fourth state (1,1) with mass 0), masks {0}, {1}."""
    px = {(0, 0): F(1, 2), (0, 1): F(1, 3), (1, 0): F(1, 6), (1, 1): F(0)}
    pk = {
        (0, 0): (F(1, 2), F(1, 2)),
        (0, 1): (F(1, 3), F(2, 3)),
        (1, 0): (F(1, 4), F(3, 4)),
        (1, 1): (F(1, 2), F(1, 2)),
    }
    masks = [(0,), (1,)]
    return {(x, K): px[x] * pk[x][m] for x in px for m, K in enumerate(masks)}, masks


@pytest.mark.claim("mple.lem4.3.2", tier="exact")
def test_lemma_4_3_2_marginalising_the_mask(measure) -> None:
    pj, masks = lemma_4_3_1_joint()
    for x in states_01(2):
        for K in masks:
            lhs, rhs = lemma_4_3_2_sides(pj, 2, masks, x, K)
            assert lhs == rhs, (x, K)
    pinned, _ = lemma_4_3_2_sides(pj, 2, masks, (0, 0), (1,))
    assert pinned == F(3, 5)  # pinned: p(x1 = 0 | x0 = 0) of Lemma 4.3.1's proof
    # random rational joints on {0,1}^3 with 4 masks
    rng = np.random.default_rng(432)
    masks3 = [(0,), (1, 2), (2,), (0, 1, 2)]
    for _ in range(3):
        pj3 = {(x, K): F(int(rng.integers(0, 5)), 1) for x in states_01(3) for K in masks3}
        total = sum(pj3.values())
        pj3 = {key: v / total for key, v in pj3.items()}
        for x in states_01(3):
            for K in masks3:
                rest = [i for i in range(3) if i not in K]
                if (
                    sum(
                        pj3[(z, Kp)] for z in states_01(3) if all(z[i] == x[i] for i in rest) for Kp in masks3
                    )
                    == 0
                ):
                    continue
                lhs, rhs = lemma_4_3_2_sides(pj3, 3, masks3, x, K)
                assert lhs == rhs
    measure("Lemma 4.3.2 on Lemma 4.3.1's example: p(x1=0 | x0=0)", str(pinned))


@pytest.mark.claim("mple.lem4.3.2", tier="exact", control=True)
def test_lemma_4_3_2_control_weights_given_the_full_state() -> None:
    # weighting by p_K(K' | x) (the full state) instead of p(K' | x_{-K}) breaks Eq (4.21) on Lemma 4.3.1's example
    pj, masks = lemma_4_3_1_joint()
    pk = {
        x: {K: pj[(x, K)] / sum(pj[(x, Kp)] for Kp in masks) for K in masks}
        for x in states_01(2)
        if x != (1, 1)
    }
    lhs, rhs = lemma_4_3_2_sides(pj, 2, masks, (0, 0), (1,), weight_of=lambda x, Kp: pk[x][Kp])
    assert lhs != rhs


# ------------------------------------------------------------------------------------------------ Lemma 4.3.3
def fd_hessian_and_score_cov(theta, N: int, data, masks, W) -> tuple[np.ndarray, np.ndarray]:
    """Brute force: Hessian of the adaptive PL loss (central differences of brute_pl_loss) and the covariance of
    the scores grad log p_theta(x_K | x_{-K}, K) (central differences per (x, K)) under data x p_K."""
    d = len(theta)
    h = 1e-4
    L = lambda t: brute_pl_loss(t, N, data, masks, W)  # noqa: E731
    E = np.eye(d) * h
    H = np.array(
        [
            [
                (
                    L(theta + E[i] + E[j])
                    - L(theta + E[i] - E[j])
                    - L(theta - E[i] + E[j])
                    + L(theta - E[i] - E[j])
                )
                / (4 * h * h)
                for j in range(d)
            ]
            for i in range(d)
        ]
    )
    scores, weights = [], []
    for a in range(2**N):
        for m, K in enumerate(masks):
            if data[a] * W[a, m] > 0:
                scores.append(
                    fd_grad(lambda t, a=a, m=m, K=K: log_cond(log_joint(t, N), N, K, a, W[:, m]), theta)
                )
                weights.append(data[a] * W[a, m])
    Sc, Wt = np.array(scores), np.array(weights)
    mean = Wt @ Sc
    return H, (Sc * Wt[:, None]).T @ Sc - np.outer(mean, mean)


@pytest.mark.claim("mple.lem4.3.3", tier="exact")
def test_lemma_4_3_3_adaptive_information_matrix_equality(measure) -> None:
    N = 2
    theta = np.array([0.4, -0.3, 0.8])
    masks = [(0,), (1,), (0, 1)]
    W = np.random.default_rng(433).dirichlet(np.ones(3), size=4)
    p = np.exp(log_joint(theta, N))
    H, V = fd_hessian_and_score_cov(theta, N, p, masks, W)
    assert np.abs(H - V).max() < FD_TOL
    parts = pl_parts(model_of(theta, N), mask_law(N, masks, W))
    assert np.abs(parts.hessian - H).max() < FD_TOL and np.abs(parts.hessian - parts.score_cov).max() <= TOL
    measure(
        "Lemma 4.3.3: max |FD Hessian - Cov(score)| (adaptive masks, realizable)", float(np.abs(H - V).max())
    )


@pytest.mark.claim("mple.lem4.3.3", tier="exact", control=True)
def test_lemma_4_3_3_control_misspecified_data(measure) -> None:
    N = 2
    theta = np.array([0.4, -0.3, 0.8])
    masks = [(0,), (1,), (0, 1)]
    W = np.random.default_rng(433).dirichlet(np.ones(3), size=4)
    data = np.array([0.4, 0.1, 0.1, 0.4])  # not p_theta: the equality needs realizability
    H, V = fd_hessian_and_score_cov(theta, N, data, masks, W)
    measure("Lemma 4.3.3 control: max |Hessian - Cov(score)| with data != model", float(np.abs(H - V).max()))
    assert np.abs(H - V).max() > 1e-2


@pytest.mark.claim("mple.lem4.3.3", tier="property")
@settings(deadline=None, max_examples=20)
@given(model=ising_models(2, 4), seed=st.integers(0, 2**32 - 1))
def test_lemma_4_3_3_on_random_models_and_adaptive_laws(model, seed) -> None:
    masks, W = _adaptive_law(model.N, seed)
    trivial(bool(np.ptp(W, axis=0).max() < 1e-12))  # a state-independent law is Lemma 4.1.2's case
    parts = pl_parts(model, mask_law(model.N, masks, W))
    scale = max(1.0, np.abs(parts.hessian).max())
    assert np.abs(parts.hessian - parts.score_cov).max() < 1e-10 * scale
    # and the population minimiser under the model's own law is the model (realizability, Lemma 4.1.1's theta*)
    assert np.abs(parts.grad).max() < 1e-12 * scale


def _adaptive_law(N: int, seed: int) -> tuple[list, np.ndarray]:
    rng = np.random.default_rng(seed)
    subsets = [K for r in range(1, N + 1) for K in combinations(range(N), r)]
    chosen = [K for K in subsets if rng.random() < 0.4]
    chosen += [(i,) for i in range(N) if not any(i in K for K in chosen)]
    return chosen, rng.dirichlet(np.ones(len(chosen)), size=2**N)


# ------------------------------------------------------------------------------------------------ Def 4.1.9
def brute_block_kl(
    r: np.ndarray, q: np.ndarray, N: int, masks, weights, condition_on_K: bool = False
) -> float:
    """E_{X ~ r} E_K KL(r(. | X_{-K}), q(. | X_{-K})) by loops (``condition_on_K``: the misreading X_K)."""
    S = states(N)
    total = 0.0
    for K, w in zip(masks, weights, strict=True):
        fixed = list(K) if condition_on_K else [i for i in range(N) if i not in K]
        groups: dict[tuple, list[int]] = {}
        for a, x in enumerate(S):
            groups.setdefault(tuple(x[i] for i in fixed), []).append(a)
        for idx in groups.values():
            R, Q = sum(r[a] for a in idx), sum(q[a] for a in idx)
            inner = sum(r[a] / R * log((r[a] / R) / (q[a] / Q)) for a in idx if r[a] > 0)
            total += w * R * inner
    return total


@pytest.mark.claim("mple.def4.1.9", tier="exact")
def test_tensorization_functional_is_def_4_1_9(measure) -> None:
    N = 3
    q = random_ising(np.random.default_rng(91), N, "unordered").probs()
    r = np.random.default_rng(92).dirichlet(np.ones(8))
    for k in (1, 2, 3):
        ks = list(combinations(range(N), k))
        want = brute_block_kl(r, q, N, ks, np.full(len(ks), 1 / len(ks)))
        assert abs(pl_kl_loss(r, q, N, k) - want) <= TOL
    assert abs(tensorization_ratio(r, q, N, 3) - 1) <= TOL  # k = N: the functional is KL(r, q) itself
    # pinned: product q and product r give ratio N/k exactly (each coordinate's KL is counted k/N times)
    qm, rm = np.array([0.3, 0.6, 0.8]), np.array([0.5, 0.2, 0.9])
    prod = lambda m: np.array(
        [np.prod([m[i] if s > 0 else 1 - m[i] for i, s in enumerate(x)]) for x in states(N)]
    )  # noqa: E731
    ratios = [tensorization_ratio(prod(rm), prod(qm), N, k) for k in (1, 2, 3)]
    assert all(abs(v - N / k) <= 1e-10 for v, k in zip(ratios, (1, 2, 3), strict=True))
    assert (
        abs(
            kl(prod(rm), prod(qm))
            - sum(rm[i] * log(rm[i] / qm[i]) + (1 - rm[i]) * log((1 - rm[i]) / (1 - qm[i])) for i in range(N))
        )
        <= TOL
    )
    measure("Def 4.1.9 ratio KL / block KL for product laws, k = 1, 2, 3 (N/k)", ratios)
    rejects(lambda: pl_kl_loss(r[:4], q, N, 1), r"r must be a probability vector over the 2\^N = 8 states")


@pytest.mark.claim("mple.def4.1.9", tier="exact", control=True)
def test_tensorization_control_misreadings() -> None:
    # conditioning on X_K (instead of X_{-K}) gives N/(N-k) on product laws, and summing over K (instead of averaging)
    # gives N/(k C(N,k)): the pin N/k rejects both
    N, k = 3, 1
    qm, rm = np.array([0.3, 0.6, 0.8]), np.array([0.5, 0.2, 0.9])
    prod = lambda m: np.array(
        [np.prod([m[i] if s > 0 else 1 - m[i] for i, s in enumerate(x)]) for x in states(N)]
    )  # noqa: E731
    r, q = prod(rm), prod(qm)
    ks = list(combinations(range(N), k))
    on_K = kl(r, q) / brute_block_kl(r, q, N, ks, np.full(N, 1 / N), condition_on_K=True)
    summed = kl(r, q) / brute_block_kl(r, q, N, ks, np.ones(N))
    assert abs(on_K - N / k) > 0.1 and abs(summed - N / k) > 0.1
