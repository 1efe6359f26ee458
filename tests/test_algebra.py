"""Library tests: transformation semigroups, permutation groups, solvability, holonomy API."""

from __future__ import annotations

import numpy as np
import pytest

from theorylab.algebra import (
    NotSolvableError,
    check_solvable,
    holonomy_decomposition,
    is_aperiodic,
    is_group,
    is_permutation_reset,
    is_solvable,
    maximal_subgroups,
    permutation_group,
    transformation_semigroup,
)
from theorylab.algebra.groups import PermutationGroup
from theorylab.algebra.verify import all_words, exhaustive_length
from theorylab.automata import Semiautomaton, zoo


def test_semigroup_elements_words_and_cayley_graph():
    ff = zoo.flipflop()
    S = transformation_semigroup(ff)
    assert S.size == len(S) == 3 and S.contains_identity
    for i, w in enumerate(S.words):
        assert np.array_equal(S.elements[i], ff.transformation(w))
        for s in range(ff.n_symbols):
            assert np.array_equal(S.elements[S.right[i, s]], ff.delta[s][S.elements[i]])
    assert [0, 0] in S and S.index([1, 1]) >= 0
    assert sorted(S.ranks.tolist()) == [1, 1, 2]


def test_identity_only_if_realised():
    const = Semiautomaton(np.array([[0, 0]]))
    S = transformation_semigroup(const)
    assert S.size == 1 and not S.contains_identity
    assert is_group(const)  # {constant map} is the trivial group
    assert not is_group(zoo.flipflop())
    assert is_group(zoo.quaternion())


def test_aperiodic_and_permutation_reset():
    assert is_aperiodic(zoo.gridworld(5)) and is_aperiodic(zoo.dyck(2, 2))
    assert not is_aperiodic(zoo.parity())
    assert is_permutation_reset(zoo.flipflop()) and is_permutation_reset(zoo.parity())
    assert not is_permutation_reset(zoo.gridworld(3))


def test_maximal_subgroups_of_t3():
    t3 = Semiautomaton(np.array([[1, 2, 0], [1, 0, 2], [0, 0, 2]]))
    orders = sorted({(len(G.image), G.order) for G in maximal_subgroups(t3)})
    assert orders == [(1, 1), (2, 2), (3, 6)]


def test_check_solvable_message():
    with pytest.raises(NotSolvableError, match=r"order 60.*A5") as info:
        check_solvable(zoo.alternating(5, regular=False))
    assert info.value.subgroup.order == 60
    assert isinstance(info.value, ValueError)
    check_solvable(zoo.symmetric(4))  # no error


def test_semigroup_size_limit_and_bad_input():
    with pytest.raises(ValueError, match="more than"):
        transformation_semigroup(zoo.symmetric(5), max_size=100)
    assert transformation_semigroup(np.eye(2, dtype=int)).size == 2  # a plain transition table is accepted
    with pytest.raises(ValueError, match="2-D|shape|ndim"):
        transformation_semigroup(np.array([0, 1]))
    with pytest.raises(TypeError):
        is_solvable("parity")
    with pytest.raises(TypeError):
        holonomy_decomposition(3)


def test_permutation_group_api():
    G = permutation_group(np.array([[1, 2, 0]]))
    assert G.order == 3 and G.is_abelian() and G.is_solvable()
    assert G.index([0, 1, 2]) == 0
    assert np.array_equal(G.table[G.inverse, np.arange(3)], np.zeros(3, dtype=int))
    assert [f.name for f in G.composition_factors()] == ["C3"]
    assert len(G.conjugacy_classes()) == 3
    with pytest.raises(ValueError):
        permutation_group(np.array([[0, 0]]))
    with pytest.raises(TypeError):
        permutation_group(np.array([[0.0, 1.0]]))
    with pytest.raises(ValueError):
        permutation_group(np.array([[1, 0]]), max_order=1)
    with pytest.raises(ValueError):
        G.maximal_normal_subgroup(np.array([0]))


