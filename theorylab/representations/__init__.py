"""theorylab.representations: pre-trained representations and downstream heads (``002_530e12373cc142da.txt``).

``LogLinearLM`` (teacher/student log-linear models on a finite context set), heads (``LinearHead``, ``ReLUHead``,
``AnchoredHead``), anchor vectors and the Thm 3 guarantee (``anchor``), the non-vacuous instance (``recipes``), the
assumptions 1-7 and Def 2 as quantities and validators (``assumptions``).
"""

from theorylab.representations.anchor import (
    AnchorFit,
    Thm3Quantities,
    bulk_logZ,
    fit_anchor,
    kl_word_shift,
    lemma1_rhs,
    thm3_bound,
    thm3_quantities,
)
from theorylab.representations.heads import AnchoredHead, LinearHead, ReLUHead
from theorylab.representations.loglinear import LogLinearLM
from theorylab.representations.recipes import AnchorRecipe, anchor_recipe, perturbed_student

__all__ = [
    "AnchorFit",
    "AnchorRecipe",
    "AnchoredHead",
    "LinearHead",
    "LogLinearLM",
    "ReLUHead",
    "Thm3Quantities",
    "anchor_recipe",
    "bulk_logZ",
    "fit_anchor",
    "kl_word_shift",
    "lemma1_rhs",
    "perturbed_student",
    "thm3_bound",
    "thm3_quantities",
]
