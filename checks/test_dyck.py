"""Checks of the bounded-Dyck family (Liu §3.6 = Li §2.2): exact and property tiers.

Verdict functions live here or in the library; every positive check has a negative control that applies the same
verdict to a perturbed construction and must see it fail. Floats are compared exactly where the construction is
exact: the lookup decoder outputs entries of the true distribution table, so "exact" means max error == 0.
"""

from __future__ import annotations

import functools
import itertools
from dataclasses import replace
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from theorylab.attention.dyck import balance as db
from theorylab.attention.dyck import bounds as bd
from theorylab.languages.dyck import Dyck
from theorylab.strategies.dyck import dyck_shapes, perturbations
from theorylab.testing import trivial

SIZES = [(1, 2), (2, 3), (2, 4)]
REFERENCE_COUNTS = {  # catalog B.1, N = 1..10
    (1, 2): [1, 2, 2, 4, 4, 8, 8, 16, 16, 32],
    (2, 3): [2, 6, 16, 32, 88, 168, 464, 880, 2432, 4608],
    (2, 4): [2, 6, 16, 48, 104, 312, 640, 1920, 3872, 11616],
}


@functools.cache
def _prefixes(k: int, depth: int, length: int) -> tuple[np.ndarray, np.ndarray]:
    lang = Dyck(k, depth)
    seqs = lang.all_prefixes(length)
    return seqs, lang.next_token_distributions(seqs)


@functools.cache
def _prefix_sets(k: int, depth: int, length: int) -> tuple[tuple[np.ndarray, np.ndarray], ...]:
    """Every prefix of each length 0..``length`` with its exact next-token distribution (computed once per run and
    shared by every check that enumerates them)."""
    lang = Dyck(k, depth)
    return tuple(
        (s, lang.next_token_distributions(s)[:, -1]) for s in map(lang.all_prefixes, range(length + 1))
    )


def exact_on_all_prefixes(model, k: int, depth: int, length: int) -> float:
    """Max |prediction - truth| over every prefix of length <= ``length``, each distinct prefix once (the model
    queried at its last position; a causal model's output there is its output at that position of any
    continuation)."""
    return max(
        float(np.abs(model.predict_last(seqs) - truth).max())
        for seqs, truth in _prefix_sets(k, depth, length)
    )


def _balanced(k, depth, seed, scale=2.0):
    return db.construct_solution(
        k, depth, db.random_balanced_attention(k, depth, np.random.default_rng(seed), scale)
    )


def _unbalanced(k, depth, seed, delta=0.5):
    rng = np.random.default_rng(seed)
    M = (
        db.random_balanced_attention(k, depth, rng, 1.0)
        + delta * np.round(rng.normal(size=(2 * k * depth + 1,) * 2) * 256) / 256
    )
    return db.construct_solution(k, depth, M, allow_unbalanced=True)


# ------------------------------------------------------------------------------------------------ language
def dp_counts(k, depth, n_max, factor=True):
    counts, out = [1] + [0] * depth, []
    for _ in range(n_max):
        new = [0] * (depth + 1)
        for d, c in enumerate(counts):
            if d < depth:
                new[d + 1] += c * (k if factor else 1)
            if d > 0:
                new[d - 1] += c
        counts = new
        out.append(sum(counts))
    return out


@pytest.mark.claim("dyck.def_language", tier="exact")
@pytest.mark.parametrize("k,depth", SIZES)
def test_prefix_counts_dp_equals_brute_force(k, depth, measure):
    lang = Dyck(k, depth)
    dp = [lang.count_prefixes(n) for n in range(1, 11)]
    brute = [lang.count_prefixes_brute_force(n) for n in range(1, 8)]
    assert dp == REFERENCE_COUNTS[(k, depth)]
    assert dp[:7] == brute
    assert [len(lang.all_prefixes(n)) for n in range(1, 11)] == dp
    measure(f"count_N12_k{k}_D{depth}", lang.count_prefixes(12))


@pytest.mark.claim("dyck.def_language", tier="exact", control=True)
def test_prefix_counts_control_missing_type_factor():
    lang = Dyck(2, 3)
    brute = [lang.count_prefixes_brute_force(n) for n in range(1, 8)]
    assert dp_counts(2, 3, 7, factor=False) != brute  # a DP that forgets the k choices per open is rejected
    assert dp_counts(2, 3, 7) == brute


def reduces_to_stack(lang: Dyck, tokens) -> bool:
    """Validity by rewriting: delete adjacent matched pairs; what remains must be opens, and depth must stay <= D."""
    depth = np.cumsum([1 if t % 2 == 0 else -1 for t in tokens]) if len(tokens) else np.array([0])
    stack = []
    for t in tokens:
        if t % 2 == 1 and stack and stack[-1] == t - 1:
            stack.pop()
        else:
            stack.append(t)
    return all(t % 2 == 0 for t in stack) and depth.max(initial=0) <= lang.depth and depth.min(initial=0) >= 0


@pytest.mark.claim("dyck.def_language", tier="property")
@given(shape=dyck_shapes(), data=st.data())
def test_is_prefix_equals_pair_deletion(shape, data):
    k, depth = shape
    lang = Dyck(k, depth)
    tokens = data.draw(st.lists(st.integers(0, 2 * k - 1), min_size=2, max_size=14))
    trivial(
        len(tokens) < 2 or (k == 1 and depth == 1)
    )  # one token, or Dyck_{1,1} = (), where both agree at once
    assert lang.is_prefix(tokens) == reduces_to_stack(lang, tokens)


@pytest.mark.claim("dyck.def_language", tier="property", control=True)
def test_is_prefix_control_ignores_depth_bound():
    lang = Dyck(1, 2)
    unbounded = Dyck(1, 5)
    bad = [
        s
        for s in itertools.product(range(2), repeat=6)
        if unbounded.is_prefix(s) != reduces_to_stack(lang, s)
    ]
    assert bad  # the rewriting verdict with the wrong depth bound disagrees on '(((' etc.


# ------------------------------------------------------------------------------------------------ distribution
def chain_probabilities(lang: Dyck, seqs: np.ndarray) -> list[Fraction]:
    """Exact product of the exact next-token probabilities along each sequence, over the prefix tree (each distinct
    prefix's law is computed once)."""
    memo: dict[tuple, Fraction] = {(): Fraction(1)}
    out = []
    for s in seqs.tolist():
        for i in range(1, len(s) + 1):
            key = tuple(s[:i])
            if key not in memo:
                memo[key] = memo[key[:-1]] * lang.next_token_distribution(key[:-1], exact=True)[key[-1]]
        out.append(memo[tuple(s)])
    return out


def is_generator_distribution(lang: Dyck, probs, length: int) -> bool:
    """``probs(seqs)`` (exact, one per prefix) sums to 1 over Dyck_{k,D,N} and equals the chain's product of
    next-token probabilities."""
    seqs = lang.all_prefixes(length)
    p = list(probs(seqs))
    return p == chain_probabilities(lang, seqs) and sum(p) == 1


def truncated_eq_3_20(lang: Dyck, length: int):
    """The printed (truncated) Eq 3.20: only the opening factors, normalised over the prefixes."""
    q = Fraction(lang.q)

    def weight(s):
        depth = np.cumsum([1 if t % 2 == 0 else -1 for t in s])
        out = Fraction(1)
        for t, d in zip(s, depth, strict=True):
            if t % 2 == 0:
                out *= Fraction(1, lang.k) if d == 1 else q / lang.k
        return out

    Z = sum(weight(s) for s in lang.all_prefixes(length))
    return lambda s: weight(s) / Z


@pytest.mark.claim("dyck.def_distribution", tier="exact")
@pytest.mark.parametrize(
    "k,depth,q", [(1, 2, Fraction(1, 2)), (2, 3, Fraction(1, 3)), (2, 4, Fraction(3, 4))]
)
def test_reconstructed_distribution_is_the_generator(k, depth, q):
    lang = Dyck(k, depth, q)
    for n in (1, 4, 7):
        assert is_generator_distribution(lang, lang.probabilities, n)
        seqs = lang.all_prefixes(n)[:40]  # the one-sequence form agrees with the batch form
        assert [lang.probability(s) for s in seqs] == lang.probabilities(seqs)


@pytest.mark.claim("dyck.def_distribution", tier="exact", control=True)
def test_distribution_control_truncated_formula():
    lang = Dyck(1, 2, Fraction(1, 2))
    printed = truncated_eq_3_20(lang, 2)
    assert printed(np.array([0, 1])) == Fraction(2, 3) and lang.probability([0, 1]) == Fraction(1, 2)
    assert not is_generator_distribution(lang, lambda seqs: [printed(s) for s in seqs], 2)


def sampler_matches(lang: Dyck, samples: np.ndarray) -> float:
    """Chi-square p-value of the empirical prefix frequencies against the exact probabilities (0 if a sample is
    not a prefix)."""
    from scipy.stats import chisquare

    n = samples.shape[1]
    seqs = lang.all_prefixes(n)
    truth = lang.next_token_distributions(seqs)
    probs = np.prod(truth[np.arange(len(seqs))[:, None], np.arange(n)[None], seqs], axis=1)
    powers = (2 * lang.k) ** np.arange(n)
    codes = seqs @ powers
    order = np.argsort(codes)
    pos = np.searchsorted(codes[order], samples @ powers)
    pos = np.clip(pos, 0, len(codes) - 1)
    if not np.array_equal(codes[order][pos], samples @ powers):
        return 0.0
    observed = np.bincount(order[pos], minlength=len(seqs))
    if len(seqs) == 1:
        return 1.0
    return float(chisquare(observed, probs * len(samples)).pvalue)


@pytest.mark.claim("dyck.def_distribution", tier="property", examples=5)
@given(
    shape=dyck_shapes(max_k=2, max_depth=3, nontrivial=True),
    q=st.sampled_from([0.3, 0.5, 0.8]),
    seed=st.integers(0, 2**16),
)
def test_sampler_matches_exact_distribution(shape, q, seed):
    lang = Dyck(*shape, q)
    trivial(lang.count_prefixes(6) == 1)  # Dyck_{1,1}: one prefix, the chi-square test is vacuous
    samples = lang.sample(np.random.default_rng(seed), 20000, 6)
    assert all(lang.is_prefix(s) for s in samples[:200])
    assert sampler_matches(lang, samples) > 1e-4


@pytest.mark.claim("dyck.def_distribution", tier="property", control=True)
def test_sampler_control_wrong_q(rng):
    samples = Dyck(2, 3, 0.7).sample(rng, 20000, 6)
    assert sampler_matches(Dyck(2, 3, 0.5), samples) < 1e-4


# ------------------------------------------------------------------------------------------------ Thm 1 sufficiency
@pytest.mark.claim("dyck.thm1_balance_sufficiency", tier="exact")
@pytest.mark.parametrize("k,depth", SIZES)
def test_balanced_constructions_exact_on_all_prefixes(k, depth, measure):
    for name, sol in [
        ("uniform", db.construct_solution(k, depth)),
        ("random", _balanced(k, depth, seed=k + depth)),
    ]:
        assert db.is_balanced(sol.weights, tol=0)
        err = exact_on_all_prefixes(sol, k, depth, 12)
        measure(f"max_error_len12_{name}_k{k}_D{depth}", err)
        assert err == 0.0


@pytest.mark.claim("dyck.thm1_balance_sufficiency", tier="exact", control=True)
@pytest.mark.parametrize("k,depth", SIZES[1:])
def test_unbalanced_construction_fails_on_some_prefix(k, depth):
    sol = _unbalanced(k, depth, seed=3)
    assert not db.is_balanced(sol.weights)
    assert exact_on_all_prefixes(sol, k, depth, 12) > 0


def long_prefix_error(sol, rng, n=24, length=600) -> float:
    lang = sol.language
    x = lang.sample(rng, n, length)
    return float(np.abs(sol.predict(x) - lang.next_token_distributions(x)).max())


