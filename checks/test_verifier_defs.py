"""Claim checks of Li Ch. 3's definitions (`003_69b23422e33c905a.txt`): constrained generation (Def 3.1.2), the
process verifier (3.1.3), rejection sampling (3.1.4), tokenwise rejection sampling (3.1.5), oracle complexity
(3.1.6), the knapsack problem (3.1.7) and the prompt completion accuracy (3.2.2). Each library object is compared
with a from-scratch brute force of the printed definition on enumerable instances: the samplers through their
absorbing Markov chains (one state per partial string, one transition per oracle call), solved exactly in
Fractions."""

from __future__ import annotations

import itertools
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import theorylab.generation as g
from theorylab.generation import tasks
from theorylab.languages.dyck import DyckCompletion
from theorylab.strategies.generation import random_oracle
from theorylab.testing import rejects, trivial

F = Fraction


# ------------------------------------------------------------------------------------------ brute force helpers
def _table_oracle(k: int, D: int, seed: int, zeros: bool = True) -> g.TabularOracle:
    """A random Fraction oracle on every prefix of length < D (some zero entries when ``zeros``)."""
    return random_oracle(np.random.default_rng(seed), k, D, zeros)


def _p(oracle: g.Oracle, s) -> Fraction:
    """p_O(s) = prod_i O(s_i | s_<i), from scratch."""
    out = F(1)
    for i in range(len(s)):
        out *= oracle.probs(s[:i])[s[i]]
    return out


def _solve(A: list[list[Fraction]], b: list[list[Fraction]]) -> list[list[Fraction]]:
    """Gauss-Jordan in Fractions: A^{-1} b."""
    n = len(A)
    M = [row[:] + rb[:] for row, rb in zip(A, b, strict=True)]
    for c in range(n):
        piv = next(r for r in range(c, n) if M[r][c] != 0)
        M[c], M[piv] = M[piv], M[c]
        M[c] = [x / M[c][c] for x in M[c]]
        for r in range(n):
            if r != c and M[r][c] != 0:
                M[r] = [x - M[r][c] * y for x, y in zip(M[r], M[c], strict=True)]
    return [row[n:] for row in M]


def _absorbing(step, states: list, start) -> tuple[dict, Fraction]:
    """Absorbing chain: ``step(state) -> [(prob, next, absorbed)]`` per oracle call. Returns the absorption law
    from ``start`` and the expected number of calls (fundamental matrix N = (I - Q)^{-1})."""
    idx = {s: i for i, s in enumerate(states)}
    n = len(states)
    Q = [[F(0)] * n for _ in range(n)]
    R: dict = {}
    for s in states:
        for p, nxt, absorbed in step(s):
            if absorbed:
                R.setdefault(nxt, [F(0)] * n)[idx[s]] += p
            else:
                Q[idx[s]][idx[nxt]] += p
    I_Q = [[F(int(i == j)) - Q[i][j] for j in range(n)] for i in range(n)]
    cols = list(R)
    rhs = [[F(1)] + [R[c][i] for c in cols] for i in range(n)]
    sol = _solve(I_Q, rhs)[idx[start]]
    return {c: sol[1 + j] for j, c in enumerate(cols) if sol[1 + j] != 0}, sol[0]


def _rejection_chain(oracle, D: int, A: frozenset):
    """Def 3.1.4 as a chain: a partial try s grows by one sampled token per call; a full try outside A restarts."""
    states = [s for h in range(D) for s in itertools.product(range(oracle.vocab_size), repeat=h)]

    def step(s):
        out = []
        for t, p in enumerate(oracle.probs(s)):
            if p == 0:
                continue
            u = s + (t,)
            if len(u) < D:
                out.append((p, u, False))
            else:
                out.append((p, u, True) if u in A else (p, (), False))
        return out

    return _absorbing(step, states, ())


