r"""The definitions of Liu §3.6 (= Li §2.2) used by the lottery-ticket part (Thm 3): a validator for the minimal
first layer (Assumption 10), nonstructural pruning (Def 15), $\epsilon$-approximation (Def 16), the 1,2-norm
(Def 17) and the attention module (Def 18), plus the deterministic steps of Lemmas 30 and 32.

Conventions: matrices are column-major as in the text ($X\in\mathbb R^{m\times N}$, one column per position);
$\sigma$ is the column softmax; $\mathrm{LN}_C(x)=\mathcal P_\perp x/\max(\|\mathcal P_\perp x\|_2,C)$ per column.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

import numpy as np

from theorylab.languages.dyck import Dyck

__all__ = [
    "bracket_depths",
    "minimal_first_layer_violations",
    "norm_12",
    "is_nonstructural_pruning",
    "approximation_constant",
    "attention_module",
    "bilinear_error_bound",
    "value_pruning",
    "subset_sum_pruning_error",
]


def _matrix(A, name: str) -> np.ndarray:
    A = np.asarray(A, dtype=np.float64)
    if A.ndim != 2:
        raise ValueError(f"{name} must be a 2-D matrix, got shape {A.shape}")
    if not np.all(np.isfinite(A)):
        raise ValueError(f"{name} contains NaN or inf")
    return A


def bracket_depths(lang: Dyck, tokens: np.ndarray) -> np.ndarray:
    r"""$D(w_{1:i})$ = #open − #closed in $w_{1:i}$ for every position (the "grammar depth of the bracket at
    position $i$": an open bracket at depth $d$ is closed at depth $d-1$). ``tokens`` ``[B, N]``, 0-based
    (even = open, odd = close); non-prefixes of $\mathrm{Dyck}_{k,D}$ raise."""
    arr = lang._as_tokens(tokens, batch=True)
    lang._require_prefixes(arr)
    return np.cumsum(np.where(arr % 2 == 0, 1, -1), axis=1)


def minimal_first_layer_violations(
    lang: Dyck, tokens: np.ndarray, outputs: np.ndarray, atol: float = 0.0
) -> int:
    r"""Assumption 10: the $(j+1)$-th output column depends only on the type and depth of $t_j$ (column 0 is the
    start token $t_S$). Returns the number of (token, depth) classes, start included, whose outputs over the batch
    are not all equal (within ``atol``); 0 means the layer is minimal on these prefixes.

    ``tokens`` ``[B, N]`` prefixes, ``outputs`` ``[B, N+1, m]``."""
    tokens = np.asarray(tokens)
    depth = bracket_depths(lang, tokens)
    out = np.asarray(outputs, dtype=np.float64)
    B, N = depth.shape
    if out.ndim != 3 or out.shape[:2] != (B, N + 1):
        raise ValueError(f"outputs must have shape [B, N+1, m] = [{B}, {N + 1}, m], got {out.shape}")
    if atol < 0:
        raise ValueError(f"atol must be >= 0, got {atol}")
    keys = np.concatenate([np.full((B, 1), -1), tokens * (lang.depth + 1) + depth], axis=1).ravel()
    rows = out.reshape(B * (N + 1), -1)
    bad = 0
    for key in np.unique(keys):
        group = rows[keys == key]
        bad += int(np.abs(group - group[0]).max() > atol)
    return bad


def norm_12(A) -> float:
    r"""Def 17: $\|A\|_{1,2}=\max_i\|A_{:,i}\|_2$, the largest column 2-norm (the text says "max row norm" but
    its formula, and every use in Lemmas 30-37, takes columns)."""
    return float(np.linalg.norm(_matrix(A, "A"), axis=0).max(initial=0.0))


def is_nonstructural_pruning(W, W_pruned) -> bool:
    r"""Def 15: $W'$ is a nonstructural pruning of $W$ iff same shape and $W'_{ij}\in\{W_{ij},0\}$ for all
    $i,j$."""
    W, P = _matrix(W, "W"), _matrix(W_pruned, "W_pruned")
    if W.shape != P.shape:
        raise ValueError(f"a pruning keeps the shape: {W.shape} vs {P.shape}")
    return bool(np.all((P == W) | (P == 0)))


def approximation_constant(
    f: Callable[[np.ndarray], np.ndarray],
    g: Callable[[np.ndarray], np.ndarray],
    xs: Iterable[np.ndarray],
    norm: Callable[[np.ndarray], float] | None = None,
) -> float:
    r"""Def 16 on a finite set: the least $\epsilon$ with $\|f(x)-g(x)\|\le\epsilon\|x\|$ for every $x$ in ``xs``
    ($f$ is an $\epsilon$-approximation of $g$ there iff this is $\le\epsilon$). ``norm`` defaults to the 2-norm
    for vectors and the 1,2-norm (Def 17) for matrices; $x=0$ with $f(0)\ne g(0)$ gives ``inf``."""
    worst = 0.0
    for x in xs:
        x = np.asarray(x, dtype=np.float64)
        nrm = norm or (norm_12 if x.ndim == 2 else (lambda v: float(np.linalg.norm(v))))
        gap, size = nrm(np.asarray(f(x)) - np.asarray(g(x))), nrm(x)
        if size == 0:
            if gap > 0:
                return float("inf")
            continue
        worst = max(worst, gap / size)
    return worst


def attention_module(X, W_V, W_K, W_Q, C: float) -> np.ndarray:
    r"""Def 18: $a(X)=\mathrm{LN}_C\big(W_VX\,\sigma(X^\top W_K^\top W_QX)\big)$, $\sigma$ the column softmax
    (no causal mask), $\mathrm{LN}_C$ per column."""
    X = _matrix(X, "X")
    W_V, W_K, W_Q = (_matrix(W, name) for W, name in ((W_V, "W_V"), (W_K, "W_K"), (W_Q, "W_Q")))
    m = X.shape[0]
    if W_V.shape != (m, m) or W_K.shape[1] != m or W_Q.shape != W_K.shape:
        raise ValueError(f"need W_V (m, m) and W_K, W_Q (m_a, m) with m = {m}")
    if not C > 0:
        raise ValueError(f"C must be > 0, got {C}")
    S = (W_K @ X).T @ (W_Q @ X)
    A = np.exp(S - S.max(axis=0, keepdims=True))
    A /= A.sum(axis=0, keepdims=True)
    Y = W_V @ X @ A
    Y = Y - Y.mean(axis=0, keepdims=True)
    return Y / np.maximum(np.linalg.norm(Y, axis=0, keepdims=True), C)


def bilinear_error_bound(X, W, W_approx) -> tuple[float, float]:
    r"""Lemma 30's step: $(\|X^\top(\tilde W-W)X\|_\infty,\ \|\tilde W-W\|_2\|X\|_{1,2}^2)$; the first never exceeds
    the second (each entry is $x_i^\top(\tilde W-W)x_j$)."""
    X, W, Wa = _matrix(X, "X"), _matrix(W, "W"), _matrix(W_approx, "W_approx")
    if W.shape != Wa.shape or W.shape != (X.shape[0], X.shape[0]):
        raise ValueError(f"need W, W_approx of shape (m, m) = {(X.shape[0],) * 2}")
    return float(np.abs(X.T @ (Wa - W) @ X).max()), float(np.linalg.norm(Wa - W, 2) * norm_12(X) ** 2)


def value_pruning(W, d: int, threshold: float = 0.5) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    r"""Lemma 32's construction: split the columns in halves; in the top-right block pick $d$ entries $\ge$
    ``threshold`` with increasing rows $a_1<\dots<a_d\le\lceil n/2\rceil<b_1<\dots<b_d$ (greedy over rows, one
    block of columns per pick) and prune everything else. Returns ``(W', rows, cols)`` - the submatrix
    $W'[a,b]$ is diagonal with entries in $[\text{threshold}, 1]$ and rows and columns are disjoint - or ``None``
    when the greedy search fails."""
    W = _matrix(W, "W")
    n = W.shape[0]
    if W.shape != (n, n) or not 1 <= d:
        raise ValueError(f"need a square W and d >= 1, got shape {W.shape}, d = {d}")
    half = -(-n // 2)
    width = (n - half) // d
    if width < 1 or half < d:
        return None
    rows, cols, r = [], [], 0
    for block in range(d):
        lo = half + block * width
        while r < half and not np.any(W[r, lo : lo + width] >= threshold):
            r += 1
        if r == half:
            return None
        c = lo + int(np.argmax(W[r, lo : lo + width] >= threshold))
        rows.append(r)
        cols.append(c)
        r += 1
    P = np.zeros_like(W)
    P[rows, cols] = W[rows, cols]
    return P, np.array(rows), np.array(cols)


def subset_sum_pruning_error(a, b, w: float) -> float:
    r"""Lemma 25 (Pensia et al.'s Thm 1) for a scalar target $x\mapsto wx$: the least
    $\sup_{x\ne0}|g_S(x)-wx|/|x|$ over prunings $S$ of the hidden units of $g(x)=\sum_ia_i\,\mathrm{ReLU}(b_ix)$.
    For $x>0$ only units with $b_i>0$ act, for $x<0$ only those with $b_i<0$, so the error is the larger of the two
    subset-sum errors $\min_S|\sum_{i\in S}a_ib_i-w|$ (exhaustive: $2^{h/2}$ subsets per side for $h$ units)."""
    a = np.asarray(a, dtype=np.float64).ravel()
    b = np.asarray(b, dtype=np.float64).ravel()
    if a.shape != b.shape or a.size == 0 or a.size > 40:
        raise ValueError(f"need a, b of the same length 1..40 (hidden units), got {a.shape}, {b.shape}")
    worst = 0.0
    for side in (b > 0, b < 0):
        prods = a[side] * b[side]
        sums = np.zeros(1)
        for p in prods:  # all subset sums, doubling
            sums = np.concatenate([sums, sums + p])
        worst = max(worst, float(np.abs(sums - w).min()))
    return worst
