"""Claim checks of Liu §3.4's definitions (shortcut, mod-n counter, memory, cascade product, permutation-reset,
canonical group semiautomaton), Theorem 13's algebraic core (Barrington's commutator trick) and Lemma 23 (the
layer-2 head values of the gridworld construction): each library object against a from-scratch brute force of
the printed formula, with a misreading that the same verdict rejects."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
import sympy as sp
from hypothesis import given, settings
from hypothesis import strategies as st

from theorylab.algebra import (
    Cascade,
    Semiautomaton,
    holonomy_decomposition,
    is_permutation_reset,
    permutation_reset_cascade,
    transformation_semigroup,
)
from theorylab.algebra.barrington import and_program, barrington_witness, evaluate, mul
from theorylab.automata import compile_constant_depth, compile_log_depth, zoo
from theorylab.automata.constructions.base import NotSolvableError
from theorylab.automata.shortcuts import is_shortcut, lemma23_heads, lemma23_window, log_depth
from theorylab.testing import rejects, trivial

T_ = sp.Symbol("T", positive=True, integer=True)


def _all_words(n_symbols: int, T: int) -> np.ndarray:
    return np.array(list(itertools.product(range(n_symbols), repeat=T)), dtype=np.int64)


# ---------------------------------------------------------------- Definition 3: shortcuts


@pytest.mark.claim("automata.def3_shortcut", tier="exact")
def test_def3_log_depth_family_is_a_shortcut(measure) -> None:
    aut = zoo.cyclic(3)
    depths = {}
    for T in (1, 2, 3, 4, 5, 8, 9, 16, 17, 64):
        net = compile_log_depth(aut, T)
        if T == 64:  # only the depth at T = 64 (a forward pass there costs seconds)
            depths[T] = net.depth
            continue
        words = _all_words(3, T) if T <= 4 else np.random.default_rng(T).integers(0, 3, (4, T))
        assert np.array_equal(net.forward(words), aut.run(words))  # f_T simulates A at length T
        depths[T] = net.depth
        assert net.depth == log_depth(T) <= 1 + np.log2(T)  # max(1, ceil(log2 T))
    assert [depths[T] for T in (1, 2, 3, 4, 5, 8, 9, 16, 17, 64)] == [1, 1, 2, 2, 3, 3, 4, 4, 5, 6]
    assert compile_constant_depth(aut, 64).depth == 1  # Theorem 11's family: constant depth
    assert is_shortcut(1 + sp.log(T_, 2)) and is_shortcut(sp.Integer(2))
    assert is_shortcut(sp.sqrt(T_))  # "chunks" of sqrt(T) transitions per layer: a (wide) shortcut too
    measure("log_depth_T64", depths[64])
    rejects(lambda: is_shortcut(T_ + sp.Symbol("n")), r"depth must depend on at most one symbol")
    rejects(lambda: is_shortcut("log(T)"), r"depth must be a sympy expression", TypeError)
    rejects(lambda: log_depth(0), r"T must be an int >= 1")


@pytest.mark.claim("automata.def3_shortcut", tier="exact", control=True)
def test_def3_control_iterative_solution_is_not_a_shortcut() -> None:
    # the RNN-like solution (one transition per layer, depth T) and chunks of a constant size are not o(T)
    assert not is_shortcut(T_) and not is_shortcut(T_ / 2) and not is_shortcut(T_ - sp.log(T_))


# ---------------------------------------------------------------- Definitions 4 and 5: counter, memory


def _counter_brute(n: int) -> np.ndarray:
    return np.array([[(q + s) % n for q in range(n)] for s in range(n)])  # delta[sigma, q] = q + sigma mod n


def _memory_brute(n: int) -> np.ndarray:
    # Sigma = Q ∪ {⊥} with ⊥ first: delta(q, ⊥) = q, delta(q, sigma) = sigma
    return np.array([[q for q in range(n)]] + [[s for _ in range(n)] for s in range(n)])


@pytest.mark.claim("automata.def4_def5_atoms", tier="exact")
def test_def4_def5_counter_and_memory_tables(measure) -> None:
    for n in range(1, 9):
        c, m = zoo.cyclic(n), zoo.memory(n)
        assert np.array_equal(c.delta, _counter_brute(n)) and c.symbol_labels == tuple(range(n))
        assert np.array_equal(m.delta, _memory_brute(n))
        assert m.symbol_labels[0] == "⊥" and m.symbol_labels[1:] == tuple(f"write {q}" for q in range(n))
    # T(counter) = Z_n (n elements); T(memory) = n constants plus the identity (n + 1 elements)
    sizes = [
        (len(transformation_semigroup(zoo.cyclic(n))), len(transformation_semigroup(zoo.memory(n))))
        for n in (2, 3, 5)
    ]
    assert sizes == [(2, 3), (3, 4), (5, 6)]
    measure("semigroup_sizes_counter_memory_n235", [s for pair in sizes for s in pair])
    rejects(lambda: zoo.cyclic(0), r"n must be >= 1")
    rejects(lambda: zoo.memory(1.5), r"n must be an int", TypeError)


@pytest.mark.claim("automata.def4_def5_atoms", tier="exact", control=True)
def test_def4_def5_control_misindexed_symbols() -> None:
    # 1-indexed symbols (sigma in {1..n}) and "symbol q writes q" (no ⊥ row first) differ from the tables
    for n in (2, 3, 4):
        shifted = np.array([[(q + s + 1) % n for q in range(n)] for s in range(n)])
        assert not np.array_equal(zoo.cyclic(n).delta, shifted)
        no_bot_first = np.array([[s for _ in range(n)] for s in range(n)] + [list(range(n))])
        assert not np.array_equal(zoo.memory(n).delta, no_bot_first)


# ---------------------------------------------------------------- Definition 6: cascade product


def _cascade_brute(acts, phi, n_symbols: int) -> dict:
    """Def 6 literally: delta((q1..qn), sigma)_i = delta_i(q_i, sigma_i), sigma_1 = sigma, sigma_i =
    phi_i(q_1..q_{i-1}, sigma) on the *current* (pre-transition) states."""
    table = {}
    for q in itertools.product(*[range(a.shape[1]) for a in acts]):
        for s in range(n_symbols):
            ins = [s] + [phi(i, q[:i], s) for i in range(1, len(acts))]
            table[q, s] = tuple(int(acts[i][ins[i], q[i]]) for i in range(len(acts)))
    return table


XOR = np.array([[0, 1], [1, 0]])  # input 0 keeps, input 1 flips: C_2


def _carry(i: int, higher: tuple, s: int) -> int:
    return int(all(higher) and s == 1)  # the binary counter: bit i flips iff all lower bits are 1 and s = 1


@pytest.mark.claim("automata.def6_cascade", tier="exact")
def test_def6_cascade_product_matches_the_printed_formula(measure) -> None:
    for n in (2, 3):  # the mod-2^n counter as a cascade of n copies of C_2
        acts = [XOR] * n
        casc = Cascade.from_functions(
            acts,
            list(range(1, n + 1)),
            lambda i, x, s: s if i == 0 else _carry(i, tuple(x[:i]), s),
            (0,) * n,
            lambda x: sum(int(b) << j for j, b in enumerate(x)),
            n_symbols=2,
        )
        brute = _cascade_brute(acts, _carry, 2)
        for r, x in enumerate(casc.states):
            for s in range(2):
                assert tuple(casc.states[casc.transition[r, s]]) == brute[tuple(int(v) for v in x), s]
        assert np.array_equal(casc.automaton.delta[1], (np.arange(2**n) + 1) % 2**n)  # counts mod 2^n
        assert casc.n_levels == n and len(casc.states) == 2**n
    words = _all_words(2, 6)
    assert np.array_equal(casc.simulate(words), (np.cumsum(words, axis=1)) % 8)
    measure("cascade_states_mod8", len(casc.states))
    rejects(
        lambda: Cascade.from_functions([np.array([[0, 0, 2]])], [1], lambda i, x, s: s, (0,), int, 1),
        r"component 0: its actions must be rows that are permutations or constant maps",
    )


@pytest.mark.claim("automata.def6_cascade", tier="exact", control=True)
def test_def6_control_updated_states_convention() -> None:
    # feeding phi the *updated* states of the earlier components (a misreading) is not the counter
    def step_updated(q: tuple, s: int) -> tuple:
        out = []
        for i in range(len(q)):
            si = s if i == 0 else _carry(i, tuple(out), s)
            out.append(int(XOR[si, q[i]]))
        return tuple(out)

    brute = _cascade_brute([XOR, XOR], _carry, 2)
    assert any(step_updated(q, s) != brute[q, s] for q in itertools.product((0, 1), repeat=2) for s in (0, 1))


# ---------------------------------------------------------------- Definition 7: permutation-reset


def _is_perm_or_const(row) -> bool:
    return sorted(row) == list(range(len(row))) or len(set(row)) == 1


@pytest.mark.claim("automata.def7_permutation_reset", tier="exact")
def test_def7_permutation_reset_on_all_small_tables(measure) -> None:
    maps = list(itertools.product(range(3), repeat=3))  # all 27 maps of 3 states
    count = 0
    for a, b in itertools.product(maps, repeat=2):
        d = np.array([a, b])
        brute = _is_perm_or_const(a) and _is_perm_or_const(b)
        assert is_permutation_reset(d) == brute
        count += brute
    assert count == 81  # (3! + 3)^2 of the 27^2 two-symbol tables
    measure("permutation_reset_tables_3x2", count)
    # the permutation group is generated by the bijections only: C_3 with a reset has group C_3
    d = np.array([[1, 2, 0], [0, 0, 0]])
    assert permutation_reset_cascade(Semiautomaton(d)).components[0].group.order == 3
    assert permutation_reset_cascade(zoo.flipflop()).components[0].group.order == 1
    rejects(lambda: is_permutation_reset(np.array([[0.0, 1.0]])), r"expected a Semiautomaton", TypeError)


@pytest.mark.claim("automata.def7_permutation_reset", tier="exact", control=True)
def test_def7_control_idempotent_misreading() -> None:
    # "bijection or idempotent" (e.g. a partial reset 0,0,2) is a different class; Def 7 rejects such tables
    d = np.array([[1, 2, 0], [0, 0, 2]])
    assert not is_permutation_reset(d)
    f = d[1]
    assert np.array_equal(f[f], f)  # idempotent, neither a bijection nor constant


# ---------------------------------------------------------------- Definition 9: canonical group semiautomaton


@pytest.mark.claim("automata.def9_canonical_group", tier="exact")
def test_def9_canonical_group_semiautomaton(measure) -> None:
    S3 = sorted(itertools.permutations(range(3)))
    aut = zoo.group_semiautomaton(S3)  # Sigma = G
    assert aut.state_labels == tuple(S3) and aut.state_labels[0] == (0, 1, 2)  # q0 = e is state 0
    idx = {g: i for i, g in enumerate(S3)}
    brute = np.array([[idx[mul(h, g)] for g in S3] for h in S3])  # delta(g, h) = h . g
    assert np.array_equal(aut.delta, brute)
    words = _all_words(6, 3)
    states = aut.run(words, q0=0)
    for w, q in zip(words, states, strict=True):
        prod = (0, 1, 2)
        for t, s in enumerate(w):
            prod = mul(S3[s], prod)  # sigma_t ... sigma_1
            assert q[t] == idx[prod]
    measure("canonical_S3_states", aut.n_states)
    rejects(lambda: zoo.group_semiautomaton([(0, 0, 1)]), r"generator \(0, 0, 1\) is not a permutation")
    rejects(lambda: zoo.group_semiautomaton(S3, side="middle"), r"side must be")


@pytest.mark.claim("automata.def9_canonical_group", tier="exact", control=True)
def test_def9_control_right_multiplication() -> None:
    # delta(g, h) = g . h (the state sigma_1 ... sigma_t) differs on the non-abelian S_3
    S3 = sorted(itertools.permutations(range(3)))
    assert not np.array_equal(
        zoo.group_semiautomaton(S3, side="right").delta, zoo.group_semiautomaton(S3).delta
    )


# ---------------------------------------------------------------- Theorem 13: Barrington's core


@pytest.mark.claim("automata.thm13_barrington", tier="exact")
def test_thm13_commutator_trick_in_A5(measure) -> None:
    A5 = zoo.alternating(5)
    w = barrington_witness(A5.state_labels)
    assert w is not None
    g = w[0]
    e = tuple(range(5))
    # Def-9 semiautomaton of A5 with Sigma = G: simulating it decides AND of 2^d bits (length 4^d)
    canon = zoo.group_semiautomaton(A5.state_labels)
    idx = {p: i for i, p in enumerate(canon.state_labels)}
    for d in (1, 2, 3):
        prog = and_program(d, w)
        assert len(prog) == 4**d
        for bits in itertools.product((0, 1), repeat=2**d):
            out = evaluate(prog, bits)
            assert out == (g if all(bits) else e)
            if d == 2:  # the state after the reversed word is p_1 ... p_L (left multiplication, Def 9)
                word = [idx[p1 if bits[i] else p0] for i, p0, p1 in reversed(prog)]
                assert canon.state_labels[canon.run(np.array(word))[0, -1]] == out
    measure("and_program_length_d3", len(and_program(3, w)))
    # solvable groups have no witness; the constant-depth compiler refuses A5 (Thm 13 says why)
    d8 = zoo.group_semiautomaton([(1, 2, 3, 0), (0, 3, 2, 1)])  # D_8 on the square's corners
    for solvable in (zoo.symmetric(4), zoo.alternating(4), d8):
        assert barrington_witness(solvable.state_labels) is None
    with pytest.raises(NotSolvableError, match="No constant-depth construction exists unless TC0 = NC1"):
        compile_constant_depth(zoo.alternating(5), 4)
    rejects(lambda: and_program(1, (g, g, g, e, e)), r"witness must satisfy")
    rejects(lambda: barrington_witness([(0, 1), (0, 1)]), r"elements must be distinct and closed")


@pytest.mark.claim("automata.thm13_barrington", tier="exact", control=True)
def test_thm13_control_solvable_group_cannot_compute_and() -> None:
    # in S4 (solvable) the naive "witness" alpha = beta = g gives [g, g] = e: the program is constant, not AND
    g = (1, 2, 3, 0)
    e = (0, 1, 2, 3)
    prog = [(0, e, g), (1, e, g), (0, e, tuple(np.argsort(g))), (1, e, tuple(np.argsort(g)))]
    outs = {bits: evaluate(prog, bits) for bits in itertools.product((0, 1), repeat=2)}
    assert outs[(1, 1)] == e  # AND(1, 1) is not told from AND(0, 0)


# ---------------------------------------------------------------- Lemma 23: the layer-2 head values


@pytest.mark.claim("automata.lemma23_heads", tier="exact")
def test_lemma23_on_all_short_walks(measure) -> None:
    checked = degenerate = 0
    for L in range(1, 6):
        for moves in itertools.product((-1, 0, 1), repeat=L):
            m = np.array(moves)
            for S in (1, 2):
                x = lemma23_heads(m, L, S)
                z = np.cumsum(m)
                window = lemma23_window(x, S)
                if np.all(z == z[-1]):  # the prefix sum never moved: only head S matches, a = b = S
                    assert window is None and np.all(x == x[S])
                    degenerate += 1
                    continue
                assert window is not None
                # the matched heads are the reached values z_t + (s - S): a contiguous range around S
                assert window == (max(0, S - int(z[-1] - z.min())), min(2 * S, S + int(z.max() - z[-1])))
                assert x[S] == np.log(2 * L - L)  # head S matches t itself
                checked += 1
    assert (checked, degenerate) == (696, 30)
    # with the construction's S + 1 leading L pads the prefix sum always moves: a < b always
    for moves in itertools.product((-1, 0, 1), repeat=3):
        m = np.r_[[-1] * 3, moves]
        assert all(lemma23_window(lemma23_heads(m, t, 2), 2) is not None for t in range(4, 7))
    measure("lemma23_walks_checked", checked)
    rejects(lambda: lemma23_heads([2, 0], 1, 1), r"moves must be a 1-d sequence")
    rejects(lambda: lemma23_heads([1, 0], 3, 1), r"t must be an int in \[1, 2\]")


@pytest.mark.claim("automata.lemma23_heads", tier="exact", control=True)
def test_lemma23_control_first_match() -> None:
    # heads selecting the *first* matching position (not the last) break the monotone shape
    m = np.array([1, -1, 1, 1, -1])
    z = np.cumsum(m)
    x = np.array(
        [
            np.log(10 - (np.flatnonzero(z == z[-1] + o)[0] + 1)) if (z == z[-1] + o).any() else np.log(5)
            for o in (-1, 0, 1)
        ]
    )
    assert lemma23_window(x, 1) is None
    assert lemma23_window(lemma23_heads(m, 5, 1), 1) == (0, 2)


@given(seed=st.integers(0, 2**32 - 1), S=st.integers(1, 4), L=st.integers(3, 40))
@settings(deadline=None, max_examples=40)
@pytest.mark.claim("automata.lemma23_heads", tier="property")
def test_lemma23_property(seed: int, S: int, L: int) -> None:
    rng = np.random.default_rng(seed)
    m = rng.choice([-1, 0, 1], size=L, p=[0.4, 0.2, 0.4])
    t = int(rng.integers(2, L + 1))
    z = np.cumsum(m[:t])
    if trivial(bool(np.all(z == z[-1]))):
        return
    assert lemma23_window(lemma23_heads(m, t, S, T=2 * L), S) is not None


# ---------------------------------------------------------------- Theorem 15 (ii)-(iii): the checkable bounds


def _small_automata() -> dict:
    return {
        "flipflop": zoo.flipflop(),
        "grid4": zoo.gridworld(4),
        "memory3": zoo.memory(3),
        "C4": zoo.cyclic(4),
        "S3": zoo.symmetric(3),
        "dyck1_3": zoo.dyck(1, 3),
        "random4_2_0": zoo.random(4, 2, seed=0),
        "random5_2_3": zoo.random(5, 2, seed=3),
    }


@pytest.mark.claim("automata.thm15_bounds", tier="exact")
def test_thm15_component_count_and_permutation_reset(measure) -> None:
    counts = {}
    for name, aut in _small_automata().items():
        c = holonomy_decomposition(aut)
        assert c.automaton.n_symbols == aut.n_symbols  # (i): the cascade reads the same alphabet
        assert all(
            is_permutation_reset(comp.semiautomaton) for comp in c.components
        )  # (ii): Def 7 components
        assert c.n_components <= 2**aut.n_states  # (iii): at most 2^|Q| components
        words = _all_words(aut.n_symbols, 4)
        for q0 in range(aut.n_states):  # (ii): W o A' simulates A from every start state
            assert np.array_equal(c.simulate(words, q0), aut.run(words, q0))
        counts[name] = c.n_components
    assert counts["random4_2_0"] == 5
    measure("components_random4_2_0", counts["random4_2_0"])


@pytest.mark.claim("automata.thm15_bounds", tier="exact", control=True)
def test_thm15_control_count_bounded_by_states() -> None:
    # the misreading "at most |Q| components" fails: 5 components for a 4-state automaton
    aut = zoo.random(4, 2, seed=0)
    assert holonomy_decomposition(aut).n_components > aut.n_states


@given(seed=st.integers(0, 2**32 - 1))
@settings(deadline=None, max_examples=20)
@pytest.mark.claim("automata.thm13_barrington", tier="property")
def test_thm13_and_program_on_random_inputs(seed: int) -> None:
    # depth 4: the AND of 16 bits by a program of length 256, on inputs with few zeros (the hard cases)
    w = barrington_witness(zoo.alternating(5).state_labels)
    prog = and_program(4, w)
    rng = np.random.default_rng(seed)
    bits = np.ones(16, dtype=int)
    bits[rng.choice(16, size=int(rng.integers(0, 3)), replace=False)] = 0
    trivial(False)
    assert evaluate(prog, bits) == (w[0] if bits.all() else tuple(range(5)))
