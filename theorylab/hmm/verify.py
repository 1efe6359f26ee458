"""Verdict functions used by the checks (and by users): each returns a report with an ``ok`` flag."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from theorylab.hmm.compare import predictor_gap, relabeling_distance
from theorylab.hmm.models import GHMM, HMM, AssumptionError
from theorylab.hmm.predictors import optimal_predictor, predictor_by_enumeration
from theorylab.hmm.recovery import recover_from_predictor

__all__ = [
    "PairReport",
    "verify_nonidentifiable_pair",
    "RecoveryReport",
    "verify_recovery",
    "predictor_enumeration_gap",
    "PAIRWISE_TASKS_3",
    "TRIPLE_TASKS",
]

#: the four pairwise tasks on three adjacent tokens of Theorem 6 (x2|x3, x3|x2 coincide by stationarity)
PAIRWISE_TASKS_3 = ("x2|x1", "x1|x2", "x3|x1", "x1|x3")
TRIPLE_TASKS = ("x2x3|x1", "x1x3|x2", "x1x2|x3")


def _assumption_problem(model: HMM | GHMM, tol: float) -> str | None:
    try:
        if isinstance(model, HMM):
            HMM(model.O, model.T, tol=tol)
        else:
            GHMM(model.M, model.T, norm=model.norm if model.norm is not None else 1.0, tol=tol)
    except AssumptionError as err:
        return str(err)
    return None


@dataclass(frozen=True)
class PairReport:
    """Non-identifiability witness: equal predictors on ``matched`` tasks, valid parameters, no relabeling, and
    (as a sanity check of the separating power of triple tasks) different predictors on ``separating``
    tasks."""

    matched: dict[str, float]
    separating: dict[str, float]
    relabel_error: float
    problems: tuple[str, ...]
    tol: float
    min_separation: float
    ok: bool = field(init=False)

    def __post_init__(self) -> None:
        ok = (
            not self.problems
            and all(g <= self.tol for g in self.matched.values())
            and self.relabel_error > self.min_separation
            and all(g > self.min_separation for g in self.separating.values())
        )
        object.__setattr__(self, "ok", ok)


def verify_nonidentifiable_pair(
    m1: HMM | GHMM,
    m2: HMM | GHMM,
    matched: Sequence,
    separating: Sequence = (),
    *,
    points=None,
    tol: float = 1e-12,
    min_separation: float = 1e-6,
    assumption_tol: float = 1e-9,
) -> PairReport:
    """Check that ``m1``, ``m2`` witness non-identifiability for the ``matched`` tasks.

    ``tol``: max abs predictor difference allowed on matched tasks (round-off of exactly constructed pairs is
    ~1e-16 per entry; 1e-12 leaves room for products of a few matrices). ``min_separation``: the relabeling
    distance and the gaps on ``separating`` tasks must exceed it. G-HMM predictors are compared on ``points``.
    """
    problems = tuple(
        p for p in (_assumption_problem(m1, assumption_tol), _assumption_problem(m2, assumption_tol)) if p
    )
    gaps = {str(t): predictor_gap(m1, m2, t, points) for t in matched}
    seps = {str(t): predictor_gap(m1, m2, t, points) for t in separating}
    return PairReport(gaps, seps, relabeling_distance(m1, m2).error, problems, tol, min_separation)


@dataclass(frozen=True)
class RecoveryReport:
    task: str
    error: float
    tol: float

    @property
    def ok(self) -> bool:
        return self.error <= self.tol


def verify_recovery(model: HMM | GHMM, task: str, pred=None, tol: float = 1e-6, **kwargs) -> RecoveryReport:
    """Recover parameters from ``pred`` (default: the exact predictor of ``model``) and compare with ``model`` up
    to relabeling (max abs entry error of emission and transition)."""
    pred = optimal_predictor(model, task) if pred is None else pred
    try:
        rec = recover_from_predictor(pred, model.k, task, validate=False, **kwargs)
    except (np.linalg.LinAlgError, AssumptionError):
        return RecoveryReport(task, float("inf"), tol)
    return RecoveryReport(task, relabeling_distance(model, rec).error, tol)


def predictor_enumeration_gap(model: HMM | GHMM, target, given: int, points=None) -> float:
    """max |closed form - sum over hidden paths| of the optimal predictor."""
    f = optimal_predictor(model, target, given)
    g = predictor_by_enumeration(model, target, given)
    if isinstance(model, GHMM):
        f, g = f(points), g(points)
    return float(np.max(np.abs(f - g)))
