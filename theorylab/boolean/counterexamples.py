"""Counterexample generators for the distill family (functions on the hypercube)."""

from __future__ import annotations

import numpy as np

from theorylab.boolean.fourier import majority_coefficient
from theorylab.counterexamples import register, verifier

CONVENTIONS = (
    "points of the hypercube are +-1 rows; coordinates 0-based; a two-layer ReLU net is f(x) = sum_i a_i "
    "relu(<w_i, x> + b_i) with W [m, d]; zeta_i is the Fourier coefficient of Majority_d on a set of size i"
)

# The stored Lemma 64 instance: d = 11, k = 4, S = {0,1,2,3}, m = 2000 neurons (1000 mirrored pairs), seed 0.
LEM64_INSTANCE = {"d": 11, "k": 4, "m": 2000, "seed": 0}


@register("distill.lem64", "idealised one-step teacher whose in-support degree-1 correlations cancel to ~0")
def lem64_cancellation() -> dict[str, np.ndarray]:
    from theorylab.nn.distill import (
        degree_one_correlations,
        idealized_one_step_weights,
        sign_corrected_pair_correlations,
        symmetric_init,
    )

    d, k, m, seed = (LEM64_INSTANCE[key] for key in ("d", "k", "m", "seed"))
    S = list(range(k))
    net0 = symmetric_init(d, m, k, np.random.default_rng(seed))
    net1 = idealized_one_step_weights(net0, S)
    return {
        "W0": net0.W,
        "b": net0.b,
        "a": net0.a,
        "W1": net1.W,
        "correlations": degree_one_correlations(net1),
        "claimed_lower_bound": np.array(1 / (8 * k)),
        "pair_correlations": sign_corrected_pair_correlations(net0, net1, S),
    }


@verifier("distill.lem64")
def _lem64_check(a) -> tuple[bool, str]:
    """E[f(x) x_j] of the one-step teacher (recomputed exactly over the cube from W1, b, a) is below the claimed
    lower bound 1/(8k) on every in-support coordinate j < k."""
    from theorylab.nn.distill import TwoLayerReLU, degree_one_correlations

    net1 = TwoLayerReLU(np.asarray(a["W1"], float), np.asarray(a["b"], float), np.asarray(a["a"], float))
    bound = float(a["claimed_lower_bound"])
    k = round(1 / (8 * bound))
    corr = degree_one_correlations(net1)[:k]
    return bool(
        (corr < bound).all()
    ), f"in-support E[f x_j] = {np.round(corr, 5).tolist()} vs claimed >= {bound:.4g}"


@register("distill.maj", "exact Majority coefficients vs the printed asymptotic i^(-1/3)/C(d,i)")
def majority_table() -> dict[str, np.ndarray]:
    from math import comb

    d = 101
    sizes = np.array([1, 3, 5, 7, 9])
    zeta = np.array([float(majority_coefficient(d, int(i))) for i in sizes])
    printed = np.array([i ** (-1 / 3) / comb(d, int(i)) for i in sizes])
    return {"d": np.array(d), "sizes": sizes, "zeta": zeta, "printed": printed}


@verifier("distill.maj")
def _maj_check(a) -> tuple[bool, str]:
    """|zeta_i| (exact) over the printed asymptotic i^(-1/3)/C(d, i) grows by more than 1e3 across the sizes: not
    Theta(printed)."""
    from math import comb

    d, sizes = int(a["d"]), [int(i) for i in a["sizes"]]
    ratio = np.array([abs(float(majority_coefficient(d, i))) * comb(d, i) * i ** (1 / 3) for i in sizes])
    return ratio[-1] / ratio[
        0
    ] > 1e3, f"d = {d}, sizes {sizes}: |zeta_i| / printed = {[f'{r:.3g}' for r in ratio]}"


@register(
    "distill.hier", "the printed class formula c(i,j) puts inputs in zero or several classes (D=3, k=2, d=14)"
)
def hierarchical_printed_classes() -> dict[str, np.ndarray]:
    from theorylab.boolean.fourier import hypercube
    from theorylab.boolean.tasks import HierarchicalParity

    h = HierarchicalParity(3, 2, 14)
    x = hypercube(14)
    printed = np.stack([h.membership(x, i, printed=True) for i in range(1, h.K + 1)], axis=1)
    bad = printed.sum(axis=1) != 1
    return {
        "x": x[bad][:16],
        "classes_per_input": printed.sum(axis=1)[bad][:16],
        "fraction_bad": np.array(bad.mean()),
    }


@verifier("distill.hier")
def _hier_check(a) -> tuple[bool, str]:
    """The printed class formula puts every stored input in zero or several classes (recomputed)."""
    from theorylab.boolean.tasks import HierarchicalParity

    x = np.asarray(a["x"])
    h = HierarchicalParity(3, 2, x.shape[1])
    counts = np.stack([h.membership(x, i, printed=True) for i in range(1, h.K + 1)], axis=1).sum(axis=1)
    ok = len(x) > 0 and bool((counts != 1).all())
    return ok, f"{len(x)} inputs (D = 3, k = 2, d = {x.shape[1]}): classes per input {counts.tolist()}"


@register(
    "distill.lem65", "the printed first-phase batch k^2 |zeta_{k-1}|^2 against Claim 8's k^2 |zeta_{k-1}|^-2"
)
def lemma65_printed_batch() -> dict[str, np.ndarray]:
    from theorylab.boolean.sample_complexity import first_phase_batch

    d = np.array([101, 1001, 10001])
    return {
        "d": d,
        "k": np.array(4),
        "printed": np.array([float(first_phase_batch(int(v), 4, printed=True)) for v in d]),
        "needed": np.array([float(first_phase_batch(int(v), 4)) for v in d]),
    }


@verifier("distill.lem65")
def _lem65_check(a) -> tuple[bool, str]:
    """The printed batch is far below the one Claim 8 needs at every stored d (recomputed)."""
    from theorylab.boolean.sample_complexity import first_phase_batch

    d, k = np.asarray(a["d"]), int(a["k"])
    printed = np.array([float(first_phase_batch(int(v), k, printed=True)) for v in d])
    needed = np.array([float(first_phase_batch(int(v), k)) for v in d])
    ok = len(d) > 0 and bool((printed < needed).all())
    return ok, f"d = {d.tolist()}, k = {k}: printed {printed.tolist()} vs needed {needed.tolist()}"
