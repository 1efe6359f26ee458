"""FiniteChain: validation errors, stationary laws, gaps, Dirichlet forms and hitting times on small chains."""

import numpy as np
import pytest

from theorylab.markov import FiniteChain


def lazy_cycle(n: int) -> np.ndarray:
    P = 0.5 * np.eye(n)
    for i in range(n):
        P[i, (i + 1) % n] += 0.25
        P[i, (i - 1) % n] += 0.25
    return P


@pytest.mark.parametrize(
    ("P", "error", "message"),
    [
        ("abc", TypeError, "square array"),
        (None, TypeError, "square array"),
        ([[0.5, 0.5]], ValueError, "square"),
        ([[1.2, -0.2], [0.5, 0.5]], ValueError, "negative"),
        ([[0.5, 0.4], [0.5, 0.5]], ValueError, "sum to 1"),
        ([[np.nan, 1.0], [0.5, 0.5]], ValueError, "non-finite"),
    ],
)
def test_bad_matrices_are_rejected(P, error, message):
    with pytest.raises(error, match=message):
        FiniteChain(P)


def test_bad_pi_is_rejected():
    P = lazy_cycle(3)
    with pytest.raises(ValueError, match="shape"):
        FiniteChain(P, pi=[0.5, 0.5])
    with pytest.raises(ValueError, match="probability vector"):
        FiniteChain(P, pi=[0.5, 0.5, 0.5])
    with pytest.raises(ValueError, match="not stationary"):
        FiniteChain([[0.9, 0.1], [0.5, 0.5]], pi=[0.5, 0.5])


def test_reducible_chain_has_no_gap():
    chain = FiniteChain(np.eye(2))
    assert not chain.is_irreducible()
    with pytest.raises(ValueError, match="irreducible"):
        chain.spectral_gap()
    with pytest.raises(ValueError, match="irreducible"):
        chain.stationary()


def test_non_reversible_chain_refuses_gap():
    P = np.array([[0.1, 0.8, 0.1], [0.1, 0.1, 0.8], [0.8, 0.1, 0.1]])
    chain = FiniteChain(P)
    assert not chain.is_reversible()
    with pytest.raises(ValueError, match="reversible"):
        chain.spectral_gap()


def test_cycle_gap_and_poincare():
    n = 6
    chain = FiniteChain(lazy_cycle(n))
    assert np.allclose(chain.stationary(), 1 / n)
    gap = (1 - np.cos(2 * np.pi / n)) / 2  # lazy simple random walk on the n-cycle
    assert abs(chain.spectral_gap() - gap) < 1e-12
    assert abs(chain.poincare_constant() - 1 / gap) < 1e-9
    rng = np.random.default_rng(0)
    for _ in range(20):  # Poincare inequality E(f,f) >= Var(f) * gap
        f = rng.standard_normal(n)
        assert chain.dirichlet_form(f) >= gap * chain.variance(f) - 1e-12
    # equality on the slowest eigenfunction
    f = np.cos(2 * np.pi * np.arange(n) / n)
    assert abs(chain.dirichlet_form(f) - gap * chain.variance(f)) < 1e-12


def test_dirichlet_form_equals_inner_product_for_reversible_chains():
    P = np.array([[0.5, 0.5, 0.0], [0.25, 0.5, 0.25], [0.0, 0.5, 0.5]])
    chain = FiniteChain(P)
    pi = chain.stationary()
    assert np.allclose(pi, [0.25, 0.5, 0.25])
    f, g = np.array([1.0, -2.0, 0.5]), np.array([0.3, 0.1, -1.0])
    assert abs(chain.dirichlet_form(f, g) - pi @ (f * ((np.eye(3) - P) @ g))) < 1e-14
    with pytest.raises(ValueError, match="shape"):
        chain.dirichlet_form([1.0, 2.0])


def test_hitting_times_birth_death_closed_form():
    # fair walk on 0..4 absorbed at 4, reflecting at 0 (stay w.p. 1/2): E_0[tau_4] = 4 * 5 = 20
    n = 5
    P = np.zeros((n, n))
    P[0, 0] = P[0, 1] = 0.5
    for i in range(1, n - 1):
        P[i, i - 1] = P[i, i + 1] = 0.5
    P[n - 1, n - 2] = P[n - 1, n - 1] = 0.5
    h = FiniteChain(P).hitting_times([n - 1])
    assert np.allclose(h, [20, 18, 14, 8, 0])
    mask = np.zeros(n, dtype=bool)
    mask[-1] = True
    assert np.allclose(FiniteChain(P).hitting_times(mask), h)


def test_hitting_times_unreachable_and_bad_targets():
    P = np.array([[1.0, 0.0], [0.5, 0.5]])
    chain = FiniteChain(P)
    h = chain.hitting_times([1])
    assert h[1] == 0 and np.isinf(h[0])
    with pytest.raises(ValueError, match="empty"):
        chain.hitting_times(np.zeros(2, dtype=bool))
    with pytest.raises(ValueError, match="indices"):
        chain.hitting_times([2])
    with pytest.raises(TypeError, match="target"):
        chain.hitting_times("0")


def test_hitting_times_are_accurate_for_rare_exits():
    # two-state chain with exit probability 1e-14: E_0[tau_1] = 1e14 exactly
    eps = 1e-14
    chain = FiniteChain([[1 - eps, eps], [0.5, 0.5]])
    assert abs(chain.hitting_times([1])[0] / 1e14 - 1) < 1e-2  # 1 - (1 - eps) already rounds: ~1% in P itself
