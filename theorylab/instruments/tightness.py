"""How tight is a bound ``lhs <= rhs``: the largest ratio lhs/rhs (or difference lhs - rhs) over instances.

Discrete or structured instances: hypothesis with ``target(ratio)`` (its targeted phase climbs the ratio). Continuous
parameters: random restarts, then Nelder-Mead (scipy) maximising the ratio from the best points. The verdict:

* ``"violated"`` when some instance has ratio > 1 (the bound is false there);
* ``"tight to N digits"`` when the best ratio is within 10^-N of 1 (N >= 2; ``"tight (attained)"`` when it equals
  1 up to float rounding, 4 ulps);
* ``"loose by Kx"`` otherwise, with K = 1 / best ratio (3 significant digits).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from theorylab._extras import require
from theorylab._fmt import plain
from theorylab.instruments.budget import Budget, as_budget
from theorylab.instruments.search import (
    PredicateError,
    _minimise_over_space,
    _OutOfTime,
    _parse_space,
    _show,
    _strategy_of,
)

__all__ = ["Tightness", "tightness", "tightness_verdict"]

#: ratios within this of 1 count as attained (a few ulps of float64 rounding of lhs and rhs).
ATTAINED_RTOL = 4 * np.finfo(float).eps


@dataclass(frozen=True)
class Tightness:
    """``best``: the largest lhs/rhs (mode ``ratio``) or lhs - rhs (mode ``gap``) found; ``instance``: where;
    ``lhs``, ``rhs``: the two sides there; ``examples``/``seconds``: work done; ``verdict``: see the module."""

    best: float
    instance: dict[str, Any]
    lhs: float
    rhs: float
    mode: str
    examples: int
    seconds: float
    verdict: str

    @property
    def violated(self) -> bool:
        return self.verdict == "violated"

    def __str__(self) -> str:
        name = "lhs/rhs" if self.mode == "ratio" else "lhs - rhs"
        return f"{self.verdict} (max {name} = {self.best:.10g} at {_show(self.instance)})"


def tightness_verdict(
    best: float, mode: str = "ratio", scale: float = 1.0, rtol: float = ATTAINED_RTOL
) -> str:
    """The verdict string for a best ratio (or, in mode ``gap``, a best difference relative to ``scale``); ratios
    within ``rtol`` of 1 count as attained (the float error of evaluating lhs and rhs)."""
    if mode == "gap":
        best = 1.0 + best / scale  # a gap g at scale s reads like the ratio 1 + g/s
    if best > 1 + rtol:
        return "violated"
    if best >= 1 - rtol:
        return "tight (attained)"
    digits = math.floor(-math.log10(1 - best))
    if digits >= 2:
        return f"tight to {digits} digits"
    if best <= 0:
        return "loose (lhs/rhs <= 0 everywhere searched)"
    return f"loose by {1 / best:.3g}x"


def _value(lhs, rhs, params, keywords: bool, mode: str) -> tuple[float, float, float]:
    try:
        a = lhs(**params) if keywords else lhs(*params.values())
        b = rhs(**params) if keywords else rhs(*params.values())
    except Exception as exc:  # noqa: BLE001
        raise PredicateError(params, exc) from exc
    a, b = float(a), float(b)
    if not (math.isfinite(a) and math.isfinite(b)):
        raise ValueError(f"non-finite side at {_show(params)}: lhs = {a}, rhs = {b}")
    if mode == "gap":
        return a - b, a, b
    if b <= 0:
        raise ValueError(
            f"the ratio lhs/rhs needs rhs > 0, got rhs = {b} at {_show(params)} (use mode='gap' for signed bounds)"
        )
    r = a / b
    if not math.isfinite(r):
        raise ValueError(f"non-finite ratio lhs/rhs = {a}/{b} at {_show(params)}")
    return r, a, b


def tightness(
    lhs: Callable[..., float],
    rhs: Callable[..., float],
    strategy=None,
    *,
    space: Mapping[str, Any] | None = None,
    budget: Budget | int | None = None,
    mode: str = "ratio",
    seed: int = 0,
    rtol: float = ATTAINED_RTOL,
) -> Tightness:
    """Maximise ``lhs/rhs`` (``mode="ratio"``, needs rhs > 0) or ``lhs - rhs`` (``mode="gap"``) over instances
    drawn from ``strategy`` (hypothesis) or ``space`` (continuous, as in :func:`search_counterexample`). ``rtol``:
    the relative float error of evaluating the two sides (default 4 ulps); ratios within it of 1 count as attained."""
    if not (isinstance(rtol, int | float) and 0 <= rtol < 0.01):
        raise ValueError(f"rtol must lie in [0, 0.01), got {plain(rtol)}")
    if mode not in ("ratio", "gap"):
        raise ValueError(f"mode must be 'ratio' or 'gap', got {mode!r}")
    if not (callable(lhs) and callable(rhs)):
        raise TypeError("lhs and rhs must be callables of the instance")
    if (strategy is None) == (space is None):
        raise TypeError("give exactly one of strategy (hypothesis) or space (continuous parameters)")
    budget = as_budget(budget)
    t0 = time.perf_counter()
    best: dict[str, Any] = {"r": -math.inf, "params": None, "a": None, "b": None, "n": 0}

    def record(params, keywords):
        r, a, b = _value(lhs, rhs, params, keywords, mode)
        best["n"] += 1
        if r > best["r"]:
            best.update(r=r, params=dict(params), a=a, b=b)
        return r

    if strategy is not None:
        require("hypothesis", extra="checks")
        from hypothesis import HealthCheck, Phase, given, settings, target
        from hypothesis import seed as hseed

        strat, keywords = _strategy_of(strategy)

        @settings(
            max_examples=budget.max_examples,
            database=None,
            deadline=None,
            derandomize=False,
            phases=[Phase.generate, Phase.target],
            suppress_health_check=list(HealthCheck),
            print_blob=False,
        )
        @hseed(seed)
        @given(strat)
        def run(params):
            if time.perf_counter() - t0 > budget.seconds:
                raise _OutOfTime
            target(record(params, keywords), label="lhs/rhs")

        try:
            run()
        except _OutOfTime:
            pass
        except (PredicateError, ValueError):
            raise
        except Exception as exc:
            cause = exc.__cause__ or exc.__context__
            if isinstance(cause, PredicateError | ValueError):
                raise cause from None
            raise
    else:
        names, bounds, choices = _parse_space(space)
        rng = np.random.default_rng(seed)
        lo = np.array([b[0] for b in bounds])
        hi = np.array([b[1] for b in bounds])

        class _Stop(Exception):
            pass

        def neg(u, pick):
            if best["n"] >= budget.max_examples or time.perf_counter() - t0 > budget.seconds:
                raise _Stop
            x = lo + np.clip(u, 0, 1) * (hi - lo)
            return -record({**{n: float(v) for n, v in zip(names, x, strict=True)}, **pick}, True)

        try:
            _minimise_over_space(
                neg, len(names), choices, rng, budget.max_examples, maxfev_per_dim=60, xatol=1e-13
            )
        except _Stop:
            pass
    if best["params"] is None:
        raise ValueError("tightness: the budget allowed no evaluation")
    scale = max(abs(best["a"]), abs(best["b"]), 1e-300)
    return Tightness(
        best=best["r"],
        instance=best["params"],
        lhs=best["a"],
        rhs=best["b"],
        mode=mode,
        examples=best["n"],
        seconds=time.perf_counter() - t0,
        verdict=tightness_verdict(best["r"], mode, scale, rtol),
    )
