"""The Transformer exactly as the automata theory (Liu et al., "Transformers learn shortcuts to automata") defines it.

An $L$-block network on $X \\in \\mathbb R^{N\\times d}$ (rows are positions, padding rows included):

$$f = (m^{(L)}_{\\rm mlp} + f^{(L)}_{\\rm mlp})\\circ(m^{(L)}_{\\rm attn} + f^{(L)}_{\\rm attn})\\circ\\cdots\\circ
(m^{(1)}_{\\rm attn} + f^{(1)}_{\\rm attn}),$$

where $m$ is a per-block **residual mask** (a 0/1 vector over dimensions: the residual connection is kept on the
dimensions where it is 1), a head is $\\mathrm{CausalAttn}(XW_QW_K^\\top X^\\top)XW_VW_C$ with a row-wise causally
masked softmax and **no** $1/\\sqrt k$ scaling, a block's heads are **summed**, the MLP is position-wise ReLU
$x\\mapsto W_{L'}\\sigma(\\cdots\\sigma(W_1x+b_1)\\cdots)+b_{L'}$ (row-vector convention below: $xW+b$), and there is
no LayerNorm. Position encodings and padding rows are the business of the caller (see
``theorylab.automata.constructions``).

:class:`TheoryTransformer` runs in numpy float64 (for exact checks); :meth:`TheoryTransformer.to_torch` returns a
``torch.nn.Module`` with the same weights (float64 by default).
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field

import numpy as np

from theorylab._extras import require
from theorylab.caching import MemoCache

__all__ = ["Head", "MLP", "Block", "TheoryTransformer", "causal_softmax"]


def _matrix(a, shape0: int | None, what: str) -> np.ndarray:
    m = np.asarray(a, dtype=np.float64)
    if m.ndim != 2:
        raise ValueError(f"{what} must be a matrix, got shape {m.shape}")
    if shape0 is not None and m.shape[0] != shape0:
        raise ValueError(f"{what} must have {shape0} rows, got shape {m.shape}")
    if not np.isfinite(m).all():
        raise ValueError(f"{what} contains NaN or inf")
    m = m.copy()
    m.setflags(write=False)
    return m


_MASKS: dict[int, np.ndarray] = {}


def _mm(X: np.ndarray, W: np.ndarray) -> np.ndarray:
    """``X @ W`` for ``X`` of shape ``[..., n]`` as one 2-D GEMM (numpy's broadcast matmul is much slower)."""
    return (X.reshape(-1, X.shape[-1]) @ W).reshape(*X.shape[:-1], W.shape[1])


def _causal_bias(n: int) -> np.ndarray:
    """0 on and below the diagonal, -inf above (cached per size)."""
    if n not in _MASKS:
        b = np.where(np.tri(n, dtype=bool), 0.0, -np.inf)
        b.setflags(write=False)
        _MASKS[n] = b
    return _MASKS[n]


def causal_softmax(scores: np.ndarray, inplace: bool = False) -> np.ndarray:
    """Row-wise softmax of ``scores[..., t, t']`` over ``t' <= t`` (entries above the diagonal get weight 0),
    computed with max-subtraction. Blocks of rows small enough to stay in cache, each over the columns up to its
    last row only (the rest of those rows is exactly 0): about half the exponentials of the full square, and none
    of those that underflow to 0 (most of them in the hard-attention constructions)."""
    s = scores if inplace else np.array(scores, dtype=np.float64)
    if s.ndim < 2 or s.shape[-1] != s.shape[-2]:
        raise ValueError(f"scores must have shape [..., N, N], got {s.shape}")
    n = s.shape[-1]
    bias = _causal_bias(n)
    rows = max(8, _SOFTMAX_BLOCK // max(1, s.size // max(1, n)))
    for r0 in range(0, n, rows):
        r1 = min(n, r0 + rows)
        part = s[..., r0:r1, :r1]
        part[..., r0:] += bias[r0:r1, r0:r1]  # columns before r0 precede every row of the block
        part -= part.max(axis=-1, keepdims=True)
        # exp is exactly 0 below _EXP_UNDERFLOW: only the other entries are gathered, exponentiated contiguously
        # and scattered back (a masked exp in place runs element by element, and libm's exp is slowest on
        # underflowing inputs)
        keep = part >= _EXP_UNDERFLOW
        kept = np.exp(part[keep])
        part.fill(0.0)
        part[keep] = kept
        part /= part.sum(axis=-1, keepdims=True)
        s[..., r0:r1, r1:] = 0.0
    return s


_SOFTMAX_BLOCK = 1 << 16  # entries (batch x rows x n) per block of causal_softmax: 512 KiB, about an L2 cache
_EXP_UNDERFLOW = -746.0  # exp(x) rounds to 0.0 in float64 for every x below -745.14


_DISTINCT_FROM = 1 << 16  # inputs x hidden units from which a one-input MLP is evaluated per distinct input
_SHARED_KEEP = 1 << 18  # shared weights up to 512 x 512 (2 MiB) are kept in _SHARED_WEIGHTS
#: the shared (batch-invariant) attention weights of recent (head, input) pairs: at most 32 x 2 MiB, emptied by
#: ``theorylab.caching.clear_caches`` (so a benchmark never times a hit)
_SHARED_WEIGHTS: MemoCache[np.ndarray] = MemoCache("nn.theory.shared_attention", 32)
_HEAD_IDS = itertools.count()


@dataclass(frozen=True)
class Head:
    """One attention head: ``W_Q, W_K`` of shape ``(d, k)``, ``W_V`` of shape ``(d, k_v)``, ``W_C`` ``(k_v, d)``.

    The theory uses one inner width ``k = k_v``; a head built with ``k != k_v`` is the same head with zero
    columns appended, and reports ``head_dim = max(k, k_v)``.
    """

    W_Q: np.ndarray
    W_K: np.ndarray
    W_V: np.ndarray
    W_C: np.ndarray

    def __post_init__(self) -> None:
        q = _matrix(self.W_Q, None, "W_Q")
        d = q.shape[0]
        k = _matrix(self.W_K, d, "W_K")
        if k.shape != q.shape:
            raise ValueError(f"W_Q and W_K must have the same shape, got {q.shape} and {k.shape}")
        v = _matrix(self.W_V, d, "W_V")
        c = _matrix(self.W_C, v.shape[1], "W_C")
        if c.shape[1] != d:
            raise ValueError(f"W_C must have shape ({v.shape[1]}, {d}), got {c.shape}")
        for name, m in (("W_Q", q), ("W_K", k), ("W_V", v), ("W_C", c)):
            object.__setattr__(self, name, m)
        # a head embedded in a wide model reads and writes few coordinates: the products use the weights
        # restricted to the nonzero rows of W_Q, W_K (one set: the scores), of W_V, and nonzero columns of W_C
        # (the omitted terms are exact zeros), sliced once here
        qk_read = np.flatnonzero(np.abs(q).sum(axis=1) + np.abs(k).sum(axis=1))
        inner = np.flatnonzero((np.abs(q).sum(axis=0) > 0) & (np.abs(k).sum(axis=0) > 0))
        v_read = np.flatnonzero(np.abs(v).sum(axis=1))
        c_written = np.flatnonzero(np.abs(c).sum(axis=0))
        sliced = {
            "_qk_read": qk_read,
            "_W_Q": np.ascontiguousarray(q[np.ix_(qk_read, inner)]),
            "_W_K": np.ascontiguousarray(k[np.ix_(qk_read, inner)]),
            "_v_read": v_read,
            "_W_V": np.ascontiguousarray(v[v_read]),
            "_c_written": c_written,
            "_W_C": np.ascontiguousarray(c[:, c_written]),
        }
        for name, m in sliced.items():
            object.__setattr__(self, name, m)
        object.__setattr__(self, "_uid", next(_HEAD_IDS))  # keys this head's entries in _SHARED_WEIGHTS

    @property
    def d(self) -> int:
        return self.W_Q.shape[0]

    @property
    def head_dim(self) -> int:
        return max(self.W_Q.shape[1], self.W_V.shape[1])

    def attention(self, X: np.ndarray) -> np.ndarray:
        """Attention weights ``[..., N, N]`` (rows sum to 1, causal)."""
        A = self._weights(X)
        return np.broadcast_to(A, (*X.shape[:-1], X.shape[-2])) if A.shape[:-2] != X.shape[:-2] else A

    def _weights(self, X: np.ndarray) -> np.ndarray:
        """The attention weights, computed once as ``[1, N, N]`` when the coordinates the scores read are the
        same in every sequence of a batch ``X [B, N, d]`` (positional heads: the weights do not depend on the
        sequence; such weights are kept, read-only, in a bounded memo per (head, input)), else ``[..., N, N]``.
        Only the coordinates ``W_Q, W_K`` read enter the products."""
        Xq = np.take(X, self._qk_read, axis=-1)
        if X.ndim != 3 or not (X.shape[0] == 1 or (Xq == Xq[:1]).all()):
            scores = _mm(Xq, self._W_Q) @ np.swapaxes(_mm(Xq, self._W_K), -1, -2)
            return causal_softmax(scores, inplace=True)
        Xq = np.ascontiguousarray(Xq[:1])
        key = (self._uid, Xq.shape, Xq.tobytes())  # this head, this input
        A = _SHARED_WEIGHTS.get(key)
        if A is None:
            A = causal_softmax(_mm(Xq, self._W_Q) @ np.swapaxes(_mm(Xq, self._W_K), -1, -2), inplace=True)
            if A.size <= _SHARED_KEEP:
                A.setflags(write=False)
                _SHARED_WEIGHTS.put(key, A)
        return A

    def add_to(self, X: np.ndarray, out: np.ndarray, attention: list | None = None) -> np.ndarray:
        """``out + self(X)`` in place (``out`` a float64 array of ``X``'s shape): only the coordinates ``W_C``
        writes change (the others add an exact zero); ``attention`` collects the weights ``[..., N, N]``."""
        A = self._weights(X)
        if attention is not None:
            attention.append(np.broadcast_to(A, (*X.shape[:-1], X.shape[-2])))
        V = _mm(np.take(X, self._v_read, axis=-1), self._W_V)
        if X.ndim == 3 and A.shape[0] == 1 and X.shape[0] > 1:  # one shared [N, N] by all sequences: one GEMM
            B, N, k = V.shape
            AV = (A[0] @ V.transpose(1, 0, 2).reshape(N, B * k)).reshape(N, B, k).transpose(1, 0, 2)
        else:
            AV = A @ V
        out[..., self._c_written] += _mm(AV, self._W_C)
        return out

    def __call__(self, X: np.ndarray) -> np.ndarray:
        X = np.asarray(X, dtype=np.float64)
        return self.add_to(X, np.zeros(X.shape))


@dataclass(frozen=True)
class MLP:
    """Position-wise ReLU MLP with affine maps ``x -> x @ W_i + b_i`` and ReLU between them (not after the last)."""

    weights: tuple
    biases: tuple

    def __post_init__(self) -> None:
        if len(self.weights) == 0 or len(self.weights) != len(self.biases):
            raise ValueError("an MLP needs as many biases as weight matrices, and at least one layer")
        ws, bs = [], []
        prev = None
        for i, (w, b) in enumerate(zip(self.weights, self.biases, strict=True)):
            w = _matrix(w, prev, f"W_{i + 1}")
            b = np.asarray(b, dtype=np.float64).reshape(-1).copy()
            if b.shape != (w.shape[1],) or not np.isfinite(b).all():
                raise ValueError(
                    f"b_{i + 1} must be a finite vector of length {w.shape[1]}, got shape {b.shape}"
                )
            b.setflags(write=False)
            ws.append(w)
            bs.append(b)
            prev = w.shape[1]
        object.__setattr__(self, "weights", tuple(ws))
        object.__setattr__(self, "biases", tuple(bs))
        # inputs read / outputs written (an MLP embedded in a wide model touches few coordinates); used to skip
        # zero rows and columns in __call__, which does not change the function
        read = np.flatnonzero(np.abs(ws[0]).sum(axis=1))
        written = np.flatnonzero(np.abs(ws[-1]).sum(axis=0) + np.abs(bs[-1]))
        object.__setattr__(self, "_read", read)
        object.__setattr__(self, "_written", written)
        # the weights restricted to those coordinates, sliced once (not per call)
        sliced_w, sliced_b = list(ws), list(bs)
        sliced_w[0] = sliced_w[0][read]
        sliced_w[-1], sliced_b[-1] = sliced_w[-1][:, written], sliced_b[-1][written]
        object.__setattr__(self, "_sliced", tuple(zip(sliced_w, sliced_b, strict=True)))

    @property
    def d_in(self) -> int:
        return self.weights[0].shape[0]

    @property
    def d_out(self) -> int:
        return self.weights[-1].shape[1]

    @property
    def hidden_widths(self) -> tuple[int, ...]:
        return tuple(w.shape[1] for w in self.weights[:-1])

    def _written_values(self, X: np.ndarray) -> np.ndarray:
        """The outputs on the written coordinates only, ``[..., len(_written)]``. An MLP that reads one
        coordinate (the interpolation gadgets: hidden widths that grow with T) is evaluated once per distinct
        input value (position-wise: the same rows, the same results) and the results gathered back."""
        h = np.take(X, self._read, axis=-1)
        r = len(self._read)
        if r and (h.size // r) * max(self.hidden_widths, default=0) >= _DISTINCT_FROM:
            if r == 1:
                u, inv = np.unique(h.reshape(-1), return_inverse=True)
                u = u[:, None]
            else:  # rows compared by their bytes (each distinct row evaluated on its exact bits)
                flat = np.ascontiguousarray(h.reshape(-1, r))
                _, first, inv = np.unique(
                    flat.view(np.dtype((np.void, 8 * r))).reshape(-1), return_index=True, return_inverse=True
                )
                u = flat[first]
            if 2 * len(u) * r <= h.size:
                return self._rows(u)[inv.reshape(-1)].reshape(*h.shape[:-1], -1)
        return self._rows(h)

    def _rows(self, h: np.ndarray) -> np.ndarray:
        last = len(self._sliced) - 1
        for i, (w, b) in enumerate(self._sliced):
            h = _mm(h, w)
            h += b
            if i < last:
                np.maximum(h, 0.0, out=h)
        return h

    def __call__(self, X: np.ndarray) -> np.ndarray:
        X = np.asarray(X, dtype=np.float64)
        out = np.zeros((*X.shape[:-1], self.d_out))
        out[..., self._written] = self._written_values(X)
        return out

    def add_to(self, X: np.ndarray, out: np.ndarray) -> np.ndarray:
        """``out + self(X)`` in place (``out`` a float64 array of ``X``'s shape): only the written coordinates
        change (the others add an exact zero)."""
        out[..., self._written] += self._written_values(X)
        return out


@dataclass(frozen=True)
class Block:
    """Attention sub-block (sum of ``heads``; none = the zero map) then MLP sub-block (``None`` = the zero map).

    ``attn_residual`` / ``mlp_residual``: 0/1 vectors of length ``d`` (``None`` = all ones, the usual residual).
    """

    heads: tuple = ()
    mlp: MLP | None = None
    attn_residual: np.ndarray | None = None
    mlp_residual: np.ndarray | None = None
    d: int = field(default=0)

    def __post_init__(self) -> None:
        heads = tuple(self.heads)
        ds = {h.d for h in heads}
        if self.mlp is not None:
            if self.mlp.d_in != self.mlp.d_out:
                raise ValueError(f"the MLP must map R^d to R^d, got {self.mlp.d_in} -> {self.mlp.d_out}")
            ds.add(self.mlp.d_in)
        if self.d:
            ds.add(self.d)
        if len(ds) != 1:
            raise ValueError(f"a block needs one model dimension d, got {sorted(ds) or 'none'}")
        d = ds.pop()
        object.__setattr__(self, "heads", heads)
        object.__setattr__(self, "d", d)
        for name in ("attn_residual", "mlp_residual"):
            m = getattr(self, name)
            m = np.ones(d) if m is None else np.asarray(m, dtype=np.float64).reshape(-1).copy()
            if m.shape != (d,) or not np.isin(m, (0.0, 1.0)).all():
                raise ValueError(f"{name} must be a 0/1 vector of length d = {d}")
            m.setflags(write=False)
            object.__setattr__(self, name, m)

    def __call__(self, X: np.ndarray, attention: list | None = None) -> np.ndarray:
        out = X * self.attn_residual
        for h in self.heads:
            h.add_to(X, out, attention)
        if self.mlp is not None:
            out = self.mlp.add_to(out, out * self.mlp_residual)
        elif not self.mlp_residual.all():
            out = out * self.mlp_residual
        return out


@dataclass(frozen=True)
class TheoryTransformer:
    """A stack of :class:`Block` on ``R^{N x d}``; ``forward`` accepts ``[N, d]`` or ``[B, N, d]``."""

    blocks: tuple

    def __post_init__(self) -> None:
        blocks = tuple(self.blocks)
        if not blocks:
            raise ValueError("a TheoryTransformer needs at least one block")
        ds = {b.d for b in blocks}
        if len(ds) != 1:
            raise ValueError(f"all blocks must share the model dimension, got {sorted(ds)}")
        object.__setattr__(self, "blocks", blocks)

    @property
    def d(self) -> int:
        return self.blocks[0].d

    @property
    def depth(self) -> int:
        """Number of attention layers L."""
        return len(self.blocks)

    @property
    def n_heads(self) -> int:
        """Largest number of heads in one block."""
        return max(len(b.heads) for b in self.blocks)

    @property
    def head_dim(self) -> int:
        return max((h.head_dim for b in self.blocks for h in b.heads), default=0)

    @property
    def mlp_width(self) -> int:
        return max((max(b.mlp.hidden_widths, default=0) for b in self.blocks if b.mlp is not None), default=0)

    @property
    def mlp_depth(self) -> int:
        """Largest number of affine maps in one MLP (the theory's L')."""
        return max((len(b.mlp.weights) for b in self.blocks if b.mlp is not None), default=0)

    @property
    def width(self) -> int:
        """``max(d, attention width H*k, MLP width)`` as in the theory's complexity measures."""
        attn = max((sum(h.head_dim for h in b.heads) for b in self.blocks), default=0)
        return max(self.d, attn, self.mlp_width)

    def parameters(self):
        """All weight matrices and bias vectors (numpy), in a fixed order."""
        for b in self.blocks:
            for h in b.heads:
                yield from (h.W_Q, h.W_K, h.W_V, h.W_C)
            if b.mlp is not None:
                for w, c in zip(b.mlp.weights, b.mlp.biases, strict=True):
                    yield w
                    yield c

    @property
    def max_weight(self) -> float:
        """Largest absolute entry of any weight or bias (the theory's infinity-norm bound)."""
        return float(max((np.abs(p).max() for p in self.parameters() if p.size), default=0.0))

    @property
    def n_parameters(self) -> int:
        return int(sum(p.size for p in self.parameters()))

    def forward(self, X, return_attention: bool = False, max_chunk_elems: int = 2**22):
        """Run the network on ``X`` (``[N, d]`` or ``[B, N, d]``), float64. With ``return_attention``, also return a
        list (per block) of lists (per head) of ``[B, N, N]`` attention matrices. The batch is processed in chunks
        of about ``max_chunk_elems`` attention entries to bound memory."""
        X = np.asarray(X, dtype=np.float64)
        squeeze = X.ndim == 2
        if squeeze:
            X = X[None]
        if X.ndim != 3 or X.shape[-1] != self.d:
            raise ValueError(f"X must have shape [N, {self.d}] or [B, N, {self.d}], got {np.shape(X)}")
        if not np.isfinite(X).all():
            raise ValueError("X contains NaN or inf")
        B, N, _ = X.shape
        chunk = B if return_attention else max(1, max_chunk_elems // max(1, N * N))
        outs, atts = [], [[] for _ in self.blocks]
        for s in range(0, B, chunk):
            Y = X[s : s + chunk]
            for i, b in enumerate(self.blocks):
                Y = b(Y, atts[i] if return_attention else None)
            outs.append(Y)
        out = np.concatenate(outs, axis=0)
        if squeeze:
            out = out[0]
        if return_attention:
            return out, atts
        return out

    __call__ = forward

    def to_torch(self, dtype=None):
        """A ``torch.nn.Module`` with the same weights (float64 unless ``dtype`` is given)."""
        return _torch_classes()["TheoryTransformerModule"](self, dtype=dtype)


_TORCH_CLASSES: dict = {}


def _torch_classes() -> dict:
    """Define the torch modules on first use, so that importing this module does not import torch."""
    if _TORCH_CLASSES:
        return _TORCH_CLASSES
    torch = require("torch", extra="trained")
    nn = torch.nn

    def param(a, dtype):
        return nn.Parameter(torch.tensor(np.array(a), dtype=dtype))

    class TheoryTransformerModule(nn.Module):
        """torch twin of :class:`TheoryTransformer`: ``forward(X [B, N, d]) -> [B, N, d]``, same weights."""

        def __init__(self, net: TheoryTransformer, dtype=None):
            super().__init__()
            dtype = dtype or torch.float64
            self.d = net.d
            self.heads = nn.ModuleList()
            self.mlps = nn.ModuleList()
            for i, b in enumerate(net.blocks):
                hs = nn.ModuleList()
                for h in b.heads:
                    m = nn.Module()
                    m.W_Q, m.W_K, m.W_V, m.W_C = (param(w, dtype) for w in (h.W_Q, h.W_K, h.W_V, h.W_C))
                    hs.append(m)
                self.heads.append(hs)
                mlp = nn.ParameterList()
                if b.mlp is not None:
                    for w, c in zip(b.mlp.weights, b.mlp.biases, strict=True):
                        mlp.append(param(w, dtype))
                        mlp.append(param(c, dtype))
                self.mlps.append(mlp)
                self.register_buffer(
                    f"attn_residual_{i}", torch.tensor(np.array(b.attn_residual), dtype=dtype)
                )
                self.register_buffer(f"mlp_residual_{i}", torch.tensor(np.array(b.mlp_residual), dtype=dtype))

        def forward(self, X):
            n = X.shape[-2]
            mask = torch.ones(n, n, dtype=torch.bool, device=X.device).tril()
            for i, (hs, mlp) in enumerate(zip(self.heads, self.mlps, strict=True)):
                out = X * getattr(self, f"attn_residual_{i}")
                for h in hs:
                    s = (X @ h.W_Q) @ (X @ h.W_K).transpose(-1, -2)
                    a = torch.softmax(s.masked_fill(~mask, float("-inf")), dim=-1)
                    out = out + _mm(a @ _mm(X, h.W_V), h.W_C)
                X = out * getattr(self, f"mlp_residual_{i}")
                if len(mlp):
                    h = out
                    for j in range(0, len(mlp), 2):
                        h = h @ mlp[j] + mlp[j + 1]
                        if j + 2 < len(mlp):
                            h = torch.relu(h)
                    X = X + h
            return X

    _TORCH_CLASSES["TheoryTransformerModule"] = TheoryTransformerModule
    return _TORCH_CLASSES