def test_holonomy_api():
    grid = zoo.gridworld(4)
    c = holonomy_decomposition(grid)
    assert c.n_levels == 3 and c.levels == ((0,), (1,), (2,))
    comp = c.components[0]
    assert comp.level == 1 and comp.rep == frozenset(range(4)) and comp.n_states == 2
    assert comp.group.order == 1 and set(comp.resets.values()) <= {0, 1}
    x0 = c.encode(2)
    assert c.decode(x0[None, :]).tolist() == [2]
    w = grid.sample(np.random.default_rng(0), 4, 10)
    x = c.run(w, q0=2)
    assert x.shape == (4, 10, c.n_components)
    assert np.array_equal(c.decode(x), grid.run(w, 2))
    assert c.dependency(0, (), 1) == c.inputs[0, 1, 0]
    with pytest.raises(ValueError):
        c.decode(np.full((1, c.n_components), 7))
    with pytest.raises(ValueError):
        c.encode(4)
    with pytest.raises(ValueError):
        c.run_componentwise(w, convention="future")


def test_holonomy_single_state_and_permutation():
    one = holonomy_decomposition(Semiautomaton(np.array([[0]])))
    assert one.n_components == 0 and one.simulate(np.zeros((2, 3), dtype=int)).tolist() == [[0] * 3] * 2
    cyc = holonomy_decomposition(zoo.cyclic(5))
    assert cyc.n_components == 1 and cyc.components[0].group.order == 5


def test_verify_helpers():
    assert all_words(2, 3).shape == (8, 3)
    assert exhaustive_length(2, budget=1000) == 9
    with pytest.raises(ValueError):
        all_words(2, 0)


def test_counterexample_generators_registered():
    from theorylab.counterexamples import generate

    fn17 = generate("automata.fn17_smallest_nonsolvable")
    assert fn17["delta"].shape == (3, 5) and int(fn17["group_order"]) == 60
    assert not is_solvable(Semiautomaton(fn17["delta"]))
    bounds = generate("automata.thm15_bounds")
    assert set(bounds) == {
        "delta_more_levels_than_states",
        "delta_component_larger_than_Q",
        "delta_group_divisor_not_subgroup",
    }


def test_semigroup_size_backends():
    from theorylab.algebra import semigroup_size

    t5 = Semiautomaton(np.array([[1, 2, 3, 4, 0], [1, 0, 2, 3, 4], [0, 0, 2, 3, 4]]))
    assert semigroup_size(t5, backend="theorylab") == 3125
    assert semigroup_size(t5) == 3125  # libsemigroups when installed
    with pytest.raises(ValueError):
        semigroup_size(t5, backend="gap")


# ------------------------------------------------------------------ is_group (regression + independent definition)


def _is_group_by_definition(S) -> bool:
    """Group axioms checked by brute force on the element set: an identity e (e s = s e = s) and inverses."""
    elems = [tuple(int(v) for v in row) for row in S.elements]
    E = set(elems)

    def mul(f, g):  # apply f, then g
        return tuple(g[x] for x in f)

    ids = [e for e in elems if all(mul(e, s) == s == mul(s, e) for s in elems)]
    if not ids:
        return False
    e = ids[0]
    return all(any(mul(s, t) == e == mul(t, s) for t in E) for s in elems)


@pytest.mark.parametrize("delta", [[[2, 2, 0]], [[1, 0, 0]]])
def test_is_group_regression_non_permutation_groups(delta):
    """{f, f^2} with f^3 = f is C2 although f is not a permutation (the image is compared as a set)."""
    aut = Semiautomaton(np.array(delta))
    S = transformation_semigroup(aut)
    assert S.size == 2 and _is_group_by_definition(S)
    assert is_group(aut)


def _group_or_not_deltas():
    from hypothesis import strategies as st

    @st.composite
    def draw(draw):
        n = draw(st.integers(2, 5))
        k = draw(st.integers(1, 3))
        kind = draw(st.sampled_from(["h_class", "h_class", "permutations", "any"]))
        if kind == "any":
            return np.array(
                draw(
                    st.lists(st.lists(st.integers(0, n - 1), min_size=n, max_size=n), min_size=k, max_size=k)
                )
            )
        if kind == "permutations":
            return np.array([draw(st.permutations(range(n))) for _ in range(k)])
        # generators in the H-class of an idempotent e with image I (|I| < n): pi o e, pi permuting I
        size = draw(st.integers(1, n - 1))
        image = sorted(draw(st.permutations(range(n)))[:size])
        e = [q if q in image else image[draw(st.integers(0, size - 1))] for q in range(n)]
        rows = []
        for _ in range(k):
            perm = dict(zip(image, draw(st.permutations(image)), strict=True))
            rows.append([perm[e[q]] for q in range(n)])
        return np.array(rows)

    return draw()


