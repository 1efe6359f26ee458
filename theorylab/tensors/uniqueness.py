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
    """``condition``: Kruskal's condition; ``errors``: for each algorithm that found an exact decomposition, its
    worst relative factor error (after permutation / scale matching) against the planted factors;
    ``unconverged``: algorithms that did not reach an exact fit (ALS can stall in swamps: no evidence either
    way); ``alternative``: the factor distance of a second exact decomposition built by
    :func:`nonunique_decomposition` (None if none exists)."""

    condition: KruskalCondition
    errors: dict[str, float]
    unconverged: tuple[str, ...]
    alternative: float | None
    tol: float
    als_tol: float = 1e-3

    @property
    def unique(self) -> bool:
        """Jennrich (mode-1 pencil) returned the planted factors, so did every other algorithm that reached an
        exact fit (the mode-2 pencil; ALS when it converged), and no second decomposition was produced."""
        ok = all(e <= (self.als_tol if name == "als" else self.tol) for name, e in self.errors.items())
        return ok and "jennrich" in self.errors and self.alternative is None


def _factor_error(truth, found) -> float:
    """Worst factor error after aligning columns (permutation from B, scales per factor)."""
    perm = match_factors(truth[1], found[1]).perm
    errs = []
    for X, Y in zip(truth, found, strict=True):
        Yp = Y[:, perm]
        s = np.sum(X * Yp, axis=0) / np.maximum(np.sum(Yp * Yp, axis=0), np.finfo(float).tiny)
        errs.append(float(np.max(np.abs(X - Yp * s)) / max(np.max(np.abs(X)), np.finfo(float).tiny)))
    return max(errs)


FIT_TOL = 1e-9  # relative residual of an "exact" decomposition (Jennrich reaches ~1e-15 on exact data)


def uniqueness_report(A, B, C, *, seed: int = 0, als: bool = True, tol: float = 1e-6) -> UniquenessReport:
    """Decompose $W=[A,B,C]$ with two different algorithms: Jennrich on the mode-1 slices and Jennrich on the
    mode-2 slices (a different pencil), plus (``als``) alternating least squares (numpy, the updates of tensorly's
    ``parafac``) from an SVD and a random start (best fit).
    Every exact decomposition found is compared with the planted factors, and a second exact decomposition is
    attempted with :func:`nonunique_decomposition`.

    ``tol``: relative factor error counted as "the same" for Jennrich (exact data: ~1e-13). ALS converges
    linearly and is stopped at a relative fit change of 1e-12, which leaves factor errors up to ~1e-6, so it
    is counted when its relative residual is <= 1e-8 and compared at ``als_tol`` = 1e-3 (far below the O(1)
    distance of a genuinely different decomposition)."""
    A, B, C = (np.asarray(X, dtype=float) for X in (A, B, C))
    R = A.shape[1]
    W = cp_to_tensor(A, B, C)
    truth = (A, B, C)
    errors: dict[str, float] = {}
    unconverged: list[str] = []
    found = {}
    try:
        found["jennrich"] = cp_decompose(W, R, seed=seed).factors
    except (np.linalg.LinAlgError, ValueError):
        pass
    try:
        Bm, Am, Cm = cp_decompose(W.transpose(1, 0, 2), R, seed=seed + 1).factors
        found["jennrich-mode2"] = (Am, Bm, Cm)
    except (np.linalg.LinAlgError, ValueError):
        pass
    if als:
        best = min(
            (
                cp_decompose(W, R, method="als-numpy", init=init, seed=seed, n_iter=1000, tol=1e-12)
                for init in ("svd", "random")
            ),
            key=lambda cp: cp.residual,
        )
        found["als"] = best.factors
    for name, factors in found.items():
        res = float(np.linalg.norm(cp_to_tensor(*factors) - W) / max(np.linalg.norm(W), np.finfo(float).tiny))
        if res <= FIT_TOL or (name == "als" and res <= 1e-8):
            errors[name] = _factor_error(truth, factors)
        else:
            unconverged.append(name)
    try:
        alt = nonunique_decomposition(A, B, C, np.random.default_rng(seed))
        gap = float(np.max(np.abs(cp_to_tensor(*alt) - W)))
        alternative = _factor_error(truth, alt) if gap <= 1e-9 * max(1.0, np.abs(W).max()) else None
    except ValueError:
        alternative = None
    return UniquenessReport(kruskal_condition(A, B, C), errors, tuple(unconverged), alternative, tol)