@pytest.mark.claim("dyck.thm1_balance_sufficiency", tier="exact")
@pytest.mark.parametrize("k,depth", SIZES)
def test_balanced_construction_exact_on_long_prefixes(k, depth, rng, measure):
    err = long_prefix_error(_balanced(k, depth, seed=7), rng)
    measure(f"max_error_len600_k{k}_D{depth}", err)
    assert err == 0.0


@pytest.mark.claim("dyck.thm1_balance_sufficiency", tier="exact", control=True)
def test_long_prefixes_control_unbalanced(rng):
    assert long_prefix_error(_unbalanced(2, 4, seed=8, delta=0.05), rng) > 0


def insertion_invariant(sol, prefix, insertions) -> bool:
    """Exact model output unchanged (and correct) after inserting ``beta`` pairs at each (position, type, beta)."""
    lang = sol.language
    truth = lang.next_token_distribution(prefix, exact=True)
    if db.exact_model_distribution(sol, prefix) != truth:
        return False
    return all(db.exact_model_distribution(sol, prefix, spec) == truth for spec in insertions)


def _insertion_specs(lang: Dyck, prefix: np.ndarray, rng, betas):
    depth = lang.scan(prefix[None])[1][0]
    slots = [p for p in range(len(prefix) + 1) if depth[p] < lang.depth]
    return [(int(rng.choice(slots)), int(rng.integers(lang.k)), int(b)) for b in betas]


@pytest.mark.claim("dyck.thm1_balance_sufficiency", tier="exact")
def test_matched_pairs_cancel_exactly_for_balanced_attention(rng):
    sol = _balanced(2, 4, seed=11)
    lang = sol.language
    for prefix in lang.sample(rng, 12, 17):
        specs = _insertion_specs(lang, prefix, rng, [1, 10**3, 10**9, 10**15])
        assert insertion_invariant(sol, prefix, specs)


