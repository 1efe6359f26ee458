"""Thm 3's bookkeeping on hand instances whose numbers are exact: the logits of the two words of interest are
the context's two coordinates, ``a = (1, -1)``, ``b = 0`` and a zero anchor (the bulk is one zero atom, so
``log Z_bulk = 0``), hence ``f = C[:, 0] - C[:, 1]``, ``gamma = min_DS |f*|``, ``Gamma = gamma / 2`` and
``eps_b = 0``: the hypotheses' labels, the open end of ``Gamma < 6`` and the sign counts are pinned."""

import numpy as np

from theorylab.representations import AnchoredHead, LogLinearLM, thm3_quantities

ATOMS = np.array([[1.0, 0.0], [0.0, 1.0], [0.0, 0.0]])
HEAD = AnchoredHead(np.array([1.0, -1.0]), np.zeros(2), anchor_values=np.zeros(3))
W = np.array([0.5, 0.25, 0.25])  # dyadic: the probability sums below are exact


def _quantities(teacher_contexts, student_contexts=None):
    teacher = LogLinearLM(np.array(teacher_contexts, dtype=float), ATOMS)
    student = teacher if student_contexts is None else LogLinearLM(np.array(student_contexts, float), ATOMS)
    return thm3_quantities(teacher, student, HEAD, HEAD, np.array([2]), W)


def test_gamma_must_be_strictly_below_six() -> None:
    for margin, failed in ((11.5, ()), (12.0, ("8 eps_b < Gamma < 6",)), (13.0, ("8 eps_b < Gamma < 6",))):
        q = _quantities([[margin, 0.0], [0.0, margin], [margin + 1, 0.0]])
        assert q.gamma == margin and q.Gamma == margin / 2 and q.eps_b == 0.0
        assert q.failed == failed and q.hypotheses_hold == (failed == ()), (margin, q.failed)


def test_a_zero_margin_is_reported_by_name_and_counted_only_as_a_sign_error() -> None:
    # context 1 has f* = 0 (a zero margin); the student gives it f = -1, and flips context 2 (f* = 2, f = -2)
    q = _quantities([[3.0, 0.0], [1.0, 1.0], [2.0, 0.0]], [[3.0, 0.0], [0.0, 1.0], [0.0, 2.0]])
    assert q.gamma == 0.0 and q.failed == ("Asm 3 (margin > 0)", "8 eps_b < Gamma < 6")
    assert q.eps_cls == 0.25  # strict flips only: context 2
    assert q.eps_sign == 0.5  # f f* <= 0: contexts 1 and 2
