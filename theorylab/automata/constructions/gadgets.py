"""Gadget lemmas of the shortcut constructions (Lemmas 10-16, Proposition 2), corrected where the printed ones fail.

Every MLP gadget returns a :class:`theorylab.nn.theory.MLP` on a small input (the caller embeds it into the model
dimension with :func:`embed_mlp`). ``printed=True`` (or the specific ``printed_*`` flags) builds the formula as
printed in the thesis, for the erratum checks.
"""

from __future__ import annotations

import numpy as np

from theorylab.automata.constructions.base import CompiledTransformer, check_length
from theorylab.nn.theory import MLP, Block, Head, TheoryTransformer

__all__ = [
    "interp_mlp_1d",
    "interp_mlp",
    "threshold_mlp",
    "hardmax_error",
    "circle_gap",
    "composition_mlp",
    "embed_mlp",
    "mod_counter",
    "memory_unit",
    "memory_semiautomaton",
    "mod_counter_semiautomaton",
]

_BUMP_OFFSETS = np.array([2.0, 1.0, -1.0, -2.0])  # psi = (u+2)_+ - (u+1)_+ - (u-1)_+ + (u-2)_+, u = (x-x0)/D'
_BUMP_SIGNS = np.array([1.0, -1.0, -1.0, 1.0])


def _min_gap(xs: np.ndarray) -> float:
    return float(np.min(np.diff(xs))) if xs.size > 1 else 1.0


def interp_mlp_1d(xs, ys, delta: float | None = None) -> MLP:
    """Lemma 10: a 2-layer ReLU MLP of width ``4|X|`` with ``f(x + xi) = ys[x]`` for ``|xi| <= delta/4``.

    Each point gets the bump $\\psi_{x_0}$ (1 on $[x_0-\\Delta/4, x_0+\\Delta/4]$, 0 outside
    $(x_0-\\Delta/2, x_0+\\Delta/2)$); ``delta`` defaults to the smallest gap of ``xs``.
    """
    xs = np.asarray(xs, dtype=np.float64).reshape(-1)
    ys = np.asarray(ys, dtype=np.float64)
    if ys.ndim == 0 or ys.shape[0] != len(xs):
        raise ValueError(f"ys must have one row per point: {len(xs)} points, ys of shape {ys.shape}")
    ys = ys.reshape(len(xs), -1)
    order = np.argsort(xs)
    xs, ys = xs[order], ys[order]
    if xs.size == 0 or np.any(np.diff(xs) <= 0):
        raise ValueError("Lemma 10 needs a non-empty set of distinct points")
    delta = _min_gap(xs) if delta is None else float(delta)
    dp = delta / 4
    W1 = np.full((1, 4 * len(xs)), 1.0 / dp)
    b1 = (-xs[:, None] / dp + _BUMP_OFFSETS[None, :]).reshape(-1)
    W2 = (_BUMP_SIGNS[None, :, None] * ys[:, None, :]).reshape(4 * len(xs), -1)
    return MLP((W1, W2), (b1, np.zeros(W2.shape[1])))


def interp_mlp(points, values, printed_bias: bool = False) -> MLP:
    """Lemma 11: a 3-layer ReLU MLP with ``f(x + xi) = values[x]`` for every row ``x`` of ``points`` and noise
    ``|xi_i| < Delta_i / 4`` (``Delta_i``: the smallest gap between the values of coordinate ``i``).

    Layer 1: per-coordinate Lemma-10 indicators (width $4\\sum_i|\\mathcal X_i|$); layer 2: one unit per point,
    $\\mathrm{ReLU}(\\sum_i \\mathrm{ind}_{i,x_i} - (d_{in}-1))$; layer 3: $\\sum_x f(x)\\,\\mathrm{ind}_x$.
    ``printed_bias=True`` uses the printed bias $-d_{in}$, which zeroes every output.
    """
    P = np.asarray(points, dtype=np.float64)
    if P.ndim == 1:
        P = P[:, None]
    V = np.asarray(values, dtype=np.float64).reshape(P.shape[0], -1)
    n, d_in = P.shape
    if n == 0 or len({tuple(r) for r in P.tolist()}) != n:
        raise ValueError("Lemma 11 needs a non-empty set of distinct points")
    cols, b1, w2_rows = [], [], []
    for i in range(d_in):
        u, inv = np.unique(P[:, i], return_inverse=True)
        dp = _min_gap(u) / 4
        for j, x0 in enumerate(u):
            for off, sg in zip(_BUMP_OFFSETS, _BUMP_SIGNS, strict=True):
                col = np.zeros(d_in)
                col[i] = 1.0 / dp
                cols.append(col)
                b1.append(-x0 / dp + off)
                w2_rows.append(sg * (inv == j))
    W1 = np.array(cols).T
    W2 = np.array(w2_rows, dtype=np.float64)
    b2 = np.full(n, -(d_in if printed_bias else d_in - 1), dtype=np.float64)
    return MLP((W1, W2, V), (np.array(b1), b2, np.zeros(V.shape[1])))


