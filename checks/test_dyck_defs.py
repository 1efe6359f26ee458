"""Claim checks of the Dyck definitions and the lottery-ticket lemmas (Liu §3.6: Assumption 10, Defs 13-18,
Lemmas 25-27, 29-33, 36, 37; Li §2.2: Assumption 2.2.1, Defs 2.2.2-2.2.7, Lemmas 2.2.2-2.2.14)."""

from __future__ import annotations

import itertools
from fractions import Fraction as F

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from theorylab.attention.dyck import balance as db
from theorylab.attention.dyck import definitions as df
from theorylab.attention.dyck.helpers import composition_error
from theorylab.languages.dyck import Dyck
from theorylab.testing import rejects


# ------------------------------------------------------------------------------- Assumption 10, Def 13
def _type_depth_brute(tokens) -> list[tuple[int, int]]:
    """(token, depth) of every position from scratch: depth = #open - #closed of the prefix up to it."""
    out, d = [], 0
    for t in tokens:
        d += 1 if t % 2 == 0 else -1
        out.append((int(t), d))
    return out


def _first_layer(sol, tokens: np.ndarray) -> np.ndarray:
    """The construction's first-layer outputs e(tau_{t,d}) = E[:, index] for a batch, ``[B, N+1, m]``."""
    return sol.weights.E.T[db.token_indices(sol.language, tokens)]


