"""Compare two models up to relabeling of the hidden states, and compare their predictors."""

from __future__ import annotations

import functools
import itertools
from dataclasses import dataclass

import numpy as np

from theorylab.hmm.models import GHMM, HMM
from theorylab.hmm.predictors import optimal_predictor

__all__ = ["Relabeling", "relabeling_distance", "same_up_to_relabeling", "predictor_gap"]


@dataclass(frozen=True)
class Relabeling:
    """Best permutation ``perm`` (model 2's state ``perm[i]`` plays model 1's state ``i``) and the max abs errors
    $\\max|E_1-E_2\\Pi|$ (emission / means) and $\\max|T_1-\\Pi^\\top T_2\\Pi|$ after applying it."""

    perm: np.ndarray
    emission_error: float
    transition_error: float

    @property
    def error(self) -> float:
        return max(self.emission_error, self.transition_error)


def _pair(m1, m2) -> None:
    if type(m1) is not type(m2) or not isinstance(m1, HMM | GHMM):
        raise TypeError(f"compare two HMMs or two GHMMs, got {type(m1).__name__} and {type(m2).__name__}")
    if m1.emission.shape != m2.emission.shape:
        raise ValueError(f"models have different shapes (d, k): {m1.emission.shape} vs {m2.emission.shape}")


@functools.cache
def _permutations(k: int) -> np.ndarray:
    """All permutations of ``range(k)`` as rows, lexicographic (read-only, built once per k)."""
    perms = np.array(list(itertools.permutations(range(k))), dtype=np.int64).reshape(-1, k)
    perms.setflags(write=False)
    return perms


def relabeling_distance(m1: HMM | GHMM, m2: HMM | GHMM) -> Relabeling:
    """The permutation minimizing $\\max(|E_1-E_2\\Pi|_\\infty, |T_1-\\Pi^\\top T_2\\Pi|_\\infty)$: exhaustive
    over all $k!$ permutations for $k\\le7$ (so "not a relabeling" is certified), Hungarian matching of the
    emission columns for larger $k$."""
    _pair(m1, m2)
    E1, E2 = m1.emission, m2.emission
    k = E1.shape[1]
    if k <= 7:
        perms = _permutations(k)
        column_gap = np.max(
            np.abs(E1[:, :, None] - E2[:, None, :]), axis=0
        )  # [i, j] = max|E1[:, i] - E2[:, j]|
        e = np.max(column_gap[np.arange(k), perms], axis=1)
        t = np.max(np.abs(m1.T[None] - m2.T[perms[:, :, None], perms[:, None, :]]), axis=(1, 2))
        best = int(np.argmin(np.maximum(e, t)))
        return Relabeling(perms[best].copy(), float(e[best]), float(t[best]))
    cost = np.linalg.norm(E1[:, :, None] - E2[:, None, :], axis=0)
    from scipy.optimize import linear_sum_assignment  # lazy: scipy.optimize costs ~1 s to import

    rows, cols = linear_sum_assignment(cost)
    perm = cols[np.argsort(rows)]
    e = float(np.max(np.abs(E1 - E2[:, perm])))
    t = float(np.max(np.abs(m1.T - m2.T[np.ix_(perm, perm)])))
    return Relabeling(perm, e, t)


def same_up_to_relabeling(m1: HMM | GHMM, m2: HMM | GHMM, tol: float = 1e-8) -> bool:
    """Whether a permutation $\\Pi$ gives $E_2\\Pi=E_1$ and $\\Pi^\\top T_2\\Pi=T_1$ to ``tol`` (max abs
    entry)."""
    return relabeling_distance(m1, m2).error <= tol


def predictor_gap(m1: HMM | GHMM, m2: HMM | GHMM, task, points=None) -> float:
    """$\\max|f_1-f_2|$ of the optimal predictors for ``task`` (all one-hot inputs, or the G-HMM query
    ``points``)."""
    _pair(m1, m2)
    f1, f2 = optimal_predictor(m1, task), optimal_predictor(m2, task)
    if isinstance(m1, GHMM):
        if points is None:
            raise ValueError("G-HMM predictors are compared on query points")
        f1, f2 = f1(points), f2(points)
    return float(np.max(np.abs(f1 - f2)))
