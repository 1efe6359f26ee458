"""A small builder that assembles theory Transformers from named channels and the gadget primitives.

Every primitive writes into fresh channels (coordinates that are 0 before), so all residual connections are the
identity and blocks can be stacked and run in parallel: heads placed in the same layer are summed, MLPs placed in
the same layer are merged into one wider MLP (padded to the same number of layers with identity ReLU layers, which
is exact on the non-negative hidden activations).

Fixed channels: ``one`` (1 on every row), ``bos`` (1 on the padding row at position 0 only), ``gamma``
($\\log(2T-t)$ on row $t\\ge1$, 0 on the padding row: Lemma 15), ``lin`` ($t/T$) and ``lin2`` ($(t/T)^2$), and ``sym``
(the symbol index; ``n_symbols`` on the padding row).
"""

from __future__ import annotations

import numpy as np

from theorylab.automata.constructions.gadgets import interp_mlp, interp_mlp_1d
from theorylab.nn.theory import MLP, Block, Head, TheoryTransformer

__all__ = ["Circuit"]


class Circuit:
    def __init__(self, T: int, n_symbols: int):
        self.T = int(T)
        self.n_symbols = int(n_symbols)
        self.names: list[str] = []
        self.layers: list[dict] = []
        self.token: dict[int, np.ndarray] = {}  # channel -> value per symbol
        self.at_bos: dict[int, float] = {}  # channel -> value on the padding row
        self.one, self.bos_ch, self.gamma = self.channel("one"), self.channel("bos"), self.channel("gamma")
        self.lin, self.lin2, self.sym = self.channel("lin"), self.channel("lin2"), self.channel("sym")
        self.set_input(self.one, np.ones(self.n_symbols), 1.0)
        self.set_input(self.sym, np.arange(self.n_symbols), float(self.n_symbols))
        self.at_bos[self.bos_ch] = 1.0

    def channel(self, name: str) -> int:
        self.names.append(name)
        return len(self.names) - 1

    def set_input(self, ch: int, per_symbol, at_bos: float) -> None:
        """Encoder values of channel ``ch``: one per symbol, and the padding row's."""
        self.token[ch] = np.asarray(per_symbol, dtype=np.float64)
        self.at_bos[ch] = float(at_bos)

    def _layer(self, i: int) -> dict:
        while len(self.layers) <= i:
            self.layers.append({"heads": [], "mlps": []})
        return self.layers[i]

    @property
    def depth(self) -> int:
        return len(self.layers)

    # ------------------------------------------------------------------------------------------ primitives
    def head(self, layer: int, q: dict, k: dict, v: list, c: list, kdim: int) -> None:
        """A head with sparse weights: ``q``/``k``: channel -> row of length ``kdim``; values read channels ``v``
        and are written to channels ``c``."""
        if len(v) != len(c):
            raise ValueError("value and output channel lists must have the same length")
        self._layer(layer)["heads"].append((q, k, list(v), list(c), kdim))

    def mlp(self, layer: int, mlp: MLP, inputs: list, outputs: list) -> None:
        self._layer(layer)["mlps"].append((mlp, list(inputs), list(outputs)))

    def prefix_sum(self, layer: int, src: int, dst: int) -> None:
        """Lemma 15 head: ``dst[t] = sum_{1 <= t' <= t} src[t'] / (2T)`` (the padding row's ``src`` must be 0)."""
        self.head(layer, {self.gamma: [1.0]}, {self.bos_ch: [1.0]}, [src], [dst], 1)

    def last_reset_copy(self, layer: int, flag: int, srcs: list, dsts: list, vmax: float) -> float:
        """Lemma 16 head with the padding row as a reset: copy ``srcs`` from the most recent row with ``flag = 1``.

        Score $c(j/T + 2\\,\\mathrm{flag}_j)$; the gap is $\\ge c/T$, so with $c=T\\log(16(T+1)v_{\\max})$ the copied
        values are within $1/8$ (Lemma 13). Returns ``c``."""
        c = self.T * np.log(16.0 * (self.T + 1) * max(vmax, 1.0))
        self.head(layer, {self.one: [1.0]}, {self.lin: [c], flag: [2 * c]}, srcs, dsts, 1)
        return c

    def previous_copy(self, layer: int, srcs: list, dsts: list, vmax: float) -> float:
        """A head peaked at row $t-1$ (row 0 attends to itself): score $-\\beta(j/T-(t-1)/T)^2$ + const, written as
        the bilinear form $[2\\beta(t-1)/T, -\\beta]\\cdot[j/T, (j/T)^2]$. Gap $\\beta/T^2$ with
        $\\beta=T^2\\log(16(T+1)v_{\\max})$, so the copy is within $1/8$. Returns $\\beta$."""
        beta = self.T**2 * np.log(16.0 * (self.T + 1) * max(vmax, 1.0))
        q = {self.lin: [2 * beta, 0.0], self.one: [-2 * beta / self.T, -beta]}
        k = {self.lin: [1.0, 0.0], self.lin2: [0.0, 1.0]}
        self.head(layer, q, k, srcs, dsts, 2)
        return beta

    def lookup(self, layer: int, inputs: list, outputs: list, table: dict) -> None:
        """Position-wise exact lookup (Lemma 10 for one input, Lemma 11 otherwise) over the finite domain
        ``table``: input tuple -> output tuple."""
        keys = sorted(table)
        P = np.array(keys, dtype=np.float64).reshape(len(keys), len(inputs))
        V = np.array([table[k] for k in keys], dtype=np.float64).reshape(len(keys), len(outputs))
        m = interp_mlp_1d(P[:, 0], V) if len(inputs) == 1 else interp_mlp(P, V)
        self.mlp(layer, m, inputs, outputs)

    # ------------------------------------------------------------------------------------------ assembly
    def build(self):
        """(network, token embedding [n_symbols, d], padding row [1, d], positions [T + 1, d])."""
        d = len(self.names)
        blocks = []
        for lay in self.layers:
            heads = []
            for q, k, v, c, kdim in lay["heads"]:
                W_Q, W_K = np.zeros((d, kdim)), np.zeros((d, kdim))
                for ch, row in q.items():
                    W_Q[ch] += row
                for ch, row in k.items():
                    W_K[ch] += row
                W_V, W_C = np.zeros((d, len(v))), np.zeros((len(v), d))
                W_V[v, np.arange(len(v))] = 1.0
                W_C[np.arange(len(c)), c] = 1.0
                heads.append(Head(W_Q, W_K, W_V, W_C))
            blocks.append(Block(tuple(heads), _merge_mlps(lay["mlps"], d), d=d))
        if not blocks:
            blocks.append(Block((), None, d=d))
        net = TheoryTransformer(tuple(blocks))
        emb = np.zeros((self.n_symbols, d))
        for ch, vals in self.token.items():
            emb[:, ch] = vals
        prefix = np.zeros((1, d))
        for ch, val in self.at_bos.items():
            prefix[0, ch] = val
        t = np.arange(self.T + 1)
        positions = np.zeros((self.T + 1, d))
        positions[1:, self.gamma] = np.log(2.0 * self.T - t[1:])
        positions[:, self.lin] = t / self.T
        positions[:, self.lin2] = (t / self.T) ** 2
        return net, emb, prefix, positions


