"""(d, k)-sparse parity (Liu §4.2, Def. 23 of ``001_6a230b9a9faf2198.txt``): x ~ Unif{-1,+1}^d, y = chi_S(x).

As a harness task the input is the length-d token sequence ``z_i = (1 - x_i) / 2`` (token 0 is +1, token 1 is -1)
and the 2-class target sits at the last position: class 0 when chi_S(x) = +1, class 1 when chi_S(x) = -1 (the
thesis labels them 1 and 2). This module does not import torch.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

import numpy as np

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
            raise ValueError(f"k must be an int >= 0, got {self.k!r}")
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
