"""Values of the algebra and construction layers that no claim check reads, pinned on small instances (each one
was the only difference of a surviving mutant: an error message, a default argument, a height label, an edge case
and a construction's recorded bounds)."""

from __future__ import annotations

import numpy as np
import pytest

from theorylab.algebra.cascade import Cascade
from theorylab.algebra.groups import PermutationGroup
from theorylab.algebra.holonomy import holonomy_decomposition
from theorylab.automata import zoo
from theorylab.automata.constructions.gadgets import circle_gap, memory_unit


def test_cascade_from_functions_names_a_decode_that_does_not_commute():
    """A 3-cycle read through decode = [x != 0]: the emulated state 1 (x = 1 or 2) goes to 1 or to 0."""
    with pytest.raises(
        ValueError, match=r"decode does not commute with the transition \(state 1, symbol 0\)"
    ):
        Cascade.from_functions([[[1, 2, 0]]], [1], lambda i, x, s: 0, (0,), lambda x: int(x[0] != 0), 1)


def test_conjugacy_classes_of_the_whole_group_by_default():
    """S4: classes of sizes 1, 3, 6, 6, 8 (identity, double transpositions, transpositions, 4-cycles, 3-cycles)."""
    g = PermutationGroup([[1, 0, 2, 3], [1, 2, 3, 0]])
    classes = g.conjugacy_classes()
    assert sorted(len(c) for c in classes) == [1, 3, 6, 6, 8]
    assert sorted(np.concatenate(classes).tolist()) == list(range(24))


@pytest.mark.parametrize(
    "name, aut, pairs",
    [
        ("memory3", zoo.memory(3), [(1, 1)]),
        ("grid4", zoo.gridworld(4), [(1, 3), (2, 2), (3, 1)]),
        ("random(5,3,1)", zoo.random(5, 3, 1), [(1, 4), (2, 3), (3, 2), (4, 1)]),
    ],
)
def test_holonomy_levels_handle_heights_top_down(name, aut, pairs):
    """Level l of the decomposition holds the classes of height H - l + 1 (the lowest level height 1)."""
    assert sorted({(c.level, c.height) for c in holonomy_decomposition(aut).components}) == pairs


def test_circle_gap_of_one_position_has_no_pairs():
    gap = circle_gap(1)
    assert gap["max_inner"] == -np.inf and gap["max_abs_inner"] == 0.0
    assert circle_gap(4)["max_abs_inner"] == pytest.approx(1.0)  # t and t + 2 are antipodal


def test_memory_unit_records_lemma16_bounds():
    net = memory_unit(3, 8)
    assert net.info["claim"] == "automata.lemma16_memory_unit"
    bounds = net.info["bounds"]
    assert (bounds["depth"], bounds["d"], bounds["n_heads"], bounds["mlp_width"]) == (1, 4, 1, 12)
    assert bounds["max_weight"] == pytest.approx(2 * 8 * np.log(24), rel=1e-15)
