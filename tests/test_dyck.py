"""Library tests of the Dyck family: API, validation errors, edge cases."""

from __future__ import annotations

from dataclasses import replace
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings

from theorylab.attention.dyck import balance as db
from theorylab.attention.dyck import bounds as bd
from theorylab.attention.dyck.exact import ExpSum, dyadic_integers
from theorylab.languages.dyck import Dyck
from theorylab.strategies import dyck_prefixes


# ------------------------------------------------------------------------------------------------ language
@pytest.mark.parametrize("k,depth", [(0, 2), (2, 0), (-1, 3)])
def test_bad_sizes_raise(k, depth):
    with pytest.raises(ValueError, match="must be >= 1"):
        Dyck(k, depth)


@pytest.mark.parametrize("q", [0.0, 1.0, -0.5, float("nan")])
def test_bad_q_raises(q):
    with pytest.raises(ValueError, match="open interval"):
        Dyck(2, 3, q)


def test_non_int_sizes_raise():
    with pytest.raises(TypeError):
        Dyck(2.0, 3)  # type: ignore[arg-type]


def test_tokens_outside_alphabet_raise():
    lang = Dyck(2, 3)
    with pytest.raises(ValueError, match="outside the alphabet"):
        lang.is_prefix([0, 4])
    with pytest.raises(ValueError, match="outside the alphabet"):
        lang.next_token_distribution([-1])
    with pytest.raises(TypeError):
        lang.is_prefix([0.5, 1.0])
    with pytest.raises(ValueError, match="NaN"):
        lang.is_prefix(np.array([0.0, np.nan]))


def test_non_prefix_raises_where_a_prefix_is_required():
    lang = Dyck(2, 2)
    for bad in ([1], [0, 3], [0, 0, 0]):
        assert not lang.is_prefix(bad)
        with pytest.raises(ValueError, match="not a prefix"):
            lang.next_token_distribution(bad)
        with pytest.raises(ValueError, match="not a prefix"):
            db.construct_solution(2, 2).predict(np.array(bad))


def _scan_loop(lang: Dyck, arr: np.ndarray):
    """The stack automaton one token at a time (the reference for ``Dyck.scan``; a copy of the implementation
    before its vectorised path)."""
    B, T = arr.shape
    stack = np.zeros((B, lang.depth + 1), dtype=np.int64)
    depth, ok, rows = np.zeros(B, dtype=np.int64), np.ones(B, dtype=bool), np.arange(B)
    valid = np.ones((B, T + 1), dtype=bool)
    depths, tops = np.zeros((B, T + 1), dtype=np.int64), np.full((B, T + 1), -1, dtype=np.int64)
    for i in range(T):
        typ, is_close = arr[:, i] // 2, arr[:, i] % 2 == 1
        top = np.where(depth > 0, stack[rows, np.clip(depth - 1, 0, None)], -1)
        ok &= np.where(is_close, (depth > 0) & (top == typ), depth < lang.depth)
        push = ok & ~is_close
        stack[rows[push], depth[push]] = typ[push]
        depth = np.where(ok, depth + np.where(is_close, -1, 1), depth)
        valid[:, i + 1], depths[:, i + 1] = ok, depth
        tops[:, i + 1] = np.where(depth > 0, stack[rows, np.clip(depth - 1, 0, None)], -1)
    return valid, depths, tops


