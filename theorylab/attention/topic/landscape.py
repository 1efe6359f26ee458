r"""Loss landscapes over the attention parameters $(\alpha, \beta)$ (Li thesis §2.1.5.5, Figs 2.7 and 2.8).

On a log grid of $(\alpha, \beta)$ the exact finite-size losses of Thm 2.1.5 (frozen diagonal $\mathbf D^V$) and
Thm 2.1.3 (frozen block optimum, through $\gamma = \frac{v-1}v\alpha + \frac1v\beta$) are evaluated; the "low
region" of a landscape is $\{L \le L_{\min} + \delta\,(L_{\max} - L_{\min})\}$ for a fraction $\delta$ of its range.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from theorylab.attention.topic.stage2 import block_attention_loss, diagonal_attention_loss
from theorylab.languages.topic import TopicModel

KINDS = ("diagonal", "block")

__all__ = ["KINDS", "LowRegion", "landscape", "low_region", "summarise_low_region"]


def landscape(
    params: TopicModel, kind: str, log10_range: tuple[float, float] = (-4.0, 7.0), points: int = 111
) -> tuple[np.ndarray, np.ndarray]:
    r"""``(grid, L)`` with ``L[i, j]`` the loss at $\alpha = $ ``grid[i]``, $\beta = $ ``grid[j]`` (thesis
    convention)."""
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {KINDS}, got {kind!r}")
    lo, hi = log10_range
    if not (np.isfinite(lo) and np.isfinite(hi) and lo < hi):
        raise ValueError(f"log10_range must be an increasing pair of finite numbers, got {log10_range}")
    if int(points) != points or points < 2:
        raise ValueError(f"points must be an integer >= 2, got {points}")
    grid = 10.0 ** np.linspace(lo, hi, int(points))
    A, B = np.meshgrid(grid, grid, indexing="ij")
    if kind == "diagonal":
        return grid, diagonal_attention_loss(A, B, params)
    gamma = ((params.v - 1) * A + B) / params.v
    return grid, block_attention_loss(gamma, params)


def low_region(L: np.ndarray, fraction: float) -> np.ndarray:
    r"""Mask of $L \le L_{\min} + \delta(L_{\max} - L_{\min})$, $\delta$ = ``fraction`` in $(0, 1)$."""
    if not 0 < fraction < 1:
        raise ValueError(f"fraction must lie in (0, 1), got {fraction}")
    L = np.asarray(L, dtype=float)
    if L.ndim != 2 or not np.isfinite(L).all():
        raise ValueError("L must be a finite 2-D array")
    lo, hi = L.min(), L.max()
    return L <= lo + fraction * (hi - lo)


@dataclass(frozen=True)
class LowRegion:
    """What a landscape's low region looks like: its projections and its shape."""

    beta_interval: tuple[float, float]  # smallest and largest beta with a low point
    alpha_interval: tuple[float, float]
    max_alpha_over_beta: float  # over the low points
    argmin: tuple[float, float]  # (alpha, beta) of the grid minimum
    gamma_interval: tuple[float, float]  # range of gamma = ((v-1) alpha + beta) / v over the low points


def summarise_low_region(grid: np.ndarray, L: np.ndarray, fraction: float, v: int) -> LowRegion:
    """Projections, alpha/beta ratio and gamma band of the low region of ``L`` on ``grid`` x ``grid``."""
    mask = low_region(L, fraction)
    if L.shape != (len(grid), len(grid)):
        raise ValueError(f"L has shape {L.shape}, expected {(len(grid), len(grid))}")
    ia, ib = np.nonzero(mask)
    i, j = np.unravel_index(int(np.argmin(L)), L.shape)
    gamma = ((v - 1) * grid[ia] + grid[ib]) / v
    return LowRegion(
        beta_interval=(float(grid[ib].min()), float(grid[ib].max())),
        alpha_interval=(float(grid[ia].min()), float(grid[ia].max())),
        max_alpha_over_beta=float((grid[ia] / grid[ib]).max()),
        argmin=(float(grid[i]), float(grid[j])),
        gamma_interval=(float(gamma.min()), float(gamma.max())),
    )
