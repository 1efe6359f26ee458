"""Claim checks of the topic family's definitions, assumptions and Claim 2.1.1 (Li thesis §2.1: Defs 2.1.1-2.1.2,
Assumptions 2.1.1-2.1.4, Claim 2.1.1)."""

from __future__ import annotations

import itertools
import math
from fractions import Fraction as F

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from theorylab.attention.topic import stage1 as tp
from theorylab.attention.topic import stage2 as s2
from theorylab.attention.topic.def_counterexamples import row0_free
from theorylab.languages import topic_assumptions as ta
from theorylab.languages.topic import TopicModel
from theorylab.testing import rejects

BERT = (F(3, 20), F(1, 10), F(1, 10))


# ------------------------------------------------------------------------------------------------ Def 2.1.1
@pytest.mark.claim("topic.def2.1.1", tier="exact")
def test_def211_topic_of_is_ceil_i_over_v() -> None:
    for T, v in ((2, 1), (3, 4), (5, 3)):
        p = TopicModel(T, v, 1)
        words = np.arange(1, T * v + 1)
        brute = [math.ceil(i / v) for i in words]  # 1-based, as printed
        assert (p.topic_of(words) + 1).tolist() == brute
        # topic t owns {(t-1)v+1, ..., tv}: the sampler draws words of the chosen topics only
        assert all(
            set(np.flatnonzero(np.array(brute) == t) + 1) == set(range((t - 1) * v + 1, t * v + 1))
            for t in range(1, T + 1)
        )
    p = TopicModel(3, 4, 2)
    docs = p.sample_documents(np.random.default_rng(0), 50, 40)
    assert all(len(set(p.topic_of(d).tolist())) <= p.tau for d in docs)
    assert p.topic_of(4) == 0 and p.topic_of(5) == 1  # i = v is still topic 1 (0-based 0)
    rejects(lambda: p.topic_of(0), r"word ids must lie in 1\.\.12 \(0 is \[MASK\]")
    rejects(lambda: p.topic_of(np.array([1.0])), r"word ids must be integers", TypeError)


