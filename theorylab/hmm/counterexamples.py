"""Registered counterexample generators of the HMM family (``theorylab counterexample <id> --out f.npz``)."""

from __future__ import annotations

import numpy as np

from theorylab.counterexamples import register, verifier
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
from theorylab.hmm.models import GHMM, HMM

CONVENTIONS = (
    "column-stochastic: O[x, h] = P(x_t = x | h_t = h), T[i, j] = P(h_{t+1} = i | h_t = j) (hmmlearn's matrices are "
    "the transposes); G-HMM means are the columns of M (d x k); the initial hidden state is uniform; positions "
    "x_1, x_2, ... are 1-based; CP factors A, B, C have one column per rank-one term"
)
PAIR_TOL = (
    1e-12  # predictor gaps of exactly constructed pairs: round-off of a few matrix products (~1e-16 each)
)
SEPARATION = (
    1e-6  # "different" (relabeling distance, separating gaps): far above round-off and below the instances
)


def _pair_detail(rep) -> str:
    matched = ", ".join(f"{t}: {g:.2e}" for t, g in rep.matched.items())
    sep = ", ".join(f"{t}: {g:.2e}" for t, g in rep.separating.items())
    text = f"matched predictor gaps (<= {rep.tol:g}) {matched}; distance to the nearest relabeling {rep.relabel_error:.3g}"
    text += f" (> {rep.min_separation:g})" + (f"; separating gaps {sep}" if sep else "")
    return text + (f"; invalid: {'; '.join(rep.problems)}" if rep.problems else "")


def _verify_hmm_pair(a, matched, separating=(), tol=PAIR_TOL) -> tuple[bool, str]:
    from theorylab.hmm.verify import verify_nonidentifiable_pair

    m1 = HMM(np.asarray(a["O"]), np.asarray(a["T"]), validate=False)
    m2 = HMM(np.asarray(a["O_tilde"]), np.asarray(a["T_tilde"]), validate=False)
    rep = verify_nonidentifiable_pair(
        m1,
        m2,
        matched,
        separating,
        tol=tol,
        min_separation=max(SEPARATION, 1e3 * tol),
        assumption_tol=max(tol, 1e-9),
    )
    return rep.ok, _pair_detail(rep)


def _verify_ghmm_pair(a, matched, separating=()) -> tuple[bool, str]:
    from theorylab.hmm.verify import verify_nonidentifiable_pair

    m1 = GHMM(np.asarray(a["M"]), np.asarray(a["T"]), validate=False)
    m2 = GHMM(np.asarray(a["M_tilde"]), np.asarray(a["T_tilde"]), validate=False)
    d = m1.d
    rng = np.random.default_rng(0)  # fixed query points: 300 Gaussian, 5 far ones
    X = np.vstack(
        [rng.standard_normal((300, d)) * rng.uniform(1, 2, (300, 1)), 8 * rng.standard_normal((5, d))]
    )
    rep = verify_nonidentifiable_pair(
        m1, m2, matched, separating, points=X, tol=1e-10, min_separation=SEPARATION
    )
    return rep.ok, _pair_detail(rep) + " (300 + 5 fixed query points)"


def _hmm_pair(a, b) -> dict[str, np.ndarray]:
    return {"O": a.O, "T": a.T, "O_tilde": b.O, "T_tilde": b.T}


def _ghmm_pair(a, b) -> dict[str, np.ndarray]:
    return {"M": a.M, "T": a.T, "M_tilde": b.M, "T_tilde": b.T}


@register(
    "hmm.thm4",
    "two HMMs (d=4, k=3) with equal x_t|x_1 predictors (t = 3): O~ = O, T~ = Q(2pi/(t-1)) T (Claim 1, power t-1)",
    kind="witness",
)
def theorem4_t3(t: int = 3) -> dict[str, np.ndarray]:
    a, b = theorem4_pair(t)
    return {**_hmm_pair(a, b), "t": np.asarray(t)}


@verifier("hmm.thm4")
def _thm4(a) -> tuple[bool, str]:
    """Both HMMs valid, equal x_t|x_1 predictors, not relabelings of each other."""
    return _verify_hmm_pair(a, [f"x{int(a['t'])}|x1"])


@register(
    "hmm.claim1",
    "doubly stochastic T != T~ (k=3) with T^5 = T~^5: T = (I+P)/2, T~ = Q(2pi/5) T",
    kind="witness",
)
def claim1_t5(t: int = 5) -> dict[str, np.ndarray]:
    T, T2 = claim1_pair(t)
    return {"T": T, "T_tilde": T2, "t": np.asarray(t)}


@verifier("hmm.claim1")
def _claim1(a) -> tuple[bool, str]:
    """T, T~ doubly stochastic and different, with T^t = T~^t."""
    T, T2, t = np.asarray(a["T"], float), np.asarray(a["T_tilde"], float), int(a["t"])
    stoch = max(float(np.max(np.abs(M.sum(axis=ax) - 1))) for M in (T, T2) for ax in (0, 1))
    nonneg = min(T.min(), T2.min()) >= -1e-12
    power_gap = float(np.max(np.abs(np.linalg.matrix_power(T, t) - np.linalg.matrix_power(T2, t))))
    diff = float(np.max(np.abs(T - T2)))
    ok = stoch <= 1e-12 and nonneg and power_gap <= 1e-12 and diff > SEPARATION
    return ok, (
        f"max |T^{t} - T~^{t}| = {power_gap:.2e} (<= 1e-12), max |T - T~| = {diff:.3g}, doubly stochastic to "
        f"{stoch:.1e}, nonnegative: {nonneg}"
    )


