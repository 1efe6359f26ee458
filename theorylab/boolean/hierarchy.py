r"""Exact Fourier structure of hierarchical parity classes (Liu §4.2.7.3, Figs 4.19-4.20).

The label is a function $g$ of the $K-1$ node parities $\mathcal T_n(x)$; the nodes use disjoint coordinate sets, so
$\prod_{n\in A}\mathcal T_n$ is the character $\chi_{\cup_{n\in A}S_n}$ and the Fourier expansion of
$\mathbb 1[y(x)=c]$ is the expansion of $g_c$ on $\{\pm1\}^{K-1}$ with node set $A$ mapped to $\cup_{n\in A}S_n$
(degree $k|A|$). For class $c$ only the subsets of its root-to-leaf path carry weight, each $\pm2^{-D}$.
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np

from theorylab.boolean.fourier import fourier_coefficients
from theorylab.boolean.tasks import HierarchicalParity

#: Largest number of internal nodes handled (2^(K-1) node patterns are enumerated).
MAX_NODES = 15

__all__ = ["MAX_NODES", "class_indicator_node_coefficients", "relevant_coordinates"]


def _inputs_for_patterns(task: HierarchicalParity) -> np.ndarray:
    """One input per sign pattern of the node parities (bit n-1 of the index set: node n is -1)."""
    m = task.K - 1
    idx = np.arange(2**m, dtype=np.int64)[:, None]
    signs = (1 - 2 * ((idx >> np.arange(m)[None, :]) & 1)).astype(np.int8)
    x = np.ones((2**m, task.d), dtype=np.int8)
    x[:, np.arange(m) * task.k] = signs  # the first coordinate of node n carries T_n, the others are +1
    return x


def class_indicator_node_coefficients(task: HierarchicalParity, c: int) -> dict[tuple[int, ...], Fraction]:
    r"""Nonzero Fourier coefficients of $\mathbb 1[y=c]$, keyed by the node tuple $A$ (1-based, BFS order): the
    coefficient of $\chi_{\cup_{n\in A}S_n}$, exact."""
    if not isinstance(task, HierarchicalParity):
        raise TypeError(f"task must be a HierarchicalParity, got {type(task).__name__}")
    if isinstance(c, bool) or not isinstance(c, (int, np.integer)) or not 1 <= c <= task.K:
        raise ValueError(f"class c must be an integer in 1..{task.K}, got {c!r}")
    m = task.K - 1
    if m > MAX_NODES:
        raise ValueError(f"at most {MAX_NODES} internal nodes are enumerated, got {m} (D = {task.D})")
    values = (task.label(_inputs_for_patterns(task)) == c).astype(np.int64)
    coeffs = fourier_coefficients(values, m, exact=True)
    out = {}
    for mask, value in enumerate(coeffs):
        if value != 0:
            out[tuple(n + 1 for n in range(m) if mask >> n & 1)] = Fraction(value)
    return out


def relevant_coordinates(task: HierarchicalParity, c: int) -> tuple[int, ...]:
    """The 1-based coordinates $x_i$ that $\\mathbb 1[y=c]$ depends on (union of its nodes' parities)."""
    nodes = sorted({n for A in class_indicator_node_coefficients(task, c) for n in A})
    return tuple(i + 1 for n in nodes for i in range((n - 1) * task.k, n * task.k))
