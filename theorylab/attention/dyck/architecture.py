r"""The Dyck papers' architecture choices, checked on the exact constructions.

* **Post-LN GPT block** (Li §2.2.5.8 = Liu footnote 49). The theorems use $f(X)=g(\mathrm{LN}(\mathrm{attn}(X))+X)$,
  with the residual added after LayerNorm; the standard GPT block is $g(\mathrm{LN}(\mathrm{attn}(X)+X))$ (2.85).
  With balanced attention the attention output at a closing query is $a=\tilde a/Z$, where $\tilde a$ (the unmatched
  opens) stays bounded while the softmax normaliser $Z$ grows with the length, so
  $\mathrm{LN}(a+e_\rho)\to\mathrm{LN}(e_\rho)$ and the top of the stack is lost at rate $1/Z$: to first order
  $Z\,\|\mathrm{LN}(a_1+e_\rho)-\mathrm{LN}(a_2+e_\rho)\|\to\|\Pi_{p^\perp}(\tilde a_1-\tilde a_2)\|/\|p\|$ with
  $p=\mathcal P_\perp e_\rho$. The theorems' block keeps $\|\mathrm{LN}_0(\tilde a_1)-\mathrm{LN}_0(\tilde a_2)\|$
  constant. Computed here in closed form from key counts (matched pairs inserted without materialising strings) with
  mpmath, so the lengths can be astronomically large.
* **Prop 6** (Liu §3.6.5.1 = Li Prop 2.2.1). For an $L$-layer theory Transformer (3.27) and any attention weights,
  $W_{\rm Head}=0$, $b_{\rm Head}=0$ give $\mathcal T\equiv0$: the computed function can be independent of every
  attention pattern. :func:`theory_transformer` evaluates the model (3.23)-(3.27) with a head.
"""

from __future__ import annotations

from dataclasses import dataclass

import mpmath
import numpy as np

from theorylab.attention.dyck.balance import DyckSolution, token_indices
from theorylab.languages.dyck import Dyck

__all__ = [
    "block_hidden",
    "block_separation",
    "separation_limit",
    "TheoryLayer",
    "theory_transformer",
]

BLOCKS = ("thesis", "post_ln")


def _counts(lang: Dyck, prefix, pumped: tuple[int, int, int] | None, n_idx: int) -> tuple[list[int], int]:
    arr = lang._as_tokens(prefix)
    idx = token_indices(lang, arr[None])[0]
    counts = [0] * n_idx
    for i in idx:
        counts[int(i)] += 1
    if pumped is not None:
        pos, typ, beta = pumped
        level = int(lang.scan(arr[None, :pos])[1][0, -1]) + 1
        if not (0 <= pos <= len(arr)) or not (0 <= typ < lang.k) or beta < 0 or level > lang.depth:
            raise ValueError(f"invalid pumping spec {pumped}")
        D = lang.depth
        counts[2 * typ * D + level - 1] += beta  # open of type typ at depth level
        counts[(2 * typ + 1) * D + level - 1] += beta  # its close, at depth level - 1
    return counts, int(idx[-1])


def block_hidden(
    sol: DyckSolution, prefix, pumped=None, block: str = "thesis", dps: int = 60
) -> mpmath.matrix:
    r"""The input of $g^{(2)}$ at the last position of ``prefix`` (with ``pumped = (position, pair_type, beta)``
    matched pairs inserted): ``block="thesis"`` gives $\mathrm{LN}_0(a)+e_\rho$ (3.23), ``"post_ln"`` gives
    $\mathrm{LN}_0(a+e_\rho)$ (2.85), with $a=\sum_\kappa c_\kappa e^{G[\kappa,\rho]}W_Ve_\kappa/\sum_\kappa
    c_\kappa e^{G[\kappa,\rho]}$ the softmax attention output, in ``dps`` significant digits."""
    if block not in BLOCKS:
        raise ValueError(f"block must be one of {BLOCKS}, got {block!r}")
    w = sol.weights
    n = w.E.shape[1]
    counts, rho = _counts(sol.language, prefix, pumped, n)
    with mpmath.workdps(dps):
        G = w.scores()
        shift = float(G[:, rho].max())
        V = mpmath.matrix((w.W_V @ w.E).tolist())
        weights = [counts[i] * mpmath.exp(mpmath.mpf(float(G[i, rho])) - shift) for i in range(n)]
        Z = mpmath.fsum(weights)
        a = mpmath.matrix(
            [mpmath.fsum(weights[i] * V[r, i] for i in range(n) if counts[i]) / Z for r in range(w.m)]
        )
        e = mpmath.matrix(w.E[:, rho].tolist())

        def ln(x):
            mean = mpmath.fsum(x) / len(x)
            c = mpmath.matrix([xi - mean for xi in x])
            norm = mpmath.norm(c)
            return c / norm if norm > 0 else c

        return ln(a) + e if block == "thesis" else ln(a + e)


def block_separation(sol: DyckSolution, prefixes, pumped=None, block: str = "thesis", dps: int = 60) -> float:
    """$\\|h_1-h_2\\|$ for two prefixes (same pumping spec), as a float (computed in ``dps`` digits)."""
    with mpmath.workdps(dps):
        h1, h2 = (block_hidden(sol, p, pumped, block, dps) for p in prefixes)
        return float(mpmath.norm(h1 - h2))


