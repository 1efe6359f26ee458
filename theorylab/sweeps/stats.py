"""Statistics over the replicates of a sweep: bootstrap intervals over seeds, the share of runs with zero errors
(with its exact Clopper-Pearson interval), a rank test between two configurations, and a verdict that stays open
when the population cannot decide or was not trained.

A population claim such as "training on the mixture leaves no error in some runs" (flip-flop R4) or "the maximum
error is far above the median" (automata E2) is a statement about the distribution of a metric over seeds; these
helpers turn the stored numbers into such statements with stated tests. A verdict refuses an under-trained
population: if fewer than ``min_trained`` of the runs reach the in-distribution accuracy bar, it is ``"open"``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np


def _values(x, name: str = "values") -> np.ndarray:
    arr = np.asarray(x, dtype=float).reshape(-1)
    if arr.size == 0:
        raise ValueError(f"{name}: no runs to summarise")
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{name}: non-finite values {arr[~np.isfinite(arr)][:3].tolist()}")
    return arr


def bootstrap_ci(
    values,
    stat: Callable[[np.ndarray], float] = np.median,
    level: float = 0.95,
    n: int = 10_000,
    seed: int = 0,
) -> tuple[float, float, float]:
    """(statistic, lower, upper): the percentile bootstrap interval of ``stat`` over the runs (resampling seeds
    with replacement ``n`` times from ``np.random.default_rng(seed)``)."""
    x = _values(values)
    if not 0 < level < 1:
        raise ValueError(f"level must lie in (0, 1), got {level}")
    if n < 100:
        raise ValueError(f"n must be >= 100 bootstrap resamples, got {n}")
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, x.size, size=(n, x.size))
    boot = np.apply_along_axis(stat, 1, x[idx])
    a = (1 - level) / 2
    return float(stat(x)), float(np.quantile(boot, a)), float(np.quantile(boot, 1 - a))


def zero_share(errors, level: float = 0.95) -> tuple[int, int, float, float]:
    """(runs with zero errors, runs, lower, upper): the Clopper-Pearson interval of the share of runs with no
    error (R4's "no error in 6 of 25 runs" is 6/25 with its interval)."""
    from scipy.stats import beta

    e = _values(errors, "errors")
    if (e < 0).any():
        raise ValueError("errors must be >= 0")
    k, n = int((e == 0).sum()), e.size
    a = (1 - level) / 2
    lo = 0.0 if k == 0 else float(beta.ppf(a, k, n - k + 1))
    hi = 1.0 if k == n else float(beta.ppf(1 - a, k + 1, n - k))
    return k, n, lo, hi


def rank_test(a, b, alternative: str = "less") -> float:
    """p-value of the Mann-Whitney U test that the values of ``a`` are stochastically smaller than ``b``'s
    (``alternative="less"``; "greater" or "two-sided" as in scipy), e.g. a regulariser's errors vs the baseline's."""
    from scipy.stats import mannwhitneyu

    return float(mannwhitneyu(_values(a, "a"), _values(b, "b"), alternative=alternative).pvalue)


@dataclass(frozen=True)
class PopulationVerdict:
    """``status``: "passed", "failed" or "open"; ``reason`` says which statistic decided (or why nothing could)."""

    status: str
    reason: str
    trained: int
    runs: int


def trained_gate(acc, bar: float, min_trained: float = 0.8) -> tuple[int, int, bool]:
    """(runs reaching in-distribution accuracy ``bar``, runs, whether at least ``min_trained`` of them do)."""
    x = _values(acc, "acc")
    k = int((x >= bar).sum())
    return k, x.size, k >= min_trained * x.size


def share_verdict(
    errors, acc, bar: float, claim_low: float, level: float = 0.95, min_trained: float = 0.8
) -> PopulationVerdict:
    """Verdict on "a share of at least ``claim_low`` of the runs has zero errors": passed if the Clopper-Pearson
    interval lies above ``claim_low``, failed if it lies below, open if it straddles it or if the population is
    under-trained (fewer than ``min_trained`` of the runs reach accuracy ``bar``: untrained models never pass)."""
    k_ok, n, ok = trained_gate(acc, bar, min_trained)
    if not ok:
        return PopulationVerdict("open", f"only {k_ok}/{n} runs reach accuracy {bar}: under-trained", k_ok, n)
    k, n, lo, hi = zero_share(errors, level)
    text = f"{k}/{n} runs with zero errors, {level:.0%} interval [{lo:.3f}, {hi:.3f}] vs {claim_low}"
    if lo >= claim_low:
        return PopulationVerdict("passed", text, k_ok, n)
    if hi < claim_low:
        return PopulationVerdict("failed", text, k_ok, n)
    return PopulationVerdict("open", text + ": the replicates cannot decide", k_ok, n)
