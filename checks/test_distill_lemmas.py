"""Claim checks of the teacher's sample-complexity steps (Liu thesis §4.2.6): Claim 8 (Hoeffding batch), Lemma 65
and Corollary 5 (first-phase batch: the exponent of |zeta_{k-1}|)."""

from __future__ import annotations

import math
from fractions import Fraction as F

import numpy as np
import pytest

from theorylab.boolean.fourier import hypercube, majority_coefficient
from theorylab.boolean.sample_complexity import (
    claim8_batch,
    first_phase_batch,
    minibatch_first_layer_gradient,
)
from theorylab.nn import distill as ds
from theorylab.testing import rejects

D, K, M, DELTA = 11, 2, 20, 0.1
S = [2, 7]


def _net():
    return ds.symmetric_init(D, M, K, np.random.default_rng(5))


def _tau() -> float:
    """Half the on-support population gradient |a_i zeta_{k-1}| / 2 = |zeta_1| / (2m)."""
    return abs(float(majority_coefficient(D, K - 1))) / (4 * M)


def _failure_rate(B: int, reps: int) -> float:
    net = _net()
    g = ds.population_first_layer_gradient(net, S)
    rng = np.random.default_rng(0)
    fails = 0
    for _ in range(reps):
        x = (1 - 2 * rng.integers(0, 2, size=(B, D))).astype(np.float64)
        fails += np.abs(minibatch_first_layer_gradient(net.W, net.b, net.a, S, x) - g).max() > _tau()
    return fails / reps


# ------------------------------------------------------------------------------------------------ claim8
@pytest.mark.claim("distill.claim8", tier="exact")
def test_claim8_per_sample_range_and_batch(measure) -> None:
    # every per-sample first-layer gradient entry is in {-1/m, 0, 1/m} (all 2^11 inputs), so Hoeffding's range is
    # 2/m and the batch is ceil(2 ln(2 m d / delta) / (m^2 tau^2)); the batch mean over the whole cube is the
    # population gradient
    net = _net()
    x = hypercube(D).astype(np.float64)
    per = np.stack(
        [minibatch_first_layer_gradient(net.W, net.b, net.a, S, x[i : i + 1]) for i in range(0, 2**D, 97)]
    )
    assert set(np.unique(np.round(per * M, 12))) <= {-1.0, 0.0, 1.0}
    full = minibatch_first_layer_gradient(net.W, net.b, net.a, S, x)
    assert np.abs(full - ds.population_first_layer_gradient(net, S)).max() <= 1e-15
    B = claim8_batch(M, D, _tau(), DELTA)
    assert B == math.ceil(2 * math.log(2 * M * D / DELTA) / (M * M * _tau() ** 2))
    measure("claim8_batch_d11_k2_m20", B)
    for args in ((M, D, 0.0, DELTA), (0, D, _tau(), DELTA), (M, 0, _tau(), DELTA)):
        rejects(lambda args=args: claim8_batch(*args), r"need m, d >= 1, tau > 0 and 0 < delta < 1")


@pytest.mark.claim("distill.claim8", tier="exact", control=True)
def test_claim8_control_wrong_scale_and_range() -> None:
    # the same verdicts reject per-sample gradients of twice the scale (entries in {-2/m, 0, 2/m}) and the batch of
    # Hoeffding's bound with range 1/m instead of 2/m (a quarter of the batch, rounded up)
    net = _net()
    x = hypercube(D).astype(np.float64)
    per = 2 * np.stack(
        [minibatch_first_layer_gradient(net.W, net.b, net.a, S, x[i : i + 1]) for i in range(0, 2**D, 97)]
    )
    assert np.abs(per).max() > 0 and not set(np.unique(np.round(per * M, 12))) <= {-1.0, 0.0, 1.0}
    half_range = math.ceil(math.log(2 * M * D / DELTA) / (2 * M * M * _tau() ** 2))
    assert claim8_batch(M, D, _tau(), DELTA) != half_range


