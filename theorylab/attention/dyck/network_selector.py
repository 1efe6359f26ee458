"""Lemma 42 (Liu §3.6.4.4 = Li Lemma 2.2.19): one 2-layer ReLU network that runs the k-th of K given 2-layer
networks when its first input is k.

Each ``f_k(x) = sum_i a_{k,i} relu(w_{k,i}.x + b_{k,i}) + b_k`` (width m). With ``B`` a bound on every
pre-activation ``|w_{k,i}.x + b_{k,i}|`` on the domain, the pair ``relu(z + 2B(y - k)) - relu(z + 2B(y - k) - B)``
equals ``relu(z)`` at ``y = k``, 0 for ``y < k`` and the constant ``B`` for ``y > k``; K more units
``relu(y + 1 - k)`` add ``h(y) = b_y - B sum_{k<y} sum_i a_{k,i}`` (a triangular system). Width ``2Km + K``.
"""

from __future__ import annotations

import numpy as np

Array = np.ndarray


def _check(a: Array, w: Array, b: Array, bias: Array) -> tuple[int, int, int]:
    if (
        a.ndim != 2
        or w.ndim != 3
        or b.shape != a.shape
        or w.shape[:2] != a.shape
        or bias.shape != a.shape[:1]
    ):
        raise ValueError(
            f"need a (K, m), w (K, m, n), b (K, m), bias (K,); got {a.shape}, {w.shape}, {b.shape}, {bias.shape}"
        )
    K, m, n = w.shape
    return K, m, n


def eval_networks(a: Array, w: Array, b: Array, bias: Array, x: Array) -> Array:
    """``[f_1(x), ..., f_K(x)]`` for one input x."""
    _check(a, w, b, bias)
    return (a * np.maximum(w @ x + b, 0)).sum(axis=1) + bias


def selector_weights(a: Array, w: Array, b: Array, bias: Array, B) -> tuple[Array, Array, Array]:
    """First layer ``(W1 (2Km + K, n + 1), b1)`` on ``[y; x]`` and second layer ``a2``: the corrected construction."""
    K, m, n = _check(a, w, b, bias)
    k = np.arange(1, K + 1)[:, None] * np.ones((1, m), dtype=int)
    rows_w = np.concatenate([np.full((K, m, 1), 2 * B), w], axis=2).reshape(K * m, n + 1)
    b_on = (b - 2 * B * k).reshape(-1)
    sel_w = np.zeros((K, n + 1), dtype=rows_w.dtype)
    sel_w[:, 0] = 1
    A = a.sum(axis=1)
    h = bias - B * np.concatenate([[0], np.cumsum(A)[:-1]])  # h(y) = b_y - B sum_{k<y} A_k
    c = np.zeros_like(h)
    for y in range(1, K + 1):  # h(y) = sum_{k<=y} c_k (y + 1 - k)
        c[y - 1] = h[y - 1] - sum(c[j - 1] * (y + 1 - j) for j in range(1, y))
    W1 = np.concatenate([rows_w, rows_w, sel_w])
    b1 = np.concatenate([b_on, b_on - B, 1 - np.arange(1, K + 1)])
    a2 = np.concatenate([a.reshape(-1), -a.reshape(-1), c])
    return W1, b1, a2


def eval_selector(W1: Array, b1: Array, a2: Array, y, x: Array):
    """``a2 . relu(W1 [y; x] + b1)``."""
    return a2 @ np.maximum(W1 @ np.concatenate([[y], x]) + b1, 0)


def printed_selector(a: Array, w: Array, b: Array, bias: Array, M, y, x: Array):
    """The printed construction: ``sum_{k,i} a relu(z + M(y - k)) - a relu(z + M(y - k - 1)) + b_k -
    c_{k,i} relu(y + 1 - k)`` with ``sum_{k<=k'} c_{k,i}(k' + 1 - k) = M sum_{k<k'} a_{k,i}`` (width 2Km + Km)."""
    K, m, _ = _check(a, w, b, bias)
    z = w @ x + b
    k = np.arange(1, K + 1)[:, None]
    pairs = a * (np.maximum(z + M * (y - k), 0) - np.maximum(z + M * (y - k - 1), 0))
    c = np.zeros_like(a)
    for kp in range(1, K + 1):
        rhs = M * a[: kp - 1].sum(axis=0)
        c[kp - 1] = rhs - sum(c[j - 1] * (kp + 1 - j) for j in range(1, kp))
    return pairs.sum() + bias.sum() - (c * np.maximum(y + 1 - k, 0)).sum()
