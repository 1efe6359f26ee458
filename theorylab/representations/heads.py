"""Downstream heads on a log-linear model's logits (§3-§4 of ``002_530e12373cc142da.txt``).

* ``LinearHead(c)``: $f=\\sum_tc_t\\langle v_{-i},v_t\\rangle=\\sum_tc_tz_t$ (Asm 1; Thm 1).
* ``ReLUHead(a, b)``: $f=\\sum_ja_j\\sigma(z_j-b_j)$ (Eq (5); Thm 2).
* ``AnchoredHead(a, b, v0)``: $f=\\sum_ja_j\\sigma(\\langle v_{-i},v_j-v_0\\rangle-b_j)$ (Eqs (7)-(8); Thm 3); the
  anchor value $\\langle v_{-i},v_0\\rangle$ may also be given per context (``anchor_values``).
Word $j$ of the head is word $j$ of the vocabulary ($j<k$: the words of interest).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from theorylab.representations.loglinear import LogLinearLM

__all__ = ["AnchoredHead", "LinearHead", "ReLUHead"]


def _vec(name, x) -> np.ndarray:
    x = np.atleast_1d(np.asarray(x, dtype=float))
    if x.ndim != 1 or not np.all(np.isfinite(x)):
        raise ValueError(f"{name} must be a finite 1-D vector")
    return x


def _logits(model: LogLinearLM, k: int) -> np.ndarray:
    if not isinstance(model, LogLinearLM):
        raise TypeError(f"expected a LogLinearLM, got {type(model).__name__}")
    if k > model.n_words:
        raise ValueError(f"head uses {k} words but the model has {model.n_words}")
    return model.logits()[:, :k]


@dataclass(frozen=True)
class LinearHead:
    c: np.ndarray

    def __call__(self, model: LogLinearLM) -> np.ndarray:
        c = _vec("c", self.c)
        return _logits(model, c.size) @ c


@dataclass(frozen=True)
class ReLUHead:
    a: np.ndarray
    b: np.ndarray

    def __call__(self, model: LogLinearLM) -> np.ndarray:
        a, b = _vec("a", self.a), _vec("b", self.b)
        if a.shape != b.shape:
            raise ValueError("a and b must have equal length")
        return np.maximum(_logits(model, a.size) - b, 0) @ a


@dataclass(frozen=True)
class AnchoredHead:
    a: np.ndarray
    b: np.ndarray
    v0: np.ndarray | None = None
    anchor_values: np.ndarray | None = None

    def anchors(self, model: LogLinearLM) -> np.ndarray:
        if self.anchor_values is not None:
            A = _vec("anchor_values", self.anchor_values)
            if A.shape != (model.contexts.shape[0],):
                raise ValueError("anchor_values must have one value per context")
            return A
        if self.v0 is None:
            raise ValueError("give v0 or anchor_values")
        v0 = _vec("v0", self.v0)
        if v0.size != model.contexts.shape[1]:
            raise ValueError(f"v0 has dimension {v0.size}, the model {model.contexts.shape[1]}")
        return model.contexts @ v0

    def __call__(self, model: LogLinearLM) -> np.ndarray:
        a, b = _vec("a", self.a), _vec("b", self.b)
        if a.shape != b.shape:
            raise ValueError("a and b must have equal length")
        z = _logits(model, a.size) - self.anchors(model)[:, None]
        return np.maximum(z - b, 0) @ a
