"""Ising models, samplers and pseudolikelihood: input validation and consistency with brute force."""

from itertools import product

import numpy as np
import pytest

from theorylab.estimation.pseudolikelihood import (
    C_k,
    asymptotic_covariance,
    fit_kpl,
    fit_population,
    information_matrix,
    k_masks,
    mask_law,
    pl_loss,
)
from theorylab.ising import (
    CliqueCountChain,
    IsingModel,
    best_product_approximation,
    block_dynamics,
    clique_model,
    k_gibbs,
    spin_states,
    state_index,
    total_correlation,
)
from theorylab.ising.model import MAX_EXACT_N


def test_bad_ising_inputs():
    with pytest.raises(ValueError, match="symmetric"):
        IsingModel(np.zeros(2), np.array([[0, 1.0], [0.5, 0]]))
    with pytest.raises(ValueError, match="zero diagonal"):
        IsingModel(np.zeros(2), np.eye(2))
    with pytest.raises(ValueError, match="shape"):
        IsingModel(np.zeros(3), np.zeros((2, 2)))
    with pytest.raises(ValueError, match="convention"):
        IsingModel(np.zeros(2), np.zeros((2, 2)), "both")
    with pytest.raises(ValueError, match="finite"):
        IsingModel(np.array([np.inf, 0]), np.zeros((2, 2)))
    with pytest.raises(ValueError, match="N <= "):
        IsingModel(np.zeros(MAX_EXACT_N + 1), np.zeros((MAX_EXACT_N + 1,) * 2))
    with pytest.raises(TypeError, match="integer"):
        spin_states(2.5)
    with pytest.raises(ValueError, match="clique"):
        clique_model(4, [0], 1.0, 1.0)
    with pytest.raises(ValueError, match="k must lie"):
        CliqueCountChain(4, 1.0, 1.0).k_gibbs(10, 11)


def test_bad_k_and_masks():
    model = IsingModel(np.zeros(3), np.zeros((3, 3)))
    with pytest.raises(ValueError, match="1..N"):
        k_gibbs(model, 0)
    with pytest.raises(ValueError, match="1..N"):
        asymptotic_covariance(model, 4)
    with pytest.raises(TypeError, match="integer"):
        k_masks(3, 1.5)
    with pytest.raises(ValueError, match="cover"):
        mask_law(3, [(0,), (1,)])
    with pytest.raises(ValueError, match="summing to 1"):
        mask_law(3, [(0,), (1, 2)], [0.5, 0.6])
    with pytest.raises(ValueError, match="estimator"):
        asymptotic_covariance(model, 1, estimator="mean")
    with pytest.raises(ValueError, match="sum to 1"):
        pl_loss(model, 1, data=np.full(8, 0.2))
    with pytest.raises(ValueError, match="1 <= k < N"):
        C_k(model, 3)
    with pytest.raises(TypeError, match="IsingModel"):
        block_dynamics("model", 1)
    with pytest.raises(ValueError, match="conditional|K must"):
        model.conditional([5], np.ones(3, dtype=int))
    with pytest.raises(ValueError, match="±1"):
        fit_kpl(np.zeros((4, 3)), 1)


def test_states_and_probabilities_match_brute_force():
    rng = np.random.default_rng(0)
    N = 4
    J = rng.normal(size=(N, N))
    J = np.triu(J, 1)
    J = J + J.T
    h = rng.normal(size=N)
    for convention, g in (("unordered", 1), ("ordered", 2)):
        model = IsingModel(h, J, convention)
        X = model.states()
        assert [tuple(x) for x in X] == list(product((-1, 1), repeat=N))
        assert np.array_equal(state_index(X), np.arange(2**N))
        energy = np.array(
            [h @ x + g * sum(J[i, j] * x[i] * x[j] for i in range(N) for j in range(i + 1, N)) for x in X]
        )
        p = np.exp(energy) / np.exp(energy).sum()
        assert np.abs(model.probs() - p).max() < 1e-14
        # conditional of a block against brute force
        x = X[5]
        sub, q = model.conditional([0, 2], x)
        rows = [
            np.flatnonzero((X[:, [1, 3]] == x[[1, 3]]).all(1) & (X[:, [0, 2]] == s).all(1))[0] for s in sub
        ]
        assert np.abs(q - p[rows] / p[rows].sum()).max() < 1e-14


