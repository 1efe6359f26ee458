"""Symbolic derivations (sympy) behind Thm 2.1.2 and Prop. 2.1.1, independent of the numeric closed forms.

:func:`derive_block_values` minimises the squared norm of one row of the optimal family of Lemma 2.1.1 over
its free constant $u$ (within-block mass spread evenly, which is the minimum-norm split), and returns the
resulting $W_{diff} = u^*$, $W_{same} = u^* + c_3/v$ and $W_{i0} = -c_1 - c_2u^*$ together with the printed
formulas.
"""

from __future__ import annotations

import functools


def symbols():
    """The sympy symbols ``(p_m, p_c, p_r, T, v, tau)`` (positive)."""
    import sympy as sp

    return sp.symbols("p_m p_c p_r T v tau", positive=True)


def derive_block_values() -> dict[str, object]:
    """Derive Thm 2.1.2's block values; every ``*_difference`` entry is 0 iff the printed form is right.

    The minimisation is done with $c_1, c_2, c_3$ as free symbols (the row norm is a quadratic in $u$); the
    simplification $W_{i0} = (c_2 + 1)/(c_2^2 + Tv)$ then uses their definitions in terms of the masking
    rates. Derived once (sympy expressions are immutable); each call returns a fresh dict.
    """
    derived = _derive_block_values()
    return {**derived, "definitions": dict(derived["definitions"])}


@functools.cache
def _derive_block_values() -> dict[str, object]:
    import sympy as sp

    p_m, p_c, p_r, T, v, _ = symbols()
    u = sp.Symbol("u", real=True)
    c1, c2, c3 = sp.symbols("c1 c2 c3", positive=True)
    # row i >= 1: column 0 is -c1 - c2 u; own block sums to c3 + u v, each of the T-1 other blocks to u v;
    # spreading a block sum s evenly over v entries costs s^2 / v.
    norm2 = sp.expand((c1 + c2 * u) ** 2 + (c3 + u * v) ** 2 / v + (T - 1) * (u * v) ** 2 / v)
    quad, lin = norm2.coeff(u, 2), norm2.coeff(u, 1)
    u_star = sp.cancel(-lin / (2 * quad))
    w_diff, w_same, w_col = u_star, u_star + c3 / v, sp.cancel(-c1 - c2 * u_star)
    a = 1 - (1 - p_c) * p_m
    definitions = {c1: p_r / ((1 - p_c - p_r) * a * T * v), c2: 1 / ((1 - p_c - p_r) * p_m) - 1, c3: 1 / a}
    return {
        "u_star": u_star,
        "w_diff": w_diff,
        "w_same": w_same,
        "w_mask_col": w_col,
        "curvature": sp.cancel(2 * quad),
        "w_diff_difference": sp.cancel(w_diff + (c1 * c2 + c3) / (c2**2 + T * v)),
        "w_mask_col_difference": sp.cancel(w_col - (c2 * c3 - c1 * T * v) / (c2**2 + T * v)),
        "w_mask_col_simplified_difference": sp.cancel((w_col - (c2 + 1) / (c2**2 + T * v)).subs(definitions)),
        "contrast_difference": sp.cancel(w_same - w_diff - c3 / v),
        "definitions": definitions,
    }


def prop211_total_mass():
    r"""$v\tau p_1 + v(T-\tau)p_2 + m_0 - 1$, which simplifies to 0 (Prop. 2.1.1's frequencies sum to one)."""
    import sympy as sp

    p_m, p_c, p_r, T, v, tau = symbols()
    a = 1 - (1 - p_c) * p_m
    p1 = a / (v * tau) + p_m * p_r / (v * T)
    p2 = p_m * p_r / (v * T)
    m0 = p_m * (1 - p_c - p_r)
    return sp.cancel(v * tau * p1 + v * (T - tau) * p2 + m0 - 1)


def block_prediction_residual():
    r"""$(\mathbf W^{V*}y)_i - P_i$ for a word $i$ of a present topic, as a function of $P_i$, and the two
    identities used to write it in the constants: returns three expressions that all cancel to 0.

    With uniform attention $y_0 = m_0$, $\sum_{l \ge 1} y_l = 1 - m_0$ and the own-topic mass is $v(aP_i +
    b)$, so the prediction is $W_{i0}m_0 + W_{diff}(1 - m_0) + c_3(aP_i + b)$; in the constants $m_0 = 1/(c_2
    + 1)$ and $c_3 b = c_1 m_0$.
    """
    import sympy as sp

    p_m, p_c, p_r, T, v, _ = symbols()
    P = sp.Symbol("P", real=True)
    values = derive_block_values()
    c1, c2, c3 = sp.symbols("c1 c2 c3", positive=True)
    definitions = values["definitions"]
    m0 = p_m * (1 - p_c - p_r)
    b = p_m * p_r / (T * v)
    m0_c = 1 / (c2 + 1)
    pred = values["w_mask_col"] * m0_c + values["w_diff"] * (1 - m0_c) + c3 * (P / c3) + c1 * m0_c
    return (
        sp.cancel(pred - P),
        sp.cancel(m0_c.subs(definitions) - m0),
        sp.cancel((c3 * b - c1 * m0).subs(definitions)),
    )
