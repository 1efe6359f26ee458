"""Counterexample generators for Props 9 and 10 (distill family)."""

from __future__ import annotations

import numpy as np

from theorylab.counterexamples import register, verifier

CONVENTIONS = "inputs are +-1 vectors (rows); S lists 0-based coordinates; parity(x, S) = prod_{i in S} x_i"


@register(
    "distill.prop9", "the printed Prop 9 example (last position keyed as if in S) fails when d is not in S"
)
def prop9_printed_failure() -> dict[str, np.ndarray]:
    from theorylab.attention.sparse_parity.constructions import prop9_printed
    from theorylab.boolean.fourier import hypercube, parity

    d, S = 12, (0, 1, 2, 3)
    c = float(np.sqrt(np.log(4 * (d - len(S))) + 1))  # so that the printed c^2 equals the corrected scale
    x = hypercube(d).astype(np.float64)
    out = prop9_printed(d, S, c)(x)
    wrong = np.abs(out - parity(x, S)) > 0.5
    return {
        "d": np.array(d),
        "S": np.array(S),
        "c": np.array(c),
        "wrong_inputs": x[wrong],
        "outputs": out[wrong],
    }


@verifier("distill.prop9")
def _prop9_check(a) -> tuple[bool, str]:
    """The printed construction (rebuilt) is off by more than 1/2 from the parity on every stored input."""
    from theorylab.attention.sparse_parity.constructions import prop9_printed
    from theorylab.boolean.fourier import parity

    d, S, c = int(a["d"]), tuple(int(i) for i in a["S"]), float(a["c"])
    x = np.asarray(a["wrong_inputs"], float)
    err = np.abs(prop9_printed(d, S, c)(x) - parity(x, S))
    ok = x.shape[0] > 0 and bool((err > 0.5).all())
    return (
        ok,
        f"d = {d}, S = {list(S)}: {x.shape[0]} inputs, smallest error {err.min() if err.size else 0:.3g} (> 1/2)",
    )


@register("distill.prop10", "additive embeddings: two inputs with equal count and different parity collide")
def prop10_additive_collision() -> dict[str, np.ndarray]:
    from theorylab.attention.sparse_parity.constructions import additive_uniform_attention_output

    d = 6
    x1 = np.array([[1, 1, -1, -1, -1, -1]], dtype=np.float64)  # parity on S = {0, 2}: -1
    x2 = np.array([[1, -1, 1, -1, -1, -1]], dtype=np.float64)  # parity on S = {0, 2}: +1
    return {
        "d": np.array(d),
        "S": np.array([0, 2]),
        "x1": x1[0],
        "x2": x2[0],
        "h1": additive_uniform_attention_output(x1)[0],
        "h2": additive_uniform_attention_output(x2)[0],
    }


@verifier("distill.prop10")
def _prop10_check(a) -> tuple[bool, str]:
    """x1 and x2 have different parities on S but the same additive uniform-attention output (recomputed)."""
    from theorylab.attention.sparse_parity.constructions import additive_uniform_attention_output
    from theorylab.boolean.fourier import parity

    x1, x2 = np.asarray(a["x1"], float)[None], np.asarray(a["x2"], float)[None]
    S = tuple(int(i) for i in a["S"])
    h1, h2 = additive_uniform_attention_output(x1)[0], additive_uniform_attention_output(x2)[0]
    p1, p2 = float(parity(x1, S)[0]), float(parity(x2, S)[0])
    same = float(np.abs(h1 - h2).max())
    return same <= 1e-12 and p1 != p2, f"parities {p1:g} vs {p2:g}; max |h1 - h2| = {same:.1e}"
