"""Helper lemmas of the Dyck balance results (Liu thesis §3.6.4 = Li thesis §2.2.5; the Dyck appendix numbering):

- Lemma 28 (composition of approximations): if ``||f_i(x) - g_i(x)|| <= eps_i ||x||``, ``g_1`` is
  lambda_1-Lipschitz and ``||g_2(x)|| <= lambda_2 ||x||``, then ``g_1 o g_2`` is approximated by ``f_1 o f_2`` with
  ``eps' = lambda_1 eps_2 + lambda_2 eps_1 + eps_1 eps_2 = (lambda_1 + eps_1)(lambda_2 + eps_2) - lambda_1 lambda_2``
  (the printed ``(lambda_2 + eps_1)(lambda_1 + eps_2) - lambda_1 lambda_2`` swaps the indices);
- Lemma 35: ``LN_C([P x; 0]) = [LN_C(x); 0]`` for ``LN_C(x) = P x / max(||P x||, C)`` (``bounds.layer_norm_c``);
- Lemma 38: n points are interpolated by a width-2n ReLU network built along a separating direction;
- Lemma 43: ``f(x) = [I, -I] ReLU([W x; -W x]) = W x`` with weight spectral norms ``<= sqrt(2) ||W||``.
Exact for Fraction inputs where the operations are rational.
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np


def composition_error(lam1, eps1, lam2, eps2, *, printed: bool = False):
    """Lemma 28's eps' (``printed``: the text's index-swapped form)."""
    if min(lam1, eps1, lam2, eps2) < 0:
        raise ValueError("Lipschitz constants and approximation errors must be >= 0")
    if printed:
        return (lam2 + eps1) * (lam1 + eps2) - lam1 * lam2
    return (lam1 + eps1) * (lam2 + eps2) - lam1 * lam2


def interpolating_mlp(xs: np.ndarray, ys, w: np.ndarray):
    """Lemma 38's construction along a direction w separating the points: sort by ``<w, x_i>``, ``gamma`` half the
    smallest gap, ``z_1 = y_1/gamma``, ``z_i = y_i/gamma - 2 sum_{j<i} z_j``; returns
    ``f(x) = sum_i z_i (relu(<w, x - x_i> + gamma) - relu(<w, x - x_i> - gamma))`` as a callable (exact for
    Fractions) together with (gamma, z)."""
    proj = [sum(wi * xi for wi, xi in zip(w, x, strict=True)) for x in xs]
    order = sorted(range(len(xs)), key=lambda i: proj[i])
    p = [proj[i] for i in order]
    gaps = [b - a for a, b in zip(p, p[1:], strict=False)]
    if gaps and min(gaps) <= 0:
        raise ValueError("w does not separate the points (two projections coincide)")
    gamma = min(gaps) / 2 if gaps else Fraction(1)
    y = [ys[i] for i in order]
    z: list = []
    for i in range(len(y)):
        z.append(y[i] / gamma - 2 * sum(z))

    def relu(v):
        return v if v > 0 else 0 * v

    def f(x):
        px = sum(wi * xi for wi, xi in zip(w, x, strict=True))
        return sum(zi * (relu(px - pi + gamma) - relu(px - pi - gamma)) for zi, pi in zip(z, p, strict=True))

    return f, gamma, z


def identity_through_relu(W: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Lemma 43's weights: first layer ``[W; -W]`` (2n x n), second ``[I, -I]`` (n x 2n)."""
    W = np.asarray(W)
    n = W.shape[0]
    return np.vstack([W, -W]), np.hstack([np.eye(n, dtype=W.dtype), -np.eye(n, dtype=W.dtype)])


def identity_layer(m: int):
    """Li §2.2.5.2: a layer (3.23) computing the identity: zero value matrix (the attention output is 0 and
    ``LN(0) = 0``), so the residual passes X, and the FFN ``[I, -I] ReLU([X; -X])`` of Lemma 43 with W = I."""
    from theorylab.attention.dyck.architecture import TheoryLayer

    if m < 1:
        raise ValueError(f"the width m must be >= 1, got {m}")
    W1, W2 = identity_through_relu(np.eye(m))
    return TheoryLayer(
        np.zeros((1, m)), np.zeros((1, m)), np.zeros((m, m)), W1, np.zeros(2 * m), W2, np.zeros(m)
    )


def deepen(layers: list, m: int, positions) -> list:
    """``layers`` with an identity layer inserted before each index in ``positions`` (``len(layers)``: at the top)."""
    out = list(layers)
    for p in sorted(positions, reverse=True):
        if not 0 <= p <= len(layers):
            raise ValueError(f"insertion position {p} outside 0..{len(layers)}")
        out.insert(p, identity_layer(m))
    return out


def selector_network(n: int, M, *, with_offset_unit: bool = True):
    """Lemma 40's network on ``x in [0, M]^n``, ``y in [n]`` (1-based): ``sum_i relu(x_i + M(y - i)) -
    relu(x_i + M(y - i - 1)) - M(y - 1)``; the term ``-M(y - 1) = M - M relu(y)`` needs one more hidden unit
    (``with_offset_unit``), so the printed width 2n becomes 2n + 1. Returns ``f(x, y)`` (exact for Fractions)."""
    if n < 1 or not M > 0:
        raise ValueError(f"need n >= 1 and M > 0, got n={n}, M={M}")

    def relu(v):
        return v if v > 0 else 0 * v

    def f(x, y):
        s = sum(relu(x[i - 1] + M * (y - i)) - relu(x[i - 1] + M * (y - i - 1)) for i in range(1, n + 1))
        return s + (M - M * relu(y) if with_offset_unit else 0)

    return f


def separating_basis(xs: np.ndarray, v: np.ndarray) -> np.ndarray:
    """Lemma 39's construction: an orthonormal basis ``U [n, n-2]`` of the orthogonal complement of span(v, 1); then
    ``U U^T x_i != x_i`` for every nonzero ``x_i`` with ``v^T x_i != 0``."""
    n = len(v)
    Q, _ = np.linalg.qr(np.column_stack([np.ones(n), v, np.eye(n)]))
    if np.linalg.matrix_rank(np.column_stack([np.ones(n), v])) < 2:
        raise ValueError("v must not be parallel to the all-ones vector")
    return Q[:, 2:n]
