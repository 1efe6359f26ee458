"""Library tests of the topic family: validation, shapes, sampling, the task and the torch model."""

from __future__ import annotations

from fractions import Fraction as F

import numpy as np
import pytest
from hypothesis import given, settings

from theorylab.attention.topic import stage1 as tp
from theorylab.attention.topic import stage2 as s2
from theorylab.counterexamples import available, save
from theorylab.languages.topic import (
    TopicMLMTask,
    TopicModel,
    empirical_masked_frequencies,
    frequency_vectors,
)
from theorylab.strategies.topic import masking_rates, optimal_value_matrices, topic_models


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        (dict(T=1, v=2, tau=1), ValueError, "T = 2"),
        (dict(T=3, v=0, tau=1), ValueError, "v >= 1"),
        (dict(T=3, v=2, tau=4), ValueError, "tau"),
        (dict(T=3, v=2, tau=0), ValueError, "tau"),
        (dict(T=3.0, v=2, tau=1), TypeError, "T must be an int"),
        (dict(T=True, v=2, tau=1), TypeError, "T must be an int"),
        (dict(T=3, v=2, tau=1, p_m=0.0), ValueError, "p_m"),
        (dict(T=3, v=2, tau=1, p_c=float("nan")), ValueError, "p_c"),
        (dict(T=3, v=2, tau=1, p_r="0.1"), TypeError, "p_r"),
        (dict(T=3, v=2, tau=1, p_c=0.5, p_r=0.5), ValueError, "p_c \\+ p_r < 1"),
    ],
)
def test_topic_model_validation(kwargs, error, match):
    with pytest.raises(error, match=match):
        TopicModel(**kwargs)


def test_constants_reference_values():
    k = tp.constants(TopicModel(10, 10, 3))
    assert k.c1 == pytest.approx(1.4451e-3, rel=1e-4)
    assert k.c2 == pytest.approx(7.3333, rel=1e-4)
    assert k.c3 == pytest.approx(1.156069, rel=1e-6)
    assert (k.w_same, k.w_diff, k.w_mask_col) == pytest.approx((0.108020, -0.007587, 0.054191), abs=1e-6)


def test_exact_parameters_give_fractions():
    p = TopicModel(3, 2, 1, F(3, 20), F(1, 10), F(1, 10))
    assert p.exact and isinstance(p.p1, F)
    W = tp.optimal_value_matrix(p)
    assert W.dtype == object and isinstance(tp.population_loss(W, p), F)


def test_topic_of_and_frequencies():
    p = TopicModel(3, 2, 2)
    assert p.topic_of(np.array([1, 2, 3, 6])).tolist() == [0, 0, 1, 2]
    for bad in (np.array([0]), np.array([7])):
        with pytest.raises(ValueError, match="1..6"):
            p.topic_of(bad)
    with pytest.raises(TypeError):
        p.topic_of(np.array([1.0]))
    y = p.word_frequencies(np.array([0, 2]))
    assert y.sum() == pytest.approx(1.0)
    with pytest.raises(ValueError, match="distinct"):
        p.word_frequencies(np.array([0, 0]))


def test_sampling_shapes_ranges_and_rates(rng):
    p = TopicModel(5, 3, 2, 0.3, 0.2, 0.3)
    docs = p.sample_documents(rng, 50, 400)
    assert docs.shape == (50, 400) and docs.dtype == np.int64 and docs.min() >= 1 and docs.max() <= 15
    assert all(len(set(p.topic_of(d).tolist())) <= 2 for d in docs)
    lda = p.sample_documents(rng, 20, 100, lda_alpha=0.1)
    assert lda.min() >= 1 and lda.max() <= 15
    masked, in_m = p.mask_documents(rng, docs)
    assert in_m.mean() == pytest.approx(0.3, abs=0.02)
    assert (masked[~in_m] == docs[~in_m]).all()
    assert (masked[in_m] == 0).mean() == pytest.approx(0.5, abs=0.03)
    with pytest.raises(ValueError):
        p.mask_documents(rng, docs[0])
    with pytest.raises(ValueError):
        p.sample_documents(rng, 2, 0)
    with pytest.raises(ValueError):
        p.sample_documents(rng, 2, 5, lda_alpha=-1.0)