def threshold_mlp(delta: float, printed: bool = False) -> MLP:
    """Lemma 12: $\\mathbb 1[x>0]$ for $|x|\\ge\\Delta$, robust to $|\\xi|\\le\\Delta/4$, with 2 ReLU units.

    Corrected: $\\psi(x)=(\\frac{x+3\\Delta/4}{3\\Delta/2})_+-(\\frac{x-3\\Delta/4}{3\\Delta/2})_+$ (exactly 1 for
    $x\\ge 3\\Delta/4$, 0 for $x\\le-3\\Delta/4$). Printed: $(\\frac{x+\\Delta}{2\\Delta})_+-(\\frac{x-\\Delta}{2\\Delta})_+$,
    which gives 0.875 at $x=0.75\\Delta$.
    """
    if not delta > 0:
        raise ValueError(f"delta must be > 0, got {delta}")
    a, w = (delta, 2 * delta) if printed else (0.75 * delta, 1.5 * delta)
    return MLP(
        (np.array([[1 / w, 1 / w]]), np.array([[1.0], [-1.0]])), (np.array([a / w, -a / w]), np.zeros(1))
    )


def hardmax_error(z) -> tuple[float, float]:
    """Lemma 13 for one score vector ``z``: (``||softmax(z) - e_{argmax}||_1``, the bound ``2 T exp(-gap)``)."""
    z = np.asarray(z, dtype=np.float64).reshape(-1)
    if not np.all(np.isfinite(z)):
        raise ValueError("scores z contain NaN or inf")
    if z.size < 2:
        return 0.0, 0.0
    t = int(np.argmax(z))
    gap = z[t] - np.max(np.delete(z, t))
    p = np.exp(z - z[t])
    p /= p.sum()
    e = np.zeros_like(p)
    e[t] = 1
    return float(np.abs(p - e).sum()), float(2 * z.size * np.exp(-gap))


def circle_gap(T: int) -> dict:
    """Proposition 2 for $p_t=(\\cos 2\\pi t/T, \\sin 2\\pi t/T)$: the largest $\\langle p_t,p_{t'}\\rangle$ and
    $|\\langle p_t,p_{t'}\\rangle|$ over $t\\ne t'$, the printed bound $1-2\\pi^2/T^2$ and the corrected $1-8/T^2$."""
    T = check_length(T)
    ang = 2 * np.pi * np.arange(T) / T
    G = np.cos(ang[:, None] - ang[None, :])
    off = ~np.eye(T, dtype=bool)
    signed = float(G[off].max()) if T > 1 else -np.inf
    absolute = float(np.abs(G[off]).max()) if T > 1 else 0.0
    return {
        "max_inner": signed,
        "max_abs_inner": absolute,
        "printed_bound": 1 - 2 * np.pi**2 / T**2,
        "corrected_bound": 1 - 8 / T**2,
    }


