"""Differential tests against the conventions of the authors' other code bases (ProgressiveDistillation's
hierarchical parity data, LM_Query_Complexity's backtracking sampler, the Dyck balance metric), each reference
written here from the convention's description."""

import numpy as np
import pytest

from theorylab.boolean import HierarchicalParity
from theorylab.boolean.fourier import hypercube


def ref_tree_class(x, D, k, left_on):
    """Walk the tree recursively: node n (root 1) reads the parity of x[(n-1)k : nk]; go to the left child
    2n on parity ``left_on``; leaves are numbered 1..2^D from the left."""
    out = []
    for row in x:
        n = 1
        for _ in range(D):
            t = int(np.prod(row[(n - 1) * k : n * k]))
            n = 2 * n if t == left_on else 2 * n + 1
        out.append(n - 2**D + 1)
    return np.array(out)


@pytest.mark.parametrize("D,k", [(2, 1), (3, 2)])
def test_hierarchical_parity_child_conventions(D, k):
    d = (2**D - 1) * k
    x = hypercube(d)
    if d > 10:  # 1024 random points (seed 0)
        x = x[np.random.default_rng(0).choice(len(x), 1024, replace=False)]
    doc, code = HierarchicalParity(D, k, d), HierarchicalParity(D, k, d, left_on=+1)
    assert np.array_equal(doc.label(x), ref_tree_class(x, D, k, -1))  # Fig 4.19: left child on -1
    assert np.array_equal(code.label(x), ref_tree_class(x, D, k, +1))  # the data's: left child on +1
    assert np.all(doc.label(x) != code.label(x))  # no input gets the same class ...
    assert np.array_equal(code.label(doc.mirror(x)), doc.K + 1 - doc.label(x))  # ... until the tree is mirrored
    assert np.array_equal(doc.mirror(doc.mirror(x)), x)
    for h in (doc, code):  # the corrected class membership agrees with the walk under both conventions
        member = np.stack([h.membership(x, i) for i in range(1, h.K + 1)], axis=1)
        assert np.array_equal(member.argmax(axis=1) + 1, h.label(x)) and (member.sum(axis=1) == 1).all()
    with pytest.raises(ValueError, match="left_on"):
        HierarchicalParity(D, k, d, left_on=0)
