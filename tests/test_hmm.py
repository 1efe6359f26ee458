"""Library tests of theorylab.hmm: validation, predictors, sampling, recovery API, generators."""

import numpy as np
import pytest

import theorylab.counterexamples as cx
from theorylab.hmm import (
    GHMM,
    HMM,
    AssumptionError,
    NotIdentifiableError,
    claim1_pair,
    optimal_predictor,
    parse_task,
    random_ghmm,
    random_hmm,
    recover_from_predictor,
    relabeling_distance,
    same_up_to_relabeling,
    sample,
    theorem8_case2_pair,
)

O = np.array([[0.6, 0.1], [0.3, 0.2], [0.1, 0.7]])
T = np.array([[0.8, 0.2], [0.2, 0.8]])


@pytest.mark.parametrize(
    "O_, T_, assumption",
    [
        (O, np.array([[0.8, 0.3], [0.2, 0.7]]), "Assumption 5"),  # column- but not row-stochastic
        (O, np.array([[1.2, -0.2], [-0.2, 1.2]]), "Assumption 5"),  # negative entries
        (np.array([[0.6, 0.1], [0.4, 0.9], [0.0, 0.0]]), T, "Assumption 6"),  # zero row
        (np.array([[0.5, 0.5], [0.5, 0.5]]), T, "Assumption 7"),  # rank O = 1
        (O, np.full((2, 2), 0.5), "Assumption 7"),  # rank T = 1
        (np.array([[1.0, 1.0, 1.0]]), np.eye(3), "Assumption 7"),  # k > d
        (np.array([[0.6, 0.1], [0.3, 0.2], [0.2, 0.7]]), T, "HMM definition"),  # O not column-stochastic
    ],
)
def test_hmm_validation_names_the_assumption(O_, T_, assumption):
    with pytest.raises(AssumptionError, match=assumption) as info:
        HMM(O_, T_)
    assert info.value.assumption == assumption


@pytest.mark.parametrize(
    "O_, T_, err",
    [
        (np.array([[np.nan, 0.5], [1.0, 0.5]]), T, ValueError),
        (O, np.eye(3), ValueError),
        (np.ones(3), T, ValueError),
        ("abc", T, TypeError),
        (np.array([[1j, 0.5]]), T, TypeError),
    ],
)
def test_hmm_rejects_bad_input(O_, T_, err):
    with pytest.raises(err):
        HMM(O_, T_)


def test_ghmm_validation():
    M = np.array([[1.0, 0.0], [0.0, 1.0], [0.0, 0.0]])
    GHMM(M, T)
    with pytest.raises(AssumptionError, match="Assumption 9"):
        GHMM(2 * M, T)
    GHMM(2 * M, T, norm=2.0)  # footnote 9: any common known norm
    GHMM(np.array([[1.0, 0.0], [0.0, 2.0]]), T, norm=None)  # Theorem 9 drops Assumption 9
    with pytest.raises(AssumptionError, match="Assumption 8"):
        GHMM(np.array([[1.0, 1.0], [0.0, 0.0]]), T)
    with pytest.raises(AssumptionError, match="Assumption 5"):
        GHMM(M, np.array([[0.9, 0.2], [0.1, 0.8]]))
    g = GHMM(M, T)
    with pytest.raises(ValueError, match="NaN"):
        g.posterior(np.array([[np.nan, 0.0, 1.0]]))
    with pytest.raises(ValueError, match="last dimension"):
        g.posterior(np.ones((4, 2)))


def test_unvalidated_models_allow_signed_parameters():
    m = HMM(-O, T, validate=False)
    assert m.k == 2 and m.d == 3


def test_parse_task_forms():
    assert parse_task("x2x3|x1") == ((2, 3), 1)
    assert parse_task("x_1 ⊗ x_3 | x_2") == ((1, 3), 2)
    assert parse_task(((3, 2), 1)) == ((3, 2), 1)
    assert parse_task((4, 1)) == ((4,), 1)
    for bad in ("x2x3", "x2|x1|x3", ((1,), 1), ((0,), 1)):
        with pytest.raises(ValueError):
            parse_task(bad)
    with pytest.raises(TypeError):
        parse_task(3)


def test_predictor_shapes_and_pmf_rows():
    m = HMM(O, T)
    f = optimal_predictor(m, "x2x3|x1")
    assert f.shape == (3, 3, 3)
    assert np.allclose(f.sum(axis=(1, 2)), 1)
    assert np.allclose(optimal_predictor(m, "x3x2|x1"), f.transpose(0, 2, 1))
    assert np.allclose(optimal_predictor(m, (2,), 1), optimal_predictor(m, "x2|x1"))


def test_ghmm_predictor_is_stable_far_away():
    g = GHMM(np.array([[1.0, 0.0], [0.0, 1.0]]), T)
    f = optimal_predictor(g, "x2|x1")
    far = f(np.array([[1e4, 0.0], [0.0, -1e4]]))
    assert np.all(np.isfinite(far))
    assert np.allclose(far[0], g.M @ g.T[:, 0])
    assert f(np.zeros((4, 5, 2))).shape == (4, 5, 2)
    with pytest.raises(ValueError, match="last dimension"):
        f(np.zeros(3))


