"""Canonicalising positive rescalings before comparing traces (the AM-GM step).

For a positively homogeneous unit $i$ the rescaling $(w^{in}_i,w^{out}_i)\\to(c_iw^{in}_i,w^{out}_i/c_i)$ keeps the
function; a trace-type quantity of the form $\\sum_i A_ic_i^{-2}+B_ic_i^2$ (with $A_i$ the part from incoming and
$B_i$ from outgoing weights, e.g. $\\mathbb E\\|\\nabla f\\|^2$ split by neuron) is minimised over the orbit at
$c_i^2=\\sqrt{A_i/B_i}$ with value $2\\sum_i\\sqrt{A_iB_i}$ (AM-GM). Tr H is not invariant under these
reparametrisations, so compare balanced values.
"""

from __future__ import annotations

import numpy as np

__all__ = ["balance_rescalings", "balanced_value"]


def balance_rescalings(incoming, outgoing) -> tuple[np.ndarray, float]:
    """``(c, value)``: the minimiser $c_i=(A_i/B_i)^{1/4}$ of $\\sum_iA_ic_i^{-2}+B_ic_i^2$ and the minimum
    $2\\sum_i\\sqrt{A_iB_i}$. Units with $A_i=0$ or $B_i=0$ are dead: $c_i=1$, contribution 0 in the infimum."""
    A = np.asarray(incoming, dtype=float)
    B = np.asarray(outgoing, dtype=float)
    if A.shape != B.shape or A.ndim != 1:
        raise ValueError(f"incoming and outgoing must be 1-D of equal length, got {A.shape} and {B.shape}")
    if (
        not (np.all(np.isfinite(A)) and np.all(np.isfinite(B)))
        or A.min(initial=0) < 0
        or B.min(initial=0) < 0
    ):
        raise ValueError("incoming and outgoing must be finite and non-negative")
    alive = (A > 0) & (B > 0)
    c = np.ones_like(A)
    c[alive] = (A[alive] / B[alive]) ** 0.25
    return c, float(2 * np.sum(np.sqrt(A * B)))


def balanced_value(incoming, outgoing, c) -> float:
    """$\\sum_iA_ic_i^{-2}+B_ic_i^2$ at the given rescaling."""
    c = np.asarray(c, dtype=float)
    return float(np.sum(np.asarray(incoming) / c**2 + np.asarray(outgoing) * c**2))
