"""theorylab.algebra: transformation semigroups, permutation groups, solvability, cascades, Krohn-Rhodes
holonomy.

One permutation-group type (:class:`PermutationGroup`, product ``a * b`` = apply ``a``, then ``b``; table-free
Schreier-Sims for order, membership, solvability and composition factors) and one cascade type
(:class:`Cascade`) for the whole library. The bottom floor: it takes transition tables (a
:class:`Semiautomaton`, or a plain ``delta[symbol, state]`` array) and never imports ``theorylab.automata``.
"""

from theorylab.algebra.cascade import Cascade, CascadeComponent, HolonomyCascade, permutation_reset_cascade
from theorylab.algebra.groups import (
    CAYLEY_LIMIT,
    CompositionFactor,
    GroupTooLargeError,
    PermutationGroup,
    permutation_group,
)
from theorylab.algebra.holonomy import holonomy_decomposition
from theorylab.algebra.semiautomaton import Semiautomaton
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
    "CAYLEY_LIMIT",
    "Cascade",
    "CascadeComponent",
    "GroupTooLargeError",
    "CompositionFactor",
    "HolonomyCascade",
    "MaximalSubgroup",
    "NotSolvableError",
    "PermutationGroup",
    "Semiautomaton",
    "TransformationSemigroup",
    "check_solvable",
    "holonomy_decomposition",
    "is_aperiodic",
    "is_group",
    "is_permutation_reset",
    "is_solvable",
    "maximal_subgroups",
    "permutation_group",
    "permutation_reset_cascade",
    "semigroup_size",
    "transformation_semigroup",
]