@pytest.mark.claim("dyck.assump10_minimal_first_layer", tier="exact")
def test_assumption10_the_construction_has_a_minimal_first_layer() -> None:
    k, D, N = 2, 3, 6
    lang = Dyck(k, D)
    tokens = lang.all_prefixes(N)
    sol = db.construct_solution(k, D, db.random_balanced_attention(k, D, np.random.default_rng(3)))
    assert df.minimal_first_layer_violations(lang, tokens, _first_layer(sol, tokens)) == 0
    # Def 13's table e(tau_{t,d}): the library index of each occurring (token, depth), from scratch
    seen = {}
    idx = db.token_indices(lang, tokens)
    for row, ids in zip(tokens, idx[:, 1:], strict=True):
        for (t, d), i in zip(_type_depth_brute(row), ids, strict=True):
            assert seen.setdefault((t, d), int(i)) == int(i)
            want = db.open_index(t // 2, d, D) if t % 2 == 0 else db.close_index(t // 2, d, D)
            assert int(i) == want
    # 2kD classes: opens at depths 1..D, closes at depths 0..D-1 (not d in [D] for both), plus t_S
    assert sorted(seen) == sorted(
        [(2 * t, d) for t in range(k) for d in range(1, D + 1)]
        + [(2 * t + 1, d) for t in range(k) for d in range(D)]
    )
    assert len(seen) + 1 == sol.weights.E.shape[1] == 2 * k * D + 1
    assert seen[(0, 1)] == 0 and seen[(1, 0)] == D  # open of type 0 at depth 1; its close at depth 0
    rejects(lambda: df.minimal_first_layer_violations(lang, tokens, np.zeros((1, N + 1, 2))), r"outputs must")
    rejects(
        lambda: df.bracket_depths(lang, np.array([[1, 0]])), r"sequence 0 is not a prefix of Dyck_\{2,3\}"
    )


@pytest.mark.claim("dyck.assump10_minimal_first_layer", tier="exact", control=True)
def test_assumption10_control_positional_or_lookback_layers_are_rejected() -> None:
    k, D, N = 2, 3, 8
    lang = Dyck(k, D)
    tokens = lang.all_prefixes(N)
    sol = db.construct_solution(k, D)
    out = _first_layer(sol, tokens)
    positional = out + np.arange(N + 1)[None, :, None] * 1e-3  # a position embedding leaks through
    assert df.minimal_first_layer_violations(lang, tokens, positional) == 2 * k * D  # every bracket class
    previous = out.copy()
    previous[:, 2:] += 1e-3 * tokens[:, :-1, None]  # reads the previous token as well
    assert df.minimal_first_layer_violations(lang, tokens, previous) > 0


@given(k=st.integers(1, 3), D=st.integers(1, 4), seed=st.integers(0, 2**32 - 1))
@settings(deadline=None, max_examples=25)
@pytest.mark.claim(
    "dyck.assump10_minimal_first_layer",
    tier="property",
    no_trivial="every (k, D) draws prefixes of length 2D + 2 >= 4 with several bracket classes",
)
def test_assumption10_random_constructions_and_sampled_prefixes(k: int, D: int, seed: int) -> None:
    lang = Dyck(k, D)
    rng = np.random.default_rng(seed)
    tokens = lang.sample(rng, 64, 2 * D + 2)
    E = rng.normal(size=(2 * k * D + 3, 2 * k * D + 1))
    sol = db.construct_solution(k, D, embeddings=E)
    out = _first_layer(sol, tokens)
    assert df.minimal_first_layer_violations(lang, tokens, out) == 0
    assert df.minimal_first_layer_violations(lang, tokens, out + 1e-3 * rng.normal(size=out.shape)) > 0


# ------------------------------------------------------------------------------------------------- Def 14
def _integer_weights(k: int, D: int, rng: np.random.Generator, balanced: bool) -> tuple[dict, np.ndarray]:
    """Embeddings as a dict (token, depth) -> integer vector, and an integer M; balanced: M's pair rows
    are shifted so that (e_open - e_close)^T M e_rho is the same for every closing query rho at depth 1..D-1."""
    n = 2 * k * D + 1
    emb = {("S", 0): np.eye(n, dtype=np.int64)[n - 1]}
    for t in range(k):
        for d in range(1, D + 1):
            emb[(2 * t, d)] = np.eye(n, dtype=np.int64)[db.open_index(t, d, D)]
            emb[(2 * t + 1, d - 1)] = np.eye(n, dtype=np.int64)[db.close_index(t, d - 1, D)]
    M = rng.integers(-3, 4, (n, n))
    if balanced:
        queries = [db.close_index(j, d, D) for j in range(k) for d in range(1, D)]
        for t in range(k):
            for d in range(1, D + 1):
                o, c = db.open_index(t, d, D), db.close_index(t, d - 1, D)
                M[o, queries] = M[c, queries] + rng.integers(-3, 4)
    return emb, M


def _balanced_brute(
    emb: dict, M: np.ndarray, k: int, D: int, *, close_depth: int = -1, queries_from: int = 1
):
    """Eq (3.28) from scratch, 1-based types: open 2i-1 at depth d', close 2i at depth d'-1, queries 2j at
    depths d in [D] that exist (a close has depth <= D-1). ``close_depth=0`` pairs the close at depth d'
    (a misreading); ``queries_from=0`` adds the depth-0 closes (another)."""
    for i, j1, j2 in itertools.product(range(1, k + 1), repeat=3):
        for dp, d1, d2 in itertools.product(
            range(1, D + 1), range(queries_from, D + 1), range(queries_from, D + 1)
        ):
            pair = (2 * i - 2, dp), (2 * i - 1, dp + close_depth)
            q1, q2 = (2 * j1 - 1, d1), (2 * j2 - 1, d2)
            if any(key not in emb for key in (*pair, q1, q2)):
                continue
            if (emb[pair[0]] - emb[pair[1]]) @ M @ (emb[q1] - emb[q2]) != 0:
                return False
    return True


def _library_weights(emb: dict, M: np.ndarray, k: int, D: int) -> db.DyckWeights:
    E = np.zeros((2 * k * D + 1, 2 * k * D + 1))
    for (t, d), vec in emb.items():
        col = (
            2 * k * D
            if t == "S"
            else (db.open_index(t // 2, d, D) if t % 2 == 0 else db.close_index(t // 2, d, D))
        )
        E[:, col] = vec
    return db.DyckWeights(k, D, E, M.astype(float), np.eye(2 * k * D + 1))


@pytest.mark.claim("dyck.def14_balance_condition", tier="exact")
def test_def14_library_balance_equals_the_printed_formula() -> None:
    rng = np.random.default_rng(0)
    verdicts = []
    for k, D in ((1, 3), (2, 2), (2, 3)):
        for balanced in (True, False):
            emb, M = _integer_weights(k, D, rng, balanced)
            w = _library_weights(emb, M, k, D)
            brute = _balanced_brute(emb, M, k, D)
            assert db.is_balanced(w, tol=0) == brute == db.is_balanced(w)
            verdicts.append(brute)
    assert verdicts == [True, False] * 3
    # k = 1, D = 2: a single closing query (depth 1), so every M is balanced
    emb, M = _integer_weights(1, 2, rng, False)
    assert db.is_balanced(_library_weights(emb, M, 1, 2), tol=0) and _balanced_brute(emb, M, 1, 2)
    rejects(lambda: db.DyckWeights(2, 2, np.eye(9), np.eye(8), np.eye(9)), r"M must have shape")


@pytest.mark.claim("dyck.def14_balance_condition", tier="exact", control=True)
def test_def14_control_misread_pairings_and_queries_disagree() -> None:
    rng = np.random.default_rng(1)
    emb, M = _integer_weights(2, 3, rng, True)
    assert _balanced_brute(emb, M, 2, 3)
    assert not _balanced_brute(emb, M, 2, 3, close_depth=0)  # close at the open's depth: rejected
    assert not _balanced_brute(emb, M, 2, 3, queries_from=0)  # depth-0 closes as queries: rejected
    # and the exact Thm 1 generator built on this M (which the misreadings call unbalanced) exists
    sol = db.construct_solution(2, 3, M.astype(float))
    assert db.is_balanced(sol.weights)


@given(k=st.integers(1, 3), D=st.integers(2, 4), balanced=st.booleans(), seed=st.integers(0, 2**32 - 1))
@settings(deadline=None, max_examples=30)
@pytest.mark.claim(
    "dyck.def14_balance_condition",
    tier="property",
    no_trivial="half the draws are unbalanced integer M; D >= 2 gives at least one closing query",
)
def test_def14_random_integer_instances(k: int, D: int, balanced: bool, seed: int) -> None:
    emb, M = _integer_weights(k, D, np.random.default_rng(seed), balanced)
    w = _library_weights(emb, M, k, D)
    assert db.is_balanced(w, tol=0) == _balanced_brute(emb, M, k, D)
    if balanced:
        assert db.is_balanced(w, tol=0)


# --------------------------------------------------------------------------------------------- Defs 15-17
@pytest.mark.claim("dyck.defs15_17_pruning_metric", tier="exact")
def test_defs15_17_pruning_norm_and_approximation_from_scratch() -> None:
    W = np.array([[2.0, -3.0], [5.0, 7.0]])
    candidates = list(itertools.product(*[(0.0, x, -x, x + 1) for x in W.ravel()]))
    accepted = [c for c in candidates if df.is_nonstructural_pruning(W, np.reshape(c, (2, 2)))]
    assert len(candidates) == 256 and len(accepted) == 16  # exactly the 2^4 masks M * W
    assert {tuple(np.reshape(c, 4)) for c in accepted} == {
        tuple(np.array(m) * W.ravel()) for m in itertools.product((0, 1), repeat=4)
    }
    # Def 17: the largest COLUMN 2-norm (the words say "row"; the formula and Lemmas 30-37 use columns)
    A = np.array([[3.0, 0.0, 1.0], [4.0, 0.0, 1.0]])
    assert df.norm_12(A) == max(np.sqrt(sum(A[i, j] ** 2 for i in range(2))) for j in range(3)) == 5.0
    assert max(np.linalg.norm(A, axis=1)) != 5.0  # the row reading gives sqrt(10)
    # Def 16: least eps with ||f(x) - g(x)|| <= eps ||x||; f, g linear: the spectral norm of the difference
    f = lambda x: np.array([[4.0, 0.0], [0.0, 2.0]]) @ x  # noqa: E731
    g = lambda x: np.array([[1.0, 0.0], [0.0, 1.0]]) @ x  # noqa: E731
    xs = [np.array([np.cos(t), np.sin(t)]) * r for t in np.linspace(0, np.pi, 9) for r in (0.5, 2.0)]
    assert df.approximation_constant(f, g, xs) == pytest.approx(3.0, rel=1e-15)
    # the 1,2-norm for matrix inputs: column-wise maps
    X = np.array([[1.0, 0.0], [0.0, 2.0]])
    assert df.approximation_constant(lambda Y: 2 * Y, lambda Y: Y, [X]) == 1.0
    assert df.approximation_constant(lambda x: x + 1, lambda x: x, [np.zeros(2)]) == float("inf")
    rejects(lambda: df.is_nonstructural_pruning(W, W[:1]), r"a pruning keeps the shape")
    rejects(lambda: df.norm_12(np.ones(3)), r"A must be a 2-D matrix")


@pytest.mark.claim("dyck.defs15_17_pruning_metric", tier="exact", control=True)
def test_defs15_17_control_misreadings_are_rejected() -> None:
    W = np.array([[2.0, -3.0], [5.0, 7.0]])
    assert not df.is_nonstructural_pruning(W, np.array([[2.0, 3.0], [5.0, 7.0]]))  # a sign flip
    assert not df.is_nonstructural_pruning(W, W / 2)  # rescaling is not pruning
    # the unscaled error sup ||f(x) - g(x)|| (no ||x||) is not scale-free: 6 at radius 2, not 3
    f = lambda x: np.array([[4.0, 0.0], [0.0, 2.0]]) @ x  # noqa: E731
    g = lambda x: x  # noqa: E731
    xs = [np.array([2.0, 0.0])]
    assert max(np.linalg.norm(f(x) - g(x)) for x in xs) == 6.0 != df.approximation_constant(f, g, xs) == 3.0


@given(rows=st.integers(1, 5), cols=st.integers(1, 5), seed=st.integers(0, 2**32 - 1))
@settings(deadline=None, max_examples=30)
@pytest.mark.claim(
    "dyck.defs15_17_pruning_metric", tier="property", no_trivial="dense Gaussian W: every entry nonzero"
)
def test_defs15_17_random_masks_and_norms(rows: int, cols: int, seed: int) -> None:
    rng = np.random.default_rng(seed)
    W = rng.normal(size=(rows, cols))
    mask = rng.integers(0, 2, W.shape)
    assert df.is_nonstructural_pruning(W, mask * W)
    P = mask * W
    P[rng.integers(rows), rng.integers(cols)] += 0.5
    assert not df.is_nonstructural_pruning(W, P)
    assert df.norm_12(W) == pytest.approx(max(np.sqrt((W[:, j] ** 2).sum()) for j in range(cols)), rel=1e-14)
    # ||BA||_{1,2} <= ||B||_2 ||A||_{1,2}: the step every Lemma of 3.6.4.3 uses
    B = rng.normal(size=(3, rows))
    assert df.norm_12(B @ W) <= np.linalg.norm(B, 2) * df.norm_12(W) * (1 + 1e-12)


# ------------------------------------------------------------------------------------ Def 18, Lemma 36
def _attention_brute(X, W_V, W_K, W_Q, C):
    m, N = X.shape
    out = np.zeros((m, N))
    for j in range(N):
        s = [float((W_K @ X[:, i]) @ (W_Q @ X[:, j])) for i in range(N)]
        p = np.exp(np.array(s) - max(s))
        p /= p.sum()
        y = sum(p[i] * (W_V @ X[:, i]) for i in range(N))
        y = y - y.mean()
        out[:, j] = y / max(np.linalg.norm(y), C)
    return out


def _lemma36_witness(R: float, C: float = 1.0, h: float = 1e-7):
    """Two columns +-R a, scores x_i^T b a^T x_j = 0, so the attention output is 0 (LN_C is linear there);
    moving column 1 by h b changes each output column by h sqrt(R^4 + 1) / (2C) to first order."""
    a = np.array([1.0, -1.0, 0.0]) / np.sqrt(2)
    b = np.array([1.0, 1.0, -2.0]) / np.sqrt(6)
    I, W_Q = np.eye(3), np.outer(b, a)
    X = np.column_stack([R * a, -R * a])
    Y = X.copy()
    Y[:, 0] += h * b
    gap = df.norm_12(df.attention_module(Y, I, I, W_Q, C) - df.attention_module(X, I, I, W_Q, C))
    return gap / df.norm_12(Y - X), np.sqrt(R**4 + 1) / (2 * C)


@pytest.mark.claim("dyck.def18_lem36_attention_module", tier="exact")
def test_def18_matches_the_printed_formula_and_lemma36_holds_on_the_witness(measure) -> None:
    rng = np.random.default_rng(0)
    X = rng.normal(size=(3, 4))
    W_V, W_K, W_Q = rng.normal(size=(3, 3)), rng.normal(size=(2, 3)), rng.normal(size=(2, 3))
    for C in (0.1, 1.0, 10.0):
        got = df.attention_module(X, W_V, W_K, W_Q, C)
        assert np.abs(got - _attention_brute(X, W_V, W_K, W_Q, C)).max() <= 1e-14
    # Lemma 36 (L = 1, C = 1, ||X||_{1,2} = 4L on the boundary): the witness's ratio is sqrt(257)/2 = 8.02, the
    # limit to first order (tolerance: the h R^3 second-order term, 1e-7 * 64, relative)
    ratio, limit = _lemma36_witness(4.0)
    assert ratio == pytest.approx(limit, rel=1e-5) and limit == np.sqrt(257) / 2
    assert ratio <= 200 * 1**2 / 1.0
    measure("lemma36_witness_ratio_L1_C1", ratio)
    rejects(lambda: df.attention_module(X, W_V, W_K, W_Q, 0.0), r"C must be > 0")
    rejects(lambda: df.attention_module(X, W_V[:2], W_K, W_Q, 1.0), r"need W_V \(m, m\)")


@pytest.mark.claim("dyck.def18_lem36_attention_module", tier="exact", control=True)
def test_def18_lem36_control_row_softmax_and_unbounded_inputs() -> None:
    rng = np.random.default_rng(0)
    X = rng.normal(size=(3, 4))
    W_V, W_K, W_Q = rng.normal(size=(3, 3)), rng.normal(size=(2, 3)), rng.normal(size=(2, 3))
    # the row-softmax misreading (attention normalised over queries) differs
    S = (W_K @ X).T @ (W_Q @ X)
    A = np.exp(S - S.max(axis=1, keepdims=True))
    A /= A.sum(axis=1, keepdims=True)
    Y = W_V @ X @ A
    Y -= Y.mean(axis=0)
    row = Y / np.maximum(np.linalg.norm(Y, axis=0), 1.0)
    assert np.abs(row - df.attention_module(X, W_V, W_K, W_Q, 1.0)).max() > 0.05
    # outside the domain ||X||_{1,2} <= 4L the same Lipschitz verdict fails: R = 40 gives ratio ~ 800 > 200
    ratio, limit = _lemma36_witness(40.0, h=1e-9)
    assert ratio == pytest.approx(limit, rel=1e-5) and ratio > 200


@given(
    L=st.integers(1, 3),
    C=st.floats(0.2, 4.0),
    N=st.integers(2, 5),
    scale=st.floats(0.3, 1.0),
    seed=st.integers(0, 2**32 - 1),
)
@settings(deadline=None, max_examples=40)
@pytest.mark.claim(
    "dyck.def18_lem36_attention_module",
    tier="property",
    no_trivial="inputs fill 30-100% of the radius 4L; unit spectral-norm weights",
)
def test_lemma36_random_pairs_in_the_domain(L: int, C: float, N: int, scale: float, seed: int) -> None:
    rng = np.random.default_rng(seed)
    W = [rng.normal(size=(3, 3)) for _ in range(3)]
    W_V, W_K, W_Q = (w / np.linalg.norm(w, 2) for w in W)
    X = rng.normal(size=(3, N))
    X *= 4 * L * scale / df.norm_12(X)
    Y = X + 1e-3 * rng.normal(size=X.shape)
    Y *= min(1.0, 4 * L / df.norm_12(Y))
    gap = df.norm_12(df.attention_module(X, W_V, W_K, W_Q, C) - df.attention_module(Y, W_V, W_K, W_Q, C))
    assert gap <= 200 * L**2 / C * df.norm_12(X - Y)


# -------------------------------------------------------------------------------------- Lemmas 31, 33
def _softmax(x):
    e = np.exp(x - x.max())
    return e / e.sum()


@pytest.mark.claim("dyck.lem31_lem33", tier="exact")
def test_lemma31_and_lemma33_pinned() -> None:
    # Lemma 31: x = (0, eps), y = (eps, 0) moves mass 1/(1 + e^eps) across: the l1 change is 2 tanh(eps/2), the
    # largest possible (a grid over the split p of the mass confirms it), below e^{2 eps} - 1
    for eps in (0.01, 0.1, 1.0):
        gap = np.abs(_softmax(np.array([0.0, eps])) - _softmax(np.array([eps, 0.0]))).sum()
        assert gap == pytest.approx(2 * np.tanh(eps / 2), rel=1e-12)
        p = np.linspace(1e-4, 1 - 1e-4, 2001)
        r = np.exp(2 * eps)
        assert (2 * (p * r / (p * r + 1 - p) - p)).max() <= gap * (1 + 1e-12)
        assert gap <= np.expm1(2 * eps)
    # Lemma 33: LN_C is (1/C)-Lipschitz, attained inside the ball ||P x|| <= C: the printed 2/C holds with room
    from theorylab.attention.dyck.bounds import layer_norm_c

    C = 2.0
    x, y = np.array([0.5, -0.5, 0.0]), np.array([0.0, 0.5, -0.5])
    assert np.linalg.norm(layer_norm_c(x, C) - layer_norm_c(y, C)) == pytest.approx(
        np.linalg.norm(x - y) / C, rel=1e-15
    )


@pytest.mark.claim("dyck.lem31_lem33", tier="exact", control=True)
def test_lemma31_lemma33_control_the_proofs_other_branch_and_half_the_constant_fail() -> None:
    from theorylab.attention.dyck.bounds import layer_norm_c

    # the proof's max{e^{2eps} - 1, 1 - e^{-2eps}}: the second branch alone is no bound (eps = 1: 0.924 > 0.865)
    eps = 1.0
    gap = np.abs(_softmax(np.array([0.0, eps])) - _softmax(np.array([eps, 0.0]))).sum()
    assert -np.expm1(-2 * eps) < gap <= np.expm1(2 * eps)
    C = 2.0
    x, y = np.array([0.5, -0.5, 0.0]), np.array([0.0, 0.5, -0.5])
    assert np.linalg.norm(layer_norm_c(x, C) - layer_norm_c(y, C)) > np.linalg.norm(x - y) / (2 * C)


@given(d=st.integers(2, 8), eps=st.floats(0.001, 2.0), C=st.floats(0.1, 3.0), seed=st.integers(0, 2**32 - 1))
@settings(deadline=None, max_examples=40)
@pytest.mark.claim("dyck.lem31_lem33", tier="property", no_trivial="eps >= 1e-3, dense perturbations")
def test_lemma31_lemma33_random(d: int, eps: float, C: float, seed: int) -> None:
    from theorylab.attention.dyck.bounds import layer_norm_c

    rng = np.random.default_rng(seed)
    x = rng.normal(size=d) * 3
    y = x + rng.uniform(-eps, eps, d)
    assert np.abs(_softmax(x) - _softmax(y)).sum() <= np.expm1(2 * eps) * (1 + 1e-12)
    u, v = rng.normal(size=d) * C, rng.normal(size=d) * C
    assert np.linalg.norm(layer_norm_c(u, C) - layer_norm_c(v, C)) <= 2 * np.linalg.norm(u - v) / C * (
        1 + 1e-12
    )


# ------------------------------------------------------------------------------------------------ Lemma 25
_H_SEEDS = range(10)


def _subset_sum_errors(h: int, w: float = 0.7) -> np.ndarray:
    """Best pruning error of 10 seeded random networks sum_i a_i ReLU(b_i x), a, b ~ U(-1, 1), h hidden units."""
    out = []
    for seed in _H_SEEDS:
        rng = np.random.default_rng(seed)
        out.append(df.subset_sum_pruning_error(rng.uniform(-1, 1, h), rng.uniform(-1, 1, h), w))
    return np.array(out)


@pytest.mark.claim("dyck.lem25_subset_sum", tier="exact")
def test_lemma25_pruning_error_decays_exponentially_in_width(measure) -> None:
    med = {h: float(np.median(_subset_sum_errors(h))) for h in (8, 16, 24, 28)}
    for h, v in med.items():
        measure(f"lemma25_median_error_h{h}", v)
    assert med[8] > 0.3 and med[16] < 0.1 and med[24] < 5e-3 and med[28] < 5e-4  # seeds 0-9, w = 0.7
    assert med[28] < med[8] / 1000  # 2^{-Omega(h)}: three decades over 20 units
    # the exhaustive search is exact: a hand instance with products 0.5, 0.25 per side and target 0.75
    a, b = np.array([1.0, 0.5, 1.0, 0.5]), np.array([0.5, 0.5, -0.5, -0.5])
    assert (
        df.subset_sum_pruning_error(a, b, 0.75) == 0.75
    )  # x > 0 exact (0.5 + 0.25); x < 0: slopes -0.5, -0.25
    assert df.subset_sum_pruning_error(a * [1, 1, -1, -1], b, 0.75) == 0.0  # both sides reach 0.75
    assert df.subset_sum_pruning_error(a, b, 0.0) == 0.0  # prune everything
    rejects(lambda: df.subset_sum_pruning_error(np.ones(3), np.ones(4), 0.5), r"need a, b of the same length")


@pytest.mark.claim("dyck.lem25_subset_sum", tier="exact", control=True)
def test_lemma25_control_no_pruning_or_a_narrow_network_misses() -> None:
    errs = []
    for seed in _H_SEEDS:
        rng = np.random.default_rng(seed)
        a, b = rng.uniform(-1, 1, 28), rng.uniform(-1, 1, 28)
        pos, neg = b > 0, b < 0
        errs.append(max(abs((a * b)[pos].sum() - 0.7), abs((a * b)[neg].sum() - 0.7)))  # keep every unit
    assert np.median(errs) > 0.3  # the unpruned random network is no approximation
    assert np.median(_subset_sum_errors(4)) > 0.3  # nor is the best pruning of a 4-unit one


@given(h=st.integers(6, 11), w=st.floats(-0.9, 0.9), seed=st.integers(0, 2**32 - 1))
@settings(deadline=None, max_examples=25)
@pytest.mark.claim("dyck.lem25_subset_sum", tier="property", no_trivial="|w| up to 0.9; h >= 6 random units")
def test_lemma25_more_units_never_hurt(h: int, w: float, seed: int) -> None:
    rng = np.random.default_rng(seed)
    a, b = rng.uniform(-1, 1, 2 * h), rng.uniform(-1, 1, 2 * h)
    narrow, wide = df.subset_sum_pruning_error(a[:h], b[:h], w), df.subset_sum_pruning_error(a, b, w)
    assert wide <= narrow  # a pruning of the narrow network is one of the wide network


# ---------------------------------------------------------------------------- Lemmas 26, 27, 29, 30, 32, 37
@pytest.mark.claim("dyck.lemmas_pruning_steps", tier="exact")
def test_pruning_lemmas_deterministic_steps() -> None:
    # Lemma 30's step: ||X^T (W~ - W) X||_inf <= ||W~ - W||_2 ||X||_{1,2}^2, equality for an aligned rank one
    u = np.array([3.0, 4.0]) / 5
    X = np.column_stack([2 * u, u])
    lhs, rhs = df.bilinear_error_bound(X, np.zeros((2, 2)), 0.25 * np.outer(u, u))
    assert lhs == pytest.approx(1.0, rel=1e-15) and rhs == pytest.approx(1.0, rel=1e-15)
    # Lemma 29: eps_0 = eps / 8 and Lipschitz 2 sqrt 2 give eps' = 4 sqrt2 eps_0 + eps_0^2 <= eps (Lemma 28),
    # attained by scalar maps (2 sqrt2 + eps_0) x against 2 sqrt2 x
    s = 2 * np.sqrt(2)
    for eps in (0.01, 0.5, 1.0):
        e0 = eps / 8
        assert composition_error(s, e0, s, e0) == pytest.approx((s + e0) ** 2 - s * s, rel=1e-14)
        assert composition_error(s, e0, s, e0) == pytest.approx(4 * np.sqrt(2) * e0 + e0**2, rel=1e-14)
        assert composition_error(s, e0, s, e0) <= eps
    # Lemma 27: with W_V pruned to 0 the attention output is LN_C(0) = 0, so the layer is g(X) exactly
    rng = np.random.default_rng(0)
    Xr = rng.normal(size=(3, 5))
    assert not df.attention_module(Xr, np.zeros((3, 3)), np.eye(3), np.eye(3), 0.5).any()
    # Lemma 26's final inequality, exactly: (2/C + 1) x^{4L} + x^{4L-2} + x^{8L-2} eps <= x^{4L-3}, x = C/(1000 L^2)
    for L in range(1, 5):
        for C in (F(1, 10), F(1, 2), F(1)):
            x = C / (1000 * L * L)
            for eps in (F(1, 2), F(1)):
                assert (2 / C + 1) * x ** (4 * L) + x ** (4 * L - 2) + x ** (8 * L - 2) * eps <= x ** (
                    4 * L - 3
                )
    # Lemma 37's chain with the step repaired: 8 eps0 (1 + 4 R^2) R at R = 2L is (16 L + 256 L^3) eps0, then LN_C
    # doubles it over C: ratio to the claimed x^{4L-1} eps is (16 L + 256 L^3) 2 / (1000 L^2) = 68/125 at L = 1
    assert [F(2 * (16 * L + 256 * L**3), 1000 * L * L) for L in (1, 2)] == [F(68, 125), F(26, 25)]
    # Lemma 32: a seeded U(-1,1) 40 x 40 value matrix; the pruning keeps d = 4 disjoint entries >= 1/2
    W = np.random.default_rng(0).uniform(-1, 1, (40, 40))
    P, rows, cols = df.value_pruning(W, 4)
    sub = P[np.ix_(rows, cols)]
    assert df.is_nonstructural_pruning(W, P) and np.count_nonzero(P) == 4
    assert np.array_equal(sub, np.diag(np.diag(sub))) and np.all((np.diag(sub) >= 0.5) & (np.diag(sub) < 1))
    assert rows.max() < 20 <= cols.min() and list(rows) == [2, 3, 4, 5] and list(cols) == [22, 25, 34, 37]
    rejects(lambda: df.value_pruning(np.ones((3, 4)), 1), r"need a square W and d >= 1")


@pytest.mark.claim("dyck.lemmas_pruning_steps", tier="exact", control=True)
def test_pruning_lemmas_control_printed_slips_and_wrong_choices_fail() -> None:
    # Lemma 37's printed step "8 eps0 (1 + 4||X||^2)||X|| <= 80 L^2 eps0" fails on its own domain ||X|| <= 2L
    for L in (1, 2, 3):
        R = 2 * L
        assert 8 * (1 + 4 * R * R) * R > 80 * L * L
    # ... and the repaired chain misses the claimed x^{4L-1} eps for L = 2 (26/25 > 1)
    assert F(2 * (16 * 2 + 256 * 8), 1000 * 4) > 1
    # Lemma 29 with eps_0 = eps / 4 instead of eps / 8: eps' = sqrt2 eps + eps^2/16 > eps
    s, eps = 2 * np.sqrt(2), 0.5
    assert composition_error(s, eps / 4, s, eps / 4) > eps
    # Lemma 32's pruning is needed: the top-left d x d block of W has eigenvalues outside (1/2, 1)
    W = np.random.default_rng(0).uniform(-1, 1, (40, 40))
    ev = np.linalg.eigvals(W[:4, :4])
    assert not np.all((np.abs(ev) > 0.5) & (np.abs(ev) < 1))


@given(m=st.integers(2, 5), N=st.integers(1, 6), n=st.integers(24, 64), seed=st.integers(0, 2**32 - 1))
@settings(deadline=None, max_examples=30)
@pytest.mark.claim(
    "dyck.lemmas_pruning_steps", tier="property", no_trivial="dense random X, W, perturbations; n >= 24"
)
def test_pruning_lemmas_random(m: int, N: int, n: int, seed: int) -> None:
    rng = np.random.default_rng(seed)
    X, W = rng.normal(size=(m, N)), rng.normal(size=(m, m))
    lhs, rhs = df.bilinear_error_bound(X, W, W + 0.1 * rng.normal(size=(m, m)))
    assert lhs <= rhs * (1 + 1e-12)
    # Lemma 29's composition: inner ReLU((W1 + D1) x), outer (W2 + D2) y, ||D_i||_2 = eps0, ||W_i||_2 <= 2 sqrt2
    s, e0 = 2 * np.sqrt(2), 0.05
    W1, W2, D1, D2 = (rng.normal(size=(m, m)) for _ in range(4))
    W1, W2 = s * W1 / np.linalg.norm(W1, 2), s * W2 / np.linalg.norm(W2, 2)
    D1, D2 = e0 * D1 / np.linalg.norm(D1, 2), e0 * D2 / np.linalg.norm(D2, 2)
    x = rng.normal(size=m)
    err = np.linalg.norm((W2 + D2) @ np.maximum((W1 + D1) @ x, 0) - W2 @ np.maximum(W1 @ x, 0))
    assert err <= (4 * np.sqrt(2) * e0 + e0**2) * np.linalg.norm(x) * (1 + 1e-12)
    # Lemma 32 at n >= 24, d = 2 (fails with probability < 1e-6 here: each of 12 rows hits with prob >= 0.9)
    out = df.value_pruning(rng.uniform(-1, 1, (n, n)), 2)
    assert out is not None
    P, rows, cols = out
    assert set(rows).isdisjoint(cols) and np.all(P[rows, cols] >= 0.5)
