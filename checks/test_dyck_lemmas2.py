"""Claim checks of the Dyck helper lemmas, continued (Liu §3.6.4 numbering; Li §2.2.5 = Lemma 2.2.(n - 23))."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from theorylab.attention.dyck import network_selector as ns
from theorylab.testing import rejects


# ------------------------------------------------------------------------------------------------ Lemma 42
def _networks(seed: int, K: int, m: int, n: int, lo: int = -3, hi: int = 3) -> tuple:
    rng = np.random.default_rng(seed)
    a = rng.integers(-3, 4, (K, m))
    w = rng.integers(lo, hi + 1, (K, m, n))
    b = rng.integers(lo, hi + 1, (K, m))
    bias = rng.integers(-3, 4, K)
    return a, w, b, bias


def _preactivation_bound(w: np.ndarray, b: np.ndarray, M: int) -> int:
    return int((np.abs(w).sum(axis=2) * M + np.abs(b)).max())


def _mismatches(select, a, w, b, bias, M: int, n: int) -> int:
    """Points (y, x), x in {0..M}^n, where ``select(y, x)`` differs from ``f_y(x)`` (exact integers)."""
    K = a.shape[0]
    bad = 0
    for x in itertools.product(range(M + 1), repeat=n):
        x = np.array(x)
        fk = ns.eval_networks(a, w, b, bias, x)
        bad += sum(int(select(y, x) != fk[y - 1]) for y in range(1, K + 1))
    return bad


@pytest.mark.claim("dyck.lem42", tier="exact")
def test_lemma42_corrected_selector_is_exact_with_width_2Km_plus_K() -> None:
    K, m, n, M = 4, 3, 2, 5
    a, w, b, bias = _networks(0, K, m, n)
    W1, b1, a2 = ns.selector_weights(a, w, b, bias, _preactivation_bound(w, b, M))
    assert W1.shape == (2 * K * m + K, n + 1) and W1.dtype.kind == "i"
    assert _mismatches(lambda y, x: ns.eval_selector(W1, b1, a2, y, x), a, w, b, bias, M, n) == 0
    rejects(lambda: ns.selector_weights(a, w, b[:, :2], bias, 1), r"need a \(K, m\), w \(K, m, n\)")


@pytest.mark.claim("dyck.lem42", tier="exact", control=True)
def test_lemma42_control_the_printed_construction_fails_with_biases_or_negative_preactivations() -> None:
    K, m, n, M = 4, 3, 2, 5
    a, w, b, bias = _networks(0, K, m, n, lo=0, hi=2)  # pre-activations >= 0
    B = _preactivation_bound(w, b, M)
    zero = np.zeros(K, dtype=int)

    def printed(bb, bvec):
        return lambda y, x: ns.printed_selector(a, w, bvec, bb, B, y, x)

    assert _mismatches(printed(zero, b), a, w, b, zero, M, n) == 0  # both defects absent: it works
    with_bias = np.array([1, 0, 0, 0])
    assert (
        _mismatches(printed(with_bias, b), a, w, b, with_bias, M, n) == 3 * 36
    )  # every y >= 2 is off by b_1
    negative = b - 10
    assert _mismatches(printed(zero, negative), a, w, negative, zero, M, n) > 0


@given(
    K=st.integers(2, 5),
    m=st.integers(1, 4),
    n=st.integers(1, 3),
    M=st.integers(1, 4),
    seed=st.integers(0, 2**32 - 1),
)
@settings(deadline=None, max_examples=30)
@pytest.mark.claim(
    "dyck.lem42",
    tier="property",
    no_trivial="K >= 2 and integer weights in [-4, 4]: y selects among networks",
)
def test_lemma42_random_integer_networks(K: int, m: int, n: int, M: int, seed: int) -> None:
    a, w, b, bias = _networks(seed, K, m, n, lo=-4, hi=4)
    W1, b1, a2 = ns.selector_weights(a, w, b, bias, _preactivation_bound(w, b, M))
    assert _mismatches(lambda y, x: ns.eval_selector(W1, b1, a2, y, x), a, w, b, bias, M, n) == 0


# ------------------------------------------------------------------------------------------------ Lemma 34
def _norm12(A: np.ndarray) -> float:
    """Definition 17: the largest column 2-norm."""
    return float(np.linalg.norm(A, axis=0).max())


def _norm11(A: np.ndarray) -> float:
    """The largest column 1-norm."""
    return float(np.abs(A).sum(axis=0).max())


def _col_softmax(S: np.ndarray) -> np.ndarray:
    e = np.exp(S - S.max(axis=0, keepdims=True))
    return e / e.sum(axis=0, keepdims=True)


def _lemma34_sides(P, Q, x, A, B, C) -> tuple[float, float, float, float]:
    """(||BA - P x s||_{1,2}, eps_1 ||Px||_{1,2} + eps_2, ||LN_C(BA) - LN_C(P x s)||_{1,2}, its bound), with
    s = column softmax of x^T Q x and eps's the measured distances."""
    from theorylab.attention.dyck.bounds import layer_norm_c

    s = _col_softmax(x.T @ Q @ x)
    px = P @ x
    bound = _norm11(A - s) * _norm12(px) + _norm12(B - px)
    ln = lambda M: layer_norm_c(M.T, C).T  # noqa: E731  (LN_C per column)
    return _norm12(B @ A - px @ s), bound, _norm12(ln(B @ A) - ln(px @ s)), 2 * bound / C