@pytest.mark.claim("dyck.thm1_balance_sufficiency", tier="exact", control=True)
def test_matched_pairs_control_unbalanced():
    sol = _unbalanced(2, 4, seed=12, delta=0.01)
    ce = db.pumping_counterexample(sol)
    spec = (ce.insert_at, ce.pair[0] // 2, ce.beta)
    assert not insertion_invariant(sol, ce.prefix_fail, [spec])


@pytest.mark.claim("dyck.thm1_balance_sufficiency", tier="exact", control=True)
def test_printed_decoder_fails(measure):
    sol = _balanced(2, 4, seed=2, scale=1.0)
    printed = replace(sol, subtract_residual=False)  # as printed: read <h, b> without removing e(query)
    seqs, truth = _prefixes(2, 4, 10)
    wrong = np.any(np.abs(printed.predict(seqs) - truth) > 0, axis=(1, 2))
    measure("printed_decoder_failure_rate_len10", float(wrong.mean()))
    assert wrong.any() and exact_on_all_prefixes(sol, 2, 4, 10) == 0.0


@pytest.mark.claim("dyck.thm1_balance_sufficiency", tier="property", examples=12)
@given(shape=dyck_shapes(min_k=2, min_depth=2), seed=st.integers(0, 2**16), scale=st.floats(0.1, 3.0))
def test_projected_attention_gives_exact_generator(shape, seed, scale):
    k, depth = shape
    trivial(k * (depth - 1) < 2)  # fewer than two closing queries: the balance condition is vacuous
    rng = np.random.default_rng(seed)
    M = db.project_to_balanced(scale * rng.normal(size=(2 * k * depth + 1,) * 2), k, depth)
    sol = db.construct_solution(k, depth, M)
    lang = sol.language
    x = lang.sample(rng, 6, 120)
    assert np.abs(sol.predict(x) - lang.next_token_distributions(x)).max() == 0.0


@pytest.mark.claim("dyck.thm1_balance_sufficiency", tier="property", control=True, examples=8)
@given(shape=dyck_shapes(min_k=2, min_depth=2), seed=st.integers(0, 2**16), delta=perturbations())
def test_perturbed_attention_has_counterexample(shape, seed, delta):
    k, depth = shape
    rng = np.random.default_rng(seed)
    M = db.project_to_balanced(rng.normal(size=(2 * k * depth + 1,) * 2), k, depth)
    sol = db.construct_solution(k, depth, M + delta * rng.normal(size=M.shape), allow_unbalanced=True)
    trivial(db.balance_violation(sol.weights) == 0.0)  # the perturbation left M balanced
    ce = db.find_pumping_counterexample(sol)
    assert ce is not None and verify_pumping(sol, ce)


def balance_violation_brute_force(w) -> float:
    """Eq (3.28) term by term: max |(e_open(i,l) - e_close(i,l-1))^T M (e_q1 - e_q2)| over pair levels and pairs of
    closing queries at depths 1..D-1 (an independent reading of the definition)."""
    worst = 0.0
    queries = db.closing_queries(w.k, w.depth)
    for i in range(w.k):
        for level in range(1, w.depth + 1):
            delta = w.E[:, db.open_index(i, level, w.depth)] - w.E[:, db.close_index(i, level - 1, w.depth)]
            for (j1, d1), (j2, d2) in itertools.product(queries, repeat=2):
                diff = w.E[:, db.close_index(j1, d1, w.depth)] - w.E[:, db.close_index(j2, d2, w.depth)]
                worst = max(worst, abs(float(delta @ w.M @ diff)))
    return worst


@pytest.mark.claim("dyck.thm1_balance_sufficiency", tier="exact")
def test_balance_predicate_and_projection_follow_eq_3_28():
    """The balance violation is the largest term of (3.28) (read term by term), and project_to_balanced is the
    orthogonal projection: it fixes balanced matrices and its residual is orthogonal to them."""
    rng = np.random.default_rng(13)
    for k, depth in [(2, 3), (2, 4), (3, 3)]:
        M = rng.normal(size=(2 * k * depth + 1,) * 2)
        w = db.construct_solution(k, depth, M, allow_unbalanced=True).weights
        assert abs(db.balance_violation(w) - balance_violation_brute_force(w)) <= 1e-12 * np.abs(M).sum()
        B = db.random_balanced_attention(k, depth, rng, 1.0)
        assert np.abs(db.project_to_balanced(B, k, depth) - B).max() <= 1e-12  # balanced matrices are fixed
        P = db.project_to_balanced(M, k, depth)
        assert abs(np.sum((M - P) * B)) <= 1e-9 * np.linalg.norm(M) * np.linalg.norm(B)  # orthogonal residual


@pytest.mark.claim("dyck.thm1_balance_sufficiency", tier="exact", control=True)
def test_balance_predicate_control():
    """The same verdicts reject a 'projection' that removes too much (M - P_Delta M: balanced, not orthogonal)."""
    rng = np.random.default_rng(13)
    B = db.random_balanced_attention(2, 4, rng, 1.0)
    opens = [db.open_index(i, l, 4) for i in range(2) for l in range(1, 5)]
    closes = [db.close_index(i, l - 1, 4) for i in range(2) for l in range(1, 5)]
    delta = np.eye(17)[:, opens] - np.eye(17)[:, closes]
    too_much = B - delta @ np.linalg.pinv(delta) @ B
    assert np.abs(too_much - B).max() > 1e-3


# ------------------------------------------------------------------------------------------------ Thm 1 necessity
def verify_pumping(sol, ce, float_check_limit: int = 3000) -> bool:
    """Exact: before ``beta`` both pumped prefixes are predicted correctly (so differently); at ``beta`` the model
    outputs one distribution for both, wrong on ``prefix_fail``. Float model on the strings agrees for small beta."""
    lang = sol.language
    typ = ce.pair[0] // 2

    def outputs(beta):
        return [
            db.exact_model_distribution(sol, p, (ce.insert_at, typ, beta))
            for p in (ce.prefix_fail, ce.prefix_other)
        ]

    def targets(beta):
        return [lang.next_token_distribution(p, exact=True) for p in ce.pumped(min(beta, 1))]

    before, at = outputs(ce.beta - 1), outputs(ce.beta)
    t_fail, t_other = targets(ce.beta)
    if t_fail == t_other or before != [t_fail, t_other] or at[0] != at[1] or at[0] == t_fail:
        return False
    if ce.beta <= float_check_limit:
        for beta, same in ((ce.beta - 1, False), (ce.beta, True)):
            p1, p2 = ce.pumped(beta)
            o1, o2 = sol.predict(p1)[-1], sol.predict(p2)[-1]
            if np.array_equal(o1, o2) != same:
                return False
    return True


@pytest.mark.claim("dyck.thm1_balance_necessity", tier="exact")
@pytest.mark.parametrize("delta", [0.25, 2.0**-7, 2.0**-20])
def test_pumping_collapses_at_predicted_beta(delta, measure):
    sol = _unbalanced(2, 4, seed=5, delta=delta)
    ce = db.pumping_counterexample(sol)
    measure(f"beta_delta_{delta:.3g}", ce.beta)
    assert ce.beta == ce.predicted_beta  # exact search == closed form floor(e^x / |s|) + 1
    assert verify_pumping(sol, ce)


@pytest.mark.claim("dyck.thm1_balance_necessity", tier="exact", control=True)
def test_pumping_control_balanced_model_never_collapses():
    unbalanced = _unbalanced(2, 4, seed=5, delta=0.25)
    ce = db.pumping_counterexample(unbalanced)
    balanced = db.construct_solution(2, 4, db.random_balanced_attention(2, 4, np.random.default_rng(5), 1.0))
    assert db.find_pumping_counterexample(balanced) is None
    assert not verify_pumping(balanced, ce)


@pytest.mark.claim("dyck.thm1_balance_necessity", tier="exact")
def test_necessity_fails_for_one_bracket_type(measure):
    """Erratum: for k=1 an unbalanced model is exact at every length (the necessity proof needs two types)."""
    rng = np.random.default_rng(1)
    sol = db.construct_solution(1, 3, np.round(rng.normal(size=(7, 7)) * 64) / 64, allow_unbalanced=True)
    measure("k1_balance_violation", db.balance_violation(sol.weights))
    assert db.balance_violation(sol.weights) > 1.0
    assert exact_on_all_prefixes(sol, 1, 3, 14) == 0.0
    assert long_prefix_error(sol, rng) == 0.0
    assert db.find_pumping_counterexample(sol) is None


@pytest.mark.claim("dyck.thm1_balance_necessity", tier="exact", control=True)
def test_necessity_k1_control_two_types_fail():
    sol = _unbalanced(2, 3, seed=1, delta=0.5)
    assert exact_on_all_prefixes(sol, 2, 3, 12) > 0


@pytest.mark.claim("dyck.thm1_balance_necessity", tier="property", examples=10)
@given(shape=dyck_shapes(min_k=2, min_depth=2), seed=st.integers(0, 2**16), delta=perturbations())
def test_any_unbalanced_construction_is_pumped(shape, seed, delta):
    k, depth = shape
    sol = _unbalanced(k, depth, seed, delta)
    assume(not db.is_balanced(sol.weights, tol=0))  # a zero perturbation is discarded, not passed
    trivial(k < 2 or depth < 2)  # the search returns at once (never drawn: min_k = min_depth = 2)
    ce = db.find_pumping_counterexample(sol)
    assert ce is not None and verify_pumping(sol, ce)


@pytest.mark.claim("dyck.thm1_balance_necessity", tier="property", control=True, examples=6)
@given(shape=dyck_shapes(min_k=2, min_depth=2), seed=st.integers(0, 2**16))
def test_balanced_constructions_have_no_counterexample(shape, seed):
    # k = 1 or D = 1 returns None before computing anything, so the strategy draws k, D >= 2 only
    trivial(shape[0] < 2 or shape[1] < 2)
    sol = _balanced(*shape, seed=seed, scale=1.5)
    assert db.find_pumping_counterexample(sol) is None


# ------------------------------------------------------------------------------------------------ Cor 1
@pytest.mark.claim("dyck.cor1_uniform_attention", tier="exact")
@pytest.mark.parametrize("k,depth", SIZES)
def test_uniform_attention_generates_dyck(k, depth, rng, measure):
    sol = db.uniform_attention_solution(k, depth)
    length = 12
    err = max(exact_on_all_prefixes(sol, k, depth, length), long_prefix_error(sol, rng, n=8))
    measure(f"max_error_k{k}_D{depth}", err)
    assert err == 0.0


def features_identify_type_and_depth(features: np.ndarray, lang: Dyck, seqs: np.ndarray, offset: int) -> bool:
    """Equal layer-1 features must come with equal (last token, depth): otherwise layer 2 cannot be exact."""
    depth = lang.scan(seqs)[1][:, 1:]
    keys = np.stack([seqs, depth], axis=-1).reshape(-1, 2)
    feats = np.round(features[:, offset:].reshape(-1, features.shape[-1]), 9)
    seen: dict[bytes, tuple] = {}
    for f, key in zip(feats, keys, strict=True):
        if seen.setdefault(f.tobytes(), tuple(key)) != tuple(key):
            return False
    return True


@pytest.mark.claim("dyck.cor1_uniform_attention", tier="exact")
def test_layer1_features_identify_type_and_depth():
    sol = db.uniform_attention_solution(1, 2)
    seqs = sol.language.all_prefixes(8)
    assert features_identify_type_and_depth(sol.layer1_features(seqs), sol.language, seqs, 1)


@pytest.mark.claim("dyck.cor1_uniform_attention", tier="exact", control=True)
def test_footnote53_without_start_token():
    sol = db.uniform_attention_solution(1, 2)
    seqs = sol.language.all_prefixes(8)
    assert not features_identify_type_and_depth(
        sol.layer1_features(seqs, start_token=False), sol.language, seqs, 0
    )
    one, two = (sol.layer1_features(np.array([p]), start_token=False)[0, -1] for p in ([0], [0, 0]))
    assert np.allclose(one, two)  # '(' and '((' collide, yet '((' must close


# ------------------------------------------------------------------------------------------------ Thm 2 / Cor 2
@pytest.mark.claim("dyck.thm2_approx_balance", tier="exact")
def test_lemma24_corrected_radius_and_prefix_probability_bound():
    a, b = np.array([0.01, 0.0]), np.array([-0.01, 0.0])
    for eps in (0.5, 0.1, 0.01):
        R = bd.lemma24_radius(eps)
        r = np.array([0.0, R * 0.01])
        assert bd.lemma24_gap(a, b, r) <= eps
    for k, depth, q in [(2, 4, 0.5), (2, 3, 0.8), (1, 2, 0.3)]:
        lang = Dyck(k, depth, Fraction(q))
        for n in (4, 8):
            smallest = min(lang.probabilities(lang.all_prefixes(n)))
            assert smallest >= (Fraction(q) * (1 - Fraction(q)) / k**2) ** n


def stack_separation_from_prefixes(sol) -> np.ndarray:
    """P of (3.35) computed from the model itself: the pre-LN vector at the end of the actual prefix
    t_S t open_{j,c+1} close_{j,c+1} (softmax weights unnormalised, as in Q), minimised over stacks t, then over stacks
    whose top differs from the minimiser's."""
    w, lang = sol.weights, sol.language
    G = w.scores()
    V = w.W_V @ w.E
    V = V - V.mean(axis=0, keepdims=True)
    out = []
    for j, c in db.closing_queries(w.k, w.depth):
        norms = {}
        for stack in itertools.product(range(w.k), repeat=c):
            prefix = np.array([2 * t for t in stack] + [2 * j, 2 * j + 1])
            idx = db.token_indices(lang, prefix[None])[0]
            rho = idx[-1]
            norms[stack] = float(np.linalg.norm(sum(np.exp(G[i, rho]) * V[:, i] for i in idx)))
        best = min(norms, key=norms.get)
        out.append(min(v for st_, v in norms.items() if st_[-1] != best[-1]))
    return np.array(out)


@pytest.mark.claim("dyck.thm2_approx_balance", tier="exact")
def test_stack_separation_and_radius_follow_the_definitions():
    """P (3.35) equals its definition evaluated on the model's own prefixes, and Lemma 24's corrected radius is the
    erratum's 4/eps + 1 (41 at eps = 0.1; the printed 4 r0/eps + 1 is 1.4 at r0 = 0.01)."""
    for seed in (3, 4):
        sol = db.construct_solution(
            2, 4, db.random_balanced_attention(2, 4, np.random.default_rng(seed), 1.0)
        )
        assert np.allclose(db.stack_separation(sol.weights), stack_separation_from_prefixes(sol), rtol=1e-12)
    assert bd.lemma24_radius(0.1) == pytest.approx(41.0, rel=1e-15)
    assert bd.lemma24_radius_printed(0.1, 0.01) == pytest.approx(1.4, rel=1e-15)


@pytest.mark.claim("dyck.thm2_approx_balance", tier="exact", control=True)
def test_lemma24_printed_radius_fails():
    from theorylab.attention.dyck.counterexamples import (
        lemma24_printed,  # the registered generator, called directly
    )

    ce = {key: np.asarray(value) for key, value in lemma24_printed().items()}
    r0 = max(np.linalg.norm(ce["a"]), np.linalg.norm(ce["b"]))
    assert np.isclose(ce["R_printed"], bd.lemma24_radius_printed(float(ce["eps"]), r0))  # 1.4 in the erratum
    assert np.isclose(np.linalg.norm(ce["r"]), ce["R_printed"] * r0)  # r sits on the printed radius
    gap = bd.lemma24_gap(ce["a"], ce["b"], ce["r"])  # recomputed, not the stored value
    assert gap > ce["eps"] and round(gap, 2) == 1.16 == round(float(ce["gap"]), 2)
    assert (
        bd.lemma24_gap(ce["a"], ce["b"], ce["r"] * bd.lemma24_radius(float(ce["eps"])) / ce["R_printed"])
        <= ce["eps"]
    )


@pytest.mark.claim("dyck.thm2_approx_balance", tier="exact")
def test_raw_loss_premise_is_unsatisfiable():
    """'Loss' in Thm 2 must be the excess loss: the Bayes loss itself exceeds (q(1-q)/k^2)^N eps for eps = 1."""
    lang = Dyck(2, 4)
    best = lang.population_loss(lang.next_token_distributions, 8)
    assert best.excess == 0.0 and best.optimal > bd.min_prefix_probability_bound(2, 0.5, 8)


@pytest.mark.claim("dyck.thm2_approx_balance", tier="property", examples=15)
@given(
    seed=st.integers(0, 2**16),
    log_delta=st.floats(np.log(1e-7), np.log(2e-4)),
    log_n=st.floats(np.log(33), np.log(2000)),
    gamma=st.floats(
        2.0, 20.0
    ),  # gamma < 2 asks for LN separations near their maximum 2: premise mostly false
)
def test_approx_balance_bound_on_random_instances(seed, log_delta, log_n, gamma):
    # The implication is vacuous when the premise fails; with delta uniform on [1e-6, 1] it held on 2 of 15
    # examples, with log-uniform delta <= 1e-2 on 11 of 15; in 40 random draws it failed only for delta >= 4.5e-4,
    # so delta <= 2e-4 (near-exact models, as in the theorem) keeps the trivial share under 20%.
    delta = float(np.exp(log_delta))
    rng = np.random.default_rng(seed)
    M = db.random_balanced_attention(2, 4, rng, 1.0) + delta * rng.normal(size=(17, 17))
    sol = db.construct_solution(2, 4, M, allow_unbalanced=True)
    report = bd.approx_balance_report(sol.weights, int(np.exp(log_n)), gamma=gamma)
    trivial(not report.premise)  # premise false: the implication holds vacuously
    assert report.holds


@pytest.mark.claim("dyck.thm2_approx_balance", tier="property", control=True)
def test_approx_balance_control_wrong_rate(measure):
    """The same verdict with a false 1/N^3 rate finds an instance (premise true, bound violated)."""
    rng = np.random.default_rng(0)
    base = db.random_balanced_attention(2, 4, rng, 1.0)
    noise = rng.normal(size=(17, 17))
    rejected, worst = False, 0.0
    for delta in (1e-4, 1e-5, 1e-6):
        w = db.construct_solution(2, 4, base + delta * noise, allow_unbalanced=True).weights
        for n in (400, 2000):
            report = bd.approx_balance_report(w, n, gamma=5.0)
            assert report.holds
            if report.premise:
                worst = max(worst, report.worst_ratio)
            rejected |= not bd.approx_balance_report(w, n, gamma=5.0, rate=3).holds
    measure("worst_ratio_when_premise_holds", worst)
    assert rejected


@pytest.mark.claim("dyck.thm2_approx_balance", tier="property")
@given(eps=st.floats(0.01, 1.0), seed=st.integers(0, 2**16), r0=st.floats(1e-3, 1e3))
def test_lemma24_random(eps, seed, r0):
    rng = np.random.default_rng(seed)
    a, b = rng.normal(size=(2, 5))
    a, b = a / np.linalg.norm(a) * r0, b / np.linalg.norm(b) * r0 * rng.random()
    r = rng.normal(size=5)
    r = r / np.linalg.norm(r) * bd.lemma24_radius(eps) * r0
    trivial(eps >= 2.0)  # two unit vectors are never more than 2 apart (never drawn: eps <= 1)
    assert bd.lemma24_gap(a, b, r) <= eps


# ------------------------------------------------------------------------------------------------ Thm 3 (finite)
def one_matrix_misleads(sol1, sol2, component: str) -> bool:
    """The two models agree on ``component`` but differ in attention patterns or in function."""
    w1, w2 = sol1.weights, sol2.weights
    if not (
        np.array_equal(w1.E, w2.E) and np.allclose(getattr(w1, component), getattr(w2, component), atol=1e-12)
    ):
        return False
    seqs, truth = _prefixes(w1.k, w1.depth, 8)
    idx = db.token_indices(sol1.language, seqs[:64])
    patterns_differ = np.abs(db.attention_pattern(w1, idx) - db.attention_pattern(w2, idx)).max() > 1e-3
    functions_differ = (
        db.find_pumping_counterexample(sol1) is None and db.find_pumping_counterexample(sol2) is not None
    )
    return bool(patterns_differ or functions_differ)


@pytest.mark.claim("dyck.thm3_lottery", tier="exact")
def test_same_value_matrix_different_attention(rng):
    s1, s2 = bd.same_component_pair(2, 3, "W_V", rng)
    assert one_matrix_misleads(s1, s2, "W_V")
    assert exact_on_all_prefixes(s1, 2, 3, 10) == 0.0 and exact_on_all_prefixes(s2, 2, 3, 10) == 0.0


@pytest.mark.claim("dyck.thm3_lottery", tier="exact")
def test_same_attention_different_function(rng):
    s1, s2 = bd.same_component_pair(2, 3, "M", rng)
    assert one_matrix_misleads(s1, s2, "M")


@pytest.mark.claim("dyck.thm3_lottery", tier="exact", control=True)
def test_identical_models_are_not_misleading(rng):
    s1, _ = bd.same_component_pair(2, 3, "W_V", rng)
    assert not one_matrix_misleads(s1, s1, "W_V")


def layer_norm_lipschitz_ratio(C: float, x: np.ndarray, y: np.ndarray) -> float:
    """||LN_C(x) - LN_C(y)|| / ||x - y||, to compare with Lemma 33's constant."""
    return float(np.linalg.norm(bd.layer_norm_c(x, C) - bd.layer_norm_c(y, C)) / np.linalg.norm(x - y))


@pytest.mark.claim("dyck.thm3_lottery", tier="property")
@given(seed=st.integers(0, 2**16), C=st.floats(0.01, 10.0), spread=st.floats(1e-3, 1e3))
def test_layer_norm_is_one_over_c_lipschitz(seed, C, spread):
    """Lemma 33 prints 2/C; LN_C is C^{-1} times the projection onto a ball after centering, so 1/C holds."""
    rng = np.random.default_rng(seed)
    x, y = rng.normal(size=(2, 6)) * spread
    trivial(bool(np.allclose(x - x.mean(), y - y.mean())))  # equal after centering: ratio 0
    assert layer_norm_lipschitz_ratio(C, x, y) <= (1 + 1e-9) / C


@pytest.mark.claim("dyck.thm3_lottery", tier="property", control=True)
def test_layer_norm_constant_is_tight():
    C = 2.0
    x, y = np.array([0.3, -0.3, 0.0]), np.array([0.1, 0.2, -0.3])  # centred, inside the radius-C ball
    assert layer_norm_lipschitz_ratio(C, x, y) > 0.99 / C  # so no constant below 1/C (e.g. 1/(2C)) works


@pytest.mark.claim("dyck.thm3_lottery", tier="property")
@given(seed=st.integers(0, 2**16), eps=st.floats(1e-4, 2.0), n=st.integers(2, 12))
def test_softmax_perturbation_bound(seed, eps, n):
    """Lemma 31: ||x - y||_inf <= eps implies ||softmax(x) - softmax(y)||_1 <= e^{2 eps} - 1."""
    from scipy.special import softmax

    rng = np.random.default_rng(seed)
    x = rng.normal(size=n) * 3
    y = x + rng.uniform(-eps, eps, size=n)
    trivial(bool(np.ptp(y - x) == 0))  # a constant shift leaves the softmax unchanged
    assert np.abs(softmax(x) - softmax(y)).sum() <= bd.softmax_l1_bound(eps) * (1 + 1e-9) + 1e-15


# ------------------------------------------------------------------------------------------------ Lemma 41
def indexes_nonzero_entry(f, n: int, M: float) -> bool:
    for i in range(n):
        for value in (M, 1.5 * M, 10 * M):
            x = np.zeros(n)
            x[i] = value
            if abs(f(x, M) - (i + 1)) > 1e-9 * n:  # sums of n terms of size <= n: float error << 1e-9 n
                return False
    return True


@pytest.mark.claim("dyck.lemmas_mlp", tier="exact")
def test_lemma41_corrected():
    assert all(
        indexes_nonzero_entry(bd.lemma41_corrected, n, M) for n in range(1, 9) for M in (0.5, 1.0, 3.0)
    )


@pytest.mark.claim("dyck.lemmas_mlp", tier="exact", control=True)
def test_lemma41_printed_is_wrong():
    assert not indexes_nonzero_entry(bd.lemma41_printed, 5, 1.0)
    assert bd.lemma41_printed(np.array([0, 0, 2.0, 0, 0]), 1.0) == 18.0  # i + n(n+1)/2


@pytest.mark.claim("dyck.lemmas_mlp", tier="property")
@given(n=st.integers(2, 30), i=st.data(), M=st.floats(1e-3, 1e3), scale=st.floats(1.0, 100.0))
def test_lemma41_random(n, i, M, scale):
    j = i.draw(st.integers(0, n - 1))
    trivial(n == 1)  # one entry: any network returning 1 passes (never drawn: n >= 2)
    x = np.zeros(n)
    x[j] = M * scale
    assert abs(bd.lemma41_corrected(x, M) - (j + 1)) <= 1e-9 * n * n


# ------------------------------------------------------------------------------------------------ ReLU-MLP decoder
# The MLP's indicators are 1 +- 2^-52 where a pre-activation rounds (a plateau at 2 - 1e-16 vs 1 - 1e-16), so its
# outputs are the table entries up to a few ulp: 1e-12 is 4,500 ulp of 1, far below the 0.25 that separates any
# two entries of the distribution table (q = 1/2, k <= 2) and below every error of the controls (>= 0.25).
MLP_TOL = 1e-12


def mlp_exact_on_all_prefixes(model, k: int, depth: int, length: int) -> bool:
    return exact_on_all_prefixes(model, k, depth, length) <= MLP_TOL


@pytest.mark.claim("dyck.thm1_balance_sufficiency", tier="exact")
@pytest.mark.parametrize("k,depth", SIZES)
def test_relu_mlp_decoder_is_exact(k, depth, rng, measure):
    from theorylab.attention.dyck import mlp

    for name, sol in [
        ("uniform", db.construct_solution(k, depth)),
        ("random", _balanced(k, depth, seed=k + depth)),
    ]:
        model = mlp.mlp_solution(sol)
        assert model.mlp.depth == 5  # 4 hidden ReLU layers and a linear output
        assert mlp_exact_on_all_prefixes(model, k, depth, 10)  # the lookup decoder is checked to length 12
        err = long_prefix_error(model, rng, n=8)
        measure(f"mlp_max_error_len600_{name}_k{k}_D{depth}", err)
        assert err <= MLP_TOL


@pytest.mark.claim("dyck.thm1_balance_sufficiency", tier="exact", control=True)
def test_relu_mlp_decoder_controls():
    from theorylab.attention.dyck import mlp

    sol = _balanced(2, 4, seed=2, scale=1.0)
    printed = mlp.mlp_solution(sol, subtract_residual=False)  # the proof's decoder, residual not subtracted
    assert not mlp_exact_on_all_prefixes(printed, 2, 4, 10)
    unbalanced = mlp.mlp_solution(_unbalanced(2, 4, seed=3))  # the exact MLP on an unbalanced attention
    assert not mlp_exact_on_all_prefixes(unbalanced, 2, 4, 10)


# ------------------------------------------------------------------------------------------------ Cor 2
@pytest.mark.claim("dyck.cor2_weight_decay", tier="exact")
@pytest.mark.parametrize("k,depth", [(2, 3), (2, 4)])
def test_cor2_zero_loss_witness(k, depth, measure):
    """The proof's theta*: an explicit finite-norm second layer (attention, values, ReLU g) with zero excess loss at
    every length (checked on every prefix of length <= 12); it fixes lambda_N and the Lipschitz bound of every
    minimiser."""
    from theorylab.attention.dyck import mlp

    star = mlp.mlp_solution(_balanced(k, depth, seed=k + depth))
    assert mlp_exact_on_all_prefixes(star, k, depth, 10)
    lang = star.language
    excess = lang.population_loss(star.predict, 8).excess
    assert excess <= MLP_TOL**2 * 2 * k  # squared per-position error <= 2k tol^2
    norm2 = star.squared_norm()
    lam = mlp.weight_decay_threshold_for(star, 8, eps=0.1)
    gamma_bound = mlp.lipschitz_from_norm(star.mlp.squared_norm(), star.mlp.depth)
    assert star.mlp.lipschitz_bound() <= gamma_bound  # AM-GM: prod ||W||_2 <= (sum ||W||_F^2 / L)^{L/2}
    # lambda_N against quantities computed here. ||theta*||^2 from the arrays (W_K, W_Q as the least-norm
    # factorisation of M: 2 ||M||_*); the smallest prefix probability p_min by enumerating Dyck_{k,D,8}. A minimiser
    # at lambda has excess <= lambda ||theta*||^2 / 2 >= p(w) err(w), so every prefix is eps-good iff
    # lambda <= 2 eps p_min / ||theta*||^2 =: lambda_sharp; Cor 2's lambda_N replaces p_min by its lower bound
    # (q(1-q)/k^2)^N, and the slack p_min / (q(1-q)/k^2)^N is exactly 2^20 (D = 3) or 2^19 (D = 4): a lambda_N
    # off by a constant, a power of k or q, or one in the exponent changes it.
    w = star.weights
    here = 2 * np.linalg.svd(w.M, compute_uv=False).sum() + np.sum(w.W_V**2)
    here += sum(np.sum(W**2) + np.sum(b**2) for W, b in star.mlp.layers)
    assert norm2 == pytest.approx(here, rel=1e-12)
    p_min = min(lang.probabilities(lang.all_prefixes(8)))
    slack = p_min / (Fraction(1, 4) / k**2) ** 8
    assert slack == {3: 2**20, 4: 2**19}[depth]
    lam_sharp = 2 * 0.1 * float(p_min) / here
    assert lam_sharp / lam == pytest.approx(float(slack), rel=1e-12)
    assert bd.weight_decay_threshold(k, 0.5, 8, 0.1, np.sqrt(here)) == pytest.approx(lam, rel=1e-12)
    measure(f"theta_star_squared_norm_k{k}_D{depth}", norm2)
    measure(f"lambda_N8_eps0.1_k{k}_D{depth}", lam)
    measure(f"g_lipschitz_bound_k{k}_D{depth}", star.mlp.lipschitz_bound())


@pytest.mark.claim("dyck.cor2_weight_decay", tier="exact", control=True)
def test_cor2_witness_control():
    """The same witness verdict rejects a second layer with the printed decoder or with unbalanced attention."""
    from theorylab.attention.dyck import mlp

    printed = mlp.mlp_solution(_balanced(2, 4, seed=6), subtract_residual=False)
    assert not mlp_exact_on_all_prefixes(printed, 2, 4, 10)
    assert printed.language.population_loss(printed.predict, 8).excess > 1e-3
    unbalanced = mlp.mlp_solution(_unbalanced(2, 3, seed=1))
    assert not mlp_exact_on_all_prefixes(unbalanced, 2, 3, 10)


@pytest.mark.claim("dyck.cor2_weight_decay", tier="property")
@given(
    seed=st.integers(0, 2**16), layers=st.integers(2, 6), width=st.integers(2, 12), scale=st.floats(0.1, 3.0)
)
def test_bounded_weights_bound_lipschitz_constant(seed, layers, width, scale):
    """Cor 2's step: ||theta||^2 <= B implies g is (B/L)^{L/2}-Lipschitz; checked on random MLPs and random pairs."""
    from theorylab.attention.dyck import mlp

    rng = np.random.default_rng(seed)
    net = mlp.ReluMLP(
        tuple(
            (rng.normal(size=(width, width)) * scale, rng.normal(size=width) * scale) for _ in range(layers)
        )
    )
    x, y = rng.normal(size=(2, 64, width))
    ratio = np.linalg.norm(net(x) - net(y), axis=1) / np.linalg.norm(x - y, axis=1)
    trivial(bool(ratio.max() == 0))  # a dead network (every ReLU off) is trivially Lipschitz
    bound = mlp.lipschitz_from_norm(net.squared_norm(), layers)
    assert ratio.max() <= net.lipschitz_bound() * (1 + 1e-12) <= bound * (1 + 1e-12)


@pytest.mark.claim("dyck.cor2_weight_decay", tier="property", control=True)
def test_lipschitz_bound_control_wrong_exponent():
    """The bound with exponent L/4 (too small) is violated by some random network."""
    from theorylab.attention.dyck import mlp

    rng = np.random.default_rng(0)
    net = mlp.ReluMLP(tuple((rng.normal(size=(8, 8)) * 2, np.zeros(8)) for _ in range(4)))
    B, L = net.squared_norm(), net.depth
    assert net.lipschitz_bound() <= mlp.lipschitz_from_norm(B, L)
    assert net.lipschitz_bound() > (B / L) ** (L / 4)


# ------------------------------------------------------------------------------------------------ post-LN block
POST_LN_PAIR = (
    np.array([0, 0, 2, 3]),
    np.array([0, 2, 2, 3]),
)  # tops '(' vs '[' at depth 2, query ']' at depth 2
POST_LN_PUMP = (1, 0, None)  # '()' pairs inserted after the first token (level 2)


def loses_stack(sol, block: str) -> bool:
    """The top of the stack is forgotten at rate 1/length: beta * ||h_1 - h_2|| converges to the first-order limit
    (within 1e-6 relative at beta = 1e8 and 1e12; the second-order term is O(1/beta)) and the separation is below
    1e-9 at beta = 1e12 (any gamma-Lipschitz decoder then gives both prefixes outputs within gamma 1e-9)."""
    from theorylab.attention.dyck import architecture as ar

    pos, typ, _ = POST_LN_PUMP
    limit = ar.separation_limit(sol, POST_LN_PAIR, (pos, typ, 1))
    seps = {b: ar.block_separation(sol, POST_LN_PAIR, (pos, typ, b), block) for b in (10**8, 10**12)}
    rates = [b * sep for b, sep in seps.items()]
    return bool(all(abs(r - limit) <= 1e-6 * limit for r in rates) and seps[10**12] < 1e-9)


@pytest.mark.claim("dyck.sec2_2_5_8_post_ln", tier="exact")
@pytest.mark.parametrize("attention", ["uniform", "random"])
def test_post_ln_block_loses_the_stack(attention, measure):
    from theorylab.attention.dyck import architecture as ar
    from theorylab.attention.dyck import mlp

    sol = db.construct_solution(2, 4) if attention == "uniform" else _balanced(2, 4, seed=3, scale=1.0)
    assert db.is_balanced(sol.weights, tol=0)
    assert ar.block_separation(sol, POST_LN_PAIR, (1, 0, 0), "post_ln") > 0.05  # separated at beta = 0
    assert loses_stack(sol, "post_ln")
    limit = ar.separation_limit(sol, POST_LN_PAIR, (1, 0, 1))
    gamma = mlp.mlp_decoder(sol).lipschitz_bound()
    # targets differ by sqrt(2)(1-q); a gamma-Lipschitz g errs on one of the two once gamma * sep < sqrt(2)(1-q)/2
    measure(f"{attention}_beta_times_separation_limit", limit)
    measure(
        f"{attention}_pairs_beyond_which_a_g_as_lipschitz_as_the_mlp_decoder_errs",
        gamma * limit / (np.sqrt(2) * 0.25),
    )


@pytest.mark.claim("dyck.sec2_2_5_8_post_ln", tier="exact", control=True)
@pytest.mark.parametrize("attention", ["uniform", "random"])
def test_thesis_block_keeps_the_stack(attention):
    """The same verdict rejects the theorems' block (3.23): its separation does not depend on beta."""
    from theorylab.attention.dyck import architecture as ar

    sol = db.construct_solution(2, 4) if attention == "uniform" else _balanced(2, 4, seed=3, scale=1.0)
    assert not loses_stack(sol, "thesis")
    base = ar.block_separation(sol, POST_LN_PAIR, (1, 0, 0), "thesis")
    # float64 weights cancel a pair up to ~1e-16 relative, so 1e8 pairs move it by <~1e-8 (measured 1e-10)
    assert abs(ar.block_separation(sol, POST_LN_PAIR, (1, 0, 10**8), "thesis") - base) <= 1e-6 * base


# ------------------------------------------------------------------------------------------------ Prop 6
def random_theory_transformer(rng, layers: int, m: int = 6, ma: int = 4, width: int = 8, vocab: int = 5):
    from theorylab.attention.dyck.architecture import TheoryLayer

    def layer():
        return TheoryLayer(
            *(rng.normal(size=s) for s in [(ma, m), (ma, m), (m, m), (width, m), (width,), (m, width), (m,)])
        )

    return [layer() for _ in range(layers)], rng.normal(size=(m, vocab))


def output_ignores_attention(model_a, model_b, head, tokens) -> bool:
    """Two models with different attention patterns compute the same function on ``tokens`` (exactly)."""
    from theorylab.attention.dyck.architecture import theory_transformer

    (la, E), (lb, _) = model_a, model_b
    oa, pa = theory_transformer(la, E, *head, tokens, return_attention=True)
    ob, pb = theory_transformer(lb, E, *head, tokens, return_attention=True)
    return bool(np.abs(pa - pb).max() > 1e-3 and np.array_equal(oa, ob))


def _with_attention_of(model, other):
    layers, E = model
    return [replace(l, W_K=o.W_K, W_Q=o.W_Q) for l, o in zip(layers, other[0], strict=True)], E


@pytest.mark.claim("dyck.prop6_head_zero", tier="exact")
@pytest.mark.parametrize("layers", [1, 2, 3])
def test_zero_head_output_independent_of_attention(layers):
    rng = np.random.default_rng(layers)
    a = random_theory_transformer(rng, layers)
    b = _with_attention_of(a, random_theory_transformer(rng, layers))  # same values and MLPs, other attention
    tokens = Dyck(2, 2).all_prefixes(6)
    head = (np.zeros((4, 6)), np.zeros(4))
    assert output_ignores_attention(a, b, head, tokens)
    from theorylab.attention.dyck.architecture import theory_transformer

    assert np.all(theory_transformer(a[0], a[1], *head, tokens) == 0.0)


@pytest.mark.claim("dyck.prop6_head_zero", tier="exact", control=True)
def test_nonzero_head_sees_attention():
    rng = np.random.default_rng(1)
    a = random_theory_transformer(rng, 2)
    b = _with_attention_of(a, random_theory_transformer(rng, 2))
    head = (rng.normal(size=(4, 6)), rng.normal(size=4))
    assert not output_ignores_attention(a, b, head, Dyck(2, 2).all_prefixes(6))


@pytest.mark.claim("dyck.prop6_head_zero", tier="property", control=True)
def test_zero_output_verdict_rejects_a_nonzero_head():
    """The property's verdict (every output exactly 0) rejects a model with a random head."""
    from theorylab.attention.dyck.architecture import theory_transformer

    rng = np.random.default_rng(2)
    layers, E = random_theory_transformer(rng, 2)
    out = theory_transformer(layers, E, rng.normal(size=(4, 6)), np.zeros(4), Dyck(2, 3).sample(rng, 16, 12))
    assert not np.all(out == 0.0)


@pytest.mark.claim("dyck.prop6_head_zero", tier="property")
@given(seed=st.integers(0, 2**16), layers=st.integers(1, 4), block=st.sampled_from(["thesis", "post_ln"]))
def test_zero_head_any_weights(seed, layers, block):
    from theorylab.attention.dyck.architecture import theory_transformer

    rng = np.random.default_rng(seed)
    a = random_theory_transformer(rng, layers)
    b = _with_attention_of(a, random_theory_transformer(rng, layers))
    tokens = Dyck(2, 3).sample(rng, 16, 12)
    _, pa = theory_transformer(*a, np.ones((4, 6)), np.zeros(4), tokens, block=block, return_attention=True)
    _, pb = theory_transformer(*b, np.ones((4, 6)), np.zeros(4), tokens, block=block, return_attention=True)
    trivial(bool(np.abs(pa - pb).max() < 1e-3))  # the two attention draws coincide
    zero = (np.zeros((4, 6)), np.zeros(4))
    assert np.all(theory_transformer(*a, *zero, tokens, block=block) == 0.0)
    assert np.all(theory_transformer(*b, *zero, tokens, block=block) == 0.0)


# ------------------------------------------------------------------------------------------------ definitions read
# against independent evaluations: each library object recomputed from its defining formula on a small instance
@pytest.mark.claim("dyck.def_language", tier="exact")
def test_all_prefixes_is_the_lexicographic_enumeration():
    """all_prefixes(N) lists Dyck_{k,D,N} in lexicographic order: the strings of itertools.product (lexicographic)
    that the stack automaton accepts, in that order."""
    for k, depth, n in [(2, 3, 6), (1, 2, 7)]:
        lang = Dyck(k, depth)
        every = np.array(list(itertools.product(range(2 * k), repeat=n)))
        assert np.array_equal(lang.all_prefixes(n), every[lang.scan(every)[0][:, -1]])


@pytest.mark.claim("dyck.def_distribution", tier="exact")
def test_completion_distribution_of_li_remark_3_2_1():
    """Li's Dyck_D (Def 3.2.1, Remark 3.2.1, ``003_69b23422e33c905a.txt``): Eq (3.4) with n_c counting closes at
    d < D - i equals the process probability on every word, the words' probabilities sum to 1, the oracle with
    noise 0 is the process (uniform off the completable prefixes), and samples follow the law."""
    from theorylab.languages.dyck import DyckCompletion, DyckCompletionLM

    c = DyckCompletion(6, Fraction(1, 5), Fraction(1, 3))
    words = c.words()
    assert len(words) == 5 * 2**3  # Cat(3) 2^3
    probs = [c.probability(w) for w in words]
    assert [c.closed_form(w) for w in words] == probs and sum(probs) == 1
    assert not c.is_word(words[0][:4]) and c.probability((0, 3)) == 0  # too short; a mismatched close
    oracle = c.oracle(0)
    for prefix in [(), (0,), (2, 2), (0, 2, 3), (0, 0, 0), (0, 0, 1, 1)]:
        assert oracle.probs(prefix) == c.next_token_distribution(prefix)
    assert oracle.probs((0, 0, 0, 0)) == (Fraction(1, 4),) * 4  # cannot be completed: uniform
    small = DyckCompletion(4, 0.3, 0.6)
    table = {w: float(small.probability(w)) for w in small.words()}
    x = small.sample(np.random.default_rng(0), 4000)
    assert x.shape == (4000, 4) and all(small.is_word(tuple(r)) for r in x.tolist())
    observed = np.array([np.sum(np.all(x == np.array(w), axis=1)) for w in table])
    p = np.array(list(table.values()))
    assert np.all(np.abs(observed - 4000 * p) <= 5 * np.sqrt(4000 * p * (1 - p)))  # 5 binomial sd per word
    assert small.sample(np.random.default_rng(1), 1, length=3).shape == (1, 3)  # n = 1 is a batch
    lm = DyckCompletionLM(small)
    batch = lm.sample_batch(np.random.default_rng(2), 5, 4)
    assert batch.inputs.shape == (5, 4) and np.all(batch.inputs[:, 0] == lm.BOS)
    assert np.array_equal(batch.inputs[:, 1:], batch.targets[:, :-1])
    assert all(small.is_word(tuple(r)) for r in batch.targets.tolist())


@pytest.mark.claim("dyck.def_language", tier="exact")
def test_domain_of_the_dyck_objects():
    """Boundary instances of each definition are accepted; those just outside raise, with their message."""
    from theorylab.attention.dyck.exact import to_fraction
    from theorylab.languages.dyck import DyckCompletion

    rng = np.random.default_rng(0)
    lang = Dyck(2, 2)
    assert lang.sample(rng, 0, 3).shape == (0, 3)
    with pytest.raises(ValueError, match=r"^n and length must be >= 0"):
        lang.sample(rng, -1, 3)
    with pytest.raises(ValueError, match=r"^n and length must be >= 0"):
        lang.sample(rng, 2, -1)
    with pytest.raises(
        ValueError, match=r"^sequence 1 is not a prefix of Dyck_\{2,2\}: token 3 at position 1"
    ):
        lang.next_token_distributions(np.array([[0, 1], [0, 3]]))
    assert DyckCompletion(2).D == 2
    with pytest.raises(ValueError, match=r"^D must be an even length >= 2"):
        DyckCompletion(3)
    with pytest.raises(ValueError, match=r"^need n >= 1 and 0 <= length <= D"):
        DyckCompletion(2).sample(rng, 0)
    E = np.eye(9)
    db.DyckWeights(2, 2, E, np.zeros((9, 9)), np.zeros((9, 9)))
    with pytest.raises(ValueError, match=r"^E must have shape \(m, 2kD\+1\)"):
        db.DyckWeights(2, 2, E[:, :, None], np.zeros((9, 9)), np.zeros((9, 9)))
    with pytest.raises(ValueError, match=r"^attention violates the balance condition"):
        db.construct_solution(2, 2, np.round(rng.normal(size=(9, 9)) * 8) / 8)
    with pytest.raises(ValueError, match=r"^cannot represent nan exactly as a rational"):
        to_fraction(float("nan"))
    assert bd.min_prefix_probability_bound(1, 0.5, 0) == 1.0
    with pytest.raises(ValueError, match=r"^need k >= 1, 0 < q < 1, length >= 0"):
        bd.min_prefix_probability_bound(2, 1.0, 3)
    assert bd.weight_decay_threshold(1, 0.5, 1, 1.0, 1.0) == 0.5
    with pytest.raises(ValueError, match=r"^need k >= 1, 0 < q < 1, length >= 1, eps > 0, theta_norm > 0"):
        bd.weight_decay_threshold(0, 0.5, 1, 1.0, 1.0)


@pytest.mark.claim("dyck.def_distribution", tier="exact")
def test_population_loss_is_evaluated_in_float64():
    """(3.21)-(3.22) are evaluated in float64 whatever the predictor's dtype: a prediction in extended precision gets
    exactly the loss of its float64 rounding."""
    lang = Dyck(2, 3)

    def wide(x):
        return lang.next_token_distributions(x).astype(np.longdouble) / np.longdouble(3)

    narrow = lang.population_loss(lambda x: wide(x).astype(np.float64), 6)
    assert lang.population_loss(wide, 6) == narrow and narrow.excess > 0


@pytest.mark.claim("dyck.cor1_uniform_attention", tier="exact")
def test_uniform_attention_solution_rejects_colliding_features(monkeypatch):
    """Cor 1 needs layer-1 features injective in (type, depth); a feature table with two equal rows is rejected."""
    table = db.uniform_attention_solution(1, 2).feature_table()
    table[1] = table[0]
    monkeypatch.setattr(db.UniformAttentionSolution, "feature_table", lambda self: table)
    with pytest.raises(ValueError, match=r"^layer-1 features are not injective in \(type, depth\)$"):
        db.uniform_attention_solution(1, 2)


@pytest.mark.claim("dyck.thm1_balance_sufficiency", tier="exact")
def test_exact_model_on_every_short_prefix_and_a_degenerate_frame():
    """The exact-arithmetic model equals the generator on every prefix of length <= 4 (depth 0, D and between),
    and a frame that does not separate two embeddings (Lemma 39) is redrawn: the construction stays exact."""
    sol = _balanced(2, 3, seed=1)
    lang = sol.language
    for n in range(5):
        for s in lang.all_prefixes(n).tolist():
            assert db.exact_model_distribution(sol, s) == lang.next_token_distribution(s, exact=True)
    k, depth, m = 2, 2, 10
    track0 = db._orthonormal_frame(m, k * depth, np.random.default_rng(0))[1]
    E = np.random.default_rng(3).normal(size=(m, 2 * k * depth + 1))
    v = np.random.default_rng(4).normal(size=m)
    E[:, 1] = E[:, 0] + v - track0 @ (track0.T @ v)  # e_1 - e_0 orthogonal to the seed-0 tracking plane
    sol = db.construct_solution(k, depth, embeddings=E)
    table = E.T @ sol.track
    assert np.linalg.norm(table[1] - table[0]) > 1e-6 and not np.allclose(sol.track, track0)
    assert exact_on_all_prefixes(sol, k, depth, 8) == 0.0


@pytest.mark.claim("dyck.thm1_balance_necessity", tier="exact")
def test_pumping_search_finds_the_first_flip_from_any_estimate():
    """The flip search returns the smallest beta from estimates below and above it (here the closed form is exact,
    so the search's widening loops are exercised by bad estimates), for D = 2 and D = 4, and the counterexample
    names the query its failing prefix ends with."""
    betas = []
    for sol in (_unbalanced(2, 2, seed=0, delta=2.0), _unbalanced(2, 4, seed=5, delta=2.0**-7)):
        ce = db.pumping_counterexample(sol)
        betas.append(ce.beta)
        assert verify_pumping(sol, ce)
        depth = sol.language.scan(ce.prefix_fail[None])[1][0, -1]
        assert ce.query == (int(ce.prefix_fail[-1]) // 2, int(depth))
        args = (sol, ce.prefix_fail, ce.insert_at, ce.pair[0] // 2, int(ce.prefix_fail[-3]) // 2)
        for estimate in {1, max(1, ce.beta // 3), 50 * ce.beta + 7}:
            assert db._first_flip(*args, estimate) == ce.beta
    assert betas[0] == 1 and betas[1] > 3  # estimates far above beta = 1, and below a beta > 3


@pytest.mark.claim("dyck.thm3_lottery", tier="exact")
def test_attention_pattern_and_layer_norm_follow_their_formulas():
    """attention_pattern is the causal softmax of the scores G[key, query] (each query's column sums to 1),
    LN_C acts row by row on a batch, and the "M" pair shares a random balanced attention drawn from ``rng``."""
    w = _balanced(2, 3, seed=2).weights
    seqs = Dyck(2, 3).all_prefixes(5)[::7]
    idx = db.token_indices(Dyck(2, 3), seqs)
    A = db.attention_pattern(w, idx)
    G = w.scores()
    for b in range(len(idx)):
        for qpos in range(idx.shape[1]):
            s = G[idx[b, : qpos + 1], idx[b, qpos]]
            expect = np.exp(s - s.max()) / np.exp(s - s.max()).sum()
            assert np.allclose(A[b, : qpos + 1, qpos], expect, rtol=1e-12, atol=0)
            assert np.all(A[b, qpos + 1 :, qpos] == 0)
    x = np.random.default_rng(0).normal(size=(3, 5)) * 4
    rows = np.array([bd.layer_norm_c(r, 1.0) for r in x])
    assert np.allclose(bd.layer_norm_c(x, 1.0), rows, rtol=1e-14, atol=1e-15)
    s1, s2 = bd.same_component_pair(2, 3, "M", np.random.default_rng(7), 1.5)
    M = db.random_balanced_attention(2, 3, np.random.default_rng(7), 1.5)
    assert np.array_equal(s1.weights.M, M) and np.array_equal(s2.weights.M, M)


@pytest.mark.claim("dyck.thm2_approx_balance", tier="exact")
def test_approx_balance_report_against_its_formulas():
    """C = 16 D (4/eps' + 1) with eps' = (sqrt2 (1-q) - 2 sqrt(eps)) / gamma; the report's defaults are q = 1/2,
    gamma = 1, eps = 0, rate 1; its worst ratio is max ||S|| N / (C P) with P from stack_separation; the prefix
    probability bound is (q(1-q)/k^2)^N."""
    eps_prime = (np.sqrt(2) * 0.4 - 2 * np.sqrt(0.01)) / 5.0
    assert bd.approx_balance_constant(4, 0.6, 5.0, 0.01) == pytest.approx(64 * (4 / eps_prime + 1), rel=1e-14)
    rng = np.random.default_rng(0)
    w = db.construct_solution(
        2,
        4,
        db.random_balanced_attention(2, 4, rng, 1.0) + 1e-3 * rng.normal(size=(17, 17)),
        allow_unbalanced=True,
    ).weights
    report = bd.approx_balance_report(w, 100)
    C = 64 * (4 / (np.sqrt(2) / 2) + 1)
    assert report.length == 100
    assert report.eps_prime == pytest.approx(np.sqrt(2) / 2, rel=1e-15)
    assert report.constant == pytest.approx(C, rel=1e-14)
    S = np.linalg.norm(db.pair_effects(w), axis=-1)  # [query, type, level]
    P = db.stack_separation(w)
    assert report.worst_ratio == pytest.approx(float(np.max(S / P[:, None, None])) * 100 / C, rel=1e-12)
    assert Fraction(bd.min_prefix_probability_bound(2, 0.5, 3)) == Fraction(1, 16) ** 3


@pytest.mark.claim("dyck.sec2_2_5_8_post_ln", tier="exact")
def test_block_hidden_against_the_construction_and_the_softmax():
    """The thesis block's g-input LN_0(a) + e_rho equals the construction's own h (hidden), the post-LN block's is
    LN_0(a + e_rho) with a the causal softmax output, and inserting pairs by counts equals inserting them."""
    sol = _balanced(2, 4, seed=3, scale=1.0)
    lang, w = sol.language, sol.weights
    for prefix in ([0, 0, 2, 3], [2, 0, 1, 2], [0, 2, 2, 3, 3]):
        idx = db.token_indices(lang, np.array([prefix]))
        h = np.array(ar_block_hidden(sol, prefix, None, "thesis"))
        assert np.allclose(h, sol.hidden(idx)[0, -1], rtol=0, atol=1e-12)
        a = (w.W_V @ w.E)[:, idx[0]] @ db.attention_pattern(w, idx)[0, :, -1]
        x = a + w.E[:, idx[0, -1]]
        c = x - x.mean()
        assert np.allclose(
            np.array(ar_block_hidden(sol, prefix, None, "post_ln")), c / np.linalg.norm(c), atol=1e-12
        )
        for block in ("thesis", "post_ln"):
            pumped = np.array(prefix[:1] + [0, 1] * 3 + prefix[1:])
            assert np.allclose(
                np.array(ar_block_hidden(sol, prefix, (1, 0, 3), block)),
                np.array(ar_block_hidden(sol, pumped, None, block)),
                rtol=0,
                atol=1e-12,
            )


def ar_block_hidden(sol, prefix, pumped, block):
    from theorylab.attention.dyck import architecture as ar

    return [float(x) for x in ar.block_hidden(sol, prefix, pumped, block)]


def direct_theory_transformer(layers, W_E, W_head, b_head, tokens, block):
    """(3.23)-(3.27) position by position: causal softmax over keys <= query, LN_0, residual, 2-layer ReLU g."""

    def ln(x):
        c = x - x.mean()
        n = np.linalg.norm(c)
        return c / n if n > 0 else c

    out = []
    for seq in tokens:
        X = [W_E[:, W_E.shape[1] - 1]] + [W_E[:, t] for t in seq]
        for L in layers:
            Y = []
            for i in range(len(X)):
                s = np.array([(L.W_Q @ X[i]) @ (L.W_K @ X[j]) for j in range(i + 1)])
                p = np.exp(s - s.max()) / np.exp(s - s.max()).sum()
                attn = sum(p[j] * (L.W_V @ X[j]) for j in range(i + 1))
                y = ln(attn) + X[i] if block == "thesis" else ln(attn + X[i])
                Y.append(L.W2 @ np.maximum(L.W1 @ y + L.b1, 0.0) + L.b2)
            X = Y
        out.append(W_head @ X[-1] + b_head)
    return np.array(out)


@pytest.mark.claim("dyck.prop6_head_zero", tier="exact")
@pytest.mark.parametrize("block", ["thesis", "post_ln"])
def test_theory_transformer_matches_a_direct_evaluation(block):
    from theorylab.attention.dyck.architecture import theory_transformer

    rng = np.random.default_rng(11)
    layers, E = random_theory_transformer(rng, 2)
    head = (rng.normal(size=(4, 6)), rng.normal(size=4))
    tokens = Dyck(2, 2).sample(rng, 3, 5)
    expect = direct_theory_transformer(layers, E, *head, tokens, block)
    assert np.allclose(
        theory_transformer(layers, E, *head, tokens, block=block), expect, rtol=1e-10, atol=1e-10
    )


# trained tier's instruments, on models whose answers are known (property tier: they import torch)
@pytest.mark.claim("dyck.thm1_balance_sufficiency", tier="property")
def test_trained_model_is_the_theory_layer():
    """The torch model of the trained tier computes the theorems' architecture: its first-layer indices are the
    (type, depth) indices (block of token t for every string, valid or not), loaded with a construction's (M, W_V)
    its g-input is the construction's h (ablated: the h of M = 0), and its contrastive penalty is (3.40) with the
    documented balanced blocks."""
    import torch

    from theorylab.attention.dyck import trained as dt

    k, D = 2, 3
    lang = Dyck(k, D)
    model = dt.DyckMinimalConfig(k, D, width=8, ln_eps=1e-12).build(0)
    seqs = lang.all_prefixes(6)
    assert np.array_equal(model.indices(torch.from_numpy(seqs)).numpy(), db.token_indices(lang, seqs))
    every = np.array(list(itertools.product(range(2 * k), repeat=5)))
    idx = model.indices(torch.from_numpy(every)).numpy()
    assert np.all(idx[:, 0] == 2 * k * D) and np.array_equal(idx[:, 1:] // D, every)
    sol = _balanced(k, D, seed=5, scale=1.0)
    with torch.no_grad():
        model.W_Q.copy_(torch.tensor(sol.weights.M, dtype=torch.float32))
        model.W_K.copy_(torch.eye(2 * k * D + 1))
        model.W_V.copy_(torch.tensor(sol.weights.W_V, dtype=torch.float32))
    seen = []
    model.g.register_forward_pre_hook(lambda _, inputs: seen.append(inputs[0].double().numpy()))
    x = lang.sample(np.random.default_rng(0), 8, 10)
    deep = lang.scan(x)[1] > 0  # LN_0(0) = 0 at depth 0 vs LN of float32 round-off: compared where depth >= 1
    ablated = replace(sol, weights=replace(sol.weights, M=np.zeros_like(sol.weights.M)))
    for ablate, ref in ((False, sol), (True, ablated)):
        model.ablate_attention = ablate
        with torch.no_grad():
            model.layer2(model.indices(torch.from_numpy(x)))
        h = ref.hidden(db.token_indices(lang, x))
        # float32 weights and sums: ~1e-6 relative error on unit-scale h; a wrong block or pattern moves it by O(1)
        assert np.abs(seen[-1] - h)[deep].max() < 1e-4, ablate
    model.ablate_attention = False
    tokens = torch.from_numpy(lang.sample(np.random.default_rng(1), k * D + 1, 8))
    with torch.no_grad():
        out = model.layer2(model.indices(tokens))[:, 1:]
        penalty = float(model.contrastive_penalty(tokens, out))
        blocks = []
        for b in range(k * D + 1):  # b = kD reuses block 0
            r, t = 1 + (b % (k * D)) % D, (b % (k * D)) % k
            blocks.append([2 * t] * r + [2 * t + 1] * r + [2 * t, 2 * t + 1] * (D - r))
        assert all(lang.is_word(bl) and len(bl) == 2 * D for bl in blocks)
        pre = torch.tensor(blocks)
        shifted = model.layer2(model.indices(torch.cat([pre, tokens], dim=1)))[:, 2 * D + 1 :]
        expect = float(((shifted - out) ** 2).sum(-1).mean())
    assert penalty == pytest.approx(expect, rel=1e-6) and expect > 0


@pytest.mark.claim("dyck.prop6_head_zero", tier="property")
def test_trained_tier_instruments_on_known_answers():
    """Copy accuracy, distance from uniform attention and the window baseline on models and data whose values are
    known; the GPT block is LN(X + attn) then LN(X + W2 relu(W1 X + b1) + b2); the copy task's targets are its
    inputs."""
    import torch
    from torch import nn

    from theorylab.attention.dyck import trained as dt

    class Known(nn.Module):
        """Copies its input (logits = one-hot of the input), or predicts token 0 when ablated; attends to itself."""

        ablate_attention = False

        def forward(self, tokens, return_attention=False):
            logits = torch.nn.functional.one_hot(tokens, 4).double()
            if self.ablate_attention:
                logits = torch.zeros_like(logits)
                logits[..., 0] = 1.0
            T = tokens.shape[1]
            attn = torch.eye(T, dtype=torch.float64).expand(tokens.shape[0], 1, T, T)
            return (logits, attn) if return_attention else logits

    x = Dyck(2, 4).sample(np.random.default_rng(0), 16, 12)
    model = Known()
    assert dt.copy_accuracy(model, x) == 1.0
    assert dt.copy_accuracy(model, x, ablate=True) == float(np.mean(x == 0)) and not model.ablate_attention
    n = np.arange(1, 13)
    assert dt.attention_distance_from_uniform(model, x) == pytest.approx(float(np.mean(1 - 1 / n)), rel=1e-12)
    batch = dt.DyckCopyTask().sample_batch(np.random.default_rng(1), 6, 10)
    assert np.array_equal(batch.targets, batch.inputs) and all(Dyck(2, 4).is_prefix(s) for s in batch.inputs)
    # window 0: the majority close type; window 1 on "()[]": each close follows its own open
    close = x % 2 == 1
    share = np.bincount(x[close] // 2, minlength=2).max() / close.sum()
    assert dt.window_closing_accuracy(x, 0, 4) == pytest.approx(float(share), rel=1e-15)
    assert dt.window_closing_accuracy(np.array([[0, 1, 2, 3]]), 1, 4) == 1.0
    for layers in (1, 2):
        gpt = dt.DyckGPTConfig(2, layers, 8).build(layers)
        tokens = torch.from_numpy(x[:3])
        with torch.no_grad():
            X = gpt.embed(tokens).double()
            expect = gpt_reference(gpt, X, layers)
            assert torch.allclose(
                gpt(tokens).double(), expect, atol=1e-4
            )  # float32 forward vs float64 reference
    with pytest.raises(ValueError, match=r"^k, layers and width must be positive"):
        dt.DyckGPTConfig(2, 0, 8)


def gpt_reference(gpt, X, layers):
    """The post-LN GPT blocks in float64: X <- LN(X + attn(X)), X <- LN(X + W2 relu(W1 X + b1) + b2), then the head."""
    import torch

    T, d = X.shape[1], X.shape[2]
    mask = torch.ones(T, T, dtype=torch.bool).tril()
    for i in range(layers):
        W, b = gpt.qkv[i].weight.double(), gpt.qkv[i].bias.double()
        q, kk, v = (X @ W.T + b).chunk(3, dim=-1)
        s = (q @ kk.transpose(1, 2) / np.sqrt(d)).masked_fill(~mask, -np.inf)
        X = torch.nn.functional.layer_norm(X + torch.softmax(s, -1) @ v, (d,))
        f1, f2 = gpt.mlp[i][0], gpt.mlp[i][-1]
        hidden = torch.relu(X @ f1.weight.double().T + f1.bias.double())
        X = torch.nn.functional.layer_norm(X + hidden @ f2.weight.double().T + f2.bias.double(), (d,))
    return X @ gpt.head.weight.double().T + gpt.head.bias.double()


# ------------------------------------------------------------------------------------------------ trained tier
TRAINED_SIZES = {
    # seeds, steps, batch, train length, width, lr, length-generalisation length, eval sequences
    "small": dict(seeds=(0, 1, 2), steps=250, batch=32, T=24, width=32, lr=1e-2, long=200, n_eval=32),
    "full": dict(
        seeds=tuple(range(40)), steps=5000, batch=64, T=28, width=256, lr=3e-3, long=500, n_eval=256
    ),
}
THESIS_ACCURACY = 0.97  # "all models reach >= 97% in-distribution accuracy" (Liu §3.6.3.1)
# An exactly balanced M has E||S||/P = 0 (float64 round-off ~1e-16 on the constructions, float32 ~1e-7 on trained
# weights); "unbalanced" means at least 1e-3, far above round-off and far below the trained ~0.2.
RATIO_BAR = 1e-3


@pytest.fixture(scope="module")
def trained_dyck(request):
    """Minimal-first-layer Transformers on Dyck_{2,4}, q = 0.5, trained without and with the contrastive term, and
    the baselines every verdict must reject: untrained models, models trained for 10% of the budget, and the exact
    construction of a different instance (brackets paired the other way round)."""
    from theorylab.attention.dyck import trained as dt
    from theorylab.nn.train import Budget, train

    scale, device = request.getfixturevalue("scale"), request.getfixturevalue("device")
    cfg = TRAINED_SIZES[scale]
    task = dt.DyckTask(2, 4, 0.5)
    budget = Budget(steps=cfg["steps"], batch_size=cfg["batch"], seq_len=cfg["T"], lr=cfg["lr"])
    lang = Dyck(2, 4)
    rng = np.random.default_rng(2024)
    data = {
        "in": lang.sample(rng, 8 * cfg["n_eval"], cfg["T"] + 1),
        "long": lang.sample(rng, cfg["n_eval"], cfg["long"] + 1),
        "window_fit": lang.sample(rng, 20000, cfg["T"] + 1),
    }
    model_cfg = dt.DyckMinimalConfig(2, 4, width=cfg["width"])
    arms = {}
    for name, lam, steps in (
        ("plain", 0.0, cfg["steps"]),
        ("contrastive", 1.0, cfg["steps"]),
        ("short", 0.0, max(1, cfg["steps"] // 10)),  # 10% of the budget
        ("post_ln", 0.0, cfg["steps"]),  # the GPT block LN(attn + X) (Li Eq 2.85), same budget
    ):
        res = train(
            task,
            replace(model_cfg, contrastive=lam, block="post_ln" if name == "post_ln" else "thesis"),
            replace(budget, steps=steps),
            seeds=cfg["seeds"],
            device=device,
            progress=False,
        )
        arms[name] = {
            "models": res.models,
            "seconds": res.seconds,
            **summarize_models(res.models, lang, data, excess=name in ("plain", "contrastive")),
        }
    untrained = [model_cfg.build(seed) for seed in cfg["seeds"]]
    arms["untrained"] = {
        "models": untrained,
        "seconds": 0.0,
        **summarize_models(untrained, lang, data, False),
    }
    arms["other_instance"] = summarize_construction(swapped_pairing_construction(), lang, data)
    arms["window"] = {w: dt.window_closing_accuracy(data["window_fit"], w, 4) for w in range(1, 2 * 4 + 1)}
    return arms


def swapped_pairing_construction():
    """The exact Thm 1 generator of a different instance: Dyck_{2,4} with type 0 opened by '(' and closed by ']' and
    vice versa (its close predictions swap the two close tokens)."""
    return db.construct_solution(2, 4, db.random_balanced_attention(2, 4, np.random.default_rng(9), 1.0))


def summarize_construction(sol, lang, data) -> dict:
    from theorylab.attention.dyck import trained as dt

    def closing_acc(x):
        probs = sol.predict(x[:, :-1])[:, 1:][..., [3, 1]]  # close probabilities of the swapped pairing
        close = x[:, 1:] % 2 == 1
        return float(np.mean((2 * np.argmax(probs, axis=-1) + 1)[close] == x[:, 1:][close]))

    idx = db.token_indices(lang, dt.PROBE[None])
    return {
        "acc": np.array([closing_acc(data["in"])]),
        "acc_long": np.array([closing_acc(data["long"])]),
        "ratio": np.array([db.balance_ratio(sol.weights)]),
        "stack": np.array([0.0]),
        "patterns": [db.attention_pattern(sol.weights, idx)[0].T],
    }


def summarize_models(models, lang, data, excess: bool = True) -> dict:
    from theorylab.attention.dyck import trained as dt

    out = {"acc": [], "acc_long": [], "excess": [], "violation": [], "ratio": [], "stack": [], "patterns": []}
    for m in models:
        out["acc"].append(dt.closing_accuracy(m, lang, data["in"]))
        out["acc_long"].append(dt.closing_accuracy(m, lang, data["long"]))
        if (
            excess
        ):  # exact population squared loss at length 10 (11,616 prefixes): a measure, not in any verdict
            out["excess"].append(
                lang.population_loss(lambda x, m=m: dt.next_token_probabilities(m, x), 10).excess
            )
        bm = dt.balance_metrics(m)
        out["violation"].append(bm["balance_violation"])
        out["ratio"].append(bm["balance_ratio"])
        out["stack"].append(dt.stack_attention_mass(m, lang, data["in"][:64]))
        out["patterns"].append(dt.attention_pattern_of(m))
    return {k: (v if k == "patterns" else np.array(v)) for k, v in out.items()}


def accuracy_bar(arms) -> float:
    """The thesis's 97%, raised above the best window predictor of up to 2D = 8 tokens (in-sample Bayes rule on
    20,000 training-length prefixes: 0.965 at w = 8), so that a model passing the bar beats every such window."""
    return max(THESIS_ACCURACY, max(arms["window"].values()) + 0.005)


def near_optimal_yet_unbalanced(arm, bar: float) -> bool:
    """Every seed predicts the closing bracket in distribution above ``bar`` and none has balanced attention
    (E||S||/P > RATIO_BAR): the claim that near-optimal trained models violate the balance condition."""
    return bool(np.all(arm["acc"] >= bar) and np.all(arm["ratio"] > RATIO_BAR))


def near_optimal_with_different_attention(arm, bar: float = THESIS_ACCURACY) -> bool:
    """Every seed predicts the closing bracket in distribution (>= ``bar``), yet the attention patterns differ
    across seeds (mean pairwise variation >= 10% of the random baseline) and are not stack-like."""
    from theorylab.attention.dyck import trained as dt

    if len(arm["patterns"]) < 2:
        return False
    variation = dt.attention_variation(arm["patterns"])
    baseline = dt.random_attention_variation(arm["patterns"][0].shape[0])
    return bool(np.all(arm["acc"] >= bar) and variation >= 0.1 * baseline and np.mean(arm["stack"]) < 0.5)


@pytest.mark.claim("dyck.emp_attention_variety", tier="trained")
def test_equally_good_models_attend_differently(trained_dyck, measure, figure):
    from theorylab.attention.dyck import trained as dt

    arm, bar = trained_dyck["plain"], accuracy_bar(trained_dyck)
    measure("closing_acc_min", float(arm["acc"].min()))
    measure("window_closing_acc_w1_to_8", [round(v, 4) for v in trained_dyck["window"].values()])
    measure("accuracy_bar", bar)
    measure("excess_mse_len10_max", float(arm["excess"].max()))
    measure("attention_variation", dt.attention_variation(arm["patterns"]))
    measure("attention_variation_random_baseline", dt.random_attention_variation(arm["patterns"][0].shape[0]))
    measure("stack_mass_mean", float(arm["stack"].mean()))
    measure("balance_ratio_per_seed", arm["ratio"].tolist())
    measure("balance_violation_per_seed", arm["violation"].tolist())
    for name in ("untrained", "short", "other_instance"):
        measure(f"{name}_closing_acc", trained_dyck[name]["acc"].tolist())
        measure(f"{name}_balance_ratio", trained_dyck[name]["ratio"].tolist())
    measure("train_seconds", arm["seconds"])
    figure(attention_figure(arm["patterns"][:2]), "dyck_trained_attention")
    assert near_optimal_with_different_attention(arm, bar)
    assert near_optimal_yet_unbalanced(arm, bar)


@pytest.mark.claim("dyck.emp_attention_variety", tier="trained", control=True)
def test_attention_variety_control(trained_dyck):
    arm, bar = trained_dyck["plain"], accuracy_bar(trained_dyck)
    clones = {**arm, "patterns": [arm["patterns"][0]] * len(arm["patterns"])}
    assert not near_optimal_with_different_attention(clones, bar)  # identical patterns: no variation
    # untrained models (E||S||/P 0.68-0.82, accuracy ~0.5), 10%-budget models (accuracy ~0.92 < bar) and the exact
    # solution of a different instance (balanced, wrong close on every closing position) are all rejected
    for name in ("untrained", "short", "other_instance"):
        assert not near_optimal_yet_unbalanced(trained_dyck[name], bar), name
        assert not near_optimal_with_different_attention(trained_dyck[name], bar), name


def regulariser_lowers_violation(plain, reg, bar: float, factor: float = 0.8) -> bool:
    """The regularised arm is near-optimal in distribution (every seed >= ``bar``), its mean balance violation
    E||S||/P is below ``factor`` times the plain arm's, and its length-generalisation accuracy is higher."""
    return bool(
        np.all(reg["acc"] >= bar)
        and np.mean(reg["ratio"]) < factor * np.mean(plain["ratio"])
        and np.mean(reg["acc_long"]) > np.mean(plain["acc_long"])
    )


@pytest.mark.claim("dyck.emp_balance_violation", tier="trained")
def test_contrastive_regulariser_lowers_balance_violation(trained_dyck, measure):
    plain, reg = trained_dyck["plain"], trained_dyck["contrastive"]
    for name in ("plain", "contrastive", "untrained", "short", "other_instance"):
        arm = trained_dyck[name]
        measure(f"{name}_balance_ratio_mean", float(arm["ratio"].mean()))
        measure(f"{name}_acc_long_mean", float(arm["acc_long"].mean()))
        measure(f"{name}_closing_acc_min", float(arm["acc"].min()))
    measure("contrastive_train_seconds", reg["seconds"])
    assert regulariser_lowers_violation(plain, reg, accuracy_bar(trained_dyck))


@pytest.mark.claim("dyck.emp_balance_violation", tier="trained", control=True)
def test_balance_violation_control(trained_dyck):
    plain, bar = trained_dyck["plain"], accuracy_bar(trained_dyck)
    assert not regulariser_lowers_violation(
        plain, plain, bar
    )  # the verdict does not pass an unregularised arm
    # nor an untrained or 10%-budget "regularised" arm, nor the balanced exact solution of a different instance
    for name in ("untrained", "short", "other_instance"):
        assert not regulariser_lowers_violation(plain, trained_dyck[name], bar), name


def blocks_perform_similarly(thesis, other, bar: float, gap: float = 0.02) -> bool:
    """Footnote 49's 'the two definitions perform similarly empirically': both arms are near-optimal in distribution
    (every seed >= ``bar``) and their mean closing accuracies differ by at most ``gap`` (2 points, the spread of the
    thesis's '>= 97%' across its models)."""
    return bool(
        np.all(thesis["acc"] >= bar)
        and np.all(other["acc"] >= bar)
        and abs(np.mean(thesis["acc"]) - np.mean(other["acc"])) <= gap
    )


@pytest.mark.claim("dyck.fn49_block_comparison", tier="trained")
def test_post_ln_block_performs_like_the_thesis_block(trained_dyck, measure):
    thesis, post = trained_dyck["plain"], trained_dyck["post_ln"]
    bar = accuracy_bar(trained_dyck)
    for name, arm in (("thesis_block", thesis), ("post_ln_block", post)):
        measure(f"{name}_closing_acc", arm["acc"].tolist())
        measure(f"{name}_acc_long", arm["acc_long"].tolist())
        measure(f"{name}_balance_ratio", arm["ratio"].tolist())
    measure("post_ln_train_seconds", post["seconds"])
    assert blocks_perform_similarly(thesis, post, bar)


@pytest.mark.claim("dyck.fn49_block_comparison", tier="trained", control=True)
def test_block_comparison_control(trained_dyck):
    thesis, bar = trained_dyck["plain"], accuracy_bar(trained_dyck)
    for name in ("untrained", "short", "other_instance"):  # none of these "performs like" the trained block
        assert not blocks_perform_similarly(thesis, trained_dyck[name], bar), name


# ------------------------------------------------------------------------------------------------ misleading attention
COPY_SIZES = {
    "small": dict(seeds=(0, 1, 2), steps=300, batch=32, T=24, width=16, lr=1e-3, layers=(1, 2)),
    "full": dict(seeds=tuple(range(10)), steps=5000, batch=64, T=28, width=64, lr=1e-3, layers=(1, 4)),
}
# "Looks interpretable": the trained heads must be far from uniform, otherwise replacing them by uniform attention
# would be harmless trivially. Untrained heads are 0.09-0.12 (total variation from uniform); 0.25 is twice that.
SHARP = 0.25


@pytest.fixture(scope="module")
def trained_copy(request):
    """GPT-style Transformers (1 and 2 layers) trained to copy Dyck_{2,4} prefixes, their 10%-budget and untrained
    versions, and, for contrast, models whose task needs attention."""
    from theorylab.attention.dyck import trained as dt
    from theorylab.nn.train import Budget, train

    scale, device = request.getfixturevalue("scale"), request.getfixturevalue("device")
    cfg = COPY_SIZES[scale]
    x = Dyck(2, 4).sample(np.random.default_rng(5), 256, cfg["T"])
    budget = Budget(steps=cfg["steps"], batch_size=cfg["batch"], seq_len=cfg["T"], lr=cfg["lr"])
    arms = {}
    for layers in cfg["layers"]:
        model_cfg = dt.DyckGPTConfig(2, layers, cfg["width"])
        for name, steps in ((f"L{layers}", cfg["steps"]), (f"L{layers}_short", max(1, cfg["steps"] // 10))):
            res = train(
                dt.DyckCopyTask(),
                model_cfg,
                replace(budget, steps=steps),
                seeds=cfg["seeds"],
                device=device,
                progress=False,
            )
            arms[name] = copy_summary(res.models, x)
        arms[f"L{layers}_untrained"] = copy_summary([model_cfg.build(s) for s in cfg["seeds"]], x)
    return arms


def copy_summary(models, x) -> dict:
    from theorylab.attention.dyck import trained as dt

    return {
        "acc": np.array([dt.copy_accuracy(m, x) for m in models]),
        "acc_ablated": np.array([dt.copy_accuracy(m, x, ablate=True) for m in models]),
        "sharpness": np.array([dt.attention_distance_from_uniform(m, x) for m in models]),
        "closing_mass": np.array([dt.closing_mass(m, x) for m in models]),
    }


def attention_is_misleading(arm, bar: float = 0.99, drop: float = 0.01) -> bool:
    """Every seed solves its task (accuracy >= ``bar``), its heads are sharp (total variation from uniform >=
    SHARP), and replacing every head by uniform attention costs at most ``drop``: the patterns are not what the
    model computes with."""
    return bool(
        np.all(arm["acc"] >= bar)
        and np.all(arm["sharpness"] >= SHARP)
        and np.all(arm["acc_ablated"] >= arm["acc"] - drop)
    )


@pytest.mark.claim("dyck.emp_misleading_attention", tier="trained")
def test_copying_ignores_sharp_attention(trained_copy, scale, measure):
    for layers in COPY_SIZES[scale]["layers"]:
        for suffix in ("", "_short", "_untrained"):
            arm = trained_copy[f"L{layers}{suffix}"]
            for key in ("acc", "acc_ablated", "sharpness", "closing_mass"):
                measure(f"L{layers}{suffix}_{key}", np.round(arm[key], 4).tolist())
        assert attention_is_misleading(trained_copy[f"L{layers}"]), layers


@pytest.mark.claim("dyck.emp_misleading_attention", tier="trained", control=True)
def test_misleading_attention_control(trained_copy, trained_dyck, scale, rng):
    """The verdict rejects untrained and 10%-budget copy models, the Dyck next-token models (their closing accuracy
    needs the learned attention) and the exact Thm 1 generator of a random balanced M (ablating its attention to
    M = 0 unbalances its values)."""
    from theorylab.attention.dyck import trained as dt

    for layers in COPY_SIZES[scale]["layers"]:
        for suffix in ("_short", "_untrained"):
            assert not attention_is_misleading(trained_copy[f"L{layers}{suffix}"]), (layers, suffix)
    lang = Dyck(2, 4)
    x = lang.sample(rng, 64, 25)
    models = trained_dyck["plain"]["models"]
    nexttoken = {"acc": [], "acc_ablated": [], "sharpness": []}
    for m in models:
        nexttoken["acc"].append(dt.closing_accuracy(m, lang, x))
        m.ablate_attention = True
        nexttoken["acc_ablated"].append(dt.closing_accuracy(m, lang, x))
        m.ablate_attention = False
        nexttoken["sharpness"].append(SHARP)  # judged on accuracy alone
    assert not attention_is_misleading({k: np.array(v) for k, v in nexttoken.items()})
    sol = _balanced(2, 4, seed=4, scale=2.0)
    ablated = replace(sol, weights=replace(sol.weights, M=np.zeros_like(sol.weights.M)))
    exact = {
        "acc": np.array([1.0 - exact_on_all_prefixes(sol, 2, 4, 10)]),
        "acc_ablated": np.array([1.0 - exact_on_all_prefixes(ablated, 2, 4, 10)]),
        "sharpness": np.array([SHARP]),
    }
    assert not attention_is_misleading(exact)


def attention_figure(patterns, titles=None):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(patterns), figsize=(3.2 * len(patterns), 3.0))
    for i, (ax, a) in enumerate(zip(np.atleast_1d(axes), patterns, strict=True)):
        ax.imshow(a, cmap="viridis", vmin=0, vmax=1)
        ax.set_title(titles[i] if titles else f"seed {i}", fontsize=9)
        ax.set_xlabel("key")
        ax.set_ylabel("query")
    fig.tight_layout()
    return fig