@pytest.mark.claim("topic.def2.1.1", tier="exact", control=True)
def test_def211_control_floor_misreadings_differ() -> None:
    p = TopicModel(3, 4, 1)
    words = np.arange(1, 13)
    lib = (p.topic_of(words) + 1).tolist()
    assert lib != [i // 4 + 1 for i in words]  # floor(i/v) + 1 puts i = v in the next topic
    assert lib != [i // 4 for i in words]  # floor(i/v): word 1 in topic 0


@given(T=st.integers(2, 20), v=st.integers(1, 20))
@settings(deadline=None, max_examples=30)
@pytest.mark.claim(
    "topic.def2.1.1", tier="property", no_trivial="T >= 2 topics, every word of the vocabulary"
)
def test_def211_random_sizes(T: int, v: int) -> None:
    p = TopicModel(T, v, 1)
    words = np.arange(1, T * v + 1)
    assert (p.topic_of(words) + 1).tolist() == [-(-i // v) for i in words]


# ---------------------------------------------------------------------------------------- Assumption 2.1.1
def _masked_expectation_brute(p: TopicModel, doc: np.ndarray) -> list[F]:
    """Expected frequency of each id 0..Tv in the masked document, token by token from the masking scheme."""
    V, Tv = p.V, p.T * p.v
    y = [F(0)] * V
    for w in doc:
        y[int(w)] += 1 - p.p_m + p.p_m * p.p_c  # kept, or masked and shown as itself
        for r in range(1, Tv + 1):
            y[r] += p.p_m * p.p_r / Tv  # masked, shown as a random word
        y[0] += p.p_m * (1 - p.p_c - p.p_r)  # masked, shown as [MASK]
    return [x / len(doc) for x in y]


@pytest.mark.claim("topic.assump2.1.1", tier="exact")
def test_assumption211_balanced_documents_give_the_closed_form_frequencies() -> None:
    p = TopicModel(4, 3, 2, *BERT)
    topics = np.array([1, 3])
    doc = np.repeat(np.concatenate([np.arange(t * 3 + 1, t * 3 + 4) for t in topics]), 5)  # each word 5 times
    assert ta.infinitely_long_gap(p, doc) == 0.0
    assert _masked_expectation_brute(p, doc) == p.word_frequencies(topics).tolist()  # Prop 2.1.1's y, exactly
    # the experiments' documents (finite N in [100, 150], T = v = 10, LDA alpha = 0.1) violate it
    q = TopicModel(10, 10, 3)
    lda = q.sample_documents(np.random.default_rng(0), 20, 120, lda_alpha=0.1)
    gaps = [ta.infinitely_long_gap(q, d) for d in lda]
    assert min(gaps) > 0 and sum(g == float("inf") for g in gaps) >= 10  # mostly not exactly tau topics
    rejects(lambda: ta.infinitely_long_gap(p, np.array([0, 1])), r"word ids must lie in 1\.\.12")
    rejects(lambda: ta.infinitely_long_gap(p, np.zeros((2, 2), dtype=int)), r"doc must be a non-empty 1-d")


@pytest.mark.claim("topic.assump2.1.1", tier="exact", control=True)
def test_assumption211_control_unbalanced_or_wrong_topic_count_is_rejected() -> None:
    p = TopicModel(4, 3, 2, *BERT)
    doc = np.repeat(np.array([4, 5, 6, 10, 11, 12]), 5)
    assert ta.infinitely_long_gap(p, np.concatenate([doc, [4]])) > 0  # one extra token
    assert ta.infinitely_long_gap(p, doc[:15]) == float("inf")  # one topic only
    # and the closed form y then misses the brute-force masked expectation
    skew = np.concatenate([doc, [4, 4, 4]])
    assert _masked_expectation_brute(p, skew) != p.word_frequencies(np.array([1, 3])).tolist()


@given(T=st.integers(2, 6), v=st.integers(1, 4), reps=st.integers(1, 3), seed=st.integers(0, 2**32 - 1))
@settings(deadline=None, max_examples=25)
@pytest.mark.claim("topic.assump2.1.1", tier="property", no_trivial="tau drawn in 1..T-1; shuffled documents")
def test_assumption211_random_balanced_documents(T: int, v: int, reps: int, seed: int) -> None:
    rng = np.random.default_rng(seed)
    tau = int(rng.integers(1, T))
    p = TopicModel(T, v, tau, *BERT)
    topics = np.sort(rng.choice(T, tau, replace=False))
    doc = rng.permutation(
        np.repeat(np.concatenate([np.arange(t * v + 1, t * v + v + 1) for t in topics]), reps)
    )
    assert ta.infinitely_long_gap(p, doc) == 0.0
    assert _masked_expectation_brute(p, doc) == p.word_frequencies(topics).tolist()


# --------------------------------------------------------------------------------- Assumptions 2.1.2-2.1.4
def _pattern_brute(w, v, alpha, beta):
    N = len(w)
    R = [[F(0)] * N for _ in range(N)]
    for i, j in itertools.product(range(N), repeat=2):
        if w[i] == w[j]:
            R[i][j] = F(beta)
        elif w[i] != 0 and w[j] != 0 and math.ceil(w[i] / v) == math.ceil(w[j] / v):
            R[i][j] = F(alpha)
        else:
            R[i][j] = F(1)
    return [[R[i][j] / sum(R[r][j] for r in range(N)) for j in range(N)] for i in range(N)]


def _realised_by_softmax(w, v, alpha, beta) -> np.ndarray:
    """The pattern from the model's own softmax: one-hot X, W^{K T} W^Q = log beta on the diagonal, log alpha
    on same-topic word pairs, 0 elsewhere ([MASK] has no topic)."""
    V = max(w) + 1 if len(w) else 1
    V = ((V - 1 + v - 1) // v) * v + 1
    topic = np.concatenate([[-1], (np.arange(1, V) - 1) // v])
    M = np.where((topic[:, None] == topic[None, :]) & (topic[:, None] >= 0), np.log(alpha), 0.0)
    M[np.arange(V), np.arange(V)] = np.log(beta)
    X = np.eye(V)[:, w]
    S = X.T @ M @ X
    A = np.exp(S)
    return A / A.sum(axis=0, keepdims=True)


@pytest.mark.claim("topic.assumps2.1.2-2.1.4", tier="exact")
def test_assumptions212_214_pattern_is_realisable_and_the_regime_checks() -> None:
    w = np.array([1, 2, 2, 4, 0, 5, 0, 1])  # v = 2: topics 1, 1, 1, 2, -, 3, -, 1
    for alpha, beta in ((F(2), F(5)), (F(1, 3), F(7))):
        lib = ta.three_level_attention(w, 2, alpha, beta)
        assert lib.tolist() == _pattern_brute(w.tolist(), 2, alpha, beta)  # exact rationals
        assert (
            np.abs(_realised_by_softmax(w.tolist(), 2, float(alpha), float(beta)) - lib.astype(float)).max()
            <= 1e-15
        )
    # Assumption 2.1.3's v-threshold and "v >= 10 suffices under Assumption 2.1.4", exactly
    bert = TopicModel(10, 10, 3, *BERT)
    assert ta.sparse_topic_threshold(bert) == (1 / (1 - F(9, 10) * F(3, 20)) + 1) ** 2 + 1 == F(169058, 29929)
    ta.check_attention_assumptions(bert)  # the experiments' T = v = 10, BERT rates: v = 10 > 5.65
    corner = TopicModel(10, 10, 3, F(1, 2) - F(1, 10**6), F(1, 10**6), F(1, 10**6))
    assert ta.sparse_topic_threshold(corner) < 10  # sup over the region is 10, not attained
    rejects(
        lambda: ta.check_attention_assumptions(TopicModel(10, 10, 3, F(1, 2), F(1, 10), F(1, 10))),
        r"Assumption 2\.1\.4 needs p_m < 1/2",
    )
    rejects(
        lambda: ta.check_attention_assumptions(TopicModel(10, 10, 3, F(1, 5), F(1, 10), F(1, 5))),
        r"Assumption 2\.1\.4 needs p_c = p_r",
    )
    rejects(lambda: ta.three_level_attention(w, 2, 0, 1), r"alpha and beta must be > 0")


@pytest.mark.claim("topic.assumps2.1.2-2.1.4", tier="exact", control=True)
def test_assumptions212_214_control_v9_and_row_normalisation_fail() -> None:
    near = TopicModel(10, 9, 3, F(49, 100), F(1, 100), F(1, 100))
    assert ta.sparse_topic_threshold(near) > 9  # v = 9 does not suffice
    rejects(lambda: ta.check_attention_assumptions(near), r"Assumption 2\.1\.3 needs v > ")
    w = np.array([1, 2, 2, 4, 0, 5, 0, 1])
    lib = ta.three_level_attention(w, 2, F(2), F(5))
    rows = lib / lib.sum(axis=1, keepdims=True)  # normalising over queries instead of keys
    assert rows.tolist() != _pattern_brute(w.tolist(), 2, 2, 5)


@given(
    v=st.integers(1, 4),
    N=st.integers(2, 10),
    alpha=st.fractions(F(1, 10), 10),
    beta=st.fractions(F(1, 10), 10),
    seed=st.integers(0, 2**32 - 1),
)
@settings(deadline=None, max_examples=25)
@pytest.mark.claim(
    "topic.assumps2.1.2-2.1.4", tier="property", no_trivial="documents of 2-10 ids over 3 topics with [MASK]s"
)
def test_assumption212_random_documents(v: int, N: int, alpha: F, beta: F, seed: int) -> None:
    w = np.random.default_rng(seed).integers(0, 3 * v + 1, N)
    assert ta.three_level_attention(w, v, alpha, beta).tolist() == _pattern_brute(w.tolist(), v, alpha, beta)


# ------------------------------------------------------------------------------------------------ Claim 2.1.1
def _cross_block_sums_equal(W, p: TopicModel) -> bool:
    """Claim 2.1.1 from scratch: row i >= 1 has equal sums over every topic block but its own; row 0 over all."""
    T, v = p.T, p.v
    for i in range(p.V):
        sums = [sum(W[i][1 + t * v + l] for l in range(v)) for t in range(T) if i == 0 or t != (i - 1) // v]
        if len(set(sums)) > 1:
            return False
    return True


@pytest.mark.claim("topic.claim2.1.1", tier="exact")
def test_claim211_every_optimum_has_equal_cross_topic_block_sums() -> None:
    p = TopicModel(4, 3, 2, *BERT)
    rng = np.random.default_rng(0)
    for _ in range(3):
        u = np.array([F(int(x), 7) for x in rng.integers(-9, 10, p.V)], dtype=object)
        splits = np.vectorize(F, otypes=[object])(rng.integers(1, 5, (p.V, p.T, p.v)))
        splits = splits / splits.sum(axis=2, keepdims=True)
        W = tp.value_matrix_from_family(p, u, splits)
        assert tp.population_loss(W, p) == tp.minimum_loss(p)
        assert _cross_block_sums_equal(W.tolist(), p)
    # the proof's two documents for tau = 2: {topic(i), t1} and {topic(i), t2} force equal sums
    q = TopicModel(4, 3, 2, *BERT)
    W = tp.optimal_value_matrix(q)
    for t1, t2 in ((1, 2), (2, 3)):
        y1, y2 = q.word_frequencies(np.array([0, t1])), q.word_frequencies(np.array([0, t2]))
        assert (W @ y1)[1] == (W @ y2)[1] == F(1, 6)  # P_w(i) = 1/(2v) in both


@pytest.mark.claim("topic.claim2.1.1", tier="exact", control=True)
def test_claim211_control_unequal_cross_sums_are_not_optimal_and_own_block_differs() -> None:
    p = TopicModel(4, 3, 2, *BERT)
    W = tp.optimal_value_matrix(p).copy()
    # the misreading "all T blocks, own included" fails at the optimum (the own block carries c3 more)
    own_included = all(
        len({sum(W[i][1 + t * 3 + l] for l in range(3)) for t in range(4)}) == 1 for i in range(1, p.V)
    )
    assert not own_included
    W[1, 4] += F(1, 5)  # move mass between two cross-topic blocks of row 1 (row sum kept)
    W[1, 7] -= F(1, 5)
    assert not _cross_block_sums_equal(W.tolist(), p)
    assert tp.population_loss(W, p) > tp.minimum_loss(p)
    y1, y2 = p.word_frequencies(np.array([0, 1])), p.word_frequencies(np.array([0, 2]))
    assert (W @ y1)[1] != (W @ y2)[1]  # one of the proof's two documents is mispredicted


@given(seed=st.integers(0, 2**32 - 1), T=st.integers(3, 5), v=st.integers(1, 3))
@settings(deadline=None, max_examples=20)
@pytest.mark.claim(
    "topic.claim2.1.1", tier="property", no_trivial="random free constants u and uneven splits"
)
def test_claim211_random_family_members(seed: int, T: int, v: int) -> None:
    rng = np.random.default_rng(seed)
    p = TopicModel(T, v, int(rng.integers(1, T)), *BERT)
    u = np.array([F(int(x), 5) for x in rng.integers(-9, 10, p.V)], dtype=object)
    splits = np.vectorize(F, otypes=[object])(rng.integers(1, 5, (p.V, p.T, p.v)))
    W = tp.value_matrix_from_family(p, u, splits / splits.sum(axis=2, keepdims=True))
    assert _cross_block_sums_equal(W.tolist(), p)
    i, (t1, t2) = int(rng.integers(1, p.V)), rng.choice([t for t in range(T)], 2, replace=False)
    if (i - 1) // v not in (t1, t2):
        W[i, 1 + t1 * v] += 1
        W[i, 1 + t2 * v] -= 1
        assert tp.population_loss(W, p) > tp.minimum_loss(p)


# ------------------------------------------------------------------------------------------------ Def 2.1.2
def _row0_variant(p: TopicModel, u0: F) -> np.ndarray:
    k = tp.constants(p)
    D = tp.diagonal_value_matrix(p).copy()
    D[0, 1:] = u0
    D[0, 0] = -k.c2 * u0
    return D


@pytest.mark.claim("topic.def2.1.2", tier="exact")
def test_def212_diagonal_optimum_exists_and_is_unique_once_row0_is_fixed() -> None:
    p = TopicModel(3, 2, 1, *BERT)
    k = tp.constants(p)
    D = tp.diagonal_value_matrix(p)
    assert tp.population_loss(D, p) == tp.minimum_loss(p) == F(1, 2)
    Tv = p.T * p.v
    assert all(D[i, j] == 0 for i in range(1, Tv + 1) for j in range(1, Tv + 1) if i != j)
    assert all(D[i, i] == k.c3 == F(200, 173) and D[i, 0] == -k.c1 for i in range(1, Tv + 1))
    # uniqueness on rows 1..Tv: off-diagonal zeros force u_i = 0 (cross blocks sum to 0), so D_ii = c3 and
    # D_i0 = -c1: the optimality conditions of Lemma 2.1.1 leave no freedom there
    rep = tp.is_optimal_value_matrix(D, p, tol=0)
    assert rep and all(x == 0 for x in rep.u)


@pytest.mark.claim("topic.def2.1.2", tier="exact", control=True)
def test_def212_control_row0_is_free_and_changes_stage2() -> None:
    arrays = row0_free()  # the stored counterexample (generator topic.def2.1.2)
    p = TopicModel(3, 2, 1, *BERT)
    D, D1 = tp.diagonal_value_matrix(p), _row0_variant(p, F(1))
    assert tp.population_loss(D1, p) == tp.minimum_loss(p)  # also a minimiser, also diagonal on 1..Tv
    assert np.array_equal(D1.astype(float), arrays["other"])
    a, b = 2.0, 5.0
    l0 = s2.attention_loss_explicit(D.astype(float), a, b, p, mask_keys=True)
    l1 = s2.attention_loss_explicit(D1.astype(float), a, b, p, mask_keys=True)
    assert l1 - l0 > 0.05  # Thm 2.1.5's stage-2 loss depends on the choice


@given(T=st.integers(2, 4), v=st.integers(1, 3), u0=st.fractions(-3, 3).filter(lambda x: x != 0))
@settings(deadline=None, max_examples=15)
@pytest.mark.claim("topic.def2.1.2", tier="property", no_trivial="u0 != 0: row 0 differs from the library's")
def test_def212_row0_family_is_optimal(T: int, v: int, u0: F) -> None:
    p = TopicModel(T, v, 1, *BERT)
    assert tp.population_loss(_row0_variant(p, u0), p) == tp.minimum_loss(p)
    assert tp.population_loss(tp.diagonal_value_matrix(p), p) == tp.minimum_loss(p)