@pytest.mark.claim("distill.claim8", tier="property")
def test_claim8_batch_controls_every_entry(measure) -> None:
    # 40 batches of Claim 8's size (seed 0): the l_inf error of the batch gradient exceeds tau in at most a delta share
    rate = _failure_rate(claim8_batch(M, D, _tau(), DELTA), 40)
    measure("failure_rate_at_claim8_batch", rate)
    assert rate <= DELTA


@pytest.mark.claim("distill.claim8", tier="property", control=True)
def test_claim8_control_batch_16x_smaller(measure) -> None:
    # the same verdict rejects a 16x smaller batch (tau^-1 instead of tau^-2 scaling is off by more)
    rate = _failure_rate(claim8_batch(M, D, _tau(), DELTA) // 16, 40)
    measure("failure_rate_at_batch_over_16", rate)
    assert rate > DELTA


# ------------------------------------------------------------------------------------------------ lem65, cor5
@pytest.mark.claim("distill.lem65", tier="exact")
def test_lemma65_first_phase_batch_scales_as_d_to_the_k_minus_1(measure) -> None:
    # Claim 8 with tau_g = |zeta_{k-1}|/k needs B_1 ~ k^2 |zeta_{k-1}|^-2, and k^2 |zeta_{k-1}|^-2 / d^{k-1}
    # converges (Fractions, d = 101, 1001, 10001): the lemma's own total Theta(d^{k-1} k^2 log) uses the exponent -2
    for k, limit in ((2, 2 * math.pi), (4, 8 * math.pi)):
        r = [float(first_phase_batch(d, k) / F(d) ** (k - 1)) for d in (101, 1001, 10001)]
        measure(f"ratio_to_d_k_minus_1_k{k}", r)
        assert abs(r[2] - limit) <= 1e-3 * limit and abs(r[2] - r[1]) < abs(r[1] - r[0])
    rejects(lambda: first_phase_batch(100, 4), r"need d odd and k even with 2 <= k < d")


@pytest.mark.claim("distill.lem65", tier="exact", control=True)
def test_lemma65_control_printed_exponent() -> None:
    # the printed k^2 |zeta_{k-1}|^2 falls below one sample (d >= 101, k = 4) and below Claim 8's own requirement
    # k^2 / zeta^2 by the factor zeta^4, so it cannot be the batch of Claim 8 with tau_g = |zeta_{k-1}|/k
    for d in (101, 1001):
        printed, needed = first_phase_batch(d, 4, printed=True), first_phase_batch(d, 4)
        assert printed < 1 < needed and printed / needed == majority_coefficient(d, 3) ** 4


@pytest.mark.claim("distill.cor5", tier="exact")
def test_cor5_total_exponent(measure) -> None:
    # with tau_g = |zeta_{k-1}| k^-1 d^{-5/3}, B_1 = k^2 |zeta_{k-1}|^-2 d^{10/3} = Theta(d^{k+7/3}): the total the
    # corollary states; its ratio to d^{k+7/3} converges (k = 4)
    r = [
        float(first_phase_batch(d, 4) / F(d) ** 3) for d in (1001, 10001)
    ]  # d^{10/3} / d^{k+7/3} = d^{-(k-1)}
    measure("cor5_ratio_k4", r)
    assert abs(r[1] - 8 * math.pi) <= 1e-3 * 8 * math.pi


@pytest.mark.claim("distill.cor5", tier="exact", control=True)
def test_cor5_control_printed_exponent() -> None:
    # the printed |zeta_{k-1}|^2 k^2 d^{10/3} grows only like d^{10/3 - (k-1)}: at k = 4 it is d^{1/3}, not d^{k+7/3}
    for d in (1001, 10001):
        printed = float(first_phase_batch(d, 4, printed=True)) * d ** (10 / 3)
        assert printed < d ** (4 + 7 / 3) * 1e-10
