"""Counterexample to Def 2.1.2 of Li's thesis §2.1: "the only" diagonal optimum of W^V is not unique."""

from __future__ import annotations

from fractions import Fraction

import numpy as np

from theorylab.attention.topic import stage1 as tp
from theorylab.attention.topic import stage2 as s2
from theorylab.counterexamples import register, verifier
from theorylab.languages.topic import TopicModel

CONVENTIONS = (
    "TopicModel(T topics, v words per topic, tau topics per document, masking rates p_m, p_c, p_r); W^V is a "
    "(T v + 1) x (T v + 1) matrix, row and column 0 = [MASK], word i in 1..Tv has topic ceil(i / v)"
)

_P = TopicModel(3, 2, 1, Fraction(3, 20), Fraction(1, 10), Fraction(1, 10))


def _other(p: TopicModel, u0: Fraction) -> np.ndarray:
    D = tp.diagonal_value_matrix(p).copy()
    D[0, 1:] = u0
    D[0, 0] = -tp.constants(p).c2 * u0
    return D


@register(
    "topic.def2.1.2",
    "two different minimisers, both zero off the diagonal on words 1..Tv (row 0 is free): 'the only matrix' fails",
)
def row0_free() -> dict[str, np.ndarray]:
    D, other = tp.diagonal_value_matrix(_P), _other(_P, Fraction(1))
    return {
        "D_library": D.astype(float),
        "other": other.astype(float),
        "loss_D": np.asarray(float(tp.population_loss(D, _P))),
        "loss_other": np.asarray(float(tp.population_loss(other, _P))),
        "stage2_loss_D": np.asarray(
            s2.attention_loss_explicit(D.astype(float), 2.0, 5.0, _P, mask_keys=True)
        ),
        "stage2_loss_other": np.asarray(
            s2.attention_loss_explicit(other.astype(float), 2.0, 5.0, _P, mask_keys=True)
        ),
    }


@verifier("topic.def2.1.2")
def _def212_check(a) -> tuple[bool, str]:
    """Both stored matrices reach the minimum loss (recomputed exactly from the rebuilt Fractions), are zero off
    the diagonal on words 1..Tv, and differ; their stage-2 losses at (alpha, beta) = (2, 5) are recomputed."""
    D, other = tp.diagonal_value_matrix(_P), _other(_P, Fraction(1))
    same = np.allclose(D.astype(float), a["D_library"]) and np.allclose(other.astype(float), a["other"])
    Tv = _P.T * _P.v
    off = ~np.eye(Tv, dtype=bool)
    diagonal = all(not np.any(np.asarray(M, float)[1:, 1:][off]) for M in (a["D_library"], a["other"]))
    optimal = tp.population_loss(D, _P) == tp.population_loss(other, _P) == tp.minimum_loss(_P)
    l0 = s2.attention_loss_explicit(np.asarray(a["D_library"], float), 2.0, 5.0, _P, mask_keys=True)
    l1 = s2.attention_loss_explicit(np.asarray(a["other"], float), 2.0, 5.0, _P, mask_keys=True)
    ok = same and diagonal and optimal and not np.array_equal(a["D_library"], a["other"]) and l1 > l0
    return bool(ok), f"both minimise (loss {float(tp.minimum_loss(_P))}); stage-2 losses {l0:.4g} vs {l1:.4g}"