def _tokenwise_chain(oracle, D: int, accept):
    """Def 3.1.5 as a chain: at prefix s one call draws t; s -> s t if V(s t) = 1, else s stays."""
    states = [
        s
        for h in range(D)
        for s in itertools.product(range(oracle.vocab_size), repeat=h)
        if h == 0 or accept(s)
    ]

    def step(s):
        out = []
        for t, p in enumerate(oracle.probs(s)):
            if p == 0:
                continue
            u = s + (t,)
            out.append((p, u, len(u) == D) if accept(u) else (p, s, False))
        return out

    return _absorbing(step, states, ())


def _brute_verifier(A: frozenset, k: int, D: int, s) -> bool:
    """Def 3.1.3 literally: some s' (possibly empty) with s o s' in A (A within Sigma^D)."""
    return len(s) <= D and any(s + r in A for r in itertools.product(range(k), repeat=D - len(s)))


# ------------------------------------------------------------------------------------------ def 3.1.2
@pytest.mark.claim("verifier.def3.1.2", tier="exact")
def test_def312_solutions_are_the_positive_probability_members_of_A(measure) -> None:
    """Every A within {0,1}^2 (16 sets) x 6 random oracles with zeros, and every A within {0,1,2}^2 of size <= 2 x 1
    oracle: the library's solution set is {s in A : p_O(s) > 0} computed from scratch; FAIL is valid exactly when
    it is empty. Parity secret (Thm 3.1.1, D = 3): A has 4 strings, 1 solution."""
    checked = fails = 0
    for k, D, max_size, seeds in ((2, 2, 4, range(6)), (3, 2, 2, range(1))):
        words = list(itertools.product(range(k), repeat=D))
        for seed in seeds:
            O = _table_oracle(k, D, seed)
            for r in range(max_size + 1):
                for A in itertools.combinations(words, r):
                    A = frozenset(A)
                    want = frozenset(s for s in A if _p(O, s) > 0)
                    assert tasks.generation_solutions(O, D, A) == want
                    assert tasks.is_valid_output(O, D, A, None) == (not want)
                    assert all(tasks.is_valid_output(O, D, A, s) == (s in want) for s in words)
                    checked += 1
                    fails += not want
    O = g.ParitySecretOracle((1, 0))
    A = g.parity_language(3)
    assert len(A) == 4 and tasks.generation_solutions(O, 3, A) == {(1, 0, 1)}
    measure("instances", checked)
    measure("instances where FAIL is the answer", fails)


@pytest.mark.claim("verifier.def3.1.2", tier="exact", control=True)
def test_def312_control_membership_alone_is_not_a_solution() -> None:
    """Reading Def 3.1.2 as 's in A' accepts the three zero-probability parity strings; bad input is named."""
    O, A = g.ParitySecretOracle((1, 0)), g.parity_language(3)
    misread = frozenset(A)
    assert misread != tasks.generation_solutions(O, 3, A)
    assert not tasks.is_valid_output(O, 3, A, (0, 0, 0))  # in A, probability 0
    assert not tasks.is_valid_output(O, 3, A, None)  # FAIL is wrong when a solution exists
    rejects(
        lambda: tasks.is_valid_output(O, 3, A, (0, 2, 0)), r"output \(0, 2, 0\) has tokens outside 0\.\.1"
    )


# ------------------------------------------------------------------------------------------ def 3.1.3
@pytest.mark.claim("verifier.def3.1.3", tier="exact")
def test_def313_perfect_verifier_is_the_printed_predicate(measure) -> None:
    """All 256 sets A within {0,1}^3 and every prefix of length 0..3 (s' may be empty, so V(s) = [s in A] at full
    length); Li's Dyck_6 verifier on every string of length <= 6 over the 4 brackets; the knapsack DP verifier on
    weights (3, 5, 7), c = 0..16."""
    prefixes = [s for h in range(4) for s in itertools.product((0, 1), repeat=h)]
    for r in range(9):
        for A in itertools.combinations(list(itertools.product((0, 1), repeat=3)), r):
            A = frozenset(A)
            V = g.perfect_verifier(A, 2, 3)
            assert all(V.peek(s) == _brute_verifier(A, 2, 3, s) for s in prefixes)
    dyck = DyckCompletion(6)
    words = frozenset(dyck.words())
    n_ok = 0
    for h in range(7):
        for s in itertools.product(range(4), repeat=h):
            ok = _brute_verifier(words, 4, 6, s)
            assert dyck.is_completable(s) == ok
            n_ok += ok
    for c in range(17):
        V, A = g.SubsetSumVerifier((3, 5, 7), c), g.subset_sum_language((3, 5, 7), c)
        assert all(V.peek(s) == _brute_verifier(A, 2, 3, s) for s in prefixes)
    measure("completable prefixes of Dyck_6 (length <= 6)", n_ok)


