r"""The topic-model data of Li's thesis §2.1 ("How Transformers learn topic structure").

There are $T$ topics and $Tv$ words $1..Tv$; topic $t$ (0-based here) owns the words $tv+1..(t+1)v$, each with
probability $1/v$ inside the topic. A document draws $\tau$ distinct topics uniformly, then each of its $N$
tokens picks one of them uniformly and a word uniformly inside it. The token ``MASK = 0`` completes the
vocabulary of size $V = Tv + 1$. Masked language modelling masks each position with probability $p_m$; a
masked position shows the correct word w.p. $p_c$, a uniform random word of $[Tv]$ w.p. $p_r$ and ``MASK``
otherwise.

Under the infinitely-long-document assumption (Assumption 2.1.1) the masked document's token frequencies are
exact (Prop. 2.1.1): a present-topic word has frequency $p_1 = a/(v\tau) + p_m p_r/(vT)$, an absent-topic word
$p_2 = p_m p_r/(vT)$, and ``MASK`` $m_0 = p_m(1-p_c-p_r)$, with $a = 1-(1-p_c)p_m$.

Probabilities may be given as floats or as :class:`fractions.Fraction` (exact arithmetic end to end).
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from numbers import Integral, Real

import numpy as np

from theorylab._fmt import plain

MASK = 0

Number = float | Fraction


def _check_probability(name: str, p: object) -> None:
    if isinstance(p, bool) or not isinstance(p, Real):
        raise TypeError(f"{name} must be a real number (float or Fraction), got {type(p).__name__}")
    if not (0 < p < 1):  # also rejects NaN
        raise ValueError(f"{name} must lie in (0, 1) (masking scheme of §2.1.1), got {plain(p)}")


@dataclass(frozen=True)
class TopicModel:
    r"""Parameters of the topic model and of the masking scheme.

    Requires $T \ge 2$, $v \ge 1$, $1 \le \tau \le T$, $p_m, p_c, p_r \in (0, 1)$ and $p_c + p_r < 1$.
    The optimality results need $\tau \le T - 1$ as well (unstated in the thesis); ``tau == T`` is accepted
    here so that the degenerate case can be studied, and the functions that need $\tau < T$ say so.
    """

    T: int
    v: int
    tau: int
    p_m: Number = 0.15
    p_c: Number = 0.1
    p_r: Number = 0.1

    def __post_init__(self) -> None:
        for name in ("T", "v", "tau"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, Integral):
                raise TypeError(f"{name} must be an int, got {type(value).__name__}")
            object.__setattr__(self, name, int(value))
        if self.T < 2:
            raise ValueError(f"need at least T = 2 topics, got T = {self.T}")
        if self.v < 1:
            raise ValueError(f"need v >= 1 words per topic, got v = {self.v}")
        if not 1 <= self.tau <= self.T:
            raise ValueError(f"need 1 <= tau <= T topics per document, got tau = {self.tau}, T = {self.T}")
        for name in ("p_m", "p_c", "p_r"):
            _check_probability(name, getattr(self, name))
        if not self.p_c + self.p_r < 1:
            raise ValueError(
                f"need p_c + p_r < 1 (some masked tokens must show [MASK]), got {self.p_c + self.p_r}"
            )

    # -- sizes -----------------------------------------------------------------------------------------------
    @property
    def V(self) -> int:
        """Vocabulary size $Tv + 1$ (words and ``MASK``)."""
        return self.T * self.v + 1

    @property
    def exact(self) -> bool:
        """True when all probabilities are Fractions (then every derived constant is exact)."""
        return all(isinstance(p, Fraction) for p in (self.p_m, self.p_c, self.p_r))

    def require_sparse(self) -> None:
        r"""Raise unless $\tau \le T - 1$, the hypothesis under which Lemma 2.1.1 / Thm 2.1.2 hold."""
        if self.tau >= self.T:
            raise ValueError(
                f"tau = T = {self.T}: the optimal-set characterisation (Lemma 2.1.1, Thm 2.1.2) needs "
                "1 <= tau <= T - 1 (with tau = T every document has the same word distribution)"
            )

    # -- masking constants -----------------------------------------------------------------------------------
    @property
    def a(self) -> Number:
        """Surviving-correct factor $a = 1 - (1-p_c)p_m$."""
        return 1 - (1 - self.p_c) * self.p_m

    @property
    def m0(self) -> Number:
        """Frequency of ``MASK`` in the masked document, $p_m(1-p_c-p_r)$."""
        return self.p_m * (1 - self.p_c - self.p_r)

    @property
    def b(self) -> Number:
        """Random-replacement frequency of each word, $p_m p_r/(Tv)$."""
        return self.p_m * self.p_r / (self.T * self.v)

    @property
    def p1(self) -> Number:
        """Masked frequency of a word of a present topic (2.18)."""
        return self.a / (self.v * self.tau) + self.b

    @property
    def p2(self) -> Number:
        """Masked frequency of a word of an absent topic (2.19)."""
        return self.b

    def masked_frequencies(self) -> dict[str, Number]:
        r"""Prop. 2.1.1: ``{"present": p1, "absent": p2, "mask": m0}``; they satisfy
        $v\tau p_1 + v(T-\tau)p_2 + m_0 = 1$."""
        return {"present": self.p1, "absent": self.p2, "mask": self.m0}

    # -- topic structure -------------------------------------------------------------------------------------
    def topic_of(self, words: np.ndarray | int) -> np.ndarray:
        r"""0-based topic of words $1..Tv$ ($\lceil i/v \rceil - 1$); ``MASK`` and out-of-range ids raise."""
        w = np.asarray(words)
        if not np.issubdtype(w.dtype, np.integer):
            raise TypeError(f"word ids must be integers, got dtype {w.dtype}")
        if w.size and (w.min() < 1 or w.max() > self.T * self.v):
            raise ValueError(f"word ids must lie in 1..{self.T * self.v} (0 is [MASK], which has no topic)")
        return (w - 1) // self.v

    def word_frequencies(self, topics: np.ndarray) -> np.ndarray:
        r"""Exact masked-token frequency vector $y \in \mathbb R^V$ of a document with the given present
        topics."""
        topics = np.asarray(topics)
        if topics.shape != (self.tau,) or len(set(topics.tolist())) != self.tau:
            raise ValueError(f"need {self.tau} distinct present topics, got {topics.tolist()}")
        y = np.full(self.V, self.p2, dtype=object if self.exact else float)
        y[0] = self.m0
        for t in topics:
            y[1 + t * self.v : 1 + (t + 1) * self.v] = self.p1
        return y

    # -- sampling --------------------------------------------------------------------------------------------
    def sample_documents(
        self, rng: np.random.Generator, n: int, N: int, lda_alpha: float | None = None
    ) -> np.ndarray:
        r"""``n`` documents of ``N`` words (int64 ids in ``1..Tv``).

        ``lda_alpha=None``: the thesis's model (exactly $\tau$ topics, uniform mixture). Otherwise LDA as in
        the experiments (§2.1.5.1): topic proportions $\theta \sim \mathrm{Dir}(\alpha \mathbf 1_T)$, each
        token's topic $\sim \theta$ (``tau`` is then unused).
        """
        if n < 0 or N < 1:
            raise ValueError(f"need n >= 0 documents of length N >= 1, got n={n}, N={N}")
        if lda_alpha is None:
            chosen = np.argsort(rng.random((n, self.T)), axis=1)[:, : self.tau]
            topics = np.take_along_axis(chosen, rng.integers(0, self.tau, size=(n, N)), axis=1)
        else:
            if not lda_alpha > 0:
                raise ValueError(f"lda_alpha must be positive, got {lda_alpha}")
            theta = rng.dirichlet(np.full(self.T, float(lda_alpha)), size=n)
            cum = np.cumsum(theta, axis=1)
            u = rng.random((n, N)) * cum[:, -1:]
            topics = np.minimum((u[:, :, None] >= cum[:, None, :]).sum(axis=2), self.T - 1)
        return (1 + topics * self.v + rng.integers(0, self.v, size=(n, N))).astype(np.int64)

    def mask_documents(self, rng: np.random.Generator, docs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Apply the masking scheme: returns ``(masked_docs, masked_positions)`` (the set $M$ as a bool
        array)."""
        docs = np.asarray(docs)
        if docs.ndim != 2 or not np.issubdtype(docs.dtype, np.integer):
            raise ValueError(f"docs must be an integer array [n, N], got {docs.dtype} {docs.shape}")
        self.topic_of(docs)  # validates the ids
        p_m, p_c, p_r = float(self.p_m), float(self.p_c), float(self.p_r)
        in_m = rng.random(docs.shape) < p_m
        r = rng.random(docs.shape)
        random_words = rng.integers(1, self.T * self.v + 1, size=docs.shape)
        shown = np.where(r < p_c, docs, np.where(r < p_c + p_r, random_words, MASK))
        return np.where(in_m, shown, docs).astype(np.int64), in_m


