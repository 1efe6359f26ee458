"""Claim checks of the Dyck helper lemmas (Liu §3.6.4 numbering; Li §2.2.5 = Lemma 2.2.(n - 23))."""

from __future__ import annotations

from fractions import Fraction as F

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from theorylab.attention.dyck.bounds import layer_norm_c
from theorylab.attention.dyck.helpers import composition_error, identity_through_relu, interpolating_mlp
from theorylab.testing import rejects, trivial


# ------------------------------------------------------------------------------------------------ Lemma 28
@pytest.mark.claim("dyck.lem28", tier="exact")
def test_lemma28_composition_error_exact_on_linear_maps() -> None:
    # f_i = (lam_i + eps_i) x, g_i = lam_i x (g_1 lam_1-Lipschitz, |g_2 x| = lam_2 |x|): the composition error is
    # exactly (lam_1 + eps_1)(lam_2 + eps_2) - lam_1 lam_2, the corrected eps' (attained)
    for lam1, eps1, lam2, eps2 in ((F(1), F(1, 2), F(2), F(1, 10)), (F(3), F(1, 7), F(1, 2), F(2, 3))):
        actual = (lam1 + eps1) * (lam2 + eps2) - lam1 * lam2
        assert composition_error(lam1, eps1, lam2, eps2) == actual
    rejects(
        lambda: composition_error(-1, 0, 1, 0), r"Lipschitz constants and approximation errors must be >= 0"
    )


@pytest.mark.claim("dyck.lem28", tier="exact", control=True)
def test_lemma28_printed_eps_fails() -> None:
    # the printed (lam_2 + eps_1)(lam_1 + eps_2) - lam_1 lam_2 is below the actual error when
    # (lam_2 - lam_1)(eps_1 - eps_2) > 0: lam = (1, 2), eps = (1/2, 1/10): 23/20 > 3/4
    lam1, eps1, lam2, eps2 = F(1), F(1, 2), F(2), F(1, 10)
    actual = (lam1 + eps1) * (lam2 + eps2) - lam1 * lam2
    assert actual == F(23, 20) > composition_error(lam1, eps1, lam2, eps2, printed=True) == F(3, 4)


@given(
    lam1=st.floats(0, 3),
    eps1=st.floats(0, 1),
    lam2=st.floats(0, 3),
    eps2=st.floats(0, 1),
    seed=st.integers(0, 2**32 - 1),
)
@settings(deadline=None)
@pytest.mark.claim("dyck.lem28", tier="property")
def test_lemma28_property_random_maps(lam1, eps1, lam2, eps2, seed) -> None:
    # random linear maps in R^4 with ||G_i|| = lam_i and ||F_i - G_i|| <= eps_i (operator norms): the composition
    # error stays within the corrected eps'
    rng = np.random.default_rng(seed)

    def with_norm(M, r):
        n = np.linalg.norm(M, 2)
        return M * (r / n) if n > 0 else M

    G1, G2 = with_norm(rng.normal(size=(4, 4)), lam1), with_norm(rng.normal(size=(4, 4)), lam2)
    F1, F2 = G1 + with_norm(rng.normal(size=(4, 4)), eps1), G2 + with_norm(rng.normal(size=(4, 4)), eps2)
    err = np.linalg.norm(F1 @ F2 - G1 @ G2, 2)
    trivial(bool(eps1 == 0 and eps2 == 0))  # exact maps: zero error
    assert err <= composition_error(lam1, eps1, lam2, eps2) * (1 + 1e-9) + 1e-12


# ------------------------------------------------------------------------------------------------ Lemma 35
@pytest.mark.claim("dyck.lem35", tier="exact")
def test_lemma35_zero_padding_exact() -> None:
    # float round-off only (the mean of d or d' numbers): 1e-15
    rng = np.random.default_rng(3)
    for d, dp, C in ((3, 5, 0.5), (4, 9, 10.0), (6, 7, 1.0)):
        x = rng.normal(size=d)
        padded = np.concatenate([x - x.mean(), np.zeros(dp - d)])
        want = np.concatenate([layer_norm_c(x, C), np.zeros(dp - d)])
        assert np.abs(layer_norm_c(padded, C) - want).max() <= 1e-15


@pytest.mark.claim("dyck.lem35", tier="exact", control=True)
def test_lemma35_control_uncentred_input() -> None:
    # the lemma needs the centred input P x: padding x itself moves the mean
    x = np.array([1.0, 2.0, 4.0])
    padded = np.concatenate([x, np.zeros(2)])
    assert np.abs(layer_norm_c(padded, 1.0) - np.concatenate([layer_norm_c(x, 1.0), np.zeros(2)])).max() > 0.1


