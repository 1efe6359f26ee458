"""Stored counterexamples of the anchor family (``002_530e12373cc142da.txt``)."""

from __future__ import annotations

import numpy as np

from theorylab.counterexamples import register, verifier

CONVENTIONS = "z: anchored logits, one row per context and one column per anchor (k columns); a, b: the k weights and thresholds of f*(x) = sum_j a_j relu(z_j - b_j)"

__all__ = ["b1_instance", "normalized_margin"]


def normalized_margin(z, a, b) -> float:
    """$\\Gamma=\\min_x|f^*(x)|/(k\\max_j|a_j|)$ with $f^*=\\sum_ja_j\\sigma(z_j-b_j)$ over the rows of ``z``."""
    z, a, b = (np.atleast_2d(np.asarray(z, float)), np.asarray(a, float), np.asarray(b, float))
    f = np.maximum(z - b, 0) @ a
    return float(np.min(np.abs(f)) / (a.size * np.max(np.abs(a))))


@register("anchor.B1", "B.1 (ii) refuted: lowering every threshold by s lowers the normalised margin")
def b1_instance() -> dict[str, np.ndarray]:
    """One POS context, k = 2: anchored logits z = (1, 1/4), a* = (1, -2), b* = 0, s = 1/4. f* = 1/2 -> 1/4, so
    Gamma = 1/8 -> 1/16 (printed: 1/8 + 1/4)."""
    return {"z": np.array([[1.0, 0.25]]), "a": np.array([1.0, -2.0]), "b": np.zeros(2), "s": np.array(0.25)}


@verifier("anchor.B1")
def _b1_check(a) -> tuple[bool, str]:
    """Lowering every threshold by s lowers the normalised margin (B.1 (ii) says it does not)."""
    z, w, b, shift = (
        np.asarray(a["z"], float),
        np.asarray(a["a"], float),
        np.asarray(a["b"], float),
        float(a["s"]),
    )
    before, after = normalized_margin(z, w, b), normalized_margin(z, w, b - shift)
    return after < before, f"Gamma = {before:g} with b, {after:g} with b - s (s = {shift:g})"