def test_frequency_vectors_rows_sum_to_one():
    f = frequency_vectors(np.array([[0, 1, 1, 2], [2, 2, 2, 2]]), 3)
    assert f.tolist() == [[0.25, 0.5, 0.25], [0.0, 0.0, 1.0]]


def test_frequency_vectors_rejects_bad_tokens():
    with pytest.raises(ValueError, match="0..2"):
        frequency_vectors(np.array([[0, 1, 3]]), 3)
    with pytest.raises(ValueError, match="0..2"):
        frequency_vectors(np.array([[0, 1, -1]]), 3)  # would silently count as token V - 1
    with pytest.raises(TypeError, match="integers"):
        frequency_vectors(np.array([[0.5, 1.0]]), 3)
    with pytest.raises(ValueError, match="shape"):
        frequency_vectors(np.array([0, 1]), 3)


def test_stage2_verdicts_reject_bad_input():
    p = TopicModel(10**3, 10, 10)
    with pytest.raises(ValueError, match="finite"):
        s2.gamma_in_interval(p, float("nan"))
    with pytest.raises(ValueError, match="'proved' or 'stated'"):
        s2.gamma_in_interval(p, 5.0, "printed")
    with pytest.raises(ValueError, match="finite"):
        s2.diagonal_bounds_hold(p, float("nan"), 10.0)
    with pytest.raises(ValueError, match="n_docs >= 2"):
        empirical_masked_frequencies(p, np.random.default_rng(0), 1, 10)


def test_population_loss_validation():
    p = TopicModel(3, 2, 1)
    with pytest.raises(ValueError, match="shape"):
        tp.population_loss(np.zeros((6, 6)), p)
    W = np.zeros((7, 7))
    W[1, 1] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        tp.population_loss(W, p)
    with pytest.raises(TypeError):
        tp.population_loss(np.full((7, 7), "a"), p)
    with pytest.raises(ValueError, match="bias"):
        tp.population_loss(np.zeros((7, 7)), p, bias=np.zeros(3))
    assert tp.population_loss(np.zeros((7, 7)), p) == pytest.approx(1.0)  # predicting 0 costs ||x||^2 = 1


def test_enumeration_guard():
    with pytest.raises(ValueError, match="subsets"):
        tp.population_loss_enumerated(np.zeros((201, 201)), TopicModel(20, 10, 10), max_subsets=10)


def test_sparse_hypothesis_is_enforced():
    p = TopicModel(3, 2, 3)
    with pytest.raises(ValueError, match="tau <= T - 1"):
        tp.optimal_value_matrix(p)
    with pytest.raises(ValueError, match="tau <= T - 1"):
        tp.is_optimal_value_matrix(np.zeros((7, 7)), p)
    assert tp.optimal_value_matrix(p, require_sparse=False).shape == (7, 7)


def test_family_member_validation():
    p = TopicModel(3, 2, 1)
    with pytest.raises(ValueError, match="u must"):
        tp.value_matrix_from_family(p, np.zeros(3))
    with pytest.raises(ValueError, match="sum to 1"):
        tp.value_matrix_from_family(p, np.zeros(7), np.ones((7, 3, 2)))
    with pytest.raises(ValueError, match="splits must have shape"):
        tp.value_matrix_from_family(p, np.zeros(7), np.ones((7, 3, 3)))


def test_ridge_and_report():
    p = TopicModel(3, 2, 1)
    with pytest.raises(ValueError, match="positive"):
        tp.ridge_value_matrix(p, 0.0)
    report = tp.is_optimal_value_matrix(np.zeros((7, 7)), p)
    assert not report and report.max_violation > 1 and set(report.violations) >= {"mask_column"}


