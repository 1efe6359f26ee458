"""Fitting a declared asymptotic form, with bootstrap confidence intervals and a verdict on a printed exponent.

Built-in forms are linear after taking logs, so each fit is one least-squares solve:

* ``"a*x^b"``: log y = log a + b log x;
* ``"a*b^x"``: log y = log a + x log b;
* ``"a*exp(-b*x)"``: log y = log a - b x;
* ``"a*x^b*exp(-c*x^2)"``: log y = log a + b log x - c x^2.

``"a*x^b*(1+c*x)"`` and ``"a*x^b*(1+c/x)"`` (power laws with a first-order correction, for x -> 0 and for
x -> infinity) are fitted by ``scipy.optimize.curve_fit``
in logs, started from the plain power-law fit; so is any other :class:`Form` (a model function and its parameter names), fitted by ``scipy.optimize.curve_fit``.
Confidence intervals: percentile bootstrap over (x, y) pairs (resamples with fewer distinct x than parameters are
redrawn). The verdict fails (``consistent = False``) when the printed value lies outside the interval of the
exponent. For noise-free data the interval is widened by ``rtol`` relative (float rounding of the fit).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

__all__ = ["Form", "FORMS", "RateFit", "fit_rate"]


@dataclass(frozen=True)
class Form:
    """``y = function(x, *params)``; ``exponent``: the parameter compared with a printed value."""

    name: str
    params: tuple[str, ...]
    function: Callable[..., np.ndarray]
    exponent: str
    # linear-in-logs forms: features(x) -> design matrix, and the map from coefficients to params
    features: Callable[[np.ndarray], np.ndarray] | None = None
    from_coef: Callable[[np.ndarray], np.ndarray] | None = None


FORMS: dict[str, Form] = {
    "a*x^b": Form(
        "a*x^b",
        ("a", "b"),
        lambda x, a, b: a * x**b,
        "b",
        lambda x: np.column_stack([np.ones_like(x), np.log(x)]),
        lambda c: np.array([math.exp(c[0]), c[1]]),
    ),
    "a*b^x": Form(
        "a*b^x",
        ("a", "b"),
        lambda x, a, b: a * b**x,
        "b",
        lambda x: np.column_stack([np.ones_like(x), x]),
        lambda c: np.array([math.exp(c[0]), math.exp(c[1])]),
    ),
    "a*exp(-b*x)": Form(
        "a*exp(-b*x)",
        ("a", "b"),
        lambda x, a, b: a * np.exp(-b * x),
        "b",
        lambda x: np.column_stack([np.ones_like(x), -x]),
        lambda c: np.array([math.exp(c[0]), c[1]]),
    ),
    "a*x^b*exp(-c*x^2)": Form(
        "a*x^b*exp(-c*x^2)",
        ("a", "b", "c"),
        lambda x, a, b, c: a * x**b * np.exp(-c * x**2),
        "b",
        lambda x: np.column_stack([np.ones_like(x), np.log(x), -(x**2)]),
        lambda c: np.array([math.exp(c[0]), c[1], c[2]]),
    ),
    # x -> 0 asymptotics with a first-order correction (e.g. a threshold against a perturbation size)
    "a*x^b*(1+c*x)": Form("a*x^b*(1+c*x)", ("a", "b", "c"), lambda x, a, b, c: a * x**b * (1 + c * x), "b"),
    # x -> infinity asymptotics with a first-order correction (e.g. a rate in n with an O(1/n) term)
    "a*x^b*(1+c/x)": Form("a*x^b*(1+c/x)", ("a", "b", "c"), lambda x, a, b, c: a * x**b * (1 + c / x), "b"),
}
_NEEDS_POSITIVE_X = {"a*x^b", "a*x^b*exp(-c*x^2)", "a*x^b*(1+c*x)", "a*x^b*(1+c/x)"}


@dataclass(frozen=True)
class RateFit:
    """The fitted ``params`` (by name), their bootstrap ``intervals`` at ``level``, the ``printed`` exponent and
    whether it lies in the exponent's interval (``consistent``; ``None`` when nothing was printed)."""

    form: str
    params: dict[str, float]
    intervals: dict[str, tuple[float, float]]
    exponent: str
    printed: float | None
    level: float
    n_points: int
    consistent: bool | None

    @property
    def estimate(self) -> float:
        return self.params[self.exponent]

    @property
    def interval(self) -> tuple[float, float]:
        return self.intervals[self.exponent]

    def __str__(self) -> str:
        lo, hi = self.interval
        s = f"{self.form}: {self.exponent} = {self.estimate:.6g}, {self.level:.0%} CI [{lo:.6g}, {hi:.6g}]"
        if self.printed is not None:
            s += f"; printed {self.printed:g} {'inside' if self.consistent else 'OUTSIDE'} the interval"
        return s