@pytest.mark.parametrize("k,depth", [(1, 1), (2, 2), (2, 4), (3, 3)])
def test_scan_equals_the_token_by_token_automaton(k, depth):
    rng = np.random.default_rng(10 * k + depth)
    lang = Dyck(k, depth)
    samples = lang.sample(rng, 64, 40)  # valid prefixes
    noisy = samples.copy()
    flip = rng.random(noisy.shape) < 0.03  # valid up to a random point, then anything
    noisy[flip] = rng.integers(0, 2 * k, int(flip.sum()))
    uniform = rng.integers(0, 2 * k, (64, 40))  # mostly invalid early
    wide = np.vstack([noisy] * (2048 // (64 * depth) + 1))  # past the vectorised path's batch x depth
    tiny = (samples[:1, :1], samples[:1], noisy[:6], uniform[:6], uniform[:1, :0])  # the plain loop
    for arr in (samples, noisy, uniform, samples[:, :0], wide, *tiny):
        got, want = lang.scan(arr), _scan_loop(lang, arr)
        for g, w in zip(got, want, strict=True):
            assert np.array_equal(g, w)
    assert lang.scan(samples)[0].all() and 0 < lang.scan(noisy)[0][:, -1].mean() < 1


def test_scan_without_the_transition_table_is_the_same(monkeypatch):
    import theorylab.languages.dyck as dyck_module

    rng = np.random.default_rng(7)
    lang = Dyck(2, 3)
    arr = np.vstack([lang.sample(rng, 600, 30), rng.integers(0, 4, (600, 30))])  # wide: the stepwise path
    with_table = lang.scan(arr)
    monkeypatch.setattr(dyck_module, "_STACK_TABLE_MAX", 0)  # the explicit stack arrays instead
    for got, want in zip(lang.scan(arr), with_table, strict=True):
        assert np.array_equal(got, want)
    for got, want in zip(with_table, _scan_loop(lang, arr), strict=True):
        assert np.array_equal(got, want)


def test_scan_of_an_empty_batch_has_the_dtypes_of_the_array_path(monkeypatch):
    import theorylab.languages.dyck as dyck_module

    lang = Dyck(2, 3)
    empty = np.zeros((0, 5), dtype=np.int64)
    looped = lang.scan(empty)  # 0 tokens: the plain loop
    monkeypatch.setattr(dyck_module, "_SCAN_LOOP_UP_TO", -1)
    for got, want in zip(looped, lang.scan(empty), strict=True):
        assert got.dtype == want.dtype and got.shape == want.shape
    assert [x.dtype for x in looped] == [np.dtype(bool), np.dtype(np.int64), np.dtype(np.int64)]


def test_uniform_layer1_lookup_per_distinct_position_is_the_nearest_feature(rng):
    sol = db.uniform_attention_solution(2, 3)
    seqs = np.vstack([sol.language.all_prefixes(7), sol.language.sample(rng, 4, 7)])
    feats, table = sol.layer1_features(seqs), sol.feature_table()
    nearest = np.argmin(np.linalg.norm(feats[..., None, :] - table, axis=-1), axis=-1)
    assert np.array_equal(sol.layer1_indices(seqs), nearest)
    small = [rng.integers(0, 50, (30, 4)), rng.integers(0, 9, (30, 4))]
    for cols in (small, small + [rng.integers(0, 2**40, (30, 4))]):  # a dense code table, or np.unique
        codes, keys = db._distinct_codes(cols)
        for key, col in zip(keys, cols, strict=True):
            assert np.array_equal(key[codes], col.ravel())
        assert (
            codes.max() + 1 == len(keys[0]) == len(set(zip(*(c.ravel().tolist() for c in cols), strict=True)))
        )
    rows, inverse = db._distinct_rows(np.array([[3, 300], [1, 2], [3, 300], [1, 2], [0, 0]]))
    assert len(rows) == 3 and np.array_equal(rows[inverse], [[3, 300], [1, 2], [3, 300], [1, 2], [0, 0]])


def test_next_token_distribution_cases():
    lang = Dyck(2, 2, Fraction(1, 3))
    assert lang.next_token_distribution([], exact=True) == (Fraction(1, 2), 0, Fraction(1, 2), 0)
    assert lang.next_token_distribution([2], exact=True) == (
        Fraction(1, 6),
        0,
        Fraction(1, 6),
        Fraction(2, 3),
    )
    assert lang.next_token_distribution([2, 0], exact=True) == (0, 1, 0, 0)
    assert np.allclose(lang.next_token_distribution([2, 0]), [0, 1, 0, 0])


def test_words_and_probability():
    lang = Dyck(1, 3)
    assert lang.is_word([0, 0, 1, 1]) and not lang.is_word([0, 0, 1])
    assert lang.probability([1]) == 0
    assert lang.probability([0, 1], exact=False) == pytest.approx(0.5)


def test_sample_shapes_and_validity(rng):
    lang = Dyck(3, 4, 0.7)
    x = lang.sample(rng, 7, 33)
    assert x.shape == (7, 33) and x.dtype == np.int64
    assert all(lang.is_prefix(s) for s in x)
    assert lang.sample(rng, 0, 5).shape == (0, 5)
    with pytest.raises(TypeError):
        lang.sample(0, 2, 3)  # type: ignore[arg-type]


def test_counts_edge_cases():
    lang = Dyck(2, 1)
    assert lang.count_prefixes(0) == 1 == len(lang.all_prefixes(0))
    assert [lang.count_prefixes(n) for n in range(1, 5)] == [2, 2, 4, 4]
    with pytest.raises(ValueError):
        lang.count_prefixes(-1)


def test_population_loss_of_truth_and_of_uniform():
    lang = Dyck(2, 3)
    truth = lang.population_loss(lang.next_token_distributions, 6)
    assert truth.excess == 0 and truth.loss == pytest.approx(truth.optimal)
    uniform = lang.population_loss(lambda s: np.full((len(s), s.shape[1] + 1, 4), 0.25), 6)
    assert uniform.excess > 0 and uniform.loss == pytest.approx(uniform.optimal + uniform.excess)
    with pytest.raises(ValueError, match="shape"):
        lang.population_loss(lambda s: np.zeros((len(s), 2)), 3)


@settings(max_examples=20)
@given(prefix=dyck_prefixes(2, 3, 20))
def test_strategy_draws_valid_prefixes(prefix):
    assert Dyck(2, 3).is_prefix(prefix)


# ------------------------------------------------------------------------------------------------ balance
def test_indices_are_a_bijection():
    k, D = 2, 3
    opens = [db.open_index(t, d, D) for t in range(k) for d in range(1, D + 1)]
    closes = [db.close_index(t, d, D) for t in range(k) for d in range(D)]
    assert sorted(opens + closes) == list(range(2 * k * D))
    idx = db.token_indices(Dyck(k, D), np.array([[0, 2, 3, 1]]))
    assert idx.tolist() == [
        [
            2 * k * D,
            db.open_index(0, 1, D),
            db.open_index(1, 2, D),
            db.close_index(1, 1, D),
            db.close_index(0, 0, D),
        ]
    ]


def test_projection_is_idempotent_and_orthogonal(rng):
    k, D = 2, 3
    E = rng.normal(size=(15, 13))
    M = rng.normal(size=(15, 15))
    P = db.project_to_balanced(M, k, D, E)
    w = db.DyckWeights(k, D, E, P, np.zeros((15, 15)))
    assert db.balance_violation(w) < 1e-10
    assert np.allclose(db.project_to_balanced(P, k, D, E), P)
    assert abs(np.sum((M - P) * P)) < 1e-8 * np.sum(M * M)  # Frobenius-orthogonal


def test_balance_is_vacuous_with_one_query():
    w = db.DyckWeights(
        1, 2, db.one_hot_embeddings(1, 2), np.random.default_rng(0).normal(size=(5, 5)), np.eye(5)
    )
    assert db.balance_violation(w) == 0.0 and db.is_balanced(w) and db.is_balanced(w, tol=0)


def test_weights_validation():
    E = db.one_hot_embeddings(2, 2)
    with pytest.raises(ValueError, match="shape"):
        db.DyckWeights(2, 2, E[:, :5], np.eye(9), np.eye(9))
    with pytest.raises(ValueError, match="NaN"):
        db.DyckWeights(2, 2, E, np.full((9, 9), np.nan), np.eye(9))
    with pytest.raises(ValueError, match="shape"):
        db.project_to_balanced(np.eye(3), 2, 2)
    with pytest.raises(ValueError, match="tol"):
        db.is_balanced(db.DyckWeights(2, 2, E, np.eye(9), np.eye(9)), tol=-1)


def test_construct_solution_validation(rng):
    with pytest.raises(ValueError, match="balance condition"):
        db.construct_solution(2, 3, rng.normal(size=(13, 13)))
    with pytest.raises(ValueError, match="linearly independent"):
        db.construct_solution(2, 2, None, embeddings=np.ones((9, 9)))
    with pytest.raises(ValueError, match="must have shape"):
        db.construct_solution(2, 2, None, embeddings=np.eye(4))
    with pytest.raises(ValueError):
        db.construct_solution(0, 2)


def test_generic_embeddings_construction(rng):
    k, D = 2, 3
    E = rng.normal(size=(16, 13))
    M = db.project_to_balanced(rng.normal(size=(16, 16)), k, D, E)
    sol = db.construct_solution(k, D, M, embeddings=E)
    lang = sol.language
    x = lang.sample(rng, 20, 60)
    assert np.abs(sol.predict(x) - lang.next_token_distributions(x)).max() == 0.0
    assert np.allclose(sol.weights.W_V @ E[:, -1], 0.0)  # the start token carries no value


def test_pumping_none_for_balanced_and_raises():
    sol = db.construct_solution(2, 3)
    assert db.find_pumping_counterexample(sol) is None
    with pytest.raises(ValueError, match="no pumping counterexample"):
        db.pumping_counterexample(sol)


def test_pumped_strings_are_prefixes():
    rng = np.random.default_rng(3)
    M = db.random_balanced_attention(2, 3, rng) + 0.3 * rng.normal(size=(13, 13))
    ce = db.pumping_counterexample(db.construct_solution(2, 3, M, allow_unbalanced=True))
    for p in ce.pumped(5):
        assert Dyck(2, 3).is_prefix(p)
    with pytest.raises(ValueError):
        ce.pumped(-1)


def test_with_value_offsets_validation():
    sol = db.construct_solution(2, 2)
    with pytest.raises(ValueError, match="shape"):
        db.with_value_offsets(sol, np.zeros(3))
    assert np.allclose(db.with_value_offsets(sol, sol.offsets).weights.W_V, sol.weights.W_V)


def test_exact_model_distribution_validation():
    sol = db.construct_solution(2, 2)
    with pytest.raises(ValueError, match="pumping spec"):
        db.exact_model_distribution(sol, [0, 1], (5, 0, 1))
    with pytest.raises(ValueError, match="depth"):
        db.exact_model_distribution(sol, [0, 0, 1], (2, 0, 1))


def test_stack_separation_needs_two_types():
    with pytest.raises(ValueError, match="k >= 2"):
        db.stack_separation(db.construct_solution(1, 3).weights)


def test_printed_decoder_flag_changes_nothing_for_k1():
    sol = db.construct_solution(1, 3)
    x = Dyck(1, 3).all_prefixes(8)
    assert np.array_equal(replace(sol, subtract_residual=False).predict(x), sol.predict(x))


# ------------------------------------------------------------------------------------------------ exact arithmetic
def test_expsum_exact_cancellation_and_sign():
    x = Fraction(1, 3)
    a = ExpSum.of([(2, x), (-1, 0)])
    assert (a - a).is_zero() and (a - a).sign() == 0
    assert ExpSum.of([(1, x), (-1, x)]).is_zero()
    tiny = ExpSum.of([(1, Fraction(1, 2**40)), (-1, 0)])  # e^(2^-40) - 1 > 0
    assert tiny.sign() == 1 and (-tiny).sign() == -1
    assert ExpSum.of([(10**15, 0)]) > ExpSum.of([(1, 34)])  # 1e15 > e^34 = 5.8e14
    with pytest.raises(ValueError):
        ExpSum.of([(1, float("nan"))])


# ------------------------------------------------------------------------------------------------ bounds
def test_bound_validation():
    with pytest.raises(ValueError, match="too large"):
        bd.approx_balance_constant(4, 0.5, 1.0, 1.0)
    with pytest.raises(ValueError):
        bd.lemma24_radius(0.0)
    with pytest.raises(ValueError, match="N > 8D"):
        bd.approx_balance_report(db.construct_solution(2, 4).weights, 20)
    with pytest.raises(ValueError, match="k >= 2"):
        bd.approx_balance_report(db.construct_solution(1, 2).weights, 40)
    with pytest.raises(ValueError, match="component"):
        bd.same_component_pair(2, 2, "W_Q", np.random.default_rng(0))
    assert bd.weight_decay_threshold(2, 0.5, 10, 1.0, 2.0) == pytest.approx(2 * (1 / 16) ** 10 / 4)


# ------------------------------------------------------------------------------------------------ torch model
def test_trained_model_api(rng):
    torch = pytest.importorskip("torch")
    from theorylab.attention.dyck import trained as dt
    from theorylab.nn.tasks import check_batch

    task = dt.DyckTask(2, 3, 0.5)
    batch = check_batch(task.sample_batch(rng, 5, 12), task, 5, 12)
    model = dt.DyckMinimalConfig(2, 3, width=8, contrastive=0.5).build(0)
    x = torch.from_numpy(batch.inputs)
    model.train()
    out, penalty = model(x)
    assert out.shape == (5, 12, 4) and float(penalty.detach()) >= 0
    model.eval()
    assert model(x).shape == (5, 12, 4)
    probs = dt.next_token_probabilities(model, batch.inputs)
    assert probs.shape == (5, 13, 4) and np.allclose(probs.sum(-1), 1)
    w = dt.weights_of(model)
    assert w.M.shape == (13, 13) and np.allclose(w.M, (model.W_K.T @ model.W_Q).detach().numpy(), atol=1e-6)
    assert 0 <= dt.closing_accuracy(model, Dyck(2, 3), batch.inputs) <= 1
    assert dt.random_attention_variation(1) == 0.0
    with pytest.raises(ValueError):
        dt.DyckMinimalConfig(2, 3, contrastive=-1.0)


@pytest.mark.parametrize(
    "call, match",
    [
        (lambda: bd.softmax_l1_bound(-0.1), "eps must be >= 0"),
        (lambda: bd.softmax_l1_bound(float("nan")), "eps must be >= 0"),
        (lambda: bd.min_prefix_probability_bound(2, 1.5, 8), "0 < q < 1"),
        (lambda: bd.min_prefix_probability_bound(0, 0.5, 8), "k >= 1"),
        (lambda: bd.approx_balance_constant(4, 0.5, float("nan"), 0.0), "gamma > 0"),
        (lambda: bd.approx_balance_constant(4, 0.5, 1.0, float("nan")), "eps >= 0"),
        (lambda: bd.lemma41_corrected(np.array([0.0, 2.0]), 0.0), "M .* must be finite and > 0"),
        (lambda: bd.lemma41_corrected(np.array([0.0, np.nan]), 1.0), "NaN"),
        (lambda: bd.lemma41_printed(np.zeros((2, 2)), 1.0), "non-empty vector"),
        (lambda: db.random_balanced_attention(2, 3, np.random.default_rng(0), float("nan")), "scale"),
    ],
)
def test_bound_helpers_reject_bad_input(call, match):
    with pytest.raises(ValueError, match=match):
        call()


def test_former_flat_module_paths_resolve_to_the_subpackages():
    """theorylab.attention.dyck_* / topic_* moved into attention/dyck and attention/topic; the old paths still
    import, as the same module objects."""
    import importlib

    import theorylab.attention as att

    for old, new in att.MOVED.items():
        if old.endswith(("trained", "model")):  # torch modules: covered by their own tests
            continue
        assert importlib.import_module(f"theorylab.attention.{old}") is importlib.import_module(new)
        assert getattr(att, old) is importlib.import_module(new)
    from theorylab.attention import topic
    from theorylab.attention.topic import stage1, stage2

    assert (
        topic.optimal_value_matrix is stage1.optimal_value_matrix
        and topic.optimal_gamma is stage2.optimal_gamma
    )


# ------------------------------------------------------------------------------------------------ new API (wave 3)
def test_predict_last_equals_last_position_of_predict():
    sol = db.construct_solution(2, 3, db.random_balanced_attention(2, 3, np.random.default_rng(0), 1.0))
    x = sol.language.sample(np.random.default_rng(1), 16, 9)
    assert np.array_equal(sol.predict_last(x), sol.predict(x)[:, -1])
    uni = db.uniform_attention_solution(2, 3)
    assert np.array_equal(uni.predict_last(x), uni.predict(x)[:, -1])


def test_probabilities_batch_matches_scalar_and_rejects_non_prefixes():
    lang = Dyck(2, 3, Fraction(1, 3))
    seqs = lang.all_prefixes(5)
    assert lang.probabilities(seqs) == [lang.probability(s) for s in seqs]
    with pytest.raises(ValueError, match="not a prefix"):
        lang.probabilities(np.array([[1, 0]]))


def test_relu_mlp_validation_and_bounds():
    from theorylab.attention.dyck import mlp

    with pytest.raises(ValueError, match="at least one layer"):
        mlp.ReluMLP(())
    with pytest.raises(ValueError, match="inputs"):
        mlp.ReluMLP(((np.ones((3, 2)), np.zeros(3)), (np.ones((2, 4)), np.zeros(2))))
    with pytest.raises(ValueError):
        mlp.lipschitz_from_norm(-1.0, 2)
    sol = mlp.mlp_solution(db.construct_solution(2, 3))
    with pytest.raises(ValueError):
        mlp.weight_decay_threshold_for(sol, 0, 0.1)
    assert 0 < mlp.top_slot_margin(sol.base) <= 1


def test_architecture_validation():
    from theorylab.attention.dyck import architecture as ar

    sol = db.construct_solution(2, 3)
    with pytest.raises(ValueError, match="block"):
        ar.block_hidden(sol, [0, 1], None, block="pre_ln")
    with pytest.raises(ValueError, match="pumping"):
        ar.block_hidden(sol, [0, 0, 0], (3, 0, 1))  # a pair at depth 3 = D cannot be inserted
    layers = [ar.TheoryLayer(np.eye(2), np.eye(2), np.eye(2), np.eye(2), np.zeros(2), np.eye(2), np.zeros(2))]
    with pytest.raises(ValueError, match="start token"):
        ar.theory_transformer(layers, np.eye(2, 3), np.eye(2), np.zeros(2), np.array([[2]]))


def test_trained_helpers_validation():
    pytest.importorskip("torch")
    from theorylab.attention.dyck import trained as dt

    with pytest.raises(ValueError, match="block"):
        dt.DyckMinimalConfig(block="pre_ln")
    with pytest.raises(ValueError, match="window"):
        dt.window_closing_accuracy(np.zeros((1, 2), dtype=np.int64), -1, 4)
    x = Dyck(2, 4).sample(np.random.default_rng(0), 200, 12)
    accs = [dt.window_closing_accuracy(x, w, 4) for w in range(4)]
    assert accs == sorted(accs) and accs[-1] <= 1.0  # longer windows never hurt the in-sample Bayes rule


# ------------------------------------------------------------------------------------------ exact arithmetic
def _fraction_matrix(a) -> list[list[Fraction]]:
    return [[Fraction(x) for x in row] for row in np.asarray(a, dtype=np.float64).tolist()]


def test_exact_scores_and_balance_matrix_are_the_rationals_of_the_float_weights():
    """Integer-over-power-of-two arithmetic against plain Fractions, on weights whose entries have very
    different binary exponents (so a wrong common shift changes the values) and exact zeros."""
    rng = np.random.default_rng(4)
    for k, depth, m in [(2, 3, 13), (3, 2, 5), (1, 4, 9)]:
        n = 2 * k * depth + 1
        E = rng.standard_normal((m, n)) * np.exp2(rng.integers(-40, 40, (m, n)))
        M = rng.standard_normal((m, m)) * np.exp2(rng.integers(-40, 40, (m, m)))
        E[rng.random((m, n)) < 0.3] = 0.0
        w = db.DyckWeights(k, depth, E, M, np.eye(m))
        Ef, Mf = _fraction_matrix(E), _fraction_matrix(M)
        ME = [[sum(Mf[r][s] * Ef[s][q] for s in range(m)) for q in range(n)] for r in range(m)]
        G = [[sum(Ef[r][c] * ME[r][q] for r in range(m)) for q in range(n)] for c in range(n)]  # e_c^T M e_q
        for q in (0, n // 2, n - 1):
            assert db._exact_scores(w, range(n), q) == {c: G[c][q] for c in range(n)}
        opens, closes = db._pair_columns(k, depth)
        queries = db._query_columns(k, depth)
        want = [
            [G[int(o)][int(qc)] - G[int(c)][int(qc)] for qc in queries]
            for o, c in zip(opens, closes, strict=True)
        ]
        assert db._balance_matrix_exact(w) == want
    N, s = dyadic_integers(np.array([[0.75, -3.0], [2.0**-60, 0.0]]))
    assert [[Fraction(x, 2**s) for x in row] for row in N] == [[Fraction(3, 4), -3], [Fraction(1, 2**60), 0]]
    with pytest.raises(ValueError, match="finite float matrix"):
        dyadic_integers(np.array([[np.inf]]))
    # integers need no power of two, and neither does an empty matrix: s = 0 (the smallest common exponent)
    assert dyadic_integers(np.array([[1.0, -2.0]])) == ([[1, -2]], 0)
    assert dyadic_integers(np.zeros((0, 3))) == ([], 0)


def _sample_with_explicit_stack(lang: Dyck, rng, n: int, length: int) -> np.ndarray:
    """The generative process token by token with an explicit stack per sequence (the same draws per step)."""
    out = np.empty((n, length), dtype=np.int64)
    stacks: list[list[int]] = [[] for _ in range(n)]
    for i in range(length):
        u, typ = rng.random(n), rng.integers(0, lang.k, size=n)
        for b, st in enumerate(stacks):
            p_open = 1.0 if not st else (0.0 if len(st) == lang.depth else float(lang.q))
            if u[b] < p_open:
                st.append(int(typ[b]))
                out[b, i] = 2 * typ[b]
            else:
                out[b, i] = 2 * st.pop() + 1
    return out


@pytest.mark.parametrize(
    "k,depth,q", [(1, 1, 0.5), (2, 4, 0.5), (3, 3, 0.3), (4, 2, 0.9), (2, 70, 0.7), (3, 50, 0.9)]
)
def test_sample_is_the_generative_process_draw_for_draw(k, depth, q):
    """Both stack encodings of ``Dyck.sample`` (base-k digits of one int64; a stack array where k^D >= 2^62)
    against an explicit stack: same tokens from the same seed, and the generator left in the same state."""
    lang = Dyck(k, depth, q)
    r1, r2 = np.random.default_rng(11), np.random.default_rng(11)
    got = lang.sample(r1, 40, 90)
    assert np.array_equal(got, _sample_with_explicit_stack(lang, r2, 40, 90))
    assert r1.random() == r2.random()
    assert lang.scan(got)[0].all()
