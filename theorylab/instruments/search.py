"""Counterexample search and shrinking.

``search_counterexample(predicate, strategy | space, budget)`` looks for an instance on which a statement fails.

* ``strategy``: a hypothesis strategy, or a dict ``{name: strategy}`` (the predicate is then called with keyword
  arguments). Hypothesis generates, and shrinks the first failure to a minimal one.
* ``space``: a dict ``{name: (low, high)}`` of continuous parameters (and ``{name: [choices]}`` of discrete ones).
  Uniform random restarts, then Nelder-Mead (scipy) on the predicate's margin from the best points; a failure is
  shrunk by rounding each coordinate to the shortest rational (smallest denominator) on which it still fails, and
  each discrete parameter to the earliest listed choice on which it still fails.

The predicate states the claim on one instance and returns ``True``/``False`` (holds / fails), a real margin (the
statement holds iff the margin is > 0; the search minimises it), ``(holds_or_margin, {name: value})`` to report the
values it compared, or ``None`` when the instance is outside the statement's hypotheses (skipped).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

import numpy as np

from theorylab._extras import require
from theorylab._fmt import plain
from theorylab.instruments.budget import Budget, as_budget

__all__ = [
    "Counterexample",
    "NoCounterexample",
    "PredicateError",
    "Outcome",
    "evaluate",
    "search_counterexample",
]


class PredicateError(RuntimeError):
    """The user's predicate raised; the message names the instance, ``__cause__`` is the original error."""

    def __init__(self, instance: Mapping[str, Any], error: BaseException):
        self.instance = dict(instance)
        self.error = error
        super().__init__(
            f"the predicate raised {type(error).__name__}: {error} on the instance {_show(self.instance)}"
        )


@dataclass(frozen=True)
class Outcome:
    holds: bool | None  # None: outside the statement's hypotheses
    margin: float  # > 0 iff holds (+inf when skipped)
    values: dict[str, Any] = field(default_factory=dict)


def _show(params: Mapping[str, Any]) -> str:
    def one(v):
        if isinstance(v, np.ndarray):
            return np.array2string(v, precision=6, threshold=40)
        return repr(v)

    return "{" + ", ".join(f"{k}={one(v)}" for k, v in params.items()) + "}"


def evaluate(predicate: Callable, params: Mapping[str, Any], keywords: bool = True) -> Outcome:
    """Run ``predicate`` on one instance and normalise what it returns; wrap any error in :class:`PredicateError`."""
    try:
        out = predicate(**params) if keywords else predicate(*params.values())
    except Exception as exc:  # noqa: BLE001 - re-raised with the instance
        raise PredicateError(params, exc) from exc
    values: dict[str, Any] = {}
    if isinstance(out, tuple):
        if len(out) != 2 or not isinstance(out[1], Mapping):
            raise TypeError(
                "a predicate returning a tuple must return (holds_or_margin, {name: value}), got "
                f"{out!r} on {_show(params)}"
            )
        out, values = out[0], dict(out[1])
    if out is None:
        return Outcome(None, math.inf, values)
    if isinstance(out, bool | np.bool_):
        return Outcome(bool(out), 1.0 if out else -1.0, values)
    if isinstance(out, int | float | np.integer | np.floating):
        margin = float(out)
        if math.isnan(margin):
            raise ValueError(f"the predicate returned a NaN margin on the instance {_show(params)}")
        return Outcome(margin > 0, margin, values)
    raise TypeError(
        "a predicate must return a bool, a real margin (> 0 iff the statement holds), None (instance outside "
        f"the hypotheses) or (bool_or_margin, values); got {type(out).__name__} on {_show(params)}"
    )


@dataclass(frozen=True)
class Counterexample:
    """An instance on which ``statement`` fails, with how it was found.

    ``parameters``: the (shrunk) instance; ``values``: what the predicate reported on it; ``first_parameters``: the
    instance first found, before shrinking; ``examples``: evaluations until the first failure; ``seconds``: time
    to the first failure; ``shrink_seconds``: time spent shrinking.
    """

    claim: str
    statement: str
    parameters: dict[str, Any]
    values: dict[str, Any]
    seed: int
    budget: Budget
    method: str
    examples: int
    seconds: float
    shrink_seconds: float
    first_parameters: dict[str, Any]
    found: bool = True

    def __bool__(self) -> bool:
        return True

    @property
    def size(self) -> float:
        """A size of the instance: sum of absolute values of its numbers plus sequence lengths (seeds excluded)."""
        return instance_size(self.parameters)

    def __str__(self) -> str:
        head = f"{self.claim}: " if self.claim else ""
        return (
            f"{head}counterexample to {self.statement or 'the statement'!r}: {_show(self.parameters)}"
            f" (found after {self.examples} examples, {self.seconds:.3g} s; seed {self.seed}, {self.method})"
        )


