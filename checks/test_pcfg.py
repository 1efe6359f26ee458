"""Claim checks of the PCFG data of Liu §4.2.3 / §4.2.8 (``distill.pcfg``, ``distill.masked``, ``distill.ngram``,
``distill.measures``) and of paper 000's PCFG data and tasks (``flat.data.pcfg``, ``flat.data.pcfg_tasks``)."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from theorylab.languages.pcfg import PCFG, enumerate_parses
from theorylab.languages.pcfg_grammars import (
    CFG3_DEGREES,
    cfg3_style,
    dense_grammar,
    flat_grammar,
    layered_grammar,
)
from theorylab.languages.pcfg_measures import (
    boundary_labels,
    l_close,
    l_robust,
    mask_tokens,
    ngram_context,
    pcfg_predictor,
    span_task,
)
from theorylab.testing import trivial

# Brute-force sums of at most ~1e4 products of probabilities in float64: relative error ~1e-14; we use 1e-12.
TOL = 1e-12


def tiny_grammar(seed: int, n: int = 2, v: int = 2, stop: float = 0.55, conc: float = 1.0) -> PCFG:
    """All n^3 binary rules present, emission mass ``stop`` per nonterminal; Dirichlet(``conc``) emissions (small
    ``conc``: peaked, so the context matters)."""
    return dense_grammar(np.random.default_rng(seed), n, v, stop, conc)


_STRINGS: dict = {}


def brute_string(g: PCFG, y: tuple, combine=sum) -> float:
    """P(y) (``combine=max``: the best parse's probability) by enumerating every parse; memoised per grammar."""
    key = (id(g), y, combine)
    if key not in _STRINGS:
        probs = [p for p, _ in enumerate_parses(g, g.evidence(np.array(y)))]
        _STRINGS[key] = combine(probs) if probs else 0.0
    return _STRINGS[key]


def brute_conditional(g: PCFG, x: np.ndarray, observed: np.ndarray, i: int, combine=sum) -> np.ndarray:
    """P(x_i | x_O) by enumerating every fill of the hidden positions and every parse (``combine=max``: the
    max-product (Viterbi) version)."""
    hidden = np.flatnonzero(~observed | (np.arange(len(x)) == i))
    joint = np.zeros(g.n_vocab)
    for fill in itertools.product(range(g.n_vocab), repeat=len(hidden)):
        y = x.copy()
        y[hidden] = fill
        p = brute_string(g, tuple(y.tolist()), combine)
        joint[y[i]] = max(joint[y[i]], p) if combine is max else joint[y[i]] + p
    return joint / joint.sum()


# ------------------------------------------------------------------------------------------------ distill.pcfg
@pytest.mark.claim("distill.pcfg", tier="exact")
def test_inside_outside_equal_enumeration_of_all_parses() -> None:
    g = tiny_grammar(0)
    for x in ([0, 1, 1, 0], [1, 0, 1, 1, 0]):
        ev = g.evidence(np.array(x))
        parses = enumerate_parses(g, ev)
        z = sum(p for p, _ in parses)
        assert abs(np.exp(g.log_partition(ev)) - z) <= TOL * z
        brute = np.zeros((len(x) + 1, len(x) + 1, 2))
        for p, tree in parses:
            for a, i, j in tree:
                brute[i, j, a] += p / z
        assert np.abs(g.span_posteriors(ev) - brute).max() <= TOL


@pytest.mark.claim("distill.pcfg", tier="exact")
def test_cfg3_style_grammars_have_depth_7_trees(measure) -> None:
    for name, (degrees, _) in CFG3_DEGREES.items():
        g = cfg3_style(name, np.random.default_rng(0))
        s = g.sample(np.random.default_rng(1), 400)
        leaves = (s.node_end - s.node_start == 1) & (g.labels[s.node_nt] < 0)
        assert set(s.node_level[leaves].tolist()) == {
            6
        }  # root level 0 .. preterminal level 6, terminals at 7
        own = g.labels[g.rules[:, 0]] >= 0
        rules_per_nt = np.bincount(g.rules[own, 0], minlength=g.n_nonterminals)[g.labels >= 0]
        assert set(rules_per_nt.tolist()) <= set(degrees)
        measure(f"{name}_length_percentiles_25_50_75_95", np.percentile(s.lengths, [25, 50, 75, 95]).tolist())
        assert 64 <= s.lengths.min() and s.lengths.max() <= 729  # between 2^6 and 3^6 terminals


class _EdgeDraws:
    """A stand-in generator whose uniform draws are all ``u`` (the inverse-cdf samplers' boundary cases)."""

    def __init__(self, u: float) -> None:
        self.u = u

    def random(self, size=None):
        return self.u if size is None else np.full(size, self.u)


@pytest.mark.claim("distill.pcfg", tier="exact")
def test_samplers_invert_the_cdf_at_its_edges_and_draw_every_outcome() -> None:
    # start law summing to 1 - 5e-10 (inside the 1e-9 normalisation tolerance): u = 0 gives the first root, u = 1/2
    # still the first (its normalised mass is 0.5 / (1 - 5e-10) > 1/2), u -> 1 the last; each nonterminal emits only (a single-token sentence), its last outcome at u -> 1
    near_one = 1 - 1e-12
    g = PCFG(
        np.array([0.5, 0.5 - 5e-10]), np.zeros((0, 3), int), np.zeros(0), np.array([[0.25, 0.75], [1.0, 0.0]])
    )
    for u, root, token in ((0.0, 0, 0), (0.5, 0, 1), (near_one, 1, 0)):
        s = g.sample(_EdgeDraws(u), 3)
        assert s.node_nt[s.node_level == 0].tolist() == [root] * 3
        tokens, spans = g.sample_recursive(_EdgeDraws(u))
        assert (tokens, spans) == ([token], [(root, 0, 1)])
    # nonterminal 0's last outcome (token 1, probability 3/4) is drawn by the recursive sampler at u -> 1
    only0 = PCFG(np.array([1.0]), np.zeros((0, 3), int), np.zeros(0), g.emissions[:1])
    assert only0.sample_recursive(_EdgeDraws(near_one))[0] == [1]
    assert only0.sample_recursive(_EdgeDraws(0.2))[0] == [0]
    # enumeration lists only parses of positive probability: nonterminal 1 emits token 1 with probability 0
    assert [(p, sorted(t)) for p, t in enumerate_parses(only0, only0.evidence(np.array([1])))] == [
        (0.75, [(0, 0, 1)])
    ]
    assert enumerate_parses(g, g.evidence(np.array([1]))) == [(0.5 * 0.75, frozenset({(0, 0, 1)}))]
    # cfg3b forbids equal consecutive symbols: the same draws as layered_grammar(distinct=True), not False
    same = cfg3_style("cfg3b", np.random.default_rng(3))
    assert np.array_equal(
        same.rules, layered_grammar(np.random.default_rng(3), degrees=(2,), distinct=True).rules
    )
    assert not np.array_equal(same.rules, layered_grammar(np.random.default_rng(3), degrees=(2,)).rules)


@pytest.mark.claim("distill.pcfg", tier="exact", control=True)
def test_control_a_wrong_inside_fails_enumeration() -> None:
    g = tiny_grammar(0)
    ev = g.evidence(np.array([0, 1, 1, 0]))
    z = sum(p for p, _ in enumerate_parses(g, ev))
    # the max-product (Viterbi) score in place of the sum over parses is not the sentence probability
    viterbi = max(p for p, _ in enumerate_parses(g, ev))
    assert abs(viterbi - z) > 0.1 * z
    # and a non-layered grammar does not put all leaves at one depth
    s = tiny_grammar(1).sample(np.random.default_rng(0), 200)
    leaves = s.node_end - s.node_start == 1
    assert len(set(s.node_level[leaves].tolist())) > 1


@given(seed=st.integers(0, 2**32 - 1), length=st.integers(2, 5))
@settings(deadline=None, max_examples=15)
@pytest.mark.claim("distill.pcfg", tier="property")
def test_sampled_trees_are_parses_with_the_sampled_probability(seed: int, length: int) -> None:
    g = tiny_grammar(seed % 1000)
    rng = np.random.default_rng(seed)
    x = rng.integers(0, 2, length)
    ev = g.evidence(x)
    parses = enumerate_parses(g, ev)
    trivial(len(parses) <= 1)
    z = sum(p for p, _ in parses)
    assert abs(np.exp(g.log_partition(ev)) - z) <= TOL * z
    # both samplers' trees are parses of their sentences under the grammar
    s = g.sample(rng, 20)
    for k in range(20):
        tokens = s.sentence(k)
        if len(tokens) <= 4:
            trees = {t for _, t in enumerate_parses(g, g.evidence(tokens))}
            assert frozenset(s.constituents(k)) in trees
        rec_tokens, rec_spans = g.sample_recursive(rng)
        if len(rec_tokens) <= 4:
            trees = {t for _, t in enumerate_parses(g, g.evidence(np.array(rec_tokens)))}
            assert frozenset(rec_spans) in trees


# ------------------------------------------------------------------------------------------------ distill.masked
def _mask_shares(rng, x, n_vocab, exclude_original=False):
    out, masked = mask_tokens(rng, x, 0.3, n_vocab, n_vocab)
    if exclude_original:  # a plausible variant: the random token is drawn among the other tokens
        same = masked & (out == x)
        out[same] = (x[same] + rng.integers(1, n_vocab, int(same.sum()))) % n_vocab
        keep = rng.random(x.shape) < 0.1 / (0.1 + 0.1 / n_vocab)
        out[same & keep] = x[same & keep]
    m = masked.sum()
    return m, np.mean(out[masked] == n_vocab), np.mean(out[masked] == x[masked])


@pytest.mark.claim("distill.masked", tier="exact")
def test_masking_is_80_10_10_with_random_tokens_from_the_whole_vocabulary(measure) -> None:
    rng = np.random.default_rng(0)
    x = rng.integers(0, 3, 1_000_000)
    m, mask_share, same_share = _mask_shares(rng, x, 3)
    p_same = 0.1 + 0.1 / 3  # unchanged 10% + a random token equal to the original 10%/|V|
    measure("unchanged_share_V3", float(same_share))
    assert abs(m / x.size - 0.3) <= 5 * np.sqrt(0.21 / x.size)
    assert abs(mask_share - 0.8) <= 5 * np.sqrt(0.16 / m)
    assert abs(same_share - p_same) <= 5 * np.sqrt(p_same * (1 - p_same) / m)


@pytest.mark.claim("distill.masked", tier="exact", control=True)
def test_control_unchanged_share_of_exactly_10_percent_is_rejected() -> None:
    rng = np.random.default_rng(0)
    x = rng.integers(0, 3, 1_000_000)
    m, _, same_share = _mask_shares(rng, x, 3, exclude_original=True)
    p_same = 0.1 + 0.1 / 3
    assert abs(same_share - 0.1) <= 5 * np.sqrt(0.09 / m)  # the variant's share is 10%
    assert abs(same_share - p_same) > 5 * np.sqrt(p_same * (1 - p_same) / m)  # rejected by the same verdict


@given(p=st.floats(0.05, 1.0), n_vocab=st.integers(2, 50), seed=st.integers(0, 2**32 - 1))
@settings(deadline=None, max_examples=30)
@pytest.mark.claim("distill.masked", tier="property", no_trivial="p >= 0.05 on 2000 tokens: masks drawn")
def test_masking_touches_only_masked_positions(p: float, n_vocab: int, seed: int) -> None:
    rng = np.random.default_rng(seed)
    x = rng.integers(0, n_vocab, 2000)
    out, masked = mask_tokens(rng, x, p, n_vocab, n_vocab)
    assert np.array_equal(out[~masked], x[~masked])
    assert (out[~masked] != n_vocab).all() and (out <= n_vocab).all() and (out >= 0).all()


# ------------------------------------------------------------------------------------------------ distill.ngram
def printed_ngram(i: int, n: int, h: int) -> list[int]:
    """Def 25 exactly as printed: {j : max(i - ceil((n-1)/2), 0) <= j <= min(i + floor((n-1)/2), h)}."""
    return list(range(max(i - -(-(n - 1) // 2), 0), min(i + (n - 1) // 2, h) + 1))


@pytest.mark.claim("distill.ngram", tier="exact")
def test_ngram_context_is_pinned_to_0_based_clipped_windows() -> None:
    # Fig. 4.6, "The cat ran away": the 3-gram context of "cat" is The, ran; the 5-gram adds away
    assert ngram_context(1, 3, 4).tolist() == [0, 1, 2]
    assert ngram_context(1, 5, 4).tolist() == [0, 1, 2, 3]
    for h, n in itertools.product(range(1, 9), range(1, 10)):
        for i in range(h):
            got = ngram_context(i, n, h).tolist()
            assert got == [
                j for j in printed_ngram(i, n, h) if 0 <= j < h
            ]  # the printed set, in the sentence
            if n // 2 <= i < h - (n - 1) // 2:
                assert len(got) == n  # interior: n positions, the extra one on the left for even n


@pytest.mark.claim("distill.ngram", tier="exact", control=True)
def test_control_the_printed_clamps_leave_the_sentence() -> None:
    # read 0-based, the printed upper clamp admits j = h; read 1-based, the lower clamp admits j = 0
    h = 4
    assert h in printed_ngram(3, 3, h)  # 0-based: position h does not exist
    assert 0 in printed_ngram(1, 3, h)  # 1-based: position 0 does not exist
    assert printed_ngram(3, 3, h) != ngram_context(3, 3, h).tolist()


@given(n=st.integers(1, 12), h=st.integers(2, 40), data=st.data())
@settings(deadline=None, max_examples=40)
@pytest.mark.claim("distill.ngram", tier="property")
def test_ngram_windows_are_contiguous_and_contain_i(n: int, h: int, data) -> None:
    i = data.draw(st.integers(0, h - 1))
    trivial(n == 1)
    w = ngram_context(i, n, h)
    assert i in w and np.all(np.diff(w) == 1) and w.min() >= 0 and w.max() < h
    assert len(w) == min(i, n // 2) + 1 + min(h - 1 - i, (n - 1) // 2)


# ------------------------------------------------------------------------------------------------ distill.measures
@pytest.mark.claim("distill.measures", tier="exact")
def test_l_robust_and_l_close_of_the_true_conditional_equal_enumeration(measure) -> None:
    g = tiny_grammar(1, conc=0.1)
    x = np.array([0, 1, 1, 0])
    h = len(x)
    values = {}
    for i, n in itertools.product(range(h), (2, 3)):
        only_i = np.arange(h) != i
        outside = np.ones(h, bool)
        outside[ngram_context(i, n, h)] = False
        window = np.zeros(h, bool)
        window[ngram_context(i, n, h)] = True
        window[i] = False
        full = brute_conditional(g, x, only_i, i)
        robust = 0.5 * np.abs(full - brute_conditional(g, x, outside, i)).sum()
        close = 0.5 * np.abs(full - brute_conditional(g, x, window, i)).sum()
        pred = pcfg_predictor(g)
        assert abs(l_robust(pred, x, i, n) - robust) <= TOL
        assert abs(l_close(pred, x, i, n) - close) <= TOL
        values[(i, n)] = (robust, close)
    measure("L_robust_L_close_i3_n3", list(values[(3, 3)]))
    pred = pcfg_predictor(g)
    assert all(l_robust(pred, x, i, 1) == 0.0 and l_close(pred, x, i, 2 * h) == 0.0 for i in range(h))


@pytest.mark.claim("distill.measures", tier="exact", control=True)
def test_control_a_leaky_measure_that_keeps_the_target_visible_is_rejected(measure) -> None:
    g = tiny_grammar(1, conc=0.1)
    x = np.array([0, 1, 1, 0])
    i, n = 3, 3
    outside = np.ones(4, bool)
    outside[ngram_context(i, n, 4)] = False
    full = brute_conditional(g, x, np.arange(4) != i, i)
    robust = 0.5 * np.abs(full - brute_conditional(g, x, outside, i)).sum()
    measure("L_robust_i3_n3", float(robust))

    def leaky(x_, observed, j):  # a predictor that sees x_j: the conditional collapses to a point mass
        return np.eye(g.n_vocab)[x_[j]]

    assert robust > 0.05 and abs(l_robust(leaky, x, i, n) - robust) > 0.05  # rejected by the 1e-12 equality


@pytest.mark.claim("distill.measures", tier="exact")
def test_def26_level_targets_on_a_hand_built_tree() -> None:
    g = layered_grammar(np.random.default_rng(0), level_sizes=(1, 2, 2), n_vocab=3)
    s = g.sample(np.random.default_rng(3), 5)
    for k in range(5):
        for level in range(3):
            lab = boundary_labels(s, g, k, level)
            nodes = np.flatnonzero(
                (s.node_sentence == k) & (s.node_level == level) & (g.labels[s.node_nt] >= 0)
            )
            # level-l nodes partition the sentence: one target per node, at its rightmost position
            assert (lab >= 0).sum() == len(nodes)
            assert sorted((s.node_end[nodes] - 1).tolist()) == np.flatnonzero(lab >= 0).tolist()
            covered = np.zeros(int(s.lengths[k]), int)
            for a, b in zip(s.node_start[nodes], s.node_end[nodes], strict=True):
                covered[a:b] += 1
            assert (covered == 1).all()


@pytest.mark.claim("distill.measures", tier="exact", control=True)
def test_control_levels_counted_from_the_leaves_reverse_the_inclusion() -> None:
    # Def 26 counts levels from the root: shallower targets are a subset of deeper ones. Section 4.2.9's
    # C^(l1) within C^(l2) for l1 >= l2 (and C^(1) = all tokens) only holds counting from the leaves.
    g = layered_grammar(np.random.default_rng(0), level_sizes=(1, 2, 2), n_vocab=3)
    s = g.sample(np.random.default_rng(3), 5)
    root = set(np.flatnonzero(boundary_labels(s, g, 0, 0) >= 0))
    deep = set(np.flatnonzero(boundary_labels(s, g, 0, 2) >= 0))
    assert root < deep and not deep <= root


@given(seed=st.integers(0, 2**32 - 1), n=st.integers(1, 4))
@settings(deadline=None, max_examples=15)
@pytest.mark.claim("distill.measures", tier="property")
def test_measures_are_total_variations_that_vanish_at_the_ends(seed: int, n: int) -> None:
    g = tiny_grammar(seed % 997)
    rng = np.random.default_rng(seed)
    x = rng.integers(0, 2, 4)
    i = int(rng.integers(0, 4))
    pred = pcfg_predictor(g)
    r, c = l_robust(pred, x, i, n), l_close(pred, x, i, n)
    trivial(bool(r == 0.0 and n > 1))
    assert 0 <= r <= 1 and 0 <= c <= 1
    assert l_robust(pred, x, i, 1) == 0.0 and l_close(pred, x, i, 8) == 0.0


# ------------------------------------------------------------------------------------------------ flat.data.pcfg
@pytest.fixture(scope="module")
def flat():
    return flat_grammar(np.random.default_rng(0))


@pytest.mark.claim("flat.data.pcfg", tier="exact")
def test_paper_000_grammar_matches_the_specification(flat, measure) -> None:
    assert flat.n_vocab == 200 and flat.n_labels == 50
    s = flat.sample(np.random.default_rng(1), 20000)
    measure("expected_length", flat.expected_length())
    measure("max_length", int(s.lengths.max()))
    assert s.lengths.max() <= 32  # the depth cap: leaves at levels <= 6, 2^5 = 32 tokens
    assert abs(flat.expected_length() - 3.4e8 / 2e7) < 0.5  # mean 17 tokens per sentence (A.1)
    se = s.lengths.std() / np.sqrt(len(s))
    assert abs(s.lengths.mean() - flat.expected_length()) <= 5 * se


@pytest.mark.claim("flat.data.pcfg", tier="exact")
def test_true_mlm_conditional_by_inside_equals_enumeration() -> None:
    g = tiny_grammar(4, n=2, v=3)
    x = np.array([0, 2, 1, 1])
    for t in range(4):
        obs = np.arange(4) != t
        assert np.abs(g.masked_conditional(x, obs, t) - brute_conditional(g, x, obs, t)).max() <= TOL


@pytest.mark.claim("flat.data.pcfg", tier="exact", control=True)
def test_control_max_product_conditionals_differ() -> None:
    g = tiny_grammar(4, n=2, v=3)
    x = np.array([0, 2, 1, 1])
    obs = np.arange(4) != 1
    exact = brute_conditional(g, x, obs, 1)
    viterbi = brute_conditional(g, x, obs, 1, combine=max)
    assert np.abs(viterbi - exact).max() > 1e-3  # rejected by the same 1e-12 equality


# ------------------------------------------------------------------------------------------------ flat.data.pcfg_tasks
@pytest.mark.claim("flat.data.pcfg_tasks", tier="exact")
def test_span_labels_are_the_argmax_of_the_enumerated_posterior() -> None:
    g = tiny_grammar(5, n=3, v=2)
    x = np.array([0, 1, 1, 0])
    parses = enumerate_parses(g, g.evidence(x))
    z = sum(p for p, _ in parses)
    # every span's posterior in one pass over the parses (each span's terms added in the same parse order)
    posts = {span: np.zeros(3) for span in itertools.combinations(range(5), 2)}
    for p, tree in parses:
        for a, b, c in tree:
            if (b, c) in posts:
                posts[b, c][a] += p / z
    for (i, j), post in posts.items():
        assert g.span_label(x, i, j) == (int(np.argmax(post)) if post.max() > 0 else -1)


@pytest.mark.claim("flat.data.pcfg_tasks", tier="exact", control=True)
def test_control_inside_only_labels_differ_from_the_posterior() -> None:
    # labelling a span by its inside score alone (ignoring the context) is a plausible wrong version
    differ = 0
    for seed in range(20):
        g = tiny_grammar(seed, n=3, v=2)
        x = np.random.default_rng(seed).integers(0, 2, 5)
        alpha = g.inside(g.evidence(x))
        for i, j in itertools.combinations(range(6), 2):
            if j - i < 5 and np.isfinite(alpha[i, j]).any():
                differ += int(np.argmax(alpha[i, j]) != g.span_label(x, i, j))
    assert differ > 0


@pytest.mark.claim("flat.data.pcfg_tasks", tier="exact")
def test_tasks_a_b_c_on_the_reconstructed_grammar(flat, measure) -> None:
    s = flat.sample(np.random.default_rng(2), 4000)
    for name, length in (("A", 32), ("B", 16), ("C", 8)):
        share = float(np.mean(s.lengths >= length))
        measure(f"task_{name}_share_of_sentences_with_L_tokens", share)
    # labels through the whole pipeline on a smaller grammar of the same construction (inside-outside on the
    # 50-non-terminal grammar costs seconds per 32-token sentence)
    small = flat_grammar(np.random.default_rng(0), n_nonterminals=8, n_vocab=20, max_level=4)
    t = small.sample(np.random.default_rng(3), 400)
    for length in (16, 8, 4):
        items = span_task(small, t, length, max_items=3)
        assert len(items) == 3 and all(0 <= lab < 8 for _, lab in items)
    assert np.mean(s.lengths >= 32) < np.mean(s.lengths >= 16) < np.mean(s.lengths >= 8)


# ------------------------------------------------------------------------------------------------ the domain
@pytest.mark.claim("distill.pcfg", tier="exact")
def test_definitions_reject_bad_input_and_handle_their_edges() -> None:
    from theorylab.languages.pcfg import logsumexp
    from theorylab.languages.pcfg_grammars import compile_grammar
    from theorylab.testing import rejects

    # log-space sums shift each row by its own maximum: a row far below another does not underflow
    out = logsumexp(np.array([[0.0, 0.0], [-800.0, -800.0]]), axis=1)
    assert np.allclose(out, [np.log(2), -800 + np.log(2)], rtol=0, atol=1e-12)
    g = tiny_grammar(0)
    rejects(lambda: g.evidence([0, 1], masked=[3]), r"masked positions must lie in \[0, 2\), got \[3\]")
    rejects(
        lambda: flat_grammar(np.random.default_rng(0), n_rules=True),
        r"n_rules must be an int, got bool",
        TypeError,
    )
    rejects(lambda: ngram_context(True, 3, 4), r"i must be an int, got bool", TypeError)
    rejects(lambda: ngram_context(0, 2.5, 4), r"n must be an int, got float", TypeError)
    rejects(lambda: ngram_context(0, 3, 4.0), r"h must be an int, got float", TypeError)
    # grammar builders and the masking of Def 24 name what they refuse
    tg = tiny_grammar(0)
    for bad in (np.ones((2, tg.n_vocab + 1)), np.ones((0, tg.n_vocab))):
        rejects(
            lambda bad=bad: tg.inside(bad), rf"^evidence must be an \(n, {tg.n_vocab}\) array with n >= 1"
        )
    rejects(
        lambda: tiny_grammar(0).sample(np.random.default_rng(0), 2, max_steps=0),
        r"^sampling did not finish within max_steps = 0 rewriting steps$",
        RuntimeError,
    )
    rejects(
        lambda: layered_grammar(np.random.default_rng(0), level_sizes=(2, 3)),
        r"^level_sizes must start with the single root, got \[2, 3\]$",
    )
    rejects(lambda: cfg3_style("cfg3z", np.random.default_rng(0)), r"^unknown cfg3 grammar 'cfg3z' \(known: ")
    rejects(
        lambda: mask_tokens(np.random.default_rng(0), np.array([0, 1]), 1.5, 3, 3),
        r"^mask rate p must lie in \[0, 1\], got 1.5$",
    )
    rejects(
        lambda: compile_grammar(
            1,
            2,
            np.array([1.0]),
            [(0, (("N", 0), ("N", 0)), 0.0), (0, (("T", 0),), 0.5), (0, (("T", 1),), 0.5)],
        ),
        r"^rule probabilities must be positive \(drop zero rules\), rule 0$",
    )
    # a grammar of emissions only (no binary rule): one-token sentences
    only = compile_grammar(1, 2, np.array([1.0]), [(0, (("T", 0),), 0.25), (0, (("T", 1),), 0.75)])
    assert len(only.rules) == 0 and abs(np.exp(only.log_prob(np.array([1]))) - 0.75) < 1e-15
    # span tasks at L = 1 are defined; in paper 000's grammar only (unlabelled) preterminals span one token
    small = flat_grammar(np.random.default_rng(0), n_nonterminals=5, n_vocab=10, max_level=3)
    sents = small.sample(np.random.default_rng(1), 20)
    assert span_task(small, sents, 1) == []
