"""Differential tests against the conventions of the authors' other code bases (ProgressiveDistillation's
hierarchical parity data, LM_Query_Complexity's backtracking sampler, the Dyck balance metric), each reference
written here from the convention's description."""

import numpy as np
import pytest

from theorylab.boolean import HierarchicalParity
from theorylab.boolean.fourier import hypercube


def ref_tree_class(x, D, k, left_on):
    """Walk the tree recursively: node n (root 1) reads the parity of x[(n-1)k : nk]; go to the left child
    2n on parity ``left_on``; leaves are numbered 1..2^D from the left."""
    out = []
    for row in x:
        n = 1
        for _ in range(D):
            t = int(np.prod(row[(n - 1) * k : n * k]))
            n = 2 * n if t == left_on else 2 * n + 1
        out.append(n - 2**D + 1)
    return np.array(out)


@pytest.mark.parametrize("D,k", [(2, 1), (3, 2)])
def test_hierarchical_parity_child_conventions(D, k):
    d = (2**D - 1) * k
    x = hypercube(d)
    if d > 10:  # 1024 random points (seed 0)
        x = x[np.random.default_rng(0).choice(len(x), 1024, replace=False)]
    doc, code = HierarchicalParity(D, k, d), HierarchicalParity(D, k, d, left_on=+1)
    assert np.array_equal(doc.label(x), ref_tree_class(x, D, k, -1))  # Fig 4.19: left child on -1
    assert np.array_equal(code.label(x), ref_tree_class(x, D, k, +1))  # the data's: left child on +1
    assert np.all(doc.label(x) != code.label(x))  # no input gets the same class ...
    assert np.array_equal(
        code.label(doc.mirror(x)), doc.K + 1 - doc.label(x)
    )  # ... until the tree is mirrored
    assert np.array_equal(doc.mirror(doc.mirror(x)), x)
    for h in (doc, code):  # the corrected class membership agrees with the walk under both conventions
        member = np.stack([h.membership(x, i) for i in range(1, h.K + 1)], axis=1)
        assert np.array_equal(member.argmax(axis=1) + 1, h.label(x)) and (member.sum(axis=1) == 1).all()
    with pytest.raises(ValueError, match="left_on"):
        HierarchicalParity(D, k, d, left_on=0)


def test_authors_backtracking_variant_law():
    """The authors' Algorithm 1 (greedy only below the total erased, every prefix checked) against the printed one
    on the noisy Dyck oracle (D = 6, noise 0.4, Q = 2, B = 2). Exact rationals, computed once with Fractions:
    printed success 14486/15625, authors' 39262293/50000000, TV 11310770627/50000000000; float recursions
    agree to 1e-12 (sums of < 4^6 products of 6 factors)."""
    from theorylab.generation import authors_backtracking_law, backtracking_law, total_variation
    from theorylab.languages.dyck import DyckCompletion

    task = DyckCompletion(6)
    oracle, V = task.oracle(0.4), task.prefix_verifier()
    printed, authors = backtracking_law(oracle, 6, V, 2, 2), authors_backtracking_law(oracle, 6, V, 2, 2)
    assert abs(printed.success - 14486 / 15625) < 1e-12
    assert abs(authors.success - 39262293 / 50000000) < 1e-12
    assert abs(total_variation(printed.law, authors.law) - 11310770627 / 50000000000) < 1e-12
    assert backtracking_law(oracle, 6, V, 2, 2, variant="authors").law == authors.law
    # without the greedy re-generation (the thesis's ablation) the two are the same algorithm
    for Q, B in ((2, 1), (1, 2)):
        a = backtracking_law(oracle, 6, V, Q, B, argmax=False)
        assert a.law == authors_backtracking_law(oracle, 6, V, Q, B, argmax=False).law
    assert backtracking_law(oracle, 6, V, 0, 2).law == authors_backtracking_law(oracle, 6, V, 0, 2).law
    with pytest.raises(ValueError, match="variant"):
        backtracking_law(oracle, 6, V, 2, 2, variant="paper")
    # nucleus sampling for the sampled tokens, as in the thesis's experiments
    nucleus = authors_backtracking_law(oracle, 6, V, 2, 2, top_p=0.9)
    assert abs(sum(nucleus.law.values()) - 1) < 1e-12 and total_variation(nucleus.law, authors.law) > 0.01
    assert authors_backtracking_law(oracle, 6, V, 2, 2, top_p=1).law == authors.law
    with pytest.raises(ValueError, match="top_p"):
        authors_backtracking_law(oracle, 6, V, 2, 2, top_p=1.5)