@pytest.mark.claim("dyck.lem34", tier="exact")
def test_lemma34_bound_is_attained() -> None:
    # P x has columns u, -u; A moves mass t between them in every column: error 2t|u| = eps_1 ||Px||_{1,2}
    u = np.array([[3.0], [4.0]])
    P, Q = np.eye(2), np.zeros((2, 2))  # s = 1/2 everywhere
    x = np.hstack([u, -u]) / 5
    t = 0.125
    A = np.full((2, 2), 0.5) + np.array([[t, t], [-t, -t]])
    lhs, bound, _, _ = _lemma34_sides(P, Q, x, A, P @ x, 1.0)
    assert lhs == bound == 2 * t  # ||u/5|| = 1
    # a common column shift v of B: error |v| = eps_2 exactly
    v = np.array([[0.0], [0.25]])
    lhs, bound, _, _ = _lemma34_sides(P, Q, x, np.full((2, 2), 0.5), P @ x + v, 1.0)
    assert lhs == bound == 0.25


@pytest.mark.claim("dyck.lem34", tier="exact", control=True)
def test_lemma34_control_half_of_the_eps1_term_is_exceeded() -> None:
    u = np.array([[3.0], [4.0]])
    x = np.hstack([u, -u]) / 5
    A = np.full((2, 2), 0.5) + np.array([[0.125, 0.125], [-0.125, -0.125]])
    lhs, bound, _, _ = _lemma34_sides(np.eye(2), np.zeros((2, 2)), x, A, x, 1.0)
    assert lhs > bound / 2


@given(
    d=st.integers(2, 5),
    N=st.integers(2, 6),
    C=st.floats(0.1, 2.0),
    noise=st.floats(0.01, 0.5),
    seed=st.integers(0, 2**32 - 1),
)
@settings(deadline=None, max_examples=40)
@pytest.mark.claim(
    "dyck.lem34", tier="property", no_trivial="noise >= 0.01: A and B differ from the exact attention"
)
def test_lemma34_random_perturbed_attention(d: int, N: int, C: float, noise: float, seed: int) -> None:
    rng = np.random.default_rng(seed)
    P, Q = (M / max(1.0, np.linalg.norm(M, 2)) for M in rng.normal(size=(2, d, d)))  # ||P||, ||Q|| <= 1
    x = rng.normal(size=(d, N))
    s = _col_softmax(x.T @ Q @ x)
    A = s * np.exp(noise * rng.normal(size=(N, N)))
    A /= A.sum(axis=0, keepdims=True)  # columns stay on the simplex
    B = P @ x + noise * rng.normal(size=(d, N))
    lhs, bound, ln_lhs, ln_bound = _lemma34_sides(P, Q, x, A, B, C)
    assert lhs <= bound * (1 + 1e-12) + 1e-15
    assert ln_lhs <= ln_bound * (1 + 1e-12) + 1e-15