@dataclass(frozen=True)
class NoCounterexample:
    """The budget ran out without a failure. ``stopped_by`` is ``"examples"`` or ``"time"``."""

    claim: str
    statement: str
    seed: int
    budget: Budget
    method: str
    examples: int
    seconds: float
    stopped_by: str
    found: bool = False

    def __bool__(self) -> bool:
        return False

    def __str__(self) -> str:
        return (
            f"no counterexample to {self.statement or 'the statement'!r} in {self.examples} examples, "
            f"{self.seconds:.3g} s (stopped by the {self.stopped_by} budget of {self.budget})"
        )


def instance_size(params: Mapping[str, Any]) -> float:
    """Sum of absolute values of the instance's numbers plus the lengths of its sequences; parameters named
    ``seed`` (labels of random draws, not sizes) are left out."""
    total = 0.0
    for name, v in params.items():
        if name == "seed":
            continue
        if isinstance(v, str):
            total += len(v)
            continue
        try:
            arr = np.asarray(v, dtype=float)
        except (TypeError, ValueError):
            try:
                total += len(v)
            except TypeError:
                total += 1
            continue
        total += float(np.abs(arr).sum()) + (arr.size if arr.ndim else 0)
    return total


class _Refuted(Exception):
    pass


class _OutOfTime(BaseException):
    """Raised inside a hypothesis run to end it at once (a BaseException, so hypothesis does not shrink it)."""


def _strategy_of(strategy) -> tuple[Any, bool]:
    """(hypothesis strategy, call the predicate with keywords?)."""
    st = require("hypothesis.strategies", extra="checks")
    SearchStrategy = st.SearchStrategy

    if isinstance(strategy, Mapping):
        bad = [k for k, v in strategy.items() if not isinstance(v, SearchStrategy)]
        if bad or not strategy:
            raise TypeError(
                f"strategy dict values must be hypothesis strategies (bad: {bad or 'empty dict'})"
            )
        return st.fixed_dictionaries(dict(strategy)), True
    if isinstance(strategy, SearchStrategy):
        return strategy.map(lambda x: {"x": x}), False
    raise TypeError(
        f"strategy must be a hypothesis strategy or a dict of them, got {type(strategy).__name__}"
    )


def _hypothesis_search(predicate, strategy, budget: Budget, seed: int, shrink: bool):
    """Generate (and shrink) with hypothesis; returns (last failing params, outcome, first failing params,
    examples, seconds to first, shrink seconds, stopped_by) or raises the predicate's error on a shrunk instance."""
    require("hypothesis", extra="checks")
    from hypothesis import HealthCheck, Phase, given, settings
    from hypothesis import seed as hseed

    strat, keywords = _strategy_of(strategy)
    t0 = time.perf_counter()
    state: dict[str, Any] = {"n": 0, "first": None, "t_first": None, "last": None, "timed_out": False}

    phases = [Phase.generate, Phase.target] + ([Phase.shrink] if shrink else [])

    @settings(
        max_examples=budget.max_examples,
        database=None,
        deadline=None,
        derandomize=False,
        phases=phases,
        suppress_health_check=list(HealthCheck),
        report_multiple_bugs=False,
        print_blob=False,
    )
    @hseed(seed)
    @given(strat)
    def run(params):
        now = time.perf_counter() - t0
        if state["first"] is None:
            if now > budget.seconds:
                state["timed_out"] = True
                raise _OutOfTime
            state["n"] += 1
        elif now > state["t_first"] + budget.shrink_seconds:
            state["shrink_timed_out"] = True
            raise _OutOfTime
        out = evaluate(predicate, params, keywords=keywords)
        if out.holds is False:
            if state["first"] is None:
                state["first"], state["t_first"] = dict(params), time.perf_counter() - t0
            state["last"] = (dict(params), out)
            raise _Refuted

    try:
        run()
    except (_Refuted, _OutOfTime):
        pass
    except PredicateError:
        raise
    except Exception as exc:  # hypothesis wraps or reports; surface a predicate error if there is one
        cause = exc.__cause__ or exc.__context__
        if isinstance(cause, PredicateError):
            raise cause from cause.error
        raise
    total = time.perf_counter() - t0
    if state["first"] is None:
        return None, None, None, state["n"], total, 0.0, "time" if state["timed_out"] else "examples"
    params, out = state["last"]
    return params, out, state["first"], state["n"], state["t_first"], total - state["t_first"], None


