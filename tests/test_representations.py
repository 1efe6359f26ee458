"""Bad input and API behaviour of theorylab.representations."""

from __future__ import annotations

import numpy as np
import pytest

from theorylab.counterexamples import generate
from theorylab.representations import (
    AnchoredHead,
    LogLinearLM,
    ReLUHead,
    anchor_recipe,
    bulk_logZ,
    fit_anchor,
    kl_word_shift,
    lemma1_rhs,
    thm3_bound,
)


def _lm(rng, N=5, n=4, d=3):
    return LogLinearLM(rng.normal(size=(N, d)), rng.normal(size=(n, d)))


def test_loglinear_bad_input(rng):
    with pytest.raises(ValueError, match="dimension"):
        LogLinearLM(np.ones((3, 2)), np.ones((4, 3)))
    with pytest.raises(ValueError, match="NaN"):
        LogLinearLM(np.full((3, 2), np.nan), np.ones((4, 2)))
    with pytest.raises(ValueError, match="2 words"):
        LogLinearLM(np.ones((3, 2)), np.ones((1, 2)))
    with pytest.raises(ValueError, match="weights"):
        LogLinearLM(np.ones((3, 2)), np.ones((4, 2)), weights=[0.5, 0.5, 0.5])
    m = _lm(rng)
    with pytest.raises(ValueError, match="word t"):
        m.shift_word(9, 1.0)
    with pytest.raises(ValueError, match="tau"):
        m.shift_contexts(np.ones(7))
    with pytest.raises(ValueError, match="share"):
        m.kl_to(_lm(rng, N=6))
    with pytest.raises(TypeError):
        m.kl_to("teacher")


def test_shifts_preserve_or_lower(rng):
    m = _lm(rng)
    assert np.allclose(m.shift_contexts(rng.normal(size=5)).probs(), m.probs())
    assert m.kl_to(m.shift_word(1, 2.0)) == pytest.approx(
        float(m.weights @ kl_word_shift(m.probs()[:, 1], 2.0))
    )


def test_heads_bad_input(rng):
    m = _lm(rng)
    with pytest.raises(ValueError, match="equal length"):
        ReLUHead([1.0, 2.0], [0.0])(m)
    with pytest.raises(ValueError, match="words"):
        ReLUHead(np.ones(6), np.zeros(6))(m)
    with pytest.raises(ValueError, match="v0 or anchor_values"):
        AnchoredHead([1.0], [0.0])(m)
    with pytest.raises(ValueError, match="dimension"):
        AnchoredHead([1.0], [0.0], v0=np.ones(5))(m)


def test_anchor_bad_input(rng):
    m = _lm(rng)
    with pytest.raises(ValueError, match="bulk"):
        bulk_logZ(m, np.array([0, 0]))
    with pytest.raises(ValueError, match="k must"):
        bulk_logZ(m, 4)
    with pytest.raises(ValueError, match="target"):
        fit_anchor(m, np.ones(3))
    with pytest.raises(ValueError, match="constant"):
        thm3_bound(1e-3, 0.5, 0.2, 0.25, constant=300)
    with pytest.raises(ValueError):
        thm3_bound(-1.0, 0.5, 0.2, 0.25)
    assert thm3_bound(1e-3, 0.5, 0.2, 0.25, 1152) == pytest.approx(4 * thm3_bound(1e-3, 0.5, 0.2, 0.25, 288))
    with pytest.raises(ValueError):
        lemma1_rhs(1.5, 2, [0.0], 0.0, 0.25)
    with pytest.raises(ValueError):
        kl_word_shift(1.5, 1.0)
    with pytest.raises(ValueError):
        anchor_recipe(n_words=2)
    with pytest.raises(ValueError, match="a1 > 0 > a2"):
        anchor_recipe(a=(1.0, 1.0))


def test_bulk_topk_matches_explicit(rng):
    m = _lm(rng, n=6)
    z = m.logits()
    order = np.argsort(-z, axis=1)
    explicit = np.array([np.log(np.exp(z[i, order[i, 2:]]).sum()) for i in range(5)])
    assert np.allclose(bulk_logZ(m, 2), explicit)


def test_anchor_generator_registered():
    assert set(generate("anchor.B1")) == {"z", "a", "b", "s"}