def test_natural_parameters_round_trip_and_information():
    rng = np.random.default_rng(1)
    model = IsingModel.from_natural(rng.normal(size=6), 3, convention="ordered")
    again = IsingModel.from_natural(model.natural_parameters(), 3, convention="ordered")
    assert np.allclose(again.J, model.J) and np.allclose(again.h, model.h)
    T = model.sufficient_statistics()
    p = model.probs()
    cov = (T * p[:, None]).T @ T - np.outer(p @ T, p @ T)
    assert np.abs(information_matrix(model) - cov).max() < 1e-14
    with pytest.raises(ValueError, match="outside the given edges"):
        model.natural_parameters([(0, 1)])


def test_fit_kpl_recovers_population_minimiser_on_exact_frequencies():
    model = IsingModel(np.array([0.2, -0.1, 0.3]), 0.4 * (np.ones((3, 3)) - np.eye(3)))
    rng = np.random.default_rng(2)
    X = model.sample(20000, rng)
    theta_nt = fit_kpl(X, 2)
    theta_gd = fit_kpl(X, 2, method="gd")
    assert np.abs(theta_nt - theta_gd).max() < 1e-6
    assert np.abs(theta_nt - model.natural_parameters()).max() < 0.1
    # population fit under the model's own law returns the truth
    fam = model.exp_family()
    th = fit_population((fam, np.zeros(fam.d)), 2, model.probs())
    assert np.abs(th - model.natural_parameters()).max() < 1e-8


def test_k_gibbs_is_stationary_and_reversible():
    model = clique_model(5, range(3), 0.3, 0.8, "unordered")
    for k in (1, 3, 5):
        chain = k_gibbs(model, k)
        assert np.abs(model.probs() @ chain.P - model.probs()).max() < 1e-14
        assert chain.is_reversible()
    assert np.abs(k_gibbs(model, 5).P - model.probs()[None, :]).max() < 1e-14  # k = N samples p


def test_product_form_helpers():
    q = np.array([0.1, 0.2, 0.3, 0.4])
    r = best_product_approximation(q)
    assert np.allclose(r, [0.3 * 0.4, 0.3 * 0.6, 0.7 * 0.4, 0.7 * 0.6])
    assert total_correlation(r) < 1e-14 and total_correlation(q) > 0
    with pytest.raises(ValueError, match="2\\^N"):
        total_correlation([0.5, 0.25, 0.25])
    with pytest.raises(ValueError, match="probability"):
        total_correlation([0.5, 0.5, 0.5, -0.5])


def test_counterexample_generators_are_registered():
    from theorylab.counterexamples import available, generate
    from theorylab.ising import counterexamples as ce

    ids = {k for k in available() if k.startswith(("mple.", "gibbs."))}
    assert ids == {
        "mple.thm4.1.1",
        "mple.derived.misspecified",
        "mple.derived.all_masks",
        "mple.prop4.1.1",
        "mple.cor4.3.1",
        "gibbs.prop4.1.5",
        "gibbs.exp4.2.1.2",
        "gibbs.tf_prop4.1.3",
    }
    assert np.array_equal(generate("mple.derived.all_masks")["J"], ce.ALL_MASKS["J"])
    assert float(generate("gibbs.prop4.1.5")["delta"]) == ce.PROP_415["delta"]


def test_group_labels_are_cached_per_mask_and_read_only():
    """The classes x_{-K} depend on the mask only: computed once per mask (read-only, so no caller can spoil the
    cache) and equal to the classes read off the states directly."""
    from theorylab.ising import finite_sample

    fam = IsingModel(np.zeros(4), np.zeros((4, 4))).exp_family()
    X = spin_states(4)
    for K in [(0,), (1, 3), [2, 0], (0, 1, 2, 3)]:
        labels = fam.group_index(K)
        assert fam.group_index(tuple(K)) is labels and not labels.flags.writeable
        rest = [i for i in range(4) if i not in K]
        same = (X[:, None, rest] == X[None, :, rest]).all(axis=-1)
        assert np.array_equal(labels[:, None] == labels[None, :], same)
        groups = finite_sample._groups(4, K)
        assert not groups.flags.writeable and np.array_equal(groups[:, None] == groups[None, :], same)
    with pytest.raises(ValueError):
        fam.group_index(K)[0] = 1