def test_stage2_validation():
    p = TopicModel(10, 10, 3)
    with pytest.raises(ValueError, match="convention"):
        s2.block_attention_loss(1.0, p, "other")
    with pytest.raises(ValueError, match="positive"):
        s2.block_attention_loss(-1.0, p)
    with pytest.raises(ValueError, match="positive"):
        s2.diagonal_attention_loss(1.0, np.nan, p)
    with pytest.raises(ValueError, match="kind"):
        s2.denoiser_matrix(p, "other")
    with pytest.raises(ValueError, match="share one value"):
        s2.gamma_only_gap(s2.denoiser_matrix(p), p, False, pairs=[(1.0, 1.0), (2.0, 2.0)])
    assert s2.block_attention_loss(np.array([1.0, 2.0]), p).shape == (2,)
    k = s2.stage2_constants(TopicModel(10, 1, 3))
    assert np.isnan(k.lambda4) and k.lambda5 == np.inf


def test_counterexamples_registered_and_saved(tmp_path):
    ids = {"topic.thm2.1.1", "topic.thm2.1.2", "topic.lemma2.1.1", "topic.remark2.1.8", "topic.table2.1"}
    assert ids <= set(available())
    path = save("topic.thm2.1.1", tmp_path / "c.npz")
    with np.load(path) as data:
        assert float(data["loss_printed"]) > float(data["loss_optimal"])


@settings(max_examples=10)
@given(rates=masking_rates(exact=True), params=topic_models(exact=True))
def test_strategies_produce_valid_objects(rates, params):
    assert 0 < rates[0] < 1 and rates[1] + rates[2] < 1
    assert 1 <= params.tau < params.T and params.exact


@settings(max_examples=5)
@given(member=optimal_value_matrices(TopicModel(3, 2, 1)))
def test_family_strategy_members(member):
    W, u = member
    assert W.shape == (7, 7) and u.shape == (7,)


# ------------------------------------------------------------------------------------------ torch parts
def test_task_batches_pass_harness_checks(rng):
    from theorylab.nn.tasks import check_batch, check_task

    p = TopicModel(4, 3, 2)
    task = TopicMLMTask(p)
    check_task(task)
    batch = check_batch(task.sample_batch(rng, 5, 16), task, 5, 16)
    assert batch.targets.shape == (5, 16, p.V)
    assert np.allclose(batch.targets.sum(-1), 1.0)
    pooled = TopicMLMTask(p, pool=20, pool_length=16)
    a = pooled.pool_arrays()
    assert all(
        np.array_equal(x, y)
        for x, y in zip(a, TopicMLMTask(p, pool=20, pool_length=16).pool_arrays(), strict=True)
    )
    check_batch(pooled.sample_batch(rng, 4, 16), pooled, 4, 16)
    with pytest.raises(ValueError, match="pool"):
        pooled.sample_batch(rng, 4, 8)
    with pytest.raises(ValueError, match="no fixed pool"):
        task.pool_arrays()


def test_model_uniform_path_matches_attention_path():
    import torch

    from theorylab.attention.topic.model import TopicAttentionConfig

    p = TopicModel(4, 3, 2)
    tokens = torch.as_tensor(np.random.default_rng(0).integers(0, p.V, size=(3, 9)))
    uniform = TopicAttentionConfig(V=p.V, init_value=0.5).build(1)
    general = TopicAttentionConfig(V=p.V, init_value=0.5, train_attention=True).build(1)  # K = Q = 0 exactly
    assert uniform.uniform and not general.uniform
    assert torch.allclose(uniform(tokens), general(tokens), atol=1e-6)
    assert uniform(tokens).shape == (3, 9, p.V)
    A = general.attention(tokens)
    assert torch.allclose(A.sum(dim=1), torch.ones(3, 9))
    with pytest.raises(ValueError, match="fixed_value"):
        TopicAttentionConfig(V=p.V, fixed_value=((0.0,),)).build(0)


def test_least_squares_reference_beats_closed_form_on_its_data(rng):
    from theorylab.attention.topic.model import least_squares_value_matrix

    p = TopicModel(3, 2, 1)
    docs = p.sample_documents(rng, 300, 40)
    masked, in_m = p.mask_documents(rng, docs)
    W_ls = least_squares_value_matrix(masked, docs, in_m, p.V)
    y = frequency_vectors(masked, p.V)

    def pooled_loss(W):
        pred = y @ W.T  # [n, V]
        onehot = np.eye(p.V)[docs]
        return float((((pred[:, None, :] - onehot) ** 2).sum(-1) * in_m).sum() / in_m.sum())

    assert pooled_loss(W_ls) <= pooled_loss(tp.optimal_value_matrix(p)) + 1e-12


