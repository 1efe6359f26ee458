"""Hypothesis strategies for semiautomata and words (automata family)."""

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
]


@st.composite
def semiautomata(draw, min_states: int = 1, max_states: int = 6, min_symbols: int = 1, max_symbols: int = 4):
    """Arbitrary semiautomata: uniform transition tables."""
    n = draw(st.integers(min_states, max_states))
    k = draw(st.integers(min_symbols, max_symbols))
    table = draw(st.lists(st.integers(0, n - 1), min_size=n * k, max_size=n * k))
    return Semiautomaton(np.array(table, dtype=np.int64).reshape(k, n), name="hypothesis")


@st.composite
def permutation_semiautomata(draw, max_points: int = 6, max_symbols: int = 3):
    """Semiautomata whose symbols all act as permutations of the states (T(A) is a group)."""
    n = draw(st.integers(1, max_points))
    k = draw(st.integers(1, max_symbols))
    perms = [draw(st.permutations(range(n))) for _ in range(k)]
    return Semiautomaton(np.array(perms, dtype=np.int64).reshape(k, n), name="hypothesis-perm")


@st.composite
def permutation_reset_semiautomata(draw, max_states: int = 5, max_perms: int = 2, max_resets: int = 2):
    """Permutation-reset semiautomata (Def 7): some permutations plus some constant maps."""
    n = draw(st.integers(1, max_states))
    perms = [draw(st.permutations(range(n))) for _ in range(draw(st.integers(0, max_perms)))]
    resets = [
        [draw(st.integers(0, n - 1))] * n for _ in range(draw(st.integers(1 if not perms else 0, max_resets)))
    ]
    return Semiautomaton(np.array(perms + resets, dtype=np.int64).reshape(-1, n), name="hypothesis-pr")


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