def test_authors_backtracking_sampler_follows_its_law():
    from theorylab.generation import authors_backtracking_generation, backtracking_law, total_variation
    from theorylab.languages.dyck import DyckCompletion

    task = DyckCompletion(4)
    oracle, V = task.oracle(0.4), task.prefix_verifier()
    exact = backtracking_law(oracle, 4, V, 2, 2, variant="authors").law
    printed = backtracking_law(oracle, 4, V, 2, 2).law
    rng, n = np.random.default_rng(7), 4000
    counts: dict = {}
    for _ in range(n):
        out = authors_backtracking_generation(oracle, 4, V, 2, 2, rng).tokens
        counts[out] = counts.get(out, 0) + 1
    empirical = {s: c / n for s, c in counts.items()}
    gap = total_variation(printed, exact)
    # E TV(empirical, law) <= sqrt(m / n) / 2 = 0.033 with the m = 17 outcomes; the laws differ by 0.082
    tv = total_variation(empirical, exact)
    assert tv < 0.06 and total_variation(empirical, printed) > tv + gap / 2, (tv, gap)


def test_authors_balance_variation_is_not_beta():
    """On exact Theorem-1 solutions (k = 2, D = 4) the thesis's beta is 0 while the authors' metric is not:
    0.87766... for uniform attention (pinned to 1e-9; the floats involved are sums of a few O(1) terms)."""
    from theorylab.attention.dyck import balance as db
    from theorylab.attention.dyck.interop import authors_balance_variation

    uniform = db.construct_solution(2, 4).weights
    assert db.balance_ratio(uniform) == 0.0
    assert abs(authors_balance_variation(uniform) - 0.8776643872851508) < 1e-9
    rng = np.random.default_rng(0)
    M = db.project_to_balanced(rng.normal(size=(17, 17)), 2, 4)
    balanced = db.construct_solution(2, 4, M).weights
    assert db.balance_ratio(balanced) < 1e-12 and authors_balance_variation(balanced) > 1.0
    with pytest.raises(TypeError):
        authors_balance_variation(M)


def test_top_p_and_best_of_n_laws():
    from fractions import Fraction

    from theorylab.generation import decoding as dec
    from theorylab.generation.exact import sequence_law, total_variation
    from theorylab.languages.dyck import DyckCompletion

    assert dec.nucleus((Fraction(1, 2), Fraction(1, 3), Fraction(1, 6)), Fraction(3, 5)) == (
        Fraction(3, 5),
        Fraction(2, 5),
        0,
    )
    assert dec.nucleus((0.25, 0.5, 0.25), 0) == (0.0, 1.0, 0.0)  # p = 0: argmax
    task = DyckCompletion(4)
    oracle = task.oracle(Fraction(2, 5))
    assert dec.top_p_law(oracle, 4, 1) == sequence_law(oracle, 4)
    greedy = dec.top_p_law(oracle, 4, 0)
    assert len(greedy) == 1 and next(iter(greedy.values())) == 1
    score = lambda s: int(task.is_word(s))  # noqa: E731
    one = dec.best_of_n_law(oracle, 4, 1, score)
    assert one == sequence_law(oracle, 4)
    success = {
        n: sum(p for s, p in dec.best_of_n_law(oracle, 4, n, score).items() if task.is_word(s))
        for n in (1, 3)
    }
    assert sum(dec.best_of_n_law(oracle, 4, 3, score).values()) == 1
    assert success[3] == 1 - (1 - success[1]) ** 3  # best-of-3 fails iff all three draws fail
    rng, n, fast = np.random.default_rng(11), 2000, task.oracle(0.4)  # floats: the sampler is the slow part
    counts: dict = {}
    for _ in range(n):
        out = dec.best_of_n_generation(fast, 4, 3, score, rng).tokens
        counts[out] = counts.get(out, 0) + 1
    exact = dec.best_of_n_law(fast, 4, 3, score)
    # E TV <= sqrt(m / n) / 2 with m = len(exact) outcomes
    assert total_variation({s: c / n for s, c in counts.items()}, exact) < 2 * (len(exact) / n) ** 0.5 / 2
    out = dec.top_p_generation(oracle, 4, 0, rng)
    assert out.tokens == next(iter(greedy)) and out.queries == 4
    with pytest.raises(ValueError, match="top_p"):
        dec.nucleus((0.5, 0.5), 1.5)
