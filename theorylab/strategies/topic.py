"""Hypothesis strategies for the topic-model family (Li thesis §2.1)."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
from hypothesis import strategies as st

from theorylab.languages.topic import TopicModel

__all__ = ["masking_rates", "optimal_value_matrices", "topic_models"]


@st.composite
def masking_rates(draw, exact: bool = False, bert_like: bool = False):
    """$(p_m, p_c, p_r)$ in $(0,1)^3$ with $p_c + p_r < 1$. ``exact``: Fractions (denominator 40).
    ``bert_like``: Assumption 2.1.4, $p_m < 1/2$ and $p_c = p_r < 1/2$."""
    n = 40
    p_m = draw(st.integers(1, n // 2 - 1 if bert_like else n - 1))
    p_c = draw(st.integers(1, n // 2 - 1 if bert_like else n - 2))
    p_r = p_c if bert_like else draw(st.integers(1, n - 1 - p_c))
    rates = (Fraction(p_m, n), Fraction(p_c, n), Fraction(p_r, n))
    return rates if exact else tuple(float(p) for p in rates)


@st.composite
def topic_models(
    draw, max_T: int = 6, max_v: int = 5, exact: bool = False, sparse: bool = True, min_v: int = 2
):
    r""":class:`TopicModel` with $2 \le T \le$ ``max_T``, ``min_v`` $\le v \le$ ``max_v`` and $1 \le \tau \le T-1$
    (``sparse``) or $\le T$. ``min_v`` defaults to 2: with one word per topic the within-topic structure that the
    claims are about (same word versus same topic, within-block spread) is empty, a trivial instance."""
    T = draw(st.integers(2, max_T))
    v = draw(st.integers(min_v, max_v))
    tau = draw(st.integers(1, T - 1 if sparse else T))
    return TopicModel(T, v, tau, *draw(masking_rates(exact=exact)))


@st.composite
def optimal_value_matrices(draw, params: TopicModel, scale: float = 2.0):
    r"""Random members of the optimal family of Lemma 2.1.1: free constants $u \in [-s, s]^V$ and random
    within-block splits (weights summing to 1, possibly negative). Returns ``(W, u)``."""
    from theorylab.attention.topic import value_matrix_from_family

    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    u = rng.uniform(-scale, scale, size=params.V)
    noise = rng.normal(size=(params.V, params.T, params.v))
    splits = 1.0 / params.v + noise - noise.mean(axis=2, keepdims=True)
    return value_matrix_from_family(params, u, splits), u
