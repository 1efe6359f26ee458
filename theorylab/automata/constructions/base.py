"""The object every construction returns: a theory Transformer plus its encoder E and decoder W.

For a word $\\sigma_{1:T}$ the input matrix is
$X = [\\text{prefix rows};\\ E(\\sigma_1);\\dots;E(\\sigma_T)] + P$ (fixed padding rows first, then one row per symbol,
position encodings added once). The decoder reads the coordinates ``readout`` of the last ``T`` rows, rounds them to
integers and maps the tuple (mixed radix ``radices``) through ``decode_table`` to a state, so that
``W(f(E(sigma)))`` is the state sequence $q_1..q_T$ ("continuous simulation").
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from theorylab._extras import require
from theorylab.algebra.semigroup import NotSolvableError as _SemigroupNotSolvable
from theorylab.nn.theory import TheoryTransformer

__all__ = ["CompiledTransformer", "NotSolvableError", "check_length", "check_words"]

# Decoded coordinates must lie within this distance of an integer; anything else decodes to -1 (a failure).
# 1/4 is Lemma 10's noise radius Delta/4 for integer codes (Delta = 1): the radius within which the next
# lookup layer would still read the code exactly. The compiled networks are far inside it (measured <= 1.5e-11
# at T = 256 in float64), so a construction error of O(1) cannot hide behind it.
DECODE_TOLERANCE = 0.25


class NotSolvableError(_SemigroupNotSolvable):
    """Raised by the constant-depth compiler when a cascade component's permutation group is not solvable
    (a subclass of ``theorylab.algebra.NotSolvableError``)."""


def check_length(T) -> int:
    if isinstance(T, bool) or not isinstance(T, (int, np.integer)):
        raise TypeError(f"T must be an int, got {type(T).__name__}")
    if T < 1:
        raise ValueError(f"T must be >= 1, got {T}")
    return int(T)


def check_words(words, n_symbols: int, T: int) -> np.ndarray:
    w = np.asarray(words)
    if w.dtype == bool or not np.issubdtype(w.dtype, np.integer):
        raise TypeError(f"words must be an integer array, got dtype {w.dtype}")
    if w.ndim == 1:
        w = w[None, :]
    if w.ndim != 2:
        raise ValueError(f"words must have shape [T] or [B, T], got shape {np.shape(words)}")
    if w.shape[1] > T:
        raise ValueError(f"words have length {w.shape[1]} but the network was compiled for T = {T}")
    if w.size and (w.min() < 0 or w.max() >= n_symbols):
        raise ValueError(f"words contain symbols outside range({n_symbols})")
    return w.astype(np.int64)


@dataclass(frozen=True, eq=False)
class CompiledTransformer:
    """A theory Transformer with encoder and decoder, compiled for inputs of length ``<= T``.

    ``forward(words)`` returns the decoded states ``[B, T']`` (int64, ``-1`` where a coordinate is not within
    ``DECODE_TOLERANCE`` of a valid code). By causality the outputs on a prefix of length ``T' < T`` equal those
    of any extension, so shorter words are run on the first ``len(prefix) + T'`` rows.
    """

    net: TheoryTransformer
    token_embedding: np.ndarray  # [n_symbols, d]
    prefix: np.ndarray  # [tau, d]
    positions: np.ndarray  # [tau + T, d]
    readout: tuple  # coordinates read by the decoder
    radices: tuple  # each readout coordinate takes integer values in range(radix)
    decode_table: np.ndarray  # flat, indexed by the mixed-radix code of the readout; entries are states or -1
    T: int
    name: str = ""
    q0: int = 0
    info: dict = field(default_factory=dict)  # construction-specific metadata (bounds, layer roles, ...)

    @property
    def n_symbols(self) -> int:
        return self.token_embedding.shape[0]

    @property
    def n_prefix(self) -> int:
        return self.prefix.shape[0]

    @property
    def depth(self) -> int:
        return self.net.depth

    @property
    def width(self) -> int:
        return self.net.width

    @property
    def d(self) -> int:
        return self.net.d

    @property
    def n_heads(self) -> int:
        return self.net.n_heads

    @property
    def mlp_width(self) -> int:
        return self.net.mlp_width

    @property
    def max_weight(self) -> float:
        """Max absolute weight of the network and the encoder (embedding and position encodings included)."""
        enc = max(float(np.abs(a).max()) if a.size else 0.0 for a in (self.token_embedding, self.positions))
        return max(self.net.max_weight, enc)

    def embed(self, words) -> np.ndarray:
        """The input matrix ``[B, tau + T', d]``."""
        w = check_words(words, self.n_symbols, self.T)
        B, n = w.shape
        X = np.empty((B, self.n_prefix + n, self.d))
        X[:, : self.n_prefix] = self.prefix
        X[:, self.n_prefix :] = self.token_embedding[w]
        X += self.positions[: self.n_prefix + n]
        return X

    def hidden(self, words, return_attention: bool = False):
        """The network's output matrix (and attention maps) on ``E(words)``."""
        return self.net.forward(self.embed(words), return_attention=return_attention)

    def decode(self, Y: np.ndarray) -> np.ndarray:
        """W: read, round and look up the state of each of the last ``T'`` rows of ``Y`` ``[B, N, d]``."""
        Y = Y[..., self.n_prefix :, list(self.readout)]
        v = np.rint(Y)
        ok = (np.abs(Y - v) <= DECODE_TOLERANCE).all(-1)
        code = np.zeros(Y.shape[:-1], dtype=np.int64)
        for j, r in enumerate(self.radices):
            vj = v[..., j].astype(np.int64)
            ok &= (vj >= 0) & (vj < r)
            code = code * r + np.clip(vj, 0, r - 1)
        return np.where(ok, self.decode_table[code], -1)

    def readout_margin(self, words) -> float:
        """Largest distance of a read-out coordinate (last ``T'`` rows) from the nearest integer on ``E(words)``:
        0 for a network whose attention is one-hot to float precision, and how far an imprecise one drifts
        long before it decodes a wrong state."""
        Y = self.hidden(words)[..., self.n_prefix :, list(self.readout)]
        return float(np.abs(Y - np.rint(Y)).max()) if Y.size else 0.0

    def forward(self, words) -> np.ndarray:
        """Decoded states ``[B, T']`` for words ``[B, T']`` (or ``[T']``, giving ``[1, T']``)."""
        return self.decode(self.hidden(words))

    __call__ = forward

    def stats(self) -> dict:
        """Complexity measures of the theory: depth, d, heads, head dim, widths, max weight."""
        return {
            "depth": self.depth,
            "d": self.d,
            "n_heads": self.n_heads,
            "head_dim": self.net.head_dim,
            "mlp_width": self.mlp_width,
            "mlp_layers": self.net.mlp_depth,
            "width": self.width,
            "max_weight": self.max_weight,
            "n_prefix": self.n_prefix,
            "n_parameters": self.net.n_parameters,
        }

    def replace_net(self, net: TheoryTransformer) -> CompiledTransformer:
        """The same encoder/decoder around another network (used to build mutants)."""
        return CompiledTransformer(
            net, self.token_embedding, self.prefix, self.positions, self.readout, self.radices,
            self.decode_table, self.T, self.name, self.q0, dict(self.info),
        )  # fmt: skip

    def to_torch(self, dtype=None):
        """A ``torch.nn.Module``: ``forward(words LongTensor [B, T']) -> states LongTensor [B, T']`` with the same
        weights; ``.hidden(words)`` gives the network output."""
        return _compiled_module_class()(self, dtype=dtype)


_CLASS: list = []


def _compiled_module_class():
    if _CLASS:
        return _CLASS[0]
    torch = require("torch", extra="trained")
    nn = torch.nn

    class CompiledModule(nn.Module):
        """torch twin of :class:`CompiledTransformer` (encoder, theory network, decoder)."""

        def __init__(self, c: CompiledTransformer, dtype=None):
            super().__init__()
            dtype = dtype or torch.float64
            self.net = c.net.to_torch(dtype=dtype)
            for name in ("token_embedding", "prefix", "positions"):
                self.register_buffer(name, torch.tensor(np.array(getattr(c, name)), dtype=dtype))
            self.register_buffer("decode_table", torch.tensor(np.array(c.decode_table), dtype=torch.int64))
            self.readout = list(c.readout)
            self.radices = list(c.radices)
            self.n_prefix = c.n_prefix
            self.T = c.T

        def hidden(self, words):
            words = torch.as_tensor(words, dtype=torch.int64, device=self.token_embedding.device)
            if words.ndim == 1:
                words = words[None]
            if words.shape[1] > self.T:
                raise ValueError(
                    f"words have length {words.shape[1]} but the network was compiled for T = {self.T}"
                )
            B, n = words.shape
            X = torch.cat([self.prefix.expand(B, -1, -1), self.token_embedding[words]], dim=1)
            return self.net(X + self.positions[: self.n_prefix + n])

        def forward(self, words):
            Y = self.hidden(words)[:, self.n_prefix :, self.readout]
            v = torch.round(Y)
            ok = ((Y - v).abs() <= DECODE_TOLERANCE).all(-1)
            code = torch.zeros(Y.shape[:-1], dtype=torch.int64, device=Y.device)
            for j, r in enumerate(self.radices):
                vj = v[..., j].to(torch.int64)
                ok &= (vj >= 0) & (vj < r)
                code = code * r + vj.clamp(0, r - 1)
            return torch.where(ok, self.decode_table[code], torch.full_like(code, -1))

    _CLASS.append(CompiledModule)
    return CompiledModule
