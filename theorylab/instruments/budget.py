"""Search budgets: a cap on examples and on wall-clock seconds, and the record of which one stopped a search."""

from __future__ import annotations

import math
from dataclasses import dataclass

from theorylab._fmt import plain


@dataclass(frozen=True)
class Budget:
    """At most ``max_examples`` evaluations of the statement and at most ``seconds`` of searching.

    The search phase stops at whichever comes first. Shrinking a counterexample once found gets at most
    ``shrink_seconds`` more (hypothesis shrinking: the smallest failing instance seen by then is returned; continuous
    parameters: one pass of rational rounding per coordinate).
    """

    max_examples: int = 200
    seconds: float = 10.0
    shrink_seconds: float = 5.0

    def __post_init__(self) -> None:
        if (
            not isinstance(self.max_examples, int)
            or isinstance(self.max_examples, bool)
            or self.max_examples < 1
        ):
            raise ValueError(f"Budget.max_examples must be a positive int, got {plain(self.max_examples)}")
        if not isinstance(self.seconds, int | float) or not math.isfinite(self.seconds) or self.seconds <= 0:
            raise ValueError(f"Budget.seconds must be a positive finite number, got {plain(self.seconds)}")
        sh = self.shrink_seconds
        if not isinstance(sh, int | float) or not math.isfinite(sh) or sh < 0:
            raise ValueError(f"Budget.shrink_seconds must be a finite number >= 0, got {sh!r}")


def as_budget(budget: Budget | int | None) -> Budget:
    """``None`` -> the default budget; an int -> that many examples with the default time cap."""
    if budget is None:
        return Budget()
    if isinstance(budget, Budget):
        return budget
    if isinstance(budget, int) and not isinstance(budget, bool):
        return Budget(max_examples=budget)
    raise TypeError(f"budget must be a Budget or an int (max examples), got {type(budget).__name__}")