@given(seed=st.integers(0, 2**32 - 1), d=st.integers(2, 8), extra=st.integers(1, 8), C=st.floats(0.01, 10))
@settings(deadline=None)
@pytest.mark.claim("dyck.lem35", tier="property")
def test_lemma35_property(seed: int, d: int, extra: int, C: float) -> None:
    x = np.random.default_rng(seed).normal(size=d)
    trivial(bool(np.ptp(x) < 1e-9))  # a constant x: both sides 0
    padded = np.concatenate([x - x.mean(), np.zeros(extra)])
    want = np.concatenate([layer_norm_c(x, C), np.zeros(extra)])
    assert np.abs(layer_norm_c(padded, C) - want).max() <= 1e-12


# ------------------------------------------------------------------------------------------------ Lemma 38
@pytest.mark.claim("dyck.lem38", tier="exact")
def test_lemma38_interpolation_exact() -> None:
    rng = np.random.default_rng(4)
    for n, d in ((5, 3), (8, 2), (1, 4)):
        xs = [[F(int(v), 7) for v in rng.integers(-20, 20, size=d)] for _ in range(n)]
        ys = [F(int(v), 3) for v in rng.integers(-9, 9, size=n)]
        w = [F(int(v)) for v in rng.integers(1, 1000, size=d)]  # generic integer direction
        f, gamma, z = interpolating_mlp(xs, ys, w)
        assert all(f(x) == y for x, y in zip(xs, ys, strict=True)) and len(z) == n  # width 2n
    rejects(
        lambda: interpolating_mlp([[F(1)], [F(1)]], [F(0), F(1)], [F(1)]), r"w does not separate the points"
    )


@pytest.mark.claim("dyck.lem38", tier="exact", control=True)
def test_lemma38_control_margin_too_large() -> None:
    # the construction needs every gap >= gamma (the printed margin 2 gamma is more than enough); with gamma twice
    # the smallest gap the neighbouring units are not saturated, the recursion's 2 gamma z_j fails, and so does the
    # same equality check
    xs, ys, w = [[F(0)], [F(1)], [F(3)]], [F(1), F(-2), F(5)], [F(1)]
    f, gamma, _ = interpolating_mlp(xs, ys, w)
    assert gamma == F(1, 2) and [f(x) for x in xs] == ys
    g2 = 4 * gamma  # twice the smallest gap
    z = []
    for y in ys:
        z.append(y / g2 - 2 * sum(z))

    def wrong(x):
        return sum(
            zi * (max(x[0] - p + g2, 0) - max(x[0] - p - g2, 0))
            for zi, p in zip(z, [F(0), F(1), F(3)], strict=True)
        )

    assert [wrong(x) for x in xs] != ys


# ------------------------------------------------------------------------------------------------ Lemma 43
@pytest.mark.claim("dyck.lem43", tier="exact")
def test_lemma43_identity_through_relu_exact() -> None:
    rng = np.random.default_rng(5)
    W = rng.integers(-3, 4, size=(4, 4)).astype(np.int64)
    A, B = identity_through_relu(W)
    X = rng.integers(-10, 11, size=(50, 4))
    out = np.maximum(X @ A.T, 0) @ B.T
    assert np.array_equal(out, X @ W.T)  # integers: exact
    Wn = W / np.linalg.norm(W, 2) * 2  # ||W|| = 2: both weight matrices within 2 sqrt(2)
    A, B = identity_through_relu(Wn)
    assert np.linalg.norm(A, 2) <= 2 * np.sqrt(2) + 1e-12 and abs(np.linalg.norm(B, 2) - np.sqrt(2)) <= 1e-12


@pytest.mark.claim("dyck.lem43", tier="exact", control=True)
def test_lemma43_control_one_sided() -> None:
    # without the -W x half, ReLU(W x) loses the negative entries
    W = np.array([[1, -2], [0, 1]])
    x = np.array([1, 1])
    assert not np.array_equal(np.maximum(W @ x, 0), W @ x)


# ------------------------------------------------------------------------------------------------ Li §2.2.5.2
def _random_model(rng, L: int, m: int = 6, ma: int = 4, width: int = 8, vocab: int = 5):
    from theorylab.attention.dyck.architecture import TheoryLayer

    def layer():
        shapes = [(ma, m), (ma, m), (m, m), (width, m), (width,), (m, width), (m,)]
        return TheoryLayer(*(rng.normal(size=s) for s in shapes))

    return (
        [layer() for _ in range(L)],
        rng.normal(size=(m, vocab)),
        (rng.normal(size=(4, m)), rng.normal(size=4)),
    )


@pytest.mark.claim("dyck.sec2_2_5_2_deeper", tier="exact")
def test_identity_layers_extend_solutions_exactly() -> None:
    # identity layers (zero W_V, LN(0) = 0, the residual, FFN [I, -I] ReLU([X; -X])) inserted at any depth leave the
    # logits bit-for-bit unchanged: relu(x) - relu(-x) = x and products with I are exact in floating point
    from theorylab.attention.dyck.architecture import theory_transformer
    from theorylab.attention.dyck.helpers import deepen
    from theorylab.languages.dyck import Dyck

    rng = np.random.default_rng(7)
    layers, E, head = _random_model(rng, 2)
    tokens = Dyck(2, 2).all_prefixes(6)
    base = theory_transformer(layers, E, *head, tokens)
    for positions in ([2], [0], [1, 1, 2], [0, 1, 2, 2]):
        assert np.array_equal(theory_transformer(deepen(layers, 6, positions), E, *head, tokens), base)
    rejects(lambda: deepen(layers, 6, [3]), r"insertion position 3 outside 0..2")