def composition_mlp(n_states: int, gain: float | None = None) -> MLP:
    """Lemma 14: maps $[g(1..|Q|), f(1..|Q|)]$ (values in $1..|Q|$) to $(f\\circ g)(1..|Q|)$ for all $f, g$.

    Layer 1: $4|Q|^2$ indicator units $I_{q,q'}=\\mathbb 1[g(q)=q']$ (Lemma 10, $\\Delta=1$) plus $|Q|$ pass-through
    units for $f$; layer 2: $u_{q,q'}=\\mathrm{ReLU}(c\\,I_{q,q'}+f(q')-c)$; layer 3: $\\sum_{q'}u_{q,q'}$.
    The thesis uses $c=|Q|$; the default $c=|Q|+1$ also absorbs upward noise on $f$.
    """
    n = int(n_states)
    if n < 1:
        raise ValueError(f"n_states must be >= 1, got {n_states}")
    c = float(n + 1) if gain is None else float(gain)
    vals = np.arange(1, n + 1, dtype=np.float64)
    n_ind = 4 * n * n
    W1 = np.zeros((2 * n, n_ind + n))
    b1 = np.zeros(n_ind + n)
    W2 = np.zeros((n_ind + n, n * n))
    for q in range(n):
        for qp in range(n):
            base = 4 * (q * n + qp)
            W1[q, base : base + 4] = 4.0  # 1/Delta' with Delta' = 1/4
            b1[base : base + 4] = -vals[qp] * 4.0 + _BUMP_OFFSETS
            W2[base : base + 4, q * n + qp] = c * _BUMP_SIGNS
    for qp in range(n):
        W1[n + qp, n_ind + qp] = 1.0
        W2[n_ind + qp, [q * n + qp for q in range(n)]] = 1.0
    b2 = np.full(n * n, -c)
    W3 = np.zeros((n * n, n))
    for q in range(n):
        W3[q * n : (q + 1) * n, q] = 1.0
    return MLP((W1, W2, W3), (b1, b2, np.zeros(n)))


def embed_mlp(mlp: MLP, inputs, outputs, d: int) -> MLP:
    """The MLP on ``R^d`` that reads coordinates ``inputs`` and writes coordinates ``outputs`` (others get 0)."""
    inputs, outputs = list(inputs), list(outputs)
    if len(inputs) != mlp.d_in or len(outputs) != mlp.d_out:
        raise ValueError("inputs/outputs must match the MLP's dimensions")
    W1 = np.zeros((d, mlp.weights[0].shape[1]))
    W1[inputs] = mlp.weights[0]
    WL = np.zeros((mlp.weights[-1].shape[0], d))
    WL[:, outputs] = mlp.weights[-1]
    bL = np.zeros(d)
    bL[outputs] = mlp.biases[-1]
    if len(mlp.weights) == 1:
        W = np.zeros((d, d))
        W[np.ix_(inputs, outputs)] = mlp.weights[0]
        return MLP((W,), (bL,))
    ws = (W1, *mlp.weights[1:-1], WL)
    bs = (*mlp.biases[:-1], bL)
    return MLP(ws, bs)


def _e(d: int, *idx: int) -> np.ndarray:
    m = np.zeros((d, len(idx)))
    for j, i in enumerate(idx):
        m[i, j] = 1.0
    return m


def mod_counter_semiautomaton(n: int):
    """Definition 4: $Q=\\Sigma=\\mathbb Z_n$, $\\delta(q,\\sigma)=q+\\sigma \\bmod n$."""
    from theorylab.automata.semiautomaton import Semiautomaton

    a = np.arange(n)
    return Semiautomaton((a[:, None] + a[None, :]) % n, name=f"modcounter{n}")


def memory_semiautomaton(n_states: int):
    """Definition 5: $\\Sigma=Q\\cup\\{\\bot\\}$; symbol ``q < n`` writes ``q``, symbol ``n`` (= $\\bot$) keeps the state."""
    from theorylab.automata.semiautomaton import Semiautomaton

    n = int(n_states)
    delta = np.vstack([np.full((n, n), np.arange(n)[:, None]), np.arange(n)[None, :]])
    return Semiautomaton(delta, name=f"memory{n}")


