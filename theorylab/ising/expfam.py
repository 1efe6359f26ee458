"""Finite exponential families $p_\\theta(x)\\propto\\exp(\\theta^\\top T(x))$ on a product space $\\Omega^N$, by
enumeration, with the conditional moments that (masked) pseudolikelihood needs.

States are listed in product (lexicographic) order with symbols ``0..q-1``; a mask $K\\subseteq[N]$ groups the
states by $x_{-K}$. For a data law $p_{\\mathcal X}$ and a mask law $p_{\\mathcal K}(K\\mid x)$ (possibly
x-independent) the conditional $p_\\theta(x_K\\mid x_{-K},K)\\propto p_\\theta(x)p_{\\mathcal K}(K\\mid x)$ gives
the score $s=T(x)-\\mathbb E_\\theta[T\\mid x_{-K},K]$ and the Hessian of the population loss
$H=\\mathbb E_{X,K}\\mathrm{Cov}_\\theta(T\\mid X_{-K},K)$.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from itertools import combinations

import numpy as np


def _logsumexp(a: np.ndarray) -> float:
    m = float(a.max())
    return m + float(np.log(np.exp(a - m).sum()))


@dataclass(frozen=True)
class GroupStats:
    """Per-group sums of one mask K: ``index`` maps states to groups; ``weight``, ``mean`` and ``cov`` are the
    conditional mass, mean and covariance of T within each group (under $p_\\theta\\cdot p_{\\mathcal K}$)."""

    index: np.ndarray
    weight: np.ndarray
    mean: np.ndarray
    cov: np.ndarray


class FiniteExpFamily:
    """Exponential family with sufficient statistics ``T`` (shape (S, d)) on the states ``states`` (shape (S, N),
    symbols 0..q-1, product order)."""

    def __init__(self, states, T, q: int = 2, names: list[str] | None = None) -> None:
        X = np.asarray(states)
        T = np.asarray(T, dtype=float)
        if X.ndim != 2 or T.ndim != 2 or X.shape[0] != T.shape[0]:
            raise ValueError(
                f"states (S, N) and T (S, d) must have the same number of rows, got {X.shape}, {T.shape}"
            )
        if not np.all(np.isfinite(T)):
            raise ValueError("the sufficient statistics T must be finite")
        if X.shape[0] != q ** X.shape[1]:
            raise ValueError(f"expected all {q}^{X.shape[1]} states in product order, got {X.shape[0]}")
        self.states = X.astype(np.int64)
        self.T = T
        self.q = q
        self.N = X.shape[1]
        self.d = T.shape[1]
        self.names = names

    @cached_property
    def _radix(self) -> np.ndarray:
        return self.q ** np.arange(self.N - 1, -1, -1, dtype=np.int64)

    def group_index(self, K) -> np.ndarray:
        """Group label of each state for the mask K: states with equal $x_{-K}$ share a label (0..G-1). It does
        not depend on the parameters, so it is computed once per mask (read-only)."""
        cache = self.__dict__.setdefault("_group_index", {})
        mask = tuple(int(i) for i in K)
        if mask not in cache:
            keep = np.ones(self.N, dtype=bool)
            keep[list(mask)] = False
            key = self.states[:, keep] @ self._radix[keep]
            _, inv = np.unique(key, return_inverse=True)
            inv = inv.ravel()
            inv.setflags(write=False)
            cache[mask] = inv
        return cache[mask]

    def _theta(self, theta) -> np.ndarray:
        t = np.asarray(theta, dtype=float)
        if t.shape != (self.d,):
            raise ValueError(f"theta must have shape ({self.d},), got {t.shape}")
        if not np.all(np.isfinite(t)):
            raise ValueError(
                "theta must be finite (an infinite parameter is a hard constraint: zero conditionals)"
            )
        return t

    def log_probs(self, theta) -> np.ndarray:
        e = self.T @ self._theta(theta)
        return e - _logsumexp(e)

    def probs(self, theta) -> np.ndarray:
        return np.exp(self.log_probs(theta))

    def information_matrix(self, theta) -> np.ndarray:
        """Fisher information $\\mathcal I=\\mathrm{Cov}_\\theta(T)$."""
        p = self.probs(theta)
        m = p @ self.T
        return (self.T * p[:, None]).T @ self.T - np.outer(m, m)

    def group_stats(self, theta, K, mask_weight=None) -> GroupStats:
        """Conditional moments of T given $x_{-K}$ (and K, if ``mask_weight`` = $p_{\\mathcal K}(K\\mid x)$ per state)."""
        p = self.probs(theta)
        w = p if mask_weight is None else p * mask_weight
        inv = self.group_index(K)
        G = int(inv.max()) + 1
        W = np.bincount(inv, weights=w, minlength=G)
        Wsafe = np.where(W > 0, W, 1.0)
        M1 = np.zeros((G, self.d))
        np.add.at(M1, inv, w[:, None] * self.T)
        M2 = np.zeros((G, self.d, self.d))
        np.add.at(M2, inv, w[:, None, None] * self.T[:, :, None] * self.T[:, None, :])
        mean = M1 / Wsafe[:, None]
        cov = M2 / Wsafe[:, None, None] - mean[:, :, None] * mean[:, None, :]
        return GroupStats(inv, W, mean, cov)


def k_masks(N: int, k: int) -> list[tuple[int, ...]]:
    """All k-subsets of ``range(N)`` (the support of the k-PL mask law)."""
    if not isinstance(k, (int, np.integer)) or isinstance(k, bool):
        raise TypeError(f"k must be an integer, got {type(k).__name__}")
    if not 1 <= k <= N:
        raise ValueError(f"k must lie in 1..N = 1..{N}, got {k}")
    return list(combinations(range(N), int(k)))


@dataclass(frozen=True)
class MaskLaw:
    """Masks ``masks`` (tuples of coordinates) with probabilities ``weights``: shape (M,) for a fixed law, shape
    (S, M) for an adaptive law $p_{\\mathcal K}(K\\mid x)$ (one row per state, product order)."""

    masks: tuple[tuple[int, ...], ...]
    weights: np.ndarray

    @property
    def adaptive(self) -> bool:
        return self.weights.ndim == 2


def mask_law(N: int, masks, weights=None) -> MaskLaw:
    """Validated mask law: ``masks`` nonempty subsets of ``range(N)`` whose union (over the support) is [N]."""
    if isinstance(masks, (int, np.integer)) and not isinstance(masks, bool):
        ms = k_masks(N, int(masks))
        return MaskLaw(tuple(ms), np.full(len(ms), 1.0 / len(ms)))
    if isinstance(masks, MaskLaw):
        return masks
    ms = tuple(tuple(sorted(int(i) for i in K)) for K in masks)
    if not ms:
        raise ValueError("the mask law needs at least one mask")
    for K in ms:
        if not K or K[0] < 0 or K[-1] >= N or len(set(K)) != len(K):
            raise ValueError(f"mask {K} must be a nonempty set of coordinates in 0..{N - 1}")
    w = np.full(len(ms), 1.0 / len(ms)) if weights is None else np.asarray(weights, dtype=float)
    if w.shape[-1] != len(ms) or w.ndim not in (1, 2):
        raise ValueError(f"weights must have shape (M,) or (S, M) with M = {len(ms)}, got {w.shape}")
    if not np.all(np.isfinite(w)) or w.min() < 0 or np.abs(w.sum(axis=-1) - 1).max() > 1e-10:
        raise ValueError("mask weights must be probabilities summing to 1 (per state for an adaptive law)")
    support = w.reshape(-1, len(ms)).max(axis=0) > 0
    covered = set().union(*(set(K) for K, s in zip(ms, support, strict=True) if s))
    if covered != set(range(N)):
        raise ValueError(
            f"the masks in the support must cover all coordinates; missing {sorted(set(range(N)) - covered)}"
        )
    return MaskLaw(ms, w)
