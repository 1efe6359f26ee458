"""Shortcuts (Liu Def 3) and the layer-2 head values of the gridworld construction (Lemma 23).

A sequence $\\{f_T\\}_{T\\ge1}$ of networks simulating a semiautomaton at length $T$ is a *shortcut* when its depths
satisfy $D(T)=o(T)$, i.e. $\\lim_{T\\to\\infty}D(T)/T=0$. :func:`is_shortcut` decides this for a closed-form depth
$D(T)$ (a sympy expression in one symbol); :func:`log_depth` is the depth of ``compile_log_depth`` (Theorem 10).
"""

from __future__ import annotations

import numpy as np

__all__ = ["is_shortcut", "log_depth", "lemma23_heads", "lemma23_window"]


def _depth_expr(depth):
    import sympy as sp

    if not isinstance(depth, sp.Expr):
        raise TypeError(f"depth must be a sympy expression in T, got {type(depth).__name__}")
    free = depth.free_symbols
    if len(free) > 1:
        raise ValueError(
            f"depth must depend on at most one symbol (T), got free symbols {sorted(map(str, free))}"
        )
    return depth, next(iter(free), None)


def is_shortcut(depth) -> bool:
    """Def 3: $D(T)=o(T)$, decided as $\\lim_{T\\to\\infty}D(T)/T=0$ (sympy)."""
    import sympy as sp

    D, T = _depth_expr(depth)
    if T is None:  # a constant depth
        return True
    return bool(sp.limit(D / T, T, sp.oo) == 0)


def log_depth(T: int) -> int:
    """Depth of the Theorem-10 construction (``compile_log_depth``): $\\max(1,\\lceil\\log_2T\\rceil)\\le1+\\log_2T$."""
    if isinstance(T, bool) or not isinstance(T, (int, np.integer)) or T < 1:
        raise ValueError(f"T must be an int >= 1, got {T!r}")
    return max(1, int(T - 1).bit_length())


def lemma23_heads(moves, t: int, S: int, T: int | None = None) -> np.ndarray:
    """The $2S+1$ layer-2 values $x^{(2)}[s]=\\log(2T-j^{(s)})$ of Lemma 23 (hard attention, as printed): with
    prefix sums $z_i=\\sum_{\\tau\\le i}m_\\tau$ over positions $i\\in[t]$ (``moves`` in $\\{-1,0,1\\}$), head
    $s\\in\\{0..2S\\}$ selects the last $i\\le t$ with $z_i=z_t+(s-S)$, or $t$ if there is none."""
    m = np.asarray(moves)
    if m.ndim != 1 or not np.isin(m, (-1, 0, 1)).all():
        raise ValueError("moves must be a 1-d sequence of values in {-1, 0, 1}")
    if isinstance(t, bool) or not isinstance(t, (int, np.integer)) or not 1 <= t <= len(m):
        raise ValueError(f"t must be an int in [1, {len(m)}], got {t!r}")
    if isinstance(S, bool) or not isinstance(S, (int, np.integer)) or S < 1:
        raise ValueError(f"S must be an int >= 1, got {S!r}")
    T = len(m) if T is None else T
    if T < len(m):
        raise ValueError(f"T = {T} is shorter than the {len(m)} moves")
    z = np.cumsum(m[:t])
    hit = z[None, :] == z[-1] + np.arange(-S, S + 1)[:, None]  # [2S + 1, t]
    last = t - np.argmax(hit[:, ::-1], axis=1)  # the last matching position (1-based)
    return np.log(2 * T - np.where(hit.any(axis=1), last, t))


def lemma23_window(x: np.ndarray, S: int) -> tuple[int, int] | None:
    """The Lemma-23 shape of head values ``x`` (length $2S+1$): the pair $a<b$ with $x[a]>\\dots>x[S]<\\dots<x[b]$
    and $x[s]=x[S]$ outside $[a,b]$ (the widest such pair), or ``None`` when no pair $a<b$ has this shape."""
    x = np.asarray(x, dtype=float)
    if x.shape != (2 * S + 1,):
        raise ValueError(f"x must have length 2S + 1 = {2 * S + 1}, got shape {x.shape}")
    a = S
    while a > 0 and x[a - 1] > x[a]:
        a -= 1
    b = S
    while b < 2 * S and x[b + 1] > x[b]:
        b += 1
    outside = np.r_[x[:a], x[b + 1 :]]
    if a == b or not np.all(outside == x[S]):
        return None
    return a, b