# --------------------------------------------------------------------------- continuous spaces


def _parse_space(space) -> tuple[list[str], list[tuple[float, float]], dict[str, list]]:
    if not isinstance(space, Mapping) or not space:
        raise TypeError("space must be a non-empty dict {name: (low, high)} or {name: [choices]}")
    names, bounds, choices = [], [], {}
    for name, spec in space.items():
        if isinstance(spec, tuple) and len(spec) == 2 and all(isinstance(b, int | float) for b in spec):
            lo, hi = float(spec[0]), float(spec[1])
            if not (math.isfinite(lo) and math.isfinite(hi) and lo < hi):
                raise ValueError(f"space[{name!r}] = {spec!r}: need finite low < high")
            names.append(name)
            bounds.append((lo, hi))
        elif isinstance(spec, list | range) and len(spec) > 0:
            choices[name] = list(spec)
        else:
            raise TypeError(
                f"space[{name!r}] must be (low, high) for a continuous parameter or a non-empty list of choices, "
                f"got {spec!r}"
            )
    return names, bounds, choices


class _Found(Exception):
    pass


def _rationalise(value: float, lo: float, hi: float, still_fails: Callable[[float], bool]) -> float:
    """The first of value's best rational approximations with denominators 1, 2, 3, 4, 5, 8, 10, ... (and then
    decimals) that stays in [lo, hi] and keeps the failure; ``value`` itself if none does."""
    for den in (
        1,
        2,
        3,
        4,
        5,
        6,
        8,
        10,
        12,
        16,
        20,
        25,
        32,
        50,
        64,
        100,
        128,
        200,
        256,
        500,
        1000,
        10**4,
        10**5,
    ):
        for cand in {Fraction(value).limit_denominator(den), Fraction(round(value * den), den)}:
            c = float(cand)
            if lo <= c <= hi and c != value and still_fails(c):
                return c
            if c == value:
                return value
    return value


