"""Verdict for Kruskal's theorem (Proposition 1): is the CP decomposition of $[A,B,C]$ unique?"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from theorylab.tensors.cp import cp_decompose, cp_to_tensor, nonunique_decomposition
from theorylab.tensors.kruskal import KruskalCondition, kruskal_condition
from theorylab.tensors.matching import match_factors

__all__ = ["UniquenessReport", "uniqueness_report"]


@dataclass(frozen=True)
class UniquenessReport:
    """``condition``: Kruskal's condition; ``errors``: per algorithm, the worst relative factor error (after
    permutation / scale matching) of its decomposition against the planted factors; ``alternative``: the factor
    distance of a second exact decomposition found by :func:`nonunique_decomposition` (None if none exists)."""

    condition: KruskalCondition
    errors: dict[str, float]
    alternative: float | None
    tol: float
    als_tol: float = 1e-4

    @property
    def unique(self) -> bool:
        """Every algorithm returned the planted factors and no second decomposition was produced."""
        ok = all(e <= (self.als_tol if name == "als" else self.tol) for name, e in self.errors.items())
        return ok and self.alternative is None


def _factor_error(truth, found) -> float:
    """Worst factor error after aligning columns (permutation from B, scales per factor)."""
    perm = match_factors(truth[1], found[1]).perm
    errs = []
    for X, Y in zip(truth, found, strict=True):
        Yp = Y[:, perm]
        s = np.sum(X * Yp, axis=0) / np.maximum(np.sum(Yp * Yp, axis=0), np.finfo(float).tiny)
        errs.append(float(np.max(np.abs(X - Yp * s)) / max(np.max(np.abs(X)), np.finfo(float).tiny)))
    return max(errs)


def uniqueness_report(A, B, C, *, seed: int = 0, als: bool = True, tol: float = 1e-6) -> UniquenessReport:
    """Decompose $W=[A,B,C]$ with Jennrich (two random projections) and, with ``als``, tensorly ALS from random
    starts (keeping the best fit of 2), compare each with the planted factors, and try to build a second exact
    decomposition. ``tol``: relative factor error counted as "the same" for Jennrich (exact data: ~1e-13); ALS
    converges linearly and is stopped at a relative fit change of 1e-12, which leaves factor errors up to ~1e-6, so
    it is compared at ``als_tol`` = 1e-4 (two orders above, far below the O(1) gap of a different decomposition)."""
    A, B, C = (np.asarray(X, dtype=float) for X in (A, B, C))
    R = A.shape[1]
    W = cp_to_tensor(A, B, C)
    truth = (A, B, C)
    errors: dict[str, float] = {}
    for i, s in enumerate((seed, seed + 1)):
        try:
            cp = cp_decompose(W, R, seed=s)
            errors[f"jennrich{i}"] = _factor_error(truth, cp.factors)
        except (np.linalg.LinAlgError, ValueError):
            errors[f"jennrich{i}"] = float("inf")
    if als:
        best = min(
            (cp_decompose(W, R, method="als", init="random", seed=seed + j, n_iter=2000, tol=1e-12) for j in range(2)),
            key=lambda cp: cp.residual,
        )
        errors["als"] = _factor_error(truth, best.factors)
    try:
        alt = nonunique_decomposition(A, B, C, np.random.default_rng(seed))
        gap = float(np.max(np.abs(cp_to_tensor(*alt) - W)))
        alternative = _factor_error(truth, alt) if gap <= 1e-9 * max(1.0, np.abs(W).max()) else None
    except ValueError:
        alternative = None
    return UniquenessReport(kruskal_condition(A, B, C), errors, alternative, tol)