@pytest.mark.claim("verifier.def3.1.3", tier="exact", control=True)
def test_def313_control_the_misread_verifiers_fail_the_same_comparison() -> None:
    """'s' nonempty' rejects every full member of A; the oracle-support-aware verifier (a different object, the one
    Thm 3.1.1 needs) rejects prefixes that Def 3.1.3 accepts."""
    A = frozenset({(0, 1, 1), (1, 1, 0)})
    proper = g.ProcessVerifier(lambda s: len(s) < 3 and _brute_verifier(A, 2, 3, s))
    assert proper.peek((0, 1, 1)) != _brute_verifier(A, 2, 3, (0, 1, 1))
    O, P = g.ParitySecretOracle((1, 0)), g.parity_language(3)
    aware, plain = g.support_aware_verifier(P, O, 3), g.perfect_verifier(P, 2, 3)
    assert plain.peek((0,)) and not aware.peek((0,))
    rejects(lambda: g.perfect_verifier([(0, 1)], 2, 3), r"string \(0, 1\) of A has length 2, expected D=3")


# ------------------------------------------------------------------------------------------ def 3.1.4 / 3.1.6
@pytest.mark.claim("verifier.def3.1.4", tier="exact")
def test_def314_rejection_sampling_law_and_calls_from_its_chain(measure) -> None:
    """6 random oracles (k = 2, D = 3, full support) x 5 random sets A: the library's law is the restricted law
    1[s in A] p_O(s)/p_O(A) and its expected calls D/p_O(A), both equal to the absorbing chain's (exact
    Fractions). Prop 3.1.1 (uniform, A = {0^D}, D = 3): 2^D D = 24."""
    rng = np.random.default_rng(0)
    words = list(itertools.product((0, 1), repeat=3))
    for seed in range(6):
        O = _table_oracle(2, 3, seed, zeros=False)
        for _ in range(5):
            A = frozenset(w for w in words if rng.random() < 0.4) or frozenset({words[0]})
            lib = g.rejection_sampling_law(O, 3, A)
            law, calls = _rejection_chain(O, 3, A)
            pA = sum(_p(O, s) for s in A)
            assert lib.law == law == {s: _p(O, s) / pA for s in A}
            assert lib.expected_queries == calls == F(3) / pA
    law, calls = _rejection_chain(g.UniformOracle(2), 3, frozenset({(0, 0, 0)}))
    assert calls == 24 == g.rejection_sampling_law(g.UniformOracle(2), 3, {(0, 0, 0)}).expected_queries
    measure("Prop 3.1.1 rejection sampling calls (D = 3)", float(calls))


@pytest.mark.claim("verifier.def3.1.4", tier="exact", control=True)
def test_def314_control_tokenwise_law_is_not_the_rejection_law() -> None:
    """Prop 3.1.2's instance (uniform, A = strings with a 0, D = 3): accepting token by token (a process verifier)
    is not Def 3.1.4: its law is at TV 3/28 from the restricted law the chain gives; counting one call per try
    instead of D gives 8/7, not 24/7."""
    O, A = g.prop312_instance(3)
    law, calls = _rejection_chain(O, 3, A)
    tok = g.tokenwise_law(O, 3, g.perfect_verifier(A, 2, 3))
    assert g.total_variation(tok.law, law) == F(3, 28) == g.prop312_tv(3)
    assert calls == F(24, 7) != F(8, 7)
    rejects(
        lambda: g.rejection_sampling(O, 3, A.__contains__, np.random.default_rng(0), max_queries=0),
        "max_queries must be >= 1",
    )


