"""Verdict functions: differential testing of a compiled Transformer against ``Semiautomaton.run``."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from theorylab.automata.constructions.base import CompiledTransformer
from theorylab.nn.theory import MLP, Block, Head, TheoryTransformer

__all__ = ["SimulationReport", "verify_simulation", "all_words", "perturb_weight", "adversarial_words"]


@dataclass(frozen=True)
class SimulationReport:
    """Outcome of comparing ``compiled.forward`` with ``aut.run`` on a batch of words."""

    n_words: int
    n_wrong_words: int
    n_wrong_tokens: int
    example: tuple | None  # (word, expected states, network states) of the first failure
    margin: float = (
        0.0  # largest distance of a read-out coordinate from the nearest integer (see readout_margin)
    )

    @property
    def ok(self) -> bool:
        return self.n_words > 0 and self.n_wrong_words == 0

    def __bool__(self) -> bool:
        return self.ok


def all_words(n_symbols: int, length: int) -> np.ndarray:
    """Every word of the given length, ``[n_symbols**length, length]`` (they cover all shorter prefixes too)."""
    if length == 0:
        return np.zeros((1, 0), dtype=np.int64)
    place = n_symbols ** np.arange(length - 1, -1, -1, dtype=np.int64)  # base-n digits, the last one fastest
    return np.arange(n_symbols**length, dtype=np.int64)[:, None] // place % n_symbols


def adversarial_words(n_symbols: int, T: int) -> np.ndarray:
    """Constant words (one per symbol), the two alternating words, and each symbol placed once at ``t=1`` or
    ``t=T`` in a run of symbol 0: the families where resets, boundaries and long runs are rare."""
    out = [np.full(T, s) for s in range(n_symbols)]
    if n_symbols > 1:
        out += [np.arange(T) % 2, 1 - np.arange(T) % 2]
    for s in range(1, n_symbols):
        for pos in (0, T - 1):
            w = np.zeros(T, dtype=np.int64)
            w[pos] = s
            out.append(w)
    return np.array(out, dtype=np.int64)


def verify_simulation(compiled: CompiledTransformer, aut, words, q0: int | None = None) -> SimulationReport:
    """Run ``compiled`` on ``words`` ``[B, T]`` and compare with ``aut.run(words, q0)`` (``q0`` defaults to the one
    the network was compiled for)."""
    words = np.asarray(words, dtype=np.int64)
    if words.ndim == 1:
        words = words[None]
    q0 = compiled.q0 if q0 is None else q0
    want = aut.run(words, q0)
    Y = compiled.hidden(words)
    got = compiled.decode(Y)
    Y = Y[..., compiled.n_prefix :, list(compiled.readout)]
    margin = float(np.abs(Y - np.rint(Y)).max()) if Y.size else 0.0
    bad = got != want
    rows = np.flatnonzero(bad.any(axis=1))
    ex = None
    if rows.size:
        r = rows[0]
        ex = (words[r].tolist(), want[r].tolist(), got[r].tolist())
    return SimulationReport(len(words), int(rows.size), int(bad.sum()), ex, margin)


def perturb_weight(compiled: CompiledTransformer, block: int, which: str, index: tuple, delta: float):
    """A mutant: add ``delta`` to one weight entry. ``which``: ``"W_Q"``, ``"W_K"``, ``"W_V"``, ``"W_C"`` of head
    ``index[0]`` (entry ``index[1:]``), or ``"mlp.W{i}"`` / ``"mlp.b{i}"`` (entry ``index``)."""
    net = compiled.net
    blocks = list(net.blocks)
    b = blocks[block]
    if which.startswith("mlp."):
        kind, i = which[4], int(which[5:]) - 1
        ws, bs = list(b.mlp.weights), list(b.mlp.biases)
        arr = (ws if kind == "W" else bs)[i].copy()
        arr[index] += delta
        (ws if kind == "W" else bs)[i] = arr
        new = Block(b.heads, MLP(tuple(ws), tuple(bs)), b.attn_residual, b.mlp_residual)
    else:
        heads = list(b.heads)
        h = heads[index[0]]
        mats = {k: getattr(h, k).copy() for k in ("W_Q", "W_K", "W_V", "W_C")}
        mats[which][index[1:]] += delta
        heads[index[0]] = Head(**mats)
        new = Block(tuple(heads), b.mlp, b.attn_residual, b.mlp_residual)
    blocks[block] = new
    return compiled.replace_net(TheoryTransformer(tuple(blocks)))