def test_is_group_matches_the_definition():
    from hypothesis import given

    @given(_group_or_not_deltas())
    def check(delta):
        S = transformation_semigroup(Semiautomaton(delta))
        assert is_group(S) == _is_group_by_definition(S)

    check()


# ------------------------------------------------------------------ permutation groups without a Cayley table


def test_permutation_group_bad_input():
    with pytest.raises(ValueError, match="empty generator list"):
        permutation_group([])
    with pytest.raises(ValueError, match="empty generator list"):
        permutation_group(np.zeros((0, 3), dtype=int))
    with pytest.raises(ValueError, match="mixed degrees"):
        permutation_group([[1, 0], [1, 2, 0]])
    with pytest.raises(ValueError, match=r"generator 1 = \[0, 0, 1\] is not a permutation"):
        permutation_group([[1, 2, 0], [0, 0, 1]])
    with pytest.raises(TypeError, match="integer"):
        permutation_group([[1.0, 0.0]])
    with pytest.raises(ValueError, match="not of scalars"):
        permutation_group([1, 0])
    with pytest.raises(ValueError, match="shape"):
        permutation_group(np.array([1, 0]))
    with pytest.raises(ValueError, match="permutation of range"):
        permutation_group([[1, 0]]).contains([0, 0])


def _sym(n):
    return [[1, 0] + list(range(2, n)), list(range(1, n)) + [0]]


def test_large_groups_without_a_table():
    from theorylab.algebra import CAYLEY_LIMIT, GroupTooLargeError

    S8 = permutation_group(_sym(8))
    assert S8.order == 40320 and not S8.is_solvable()
    assert [f.name for f in S8.composition_factors()] == ["C2", "A8"]
    assert S8.contains(list(range(8))[::-1])
    A8 = S8.derived_subgroups()[1]
    assert (
        A8.order == 20160
        and not A8.contains([1, 0, 2, 3, 4, 5, 6, 7])
        and A8.contains([1, 2, 0, 3, 4, 5, 6, 7])
    )
    with pytest.raises(GroupTooLargeError, match=f"CAYLEY_LIMIT = {CAYLEY_LIMIT}"):
        S8.table  # noqa: B018
    # solvable, order 24^3 = 13824: S4 on three blocks of 4 points
    gens = [[b * 4 + g[i] for b in range(3) for i in range(4)] for g in _sym(4)]
    gens += [
        [(b * 4 + (g[i] if b == c else i)) for b in range(3) for i in range(4)]
        for c in range(3)
        for g in _sym(4)
    ]
    G = permutation_group(gens)
    assert G.order == 13824 and G.is_solvable()
    assert sorted(f.order for f in G.composition_factors()) == [2] * 9 + [3] * 3


def test_compile_constant_depth_names_the_group_size_limit():
    """A solvable permutation automaton whose group (S4^3, order 13824) is too large to tabulate: a clear error
    naming the limit, raised before anything is enumerated."""
    import time

    from theorylab.algebra import CAYLEY_LIMIT, GroupTooLargeError
    from theorylab.automata.constructions import compile_constant_depth

    gens = [
        [(b * 4 + (g[i] if b == c else i)) for b in range(3) for i in range(4)]
        for c in range(3)
        for g in _sym(4)
    ]
    aut = Semiautomaton(np.array(gens), name="S4^3")
    assert permutation_group(gens).is_solvable()
    t = time.perf_counter()
    with pytest.raises(
        GroupTooLargeError, match=rf"solvable permutation group of order 13824.*CAYLEY_LIMIT = {CAYLEY_LIMIT}"
    ):
        compile_constant_depth(aut, 8)
    assert time.perf_counter() - t < 5.0
    # a non-solvable group above the limit is reported as such (S7 on 7 points, order 5040)
    from theorylab.automata.constructions import NotSolvableError as CompileNotSolvable

    with pytest.raises(CompileNotSolvable, match="non-solvable permutation group of order 5040"):
        compile_constant_depth(Semiautomaton(np.array(_sym(7))), 8)


def test_membership_agrees_with_enumeration():
    rng = np.random.default_rng(0)
    for n in (4, 5, 6):
        gens = np.array([rng.permutation(n) for _ in range(2)])
        G = permutation_group(gens)
        members = {tuple(r) for r in G.elements.tolist()}
        assert len(members) == G.order
        for _ in range(40):
            p = rng.permutation(n)
            assert G.contains(p) == (tuple(p.tolist()) in members)