def test_sample_statistics_match_predictor():
    rng = np.random.default_rng(0)
    m = HMM(O, T)
    x, h = sample(m, rng, 40000, 2, return_hidden=True)
    assert x.shape == h.shape == (40000, 2) and x.dtype == np.int64
    assert abs(np.mean(h[:, 0]) - 0.5) < 0.02  # stationary uniform
    counts = np.zeros((3, 3))
    np.add.at(counts, (x[:, 0], x[:, 1]), 1)
    cond = counts / counts.sum(axis=1, keepdims=True)
    assert np.max(np.abs(cond - optimal_predictor(m, "x2|x1"))) < 0.03  # ~ 4 / sqrt(n_j)
    y = sample(random_ghmm(3, 2, rng), rng, 5, 4)
    assert y.shape == (5, 4, 3)
    with pytest.raises(ValueError):
        sample(m, rng, 0, 2)
    with pytest.raises(TypeError):
        sample(m, 0, 2, 2)
    with pytest.raises(TypeError, match=r"the order is sample\(model, rng, n, length\)"):
        sample(m, 5, 4, rng)  # the old order


def test_relabeling():
    rng = np.random.default_rng(1)
    m = random_hmm(5, 3, rng)
    r = m.relabel([2, 0, 1])
    assert same_up_to_relabeling(m, r)
    assert np.array_equal(relabeling_distance(m, r).perm, np.argsort([2, 0, 1]))  # O = r.O[:, perm]
    assert not same_up_to_relabeling(m, random_hmm(5, 3, rng))
    with pytest.raises(ValueError, match="permutation"):
        m.relabel([0, 0, 1])
    with pytest.raises(TypeError):
        same_up_to_relabeling(m, random_ghmm(5, 3, rng))


def test_relabeling_errors_are_those_of_the_best_permutation():
    """Errors pinned against a brute force over all permutations (one emission column moved: the error is that
    column's largest entry change, not the smallest over columns)."""
    import itertools

    rng = np.random.default_rng(3)
    m = random_hmm(6, 4, rng)
    O2 = m.relabel([3, 1, 0, 2]).emission.copy()
    O2[:, 1] = 0.7 * O2[:, 1] + 0.3 * np.eye(6)[0]  # still a distribution
    other = HMM(O2, m.relabel([3, 1, 0, 2]).T)
    best = min(
        (
            max(np.abs(m.emission - O2[:, p]).max(), np.abs(m.T - other.T[np.ix_(p, p)]).max()),
            np.abs(m.emission - O2[:, p]).max(),
            np.abs(m.T - other.T[np.ix_(p, p)]).max(),
        )
        for p in map(list, itertools.permutations(range(4)))
    )
    rel = relabeling_distance(m, other)
    assert (rel.error, rel.emission_error, rel.transition_error) == best
    assert rel.emission_error > 0.01 and rel.transition_error < 1e-15


def test_recover_api_errors():
    m = HMM(O, T)
    with pytest.raises(NotIdentifiableError, match="Theorem 4"):
        recover_from_predictor(optimal_predictor(m, "x2|x1"), 2, "x2|x1")
    with pytest.raises(ValueError, match="k <= d"):
        recover_from_predictor(optimal_predictor(m, "x2x3|x1"), 4, "x2x3|x1")
    with pytest.raises(ValueError, match="NaN"):
        recover_from_predictor(np.full((3, 3, 3), np.nan), 2, "x2x3|x1")
    with pytest.raises(ValueError, match=r"\(d, d, d\)"):
        recover_from_predictor(np.ones((3, 3, 2)), 2, "x2x3|x1")
    g = GHMM(np.linalg.qr(np.random.default_rng(0).standard_normal((3, 2)))[0], T)
    with pytest.raises(NotIdentifiableError, match="case 2"):
        recover_from_predictor(optimal_predictor(g, "x1x3|x2"), 2, "x1x3|x2")
    with pytest.raises(ValueError, match="pass d"):
        recover_from_predictor(lambda x: x, 2, "x2|x1")


def test_recover_rejects_rank_deficient_predictors():
    O_bad = np.array([[0.5, 0.5], [0.3, 0.3], [0.2, 0.2]])  # two equal columns: rank O = 1
    bad = HMM(O_bad, T, validate=False)
    with pytest.raises(AssumptionError, match="Assumption 7"):
        recover_from_predictor(optimal_predictor(bad, "x2x3|x1"), 2, "x2x3|x1")


def test_recover_returns_validated_models():
    m = HMM(O, T)
    r = recover_from_predictor(optimal_predictor(m, "x1x3|x2"), 2, "x1x3|x2")
    assert isinstance(r, HMM) and same_up_to_relabeling(m, r, 1e-8)


