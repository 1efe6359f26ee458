"""Explicit Transformers that simulate semiautomata (Liu et al., "Transformers learn shortcuts to automata").

* :func:`compile_log_depth` (Theorem 10): any semiautomaton, depth $\\lceil\\log_2 T\\rceil$.
* :func:`compile_constant_depth` (Theorem 11): solvable semiautomata, depth independent of $T$.
* :func:`compile_gridworld` (Theorem 12): the gridworld with 2 attention layers.

Each returns a :class:`CompiledTransformer` with ``.depth``, ``.width``, ``.n_heads``, ``.max_weight``,
``forward(words) -> states`` and ``to_torch()``. The gadget lemmas live in :mod:`.gadgets`.
"""

from theorylab.automata.constructions.base import CompiledTransformer, NotSolvableError
from theorylab.automata.constructions.constant_depth import (
    Cascade,
    compile_cascade,
    compile_constant_depth,
    is_permutation_reset,
    permutation_reset_cascade,
)
from theorylab.automata.constructions.gadgets import memory_unit, mod_counter
from theorylab.automata.constructions.gridworld import algorithm1, compile_gridworld
from theorylab.automata.constructions.log_depth import compile_log_depth

__all__ = [
    "Cascade",
    "CompiledTransformer",
    "NotSolvableError",
    "algorithm1",
    "compile_cascade",
    "compile_constant_depth",
    "compile_gridworld",
    "compile_log_depth",
    "is_permutation_reset",
    "memory_unit",
    "mod_counter",
    "permutation_reset_cascade",
]
