"""Counterexample generators of the Dyck helper lemmas."""

from __future__ import annotations

import numpy as np

from theorylab.counterexamples import register


@register("dyck.lem28", "1-D linear maps whose composition error exceeds the printed eps' of Lemma 28")
def lemma28_linear_maps() -> dict[str, np.ndarray]:
    from theorylab.attention.dyck.helpers import composition_error

    lam1, eps1, lam2, eps2 = 1.0, 0.5, 2.0, 0.1
    actual = (lam1 + eps1) * (lam2 + eps2) - lam1 * lam2  # f_i = (lam_i + eps_i) x, g_i = lam_i x
    return {
        "lam_eps": np.array([lam1, eps1, lam2, eps2]),
        "actual_error": np.array(actual),
        "printed_eps": np.array(composition_error(lam1, eps1, lam2, eps2, printed=True)),
    }