@pytest.mark.claim("verifier.def3.1.5", tier="exact")
def test_def315_tokenwise_law_and_calls_from_its_chain(measure) -> None:
    """6 random oracles (with zeros) x 5 sets A, the perfect verifier, k = 2, D = 3: the library's tokenwise law
    and expected calls equal the absorbing chain's (exact). Prop 3.1.1: 2D = 6 calls at D = 3."""
    rng = np.random.default_rng(1)
    words = list(itertools.product((0, 1), repeat=3))
    n = 0
    for seed in range(6):
        O = _table_oracle(2, 3, seed)
        for _ in range(5):
            A = frozenset(w for w in words if rng.random() < 0.4 and _p(O, w) > 0)
            if not A:
                continue
            V = g.support_aware_verifier(A, O, 3)
            lib = g.tokenwise_law(O, 3, V)
            law, calls = _tokenwise_chain(O, 3, V.peek)
            assert lib.law == law and lib.expected_queries == calls
            n += 1
    assert n >= 20
    U = g.UniformOracle(2)
    V = g.perfect_verifier({(0, 0, 0)}, 2, 3)
    assert _tokenwise_chain(U, 3, V.peek)[1] == 6 == g.tokenwise_law(U, 3, V).expected_queries
    measure("instances", n)


@pytest.mark.claim("verifier.def3.1.5", tier="exact", control=True)
def test_def315_control_restarting_on_a_rejection_is_rejection_sampling() -> None:
    """Restarting the whole string on a rejected token (instead of redrawing the token) costs 14 calls, not 6, at
    Prop 3.1.1's D = 3: the chain distinguishes the two readings."""
    U, A = g.UniformOracle(2), frozenset({(0, 0, 0)})
    V = g.perfect_verifier(A, 2, 3)
    states = [s for h in range(3) for s in itertools.product((0, 1), repeat=h) if V.peek(s)]

    def restart(s):
        return [
            (F(1, 2), s + (t,), len(s) == 2) if V.peek(s + (t,)) else (F(1, 2), (), False) for t in (0, 1)
        ]

    assert _absorbing(restart, states, ())[1] == 14 != g.tokenwise_law(U, 3, V).expected_queries
    rejects(
        lambda: g.tokenwise_rejection_sampling(U, 0, V, np.random.default_rng(0)), "the length D must be >= 1"
    )


@pytest.mark.claim("verifier.def3.1.6", tier="exact")
def test_def316_counted_calls_average_to_the_exact_complexity(measure) -> None:
    """Seed 0, 300 runs each at Prop 3.1.1's instance (D = 3): the samplers' counted oracle calls (verifier calls
    not included) average to the exact complexities 2^D D = 24 and 2D = 6 within 5 standard errors (the sample
    standard deviation over sqrt(300)); tokenwise's verifier is called once per oracle call."""
    U, A = g.UniformOracle(2), frozenset({(0,) * 3})
    V = g.perfect_verifier(A, 2, 3)
    rng = np.random.default_rng(0)
    fast = g.TabularOracle(2, lambda s: (0.5, 0.5))  # the same law in floats (sampling only)
    rs = [g.rejection_sampling(fast, 3, A.__contains__, rng).queries for _ in range(300)]
    tw = [g.tokenwise_rejection_sampling(fast, 3, V, rng) for _ in range(300)]
    tq = [r.queries for r in tw]
    exact_rs = g.rejection_sampling_law(U, 3, A).expected_queries
    exact_tw = g.tokenwise_law(U, 3, V).expected_queries
    assert exact_rs == 24 and exact_tw == 6
    for xs, e in ((rs, exact_rs), (tq, exact_tw)):
        assert abs(np.mean(xs) - e) <= 5 * np.std(xs, ddof=1) / np.sqrt(len(xs))
    assert all(r.verifier_calls == r.queries for r in tw)
    measure("mean rejection-sampling calls (exact 24)", float(np.mean(rs)))
    measure("mean tokenwise calls (exact 6)", float(np.mean(tq)))


