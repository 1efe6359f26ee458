r"""Validators for the assumptions of Li's thesis §2.1 (topic structure): infinitely long documents (Assumption
2.1.1), the three-level attention pattern (Assumption 2.1.2), the asymptotic regime (Assumption 2.1.3, its
finite part) and the masking rates (Assumption 2.1.4). Word ids are $1..Tv$, ``MASK`` is 0, and word $i$ belongs
to topic $\lceil i/v\rceil$ (Def 2.1.1; 0-based: ``(i - 1) // v``)."""

from __future__ import annotations

from fractions import Fraction

import numpy as np

from theorylab.languages.topic import MASK, TopicModel

__all__ = [
    "infinitely_long_gap",
    "three_level_attention",
    "sparse_topic_threshold",
    "check_attention_assumptions",
]


def infinitely_long_gap(params: TopicModel, doc: np.ndarray) -> float:
    r"""Assumption 2.1.1 on one document: 0 iff it uses exactly $\tau$ topics and every word of those topics has
    empirical frequency $1/(\tau v)$ (others 0); otherwise the largest deviation of the empirical word
    distribution from that law for the $\tau$ most frequent topics (``inf`` if the number of topics differs)."""
    doc = np.asarray(doc)
    if doc.ndim != 1 or doc.size == 0:
        raise ValueError(f"doc must be a non-empty 1-d array of word ids, got shape {doc.shape}")
    topics = params.topic_of(doc)  # validates ids 1..Tv
    present = np.unique(topics)
    if present.size != params.tau:
        return float("inf")
    counts = np.bincount(doc - 1, minlength=params.T * params.v) / doc.size
    law = np.zeros(params.T * params.v)
    for t in present:
        law[t * params.v : (t + 1) * params.v] = 1 / (params.tau * params.v)
    return float(np.abs(counts - law).max())


def three_level_attention(masked_doc: np.ndarray, v: int, alpha, beta) -> np.ndarray:
    r"""Assumption 2.1.2: $A_{ij}=c_1$ if $\tilde w_i=\tilde w_j$, $c_2$ if the words differ but share a topic,
    $c_3$ otherwise, with $c_2=\alpha c_3$, $c_1=\beta c_3$ and columns summing to 1 (``MASK`` has no topic).
    Returns the ``N x N`` matrix (key $i$, query $j$)."""
    w = np.asarray(masked_doc)
    if w.ndim != 1 or not np.issubdtype(w.dtype, np.integer) or w.size == 0 or w.min() < 0:
        raise ValueError("masked_doc must be a non-empty 1-d array of ids >= 0 (0 = MASK)")
    if not (alpha > 0 and beta > 0):
        raise ValueError(f"alpha and beta must be > 0, got {alpha}, {beta}")
    topic = np.where(w == MASK, -1 - np.arange(w.size), (w - 1) // v)  # MASK: a topic of its own per position
    same_word = w[:, None] == w[None, :]
    same_topic = topic[:, None] == topic[None, :]  # never between two [MASK]s: their topics differ
    one = alpha * 0 + 1
    R = np.where(same_word, beta * one, np.where(same_topic, alpha * one, one))
    return R / R.sum(axis=0, keepdims=True)


def sparse_topic_threshold(params: TopicModel):
    r"""Assumption 2.1.3's bound on $v$: $(1/(1-(1-p_c)p_m)+1)^2+1$ (the assumption needs $v$ above it)."""
    return (1 / params.a + 1) ** 2 + 1


def check_attention_assumptions(params: TopicModel) -> None:
    r"""Raise ``ValueError`` naming the first violated finite condition of Assumptions 2.1.3-2.1.4: $p_m<1/2$,
    $p_c=p_r\in(0,1/2)$, $v>(1/(1-(1-p_c)p_m)+1)^2+1$ and $\tau<T$ (the limits $T,\tau\to\infty$, $\tau=o(T)$
    cannot be checked on one instance)."""
    half = Fraction(1, 2) if params.exact else 0.5
    if not params.p_m < half:
        raise ValueError(f"Assumption 2.1.4 needs p_m < 1/2, got p_m = {params.p_m}")
    if params.p_c != params.p_r or not 0 < params.p_c < half:
        raise ValueError(
            f"Assumption 2.1.4 needs p_c = p_r in (0, 1/2), got p_c = {params.p_c}, p_r = {params.p_r}"
        )
    bound = sparse_topic_threshold(params)
    if not params.v > bound:
        raise ValueError(
            f"Assumption 2.1.3 needs v > (1/(1-(1-p_c)p_m) + 1)^2 + 1 = {float(bound):.4g}, got v = {params.v}"
        )
    if not params.tau < params.T:
        raise ValueError(
            f"Assumption 2.1.3 needs tau = o(T), at least tau < T; got tau = {params.tau}, T = {params.T}"
        )
