"""Registered counterexamples of the mple and gibbs families (``theorylab counterexample <id> --out f.npz``).

Each stored instance is a plain set of numbers; the checks recompute the failing quantity from it.
"""

from __future__ import annotations

from itertools import combinations

import numpy as np

from theorylab.counterexamples import register, verifier

CONVENTIONS = (
    "spins x_i in {-1, +1}; p(x) proportional to exp(sum_i h_i x_i + sum_{i<j} J_ij x_i x_j) ('unordered' pairs: "
    "the symmetric J counts each pair once); states are indexed by the binary expansion of x with -1 -> 0 (spin "
    "0 the most significant bit); transition matrices are row-stochastic (P[i, j] = P(i -> j)); Gamma^k is the "
    "asymptotic covariance of the k-PL estimator"
)
TOL = 1e-12  # eigenvalues and probabilities of exact finite computations: round-off of small dense matrices


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


@verifier("mple.thm4.1.1")
def _thm411_check(a) -> tuple[bool, str]:
    """Gamma^3 - Gamma^4 (recomputed) has a zero eigenvalue (|lambda_min| < 1e-10): the improvement from k = 3 to
    k = 4 is not strict."""
    from theorylab.estimation.pseudolikelihood import asymptotic_covariance
    from theorylab.ising.model import IsingModel

    model = IsingModel(np.asarray(a["h"], float), np.asarray(a["J"], float))
    N = int(a["N"])
    G3, G4 = asymptotic_covariance(model, N - 1), asymptotic_covariance(model, N)
    lam = np.linalg.eigvalsh(G3 - G4)
    return abs(
        lam[0]
    ) < 1e-10, f"eigenvalues of Gamma^{N - 1} - Gamma^{N}: smallest {lam[0]:.1e}, largest {lam[-1]:.4g}"


@verifier("mple.derived.misspecified")
def _misspecified_check(a) -> tuple[bool, str]:
    """The sandwich Tr Gamma^k of the chain model fitted to the full-Ising data (recomputed) increases from k = 1
    to k = 2."""
    from theorylab.estimation.pseudolikelihood import asymptotic_covariance
    from theorylab.ising.model import IsingModel

    data = IsingModel(np.asarray(a["h"], float), np.asarray(a["J"], float)).probs()
    N = len(a["h"])
    fam = IsingModel(np.zeros(N), np.zeros((N, N))).exp_family(
        [tuple(int(i) for i in e) for e in a["model_edges"]]
    )
    tr = [
        float(np.trace(asymptotic_covariance((fam, np.zeros(fam.d)), k, misspecified_data=data)))
        for k in (1, 2)
    ]
    return tr[1] > tr[0], f"Tr Gamma^1 = {tr[0]:.1f} < Tr Gamma^2 = {tr[1]:.1f}"


@verifier("mple.derived.all_masks")
def _all_masks_check(a) -> tuple[bool, str]:
    """Gamma_avg^1 - Gamma_avg^2 of the all-masks k-PL (recomputed) has a negative eigenvalue (below -1e-4 relative
    to the largest eigenvalue of Gamma_avg^1): not Loewner-monotone in k."""
    from theorylab.estimation.pseudolikelihood import asymptotic_covariance
    from theorylab.ising.model import IsingModel

    model = IsingModel(np.asarray(a["h"], float), np.asarray(a["J"], float))
    G1, G2 = (asymptotic_covariance(model, k, "all_masks") for k in (1, 2))
    rel = float(np.linalg.eigvalsh(G1 - G2)[0] / np.linalg.eigvalsh(G1)[-1])
    return rel < -1e-4, f"lambda_min(Gamma_avg^1 - Gamma_avg^2) / lambda_max(Gamma_avg^1) = {rel:.3g}"