def test_is_permutation_reset_takes_a_table_or_an_automaton():
    assert is_permutation_reset(np.array([[1, 0], [0, 0]])) and not is_permutation_reset(
        np.array([[0, 0, 1]])
    )
    with pytest.raises(TypeError, match="transition table"):
        is_permutation_reset([[0.5, 1.0]])


def test_cascade_from_functions_bad_input():
    from theorylab.algebra import Cascade
    from theorylab.automata.constructions import compile_cascade

    par = np.array([[0, 1], [1, 0]])
    with pytest.raises(ValueError, match="permutations or constant maps"):
        Cascade.from_functions((np.array([[0, 0, 1]]),), (1,), lambda i, x, a: 0, (0,), lambda x: x[0], 1)
    with pytest.raises(ValueError, match="one entry per component"):
        Cascade.from_functions((par,), (1, 2), lambda i, x, a: a, (0,), lambda x: x[0], 2)
    with pytest.raises(
        ValueError, match="does not commute"
    ):  # x0 AND x1 is not a function of (x0 AND x1, symbol)
        Cascade.from_functions(
            (par, par), (1, 2), lambda i, x, a: a if i == 0 else 1, (0, 0), lambda x: x[0] * x[1], 2
        )
    with pytest.raises(TypeError, match="Cascade"):
        compile_cascade("not a cascade", 4)
    c = Cascade.from_functions((par,), (7,), lambda i, x, a: a, (1,), lambda x: x[0], 2)
    assert c.levels == ((0,),) and c.encode(1).tolist() == [1] and c.step((1,), 1) == (0,)


def _semigroup_cases():
    """Direct-address codes (<= 7 states), sorted codes (8-15 states), tuples (> 15 states), duplicate and
    constant generators."""
    cases = [zoo.random(n, k, seed=s) for n, k, s in [(3, 2, 0), (5, 3, 1), (6, 2, 2), (7, 2, 2), (8, 3, 0)]]
    cases += [zoo.random(9, 2, seed=0), zoo.gridworld(9), zoo.dyck(2, 4), zoo.alternating(4)]
    cases += [Semiautomaton(np.array([[1, 0, 2], [1, 0, 2], [0, 0, 1]])), Semiautomaton(np.array([[0, 0]]))]
    return cases


# the enumeration paths against the plain queue: tests/test_semigroup_paths.py


def test_libsemigroups_backend_gives_the_same_object():
    pytest.importorskip("libsemigroups_pybind11")
    for aut in _semigroup_cases():
        A = transformation_semigroup(aut)
        B = transformation_semigroup(aut, backend="libsemigroups")
        assert np.array_equal(A.elements, B.elements) and np.array_equal(A.right, B.right), aut
        assert tuple(A.words) == tuple(B.words)
    with pytest.raises(ValueError, match="more than 1000 elements"):
        transformation_semigroup(zoo.random(7, 3, seed=0), max_size=1000, backend="libsemigroups")
    with pytest.raises(ValueError, match="backend"):
        transformation_semigroup(zoo.parity(), backend="gap")


# ------------------------------------------------------------------ the shape of the house


