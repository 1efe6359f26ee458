"""theorylab.algebra: transformation semigroups, permutation groups, solvability, Krohn-Rhodes holonomy."""

from theorylab.algebra.groups import CompositionFactor, PermutationGroup, permutation_group
from theorylab.algebra.holonomy import CascadeComponent, HolonomyCascade, holonomy_decomposition
from theorylab.algebra.semigroup import (
    MaximalSubgroup,
    NotSolvableError,
    TransformationSemigroup,
    check_solvable,
    is_aperiodic,
    is_group,
    is_permutation_reset,
    is_solvable,
    maximal_subgroups,
    semigroup_size,
    transformation_semigroup,
)

__all__ = [
    "CascadeComponent",
    "CompositionFactor",
    "HolonomyCascade",
    "MaximalSubgroup",
    "NotSolvableError",
    "PermutationGroup",
    "TransformationSemigroup",
    "check_solvable",
    "holonomy_decomposition",
    "is_aperiodic",
    "is_group",
    "is_permutation_reset",
    "is_solvable",
    "maximal_subgroups",
    "permutation_group",
    "semigroup_size",
    "transformation_semigroup",
]