def _fit(form: Form, x: np.ndarray, y: np.ndarray, p0=None) -> np.ndarray:
    if form.features is not None:
        coef, *_ = np.linalg.lstsq(form.features(x), np.log(y), rcond=None)
        return form.from_coef(coef)
    from scipy.optimize import curve_fit

    if p0 is None and "a" in form.params and "b" in form.params and np.all(x > 0) and np.all(y > 0):
        a, b = _fit(FORMS["a*x^b"], x, y)
        p0 = [{"a": a, "b": b}.get(p, 0.0) for p in form.params]
    if np.all(y > 0):  # fit in logs: relative errors, as for the linear forms
        with np.errstate(invalid="ignore", divide="ignore"):
            popt, _ = curve_fit(
                lambda x, *p: np.log(np.abs(form.function(x, *p)) + 1e-300), x, np.log(y), p0=p0, maxfev=20000
            )
    else:
        popt, _ = curve_fit(form.function, x, y, p0=p0, maxfev=20000)
    return np.asarray(popt, dtype=float)


def fit_rate(
    xs: Sequence[float] | np.ndarray,
    ys: Sequence[float] | np.ndarray,
    form: str | Form,
    printed: float | None = None,
    *,
    level: float = 0.95,
    n_boot: int = 1000,
    seed: int = 0,
    rtol: float = 1e-9,
) -> RateFit:
    """Fit ``ys ~ form(xs)``; bootstrap intervals; verdict on the ``printed`` exponent (see the module)."""
    if isinstance(form, str):
        if form not in FORMS:
            raise ValueError(f"unknown form {form!r}; built-in forms: {', '.join(FORMS)} (or pass a Form)")
        form = FORMS[form]
    elif not isinstance(form, Form):
        raise TypeError(f"form must be a form name or a Form, got {type(form).__name__}")
    x = np.asarray(xs, dtype=float)
    y = np.asarray(ys, dtype=float)
    if x.ndim != 1 or x.shape != y.shape:
        raise ValueError(f"xs and ys must be 1-d of equal length, got shapes {x.shape} and {y.shape}")
    if not (np.all(np.isfinite(x)) and np.all(np.isfinite(y))):
        raise ValueError("xs and ys must be finite (found NaN or inf)")
    n_par = len(form.params)
    distinct = len(np.unique(x))
    if distinct <= n_par:
        raise ValueError(
            f"the form {form.name!r} has {n_par} parameters but there are only {distinct} distinct x values: "
            f"need at least {n_par + 1} to fit and bootstrap it"
        )
    if form.features is not None and np.any(y <= 0):
        raise ValueError(f"the form {form.name!r} is fitted in logs and needs ys > 0")
    if form.name in _NEEDS_POSITIVE_X and np.any(x <= 0):
        raise ValueError(f"the form {form.name!r} needs xs > 0")
    if not 0 < level < 1:
        raise ValueError(f"level must lie in (0, 1), got {level}")
    if n_boot < 100:
        raise ValueError(f"n_boot must be >= 100 for a percentile interval, got {n_boot}")
    est = _fit(form, x, y)
    rng = np.random.default_rng(seed)
    boots = []
    while len(boots) < n_boot:
        idx = rng.integers(0, len(x), len(x))
        if len(np.unique(x[idx])) < n_par:
            continue
        try:
            boots.append(_fit(form, x[idx], y[idx], p0=est))
        except RuntimeError:  # curve_fit did not converge on this resample
            continue
    boots = np.array(boots)
    alpha = (1 - level) / 2
    lo, hi = np.quantile(boots, [alpha, 1 - alpha], axis=0)
    pad = rtol * np.maximum(np.abs(est), 1.0)
    intervals = {
        p: (float(min(lo[i], est[i]) - pad[i]), float(max(hi[i], est[i]) + pad[i]))
        for i, p in enumerate(form.params)
    }
    consistent = None
    if printed is not None:
        if not math.isfinite(printed):
            raise ValueError(f"printed exponent must be finite, got {printed}")
        a, b = intervals[form.exponent]
        consistent = bool(a <= printed <= b)
    return RateFit(
        form=form.name,
        params={p: float(v) for p, v in zip(form.params, est, strict=True)},
        intervals=intervals,
        exponent=form.exponent,
        printed=printed,
        level=level,
        n_points=len(x),
        consistent=consistent,
    )