def empirical_masked_frequencies(
    params: TopicModel, rng: np.random.Generator, n_docs: int, N: int
) -> dict[str, tuple[float, float]]:
    r"""Monte-Carlo estimate of Prop. 2.1.1's frequencies from sampled masked documents: per class
    (``present``, ``absent``, ``mask``) the mean frequency of one token of that class and its standard error.

    A topic counts as present when the original document uses it (for $N \gg \tau v$ this is the drawn set).
    """
    if n_docs < 2:
        raise ValueError(f"need n_docs >= 2 documents for a standard error, got {n_docs}")
    docs = params.sample_documents(rng, n_docs, N)
    masked, _ = params.mask_documents(rng, docs)
    freq = frequency_vectors(masked, params.V)  # [n, V]
    present = np.zeros((n_docs, params.T), dtype=bool)
    present[np.repeat(np.arange(n_docs), N), params.topic_of(docs).ravel()] = True
    word_present = np.repeat(present, params.v, axis=1)
    out = {}
    for name, values in (
        ("present", np.where(word_present, freq[:, 1:], np.nan)),
        ("absent", np.where(~word_present, freq[:, 1:], np.nan)),
        ("mask", freq[:, :1]),
    ):
        per_doc = np.nanmean(values, axis=1)
        per_doc = per_doc[np.isfinite(per_doc)]
        out[name] = (float(per_doc.mean()), float(per_doc.std(ddof=1) / np.sqrt(len(per_doc))))
    return out


