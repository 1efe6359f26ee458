"""Counterexample generators of the Dyck helper lemmas."""

from __future__ import annotations

import numpy as np

from theorylab.counterexamples import register, verifier

CONVENTIONS = (
    "Lemma 28 on 1-D linear maps: f_i(x) = (lam_i + eps_i) x approximates g_i(x) = lam_i x; lam_eps stores "
    "(lam_1, eps_1, lam_2, eps_2); the composition error is |f_2(f_1(x)) - g_2(g_1(x))| at x = 1"
)


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


@verifier("dyck.lem28")
def _lemma28_check(a) -> tuple[bool, str]:
    """The composition error, recomputed from the stored maps, exceeds the printed eps' (so Lemma 28 fails)."""
    from theorylab.attention.dyck.helpers import composition_error

    lam1, eps1, lam2, eps2 = (float(v) for v in np.asarray(a["lam_eps"]))
    actual = (lam1 + eps1) * (lam2 + eps2) - lam1 * lam2
    printed = composition_error(lam1, eps1, lam2, eps2, printed=True)
    return actual > printed, f"composition error {actual:g} vs printed eps' {printed:g}"