def _merge_mlps(mlps: list, d: int) -> MLP | None:
    """Run several (mlp, inputs, outputs) in parallel as one MLP on R^d."""
    if not mlps:
        return None
    n_maps = max(len(m.weights) for m, _, _ in mlps)
    padded = []
    for m, ins, outs in mlps:
        ws, bs = list(m.weights), list(m.biases)
        if len(ws) == 1:
            raise ValueError("a merged MLP needs at least one hidden layer")
        while len(ws) < n_maps:  # identity ReLU layer after the first hidden layer (activations are >= 0)
            h = ws[0].shape[1]
            ws.insert(1, np.eye(h))
            bs.insert(1, np.zeros(h))
        padded.append((ws, bs, ins, outs))
    weights, biases = [], []
    for layer in range(n_maps):
        if layer == 0:
            W = np.hstack([_rows(ws[0], ins, d) for ws, _, ins, _ in padded])
        elif layer == n_maps - 1:
            W = np.vstack([_cols(ws[-1], outs, d) for ws, _, _, outs in padded])
        else:
            W = _block_diag([ws[layer] for ws, _, _, _ in padded])
        if layer == n_maps - 1:
            b = np.zeros(d)
            for _, bs, _, outs in padded:
                b[outs] += bs[-1]
        else:
            b = np.concatenate([bs[layer] for _, bs, _, _ in padded])
        weights.append(W)
        biases.append(b)
    return MLP(tuple(weights), tuple(biases))


def _rows(W: np.ndarray, ins: list, d: int) -> np.ndarray:
    out = np.zeros((d, W.shape[1]))
    out[ins] = W
    return out


def _cols(W: np.ndarray, outs: list, d: int) -> np.ndarray:
    out = np.zeros((W.shape[0], d))
    out[:, outs] = W
    return out


def _block_diag(mats: list) -> np.ndarray:
    r = sum(m.shape[0] for m in mats)
    c = sum(m.shape[1] for m in mats)
    out = np.zeros((r, c))
    i = j = 0
    for m in mats:
        out[i : i + m.shape[0], j : j + m.shape[1]] = m
        i += m.shape[0]
        j += m.shape[1]
    return out
