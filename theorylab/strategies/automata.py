"""Hypothesis strategies for semiautomata and words (automata family).

The automaton strategies never draw a one-element transformation semigroup (every symbol the same idempotent map),
on which every claim of the family holds for no reason, and can be asked to draw a given share of non-solvable
automata (``nonsolvable``): the symbols then contain generators of $A_5$ or $S_5$ acting on 5 of the states, so
$A_5$ divides $\\mathcal T(\\mathcal A)$ (the subsemigroup they generate maps onto the group by restriction to those
5 states) and the automaton is not solvable, whatever the other symbols do. Transition tables come from a drawn
seed (uniform tables), so that hypothesis's preference for small integers does not make them constant maps.
"""

from __future__ import annotations

import numpy as np
from hypothesis import strategies as st

from theorylab.automata.semiautomaton import Semiautomaton

__all__ = [
    "semiautomata",
    "permutation_semiautomata",
    "permutation_reset_semiautomata",
    "words",
    "automaton_and_words",
    "one_element_semigroup",
    "NONSOLVABLE_GENERATORS",
]

#: Generators on 5 points: $A_5 = \langle (0\,1\,2), (0\,1\,2\,3\,4)\rangle$, $S_5 = \langle (0\,1), (0\,1\,2\,3\,4)\rangle$.
NONSOLVABLE_GENERATORS = {
    "A5": ((1, 2, 0, 3, 4), (1, 2, 3, 4, 0)),
    "S5": ((1, 0, 2, 3, 4), (1, 2, 3, 4, 0)),
}


def one_element_semigroup(delta) -> bool:
    """Whether $|\\mathcal T(\\mathcal A)| = 1$: every symbol is the same idempotent map."""
    d = np.asarray(delta)
    return bool((d == d[:1]).all() and np.array_equal(d[0][d[0]], d[0]))


def _nonsolvable_rows(rng: np.random.Generator, n: int, k: int, permutations: bool) -> np.ndarray:
    """``k`` symbols on ``n >= 5`` states, two of which act on a random 5-subset X as generators of A5 or S5
    (elsewhere: identity if ``permutations``, else uniform maps into Q); the others are uniform maps (random
    permutations if ``permutations``). Symbol order is shuffled."""
    gens = NONSOLVABLE_GENERATORS["A5" if rng.random() < 0.5 else "S5"]
    X = rng.permutation(n)[:5]
    rows = []
    for g in gens:
        row = np.arange(n) if permutations else rng.integers(0, n, n)
        row[X] = X[np.array(g)]
        rows.append(row)
    for _ in range(k - 2):
        rows.append(rng.permutation(n) if permutations else rng.integers(0, n, n))
    return np.array(rows, dtype=np.int64)[rng.permutation(k)]


def _seeded(draw) -> np.random.Generator:
    return np.random.default_rng(draw(st.integers(0, 2**32 - 1)))


@st.composite
def semiautomata(
    draw,
    min_states: int = 2,
    max_states: int = 6,
    min_symbols: int = 1,
    max_symbols: int = 4,
    nonsolvable: float = 0.0,
):
    """Semiautomata with uniform random transition tables and $|\\mathcal T(\\mathcal A)| > 1$; a share
    ``nonsolvable`` of the draws (when ``max_states >= 5`` and ``max_symbols >= 2``) contains $A_5$ or $S_5$ on 5
    of the states (then at least 5 states and 2 symbols)."""
    n = draw(st.integers(min_states, max_states))
    k = draw(st.integers(min_symbols, max_symbols))
    rng = _seeded(draw)
    if max_states >= 5 and max_symbols >= 2 and rng.random() < nonsolvable:
        n, k = max(n, 5), max(k, 2)
        return Semiautomaton(_nonsolvable_rows(rng, n, k, permutations=False), name="hypothesis-nonsolvable")
    if n == 1:
        return Semiautomaton(np.zeros((k, 1), dtype=np.int64), name="hypothesis")  # only when min_states = 1
    table = rng.integers(0, n, size=(k, n))
    while one_element_semigroup(table):
        table = rng.integers(0, n, size=(k, n))
    return Semiautomaton(table.astype(np.int64), name="hypothesis")


@st.composite
def permutation_semiautomata(draw, max_points: int = 6, max_symbols: int = 3, nonsolvable: float = 0.0):
    """Semiautomata whose symbols all act as permutations of $n \\ge 2$ states (T(A) is a group), at least one of
    them not the identity; a share ``nonsolvable`` (when ``max_points >= 5``, ``max_symbols >= 2``) generates a
    group containing $A_5$ or $S_5$."""
    n = draw(st.integers(2, max(2, max_points)))
    k = draw(st.integers(1, max_symbols))
    rng = _seeded(draw)
    if max_points >= 5 and max_symbols >= 2 and rng.random() < nonsolvable:
        rows = _nonsolvable_rows(rng, max(n, 5), max(k, 2), permutations=True)
        return Semiautomaton(rows, name="hypothesis-perm-nonsolvable")
    rows = np.array([rng.permutation(n) for _ in range(k)], dtype=np.int64)
    while (rows == np.arange(n)).all():
        rows = np.array([rng.permutation(n) for _ in range(k)], dtype=np.int64)
    return Semiautomaton(rows, name="hypothesis-perm")


@st.composite
def permutation_reset_semiautomata(draw, max_states: int = 5, max_perms: int = 2, max_resets: int = 2):
    """Permutation-reset semiautomata (Def 7) on $n \\ge 2$ states: at least one non-identity permutation and at
    least one reset (constant map), so neither the group nor the memory part is trivial."""
    n = draw(st.integers(2, max(2, max_states)))
    n_perms = draw(st.integers(1, max(1, max_perms)))
    n_resets = draw(st.integers(1, max(1, max_resets)))
    rng = _seeded(draw)
    perms = np.array([rng.permutation(n) for _ in range(n_perms)], dtype=np.int64)
    while (perms == np.arange(n)).all():
        perms = np.array([rng.permutation(n) for _ in range(n_perms)], dtype=np.int64)
    resets = np.repeat(rng.integers(0, n, (n_resets, 1)), n, axis=1)
    rows = np.vstack([perms, resets])[rng.permutation(n_perms + n_resets)]
    return Semiautomaton(rows, name="hypothesis-pr")


def words(n_symbols: int, min_len: int = 1, max_len: int = 32, max_batch: int = 8):
    """Batches of words ``[B, T]`` over ``range(n_symbols)``."""

    @st.composite
    def _words(draw):
        T = draw(st.integers(min_len, max_len))
        B = draw(st.integers(1, max_batch))
        flat = draw(st.lists(st.integers(0, n_symbols - 1), min_size=B * T, max_size=B * T))
        return np.array(flat, dtype=np.int64).reshape(B, T)

    return _words()


@st.composite
def automaton_and_words(draw, automata=None, max_len: int = 32):
    """A semiautomaton, a batch of words over its alphabet and a start state."""
    aut = draw(automata if automata is not None else semiautomata())
    w = draw(words(aut.n_symbols, max_len=max_len))
    q0 = draw(st.integers(0, aut.n_states - 1))
    return aut, w, q0
