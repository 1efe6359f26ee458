"""(d, k)-sparse parity (Liu §4.2, Def. 23 of ``001_6a230b9a9faf2198.txt``): x ~ Unif{-1,+1}^d, y = chi_S(x).

As a harness task the input is the length-d token sequence ``z_i = (1 - x_i) / 2`` (token 0 is +1, token 1 is -1)
and the 2-class target sits at the last position: class 0 when chi_S(x) = +1, class 1 when chi_S(x) = -1 (the
thesis labels them 1 and 2). This module does not import torch.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

import numpy as np

from theorylab._fmt import plain
from theorylab.boolean.fourier import MAX_CUBE_D, hypercube, parity


def _check_width(name: str, value: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int | np.integer):
        raise TypeError(f"{name} must be an int, got {type(value).__name__}")
    if value < 1:
        raise ValueError(f"{name} must be a positive int, got {value}")
    return int(value)


@dataclass(frozen=True)
class SparseParity:
    """The (d, k)-sparse parity on the support ``S`` (default: the first k coordinates)."""

    d: int
    k: int
    S: tuple[int, ...] = field(default=())
    name: str = "sparse_parity"
    vocab_size: int = 2
    n_outputs: int = 2
    loss: str = "ce"

    def __post_init__(self) -> None:
        _check_width("d", self.d)
        if isinstance(self.k, bool) or not isinstance(self.k, int | np.integer) or self.k < 0:
            raise ValueError(f"k must be an int >= 0, got {plain(self.k)}")
        if self.k > self.d:
            raise ValueError(f"sparsity k = {self.k} exceeds the dimension d = {self.d}")
        S = tuple(int(i) for i in self.S) if self.S else tuple(range(self.k))
        if len(S) != self.k or len(set(S)) != self.k or not all(0 <= i < self.d for i in S):
            raise ValueError(f"S must be {self.k} distinct coordinates in [0, {self.d}), got {self.S}")
        object.__setattr__(self, "S", tuple(sorted(S)))

    def sample(self, rng: np.random.Generator, n: int) -> tuple[np.ndarray, np.ndarray]:
        """n points ``x`` (float32 +-1, ``[n, d]``) and labels ``chi_S(x)`` (+-1)."""
        x = (1 - 2 * rng.integers(0, 2, size=(n, self.d))).astype(np.float32)
        return x, parity(x, self.S)

    def label(self, x: np.ndarray) -> np.ndarray:
        return parity(x, self.S)

    def all_inputs(self) -> tuple[np.ndarray, np.ndarray]:
        """Every point of the cube and its label (exact enumeration; d <= 22)."""
        if self.d > MAX_CUBE_D:
            raise ValueError(f"d = {self.d} is too large for exact enumeration (limit {MAX_CUBE_D})")
        x = hypercube(self.d).astype(np.float32)
        return x, parity(x, self.S)

    def sample_batch(self, rng: np.random.Generator, batch: int, T: int):
        """Harness batch: tokens ``[batch, d]``, class target at the last position only."""
        from theorylab.nn.tasks import Batch

        if T != self.d:
            raise ValueError(f"sparse parity sequences have length d = {self.d}, got T = {T}")
        x, y = self.sample(rng, batch)
        tokens = ((1 - x) // 2).astype(np.int64)
        targets = np.zeros((batch, T), dtype=np.int64)
        targets[:, -1] = (1 - y.astype(np.int64)) // 2
        mask = np.zeros((batch, T), dtype=bool)
        mask[:, -1] = True
        return Batch(tokens, targets, mask)

    def sample_batches(self, rngs, batch: int, T: int) -> list:
        """One harness batch per generator, each exactly ``sample_batch(rng, batch, T)``: the same bits are drawn
        from every generator (token ``z_i`` is the drawn bit $b_i$, $x_i = 1 - 2 b_i$) and the class is
        $\\sum_{i \\in S} b_i \\bmod 2$ (odd: $\\chi_S(x) = -1$), computed for all seeds at once in integers."""
        from theorylab.nn.tasks import Batch

        if T != self.d:
            raise ValueError(f"sparse parity sequences have length d = {self.d}, got T = {T}")
        bits = np.stack([rng.integers(0, 2, size=(batch, self.d)) for rng in rngs]).astype(
            np.int64, copy=False
        )
        targets = np.zeros(bits.shape, dtype=np.int64)
        targets[..., -1] = bits[..., list(self.S)].sum(axis=-1) % 2
        mask = np.zeros((batch, T), dtype=bool)
        mask[:, -1] = True
        return [Batch(bits[i], targets[i], mask.copy()) for i in range(len(rngs))]


def monomial_correlations(values: np.ndarray, d: int, S: Iterable[int], max_degree: int) -> dict[str, float]:
    """Mean |E[f chi_U]| over monomials U of degree 1..max_degree, split into U inside S and U not inside S.

    ``values`` are the 2^d values of f (exact over the cube, one FWHT).
    """
    from itertools import combinations

    from theorylab.boolean.fourier import fourier_coefficients, subset_mask

    S = set(S)
    coef = np.abs(fourier_coefficients(np.asarray(values, dtype=np.float64), d))
    inside, outside = [], []
    for r in range(1, max_degree + 1):
        for U in combinations(range(d), r):
            (inside if set(U) <= S else outside).append(coef[subset_mask(U, d)])
    return {"in_support": float(np.mean(inside)) if inside else 0.0, "off_support": float(np.mean(outside))}


@dataclass(frozen=True)
class HierarchicalParity:
    """Liu §4.2.7.3: a depth-D binary decision tree whose K-1 internal nodes (BFS order, node 1 the root, children
    2n and 2n+1) carry disjoint k-sparse parities ``T_n = prod of x over coordinates (n-1)k .. nk-1``; at a node go
    left if ``T_n(x) = left_on`` (default -1, Fig 4.19) and right otherwise; the leaf reached is the class ``i``
    in 1..K = 2^D (leaves numbered left to right).

    ``left_on=+1`` is the convention of the ProgressiveDistillation data (left child on node parity +1). The two
    agree on no input; they agree after mirroring the tree: ``left_on=+1`` on :meth:`mirror` ``(x)`` gives class
    ``K + 1 - i`` where ``left_on=-1`` gives ``i``."""

    D: int
    k: int
    d: int
    left_on: int = -1

    def __post_init__(self) -> None:
        for name in ("D", "k", "d"):
            _check_width(name, getattr(self, name))
        if (2**self.D - 1) * self.k > self.d:
            raise ValueError(
                f"{2**self.D - 1} disjoint {self.k}-sparse parities need d >= {(2**self.D - 1) * self.k}"
            )
        if isinstance(self.left_on, bool) or self.left_on not in (-1, 1):
            raise ValueError(f"left_on must be -1 (Fig 4.19) or +1 (the mirrored tree), got {self.left_on!r}")

    @property
    def K(self) -> int:
        return 2**self.D

    def node_parity(self, x: np.ndarray, n: int) -> np.ndarray:
        return parity(x, range((n - 1) * self.k, n * self.k))

    def label(self, x: np.ndarray) -> np.ndarray:
        """The class (1..K) of each point by walking the tree."""
        x = np.asarray(x)
        node = np.ones(x.shape[0], dtype=np.int64)
        for _ in range(self.D):
            t = np.stack([self.node_parity(x, n) for n in range(1, self.K)], axis=-1)
            node = 2 * node + (t[np.arange(len(node)), node - 1] != self.left_on)
        return node - self.K + 1

    def mirror(self, x: np.ndarray) -> np.ndarray:
        """``x`` with the coordinate block of each internal node $n$ at level $l$ ($2^l \\le n < 2^{l+1}$)
        moved to its mirror image $3 \\cdot 2^l - 1 - n$ (the tree reflected left to right)."""
        x = np.asarray(x)
        perm = np.arange(x.shape[-1])
        for n in range(1, self.K):
            m = 3 * (1 << (n.bit_length() - 1)) - 1 - n
            perm[(m - 1) * self.k : m * self.k] = np.arange((n - 1) * self.k, n * self.k)
        return x[..., perm]

    def path(self, i: int) -> list[int]:
        """v_1..v_D: the internal nodes from the root to the leaf of class i."""
        leaf = self.K + i - 1
        return [leaf >> (self.D - j) for j in range(self.D)]

    def membership(self, x: np.ndarray, i: int, printed: bool = False) -> np.ndarray:
        """``prod_j 1[c(i,j) T_{v_j}(x) > 0]``: corrected ``c(i,j) = +1`` iff bit j (from the top) of i-1 is 1;
        ``printed=True`` uses the printed rule ``c(i,j) = 1 if i >= 2^(D-j) else -1`` (both for ``left_on=-1``;
        ``left_on=+1`` flips every sign)."""
        out = np.ones(np.asarray(x).shape[0], dtype=bool)
        for j, v in enumerate(self.path(i), start=1):
            if printed:
                c = 1 if i >= 2 ** (self.D - j) else -1
            else:
                c = 1 if (i - 1) >> (self.D - j) & 1 else -1
            out &= -self.left_on * c * self.node_parity(x, v) > 0
        return out
