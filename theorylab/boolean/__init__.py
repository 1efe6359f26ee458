"""theorylab.boolean: functions on the hypercube {-1,+1}^d (exact Fourier analysis, Majority, sparse parity)."""

from theorylab.boolean.fourier import (
    characters,
    correlations,
    fourier_coefficient,
    fourier_coefficients,
    hypercube,
    majority,
    majority_coefficient,
    majority_ratio,
    parity,
    printed_majority_asymptotic,
    subset_mask,
    walsh_transform,
)
from theorylab.boolean.tasks import HierarchicalParity, SparseParity, monomial_correlations

__all__ = [
    "HierarchicalParity",
    "SparseParity",
    "characters",
    "correlations",
    "fourier_coefficient",
    "fourier_coefficients",
    "hypercube",
    "majority",
    "majority_coefficient",
    "majority_ratio",
    "monomial_correlations",
    "parity",
    "printed_majority_asymptotic",
    "subset_mask",
    "walsh_transform",
]
