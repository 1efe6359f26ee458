"""Claim check of paper 000's Table 4 (``000_7523275b422019f8.txt``, B.3-B.4): which of its smaller transformer
shapes B.4's replication-and-deepening embedding maps onto its largest shape, as printed and repaired, and an exact
function-preservation check of the repaired embedding on a scaled-down analogue."""

from __future__ import annotations

import copy
from math import lcm

import numpy as np
import pytest

from theorylab.landscape.embed import deepen_transformer, random_transformer, transformer_forward
from theorylab.landscape.embed_shapes import (
    TABLE3,
    TABLE4,
    Shape,
    embedding_plan,
    resize_intermediate,
    widen_transformer_by,
)
from theorylab.testing import rejects

# LayerNorm eps = 0 makes the embeddings exact; outputs are O(1) sums of O(10) terms: round-off ~1e-14
TOL = 1e-12


@pytest.mark.claim("flat.claim.size-interaction", tier="exact")
def test_table4_shapes_embed_only_with_the_repaired_intermediate_width(measure) -> None:
    *small, large = TABLE4
    assert lcm(*(s.d_model for s in small)) == large.d_model == 1920 and large.n_head == 1920 // 64
    assert all(s.d_model == 64 * s.n_head for s in TABLE4)  # head dimension 64 throughout
    plans = [embedding_plan(s, large) for s in small]
    assert [p.r for p in plans] == [15, 10, 6, 5, 3, 2]
    # the #layers column is realisable: every small model has at most 20 blocks (appended with O = U = 0)
    assert [p.added_layers for p in plans] == [16, 15, 14, 13, 8, 4]
    # the d-inter column is not, by the printed recipe: replication makes it r d_i, never 5120
    assert [p.r * s.d_inter for p, s in zip(plans, small, strict=True)] == [
        7680,
        7680,
        6144,
        10240,
        9216,
        8192,
    ]
    assert not any(p.printed for p in plans) and all(p.repaired for p in plans)
    # the column is Table 3's d-inter column (rows 2-8), and breaks B.4.2's d-inter = 4 d_h in rows 3-7
    assert [s.d_inter for s in TABLE4] == [s.d_inter for s in TABLE3[1:8]]
    assert [s.d_inter == 4 * s.d_model for s in TABLE4] == [True, True, False, False, False, False, False]
    measure("r_times_d_inter", [p.r * s.d_inter for p, s in zip(plans, small, strict=True)])


def _small_and_embedded():
    """Small: d 4, 2 heads of size 2, d-inter 3, 2 blocks, affine LayerNorm. Large: d 12, 6 heads, d-inter 7 (not
    r d_i = 9), 3 blocks: replication by r = 3, merged and padded intermediate, one appended block (with the final
    LayerNorm affine moved up, the repair of `flat.cons.tfm_deepen`)."""
    rng = np.random.default_rng(0)
    p = random_transformer(7, 4, 2, 2, 3, 2, rng)
    plan = embedding_plan(Shape(4, 2, 2, 3), Shape(12, 6, 3, 7))
    assert (plan.r, plan.added_layers, plan.printed, plan.repaired) == (3, 1, False, True)
    wide = widen_transformer_by(p, plan.r)
    big = deepen_transformer(resize_intermediate(wide, 7), plan.added_layers, "fixed")
    return p, wide, big


@pytest.mark.claim("flat.claim.size-interaction", tier="exact")
def test_repaired_embedding_preserves_the_function() -> None:
    p, wide, big = _small_and_embedded()
    tokens = np.array([0, 3, 5, 1, 6, 2])
    f = transformer_forward(p, tokens)
    assert np.abs(transformer_forward(wide, tokens) - f).max() <= TOL
    assert big["WE"].shape == (7, 12) and len(big["blocks"]) == 3
    assert all(
        B["W"].shape == (12, 7) and B["U"].shape == (7, 12) and B["Q"].shape == (6, 12, 2)
        for B in big["blocks"]
    )
    assert np.abs(transformer_forward(big, tokens) - f).max() <= TOL


@pytest.mark.claim("flat.claim.size-interaction", tier="exact", control=True)
def test_control_truncating_the_intermediate_layer_changes_the_function() -> None:
    p, wide, _ = _small_and_embedded()
    tokens = np.array([0, 3, 5, 1, 6, 2])
    assert wide["blocks"][0]["W"].shape == (12, 9)  # the printed recipe: r d_i = 9, not the target 7
    cut = copy.deepcopy(wide)
    for B in cut["blocks"]:  # keep 7 of the 9 intermediate neurons, without merging their output weights
        B["W"], B["b"], B["U"] = B["W"][:, :7], B["b"][:7], B["U"][:7]
    assert np.abs(transformer_forward(cut, tokens) - transformer_forward(p, tokens)).max() > 0.1
    rejects(lambda: resize_intermediate(wide, 2), r"block 0 has 3 distinct intermediate neurons")
    assert not embedding_plan(Shape(128, 2, 4, 512), Shape(1920, 30, 3, 5120)).repaired  # too few layers
