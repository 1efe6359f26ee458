"""The pair sequence of contrastive learning on a finite chain (Liu thesis Ch. 2.1, Lemma 4, eqs. (2.18)-(2.19)).

A base chain P (one step = time eta) is observed every two steps; each observed point x is paired with
``x' ~ K(x, .) = (P(x, .) + q)/2`` (the next point, or a draw from the proposal q, with equal probability). The pairs
form a Markov chain with transition ``P^2(x, y) K(y, y')`` and stationary law ``pi(x) K(x, x')``, and its beta-mixing
coefficient at i pair-steps equals the base chain's at lag 2i:
``beta(t) = sum_x pi(x) TV(P^t(x, .), pi)``. Exact for matrices of Fractions (object arrays).
"""

from __future__ import annotations

import numpy as np


def _stochastic(P, name: str) -> np.ndarray:
    P = np.asarray(P)
    if P.ndim != 2 or P.shape[0] != P.shape[1] or P.shape[0] < 1:
        raise ValueError(f"{name} must be a square matrix, got shape {P.shape}")
    if (P < 0).any() or any(abs(s - 1) > 1e-12 for s in P.sum(axis=1)):
        raise ValueError(f"the rows of {name} must be probability vectors")
    return P


def matrix_power(P: np.ndarray, t: int) -> np.ndarray:
    """``P^t`` (object arrays stay exact)."""
    if t < 0:
        raise ValueError(f"the lag must be >= 0, got {t}")
    out = (
        np.eye(P.shape[0], dtype=P.dtype)
        if P.dtype != object
        else np.identity(P.shape[0]).astype(int).astype(object)
    )
    for _ in range(t):
        out = out.dot(P)
    return out


def beta_mixing(P, pi, t: int):
    """``beta(t) = sum_x pi(x) (1/2) sum_y |P^t(x, y) - pi(y)|`` for a chain started at its stationary law pi."""
    P = _stochastic(P, "P")
    pi = np.asarray(pi)
    Pt = matrix_power(P, t)
    return (pi * (abs(Pt - pi[None, :]).sum(axis=1))).sum() / 2


def pair_chain(P, q) -> tuple[np.ndarray, np.ndarray]:
    """The pair chain on states ``(x, x')`` (index ``x n + x'``): transition ``P^2(x, y) K(y, y')`` with
    ``K = (P + 1 q^T)/2``; returned with the kernel K."""
    P = _stochastic(P, "P")
    q = np.asarray(q)
    n = P.shape[0]
    if q.shape != (n,) or (q < 0).any() or abs(q.sum() - 1) > 1e-12:
        raise ValueError(f"q must be a probability vector of length {n}")
    K = (P + q[None, :]) / 2
    P2 = P.dot(P)
    T = (P2[:, None, :, None] * K[None, None, :, :]) * np.ones((1, n, 1, 1), dtype=P.dtype)
    return T.reshape(n * n, n * n), K


def pair_stationary(pi, K) -> np.ndarray:
    """``pi(x) K(x, x')`` flattened like :func:`pair_chain`'s states."""
    return (np.asarray(pi)[:, None] * K).reshape(-1)