def mod_counter(n: int, T: int, q0: int = 0, misread_gamma: bool = False, printed_target: bool = False):
    """Lemma 15: a depth-1, one-head ($k=1$), $d=3$ Transformer simulating the mod-``n`` counter.

    Channels (input/output, padding flag, position); one padding row $\\bot$ at position 0 with $E(\\bot)=e_2$,
    $P_t=\\gamma_te_3$ with $\\gamma_t=\\log(2T-t)$, so every real position gets attention $1/(2T)$ and the head
    outputs $s_t=\\frac1{2T}\\sum_{t'\\le t}\\sigma_{t'}$; the Lemma-10 MLP maps $s\\mapsto(q_0+2Ts)\\bmod n$.
    ``printed_target``: the printed MLP target $s\\mapsto Ts \\bmod n$ (an erratum). ``misread_gamma``:
    $\\gamma_t=\\log(2T\\cdot t)$, the text copy's "log(2Tt)" read literally (a minus sign lost in extraction,
    not an erratum; kept as a control).
    No residual connections.
    """
    T = check_length(T)
    if n < 1 or not 0 <= q0 < n:
        raise ValueError(f"need n >= 1 and q0 in range(n), got n={n}, q0={q0}")
    d = 3
    t = np.arange(1, T + 1)
    gamma = np.log(2.0 * T * t) if misread_gamma else np.log(2.0 * T - t)
    positions = np.zeros((T + 1, d))
    positions[1:, 2] = gamma
    head = Head(_e(d, 2), _e(d, 1), _e(d, 0), _e(d, 0).T)
    j = np.arange(T * (n - 1) + 1)
    target = (j // 2) % n if printed_target else (q0 + j) % n
    mlp = embed_mlp(interp_mlp_1d(j / (2.0 * T), target), [0], [0], d)
    zero = np.zeros(d)
    net = TheoryTransformer((Block((head,), mlp, attn_residual=zero, mlp_residual=zero),))
    emb = np.arange(n, dtype=np.float64)[:, None] * np.eye(d)[0]
    prefix = np.eye(d)[1][None]
    return CompiledTransformer(
        net, emb, prefix, positions, (0,), (n,), np.arange(n), T, f"lemma15_mod{n}", q0,
        {"claim": "automata.lemma15_mod_counter", "bounds": {"depth": 1, "d": 3, "n_heads": 1,
                                                            "mlp_width": 4 * n * T, "max_weight": 4 * n * T + 2}},
    )  # fmt: skip


def memory_unit(n_states: int, T: int, q0: int = 0, c: float | None = None):
    """Lemma 16: a depth-1, one-head ($k=2$), $d=4$ Transformer simulating the memory semiautomaton
    (:func:`memory_semiautomaton`; symbol ``n_states`` is $\\bot$).

    $E(\\sigma)=(\\mathbb 1[\\sigma=\\bot]q_0+\\mathbb 1[\\sigma\\ne\\bot]\\sigma)e_1+\\mathbb 1[\\sigma=\\bot]e_2+e_4$,
    $P_t=(t/T)e_3$, $W_Q=[-2e_4\\ e_4]$, $W_K=[ce_2\\ ce_3]$: score $c(j/T-2\\cdot\\mathbb 1[\\sigma_j=\\bot])$ peaks at the
    most recent write; $c=T\\log(16|Q|T)$ makes the attention error at most $1/8$, and the Lemma-10 MLP rounds.
    No padding row, no residual connections.
    """
    T = check_length(T)
    n = int(n_states)
    if n < 1 or not 0 <= q0 < n:
        raise ValueError(f"need n_states >= 1 and q0 in range(n_states), got {n}, {q0}")
    d = 4
    c = T * np.log(16.0 * n * T) if c is None else float(c)
    W_Q = np.zeros((d, 2))
    W_Q[3] = [-2.0, 1.0]
    W_K = np.zeros((d, 2))
    W_K[1, 0] = c
    W_K[2, 1] = c
    head = Head(W_Q, W_K, _e(d, 0, 3) * [1, 0], (_e(d, 0, 3) * [1, 0]).T)
    mlp = embed_mlp(interp_mlp_1d(np.arange(n), np.arange(n)), [0], [0], d)
    zero = np.zeros(d)
    net = TheoryTransformer((Block((head,), mlp, attn_residual=zero, mlp_residual=zero),))
    emb = np.zeros((n + 1, d))
    emb[:n, 0] = np.arange(n)
    emb[n, 0] = q0
    emb[n, 1] = 1.0
    emb[:, 3] = 1.0
    positions = np.zeros((T, d))
    positions[:, 2] = np.arange(1, T + 1) / T
    return CompiledTransformer(
        net, emb, np.zeros((0, d)), positions, (0,), (n,), np.arange(n), T, f"lemma16_memory{n}", q0,
        {"claim": "automata.lemma16_memory_unit", "c": c,
         "bounds": {"depth": 1, "d": 4, "n_heads": 1, "mlp_width": 4 * n, "max_weight": 2 * T * np.log(n * T)}},
    )  # fmt: skip
