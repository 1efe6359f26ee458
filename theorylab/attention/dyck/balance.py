r"""The bounded-Dyck Transformer of Liu §3.6 (= Li §2.2): balance condition, exact constructions, pumping.

Model (column-major, (3.23)-(3.27)): a minimal first layer maps the token at position $j$ to an embedding
$e(\tau_{t,d})$ that depends only on its type and depth (Assumption 10); a start token $t_S$ is prepended. The
second layer computes, at the last position $n+1$ with query $e_\rho$,

$$h=\mathrm{LN}_0\Big(\sum_{\kappa\le n+1}e^{e_\kappa^\top Me_\rho}\,W_Ve_\kappa\Big)+e_\rho,\qquad
M=W_K^\top W_Q,$$

with $\mathrm{LN}_0(x)=\mathcal P_\perp x/\|\mathcal P_\perp x\|$ ($\mathrm{LN}_0(0):=0$), and outputs
$g^{(2)}(h)$.

Index conventions (0-based tokens, see :mod:`theorylab.languages.dyck`): the $2kD$ first-layer outputs are
indexed by ``open_index(t, d) = 2t*D + d - 1`` ($d=1..D$), ``close_index(t, d) = (2t+1)*D + d`` ($d=0..D-1$),
and the start token by ``2kD`` (the rank $r(t,d)$ of (3.42) minus one). A matched pair at level $\ell\in1..D$
is (``open_index(i, l)``, ``close_index(i, l-1)``) and owns the value slot ``i*D + l - 1``.

Balance (Def 14, Eq 3.28): $a_{i,\ell}(\rho)=(e_{\text{open}_{i,\ell}}-e_{\text{close}_{i,\ell-1}})^\top M
e_\rho$ is the same for every closing query $\rho$ at depth $1..D-1$ (closes at depth $D$ do not exist and
depth-0 closes are decoded from the residual alone, footnote 64).
"""

from __future__ import annotations

import functools
import itertools
from dataclasses import dataclass, field, replace
from fractions import Fraction

import mpmath
import numpy as np

from theorylab.attention.dyck.exact import ExpSum, dyadic_integers, to_fraction
from theorylab.languages.dyck import Dyck

__all__ = [
    "DyckWeights",
    "DyckSolution",
    "UniformAttentionSolution",
    "PumpingCounterexample",
    "open_index",
    "close_index",
    "closing_queries",
    "token_indices",
    "one_hot_embeddings",
    "balance_matrix",
    "balance_violation",
    "is_balanced",
    "project_to_balanced",
    "random_balanced_attention",
    "pair_effects",
    "stack_separation",
    "balance_ratio",
    "construct_solution",
    "uniform_attention_solution",
    "exact_model_distribution",
    "find_pumping_counterexample",
    "pumping_counterexample",
    "attention_pattern",
    "with_value_offsets",
]

_LN_ZERO = (
    1e-11  # LN_0(x) := 0 when ||P x|| <= 1e-11 * sum_i |w_i| ||v_i||: the float cancellation error of the
)
# attention sum is ~ (n+1) * 2.2e-16 * sum_i |w_i| ||v_i||, far below this for n <= 1e4.


# --------------------------------------------------------------------------------------------- indices
def _check_kd(k: int, depth: int) -> None:
    Dyck(k, depth)  # validates k >= 1, depth >= 1


def open_index(t: int, d: int, depth: int) -> int:
    """First-layer index of an open bracket of type ``t`` at depth ``d`` (1..depth)."""
    return 2 * t * depth + d - 1


def close_index(t: int, d: int, depth: int) -> int:
    """First-layer index of a close bracket of type ``t`` at depth ``d`` (0..depth-1)."""
    return (2 * t + 1) * depth + d


def closing_queries(k: int, depth: int) -> list[tuple[int, int]]:
    """The closing queries $(j, d)$, $d=1..D-1$, constrained by the balance condition (ordered by type,
    depth)."""
    return [(j, d) for j in range(k) for d in range(1, depth)]


def token_indices(lang: Dyck, tokens: np.ndarray) -> np.ndarray:
    """First-layer indices ``[B, T+1]`` of a batch of prefixes, start token first. Non-prefixes raise."""
    arr = lang._as_tokens(tokens, batch=True)
    depth, _ = lang._require_prefixes(arr)
    d = depth[:, 1:]
    idx = np.where(arr % 2 == 0, arr * lang.depth + d - 1, arr * lang.depth + d)
    start = np.full((arr.shape[0], 1), 2 * lang.k * lang.depth, dtype=np.int64)
    return np.concatenate([start, idx], axis=1)


def one_hot_embeddings(k: int, depth: int) -> np.ndarray:
    """Embedding (3.37) re-indexed by rank, plus a start slot: the identity of size $2kD+1$ (columns =
    indices)."""
    _check_kd(k, depth)
    return np.eye(2 * k * depth + 1)


# --------------------------------------------------------------------------------------------- weights
@dataclass(frozen=True)
class DyckWeights:
    """Minimal-first-layer embeddings ``E`` (``m x (2kD+1)``, columns by index) and second-layer ``M``,
    ``W_V``."""

    k: int
    depth: int
    E: np.ndarray
    M: np.ndarray
    W_V: np.ndarray

    def __post_init__(self) -> None:
        _check_kd(self.k, self.depth)
        n = 2 * self.k * self.depth + 1
        for name in ("E", "M", "W_V"):
            arr = np.asarray(getattr(self, name), dtype=np.float64)
            if not np.all(np.isfinite(arr)):
                raise ValueError(f"{name} contains NaN or inf")
            object.__setattr__(self, name, arr)
        m = self.E.shape[0]
        if self.E.ndim != 2 or self.E.shape[1] != n:
            raise ValueError(f"E must have shape (m, 2kD+1) = (m, {n}), got {self.E.shape}")
        for name in ("M", "W_V"):
            if getattr(self, name).shape != (m, m):
                raise ValueError(f"{name} must have shape (m, m) = {(m, m)}, got {getattr(self, name).shape}")

    @property
    def m(self) -> int:
        return self.E.shape[0]

    def scores(self) -> np.ndarray:
        r"""$G=E^\top ME$: ``G[key, query]`` for all index pairs."""
        return self.E.T @ self.M @ self.E


