"""Hypothesis strategies for the Dyck family: sizes, prefixes, balanced attentions, perturbation sizes."""

from __future__ import annotations

import numpy as np
from hypothesis import strategies as st

from theorylab.attention.dyck.balance import random_balanced_attention

__all__ = ["dyck_shapes", "dyck_prefixes", "balanced_attentions", "perturbations"]


def dyck_shapes(
    min_k: int = 1, max_k: int = 3, min_depth: int = 1, max_depth: int = 4, nontrivial: bool = False
) -> st.SearchStrategy:
    r"""Pairs ``(k, depth)`` of bracket types and maximal depth; ``nontrivial`` leaves out $\mathsf{Dyck}_{1,1}$
    (the single word ``()()...``), drawing $k\ge2$ or $D\ge2$."""
    shapes = st.tuples(st.integers(min_k, max_k), st.integers(min_depth, max_depth))
    if not nontrivial:
        return shapes
    return (
        st.one_of(
            st.tuples(st.integers(max(min_k, 2), max_k), st.integers(min_depth, max_depth)),
            st.tuples(st.integers(min_k, max_k), st.integers(max(min_depth, 2), max_depth)),
        )
        if max_k >= 2 or max_depth >= 2
        else shapes
    )


@st.composite
def dyck_prefixes(draw, k: int, depth: int, max_length: int = 30) -> np.ndarray:
    """A valid prefix of $\\mathsf{Dyck}_{k,D}$ (int64 array), built move by move."""
    n = draw(st.integers(0, max_length))
    stack: list[int] = []
    out = []
    for _ in range(n):
        can_open, can_close = len(stack) < depth, bool(stack)
        if can_open and (not can_close or draw(st.booleans())):
            t = draw(st.integers(0, k - 1))
            stack.append(t)
            out.append(2 * t)
        else:
            out.append(2 * stack.pop() + 1)
    return np.array(out, dtype=np.int64)


@st.composite
def balanced_attentions(draw, k: int, depth: int, scale: float = 1.0) -> np.ndarray:
    """An exactly balanced second-layer attention $M$ for one-hot embeddings (dyadic entries)."""
    seed = draw(st.integers(0, 2**32 - 1))
    return random_balanced_attention(k, depth, np.random.default_rng(seed), scale)


def perturbations(low: float = 1e-3, high: float = 1.0) -> st.SearchStrategy:
    """Perturbation sizes, log-uniform in ``[low, high]``."""
    return st.floats(np.log(low), np.log(high)).map(lambda x: float(np.exp(x)))
