"""Hypothesis strategies for stochastic matrices, HMM / G-HMM parameters and CP factors.

Each strategy draws a seed and a few shape parameters with hypothesis and builds the object with numpy,
rejecting ill-conditioned draws (see :mod:`theorylab.hmm.constructions`): plain Sinkhorn of a uniform matrix
is nearly $J/k$, so doubly stochastic matrices carry a dominant permutation component.
"""

from __future__ import annotations

import numpy as np
from hypothesis import strategies as st

__all__ = [
    "column_stochastic_matrices",
    "doubly_stochastic_matrices",
    "unit_means",
    "hmms",
    "ghmms",
    "rotations_fixing_ones",
    "permutations",
    "nonidentity_permutations",
    "cp_factors",
]

_seeds = st.integers(min_value=0, max_value=2**32 - 1)


def _rng(seed: int) -> np.random.Generator:
    return np.random.default_rng(seed)


@st.composite
def column_stochastic_matrices(draw, d: int, k: int, alphas=(0.3, 0.5, 1.0)) -> np.ndarray:
    """d x k column-stochastic matrices with Dirichlet(alpha) columns, cond <= 1e3, row sums >= 1e-3."""
    from theorylab.hmm.constructions import random_emission

    return random_emission(d, k, _rng(draw(_seeds)), alpha=draw(st.sampled_from(alphas)))


@st.composite
def doubly_stochastic_matrices(draw, k: int, min_sv: float = 0.05) -> np.ndarray:
    """k x k doubly stochastic $\\lambda\\Pi+(1-\\lambda)\\mathrm{Sinkhorn}(U)$, $\\sigma_{\\min}\\ge$
    ``min_sv``."""
    from theorylab.hmm.constructions import random_doubly_stochastic

    return random_doubly_stochastic(k, _rng(draw(_seeds)), min_sv=min_sv)


@st.composite
def unit_means(draw, d: int, k: int) -> np.ndarray:
    """d x k unit-norm columns, cond <= 100, pairwise distances >= 0.2."""
    from theorylab.hmm.constructions import random_unit_means

    return random_unit_means(d, k, _rng(draw(_seeds)))


@st.composite
def _dims(draw, min_d: int, max_d: int, min_k: int, max_k: int | None):
    d = draw(st.integers(min_value=max(min_d, min_k), max_value=max_d))
    k = draw(st.integers(min_value=min_k, max_value=d if max_k is None else min(d, max_k)))
    return d, k


@st.composite
def hmms(draw, min_d: int = 2, max_d: int = 6, min_k: int = 2, max_k: int | None = None):
    """Random discrete HMMs satisfying Assumptions 5-7 (with margins)."""
    from theorylab.hmm import HMM

    d, k = draw(_dims(min_d, max_d, min_k, max_k))
    return HMM(draw(column_stochastic_matrices(d, k)), draw(doubly_stochastic_matrices(k)))


@st.composite
def ghmms(draw, min_d: int = 2, max_d: int = 5, min_k: int = 2, max_k: int | None = None):
    """Random G-HMMs satisfying Assumptions 5, 8, 9 (with margins)."""
    from theorylab.hmm import GHMM

    d, k = draw(_dims(min_d, max_d, min_k, max_k))
    return GHMM(draw(unit_means(d, k)), draw(doubly_stochastic_matrices(k)))


@st.composite
def rotations_fixing_ones(draw, k: int, max_angle: float = np.pi, min_angle: float = 0.1) -> np.ndarray:
    """Orthogonal $R=\\exp(\\theta VAV^\\top)$ with $R\\mathbb 1=\\mathbb 1$ (k >= 3) and
    $|\\theta|\\in$ [``min_angle``, ``max_angle``]: the angle is drawn away from 0 (at $\\theta=0$, $R=I$ and
    the rotation pair is the model itself, a trivial instance)."""
    from theorylab.hmm.constructions import rotation_fixing_ones

    if not 0 <= min_angle <= max_angle:
        raise ValueError(f"need 0 <= min_angle <= max_angle, got {min_angle}, {max_angle}")
    sign = draw(st.sampled_from([-1.0, 1.0]))
    theta = sign * draw(st.floats(min_value=min_angle, max_value=max_angle, allow_nan=False))
    return rotation_fixing_ones(k, theta, _rng(draw(_seeds)))


@st.composite
def nonidentity_permutations(draw, k: int) -> np.ndarray:
    """Permutations of ``range(k)`` other than the identity (k >= 2): a drawn identity is replaced by the cyclic
    shift, so no draw is the trivial relabeling."""
    if k < 2:
        raise ValueError(f"a non-identity permutation needs k >= 2, got {k}")
    p = np.asarray(draw(st.permutations(list(range(k)))), dtype=int)
    return np.roll(p, 1) if np.array_equal(p, np.arange(k)) else p


@st.composite
def permutations(draw, k: int) -> np.ndarray:
    return np.asarray(draw(st.permutations(list(range(k)))), dtype=int)


@st.composite
def cp_factors(draw, min_rank: int = 2, max_rank: int = 4, max_dim: int = 7):
    """Gaussian factors (A, B, C) with dims >= rank (full Kruskal rank almost surely, cond <= 50)."""
    R = draw(st.integers(min_value=min_rank, max_value=max_rank))
    dims = [draw(st.integers(min_value=R, max_value=max(R, max_dim))) for _ in range(3)]
    rng = _rng(draw(_seeds))
    while True:
        mats = [rng.standard_normal((n, R)) for n in dims]
        if max(np.linalg.cond(X) for X in mats) <= 50:
            return tuple(mats)