def _pair_columns(k: int, depth: int) -> tuple[np.ndarray, np.ndarray]:
    opens = np.array([open_index(i, l, depth) for i in range(k) for l in range(1, depth + 1)])
    closes = np.array([close_index(i, l - 1, depth) for i in range(k) for l in range(1, depth + 1)])
    return opens, closes


def _query_columns(k: int, depth: int) -> np.ndarray:
    return np.array([close_index(j, d, depth) for j, d in closing_queries(k, depth)], dtype=np.int64)


def balance_matrix(w: DyckWeights) -> np.ndarray:
    r"""$A[(i,\ell),\rho]=(e_{\text{open}_{i,\ell}}-e_{\text{close}_{i,\ell-1}})^\top Me_\rho$, shape ``[kD,
    k(D-1)]``.

    Row ``i*D + l - 1``; columns in the order of :func:`closing_queries`. Balanced iff every row is constant.
    """
    opens, closes = _pair_columns(w.k, w.depth)
    delta = w.E[:, opens] - w.E[:, closes]
    return delta.T @ w.M @ w.E[:, _query_columns(w.k, w.depth)]


def _balance_matrix_exact(w: DyckWeights) -> list[list[Fraction]]:
    """The balance matrix exactly (Fractions): integer sums of products over one power of two."""
    opens, closes = _pair_columns(w.k, w.depth)
    Mq, s_m = dyadic_integers(w.M)
    E, s_e = dyadic_integers(w.E)
    den = 1 << (2 * s_e + s_m)
    m = w.m
    out = []
    queries = _query_columns(w.k, w.depth)
    Mq_cols = {int(c): [sum(Mq[r][s] * E[s][c] for s in range(m)) for r in range(m)] for c in queries}
    for o, c in zip(opens, closes, strict=True):
        delta = [E[r][o] - E[r][c] for r in range(m)]
        out.append([Fraction(sum(delta[r] * Mq_cols[int(qc)][r] for r in range(m)), den) for qc in queries])
    return out


def balance_violation(w: DyckWeights) -> float:
    r"""Largest $|(e_{\text{open}}-e_{\text{close}})^\top M(e_{\rho_1}-e_{\rho_2})|$ of Eq (3.28) (0 if
    $D\le2$ and $k=1$, i.e. when fewer than two closing queries exist)."""
    A = balance_matrix(w)
    if A.shape[1] < 2:
        return 0.0
    return float(np.max(A.max(axis=1) - A.min(axis=1)))


def is_balanced(w: DyckWeights, tol: float = 1e-9) -> bool:
    """Balance condition (3.28) up to ``tol``; ``tol=0`` checks it exactly in rational arithmetic."""
    if tol < 0:
        raise ValueError(f"tol must be >= 0, got {tol}")
    if tol == 0:
        return all(len(set(row)) <= 1 for row in _balance_matrix_exact(w))
    return balance_violation(w) <= tol


def _check_embeddings(E: np.ndarray | None, k: int, depth: int) -> np.ndarray:
    if E is None:
        return one_hot_embeddings(k, depth)
    E = np.asarray(E, dtype=np.float64)
    n = 2 * k * depth + 1
    if E.ndim != 2 or E.shape[1] != n:
        raise ValueError(f"embeddings must have shape (m, 2kD+1) = (m, {n}), got {E.shape}")
    if not np.all(np.isfinite(E)):
        raise ValueError("embeddings contain NaN or inf")
    return E


def project_to_balanced(M: np.ndarray, k: int, depth: int, E: np.ndarray | None = None) -> np.ndarray:
    r"""Frobenius-orthogonal projection of ``M`` onto the balanced subspace $\{M:\Delta^\top MQ_{\rm
    diff}=0\}$.

    $M\mapsto M-P_\Delta MP_Q$ with $P_\Delta$, $P_Q$ the orthogonal projectors onto the spans of the pair
    differences $\Delta$ and the closing-query differences $Q_{\rm diff}$; ``E`` defaults to one-hot
    embeddings.
    """
    _check_kd(k, depth)
    E = _check_embeddings(E, k, depth)
    M = np.asarray(M, dtype=np.float64)
    if M.shape != (E.shape[0], E.shape[0]):
        raise ValueError(f"M must have shape {(E.shape[0], E.shape[0])}, got {M.shape}")
    if not np.all(np.isfinite(M)):
        raise ValueError("M contains NaN or inf")
    queries = _query_columns(k, depth)
    if len(queries) < 2:
        return M.copy()
    opens, closes = _pair_columns(k, depth)
    delta = E[:, opens] - E[:, closes]
    qdiff = E[:, queries[1:]] - E[:, queries[:1]]
    P_delta = delta @ np.linalg.pinv(delta)
    P_q = qdiff @ np.linalg.pinv(qdiff)
    return M - P_delta @ M @ P_q


