"""Claim checks of the hierarchical parity setting of Figs 4.19-4.20 (Liu thesis §4.2.7.3): exact Fourier structure."""

from __future__ import annotations

from fractions import Fraction as F

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from theorylab.boolean import HierarchicalParity
from theorylab.boolean.hierarchy import class_indicator_node_coefficients, relevant_coordinates
from theorylab.testing import rejects, trivial

FIG_4_20 = HierarchicalParity(
    3, 5, 100
)  # 8 classes, T_1 = x1..x5, T_2 = x6..x10, ... (BFS), x36..x100 irrelevant
PRINTED_RELEVANT = tuple(range(1, 11)) + tuple(range(16, 21))  # "x1..x5, x6..x10, x16..x20 at levels 3, 2, 1"


def fig420_verdict(coeffs: dict[tuple[int, ...], F]) -> bool:
    """Class 1 of Fig 4.20: prod over the path {1, 2, 4} of (1 - T_n)/2, i.e. coefficient (-1)^|A|/8 on every
    subset A of the path and nothing else."""
    path = (1, 2, 4)
    expected = {
        tuple(n for j, n in enumerate(path) if mask >> j & 1): F((-1) ** bin(mask).count("1"), 8)
        for mask in range(8)
    }
    return coeffs == expected


@pytest.mark.claim("distill.fig4.20_features", tier="exact")
def test_fig420_class1_relevant_features(measure, rng):
    coeffs = class_indicator_node_coefficients(FIG_4_20, 1)
    assert fig420_verdict(coeffs)
    assert relevant_coordinates(FIG_4_20, 1) == PRINTED_RELEVANT
    assert max(relevant_coordinates(FIG_4_20, c)[-1] for c in range(1, 9)) == 35  # x36..x100 never matter
    # lowest degree of a non-constant monomial with nonzero correlation: k = 5 (degree-1/2 correlations are 0)
    assert min(5 * len(A) for A in coeffs if A) == 5
    # the node-parity expansion equals the tree walk on seeded random inputs (integers after x8: exact)
    x = rng.choice(np.array([-1, 1], dtype=np.int8), size=(4096, 100))
    T = np.stack([FIG_4_20.node_parity(x, n) for n in range(1, 8)], axis=1).astype(np.int64)
    expansion = sum(int(8 * v) * np.prod(T[:, [n - 1 for n in A]], axis=1) for A, v in coeffs.items())
    assert np.array_equal(expansion, 8 * (FIG_4_20.label(x) == 1))
    # flipping any irrelevant coordinate never changes the label
    flipped = x.copy()
    flipped[:, 35:] *= -1
    assert np.array_equal(FIG_4_20.label(flipped), FIG_4_20.label(x))
    measure("class1_relevant_coordinates", list(relevant_coordinates(FIG_4_20, 1)))
    measure("class1_nonzero_node_coefficients", len(coeffs))


@pytest.mark.claim("distill.fig4.20_features", tier="exact", control=True)
def test_fig420_controls():
    # class 2 (same nodes, other signs), class 3 (path {1, 2, 5}) and the mirrored tree all fail the verdict
    assert not fig420_verdict(class_indicator_node_coefficients(FIG_4_20, 2))
    assert not fig420_verdict(class_indicator_node_coefficients(FIG_4_20, 3))
    assert relevant_coordinates(FIG_4_20, 3) != PRINTED_RELEVANT
    mirrored = class_indicator_node_coefficients(HierarchicalParity(3, 5, 100, left_on=1), 1)
    assert not fig420_verdict(mirrored) and set(mirrored.values()) == {F(1, 8)}


@pytest.mark.claim("distill.fig4.20_features", tier="exact", control=True)
def test_hierarchy_rejects_bad_input():
    rejects(lambda: class_indicator_node_coefficients(FIG_4_20, 0), "class c must be an integer in 1..8")
    rejects(lambda: class_indicator_node_coefficients(FIG_4_20, True), "class c must be an integer in 1..8")
    rejects(
        lambda: class_indicator_node_coefficients((3, 5, 100), 1),
        "task must be a HierarchicalParity",
        TypeError,
    )
    rejects(
        lambda: class_indicator_node_coefficients(HierarchicalParity(5, 1, 31), 1),
        "at most 15 internal nodes",
    )


def path_product_coefficients(task: HierarchicalParity, c: int) -> dict[tuple[int, ...], F]:
    """1[y = c] = prod over the path of (1 + s_n T_n)/2, s_n = +1 where the walk goes the way T_n = +1 sends it:
    coefficient 2^-D prod_{n in A} s_n on each subset A of the path (derived from the tree walk, independently of
    the enumeration in ``class_indicator_node_coefficients``)."""
    node, path, signs = 1, [], []
    for j in range(task.D):
        bit = (c - 1) >> (task.D - 1 - j) & 1  # 0: left child, 1: right child
        path.append(node)
        signs.append((1 if bit else -1) * -task.left_on)
        node = 2 * node + bit
    out = {}
    for mask in range(2**task.D):
        A = tuple(n for j, n in enumerate(path) if mask >> j & 1)
        out[tuple(sorted(A))] = F(int(np.prod([s for j, s in enumerate(signs) if mask >> j & 1])), 2**task.D)
    return out


@st.composite
def hierarchical_tasks(draw):
    D, k = draw(st.integers(2, 3)), draw(st.integers(1, 3))  # D = 1 is a single parity: trivial
    d = (2**D - 1) * k + draw(st.integers(0, 4))
    task = HierarchicalParity(D, k, d, left_on=draw(st.sampled_from((-1, 1))))
    return task, draw(st.integers(1, task.K))


@pytest.mark.claim("distill.fig4.20_features", tier="property")
@given(drawn=hierarchical_tasks())
def test_every_class_is_the_product_over_its_path(drawn):
    # a depth-1 tree is a single parity (nothing hierarchical): the trivial instance
    task, c = drawn
    trivial(task.D == 1)
    coeffs = class_indicator_node_coefficients(task, c)
    assert coeffs == path_product_coefficients(task, c)
    assert len(relevant_coordinates(task, c)) == task.D * task.k


@pytest.mark.claim("distill.fig4.20_features", tier="property", control=True)
@given(drawn=hierarchical_tasks())
def test_control_neighbouring_leaf_differs(drawn):
    # the sibling leaf (same path, last turn flipped) has a different expansion: the check tells leaves apart
    task, c = drawn
    trivial(task.D == 1)
    sibling = c + 1 if c % 2 else c - 1
    assert class_indicator_node_coefficients(task, sibling) != path_product_coefficients(task, c)
