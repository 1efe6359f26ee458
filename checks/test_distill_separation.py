"""Claim checks of the checkable part of Theorems 22-23 (Liu §4.2.4, §4.2.6): the student's first population
distillation step separates the parity's support with a margin Theta(d^{-(k-1)/2}) from the final teacher
(one-shot) and Theta(c) from a checkpoint with in-support degree-1 correlation c (progressive), so the Claim 8 batch
is Theta(d^{k-1} log) against O(c^{-2} log)."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest

from theorylab.nn import distill as ds
from theorylab.nn import distill_separation as sp
from theorylab.testing import rejects

M, DELTA = 40, 0.1


def _gaps(d: int, k: int, c: Fraction, seed: int = 0, wrong: bool = False) -> tuple[float, float, np.ndarray]:
    net = ds.symmetric_init(d, M, k, np.random.default_rng(seed))
    S = tuple(range(k))
    g1 = sp.distillation_first_layer_gradient(net, sp.teacher_values(d, S))
    on = range(k, 2 * k) if wrong else None
    gp = sp.distillation_first_layer_gradient(net, sp.teacher_values(d, S, float(c), degree_one_on=on))
    assert np.abs(g1 - ds.population_first_layer_gradient(net, S)).max() <= 1e-15  # one-shot = labels
    return sp.separation_gap(g1, S), sp.separation_gap(gp, S), g1


@pytest.mark.claim("distill.thm22_first_step", tier="exact")
@pytest.mark.parametrize("d", [9, 11])
def test_first_step_gaps_equal_the_closed_forms(d: int, measure) -> None:
    """k = 4, m = 40 (seed 0), c = 1/k: the enumerated gradients give margins (|zeta_3| - |zeta_5|)/2 (one-shot,
    = the label gradient of Claim 7) and (c - |zeta_3| - |zeta_5|)/2 (progressive) to 1e-15; d = 11: 0.0078125 and
    0.10546875; the Claim 8 batches are 1,190,463 and 26,129 samples (delta = 0.1, teacher range 1 and 2)."""
    k, c = 4, Fraction(1, 4)
    one, prog, _ = _gaps(d, k, c)
    want1, wantp = sp.gap_closed_form(d, k), sp.gap_closed_form(d, k, c)
    assert abs(one - float(want1)) <= 1e-15 and abs(prog - float(wantp)) <= 1e-15
    B1 = sp.claim8_batch(float(want1), M, d, DELTA)
    Bp = sp.claim8_batch(float(wantp), M, d, DELTA, value_range=1 + float(c) * k)
    if d == 11:
        assert (want1, wantp, B1, Bp) == (Fraction(1, 128), Fraction(27, 256), 1_190_463, 26_129)
    assert Bp * 30 < B1  # 36x at d = 9, 46x at d = 11
    measure(f"one-shot / progressive Claim 8 batch at d={d}", B1 / Bp)


@pytest.mark.claim("distill.thm22_first_step", tier="exact")
def test_one_shot_batch_grows_like_d_to_the_k_minus_1_progressive_stays_bounded(measure) -> None:
    """Exact Fractions at d = 101, 1001, 10001: 1/gap^2 / d^{k-1} tends to 2 pi for k = 2 and k = 4 (one-shot:
    6.3965, 6.2928, 6.2841 at k = 4 -> 6.2832), while the progressive margin tends to c/2 = 1/(2k) (0.12459, 0.12499,
    0.124999 at k = 4): the one-shot batch is Theta(d^{k-1} log), the progressive one O(k^2 log)."""
    for k in (2, 4):
        ratios = [float(1 / sp.gap_closed_form(d, k) ** 2 / d ** (k - 1)) for d in (101, 1001, 10001)]
        assert all(abs(r - 2 * np.pi) <= 0.12 for r in ratios) and abs(ratios[-1] - 2 * np.pi) <= 2e-3
        assert ratios[0] > ratios[1] > ratios[2]  # monotone approach
        prog = [float(sp.gap_closed_form(d, k, Fraction(1, k))) for d in (101, 1001, 10001)]
        assert prog[0] < prog[1] < prog[2] < 1 / (2 * k) and abs(prog[-1] - 1 / (2 * k)) <= 5e-3
        measure(f"one-shot 1/gap^2/d^(k-1) at d=10001, k={k}", ratios[-1])


@pytest.mark.claim("distill.thm22_first_step", tier="exact", control=True)
def test_control_a_degree_one_component_off_the_support_does_not_separate() -> None:
    """The same teacher with its degree-1 part on k coordinates outside S: the margin is negative (-0.1172 at
    d = 11), so the progressive advantage comes from correlation with S; bad input is named."""
    _, prog, g1 = _gaps(11, 4, Fraction(1, 4), wrong=True)
    assert prog < -0.1
    rejects(lambda: sp.gap_closed_form(11, 4, Fraction(1, 100)), r"the progressive closed form needs c >")
    rejects(lambda: sp.teacher_values(5, (0, 7)), r"S must be distinct coordinates in 0\.\.4")
    rejects(lambda: sp.claim8_batch(-0.1, M, 11, DELTA), "the separation gap must be > 0")
    rejects(
        lambda: sp.distillation_first_layer_gradient(
            ds.symmetric_init(5, 4, 2, np.random.default_rng(0)), np.ones(8)
        ),
        r"f_teacher must give one value per point",
    )
    assert g1.shape == (M, 11)
