"""Explicit one-layer Transformers computing (d, k)-sparse parity (Liu §4.2.7.2, Props 9 and 10 of
``001_6a230b9a9faf2198.txt``), in numpy, evaluated exactly on every input of the cube.

Inputs are points ``x`` in {-1,+1}^d (``[n, d]``); bit ``z_i = (1 + x_i) / 2``. The output is read at the last
position d and must equal ``chi_S(x) = prod_{i in S} x_i``.

* Prop 9 (attention selects the support): embedding in R^5, ``e_1``/``e_2`` for bit 1/0, ``e_3``/``e_4`` for
  position in S / not in S, and a query flag ``e_5`` at the last position only. ``W_Q = sqrt(c) e_5``,
  ``W_K = sqrt(c) e_3`` give the score ``c 1[i in S]`` for every key, the last one included; ``W_V = e_1`` gives
  the value ``z_i``. Then ``u = sum_i alpha_i z_i`` lies within ``m_off = (d-k)/(k e^c + d - k)`` of
  ``#ones_S / k`` and the Lemma 10 trapezoid MLP ``sum_j (-1)^(k-j) psi_{j/k}(u)`` (hidden width 4(k+1),
  ``Delta' = 1/(4k)``) returns the parity exactly once ``m_off <= 1/(4k)``, e.g. for ``c >= ln(4(d-k))``.
* The printed example puts the key feature ``e_3`` on the last position as well and uses ``W_Q = W_K = c e_3``: the
  last token then scores ``c^2`` as if it were in S (and c is squared). :func:`prop9_printed` builds it.
* Prop 10 (no selection): uniform attention ``1/d`` with a *joint* token-position embedding ``e_{2i + z_i}`` in
  R^{2d} and ``W_V = d I``: the attention output is the one-hot code of the whole input, and a 3-layer MLP (Lemma 11:
  8k indicator ReLUs, 2^k pattern detectors, a linear read-out) computes the parity. With the additive embedding
  ``v_{z_i} + p_i`` uniform attention only sees the count of ones (:func:`additive_uniform_attention_output`).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from itertools import product

import numpy as np

from theorylab._fmt import plain


def _relu(x: np.ndarray) -> np.ndarray:
    return np.maximum(x, 0.0)


def _check(d: int, S: Iterable[int]) -> tuple[int, ...]:
    if isinstance(d, bool) or not isinstance(d, int | np.integer) or d < 1:
        raise ValueError(f"d must be a positive int, got {plain(d)}")
    S = tuple(sorted(int(i) for i in S))
    if len(S) > d:
        raise ValueError(f"sparsity k = {len(S)} exceeds the dimension d = {d}")
    if len(set(S)) != len(S) or not all(0 <= i < d for i in S) or not S:
        raise ValueError(f"S must be a non-empty set of distinct coordinates in [0, {d}), got {S}")
    return S


def _check_points(x: np.ndarray, d: int) -> np.ndarray:
    x = np.asarray(x, dtype=np.float64)
    if x.ndim != 2 or x.shape[1] != d or not np.all(np.abs(x) == 1):
        raise ValueError(f"inputs must be +-1 points of shape [n, {d}], got shape {x.shape}")
    return x


@dataclass(frozen=True)
class TrapezoidParityMLP:
    """Lemma 10 gadget: ``f(u) = sum_{j=0}^k (-1)^(k-j) psi_{j/k}(u)``, psi the 4-ReLU trapezoid of half-width
    ``2 Delta'`` that equals 1 on ``|u - j/k| <= Delta'``; as a 2-layer MLP ``W2 relu(W1 u + b1)``."""

    W1: np.ndarray  # [4(k+1)]
    b1: np.ndarray  # [4(k+1)]
    W2: np.ndarray  # [4(k+1)]

    @classmethod
    def build(cls, k: int) -> TrapezoidParityMLP:
        delta = 1.0 / (4 * k)
        W1, b1, W2 = [], [], []
        for j in range(k + 1):
            x0, sign = j / k, (-1.0) ** (k - j)
            for off, coef in ((2, 1.0), (1, -1.0), (-1, -1.0), (-2, 1.0)):
                W1.append(1.0 / delta)
                b1.append((-x0 + off * delta) / delta)
                W2.append(sign * coef)
        return cls(np.array(W1), np.array(b1), np.array(W2))

    def __call__(self, u: np.ndarray) -> np.ndarray:
        return _relu(np.asarray(u, dtype=np.float64)[..., None] * self.W1 + self.b1) @ self.W2

    @property
    def width(self) -> int:
        return len(self.W1)


@dataclass(frozen=True)
class SelectionTransformer:
    """One attention layer (output read at the last position) followed by the Lemma 10 MLP (Prop 9)."""

    d: int
    S: tuple[int, ...]
    c: float
    embed: np.ndarray  # [n_features, 2] bit embedding columns: feature vector of bit b is embed[:, b]
    pos: np.ndarray  # [d, n_features] positional part
    W_Q: np.ndarray  # [n_features, 1]
    W_K: np.ndarray
    W_V: np.ndarray
    mlp: TrapezoidParityMLP

    def embeddings(self, x: np.ndarray) -> np.ndarray:
        z = (_check_points(x, self.d) > 0).astype(int)
        return self.embed.T[z] + self.pos[None]  # [n, d, F]

    def attention(self, x: np.ndarray) -> np.ndarray:
        """Attention weights of the last position over positions 0..d-1 (causal: all of them)."""
        h = self.embeddings(x)
        q = h[:, -1] @ self.W_Q  # [n, 1]
        kk = h @ self.W_K  # [n, d, 1]
        scores = (kk[..., 0] * q).astype(np.float64)
        scores -= scores.max(axis=1, keepdims=True)
        w = np.exp(scores)
        return w / w.sum(axis=1, keepdims=True)

    def attention_output(self, x: np.ndarray) -> np.ndarray:
        h = self.embeddings(x)
        return np.einsum("nd,nd->n", self.attention(x), (h @ self.W_V)[..., 0])

    def __call__(self, x: np.ndarray) -> np.ndarray:
        return self.mlp(self.attention_output(x))


def off_support_mass(d: int, k: int, c: float) -> float:
    """Attention mass ``(d-k)/(k e^c + d - k)`` the corrected construction puts outside S."""
    return (d - k) / (k * np.exp(c) + d - k)


def min_selection_scale(d: int, k: int) -> float:
    """The sufficient scale ``c = ln(4(d-k))`` of Prop 9 (then ``m_off <= 1/(4k)``); 0 when S is everything."""
    return float(np.log(4 * (d - k))) if d > k else 0.0


def prop9_transformer(d: int, S: Iterable[int], c: float | None = None) -> SelectionTransformer:
    """Prop 9, corrected: query feature e_5 only at the last position, key feature e_3 on S, score ``c 1[i in S]``."""
    S = _check(d, S)
    k = len(S)
    c = min_selection_scale(d, k) + 1.0 if c is None else float(c)
    if not np.isfinite(c) or c < 0:
        raise ValueError(f"the attention scale c must be finite and >= 0, got {c}")
    embed = np.zeros((5, 2))
    embed[1, 0] = 1.0  # bit 0 -> e_2
    embed[0, 1] = 1.0  # bit 1 -> e_1
    pos = np.zeros((d, 5))
    inS = np.zeros(d, dtype=bool)
    inS[list(S)] = True
    pos[inS, 2] = 1.0
    pos[~inS, 3] = 1.0
    pos[-1, 4] = 1.0  # the query flag
    e = np.eye(5)
    return SelectionTransformer(
        d,
        S,
        c,
        embed,
        pos,
        np.sqrt(c) * e[:, [4]],
        np.sqrt(c) * e[:, [2]],
        e[:, [0]],
        TrapezoidParityMLP.build(k),
    )


def prop9_printed(d: int, S: Iterable[int], c: float) -> SelectionTransformer:
    """Prop 9's printed example: ``p_i = e_3`` for i in S **and for the last position**, ``W_Q = W_K = c e_3``."""
    S = _check(d, S)
    k = len(S)
    embed = np.zeros((4, 2))
    embed[1, 0] = 1.0
    embed[0, 1] = 1.0
    pos = np.zeros((d, 4))
    inS = np.zeros(d, dtype=bool)
    inS[list(S)] = True
    inS[-1] = True  # the printed p_d = e_3
    pos[inS, 2] = 1.0
    pos[~inS, 3] = 1.0
    e = np.eye(4)
    return SelectionTransformer(
        d, S, c, embed, pos, c * e[:, [2]], c * e[:, [2]], e[:, [0]], TrapezoidParityMLP.build(k)
    )