def test_algebra_never_imports_automata():
    """``theorylab.algebra`` is the floor ``theorylab.automata`` builds on: no module of it imports the automata
    family, lazily or not (source scan), and using it end to end loads none (a fresh interpreter)."""
    import ast
    import subprocess
    import sys
    from pathlib import Path

    import theorylab.algebra

    offenders = []
    for path in Path(theorylab.algebra.__file__).parent.glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else []
            names += [node.module or ""] if isinstance(node, ast.ImportFrom) else []
            offenders += [f"{path.name}: {n}" for n in names if n.startswith("theorylab.automata")]
    assert offenders == []
    code = (
        "import sys, numpy as np\n"
        "from theorylab.algebra import transformation_semigroup, holonomy_decomposition, is_solvable\n"
        "from theorylab.algebra.counterexamples import holonomy_bound_examples, smallest_nonsolvable\n"
        "d = np.array([[1, 2, 0], [0, 0, 2]])\n"
        "assert transformation_semigroup(d).size == 24 and holonomy_decomposition(d).n_components >= 1\n"
        "assert not is_solvable(smallest_nonsolvable()) and len(holonomy_bound_examples()) == 3\n"
        "loaded = sorted(m for m in sys.modules if m.startswith('theorylab.automata'))\n"
        "assert not loaded, loaded\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]


def test_algebra_counterexample_tables_are_the_zoo_tables():
    from theorylab.algebra.counterexamples import holonomy_bound_examples, smallest_nonsolvable

    assert np.array_equal(smallest_nonsolvable(), zoo.alternating(5, regular=False).delta)
    ex = holonomy_bound_examples()
    assert np.array_equal(ex["delta_more_levels_than_states"], zoo.random(5, 2, seed=14).delta)
    assert np.array_equal(ex["delta_group_divisor_not_subgroup"][:2], zoo.quaternion().delta)


def test_algebra_takes_plain_transition_tables():
    d = np.array([[1, 2, 0], [0, 0, 2]])
    assert np.array_equal(
        transformation_semigroup(d).elements, transformation_semigroup(Semiautomaton(d)).elements
    )
    assert transformation_semigroup([[1, 0], [0, 0]]).size == 4
    with pytest.raises(TypeError, match="transition table"):
        transformation_semigroup("abc")
    with pytest.raises(TypeError, match="integer"):
        transformation_semigroup(np.array([[0.5, 1.0]]))


def test_exhaustive_simulation_check_equals_running_every_word():
    """verify_cascade's word check (the word tree level by level, every start at once) finds the same first
    failing start state as running every word of length ell from each start state."""
    import dataclasses

    from theorylab.algebra.verify import _first_unsimulated_start

    def by_running(c, ell):
        words = all_words(c.automaton.n_symbols, ell)
        for q0 in range(c.automaton.n_states):
            if not np.array_equal(c.simulate(words, q0), c.automaton.run(words, q0)):
                return q0
        return None

    rng = np.random.default_rng(31)
    n_wrong = 0
    for aut in (zoo.gridworld(4), zoo.flipflop(), zoo.dyck(1, 3), zoo.random(5, 2, seed=3)):
        c = holonomy_decomposition(aut)
        assert _first_unsimulated_start(c, 4) is None and by_running(c, 4) is None
        for _ in range(5):  # one transition entry moved elsewhere
            tr = c.transition.copy()
            i, s = int(rng.integers(tr.shape[0])), int(rng.integers(tr.shape[1]))
            tr[i, s] = (tr[i, s] + 1 + int(rng.integers(tr.shape[0] - 1))) % tr.shape[0]
            bad = dataclasses.replace(c, transition=tr)
            got = _first_unsimulated_start(bad, 4)
            assert got == by_running(bad, 4)
            n_wrong += got is not None
    assert n_wrong >= 5  # the mutants are mostly caught


def _greedy_generators_by_sifting(elements: np.ndarray) -> list[list[int]]:
    """Row 0, then each row not in the group of the rows kept so far (membership by sympy's sifting)."""
    from sympy.combinatorics import Permutation
    from sympy.combinatorics import PermutationGroup as SympyGroup

    gens = [elements[0].tolist()]
    for row in elements[1:]:
        if len(gens) == 1 or not SympyGroup([Permutation(g) for g in gens]).contains(
            Permutation(row.tolist())
        ):
            gens.append(row.tolist())
    return gens


def test_from_elements_keeps_the_greedy_generators_and_rejects_non_groups():
    """``PermutationGroup.from_elements`` on shuffled subgroups of S_n: the generators are the rows not in the
    group of the earlier ones (as sifting finds), the order is the number of rows; a subgroup with one element
    removed, or with a foreign permutation in place of one, is not closed and raises."""
    rng = np.random.default_rng(2)
    for n, k in [(4, 2), (5, 2), (5, 3), (4, 1), (3, 1), (1, 1)]:
        G = PermutationGroup(np.array([rng.permutation(n) for _ in range(k)]))
        el = G.elements[np.concatenate([[0], 1 + rng.permutation(G.order - 1)])]
        H = PermutationGroup.from_elements(el)
        assert H.generators.tolist() == _greedy_generators_by_sifting(el)
        assert H.order == len(el) == G.order and H.sympy.order() == G.order
        assert np.array_equal(H.elements, el)
        if len(el) > 2:
            with pytest.raises(ValueError, match="not closed"):
                PermutationGroup.from_elements(np.delete(el, 1 + int(rng.integers(len(el) - 1)), axis=0))
    with pytest.raises(ValueError, match="not closed"):
        PermutationGroup.from_elements(np.array([[0, 1, 2], [1, 2, 0]]))
    with pytest.raises(ValueError, match=r"^every element must be a permutation of range\(n\)$"):
        PermutationGroup.from_elements(np.array([[0, 1], [0, 0]]))
