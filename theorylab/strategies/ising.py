"""Hypothesis strategies for Ising models (both pair conventions, random graphs) and mask laws.

A seed and the shape are drawn by hypothesis; the numbers are built with numpy. Graphs keep at least one edge and
couplings are bounded away from 0 (|J| >= 0.1), so trivial product measures are not drawn.
"""

from __future__ import annotations

from itertools import combinations

import numpy as np
from hypothesis import strategies as st

from theorylab.ising.model import CONVENTIONS, IsingModel

_seeds = st.integers(min_value=0, max_value=2**32 - 1)


def random_ising(rng: np.random.Generator, N: int, convention: str, scale: float = 1.5) -> IsingModel:
    """Random graph (each pair an edge w.p. 1/2, at least one edge), h and J uniform in [-scale, scale]."""
    pairs = list(combinations(range(N), 2))
    on = rng.random(len(pairs)) < 0.5
    on[rng.integers(len(pairs))] = True
    J = np.zeros((N, N))
    for (i, j), e in zip(pairs, on, strict=True):
        if e:
            v = rng.uniform(0.1, scale) * rng.choice([-1, 1])
            J[i, j] = J[j, i] = v
    return IsingModel(rng.uniform(-scale, scale, N), J, convention)


@st.composite
def ising_models(draw, min_n: int = 2, max_n: int = 5, scale: float = 1.5) -> IsingModel:
    """Random Ising models with N in [min_n, max_n], either convention."""
    N = draw(st.integers(min_n, max_n))
    convention = draw(st.sampled_from(CONVENTIONS))
    return random_ising(np.random.default_rng(draw(_seeds)), N, convention, scale)


@st.composite
def mask_laws(draw, N: int, adaptive: bool = False):
    """(masks, weights): a random set of nonempty subsets covering [N] with Dirichlet weights (per state if
    ``adaptive``)."""
    rng = np.random.default_rng(draw(_seeds))
    subsets = [K for r in range(1, N + 1) for K in combinations(range(N), r)]
    chosen = [K for K in subsets if rng.random() < 0.4]
    chosen += [(i,) for i in range(N) if not any(i in K for K in chosen)]
    shape = (2**N, len(chosen)) if adaptive else (len(chosen),)
    w = rng.dirichlet(np.ones(len(chosen)), size=shape[:-1] or None)
    return chosen, np.asarray(w).reshape(shape)