def random_balanced_attention(
    k: int, depth: int, rng: np.random.Generator, scale: float = 1.0, grid: int = 256
) -> np.ndarray:
    r"""A random *exactly* balanced $M$ for one-hot embeddings (entries on the dyadic grid ``1/grid``).

    Draw all scores, then set $M[\text{open}_{i,\ell},\rho]=M[\text{close}_{i,\ell-1},\rho]+a_{i,\ell}$ for
    every closing query $\rho$; sums of grid values are exact in float64, so (3.28) holds with zero rounding
    error.
    """
    _check_kd(k, depth)
    if grid < 1 or grid & (grid - 1):
        raise ValueError(f"grid must be a power of two, got {grid}")
    if not 0 <= scale < np.inf:
        raise ValueError(f"scale must be finite and >= 0, got {scale}")
    n = 2 * k * depth + 1
    M = np.round(rng.normal(0.0, scale, size=(n, n)) * grid) / grid
    offsets = np.round(rng.normal(0.0, scale, size=k * depth) * grid) / grid
    opens, closes = _pair_columns(k, depth)
    for q in _query_columns(k, depth):
        M[opens, q] = M[closes, q] + offsets
    return M


# ------------------------------------------------------------------------------------- S, Q, P (Thm 2)
def _u_table(w: DyckWeights) -> tuple[np.ndarray, np.ndarray]:
    """Scores ``G[key, query]`` and projected values ``V[:, key] = P_perp W_V e_key``."""
    V = w.W_V @ w.E
    return w.scores(), V - V.mean(axis=0, keepdims=True)


def pair_effects(w: DyckWeights) -> np.ndarray:
    r"""$S_{\rho,i,\ell}=u(\text{close}_{i,\ell-1}\mid\rho)+u(\text{open}_{i,\ell}\mid\rho)$ (3.33), the
    change of the pre-LayerNorm vector at closing query $\rho$ per inserted pair; ``[k(D-1), k, D, m]``."""
    G, V = _u_table(w)
    opens, closes = _pair_columns(w.k, w.depth)
    queries = _query_columns(w.k, w.depth)
    S = np.exp(G[opens][:, queries]).T[:, :, None] * V[:, opens].T[None] + (
        np.exp(G[closes][:, queries]).T[:, :, None] * V[:, closes].T[None]
    )
    return S.reshape(len(queries), w.k, w.depth, w.m)


def stack_separation(w: DyckWeights) -> np.ndarray:
    r"""$P_\rho=\|Q(\rho,\mathbf t')\|$ of (3.34)-(3.35) for each closing query $\rho=(j,c)$, ``[k(D-1)]``.

    $Q(\rho,\tilde t)$ is the pre-LN vector at the end of $t_S\,\tilde t\,\text{open}_{j,c+1}\,\rho$ with
    $\tilde t$ the types of $c$ opens at depths $1..c$; $\mathbf t$ minimises $\|Q\|$ and $\mathbf t'$
    minimises it among stacks whose top type differs from $\mathbf t$'s. Needs $k\ge2$ (for $k=1$ no two
    stacks differ).
    """
    if w.k < 2:
        raise ValueError("P (Eq 3.35) needs k >= 2: with one bracket type no two stacks have different tops")
    G, V = _u_table(w)
    start = 2 * w.k * w.depth
    out = []
    for j, c in closing_queries(w.k, w.depth):
        rho = close_index(j, c, w.depth)
        base = np.exp(G[start, rho]) * V[:, start]
        for idx in (open_index(j, c + 1, w.depth), rho):
            base = base + np.exp(G[idx, rho]) * V[:, idx]
        norms = {}
        for stack in itertools.product(range(w.k), repeat=c):
            vec = base + sum(
                np.exp(G[open_index(t, l + 1, w.depth), rho]) * V[:, open_index(t, l + 1, w.depth)]
                for l, t in enumerate(stack)
            )
            norms[stack] = float(np.linalg.norm(vec))
        best = min(norms, key=norms.get)
        out.append(min(v for s, v in norms.items() if s[-1] != best[-1]))
    return np.array(out)


def balance_ratio(w: DyckWeights) -> float:
    r"""The experiments' balance violation $\beta=\mathbb E_{\rho,i,\ell}[\|S_{\rho,i,\ell}\|/P_\rho]$
    (uniform average over closing queries, pair types and levels; norms, since $S$ is a vector)."""
    S = np.linalg.norm(pair_effects(w), axis=-1)
    P = stack_separation(w)
    return float(np.mean(S / P[:, None, None]))


# --------------------------------------------------------------------------------------- constructions
def attention_pattern(w: DyckWeights, idx: np.ndarray) -> np.ndarray:
    """Second-layer attention ``A[b, key, query]`` (softmax over causal keys) for index sequences ``[B,
    T+1]``."""
    G = w.scores()
    s = G[idx[:, :, None], idx[:, None, :]]
    T1 = idx.shape[1]
    s = np.where(np.tril(np.ones((T1, T1), dtype=bool)).T[None], s, -np.inf)
    s = s - s.max(axis=1, keepdims=True)
    a = np.exp(s)
    return a / a.sum(axis=1, keepdims=True)