@dataclass(frozen=True)
class UniformTransformer:
    """Prop 10: uniform attention (1/d) over joint token-position embeddings, ``W_V = d I``, a 3-layer ReLU MLP."""

    d: int
    S: tuple[int, ...]
    W1: np.ndarray  # [8k, 2d] indicator layer (Lemma 11)
    b1: np.ndarray
    W2: np.ndarray  # [2^k, 8k] pattern detectors
    b2: np.ndarray
    W3: np.ndarray  # [2^k] read-out

    def attention_output(self, x: np.ndarray) -> np.ndarray:
        """Uniform average of the values ``d e_{2i + z_i}``: exactly the one-hot code of x, ``[n, 2d]``."""
        z = (_check_points(x, self.d) > 0).astype(int)
        n = len(z)
        onehot = np.zeros((n, self.d, 2 * self.d))
        onehot[np.arange(n)[:, None], np.arange(self.d)[None], 2 * np.arange(self.d)[None] + z] = 1.0
        return (onehot * self.d).sum(axis=1) / self.d

    def mlp(self, h: np.ndarray) -> np.ndarray:
        a1 = _relu(h @ self.W1.T + self.b1)
        a2 = _relu(a1 @ self.W2.T + self.b2)
        return a2 @ self.W3

    def __call__(self, x: np.ndarray) -> np.ndarray:
        return self.mlp(self.attention_output(x))


