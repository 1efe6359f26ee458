"""theorylab.languages.pcfg: validation, exact inside-outside against brute-force enumeration, samplers, the random
grammars of the two documents and Liu §4.2.3's measures."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

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
from theorylab.testing import rejects

# Enumeration sums at most a few thousand products of probabilities: float64 relative error ~1e-14.
TOL = 1e-12


def random_grammar(seed: int, n: int = 2, v: int = 2, stop: float = 0.55) -> PCFG:
    return dense_grammar(np.random.default_rng(seed), n, v, stop)


@pytest.fixture(scope="module")
def tiny() -> PCFG:
    return random_grammar(0)


def test_inside_equals_brute_force_on_every_string(tiny: PCFG) -> None:
    for length in range(1, 5):
        for x in itertools.product(range(2), repeat=length):
            brute = sum(p for p, _ in enumerate_parses(tiny, tiny.evidence(np.array(x))))
            assert abs(np.exp(tiny.log_prob(np.array(x))) - brute) <= TOL * brute


def test_length_marginals_sum_the_strings(tiny: PCFG) -> None:
    # all-masked evidence = P(|x| = n) = the sum over all V^n strings; and the lengths' mass sums to 1
    total = 0.0
    for length in range(1, 6):
        strings = sum(np.exp(tiny.log_prob(np.array(x))) for x in itertools.product(range(2), repeat=length))
        marginal = np.exp(tiny.log_partition(np.ones((length, 2))))
        assert abs(marginal - strings) <= TOL * strings
        total += marginal
    assert 0.5 < total < 1  # the rest is in longer sentences


def test_span_posteriors_equal_brute_force(tiny: PCFG) -> None:
    for x in ([0, 1, 1, 0, 1], [1, 1, 1], [0, 0, 1, 0]):
        ev = tiny.evidence(np.array(x))
        parses = enumerate_parses(tiny, ev)
        z = sum(p for p, _ in parses)
        post = tiny.span_posteriors(ev)
        brute = np.zeros_like(post)
        for p, tree in parses:
            for a, i, j in tree:
                brute[i, j, a] += p / z
        assert np.max(np.abs(post - brute)) <= TOL
        assert abs(post.sum() - (2 * len(x) - 1)) <= TOL * len(
            x
        )  # a binary tree on n leaves has 2n - 1 nodes


def test_masked_conditional_equals_enumeration(tiny: PCFG) -> None:
    x = np.array([0, 1, 1, 0, 1])
    observed = np.array([True, False, True, True, False])
    for i in range(5):
        hidden = np.flatnonzero(~observed | (np.arange(5) == i))
        joint = np.zeros(2)
        for fill in itertools.product(range(2), repeat=len(hidden)):
            y = x.copy()
            y[hidden] = fill
            joint[y[i]] += np.exp(tiny.log_prob(y))
        got = tiny.masked_conditional(x, observed, i)
        assert np.max(np.abs(got - joint / joint.sum())) <= TOL


def test_inside_is_stable_for_long_improbable_sentences() -> None:
    g = random_grammar(1, n=4, v=3, stop=0.51)
    x = np.random.default_rng(0).integers(0, 3, 60)
    lp = g.log_prob(x)
    assert np.isfinite(lp) and lp < -60  # no underflow to -inf in log space
    post = g.span_posteriors(g.evidence(x))
    assert abs(post.sum() - 119) < 1e-8


def _tree_is_valid(g: PCFG, tokens: list[int], spans: set) -> bool:
    n = len(tokens)
    by_span = {(i, j): a for a, i, j in spans}
    if len(by_span) != len(spans) or len(spans) != 2 * n - 1 or (0, n) not in by_span:
        return False
    rules = {tuple(r) for r in g.rules.tolist()}
    for (i, j), a in by_span.items():
        if j - i == 1:
            if g.emissions[a, tokens[i]] <= 0:
                return False
            continue
        splits = [k for k in range(i + 1, j) if (i, k) in by_span and (k, j) in by_span]
        if len(splits) != 1 or (a, by_span[(i, splits[0])], by_span[(splits[0], j)]) not in rules:
            return False
    return True


@pytest.mark.parametrize("seed", [0, 3])
def test_vectorised_and_recursive_samplers_draw_valid_trees_from_the_same_law(seed: int) -> None:
    g = random_grammar(seed)
    rng = np.random.default_rng(seed)
    batch = g.sample(rng, 4000)
    for s in range(50):
        assert _tree_is_valid(g, batch.sentence(s).tolist(), batch.constituents(s))
    rec = [g.sample_recursive(rng) for _ in range(4000)]
    assert all(_tree_is_valid(g, t, set(c)) for t, c in rec[:50])
    # the frequency of each string of length <= 2 matches P(x); 4000 draws: 5 standard errors
    for x in [(0,), (1,), (0, 0), (0, 1), (1, 0), (1, 1)]:
        p = np.exp(g.log_prob(np.array(x)))
        se = 5 * np.sqrt(p * (1 - p) / 4000)
        vec = np.mean([tuple(batch.sentence(s)) == x for s in range(len(batch))])
        r = np.mean([tuple(t) == x for t, _ in rec])
        assert abs(vec - p) <= se and abs(r - p) <= se, (x, vec, r, p)


def test_expected_length_matches_samples() -> None:
    g = random_grammar(2)
    lengths = g.sample(np.random.default_rng(0), 20000).lengths
    se = lengths.std() / np.sqrt(len(lengths))
    assert abs(lengths.mean() - g.expected_length()) <= 5 * se


def test_validation_names_the_problem() -> None:
    ok = dict(start=[1.0, 0.0], rules=[[0, 0, 1]], rule_probs=[0.5], emissions=[[0.5, 0.0], [0.0, 1.0]])
    PCFG(**ok)
    for change, msg, err in (
        (
            dict(rule_probs=[0.4]),
            r"rules of nonterminal 0 are not normalised: their probabilities sum to 0.9",
            ValueError,
        ),
        (
            dict(emissions=[[0.5, 0.0], [0.0, 1.0], [1.0, 0.0]], start=[1.0, 0, 0]),
            r"nonterminal 2 is unreachable",
            ValueError,
        ),
        (
            dict(emissions=[[0.5, 0.0], [0.0, 0.0]], rules=[[0, 0, 1], [1, 1, 1]], rule_probs=[0.5, 1.0]),
            r"nonterminal 1 is non-terminating",
            ValueError,
        ),
        (
            dict(rules=[[0, 0, 0]], rule_probs=[0.6], emissions=[[0.4, 0.0], [0.0, 1.0]], start=[0.5, 0.5]),
            r"the grammar is not subcritical",
            ValueError,
        ),
        (dict(start=[0.5, 0.4]), r"start probabilities must sum to 1", ValueError),
        (dict(rules=[[0, 0, 2]]), r"rules must name nonterminals in \[0, 2\)", ValueError),
        (dict(rules=[[0, 0]]), r"rules must be an \(R, 3\) array", ValueError),
        (dict(rules=[[0.0, 0.0, 1.0]]), r"rules must hold integers", TypeError),
        (dict(rule_probs=[0.5, 0.1]), r"rule_probs must have one probability per rule \(1\)", ValueError),
        (dict(rules=[[0, 0, 1], [0, 0, 1]], rule_probs=[0.25, 0.25]), r"rules must be distinct", ValueError),
        (
            dict(rules=[[0, 0, 1], [0, 1, 1]], rule_probs=[0.5, 0.0]),
            r"rule probabilities must be positive",
            ValueError,
        ),
        (dict(emissions=[[-0.5, 1.0], [0.0, 1.0]]), r"emissions must be finite and non-negative", ValueError),
        (dict(start=[1.0]), r"start must have one probability per nonterminal \(2\)", ValueError),
    ):
        rejects(lambda c=change: PCFG(**{**ok, **c}), msg, err)
    g = PCFG(**ok)
    rejects(lambda: g.evidence([0, 2]), r"tokens must lie in \[0, 2\)")
    rejects(lambda: g.evidence([]), r"tokens must be a non-empty 1-D sequence")
    rejects(lambda: g.evidence([0.5]), r"tokens must be integers", TypeError)
    rejects(lambda: g.evidence([0, 1], masked=[3]), r"masked positions must lie in \[0, 2\)")
    rejects(lambda: g.inside(np.ones((2, 3))), r"evidence must be an \(n, 2\) array")
    rejects(lambda: g.span_label([0, 1], 1, 1), r"span must satisfy 0 <= i < j <= 2")
    rejects(lambda: g.span_posteriors(g.evidence([1])), r"the evidence has probability zero")
    rejects(lambda: g.masked_conditional([0, 1], [True], 0), r"observed must be a boolean array")
    rejects(lambda: g.sample(np.random.default_rng(0), 0), r"size must be a positive int")
    rng = np.random.default_rng(0)
    rejects(lambda: dense_grammar(rng, stop=0.5), r"stop must lie in \(1/2, 1\]")
    rejects(lambda: dense_grammar(rng, concentration=0.0), r"concentration must be positive")
    rejects(lambda: dense_grammar(rng, n_vocab=0), r"n_vocab must be >= 1")
    rejects(lambda: enumerate_parses(g, np.ones((9, 2))), r"brute-force enumeration is limited")


def test_span_label_picks_the_most_likely_class(tiny: PCFG) -> None:
    x = np.array([0, 1, 1, 0])
    post = tiny.span_posteriors(tiny.evidence(x))
    assert tiny.span_label(x, 0, 4) == int(np.argmax(post[0, 4]))
    assert tiny.span_label(x, 1, 3) == int(np.argmax(post[1, 3]))


def test_layered_grammars_have_all_leaves_at_one_depth() -> None:
    for name, (degrees, _distinct) in CFG3_DEGREES.items():
        g = cfg3_style(name, np.random.default_rng(0))
        s = g.sample(np.random.default_rng(1), 50)
        leaf = s.node_end - s.node_start == 1
        pre = g.labels[s.node_nt] < 0
        assert set(s.node_level[leaf & pre].tolist()) == {6}, name  # preterminals at level 6: depth-7 trees
        lab = g.labels >= 0
        counts = np.bincount(g.rules[lab[g.rules[:, 0]], 0], minlength=g.n_nonterminals)[lab]
        assert set(counts.tolist()) <= set(degrees), name
        assert 64 <= s.lengths.min() and s.lengths.max() <= 729
    rejects(lambda: cfg3_style("cfg3z", np.random.default_rng(0)), r"unknown cfg3 grammar 'cfg3z'")
    rejects(lambda: layered_grammar(np.random.default_rng(0), level_sizes=(2, 3)), r"level_sizes must start")
    rejects(
        lambda: layered_grammar(np.random.default_rng(0), rhs_lengths=(4,)), r"need degrees and rhs lengths"
    )
    rejects(
        lambda: layered_grammar(np.random.default_rng(0), level_sizes=(1, 1), distinct=True, degrees=(3,)),
        r"cannot draw 3 distinct right-hand sides",
    )


def test_flat_grammar_matches_paper_000_specification() -> None:
    g = flat_grammar(np.random.default_rng(0))
    assert g.n_vocab == 200 and g.n_labels == 50
    s = g.sample(np.random.default_rng(1), 3000)
    assert s.lengths.max() <= 32 and s.lengths.min() >= 2
    assert abs(g.expected_length() - 17) < 1.0  # 3.4e8 tokens / 2e7 sentences
    rejects(lambda: flat_grammar(np.random.default_rng(0), p_nonterminal=1.0), r"p_nonterminal must lie in")
    rejects(
        lambda: flat_grammar(np.random.default_rng(0), n_rules=True), r"n_rules must be an int", TypeError
    )


def test_ngram_context_pins_def25() -> None:
    # "The cat ran away": cat is position 1 (0-based); 3-gram {The, cat, ran}, 5-gram adds "away"
    assert ngram_context(1, 3, 4).tolist() == [0, 1, 2]
    assert ngram_context(1, 5, 4).tolist() == [0, 1, 2, 3]
    assert ngram_context(5, 4, 10).tolist() == [3, 4, 5, 6]  # even n: the extra position on the left
    assert ngram_context(0, 1, 3).tolist() == [0]
    assert ngram_context(9, 5, 10).tolist() == [7, 8, 9]
    rejects(lambda: ngram_context(4, 3, 4), r"position i must lie in \[0, 4\)")
    rejects(lambda: ngram_context(0, 0, 4), r"n and h must be >= 1")
    rejects(lambda: ngram_context(True, 3, 4), r"i must be an int", TypeError)


def test_mask_tokens_follows_80_10_10() -> None:
    rng = np.random.default_rng(0)
    x = rng.integers(0, 3, 400_000)
    out, masked = mask_tokens(rng, x, 0.3, 3, 3)
    m = masked.sum()
    assert abs(m / x.size - 0.3) < 5 * np.sqrt(0.21 / x.size)
    frac_mask = np.mean(out[masked] == 3)
    frac_same = np.mean(out[masked] == x[masked])
    assert abs(frac_mask - 0.8) < 5 * np.sqrt(0.16 / m)
    p_same = 0.1 + 0.1 / 3  # the random token may equal the original
    assert abs(frac_same - p_same) < 5 * np.sqrt(p_same * (1 - p_same) / m)
    assert np.array_equal(out[~masked], x[~masked])
    rejects(lambda: mask_tokens(rng, x, 1.5, 3, 3), r"mask rate p must lie in \[0, 1\]")
    rejects(lambda: mask_tokens(rng, x, 0.3, 3, 1), r"mask_token must not be a vocabulary token")
    rejects(lambda: mask_tokens(rng, x.astype(float), 0.3, 3, 3), r"tokens must be integers", TypeError)


def test_measures_vanish_where_they_must(tiny: PCFG) -> None:
    pred = pcfg_predictor(tiny)
    x = np.array([0, 1, 1, 0, 1])
    for i in range(5):
        assert l_robust(pred, x, i, 1) == 0.0  # 1-gram(i) = {i}: both inputs mask only i
        assert l_close(pred, x, i, 9) == 0.0  # the window covers the sentence
        assert 0 < l_close(pred, x, i, 1) <= 1  # no context at all vs the full context


def test_boundary_labels_and_span_task() -> None:
    g = layered_grammar(np.random.default_rng(0), level_sizes=(1, 2, 2), n_vocab=3)
    s = g.sample(np.random.default_rng(1), 20)
    for k in range(20):
        root = boundary_labels(s, g, k, 0)
        assert (root >= 0).sum() == 1 and root[-1] == 0
        sets = [set(np.flatnonzero(boundary_labels(s, g, k, lvl) >= 0)) for lvl in range(3)]
        assert sets[0] <= sets[1] <= sets[2]  # deeper levels have more boundaries
    rejects(lambda: boundary_labels(s, g, 0, -1), r"level must be >= 0")
    small = flat_grammar(np.random.default_rng(0), n_nonterminals=5, n_vocab=10, max_level=3)
    sents = small.sample(np.random.default_rng(1), 200)
    items = span_task(small, sents, 8, max_items=5)  # L = 8 = 2^3: the root of a full tree
    assert len(items) == 5 and all(0 <= lab < 5 for _, lab in items)
    assert all(sents.lengths[k] == 8 for k, _ in items)
    rejects(lambda: span_task(g, s, 0), r"span length L must be >= 1")


def test_span_label_keeps_only_the_last_sentence(tiny: PCFG) -> None:
    """span_label reuses the label posteriors of the sentence it was last asked about and of no other: labels
    asked in any interleaving equal those of a grammar asked about one sentence only."""
    x, y = np.array([0, 1, 1, 0]), np.array([1, 1, 0, 0, 1])
    spans = [(x, i, j) for i, j in itertools.combinations(range(5), 2)]
    spans += [(y, i, j) for i, j in itertools.combinations(range(6), 2)]
    fresh = [random_grammar(0).span_label(s, i, j) for s, i, j in spans]
    interleaved = [tiny.span_label(s, i, j) for s, i, j in spans[::2] + spans[1::2]]
    assert interleaved == fresh[::2] + fresh[1::2]
    assert tiny.span_label(x.astype(np.int32), 0, 4) == random_grammar(0).span_label(x, 0, 4)


def test_outside_of_prefixes_is_the_first_row_of_outside_to_the_bit() -> None:
    small = flat_grammar(np.random.default_rng(0), n_nonterminals=8, n_vocab=20, max_level=4)
    t = small.sample(np.random.default_rng(3), 40)
    checked = 0
    for s in range(len(t)):
        x = t.sentence(s)
        if not 1 < len(x) <= 16:
            continue
        alpha = small.inside(small.evidence(x))
        assert small.outside_of_prefixes(alpha).tobytes() == small.outside(alpha)[0].tobytes()
        for length in {1, len(x) // 2, len(x) - 1, len(x)}:
            assert small.prefix_span_label(x, length) == small.span_label(x, 0, length)
        checked += 1
        if checked == 6:
            break
    assert checked == 6
    rejects(
        lambda: small.prefix_span_label([0, 1], 3), r"the prefix length must satisfy 1 <= length <= 2, got 3"
    )
    rejects(
        lambda: small.prefix_span_label([0, 1], 0), r"the prefix length must satisfy 1 <= length <= 2, got 0"
    )
