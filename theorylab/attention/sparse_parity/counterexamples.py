"""Counterexample generators for Props 9 and 10 (distill family)."""

from __future__ import annotations

import numpy as np

from theorylab.counterexamples import register


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