def _minimise_over_space(
    objective: Callable, n_dims: int, choices: dict, rng, max_examples: int, maxfev_per_dim: int, xatol: float
) -> None:
    """Minimise ``objective(u, pick)`` over the unit cube ``[0, 1]^n_dims`` times the discrete ``choices``:
    random points (a third of ``max_examples``, at most 10 per dimension + 10), then Nelder-Mead restarts from the best of them and then from fresh random points
    (scipy, imported here). Runs until ``objective`` raises (its budget is spent, or it found what it looks for)."""

    def draw_pick() -> dict:
        return {k: v[int(rng.integers(len(v)))] for k, v in choices.items()}

    tried = []
    for _ in range(max(1, min(max_examples // 3, 10 * max(1, n_dims) + 10))):
        u, pick = rng.random(n_dims), draw_pick()
        tried.append((objective(u, pick), u, pick))
    if not n_dims:
        while True:
            objective(np.zeros(0), draw_pick())
    from scipy.optimize import minimize

    tried.sort(key=lambda t: t[0])
    while True:  # restarts from the best points, then from fresh random ones
        _, u0, pick = tried.pop(0) if tried else (None, rng.random(n_dims), draw_pick())
        minimize(
            lambda u, pick=pick: objective(u, pick),
            u0,
            method="Nelder-Mead",
            options={"maxfev": maxfev_per_dim * (n_dims + 1), "xatol": xatol, "fatol": 0.0},
        )


def _continuous_search(predicate, space, budget: Budget, seed: int, shrink: bool):
    names, bounds, choices = _parse_space(space)
    rng = np.random.default_rng(seed)
    lo = np.array([b[0] for b in bounds])
    hi = np.array([b[1] for b in bounds])
    t0 = time.perf_counter()
    state: dict[str, Any] = {"n": 0, "first": None, "t_first": None, "timed_out": False}

    def params_of(u: np.ndarray, pick: dict) -> dict[str, Any]:
        x = lo + np.clip(u, 0.0, 1.0) * (hi - lo)
        return {**{n: float(v) for n, v in zip(names, x, strict=True)}, **pick}

    def margin(u: np.ndarray, pick: dict) -> float:
        if state["n"] >= budget.max_examples or time.perf_counter() - t0 > budget.seconds:
            state["timed_out"] = time.perf_counter() - t0 > budget.seconds
            raise StopIteration
        state["n"] += 1
        params = params_of(u, pick)
        out = evaluate(predicate, params)
        if out.holds is False:
            state["first"], state["t_first"] = (params, out), time.perf_counter() - t0
            raise _Found
        return out.margin if math.isfinite(out.margin) else 1e300

    try:
        _minimise_over_space(
            margin, len(names), choices, rng, budget.max_examples, maxfev_per_dim=50, xatol=1e-12
        )
    except StopIteration:
        return (
            None,
            None,
            None,
            state["n"],
            time.perf_counter() - t0,
            0.0,
            ("time" if state["timed_out"] else "examples"),
        )
    except _Found:
        pass
    params, out = state["first"]
    first = dict(params)
    t_shrink = time.perf_counter()
    if shrink:
        for _ in range(2):  # a second pass: a simpler choice can admit simpler rationals
            for name, (a, b) in zip(names, bounds, strict=True):

                def still_fails(c: float, name=name) -> bool:
                    try:
                        return evaluate(predicate, {**params, name: c}).holds is False
                    except PredicateError:
                        return False

                params[name] = _rationalise(params[name], a, b, still_fails)
            for (
                name,
                options,
            ) in choices.items():  # discrete choices: the earliest listed one that still fails
                for option in options:
                    if option == params[name]:
                        break
                    try:
                        if evaluate(predicate, {**params, name: option}).holds is False:
                            params[name] = option
                            break
                    except PredicateError:
                        continue
        out = evaluate(predicate, params)
        assert out.holds is False
    return params, out, first, state["n"], state["t_first"], time.perf_counter() - t_shrink, None


def search_counterexample(
    predicate: Callable[..., Any],
    strategy=None,
    *,
    space: Mapping[str, Any] | None = None,
    budget: Budget | int | None = None,
    claim: str = "",
    statement: str = "",
    seed: int = 0,
    shrink: bool = True,
) -> Counterexample | NoCounterexample:
    """Search for an instance on which ``predicate`` (the claimed statement) fails; see the module docstring.

    Returns a :class:`Counterexample` (truthy) with the shrunk failing instance, or a :class:`NoCounterexample`
    (falsy) saying which budget stopped the search. A predicate that raises is reported as a
    :class:`PredicateError` naming the (shrunk, for hypothesis searches) instance that made it raise.
    """
    if not callable(predicate):
        raise TypeError(f"predicate must be callable, got {type(predicate).__name__}")
    if (strategy is None) == (space is None):
        raise TypeError("give exactly one of strategy (hypothesis) or space (continuous parameters)")
    if not isinstance(seed, int) or isinstance(seed, bool):
        raise TypeError(f"seed must be an int, got {plain(seed)}")
    budget = as_budget(budget)
    if strategy is not None:
        method = "hypothesis"
        found = _hypothesis_search(predicate, strategy, budget, seed, shrink)
    else:
        method = "random restarts + Nelder-Mead"
        found = _continuous_search(predicate, space, budget, seed, shrink)
    params, out, first, n, secs, shrink_secs, stopped_by = found
    if params is None:
        return NoCounterexample(claim, statement, seed, budget, method, n, secs, stopped_by)
    return Counterexample(
        claim=claim,
        statement=statement,
        parameters=params,
        values=out.values,
        seed=seed,
        budget=budget,
        method=method,
        examples=n,
        seconds=secs,
        shrink_seconds=shrink_secs,
        first_parameters=first,
    )
