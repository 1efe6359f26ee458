"""Claim checks of the NCE proofs of Liu §4.1.3 that the main NCE checks do not cover (Prop 8)."""

from __future__ import annotations

import numpy as np
import pytest

from theorylab.estimation import nce_proofs_counterexamples as cx


@pytest.fixture(scope="module")
def excess_tables() -> dict:
    return {(R, d): cx.prop8_excess(R, d) for R in (4.0, 6.0) for d in (0.01, 0.1)}


def _taylor_verdict(t: dict, values: np.ndarray) -> bool:
    """The excess in every direction equals delta^2/2 u^T H_* u up to the cubic Taylor term: relative error
    <= delta (measured ~0.35 delta)."""
    return bool(np.all(np.abs(values / t["taylor"] - 1) <= float(t["delta"])))


@pytest.mark.claim("nce.prop8", tier="exact")
def test_prop8_excess_is_the_direction_dependent_quadratic_form_below_the_printed_value(
    excess_tables, measure
) -> None:
    for (R, d), t in excess_tables.items():
        assert (t["excess"] > 0).all()
        assert _taylor_verdict(t, t["excess"])
        assert t["excess"].max() <= t["printed"]  # the corrected statement: an upper bound
        spread = t["excess"].max() / t["excess"].min()
        assert abs(spread / t["kappa_star"] - 1) <= 2 * d  # the excess ranges over a factor kappa_*
        if d == 0.01:
            measure(f"max_excess_over_printed_R{int(R)}", float(t["excess"].max() / t["printed"]))
            measure(f"excess_spread_R{int(R)}", float(spread))


@pytest.mark.claim("nce.prop8", tier="exact", control=True)
def test_prop8_control_the_printed_equality_fails_the_same_verdict(excess_tables) -> None:
    for t in excess_tables.values():
        printed = np.full_like(t["excess"], float(t["printed"]))
        assert not _taylor_verdict(t, printed)
        assert np.abs(printed / t["excess"] - 1).min() > 5  # off by more than a factor 6 in every direction