def test_stage_onsets():
    from theorylab.attention.topic.model import stage_onsets

    steps = np.array([0, 1, 2, 3])
    onsets = stage_onsets(steps, [1, 1, 1, 3], [1, 1, 1, 1], [0, 5, 9, 10])
    assert onsets == {"t_V": 1.0, "t_KQ": 3.0}
    assert stage_onsets(steps, [1, 1, 1, 1], [1, 1, 1, 1], [0, 5, 9, 10])["t_KQ"] == np.inf


def test_attention_family_bad_input():
    from fractions import Fraction as F

    from theorylab.attention.topic import stage2 as s2

    p = TopicModel(4, 3, 2, F(3, 20), F(1, 10), F(1, 10))
    with pytest.raises(ValueError, match="normalise"):
        s2.attended_frequencies(p, 2, 5, normalise="rows")
    with pytest.raises(ValueError, match="alpha"):
        s2.attended_frequencies(p, 0, 5)
    with pytest.raises(ValueError, match="distinct present topics"):
        s2.attended_frequencies(p, 2, 5, topics=(0, 0))
    with pytest.raises(ValueError, match="distinct present topics"):
        s2.attended_frequencies(p, 2, 5, topics=(0, 7))
    # the printed and the corrected normalisation differ on this document, and the corrected one is exact
    A = s2.attended_frequencies(p, F(2), F(5))
    assert A.dtype == object and all(c == 1 for c in A.sum(axis=0))


def test_ratio_attention_and_embedding_model_bad_input():
    import torch

    from theorylab.attention.topic.model import (
        TopicEmbeddingConfig,
        attention_gap_closed,
        ratio_attention,
        top_eigen_share,
    )

    p = TopicModel(3, 2, 1)
    with pytest.raises(ValueError, match="beta"):
        ratio_attention(p, 1.0, 0.0)
    with pytest.raises(ValueError, match="alpha"):
        ratio_attention(p, float("nan"), 1.0)
    with pytest.raises(ValueError, match="bias"):
        TopicEmbeddingConfig(V=p.V, d=4, bias=(0.0,)).build(0)
    with pytest.raises(ValueError, match="gamma"):
        attention_gap_closed(-1.0, TopicModel(10, 10, 3))
    model = TopicEmbeddingConfig(V=p.V, d=4, bias=tuple(tp.embedding_bias(p).astype(float))).build(0)
    out = model(torch.as_tensor(np.array([[1, 2, 0, 3]])))
    assert out.shape == (1, 4, p.V) and torch.allclose(out[0, 0], out[0, 3])  # uniform attention
    E = model.gram().detach().numpy()
    assert np.allclose(E, E.T) and 0 < top_eigen_share(E, 2) <= 1 and abs(top_eigen_share(E, p.V) - 1) < 1e-6


def test_diagonal_loss_scalar_path_is_bit_identical_to_the_array_path():
    """The optimiser's scalar evaluations (Python floats) give the 0-d-array values to the last bit, and the
    optimum of Thm 2.1.5 does not depend on which path evaluated it."""
    rng = np.random.default_rng(5)
    for p in (TopicModel(20, 3, 4), TopicModel(10**4, 10, 30)):
        for convention in ("thesis", "literal"):
            loss = s2._diagonal_loss(p, convention)
            al, be = 10.0 ** rng.uniform(-6, 6, 40), 10.0 ** rng.uniform(-4, 10, 40)
            grid = s2.diagonal_attention_loss(al, be, p, convention)
            assert [loss(float(a), float(b)) for a, b in zip(al, be, strict=True)] == grid.tolist()
            assert [s2.diagonal_attention_loss(a, b, p, convention) for a, b in zip(al, be, strict=True)] == [
                loss(float(a), float(b)) for a, b in zip(al, be, strict=True)
            ]
    with pytest.raises(ValueError, match="attention ratio alpha must be positive and finite"):
        s2.optimal_diagonal_attention(TopicModel(20, 3, 4), log10_alpha=(-400.0, 0.0))