def test_theorem8_twin_requires_its_hypotheses():
    P = np.roll(np.eye(3), 1, axis=0)
    rng = np.random.default_rng(2)
    M = rng.standard_normal((4, 3))
    M /= np.linalg.norm(M, axis=0)
    with pytest.raises(ValueError, match="proportional"):
        theorem8_case2_pair(GHMM(M, 0.5 * np.eye(3) + 0.3 * P + 0.2 * P.T))
    Q = np.linalg.qr(rng.standard_normal((4, 3)))[0]
    with pytest.raises(ValueError, match="2/k"):
        theorem8_case2_pair(GHMM(Q, 0.8 * np.eye(3) + 0.1 * P + 0.1 * P.T))


def test_claim1_pair_rejects_t1():
    with pytest.raises(ValueError, match="t >= 2"):
        claim1_pair(1)


def test_counterexample_generators_roundtrip(tmp_path):
    ids = [i for i in cx.available() if i.startswith("hmm.")]
    assert {
        "hmm.thm4",
        "hmm.thm6",
        "hmm.claim1",
        "hmm.example247",
        "hmm.thm8",
        "hmm.lemma7",
        "hmm.prop1",
    } <= set(ids)
    path = cx.save("hmm.thm8", tmp_path / "thm8.npz")
    data = np.load(path)
    a = GHMM(data["M"], data["T"])
    b = GHMM(data["M_tilde"], data["T_tilde"])
    X = np.random.default_rng(0).standard_normal((50, 4))
    assert np.max(np.abs(optimal_predictor(a, "x1x3|x2")(X) - optimal_predictor(b, "x1x3|x2")(X))) < 1e-12


def test_strategies_are_exported():
    import theorylab.strategies as s

    for name in ("hmms", "ghmms", "doubly_stochastic_matrices", "column_stochastic_matrices", "unit_means"):
        assert hasattr(s, name)


def test_constructions_reject_bad_sizes_and_nan():
    from theorylab.hmm import householder, random_doubly_stochastic, random_emission

    rng = np.random.default_rng(0)
    with pytest.raises(ValueError, match="d must be a positive int"):
        random_emission(0, 3, rng)
    with pytest.raises(ValueError, match="k must be a positive int"):
        random_doubly_stochastic(0, rng)
    with pytest.raises(ValueError, match="NaN"):
        householder(np.full((3, 2), np.nan))
    with pytest.raises(ValueError, match="d x k"):
        householder(np.ones(3))


@pytest.mark.filterwarnings("ignore::hypothesis.errors.NonInteractiveExampleWarning")
def test_new_functions_reject_bad_input():
    from theorylab.hmm import GHMM, random_hmm
    from theorylab.hmm.fitting import fit_ghmm_samples, fit_hmm_population, hmm_population_loss
    from theorylab.hmm.gaussian import (
        claim5_coefficients,
        hermite_quadrature_expectation,
        lindsay_basak_means,
    )
    from theorylab.strategies.stochastic import nonidentity_permutations, rotations_fixing_ones

    rng = np.random.default_rng(0)
    m = random_hmm(4, 3, rng)
    with pytest.raises(ValueError, match="task must be one of"):
        fit_hmm_population(m, "x1x3|x2")
    with pytest.raises(ValueError, match="steps"):
        fit_hmm_population(m, "x2|x1", steps=-1)
    with pytest.raises(ValueError, match="seed"):
        fit_hmm_population(m, "x2|x1", seeds=())
    with pytest.raises(ValueError, match="task must be one of"):
        hmm_population_loss(m, m, "x3|x2")
    g = GHMM(np.eye(3)[:, :2], np.array([[0.8, 0.2], [0.2, 0.8]]))
    with pytest.raises(ValueError, match="task must be one of"):
        fit_ghmm_samples(g, "x2|x1")
    dens = lambda y: np.exp(-0.5 * np.sum(y**2, axis=1)) / (2 * np.pi) ** (y.shape[1] / 2)  # noqa: E731
    with pytest.raises(ValueError, match="direction"):
        lindsay_basak_means(dens, 2, 1, direction=np.zeros(2))
    with pytest.raises(ValueError, match="k must be"):
        lindsay_basak_means(dens, 2, 0)
    with pytest.raises(ValueError, match="nodes"):
        hermite_quadrature_expectation(dens, 2, [lambda y: y[:, 0]], nodes=1)
    with pytest.raises(ValueError, match="U must be"):
        claim5_coefficients(np.eye(3), np.ones(2))
    with pytest.raises(ValueError, match="min_angle"):
        rotations_fixing_ones(3, max_angle=0.1, min_angle=0.2).example()
    with pytest.raises(ValueError, match="k >= 2"):
        nonidentity_permutations(1).example()


def test_quadrature_moments_of_a_gaussian_are_exact():
    from theorylab.hmm.gaussian import hermite_quadrature_expectation

    mu = np.array([0.7, -1.2])

    def dens(y):
        return np.exp(-0.5 * np.sum((y - mu) ** 2, axis=1)) / (2 * np.pi)

    m = hermite_quadrature_expectation(
        dens, 2, [lambda y: np.ones(len(y)), lambda y: y[:, 0], lambda y: y[:, 1] ** 2]
    )
    assert np.allclose(m, [1.0, 0.7, 1 + 1.2**2], atol=1e-12)
