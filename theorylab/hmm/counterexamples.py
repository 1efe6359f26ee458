"""Registered counterexample generators of the HMM family (``theorylab counterexample <id> --out f.npz``)."""

from __future__ import annotations

import numpy as np

from theorylab.counterexamples import register
from theorylab.hmm.constructions import (
    EXAMPLE_247,
    claim1_pair,
    cyclic_shift,
    lemma7_pair,
    random_unit_means,
    theorem4_pair,
    theorem6_pair,
    theorem8_case2_pair,
)
from theorylab.hmm.models import GHMM


def _hmm_pair(a, b) -> dict[str, np.ndarray]:
    return {"O": a.O, "T": a.T, "O_tilde": b.O, "T_tilde": b.T}


def _ghmm_pair(a, b) -> dict[str, np.ndarray]:
    return {"M": a.M, "T": a.T, "M_tilde": b.M, "T_tilde": b.T}


@register(
    "hmm.thm4", "two HMMs (d=4, k=3) with equal x_3|x_1 predictors: O~ = O, T~ = Q(pi) T (Claim 1, power 2)"
)
def theorem4_t3() -> dict[str, np.ndarray]:
    a, b = theorem4_pair(3)
    return {**_hmm_pair(a, b), "t": np.asarray(3)}


@register("hmm.claim1", "doubly stochastic T != T~ (k=3) with T^5 = T~^5: T = (I+P)/2, T~ = Q(2pi/5) T")
def claim1_t5() -> dict[str, np.ndarray]:
    T, T2 = claim1_pair(5)
    return {"T": T, "T_tilde": T2, "t": np.asarray(5)}


@register(
    "hmm.thm6", "two HMMs (d=4, k=3) matching x2|x1, x1|x2, x3|x1, x1|x3 (any gap): O~ = OR, T~ = R^T T R"
)
def theorem6_rotation() -> dict[str, np.ndarray]:
    return _hmm_pair(*theorem6_pair())


@register("hmm.example247", "the printed example (2.47) of Theorem 6, 8-digit matrices as printed")
def example_247_printed() -> dict[str, np.ndarray]:
    return {k: np.array(v) for k, v in EXAMPLE_247.items()}


@register(
    "hmm.thm8", "two G-HMMs (d=4, k=3, orthonormal means) with equal x1(x)x3|x2 predictors (Thm 8 case 2)"
)
def theorem8_case2() -> dict[str, np.ndarray]:
    M = np.linalg.qr(np.random.default_rng(8).standard_normal((4, 3)))[0]
    P = cyclic_shift(3)
    a = GHMM(M, 0.5 * np.eye(3) + 0.3 * P + 0.2 * P.T)
    return _ghmm_pair(a, theorem8_case2_pair(a))


@register(
    "hmm.lemma7", "unit-norm means M, M~ (d=4, k=2) with equal posteriors, M~ not in {M, HM} (Lemma 7, d > k)"
)
def lemma7_d4k2() -> dict[str, np.ndarray]:
    a = GHMM(random_unit_means(4, 2, np.random.default_rng(7)), np.array([[0.8, 0.2], [0.2, 0.8]]))
    return _ghmm_pair(a, lemma7_pair(a))


@register(
    "hmm.prop1", "two different CP decompositions of one tensor whose C factor has two parallel columns"
)
def kruskal_failure() -> dict[str, np.ndarray]:
    from theorylab.tensors import nonunique_decomposition

    rng = np.random.default_rng(1)
    A, B, C = rng.standard_normal((4, 3)), rng.standard_normal((4, 3)), rng.standard_normal((5, 3))
    C[:, 1] = 2.0 * C[:, 0]
    A2, B2, C2 = nonunique_decomposition(A, B, C, rng)
    return {"A": A, "B": B, "C": C, "A2": A2, "B2": B2, "C2": C2}
