"""Sample-complexity arithmetic of the teacher's two-stage training (Liu thesis §4.2.6, Claim 8, Lemma 65,
Corollary 5).

- Claim 8 (Hoeffding + a union bound): at the symmetric initialisation each per-sample first-layer hinge gradient
  ``-y a_i 1[<w_i, x> + b_i >= 0] x_j`` lies in ``[-1/m, 1/m]`` (``|a_i| = 1/m``), so a batch of
  ``B >= 2 ln(2 m d / delta) / (m^2 tau^2)`` gives every one of the ``m d`` entries within tau of its mean with
  probability >= 1 - delta.
- Lemma 65 / Corollary 5: with ``tau_g = |zeta_{k-1}| / k`` (times ``d^{-5/3}`` for Cor 5) Claim 8 needs
  ``B_1 = Omega(k^2 |zeta_{k-1}|^{-2} log)`` (times ``d^{10/3}``), and ``|zeta_{k-1}|^{-2} = Theta(d^{k-1})``; the printed
  ``|zeta_{k-1}|^2`` would make the first phase need fewer than one sample.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from fractions import Fraction

import numpy as np

from theorylab.boolean.fourier import majority_coefficient


def claim8_batch(m: int, d: int, tau: float, delta: float) -> int:
    """``ceil(2 ln(2 m d / delta) / (m^2 tau^2))``: Hoeffding with per-sample range ``2/m`` and a union bound over the
    ``m d`` first-layer entries."""
    if m < 1 or d < 1 or not tau > 0 or not 0 < delta < 1:
        raise ValueError(
            f"need m, d >= 1, tau > 0 and 0 < delta < 1, got m={m}, d={d}, tau={tau}, delta={delta}"
        )
    return math.ceil(2 * math.log(2 * m * d / delta) / (m * m * tau * tau))


def minibatch_first_layer_gradient(W, b, a, S: Sequence[int], x: np.ndarray) -> np.ndarray:
    """The batch mean of the first-layer hinge gradient at a network with ``f = 0``:
    ``g_ij = -a_i mean_b[chi_S(x_b) 1[<w_i, x_b> + b_i >= 0] x_bj]`` (``[m, d]``)."""
    x = np.asarray(x, dtype=np.float64)
    y = np.prod(x[:, list(S)], axis=1)
    ind = (x @ np.asarray(W).T + np.asarray(b) >= 0).astype(np.float64)  # [B, m]
    return -(ind.T @ (y[:, None] * x)) * np.asarray(a)[:, None] / len(x)


def first_phase_batch(d: int, k: int, *, printed: bool = False) -> Fraction:
    """Lemma 65's first-phase batch up to its log factor, exactly: ``k^2 |zeta_{k-1}|^{-2}`` (Claim 8 with
    ``tau_g = |zeta_{k-1}|/k``); ``printed``: the text's ``k^2 |zeta_{k-1}|^2``. Corollary 5 multiplies both by
    ``d^{10/3}``."""
    if d % 2 == 0 or k % 2 or not 2 <= k < d:
        raise ValueError(f"need d odd and k even with 2 <= k < d, got d={d}, k={k}")
    z2 = majority_coefficient(d, k - 1) ** 2
    return k * k * (z2 if printed else 1 / z2)
