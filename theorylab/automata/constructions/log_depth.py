"""Theorem 10: every semiautomaton is simulated at length T by a depth-$\\lceil\\log_2T\\rceil$ Transformer.

Hillis-Steele parallel prefix over function composition. Rows: $T'$ padding rows (positions $-T'+1..0$, holding
the constant map "go to $q_0$") then the input rows $1..T'$ ($T'$ = the next power of two $\\ge T$). A function
$f: Q\\to Q$ is stored as the integer vector $(f(q)+1)_q$ in the R slot. Layer $l$ has a head that attends to itself
(R) and one that attends to $t-2^{l-1}$ (L), both with the circle position encoding
$P_t=(\\cos\\frac{\\pi t}{T'},\\sin\\frac{\\pi t}{T'})$ and temperature $\\gamma=100T'^2(\\log|Q|+\\log T')$; the
Lemma-14 MLP writes $f\\circ g$ back into R. After layer $l$ row $t$ holds
$\\delta(\\cdot,\\sigma_t)\\circ\\cdots\\circ\\delta(\\cdot,\\sigma_{t-2^l+1})$ (with $\\sigma_{\\le0}$ = the constant
$q_0$ map), and the decoder reads coordinate $q_0$ of row $t$: $\\delta(q_0,\\sigma_{1:t})=q_t$.

Corrections to the printed proof (each can be switched back for the erratum checks): the rotation angle is
$\\theta=+\\pi2^{l-1}/T'$ (printed $-$, which peaks at $t+2^{l-1}$, hidden by the causal mask); $W_V$ reads the R dims
(printed: the L dims, which are 0 at layer 1); the read-out uses coordinate $q_0$ (printed: an arbitrary one).
"""

from __future__ import annotations

import numpy as np

from theorylab.automata.constructions.base import CompiledTransformer, check_length
from theorylab.automata.constructions.gadgets import composition_mlp, embed_mlp
from theorylab.automata.semiautomaton import check_automaton, check_q0
from theorylab.nn.theory import Block, Head, TheoryTransformer

__all__ = ["compile_log_depth"]


def compile_log_depth(
    aut,
    T: int,
    q0: int = 0,
    *,
    printed_rotation: bool = False,
    printed_value: bool = False,
    printed_readout: bool = False,
) -> CompiledTransformer:
    """Theorem 10 (corrected): a Transformer of depth $\\lceil\\log_2 T\\rceil$ (at least 1), $d=2|Q|+2$, 2 heads of
    dimension $|Q|$ and a 3-layer MLP of width $4|Q|^2+|Q|$ that simulates ``aut`` from ``q0`` on words of length
    ``<= T``. Works for every semiautomaton, solvable or not."""
    aut = check_automaton(aut)
    T = check_length(T)
    q0 = check_q0(aut, q0)
    delta = aut.delta
    n = max(aut.n_states, 2)  # one state gets a dummy partner, as in the proof
    if aut.n_states < n:
        delta = np.hstack([delta, np.full((aut.n_symbols, 1), n - 1)])
    Tp = max(2, 1 << (T - 1).bit_length())
    L = Tp.bit_length() - 1
    d = 2 * n + 2
    iL, iR, p1, p2 = np.arange(n), n + np.arange(n), 2 * n, 2 * n + 1
    gamma = 100.0 * Tp**2 * (np.log(n) + np.log(Tp))
    sg = np.sqrt(gamma)
    WQ = np.zeros((d, 2))
    WQ[p1, 0] = WQ[p2, 1] = sg
    read = iL if printed_value else iR
    WV = np.zeros((d, n))
    WV[read, np.arange(n)] = 1.0
    WC_L = np.zeros((n, d))
    WC_L[np.arange(n), iL] = 1.0
    WC_R = np.zeros((n, d))
    WC_R[np.arange(n), iR] = 1.0
    keep_p = np.zeros(d)
    keep_p[[p1, p2]] = 1.0
    mlp = embed_mlp(composition_mlp(n), np.concatenate([iL, iR]), iR, d)
    blocks = []
    for layer in range(1, L + 1):
        theta = (-1 if printed_rotation else 1) * np.pi * 2 ** (layer - 1) / Tp
        rho = np.array([[np.cos(theta), np.sin(theta)], [-np.sin(theta), np.cos(theta)]])
        head_L = Head(WQ, WQ @ rho, WV, WC_L)
        head_R = Head(WQ, WQ, WV, WC_R)
        blocks.append(Block((head_L, head_R), mlp, attn_residual=keep_p, mlp_residual=keep_p))
    net = TheoryTransformer(tuple(blocks))
    emb = np.zeros((aut.n_symbols, d))
    emb[:, iR] = delta + 1.0
    prefix = np.zeros((Tp, d))
    prefix[:, iR] = q0 + 1.0
    t = np.arange(-Tp + 1, T + 1)
    positions = np.zeros((Tp + T, d))
    positions[:, p1] = np.cos(np.pi * t / Tp)
    positions[:, p2] = np.sin(np.pi * t / Tp)
    out_q = 0 if printed_readout else q0
    table = np.concatenate([[-1], np.arange(n)])
    table[table >= aut.n_states] = -1
    bounds = {
        "depth": max(1, int(np.ceil(np.log2(T)))),
        "d": 2 * n + 2,
        "n_heads": 2,
        "head_dim": n,
        "mlp_width": 4 * n * n + n,  # Lemma 14 as constructed (the statement says n^2 + n)
        "max_weight": max(4 * n + 2, 10 * Tp * np.sqrt(np.log(n) + np.log(Tp))),
    }
    return CompiledTransformer(
        net, emb, prefix, positions, (int(iR[out_q]),), (n + 1,), table, T, f"thm10[{aut.name or 'aut'}]", q0,
        {"claim": "automata.thm10", "bounds": bounds, "T_padded": Tp, "gamma": gamma},
    )  # fmt: skip