@pytest.mark.claim("verifier.def3.1.6", tier="exact", control=True)
def test_def316_control_counting_verifier_calls_too_doubles_tokenwise() -> None:
    A = frozenset({(0,) * 3})
    V = g.perfect_verifier(A, 2, 3)
    rng = np.random.default_rng(0)
    fast = g.TabularOracle(2, lambda s: (0.5, 0.5))
    tw = [g.tokenwise_rejection_sampling(fast, 3, V, rng) for _ in range(300)]
    both = [r.queries + r.verifier_calls for r in tw]
    assert abs(np.mean(both) - 6) > 5 * np.std(both, ddof=1) / np.sqrt(len(both))


@pytest.mark.claim(
    "verifier.def3.1.6", tier="property", no_trivial="every draw needs at least one redraw or retry"
)
@settings(max_examples=15, deadline=None)
@given(seed=st.integers(0, 2**16), D=st.integers(2, 3))
def test_def316_chain_complexities_on_random_instances(seed: int, D: int) -> None:
    O = _table_oracle(2, D, seed, zeros=False)
    words = list(itertools.product((0, 1), repeat=D))
    rng = np.random.default_rng(seed)
    A = frozenset(w for w in words if rng.random() < 0.5) or frozenset({words[-1]})
    trivial(len(A) == len(words))
    assert g.rejection_sampling_law(O, D, A).expected_queries == _rejection_chain(O, D, A)[1]
    V = g.perfect_verifier(A, 2, D)
    assert g.tokenwise_law(O, D, V).expected_queries == _tokenwise_chain(O, D, V.peek)[1]


# ------------------------------------------------------------------------------------------ def 3.1.7
@pytest.mark.claim("verifier.def3.1.7", tier="exact")
def test_def317_knapsack_solutions_by_enumeration(measure) -> None:
    """Every instance with weights in {0..3}^3 and c in 0..9 (640): the library's language is the set of 0/1
    assignments with sum a_i X_i = c, the solver returns a member iff it is nonempty. Pinned: (3, 5, 7) with
    c = 8 has the single solution (1, 1, 0), c = 6 none (3 + 3 reuses an item)."""
    feasible = 0
    for w in itertools.product(range(4), repeat=3):
        for c in range(10):
            want = frozenset(
                a
                for a in itertools.product((0, 1), repeat=3)
                if sum(x * y for x, y in zip(a, w, strict=True)) == c
            )
            assert g.subset_sum_language(w, c) == want
            sol = g.subset_sum_solve(w, c)
            assert (sol is None) == (not want) and (sol is None or sol in want)
            feasible += bool(want)
    assert g.subset_sum_language((3, 5, 7), 8) == {(1, 1, 0)}
    assert g.subset_sum_solve((3, 5, 7), 6) is None
    measure("feasible instances of 640", feasible)


@pytest.mark.claim("verifier.def3.1.7", tier="exact", control=True)
def test_def317_control_unbounded_or_at_most_c_readings_differ() -> None:
    """a_i in Z_{>=0} (unbounded knapsack) solves (3, 5, 7), c = 6 with a = (2, 0, 0); 'sum <= c' accepts
    (0, 0, 0) at c = 8: both differ from the library's language; negative weights are rejected."""
    w = (3, 5, 7)
    unbounded = {
        a for a in itertools.product(range(3), repeat=3) if sum(x * y for x, y in zip(a, w, strict=True)) == 6
    }
    assert unbounded == {(2, 0, 0)} and not g.subset_sum_language(w, 6)
    at_most = {
        a for a in itertools.product((0, 1), repeat=3) if sum(x * y for x, y in zip(a, w, strict=True)) <= 8
    }
    assert at_most != g.subset_sum_language(w, 8)
    rejects(lambda: g.subset_sum_language((3, -1), 2), "knapsack weights and target must be non-negative")
    rejects(lambda: g.subset_sum_language((), 2), "weights must be non-empty")


# ------------------------------------------------------------------------------------------ def 3.2.2
def _brute_acc(oracle, prompts, D: int, member) -> Fraction:
    """(1/|X|) sum_x sum_{y: x o y in A} p_O(y | x), every completion y enumerated."""
    total = F(0)
    for x in prompts:
        for y in itertools.product(range(oracle.vocab_size), repeat=D - len(x)):
            if member(tuple(x) + y):
                total += _cond(oracle, x, y)
    return total / len(prompts)