@verifier("mple.prop4.1.1")
def _prop411_check(a) -> tuple[bool, str]:
    """The (X, K) chain of the proof (stored P, rows sum to 1) is reducible: K never changes."""
    from theorylab.markov import FiniteChain

    P = np.asarray(a["P"], float)
    rows = float(np.abs(P.sum(axis=1) - 1).max())
    chain = FiniteChain(P)
    n = P.shape[0] // 2
    cross = float(P[:n, n:].sum() + P[n:, :n].sum())
    return (
        rows < TOL and not chain.is_irreducible(),
        f"reducible: {not chain.is_irreducible()}; mass moving K: {cross:g}",
    )


@verifier("mple.cor4.3.1")
def _cor431_check(a) -> tuple[bool, str]:
    """With the printed epsilon, Lemma 4.3.5's Chebyshev failure probability 2^(N-2) q^N / (eps^2 m) is not
    delta/2 (it is delta/2 with the corrected epsilon)."""
    N, q, m, delta = int(a["N"]), float(a["q"]), float(a["m"]), float(a["delta"])
    fail = lambda eps: 2 ** (N - 2) * q**N / (eps**2 * m)
    printed, corrected = fail(float(a["eps_printed"])), fail(float(a["eps_corrected"]))
    ok = abs(printed - delta / 2) > 1e-3 * delta and abs(corrected - delta / 2) <= 1e-12 * delta
    return (
        ok,
        f"failure probability: printed epsilon {printed:.4g}, corrected {corrected:.4g}, delta/2 = {delta / 2:g}",
    )


@verifier("gibbs.prop4.1.5")
def _prop415_check(a) -> tuple[bool, str]:
    """Without the hidden condition tanh(J0)|C| > 2, the exact probability of staying stuck for T steps (count
    chain) is below the promised 1 - delta."""
    from theorylab.ising import CliqueCountChain, prop_4_1_5_bound

    size, h, J0, delta = int(a["size"]), float(a["h"]), float(a["J0"]), float(a["delta"])
    b = prop_4_1_5_bound(size, J0, delta)
    cc = CliqueCountChain(size, h, size * abs(h) + J0, "unordered")
    T = int(b["T"])
    keep = cc.stuck_set()
    Q = cc.independent_parallel().P[np.ix_(keep, keep)]
    stay = float(np.linalg.matrix_power(Q, T)[0].sum()) if T > 0 else 1.0
    ok = not b["condition"] and stay < 1 - delta - TOL
    return (
        ok,
        f"|C| = {size}, J0 = {J0:g}, T = {T}: exact stay probability {stay:.4g} < 1 - delta = {1 - delta:g}",
    )


@verifier("gibbs.exp4.2.1.2")
def _fig43_check(a) -> tuple[bool, str]:
    """The independent parallel sampler reaches R_1 within 1000 steps with probability >= 0.01 (exact), against
    the printed 'never reaches'."""
    from theorylab.ising import CliqueCountChain

    size, h, J = int(a["size"]), float(a["h"]), float(a["J"])
    P = CliqueCountChain(size, h, J, "unordered").independent_parallel().P.copy()
    P[size] = 0
    P[size, size] = 1
    hit = float(np.linalg.matrix_power(P, 1000)[0, size])
    return hit >= 0.01, f"|C| = {size}, h = {h:g}, J = {J:g}: P(reach R_1 within 1000 steps) = {hit:.4g}"


@verifier("gibbs.tf_prop4.1.3")
def _one_gibbs_check(a) -> tuple[bool, str]:
    """The random-scan 1-Gibbs row (recomputed) is not a product law: total correlation > 1e-6 nats."""
    from theorylab.ising import total_correlation
    from theorylab.ising.model import IsingModel
    from theorylab.ising.samplers import random_scan_gibbs

    m = IsingModel(np.asarray(a["h"], float), np.asarray(a["J"], float))
    row = random_scan_gibbs(m).P[ONE_GIBBS["start"]]
    same = np.allclose(row, np.asarray(a["row"], float), rtol=0, atol=TOL)
    tc = total_correlation(row)
    return same and tc > 1e-6, f"total correlation of the row {tc:.4g} nats (0 for a product law)"
