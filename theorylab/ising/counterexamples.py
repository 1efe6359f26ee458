"""Registered counterexamples of the mple and gibbs families (``theorylab counterexample <id> --out f.npz``).

Each stored instance is a plain set of numbers; the checks recompute the failing quantity from it.
"""

from __future__ import annotations

from itertools import combinations

import numpy as np

from theorylab.counterexamples import register


def _sym(N: int, upper) -> np.ndarray:
    J = np.zeros((N, N))
    for (i, j), v in zip(combinations(range(N), 2), upper, strict=True):
        J[i, j] = J[j, i] = v
    return J


#: Thm 4.1.1 "strictly": N = 4 full pairwise Ising, h = 0, J = 0.3 (unordered): Gamma^3 - Gamma^4 is singular.
STRICT = {"N": 4, "h": np.zeros(4), "J": _sym(4, [0.3] * 6)}

#: Misspecification (catalog instance): data = full N=4 Ising (unordered), model = chain Ising with edges 01,12,23.
MISSPECIFIED = {
    "h": np.array([-0.1051, -0.9753, -2.1902, 1.0241]),
    "J": _sym(4, [-0.3356, -0.6475, 2.4308, 1.4183, -1.7253, -0.3614]),
    "model_edges": np.array([[0, 1], [1, 2], [2, 3]]),
}

#: All-masks k-PL: Loewner monotonicity fails between k = 1 and k = 2 (N = 5, unordered).
ALL_MASKS = {
    "h": np.array([1.27, -1.29, -0.21, 0.06, 1.35]),
    "J": _sym(5, [0.39, 0.88, 0.04, 0.68, -0.41, -0.96, -0.46, -0.69, 1.36, 1.19]),
}

#: Prop 4.1.5 without its hidden condition tanh(J0)|C| > 2: |C| = N = 2, fields 1e-4, J0 = 1e-3, delta = 0.74 (T = 1).
PROP_415 = {"size": 2, "h": 1e-4, "J0": 1e-3, "delta": 0.74, "convention": "unordered"}

#: Fig 4.3 "the independent parallel sampler never reaches R_1": unordered J = 2, h = 5 on the clique, N = 10, |C| = 4.
FIG_43 = {"N": 10, "size": 4, "h": 5.0, "J": 2.0, "convention": "unordered"}

#: "1-Gibbs encodes a product distribution": random-scan 1-Gibbs row of a 2-spin model (unordered J = 2, h = 0).
ONE_GIBBS = {"h": np.zeros(2), "J": _sym(2, [2.0]), "start": 0}


@register(
    "mple.thm4.1.1",
    "N=4 Ising (J=0.3, h=0): Gamma^3 - Gamma^4 has rank 4 of 10 (Loewner, not strict); Tr drops 17.82 -> 16.33",
)
def thm411_strict() -> dict[str, np.ndarray]:
    return {k: np.asarray(v) for k, v in STRICT.items()}


@register(
    "mple.derived.misspecified", "chain Ising fitted to a full N=4 Ising: Tr Gamma^k increases from k=1 to 2"
)
def misspecified() -> dict[str, np.ndarray]:
    return {k: np.asarray(v) for k, v in MISSPECIFIED.items()}


@register(
    "mple.derived.all_masks", "N=5 Ising where the all-masks k-PL covariance is not Loewner-monotone in k"
)
def all_masks() -> dict[str, np.ndarray]:
    return {k: np.asarray(v) for k, v in ALL_MASKS.items()}


@register(
    "mple.prop4.1.1", "the (X,K) chain of Prop 4.1.1's proof on a 2-spin model: K never changes (reducible)"
)
def prop411_reducible() -> dict[str, np.ndarray]:
    from theorylab.ising.model import IsingModel
    from theorylab.ising.samplers import block_matrix

    m = IsingModel(np.array([0.3, -0.2]), _sym(2, [0.7]))
    P = np.zeros((8, 8))  # states (K, x): K in {{0}, {1}}, x in 4 states
    for a, K in enumerate([(0,), (1,)]):
        P[4 * a : 4 * a + 4, 4 * a : 4 * a + 4] = block_matrix(m, K)
    return {"P": P, "h": m.h, "J": m.J}


@register("mple.cor4.3.1", "Cor 4.3.1's printed epsilon vs the corrected one: Chebyshev failure probability")
def cor431() -> dict[str, np.ndarray]:
    N, q, m, delta = 2, 2, 10**6, 0.1
    printed = np.sqrt(2 ** (3 * N - 1) * q**N / (m * delta))
    corrected = np.sqrt(2 ** (N - 1) * q**N / (m * delta))
    return {
        "N": np.array(N),
        "q": np.array(q),
        "m": np.array(m),
        "delta": np.array(delta),
        "eps_printed": np.array(printed),
        "eps_corrected": np.array(corrected),
    }


@register(
    "gibbs.prop4.1.5", "|C|=2, J0=1e-3: the unconditioned Prop 4.1.5 promises more staying mass than exact"
)
def prop415() -> dict[str, np.ndarray]:
    return {k: np.asarray(v) for k, v in PROP_415.items() if k != "convention"}


@register(
    "gibbs.exp4.2.1.2",
    "Fig 4.3 setting, unordered J=2: the independent sampler hits R_1 in 4.2 steps (J the text leaves unnamed)",
)
def fig43() -> dict[str, np.ndarray]:
    return {k: np.asarray(v) for k, v in FIG_43.items() if k != "convention"}


@register("gibbs.tf_prop4.1.3", "random-scan 1-Gibbs row of a 2-spin Ising model: not a product law")
def one_gibbs_row() -> dict[str, np.ndarray]:
    from theorylab.ising.model import IsingModel
    from theorylab.ising.samplers import random_scan_gibbs

    m = IsingModel(ONE_GIBBS["h"], ONE_GIBBS["J"])
    return {"row": random_scan_gibbs(m).P[ONE_GIBBS["start"]], "h": m.h, "J": m.J}
