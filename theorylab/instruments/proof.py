"""Proofs as ledgers of steps: each step is a named relation between two quantities of the same instance.

``Proof([Step("(2.52)", lhs, rhs, "<="), ...]).check(strategy | space, budget)`` searches each step in order for an
instance where its relation fails (:func:`search_counterexample`, same budget per step) and reports the first step
that fails with a shrunk instance, or that every step held within the budget.
"""

from __future__ import annotations

import math
import operator
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from theorylab._fmt import plain
from theorylab.instruments.budget import Budget
from theorylab.instruments.search import Counterexample, NoCounterexample, search_counterexample

__all__ = ["Step", "Proof", "ProofReport"]

_RELATIONS: dict[str, Callable[[Any, Any], bool]] = {
    "==": operator.eq,
    "=": operator.eq,
    "<=": operator.le,
    "<": operator.lt,
    ">=": operator.ge,
    ">": operator.gt,
    "!=": operator.ne,
}


@dataclass(frozen=True)
class Step:
    """``lhs(instance) relation rhs(instance)``; ``tol`` >= 0 loosens float comparisons (``==`` within tol,
    ``<=`` up to +tol, ...); exact (``tol = 0``) for ints, Fractions and sympy numbers."""

    name: str
    lhs: Callable[..., Any]
    rhs: Callable[..., Any]
    relation: str = "=="
    tol: float = 0.0

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name.strip():
            raise ValueError("a Step needs a non-empty name")
        if self.relation not in _RELATIONS:
            raise ValueError(
                f"step {self.name!r}: unknown relation {self.relation!r} (allowed: {', '.join(_RELATIONS)})"
            )
        if not (callable(self.lhs) and callable(self.rhs)):
            raise TypeError(f"step {self.name!r}: lhs and rhs must be callables of the instance")
        if not (isinstance(self.tol, int | float | Fraction) and self.tol >= 0 and math.isfinite(self.tol)):
            raise ValueError(f"step {self.name!r}: tol must be a finite number >= 0, got {plain(self.tol)}")

    def holds(self, a, b) -> bool:
        t = self.tol
        if t == 0:
            return bool(_RELATIONS[self.relation](a, b))
        if self.relation in ("==", "="):
            return bool(abs(a - b) <= t)
        if self.relation == "!=":
            return bool(abs(a - b) > t)
        if self.relation in ("<=", "<"):
            return bool(a <= b + t)
        return bool(a >= b - t)

    def predicate(self, keywords: bool) -> Callable[..., tuple[bool, dict]]:
        def check(*args, **kwargs):
            a, b = self.lhs(*args, **kwargs), self.rhs(*args, **kwargs)
            return self.holds(a, b), {"lhs": a, "rhs": b}

        return check


@dataclass(frozen=True)
class ProofReport:
    """``first_failure``: index and name of the first step with a counterexample (``None`` if all held),
    ``counterexample``: its shrunk instance and the two sides; ``searched``: one result per step searched."""

    statement: str
    first_failure: tuple[int, str] | None
    counterexample: Counterexample | None
    searched: tuple[Counterexample | NoCounterexample, ...]

    @property
    def holds(self) -> bool:
        return self.first_failure is None

    def __str__(self) -> str:
        if self.first_failure is None:
            return f"every step held in {sum(s.examples for s in self.searched)} examples"
        i, name = self.first_failure
        cx = self.counterexample
        return (
            f"step {i + 1} ({name}) fails: lhs = {cx.values.get('lhs')!r}, rhs = {cx.values.get('rhs')!r} "
            f"at {cx.parameters}"
        )


class Proof:
    """A chain of :class:`Step` s over the same instance."""

    def __init__(self, steps: Sequence[Step], statement: str = ""):
        steps = tuple(steps)
        if not steps:
            raise ValueError("a Proof needs at least one Step")
        bad = [type(s).__name__ for s in steps if not isinstance(s, Step)]
        if bad:
            raise TypeError(f"a Proof is a list of Step objects, got {', '.join(bad)}")
        names = [s.name for s in steps]
        if len(set(names)) != len(names):
            raise ValueError(f"step names must be distinct, got {names}")
        self.steps = steps
        self.statement = statement

    def evaluate(self, **instance) -> list[tuple[str, Any, Any, bool]]:
        """(name, lhs, rhs, holds) of every step on one instance (keyword arguments)."""
        out = []
        for s in self.steps:
            a, b = s.lhs(**instance), s.rhs(**instance)
            out.append((s.name, a, b, s.holds(a, b)))
        return out

    def check(
        self,
        strategy=None,
        *,
        space: Mapping[str, Any] | None = None,
        budget: Budget | int | None = None,
        seed: int = 0,
        claim: str = "",
    ) -> ProofReport:
        """Search the steps in order; stop at the first one with a counterexample."""
        searched = []
        for i, s in enumerate(self.steps):
            found = search_counterexample(
                s.predicate(True),
                strategy,
                space=space,
                budget=budget,
                seed=seed,
                claim=claim,
                statement=f"{s.name}: lhs {s.relation} rhs",
            )
            searched.append(found)
            if found:
                return ProofReport(self.statement, (i, s.name), found, tuple(searched))
        return ProofReport(self.statement, None, None, tuple(searched))