def frequency_vectors(tokens: np.ndarray, V: int) -> np.ndarray:
    """Row-wise token frequencies: ``[n, N]`` ids in ``0..V-1`` -> ``[n, V]`` (what uniform attention
    computes)."""
    tokens = np.asarray(tokens)
    if tokens.ndim != 2 or tokens.shape[1] == 0:
        raise ValueError(f"tokens must be an [n, N] array with N >= 1, got shape {tokens.shape}")
    if not np.issubdtype(tokens.dtype, np.integer):
        raise TypeError(f"token ids must be integers, got dtype {tokens.dtype}")
    if tokens.size and (tokens.min() < 0 or tokens.max() >= V):
        raise ValueError(f"token ids must lie in 0..{V - 1}, got range {tokens.min()}..{tokens.max()}")
    n, N = tokens.shape
    counts = np.zeros((n, V))
    np.add.at(counts, (np.repeat(np.arange(n), N), tokens.ravel()), 1.0)
    return counts / N


@dataclass(frozen=True)
class TopicMLMTask:
    """Masked-language-modelling task on topic data for :func:`theorylab.nn.train` (squared loss, "mse").

    ``inputs`` are masked documents (length ``T`` of ``sample_batch``), ``targets`` the one-hot original words
    ``[B, T, V]``, ``mask`` the masked set $M$. With ``pool`` set, documents and masks are drawn once (static
    masking, a finite training set) and batches are resampled from the pool: the same finite data that a
    direct least-squares solve can use (:meth:`pool_arrays`).
    """

    model: TopicModel
    lda_alpha: float | None = None
    pool: int | None = None
    pool_seed: int = 0
    pool_length: int = 128
    name: str = "topic-mlm"
    loss: str = "mse"

    @property
    def vocab_size(self) -> int:
        return self.model.V

    @property
    def n_outputs(self) -> int:
        return self.model.V

    def _batch(self, masked: np.ndarray, docs: np.ndarray, in_m: np.ndarray):
        from theorylab.nn.tasks import Batch

        targets = np.zeros(docs.shape + (self.model.V,), dtype=np.float32)
        np.put_along_axis(targets, docs[..., None], 1.0, axis=2)
        return Batch(masked, targets, in_m)

    def pool_arrays(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The finite training pool ``(masked, docs, masked_positions)`` drawn from ``pool_seed``."""
        if self.pool is None:
            raise ValueError("this task has no fixed pool (pool=None)")
        if self not in _POOLS:
            _POOLS.clear()
            rng = np.random.default_rng(self.pool_seed)
            docs = self.model.sample_documents(rng, self.pool, self.pool_length, self.lda_alpha)
            masked, in_m = self.model.mask_documents(rng, docs)
            _POOLS[self] = (masked, docs, in_m)
        return _POOLS[self]

    def sample_batch(self, rng: np.random.Generator, batch: int, T: int):
        if self.pool is None:
            docs = self.model.sample_documents(rng, batch, T, self.lda_alpha)
            masked, in_m = self.model.mask_documents(rng, docs)
            return self._batch(masked, docs, in_m)
        if T != self.pool_length:
            raise ValueError(f"the pool holds documents of length {self.pool_length}, asked for T = {T}")
        masked, docs, in_m = self.pool_arrays()
        index = rng.integers(0, self.pool, size=batch)
        return self._batch(masked[index], docs[index], in_m[index])


_POOLS: dict[TopicMLMTask, tuple[np.ndarray, np.ndarray, np.ndarray]] = {}
