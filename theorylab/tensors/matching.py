"""Align the columns of two factor matrices up to permutation, scale and sign (Hungarian algorithm)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["FactorMatch", "match_factors"]


@dataclass(frozen=True)
class FactorMatch:
    """``Y[:, perm] * scale`` is the best alignment of ``Y`` to ``X``; ``error`` is the max abs entry difference
    after alignment, relative to ``max|X|`` when ``relative=True``."""

    perm: np.ndarray
    scale: np.ndarray
    error: float

    def apply(self, Y) -> np.ndarray:
        return np.asarray(Y, float)[:, self.perm] * self.scale


def _unit(X: np.ndarray) -> np.ndarray:
    n = np.linalg.norm(X, axis=0)
    return X / np.where(n > 0, n, 1.0)


def match_factors(X, Y, *, scale: bool = True, sign: bool = True, relative: bool = True) -> FactorMatch:
    """Find a column permutation (and, with ``scale``, per-column scalars) mapping ``Y`` onto ``X``.

    Cost of pairing column $i$ of $X$ with column $j$ of $Y$: with ``scale`` the sine of the angle between
    them ($1-|\\cos|$ with ``sign``, i.e. up to sign; $1-\\cos$ otherwise); without ``scale`` the Euclidean
    distance. The assignment minimizing the total cost is found by ``scipy.optimize.linear_sum_assignment``;
    the scalars are then the least-squares fits $s_i=\\langle X_i, Y_{p(i)}\\rangle/\\|Y_{p(i)}\\|^2$.
    """
    X = np.asarray(X, dtype=float)
    Y = np.asarray(Y, dtype=float)
    if X.ndim != 2 or Y.ndim != 2 or X.shape != Y.shape:
        raise ValueError(f"match_factors needs two matrices of the same shape, got {X.shape} and {Y.shape}")
    if not (np.all(np.isfinite(X)) and np.all(np.isfinite(Y))):
        raise ValueError("match_factors: NaN or infinite entries")
    if scale:
        cos = _unit(X).T @ _unit(Y)
        cost = 1.0 - (np.abs(cos) if sign else cos)
    else:
        cost = np.linalg.norm(X[:, :, None] - Y[:, None, :], axis=0)
    from scipy.optimize import linear_sum_assignment  # lazy: scipy.optimize costs ~1 s to import

    rows, cols = linear_sum_assignment(cost)
    perm = cols[np.argsort(rows)]
    Yp = Y[:, perm]
    if scale:
        den = np.sum(Yp * Yp, axis=0)
        s = np.where(den > 0, np.sum(X * Yp, axis=0) / np.where(den > 0, den, 1.0), 0.0)
        if not sign:
            s = np.abs(s)
    else:
        s = np.ones(X.shape[1])
    err = float(np.max(np.abs(X - Yp * s))) if X.size else 0.0
    if relative and X.size:
        err /= max(float(np.max(np.abs(X))), np.finfo(float).tiny)
    return FactorMatch(perm, s, err)