def prop10_transformer(d: int, S: Iterable[int]) -> UniformTransformer:
    """Prop 10 with the joint embedding. Lemma 11's MLP on the 2k support coordinates (off-support weights 0):
    for each (i in S, bit b) a 4-ReLU trapezoid indicator of ``h_{2i+b} = 1`` (Delta = 1/2, so it is exactly the
    0/1 input), a detector ``relu(sum of the k matching indicators - (k - 1))`` per pattern, read-out
    ``(-1)^(#zeros in the pattern)``."""
    S = _check(d, S)
    k = len(S)
    delta = 0.5
    rows, b1 = [], []
    index = {}
    for i in S:
        for b in (0, 1):
            index[(i, b)] = len(rows) // 4
            for off in (2, 1, -1, -2):
                w = np.zeros(2 * d)
                w[2 * i + b] = 1.0 / delta
                rows.append(w)
                b1.append((-1.0 + off * delta) / delta)
    W1 = np.array(rows)
    trap = np.array([1.0, -1.0, -1.0, 1.0])
    W2 = np.zeros((2**k, 4 * 2 * k))
    W3 = np.zeros(2**k)
    for p, pattern in enumerate(product((0, 1), repeat=k)):
        for i, b in zip(S, pattern, strict=True):
            j = index[(i, b)]
            W2[p, 4 * j : 4 * j + 4] = trap
        W3[p] = (-1.0) ** (k - sum(pattern))
    return UniformTransformer(d, S, W1, np.array(b1), W2, np.full(2**k, -(k - 1.0)), W3)


def additive_uniform_attention_output(x: np.ndarray) -> np.ndarray:
    """Uniform attention over the additive embedding ``v_{z_i} + p_i`` (bits e_1/e_2, positions one-hot after them),
    with the identity value map: ``(1/d) sum_i (v_{z_i} + p_i)``. It depends on x only through the count of ones."""
    x = np.asarray(x, dtype=np.float64)
    n, d = x.shape
    z = (x > 0).astype(int)
    h = np.zeros((n, d, 2 + d))
    h[np.arange(n)[:, None], np.arange(d)[None], 1 - z] = 1.0
    h[:, np.arange(d), 2 + np.arange(d)] = 1.0
    return h.mean(axis=1)