def separation_limit(sol: DyckSolution, prefixes, pumped, dps: int = 60) -> float:
    r"""First-order prediction of $\beta\,\|h_1-h_2\|$ for the post-LN block as $\beta\to\infty$:
    $\|\Pi_{p^\perp}(\tilde a_1-\tilde a_2)\|/(s\,\|p\|)$, where $\tilde a_i$ is the unnormalised attention output
    without the inserted pairs, $s=e^{G[\text{open}]}+e^{G[\text{close}]}$ the softmax mass of one inserted pair
    (so $Z\approx\beta s$) and $p=\mathcal P_\perp e_\rho$. Valid when the inserted pairs cancel in $\tilde a$
    (balanced attention)."""
    w, lang = sol.weights, sol.language
    n = w.E.shape[1]
    pos, typ, _ = pumped
    with mpmath.workdps(dps):
        G = w.scores()
        V = mpmath.matrix((w.W_V @ w.E).tolist())
        raw = []
        for prefix in prefixes:
            counts, rho = _counts(lang, prefix, None, n)
            raw.append(
                mpmath.matrix(
                    [
                        mpmath.fsum(counts[i] * mpmath.exp(float(G[i, rho])) * V[r, i] for i in range(n))
                        for r in range(w.m)
                    ]
                )
            )
        level = int(lang.scan(lang._as_tokens(prefixes[0])[None, :pos])[1][0, -1]) + 1
        D = lang.depth
        s = mpmath.exp(float(G[2 * typ * D + level - 1, rho])) + mpmath.exp(
            float(G[(2 * typ + 1) * D + level - 1, rho])
        )
        e = mpmath.matrix(w.E[:, rho].tolist())
        mean = mpmath.fsum(e) / w.m
        p = mpmath.matrix([x - mean for x in e])
        diff = raw[0] - raw[1]
        diff = mpmath.matrix([x - mpmath.fsum(diff) / w.m for x in diff])
        proj = diff - p * (mpmath.fsum(diff[i] * p[i] for i in range(w.m)) / mpmath.fsum(x * x for x in p))
        return float(mpmath.norm(proj) / (s * mpmath.norm(p)))


# ------------------------------------------------------------------------------------------------------- Prop 6
@dataclass(frozen=True)
class TheoryLayer:
    """One layer (3.23): ``W_K``, ``W_Q`` (``m_a x m``), ``W_V`` (``m x m``) and a 2-layer ReLU $g$ (``W1, b1, W2,
    b2``)."""

    W_K: np.ndarray
    W_Q: np.ndarray
    W_V: np.ndarray
    W1: np.ndarray
    b1: np.ndarray
    W2: np.ndarray
    b2: np.ndarray


def theory_transformer(
    layers: list[TheoryLayer],
    W_E: np.ndarray,
    W_head: np.ndarray,
    b_head: np.ndarray,
    tokens: np.ndarray,
    block: str = "thesis",
    return_attention: bool = False,
):
    r"""$\mathcal T(\mathcal Z)=W_{\rm Head}[f_L(\cdots f_1(W_E\mathcal Z))]_{:,N+1}+b_{\rm Head}$ (3.27) for a batch
    of token sequences ``[B, N]`` over ids ``0..V-2`` (id ``V-1`` = start, prepended), ``W_E`` of shape ``m x V``;
    row-major internally. ``block="post_ln"`` uses the GPT block $g(\mathrm{LN}(\mathrm{attn}+X))$ instead.
    Returns logits ``[B, out]`` (and the attention matrices ``[L, B, query, key]``)."""
    if block not in BLOCKS:
        raise ValueError(f"block must be one of {BLOCKS}, got {block!r}")
    tokens = np.asarray(tokens)
    if tokens.ndim != 2:
        raise ValueError(f"tokens must have shape [B, N], got {tokens.shape}")
    start = W_E.shape[1] - 1
    if tokens.size and (tokens.min() < 0 or tokens.max() >= start):
        raise ValueError(f"tokens must lie in 0..{start - 1} (id {start} is the start token)")
    Z = np.concatenate([np.full((tokens.shape[0], 1), start), tokens], axis=1)
    X = W_E.T[Z]  # [B, T1, m]
    T1 = X.shape[1]
    causal = np.tril(np.ones((T1, T1), dtype=bool))
    patterns = []

    def ln(x):
        c = x - x.mean(axis=-1, keepdims=True)
        norm = np.linalg.norm(c, axis=-1, keepdims=True)
        return np.where(norm > 0, c / np.where(norm > 0, norm, 1.0), 0.0)

    for layer in layers:
        scores = (X @ layer.W_Q.T) @ (X @ layer.W_K.T).transpose(0, 2, 1)  # [B, query, key]
        scores = np.where(causal, scores, -np.inf)
        A = np.exp(scores - scores.max(axis=-1, keepdims=True))
        A = A / A.sum(axis=-1, keepdims=True)
        patterns.append(A)
        attn = A @ (X @ layer.W_V.T)
        Y = ln(attn) + X if block == "thesis" else ln(attn + X)
        X = np.maximum(Y @ layer.W1.T + layer.b1, 0.0) @ layer.W2.T + layer.b2
    out = X[:, -1] @ W_head.T + b_head
    return (out, np.array(patterns)) if return_attention else out
