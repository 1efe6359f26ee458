"""theorylab.attention.sparse_parity: explicit one-layer Transformers for sparse parity (Liu §4.2, Props 9, 10)."""

from theorylab.attention.sparse_parity.constructions import (
    SelectionTransformer,
    TrapezoidParityMLP,
    UniformTransformer,
    additive_uniform_attention_output,
    min_selection_scale,
    off_support_mass,
    prop9_printed,
    prop9_transformer,
    prop10_transformer,
)

__all__ = [
    "SelectionTransformer",
    "TrapezoidParityMLP",
    "UniformTransformer",
    "additive_uniform_attention_output",
    "min_selection_scale",
    "off_support_mass",
    "prop9_printed",
    "prop9_transformer",
    "prop10_transformer",
]