def _cond(oracle, x, y) -> Fraction:
    out, s = F(1), tuple(x)
    for t in y:
        out *= oracle.probs(s)[t]
        s = s + (t,)
    return out


def _prompts(dyck: DyckCompletion) -> list[tuple[int, ...]]:
    """The 32 prefixes of length 4 that the exact verifier accepts, plus two prefixes it rejects."""
    good = [s for s in itertools.product(range(4), repeat=4) if dyck.is_completable(s)]
    return good + [(1, 0), (0, 3, 2)]


@pytest.mark.claim("verifier.def3.2.2", tier="exact")
def test_def322_expected_accuracy_is_the_printed_average(measure) -> None:
    """Dyck_6 (p = 1/5, q = 1/2) mixed with the uniform law at weight 1/10: the library's expected accuracy over
    the prompts equals (1/|X|) sum_x sum_{y: x o y in Dyck_6} p_O(y | x) enumerated from scratch (exact Fractions);
    the noiseless oracle completes every completable prompt (accuracy 1 on those, 0 on the two broken ones)."""
    dyck = DyckCompletion(6)
    X = _prompts(dyck)
    noisy = dyck.oracle(F(1, 10))
    acc = tasks.expected_completion_accuracy(noisy, X, 6, dyck.is_word)
    assert acc == _brute_acc(noisy, X, 6, dyck.is_word)
    clean = tasks.expected_completion_accuracy(dyck.oracle(0), X, 6, dyck.is_word)
    assert clean == F(len(X) - 2, len(X))
    measure("expected accuracy, noise 1/10", float(acc))
    measure("prompts", len(X))


@pytest.mark.claim("verifier.def3.2.2", tier="exact")
def test_def322_sampled_accuracy_matches_its_expectation(measure) -> None:
    """Seed 0: 10 independent draws of Acc(O, X) (one completion per prompt each) average to the expectation within
    5 standard errors; each draw is a multiple of 1/|X|."""
    dyck = DyckCompletion(6)
    X = _prompts(dyck)
    noisy = dyck.oracle(F(1, 10))
    rng = np.random.default_rng(0)
    draws = [tasks.completion_accuracy(noisy, X, 6, dyck.is_word, rng) for _ in range(10)]
    assert all((d * len(X)).denominator == 1 for d in draws)
    e = float(tasks.expected_completion_accuracy(noisy, X, 6, dyck.is_word))
    xs = np.array([float(d) for d in draws])
    assert abs(xs.mean() - e) <= 5 * xs.std(ddof=1) / np.sqrt(len(xs))
    measure("mean sampled accuracy", float(xs.mean()))


def _balanced(y) -> bool:
    return len(y) >= 2 and len(y) % 2 == 0 and DyckCompletion(len(y)).is_word(y)


@pytest.mark.claim("verifier.def3.2.2", tier="exact", control=True)
def test_def322_control_judging_the_completion_alone_or_unweighted_differs() -> None:
    """Judging y alone (y in Dyck) or averaging over all completions uniformly (ignoring p_O) gives other values,
    which the same equality rejects; an empty prompt set and a prompt longer than D are named."""
    dyck = DyckCompletion(6)
    X = _prompts(dyck)
    noisy = dyck.oracle(F(1, 10))
    acc = tasks.expected_completion_accuracy(noisy, X, 6, dyck.is_word)
    alone = uniform = F(0)
    for x in X:
        ys = list(itertools.product(range(4), repeat=6 - len(x)))
        alone += sum(_cond(noisy, x, y) for y in ys if _balanced(y))
        uniform += F(sum(dyck.is_word(tuple(x) + y) for y in ys), len(ys))
    assert acc not in (alone / len(X), uniform / len(X))
    rejects(
        lambda: tasks.expected_completion_accuracy(noisy, [], 6, dyck.is_word), "the prompt set X is empty"
    )
    rejects(
        lambda: tasks.completion_accuracy(noisy, [(0,) * 7], 6, dyck.is_word, np.random.default_rng(0)),
        r"prompt \(0, 0, 0, 0, 0, 0, 0\) is longer",
    )
