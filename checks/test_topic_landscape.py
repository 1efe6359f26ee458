"""Claim checks of Figs 2.7-2.8 (Li thesis §2.1.5.5): the finite-size loss landscapes over (alpha, beta)."""

from __future__ import annotations

import numpy as np
import pytest

from theorylab.attention.topic.landscape import landscape, low_region, summarise_low_region
from theorylab.languages.topic import TopicModel
from theorylab.testing import rejects

T, V, TAUS = 100, 300, (20, 40, 60, 80)
# the "low region": within 1% of the landscape's range above its minimum (the figures' dark shade)
FRACTION = 0.01
# Pins are grid points of a 0.1-decade grid, compared after rounding log10 to 1 decimal (the grid's own spacing);
# gamma band ends to 3 decimals (gamma is a mix of two grid points, not a grid point itself).
DIAG_BETA_LOG10 = {20: (4.1, 5.2), 40: (4.2, 5.3), 60: (4.3, 5.4), 80: (4.3, 5.5)}
BLOCK_GAMMA_LO_LOG10 = {20: 1.553, 40: 1.691, 60: 1.742, 80: 1.772}
ALPHA_OVER_BETA = 0.01  # "alpha less than a constant multiple of beta": the constant we assert


def _summaries(kind: str, transpose: bool = False):
    out = {}
    for tau in TAUS:
        grid, L = landscape(TopicModel(T, V, tau), kind)
        out[tau] = (grid, L.T if transpose else L)
    return out


def fig27_verdict(landscapes) -> bool:
    """Fig 2.7: a bounded beta interval whose lower end grows with tau, alpha/beta bounded on the low region."""
    lows = []
    for tau in TAUS:
        grid, L = landscapes[tau]
        r = summarise_low_region(grid, L, FRACTION, V)
        inside = grid[0] < r.beta_interval[0] and r.beta_interval[1] < grid[-1]
        if not (inside and r.max_alpha_over_beta < ALPHA_OVER_BETA):
            return False
        lows.append(r.beta_interval[0])
    return bool(np.all(np.diff(lows) >= 0) and lows[-1] > lows[0])


def fig28_verdict(landscapes) -> bool:
    """Fig 2.8: the low region is exactly a gamma band (the corner) whose lower end grows strictly with tau."""
    lows = []
    for tau in landscapes:
        grid, L = landscapes[tau]
        r = summarise_low_region(grid, L, FRACTION, V)
        A, B = np.meshgrid(grid, grid, indexing="ij")
        G = ((V - 1) * A + B) / V
        band = (G >= r.gamma_interval[0]) & (G <= r.gamma_interval[1])
        if not np.array_equal(band, low_region(L, FRACTION)) or r.gamma_interval[1] >= grid[-1]:
            return False
        lows.append(r.gamma_interval[0])
    return bool(np.all(np.diff(lows) > 0))


@pytest.mark.claim("topic.fig2.7_2.8", tier="exact")
def test_fig27_diagonal_landscape(measure):
    diag = _summaries("diagonal")
    assert fig27_verdict(diag)
    for tau in TAUS:
        grid, L = diag[tau]
        r = summarise_low_region(grid, L, FRACTION, V)
        assert tuple(np.round(np.log10(r.beta_interval), 1)) == DIAG_BETA_LOG10[tau]
        assert r.alpha_interval[0] == grid[0]  # alpha is free below: any small alpha is low
        measure(
            f"diag_beta_interval_log10_tau{tau}", [float(x) for x in np.round(np.log10(r.beta_interval), 1)]
        )
        measure(f"diag_max_alpha_over_beta_tau{tau}", round(r.max_alpha_over_beta, 5))
    # 5% instead of 1%: the same shape (lower end grows, alpha/beta still bounded by the same constant)
    lows = [summarise_low_region(*diag[tau], 0.05, V) for tau in TAUS]
    assert all(r.max_alpha_over_beta < ALPHA_OVER_BETA for r in lows)
    assert lows[-1].beta_interval[0] > lows[0].beta_interval[0]


@pytest.mark.claim("topic.fig2.7_2.8", tier="exact")
def test_fig28_block_landscape_is_a_gamma_band(measure):
    block = _summaries("block")
    assert fig28_verdict(block)
    for tau in TAUS:
        grid, L = block[tau]
        r = summarise_low_region(grid, L, FRACTION, V)
        assert round(float(np.log10(r.gamma_interval[0])), 3) == BLOCK_GAMMA_LO_LOG10[tau]
        # the corner: both arms reach the grid's lower edge (tiny alpha or tiny beta is low), both are bounded above
        assert r.alpha_interval[0] == grid[0] and r.beta_interval[0] == grid[0]
        assert (
            r.alpha_interval[1] <= V / (V - 1) * r.gamma_interval[1]
            and r.beta_interval[1] <= V * r.gamma_interval[1]
        )
        measure(f"block_gamma_band_log10_tau{tau}", [round(float(x), 3) for x in np.log10(r.gamma_interval)])


@pytest.mark.claim("topic.fig2.7_2.8", tier="exact", control=True)
def test_fig27_28_controls():
    diag, block = _summaries("diagonal"), _summaries("block")
    # the Fig 2.7 verdict rejects the block landscape (alpha unbounded relative to beta) and the transposed one
    assert not fig27_verdict(block)
    assert not fig27_verdict(_summaries("diagonal", transpose=True))
    # the Fig 2.8 verdict rejects the diagonal landscape (not a gamma band) and a reversed tau order
    assert not fig28_verdict(diag)
    assert not fig28_verdict({tau: block[tau] for tau in reversed(TAUS)})
    grid, L = block[20]
    assert summarise_low_region(grid, L, FRACTION, V).max_alpha_over_beta > 1e5


@pytest.mark.claim("topic.fig2.7_2.8", tier="exact", control=True)
def test_landscape_rejects_bad_input():
    p = TopicModel(4, 3, 2)
    rejects(lambda: landscape(p, "blocks"), "kind must be one of")
    rejects(lambda: landscape(p, "block", log10_range=(2.0, 1.0)), "log10_range must be an increasing pair")
    rejects(lambda: landscape(p, "block", points=1), "points must be an integer >= 2")
    rejects(lambda: low_region(np.zeros((2, 2)), 1.0), r"fraction must lie in \(0, 1\)")
    rejects(lambda: low_region(np.array([[np.nan, 0.0]]), 0.1), "L must be a finite 2-D array")
