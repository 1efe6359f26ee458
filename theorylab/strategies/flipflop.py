"""Hypothesis strategies for the flip-flop family: FFL lengths and parameters, valid flip-flop strings."""

from __future__ import annotations

import numpy as np
from hypothesis import strategies as st

from theorylab.languages.flipflop import ZERO, R, W

__all__ = ["ffl_lengths", "ffl_probabilities", "ffl_strings"]


def ffl_lengths(min_T: int = 4, max_T: int = 64) -> st.SearchStrategy:
    """Even lengths T with min_T <= T <= max_T (flip-flop strings alternate instruction and bit), drawn uniformly
    (``st.integers`` favours its lower end, the trivial T = 4); shrinks towards min_T."""
    lengths = range(2 * ((min_T + 1) // 2), max_T + 1, 2)
    if not lengths:
        raise ValueError(f"no even length in [{min_T}, {max_T}]")
    return st.sampled_from(lengths)


def ffl_probabilities(min_each: float = 0.0) -> st.SearchStrategy:
    """(p_write, p_read, p_ignore) on the simplex, each at least ``min_each``."""
    free = 1.0 - 3 * min_each
    if free < 0:
        raise ValueError(f"min_each must be <= 1/3, got {min_each}")
    weights = st.tuples(*[st.floats(0.0, 1.0)] * 3).filter(lambda w: sum(w) > 1e-6)
    return weights.map(lambda w: tuple(min_each + free * v / sum(w) for v in w))


@st.composite
def ffl_strings(draw, min_T: int = 4, max_T: int = 64) -> np.ndarray:
    """A valid flip-flop string (int64 token ids): starts with a write, ends with a read, any instructions between;
    every read's bit is the bit of the most recent write. Shrinks towards short strings of writes of 0."""
    T = draw(ffl_lengths(min_T, max_T))
    middle = draw(st.lists(st.sampled_from([W, R, 2]), min_size=T // 2 - 2, max_size=T // 2 - 2))
    bits = draw(st.lists(st.integers(0, 1), min_size=T // 2, max_size=T // 2))
    x, memory = [], 0
    for k, a in enumerate([W, *middle, R]):
        if a == W:
            memory = bits[k]
        x += [a, ZERO + (memory if a == R else bits[k])]
    return np.array(x, dtype=np.int64)