@dataclass(frozen=True)
class DyckSolution:
    r"""An exact generator of Thm 1 (sufficiency): weights plus the decoder $g^{(2)}$ as a lookup.

    The decoder reads $h$ only: the last token's index from the two coordinates ``track`` (orthogonal to every
    value slot, so they see $e_\rho$ alone, Lemma 39), then - for a close at depth $d\ge1$ - the top of the
    stack as $\arg\max_t\langle h-e_\rho,b_{t,d}\rangle$ (subtracting the residual fixes the proof's decoder,
    see the docs).
    """

    weights: DyckWeights
    q: float | Fraction
    slots: np.ndarray  # m x kD orthonormal b_{t,l}, orthogonal to 1
    track: np.ndarray  # m x 2 orthonormal basis of the complement used to read the last token
    offsets: np.ndarray = field(repr=False)  # k x D offsets a_{i,l} used in the values (3.45)
    subtract_residual: bool = True  # False: the decoder as printed, reading <h, b> without removing e_rho

    @property
    def language(self) -> Dyck:
        return Dyck(self.weights.k, self.weights.depth, self.q)

    def hidden_from_counts(self, counts: np.ndarray, queries: np.ndarray) -> np.ndarray:
        r"""$g^{(2)}$ inputs $h$ ``[P, m]`` from causal key counts ``[P, 2kD+1]`` and query indices ``[P]``.

        The pre-LayerNorm vector at a query $\rho$ depends on the keys only through their index counts $c$:
        $\tilde a=\sum_\kappa c_\kappa e^{G[\kappa,\rho]-\max G[:,\rho]}\mathcal P_\perp W_Ve_\kappa$ (the softmax
        normaliser and the per-query shift are positive scalars, which $\mathrm{LN}_0$ removes), so a batch is one
        product of the count matrix with a per-query table - no ``[T, T]`` attention matrix.
        """
        w = self.weights
        G = w.scores()
        V = w.W_V @ w.E
        V = V - V.mean(axis=0, keepdims=True)  # P_perp W_V e_key, columns by key
        weight = np.exp(G - G.max(axis=0, keepdims=True)).T  # [query, key], entries in (0, 1]
        table = np.concatenate(
            [weight[:, :, None] * V.T[None], (weight * np.linalg.norm(V, axis=0))[..., None]], -1
        )
        out = np.empty((len(queries), w.m + 1))
        order = np.argsort(queries, kind="stable")
        bounds = np.searchsorted(queries[order], np.arange(w.E.shape[1] + 1))
        for rho in range(w.E.shape[1]):
            rows = order[bounds[rho] : bounds[rho + 1]]
            if len(rows):
                out[rows] = counts[rows] @ table[rho]
        pre, mass = out[:, :-1], out[:, -1]
        norm = np.linalg.norm(pre, axis=-1)
        ln = np.where((norm > _LN_ZERO * mass)[:, None], pre / np.maximum(norm, 1e-300)[:, None], 0.0)
        return ln + w.E.T[queries]

    def hidden(self, idx: np.ndarray) -> np.ndarray:
        """$g^{(2)}$ inputs $h$ ``[B, T+1, m]`` at every position of first-layer index sequences ``[B, T+1]``."""
        n = self.weights.E.shape[1]
        counts = np.cumsum(np.eye(n)[idx], axis=1).reshape(-1, n)  # causal key counts at every position
        return self.hidden_from_counts(counts, idx.reshape(-1)).reshape(*idx.shape, self.weights.m)

    def _key_counts(self, idx: np.ndarray) -> np.ndarray:
        """How often each first-layer index occurs in each sequence of ``idx`` ``[B, T+1]``: ``[B, 2kD+1]``."""
        n = self.weights.E.shape[1]
        B = idx.shape[0]
        flat = (np.arange(B)[:, None] * n + idx).reshape(-1)
        return np.bincount(flat, minlength=B * n).reshape(B, n)

    def hidden_last(self, idx: np.ndarray) -> np.ndarray:
        """$g^{(2)}$ inputs $h$ ``[B, m]`` at the last position only (the query attends to the whole sequence)."""
        return self.hidden_from_counts(self._key_counts(idx).astype(np.float64), idx[:, -1])

    def predict_last_indices(self, idx: np.ndarray) -> np.ndarray:
        """Next-token distributions ``[B, 2k]`` after each whole first-layer index sequence ``[B, T+1]``. The
        output depends on a sequence only through its key counts and last index: each distinct pair is run once."""
        rows, inverse = _distinct_rows(np.concatenate([self._key_counts(idx), idx[:, -1:]], axis=1))
        return self.decode(self.hidden_from_counts(rows[:, :-1].astype(np.float64), rows[:, -1]))[inverse]

    def decode(self, h: np.ndarray) -> np.ndarray:
        """The lookup $g^{(2)}$: next-token distributions ``[..., 2k]`` from hidden states ``[..., m]``."""
        w, lang = self.weights, self.language
        table = w.E.T @ self.track  # [n, 2]
        coords = h @ self.track
        dist = np.linalg.norm(coords[..., None, :] - table, axis=-1)
        idx = np.argmin(dist, axis=-1)
        n_tok = 2 * w.k * w.depth
        token = np.where(idx < n_tok, idx // w.depth, -1)
        within = idx % w.depth
        is_open = (token >= 0) & (token % 2 == 0)
        depth = np.where(idx == n_tok, 0, np.where(is_open, within + 1, within))
        r = h - w.E.T[idx] if self.subtract_residual else h
        slot_vals = np.stack(
            [
                np.take_along_axis(
                    r @ self.slots[:, t * w.depth : (t + 1) * w.depth],
                    np.clip(depth - 1, 0, w.depth - 1)[..., None],
                    axis=-1,
                )[..., 0]
                for t in range(w.k)
            ],
            axis=-1,
        )
        top = np.where(is_open, token // 2, np.where(depth > 0, np.argmax(slot_vals, axis=-1), -1))
        return lang._distribution_from_state(depth, top)

    def predict_indices(self, idx: np.ndarray, max_chunk: int = 4_000_000) -> np.ndarray:
        """Next-token distributions ``[B, T+1, 2k]`` for first-layer index sequences (chunked over the
        batch)."""
        n = self.weights.E.shape[1]
        step = max(1, max_chunk // (idx.shape[1] * (n + self.weights.m) + 1))
        return np.concatenate([self._predict_chunk(idx[i : i + step]) for i in range(0, len(idx), step)])

    def _predict_chunk(self, idx: np.ndarray) -> np.ndarray:
        """:meth:`predict_indices` of one chunk: the output at a position depends on the causal key counts and
        the query index only, so each distinct pair (shared prefixes give many) runs through layer 2 once."""
        n = self.weights.E.shape[1]
        counts = np.cumsum(np.eye(n, dtype=np.int64)[idx], axis=1)  # causal key counts at every position
        rows, inverse = _distinct_rows(np.concatenate([counts, idx[..., None]], axis=-1).reshape(-1, n + 1))
        out = self.decode(self.hidden_from_counts(rows[:, :-1].astype(np.float64), rows[:, -1]))
        return out[inverse].reshape(*idx.shape, -1)

    def predict(self, tokens: np.ndarray) -> np.ndarray:
        """Next-token distributions ``[B, T+1, 2k]`` after each prefix length ``0..T`` (raises on
        non-prefixes)."""
        tokens = np.asarray(tokens)
        if tokens.ndim == 1:
            return self.predict(tokens[None])[0]
        return self.predict_indices(token_indices(self.language, tokens))

    def predict_last(self, tokens: np.ndarray) -> np.ndarray:
        """Next-token distributions ``[B, 2k]`` after each whole prefix of a batch ``[B, T]`` (raises on
        non-prefixes); one query per sequence."""
        return self.predict_last_indices(token_indices(self.language, np.asarray(tokens)))


def _orthonormal_frame(m: int, n_slots: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    raw = np.column_stack([np.ones(m), rng.normal(size=(m, m - 1))])
    Qm, _ = np.linalg.qr(raw)
    return Qm[:, 2 : 2 + n_slots], Qm[:, :2]


def construct_solution(
    k: int,
    depth: int,
    attention: np.ndarray | None = None,
    *,
    q: float | Fraction = 0.5,
    embeddings: np.ndarray | None = None,
    tol: float = 1e-8,
    allow_unbalanced: bool = False,
    seed: int = 0,
) -> DyckSolution:
    r"""Thm 1 (sufficiency): an exact Dyck generator whose second-layer attention is ``attention`` ($M$).

    ``attention=None`` gives $M=0$ (uniform attention, Cor 1). ``embeddings`` (``m x (2kD+1)``, default
    one-hot) must have full column rank. Values (3.45): $W_Ve_{\text{open}_{t,\ell}}=b_{t,\ell}$,
    $W_Ve_{\text{close}_{t,\ell-1}}=-e^{a_{t,\ell}}b_{t,\ell}$, $W_Ve_{t_S}=0$, solved as $W_V=OE^+$.
    Unbalanced $M$ raise unless ``allow_unbalanced`` (then $a_{t,\ell}=\min_\rho a_{t,\ell}(\rho)$; the model
    is not exact).
    """
    _check_kd(k, depth)
    E = _check_embeddings(embeddings, k, depth)
    m, n = E.shape
    if np.linalg.matrix_rank(E) < n:
        raise ValueError(
            f"Thm 1 sufficiency needs the 2kD+1 = {n} embeddings linearly independent (full column rank); "
            f"got rank {np.linalg.matrix_rank(E)}"
        )
    if m < k * depth + 2:
        raise ValueError(f"embedding dimension m = {m} must be >= kD + 2 = {k * depth + 2}")
    M = np.zeros((m, m)) if attention is None else np.asarray(attention, dtype=np.float64)
    probe = DyckWeights(k, depth, E, M, np.zeros((m, m)))
    if not allow_unbalanced and balance_violation(probe) > tol * max(1.0, float(np.abs(M).max(initial=0.0))):
        raise ValueError(
            f"attention violates the balance condition (3.28) by {balance_violation(probe):.3g} > tol; "
            "project it "
            "with project_to_balanced or pass allow_unbalanced=True"
        )
    A = balance_matrix(probe)
    offsets = A.min(axis=1) if A.shape[1] else np.zeros(k * depth)
    rng = np.random.default_rng(seed)
    slots, track = _orthonormal_frame(m, k * depth, rng)
    table = E.T @ track
    gaps = np.linalg.norm(table[:, None] - table[None], axis=-1) + np.eye(n)
    if gaps.min() < 1e-6:  # Lemma 39: a generic frame separates the embeddings; retry with another draw
        return construct_solution(
            k, depth, M, q=q, embeddings=E, tol=tol, allow_unbalanced=True, seed=seed + 1
        )
    opens, closes = _pair_columns(k, depth)
    O = np.zeros((m, n))
    O[:, opens] = slots
    O[:, closes] = -np.exp(offsets)[None, :] * slots
    W_V = O @ np.linalg.pinv(E)
    Dyck(k, depth, q)
    return DyckSolution(DyckWeights(k, depth, E, M, W_V), q, slots, track, offsets.reshape(k, depth))


def with_value_offsets(sol: DyckSolution, offsets: np.ndarray) -> DyckSolution:
    r"""The construction with the same embeddings, attention and slots but value offsets ``offsets`` (``k x
    D``): $W_Ve_{\text{close}_{t,\ell-1}}=-e^{\text{offsets}[t,\ell-1]}b_{t,\ell}$. Exact iff the offsets
    equal the balance offsets $a_{t,\ell}$ at every closing query (values anti-parallel with the right norm
    ratio)."""
    w = sol.weights
    offsets = np.asarray(offsets, dtype=np.float64)
    if offsets.shape != (w.k, w.depth) or not np.all(np.isfinite(offsets)):
        raise ValueError(f"offsets must be a finite array of shape {(w.k, w.depth)}, got {offsets.shape}")
    opens, closes = _pair_columns(w.k, w.depth)
    O = np.zeros_like(w.E)
    O[:, opens] = sol.slots
    O[:, closes] = -np.exp(offsets.ravel())[None, :] * sol.slots
    W_V = O @ np.linalg.pinv(w.E)
    return replace(sol, weights=replace(w, W_V=W_V), offsets=offsets)


def _distinct_rows(rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(distinct, inverse)`` for a 2-D non-negative integer array: its distinct rows and, for each row, the
    index of its copy in ``distinct`` (rows compared as bytes of the narrowest integer type that holds them)."""
    top = int(rows.max(initial=0))
    narrow = np.ascontiguousarray(
        rows, dtype=np.int8 if top < 2**7 else np.int16 if top < 2**15 else np.int64
    )
    as_bytes = narrow.view(np.dtype((np.void, narrow.shape[1] * narrow.itemsize))).reshape(-1)
    _, first, inverse = np.unique(as_bytes, return_index=True, return_inverse=True)
    return rows[first], inverse.reshape(-1)


def _distinct_codes(columns: list[np.ndarray]) -> tuple[np.ndarray, list[np.ndarray]]:
    """``(codes, keys)`` for equal-shape non-negative integer arrays: ``codes`` (flat) numbers the distinct
    tuples of ``columns`` ``0..u-1`` and ``keys[j][codes]`` recovers ``columns[j]`` (a dense mixed-radix table
    when it is small, ``np.unique`` otherwise)."""
    flat = [np.ravel(c).astype(np.int64) for c in columns]
    radix = [int(c.max(initial=0)) + 1 for c in flat]
    code = np.zeros_like(flat[0])
    for c, r in zip(flat, radix, strict=True):
        code = code * r + c
    size = int(np.prod(radix, dtype=object))
    if size <= max(1 << 20, 4 * code.size):
        seen = np.zeros(size, dtype=bool)
        seen[code] = True
        distinct = np.flatnonzero(seen)
        codes = (np.cumsum(seen) - 1)[code]
    else:
        distinct, codes = np.unique(code, return_inverse=True)
    keys, rest = [], distinct
    for r in reversed(radix):
        rest, digit = np.divmod(rest, r)
        keys.append(digit)
    return codes.reshape(-1), keys[::-1]


# ----------------------------------------------------------------------------------------------- Cor 1
@dataclass(frozen=True)
class UniformAttentionSolution:
    r"""Cor 1: both layers attend uniformly ($W_K=W_Q=0$); no positional encoding; causal mask; start token.

    Layer 1 on one-hot inputs $o_t\in\mathbb R^{2k+1}$ ($o_{2k}$ = start): $W_V^{(1)}x=(\sum_i
    x_{2i}-x_{2i+1})\,o_0 +x_{2k}\,o_1$, so the causal mean is $(d\,o_0+o_1)/(n+1)$, $\mathrm{LN}_0$ removes
    $1/(n+1)$ and the residual adds $o_t$; $g^{(1)}$ (a lookup here, an MLP by Lemma 38 in the proof) maps
    that to the one-hot index. Layer 2 is :func:`construct_solution` with $M=0$.
    """

    layer2: DyckSolution

    @property
    def language(self) -> Dyck:
        return self.layer2.language

    def _layer1_counts(self, tokens: np.ndarray, start_token: bool) -> tuple[np.ndarray, ...]:
        """``(tokens, signed, starts)`` ``[B, n]``: the token at each position (start token first) and the causal
        counts that $W_V^{(1)}$ keeps up to it: opens minus closes, and start tokens."""
        k = self.layer2.weights.k
        arr = self.language._as_tokens(tokens, batch=True)
        if start_token:
            arr = np.concatenate([np.full((arr.shape[0], 1), 2 * k), arr], axis=1)
        sign = np.zeros(2 * k + 1, dtype=np.int64)
        sign[0 : 2 * k : 2], sign[1 : 2 * k : 2] = 1, -1
        return arr, np.cumsum(sign[arr], axis=1), np.cumsum(arr == 2 * k, axis=1)

    def _features_from_counts(
        self, tok: np.ndarray, signed: np.ndarray, starts: np.ndarray, n: np.ndarray
    ) -> np.ndarray:
        r"""$\mathrm{LN}_0\big((\text{signed}\,o_0+\text{starts}\,o_1)/n\big)+o_{\text{tok}}$, ``[..., 2k+1]``: the
        layer-1 output at a position with ``n`` keys (the causal mean of $W_V^{(1)}o$ is that vector)."""
        dim = 2 * self.layer2.weights.k + 1
        pre = np.zeros((*np.shape(tok), dim))
        pre[..., 0], pre[..., 1] = signed / n, starts / n
        pre -= pre.mean(axis=-1, keepdims=True)
        norm = np.linalg.norm(pre, axis=-1, keepdims=True)  # > 0 with the start token (it keeps o_1 > 0)
        return np.where(norm > 1e-12, pre / np.maximum(norm, 1e-300), 0.0) + np.eye(dim)[tok]

    def layer1_features(self, tokens: np.ndarray, start_token: bool = True) -> np.ndarray:
        r"""Layer-1 outputs before $g^{(1)}$: ``[B, T+1, 2k+1]`` (start token first).

        ``start_token=False`` drops $t_S$ (outputs ``[B, T, 2k+1]``): then $p$ and $p\oplus p$ get the same
        features (footnote 53), and $\mathrm{LN}_0$ of a zero mean (depth 0) is 0. Uniform attention averages
        $W_V^{(1)}o_\kappa$ over the causal keys, so the output depends on them only through two counts.
        """
        arr, signed, starts = self._layer1_counts(tokens, start_token)
        return self._features_from_counts(arr, signed, starts, np.arange(1, arr.shape[1] + 1)[None, :])

    @functools.cached_property
    def _feature_table(self) -> np.ndarray:
        return self.feature_table()

    def feature_table(self) -> np.ndarray:
        """Layer-1 feature of every first-layer index (rows ``0..2kD``), from one exemplar prefix per
        index."""
        k, D = self.layer2.weights.k, self.layer2.weights.depth
        rows = []
        for idx in range(2 * k * D + 1):
            if idx == 2 * k * D:
                rows.append(self.layer1_features(np.zeros((1, 0), dtype=np.int64))[0, 0])
                continue
            tok, within = divmod(idx, D)
            d = within + 1 if tok % 2 == 0 else within
            prefix = [0] * (d - 1) + [tok] if tok % 2 == 0 else [0] * d + [2 * (tok // 2), tok]
            rows.append(self.layer1_features(np.array([prefix]))[0, -1])
        return np.array(rows)

    def layer1_indices(self, tokens: np.ndarray) -> np.ndarray:
        """$g^{(1)}$ as a lookup: the first-layer index ``[B, T+1]`` whose feature is nearest to each layer-1
        output (start token first). Raises on non-prefixes. Positions with the same (token, counts, position)
        have the same output: each distinct one is computed and looked up once."""
        self.language._require_prefixes(self.language._as_tokens(tokens, batch=True))
        arr, signed, starts = self._layer1_counts(tokens, True)
        pos = np.broadcast_to(np.arange(arr.shape[1]), arr.shape)
        low = int(signed.min(initial=0))
        codes, (tok, sg, st, p) = _distinct_codes([arr, signed - low, starts, pos])
        feats = self._features_from_counts(tok, sg + low, st, p + 1)
        table = self._feature_table
        nearest = np.argmin(np.sum(table**2, axis=-1) - 2.0 * (feats @ table.T), axis=-1)
        return nearest[codes].reshape(arr.shape)

    def predict(self, tokens: np.ndarray) -> np.ndarray:
        tokens = np.asarray(tokens)
        if tokens.ndim == 1:
            return self.predict(tokens[None])[0]
        return self.layer2.predict_indices(self.layer1_indices(tokens))

    def predict_last(self, tokens: np.ndarray) -> np.ndarray:
        """Next-token distributions ``[B, 2k]`` after each whole prefix (layer 2 queried at the last position)."""
        return self.layer2.predict_last_indices(self.layer1_indices(np.asarray(tokens)))


def uniform_attention_solution(k: int, depth: int, q: float | Fraction = 0.5) -> UniformAttentionSolution:
    """The uniform-attention generator of Cor 1 (both layers uniform)."""
    sol = UniformAttentionSolution(construct_solution(k, depth, None, q=q))
    table = sol.feature_table()
    gaps = np.linalg.norm(table[:, None] - table[None], axis=-1) + np.eye(len(table))
    if gaps.min() < 1e-9:  # pragma: no cover - injectivity of (type, depth) -> feature, checked in the tests
        raise ValueError("layer-1 features are not injective in (type, depth)")
    return sol


# ----------------------------------------------------------------------------------------- exact model
def _exact_scores(w: DyckWeights, keys, query: int) -> dict[int, Fraction]:
    """$e_c^\\top M e_{\\rm query}$ exactly for each key $c$: the weights as integers over a power of two
    (:func:`dyadic_integers`), integer sums of products, one :class:`Fraction` per key."""
    m = w.m
    E, s_e = dyadic_integers(w.E)
    M, s_m = dyadic_integers(w.M)
    e_q = [E[s][query] for s in range(m)]
    Mq = [sum(M[r][s] * e_q[s] for s in range(m)) for r in range(m)]
    den = 1 << (2 * s_e + s_m)
    return {int(c): Fraction(sum(E[r][c] * Mq[r] for r in range(m)), den) for c in keys}


def _slot_value(sol: DyckSolution, counts: dict[int, int], t: int, l: int, scores) -> ExpSum:
    r"""Exact $\langle\tilde a,b_{t,\ell}\rangle$ from key counts (values $+b$ for opens, $-e^{a}b$ for
    closes)."""
    D = sol.weights.depth
    o, c = open_index(t, l, D), close_index(t, l - 1, D)
    a = to_fraction(sol.offsets[t, l - 1])
    return ExpSum.of([(counts.get(o, 0), scores[o]), (-counts.get(c, 0), scores[c] + a)])


def _exact_top(sol: DyckSolution, counts: dict[int, int], query: int, d: int, scores) -> int:
    vals = [_slot_value(sol, counts, t, d, scores) for t in range(sol.weights.k)]
    best = 0
    for t in range(1, len(vals)):
        if vals[t] > vals[best]:
            best = t
    return best


def exact_model_distribution(sol: DyckSolution, prefix, pumped: tuple[int, int, int] | None = None) -> tuple:
    r"""The construction's output on ``prefix`` in exact arithmetic (a tuple of Fractions).

    ``pumped = (position, pair_type, beta)`` inserts ``beta`` matched pairs of ``pair_type`` before
    ``position`` without materialising the string (the pre-LN vector is affine in ``beta``), so ``beta`` may
    be astronomically large. The exact model's $\tilde a$ lies in the span of the value slots, so the last
    token is read exactly and the top of the stack is the exact argmax of the slot values (ties to the
    smallest type, as ``numpy.argmax``).
    """
    lang, w = sol.language, sol.weights
    arr = lang._as_tokens(prefix)
    idx = token_indices(lang, arr[None])[0]
    counts: dict[int, int] = {}
    for i in idx:
        counts[int(i)] = counts.get(int(i), 0) + 1
    if pumped is not None:
        pos, typ, beta = pumped
        if not (0 <= pos <= len(arr)) or not (0 <= typ < w.k) or beta < 0:
            raise ValueError(f"invalid pumping spec {pumped}")
        level = int(lang.scan(arr[None, :pos])[1][0, -1]) + 1
        if level > w.depth:
            raise ValueError(f"cannot insert a pair at depth {level - 1} = D")
        for c in (open_index(typ, level, w.depth), close_index(typ, level - 1, w.depth)):
            counts[c] = counts.get(c, 0) + beta
    one, q = lang._table(True)
    last = int(idx[-1])
    n_tok = 2 * w.k * w.depth
    tok, within = divmod(last, w.depth) if last < n_tok else (-1, 0)
    is_open = tok >= 0 and tok % 2 == 0
    d = 0 if last == n_tok else (within + 1 if is_open else within)
    if is_open:
        top = tok // 2
    elif d > 0:
        scores = _exact_scores(w, range(2 * w.k * w.depth + 1), last)
        top = _exact_top(sol, counts, last, d, scores)
    else:
        top = -1
    out = [one * 0] * (2 * w.k)
    if d == 0:
        out[0::2] = [one / w.k] * w.k
    elif d == w.depth:
        out[2 * top + 1] = one
    else:
        out[0::2] = [q / w.k] * w.k
        out[2 * top + 1] = one - q
    return tuple(out)


# --------------------------------------------------------------------------- pumping (Thm 1 necessity)
@dataclass(frozen=True)
class PumpingCounterexample:
    """Two prefixes with different next-token distributions that the model confuses after ``beta`` insertions.

    ``pumped(b)`` returns both prefixes with ``b`` matched pairs (``pair``) inserted at ``insert_at``. For ``b
    < beta`` the model separates them (and is right on both); from ``b = beta`` on it outputs the same
    distribution for both, so it is wrong on ``prefix_fail``.
    """

    prefix_fail: np.ndarray
    prefix_other: np.ndarray
    insert_at: int
    pair: tuple[int, int]
    beta: int
    query: tuple[int, int]  # (type, depth) of the closing query
    pair_effect: float  # exact s = <S, b_{i,d}> rounded to float (the slot change per inserted pair)
    predicted_beta: int  # closed form floor(e^{x_top} / |s|) + 1, evaluated with 80 digits

    def pumped(self, beta: int) -> tuple[np.ndarray, np.ndarray]:
        if beta < 0 or 2 * beta > 50_000_000:
            raise ValueError(f"beta must be in [0, 2.5e7] to materialise the strings, got {beta}")
        ins = np.tile(np.array(self.pair, dtype=np.int64), beta)
        return tuple(
            np.concatenate([p[: self.insert_at], ins, p[self.insert_at :]])
            for p in (self.prefix_fail, self.prefix_other)
        )  # type: ignore[return-value]


def _first_flip(sol, prefix, pos, typ, base_top, estimate: int) -> int:
    """Smallest beta >= 1 with exact decoded top != base_top, searched around ``estimate`` (monotone in
    beta)."""

    def flipped(b: int) -> bool:
        dist = exact_model_distribution(sol, prefix, (pos, typ, b))
        return dist[2 * base_top + 1] == 0

    lo, hi = max(0, estimate - 2), max(1, estimate + 2)
    while not flipped(hi):
        lo, hi = hi, 2 * hi
    while flipped(lo) and lo > 0:
        hi, lo = lo, lo // 2
    while hi - lo > 1:  # invariant: not flipped(lo), flipped(hi)
        mid = (lo + hi) // 2
        lo, hi = (lo, mid) if flipped(mid) else (mid, hi)
    return hi


def find_pumping_counterexample(sol: DyckSolution) -> PumpingCounterexample | None:
    r"""The exact pumping counterexample of Thm 1 (necessity) with the smallest ``beta``, or ``None``.

    For each closing query $\rho=(j,d)$ and pair type $i$ the slot value of one inserted level-$d$ pair is
    $s=e^{x_o}-e^{x_c+a_{i,d}}$ (exact :class:`ExpSum`). If $s>0$, inserting $\beta$ pairs of type $i$ under
    an open of type $a\ne i$ makes slot $i$ overtake slot $a$ once $\beta s>e^{x_a}$; if $s<0$, pairs of type
    $a$ drain slot $a$ below zero once $\beta|s|>e^{x_a}$. ``None`` iff every such $s$ is exactly zero (then
    insertions never change the output, and for $k=1$ or $D=1$ no two prefixes with equal last token need
    different outputs).
    """
    w = sol.weights
    k, D = w.k, w.depth
    if k < 2 or D < 2:
        return None
    best = None
    for j, d in closing_queries(k, D):
        rho = close_index(j, d, D)
        keys = [open_index(t, d, D) for t in range(k)] + [close_index(t, d - 1, D) for t in range(k)]
        scores = _exact_scores(w, keys, rho)
        for i in range(k):
            s = _slot_value(sol, {open_index(i, d, D): 1, close_index(i, d - 1, D): 1}, i, d, scores)
            sign = s.sign()
            if sign == 0:
                continue
            for a in range(k):
                if (sign > 0) == (a == i):
                    continue
                base = ExpSum.of([(1, scores[open_index(a, d, D)])])
                with mpmath.workdps(80):
                    est = int(mpmath.floor(base.value(80) / abs(s.value(80)))) + 1
                prefix = [0] * (d - 1) + [2 * a, 2 * j, 2 * j + 1]
                if sign > 0:
                    other_top = i
                else:  # the drained slot loses to the smallest other type (value 0)
                    other_top = min(t for t in range(k) if t != a)
                beta = _first_flip(sol, prefix, d - 1, i, a, est)
                if best is None or beta < best[0]:
                    other = [0] * (d - 1) + [2 * other_top, 2 * j, 2 * j + 1]
                    best = (beta, prefix, other, d - 1, (2 * i, 2 * i + 1), (j, d), float(s.value(30)), est)
    if best is None:
        return None
    beta, prefix, other, pos, pair, query, s_val, est = best
    return PumpingCounterexample(np.array(prefix), np.array(other), pos, pair, beta, query, s_val, est)


def pumping_counterexample(sol: DyckSolution) -> PumpingCounterexample:
    """Like :func:`find_pumping_counterexample` but raises ``ValueError`` when the model has none
    (balanced)."""
    found = find_pumping_counterexample(sol)
    if found is None:
        raise ValueError(
            "no pumping counterexample: every inserted pair leaves the decoded slots unchanged exactly "
            "(the attention is balanced at every closing query, or k = 1 / D = 1)"
        )
    return found