@register(
    "hmm.thm6",
    "two HMMs (d=4, k=3) matching x2|x1, x1|x2, x3|x1, x1|x3 (any gap): O~ = OR, T~ = R^T T R",
    kind="witness",
)
def theorem6_rotation() -> dict[str, np.ndarray]:
    return _hmm_pair(*theorem6_pair())


@verifier("hmm.thm6")
def _thm6(a) -> tuple[bool, str]:
    """All pairwise tasks on x1, x2, x3 match (and x4|x1, x1|x4); a triple task separates them."""
    from theorylab.hmm.verify import PAIRWISE_TASKS_3, TRIPLE_TASKS

    return _verify_hmm_pair(a, [*PAIRWISE_TASKS_3, "x4|x1", "x1|x4"], TRIPLE_TASKS)


@register(
    "hmm.example247", "the printed example (2.47) of Theorem 6, 8-digit matrices as printed", kind="witness"
)
def example_247_printed() -> dict[str, np.ndarray]:
    return {k: np.array(v) for k, v in EXAMPLE_247.items()}


@verifier("hmm.example247")
def _example247(a) -> tuple[bool, str]:
    """The printed 8-digit matrices match every pairwise task to the rounding (1e-7) and are not a relabeling."""
    from theorylab.hmm.constructions import EXAMPLE_247_TOL
    from theorylab.hmm.verify import PAIRWISE_TASKS_3, TRIPLE_TASKS

    return _verify_hmm_pair(a, PAIRWISE_TASKS_3, TRIPLE_TASKS, tol=EXAMPLE_247_TOL)


@register(
    "hmm.thm8",
    "two G-HMMs (d=4, k=3, orthonormal means) with equal x1(x)x3|x2 predictors (Thm 8 case 2)",
)
def theorem8_case2() -> dict[str, np.ndarray]:
    M = np.linalg.qr(np.random.default_rng(8).standard_normal((4, 3)))[0]
    P = cyclic_shift(3)
    a = GHMM(M, 0.5 * np.eye(3) + 0.3 * P + 0.2 * P.T)
    return _ghmm_pair(a, theorem8_case2_pair(a))


@verifier("hmm.thm8")
def _thm8(a) -> tuple[bool, str]:
    """Equal x1(x)x3|x2 predictors, not a relabeling; x2|x1 separates them."""
    return _verify_ghmm_pair(a, ["x1x3|x2"], ["x2|x1"])


@register(
    "hmm.lemma7", "unit-norm means M, M~ (d=4, k=2) with equal posteriors, M~ not in {M, HM} (Lemma 7, d > k)"
)
def lemma7_d4k2() -> dict[str, np.ndarray]:
    a = GHMM(random_unit_means(4, 2, np.random.default_rng(7)), np.array([[0.8, 0.2], [0.2, 0.8]]))
    return _ghmm_pair(a, lemma7_pair(a))


@register(
    "hmm.prop1",
    "two different CP decompositions of one tensor whose C factor has two parallel columns",
    kind="witness",
)
def kruskal_failure() -> dict[str, np.ndarray]:
    from theorylab.tensors import nonunique_decomposition

    rng = np.random.default_rng(1)
    A, B, C = rng.standard_normal((4, 3)), rng.standard_normal((4, 3)), rng.standard_normal((5, 3))
    C[:, 1] = 2.0 * C[:, 0]
    A2, B2, C2 = nonunique_decomposition(A, B, C, rng)
    return {"A": A, "B": B, "C": C, "A2": A2, "B2": B2, "C2": C2}


@verifier("hmm.prop1")
def _prop1(a) -> tuple[bool, str]:
    """Kruskal's condition fails, both factor triples give the same tensor, and the factors differ beyond
    permutation and scaling."""
    from theorylab.tensors import cp_to_tensor, kruskal_condition, match_factors

    A, B, C, A2, B2, C2 = (np.asarray(a[k], float) for k in ("A", "B", "C", "A2", "B2", "C2"))
    W, W2 = cp_to_tensor(A, B, C), cp_to_tensor(A2, B2, C2)
    gap = float(np.max(np.abs(W - W2)) / np.max(np.abs(W)))
    cond = kruskal_condition(A, B, C)
    factor_err = max(match_factors(X, Y).error for X, Y in ((A, A2), (B, B2), (C, C2)))
    ok = gap <= 1e-10 and factor_err > SEPARATION and not cond.holds
    return ok, (
        f"relative tensor gap {gap:.2e} (<= 1e-10); worst factor mismatch after permutation and scaling "
        f"{factor_err:.3g}; k-ranks {cond.k_ranks} vs 2R + 2 = {2 * cond.rank + 2}"
    )