@pytest.mark.claim("dyck.sec2_2_5_2_deeper", tier="exact", control=True)
def test_identity_layers_control_post_ln_block() -> None:
    # in the post-LN block g(LN(attn + X)) of (2.85) the same layer computes g(LN(X)) = LN(X) != X: no identity
    from theorylab.attention.dyck.architecture import theory_transformer
    from theorylab.attention.dyck.helpers import deepen
    from theorylab.languages.dyck import Dyck

    layers, E, head = _random_model(np.random.default_rng(7), 2)
    tokens = Dyck(2, 2).all_prefixes(6)
    base = theory_transformer(layers, E, *head, tokens, block="post_ln")
    deep = theory_transformer(deepen(layers, 6, [2]), E, *head, tokens, block="post_ln")
    assert np.abs(deep - base).max() > 1e-2


@given(
    seed=st.integers(0, 2**32 - 1),
    L=st.integers(1, 3),
    extra=st.lists(st.integers(0, 3), min_size=1, max_size=3),
)
@settings(deadline=None)
@pytest.mark.claim("dyck.sec2_2_5_2_deeper", tier="property")
def test_identity_layers_property(seed: int, L: int, extra: list[int]) -> None:
    from theorylab.attention.dyck.architecture import theory_transformer
    from theorylab.attention.dyck.helpers import deepen

    rng = np.random.default_rng(seed)
    layers, E, head = _random_model(rng, L)
    tokens = rng.integers(0, 4, size=(8, 5))
    base = theory_transformer(layers, E, *head, tokens)
    trivial(bool(np.abs(base).max() == 0))  # a model that outputs 0 everywhere
    positions = [min(p, L) for p in extra]
    assert np.array_equal(theory_transformer(deepen(layers, 6, positions), E, *head, tokens), base)


# ------------------------------------------------------------------------------------------------ Lemmas 39, 40
@pytest.mark.claim("dyck.lem40", tier="exact")
def test_lemma40_selector_exact() -> None:
    from theorylab.attention.dyck.helpers import selector_network

    rng = np.random.default_rng(6)
    for n, M in ((4, F(3)), (7, F(1, 2))):
        f = selector_network(n, M)
        for _ in range(30):
            x = [M * F(int(v), 10) for v in rng.integers(0, 11, size=n)]  # x in [0, M]^n, endpoints included
            y = int(rng.integers(1, n + 1))
            assert f(x, y) == x[y - 1]
    rejects(lambda: selector_network(0, 1), r"need n >= 1 and M > 0")


@pytest.mark.claim("dyck.lem40", tier="exact", control=True)
def test_lemma40_control_width_2n_without_offset() -> None:
    # the 2n difference units alone return x_y + M (y - 1): the offset -M(y - 1) needs its own unit
    from theorylab.attention.dyck.helpers import selector_network

    f = selector_network(3, F(2), with_offset_unit=False)
    x = [F(1), F(1, 2), F(3, 2)]
    assert [f(x, y) for y in (1, 2, 3)] == [F(1), F(1, 2) + 2, F(3, 2) + 4]


@pytest.mark.claim("dyck.lem39", tier="exact")
def test_lemma39_basis_moves_every_point() -> None:
    # the projector U U^T onto span(v, 1)^perp moves each x_i by at least |<v_perp, x_i>| > 0, v_perp the unit
    # component of v orthogonal to 1
    from theorylab.attention.dyck.helpers import separating_basis

    rng = np.random.default_rng(8)
    n = 6
    xs = rng.normal(size=(20, n))
    v = rng.normal(size=n)
    U = separating_basis(xs, v)
    assert np.abs(U.T @ U - np.eye(n - 2)).max() <= 1e-12 and np.abs(U.T @ np.ones(n)).max() <= 1e-12
    vp = v - v.mean()
    vp /= np.linalg.norm(vp)
    moved = np.linalg.norm(xs - xs @ U @ U.T, axis=1)
    assert (moved >= np.abs(xs @ vp) - 1e-12).all() and moved.min() > 1e-3
    rejects(lambda: separating_basis(xs, np.ones(n)), r"v must not be parallel to the all-ones vector")


@pytest.mark.claim("dyck.lem39", tier="exact", control=True)
def test_lemma39_control_point_orthogonal_to_v() -> None:
    # the proof needs v^T x_i != 0: a point orthogonal to v and to 1 is left in place
    from theorylab.attention.dyck.helpers import separating_basis

    v = np.array([1.0, -1.0, 0.0, 0.0, 2.0])
    x = np.array([1.0, 1.0, -1.0, -1.0, 0.0])  # orthogonal to v and to 1
    U = separating_basis(x[None], v)
    assert np.abs(U @ U.T @ x - x).max() <= 1e-12
