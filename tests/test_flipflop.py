"""Library tests of theorylab.languages.flipflop: validation of inputs and small exact cases."""

from fractions import Fraction

import numpy as np
import pytest

from theorylab.languages import flipflop as ff

EYE4 = tuple(tuple(int(i == j) for j in range(4)) for i in range(4))
E3 = ((1, 0, 0), (0, 1, 0), (0, 0, 1))


def test_sampler_and_counts_reject_bad_parameters():
    rng = np.random.default_rng(0)
    with pytest.raises(ValueError, match="even length"):
        ff.sample_ffl(rng, 2, 7, 0.1, 0.1, 0.8)
    with pytest.raises(ValueError, match="probability vector"):
        ff.sample_ffl(rng, 2, 8, float("nan"), 0.1, 0.8)
    with pytest.raises(ValueError, match="probability vector"):
        ff.sample_ffl(rng, 2, 8, 0.5, 0.5, 0.5)
    with pytest.raises(ValueError, match="p_read"):
        ff.expected_reads(8, 1.5)
    with pytest.raises(ValueError, match="exact probability vector"):
        ff.enumerate_ffl(6, (Fraction(1, 2), Fraction(1, 2), Fraction(1, 2)))


def test_is_valid_is_a_predicate_on_integer_token_arrays():
    assert ff.is_valid(ff.from_text("w1i0r1"))[0]
    assert not ff.is_valid(np.array([0, 3, 1, 7]))[0]  # out-of-range token: not a flip-flop string
    assert not ff.is_valid(np.array([0, 3, 1]))[0]  # odd length
    with pytest.raises(TypeError, match="integers"):
        ff.is_valid(np.array([0.0, 3.0, 1.0, 3.0]))
    with pytest.raises(ValueError, match="shape"):
        ff.is_valid(np.zeros((2, 2, 4), dtype=int))
    with pytest.raises(ValueError, match="symbols"):
        ff.from_text("w0x1")


def test_prop3_verdict_rejects_bad_input():
    with pytest.raises(ValueError, match="token ids must lie"):
        ff.verify_prop3(np.array([[0, 3, 1, 9]]))
    with pytest.raises(ValueError, match="valid flip-flop strings"):
        ff.verify_prop3(ff.from_text("w1i0r0"))  # the read returns the wrong bit
    with pytest.raises(ValueError, match="inverse temperature"):
        ff.verify_prop3(ff.from_text("w1i0r1"), c=float("nan"))
    with pytest.raises(ValueError, match="inverse temperature"):
        ff.verify_prop3(ff.from_text("w1i0r1"), c=-1.0)
    with pytest.raises(ValueError, match="position scale"):
        ff.verify_prop3(ff.from_text("w1i0r1"), C=0)
    assert ff.verify_prop3(ff.from_text("w1i0r1")).ok


def test_ngram_functions_reject_bad_input():
    with pytest.raises(ValueError, match="probability"):
        ff.ngram_read_accuracy(3, float("nan"))
    with pytest.raises(ValueError, match="probability"):
        ff.ngram_read_accuracy(3, 1.5)
    with pytest.raises(ValueError, match="window n"):
        ff.window_predictor(ff.from_text("w1r1"), 0)
    with pytest.raises(ValueError, match="token ids must lie"):
        ff.window_predictor(np.array([[0, 3, 1, 9]]), 2)
    assert ff.ngram_read_accuracy(2, Fraction(1, 2)) == Fraction(3, 4)


def test_dilution_functions_reject_bad_input():
    with pytest.raises(ValueError, match="sigma"):
        ff.dilution_bound(float("nan"), 10)
    with pytest.raises(ValueError, match="sigma"):
        ff.dilution_bound(-1.0, 10)
    W = np.ones((2, 3))
    with pytest.raises(ValueError, match="same shape"):
        ff.max_attention_weight(W, np.ones((2, 4)), np.ones((5, 3)), np.ones(3))
    with pytest.raises(ValueError, match="NaN"):
        ff.max_attention_weight(W, W, np.full((5, 3), np.nan), np.ones(3))
    with pytest.raises(ValueError, match=r"\[T, d\]"):
        ff.max_attention_weight(W, W, np.ones((5, 2)), np.ones(3))


def test_prop5_head_rejects_bad_input():
    with pytest.raises(ValueError, match="position scale"):
        ff.LinearPEHead(EYE4, EYE4, E3, 0)
    head = ff.LinearPEHead(EYE4, EYE4, E3, 10)
    with pytest.raises(ValueError, match="no-op"):
        head.attended([1, 0, 7], 3)
    with pytest.raises(ValueError, match="query position"):
        head.attended([1, 0, 0], 4)
    with pytest.raises(ValueError, match="query position"):
        ff.most_recent_write([1, 0, 0], 10)
    with pytest.raises(ValueError, match="case must be"):
        ff.failure_margin(head, 3)


def test_read_accuracy_verdict_is_not_vacuous():
    task = ff.FlipFlopTask.ffl(0.8)
    with pytest.raises(ValueError, match="at least one model"):
        ff.verify_read_accuracy([], task, 8, 4, 0.9)
    with pytest.raises(ValueError, match="n_sequences"):
        ff.verify_read_accuracy([object()], task, 8, 0, 0.9)
    with pytest.raises(ValueError, match="threshold"):
        ff.verify_read_accuracy([object()], task, 8, 4, 1.5)
    assert not ff.ReadReport("x", np.array([]), 0, 0.9).ok  # nothing scored is not a pass
    assert not ff.ReadReport("x", np.array([1.0]), 0, 0.9).ok
    assert ff.ReadReport("x", np.array([1.0, 0.95]), 10, 0.9).ok
    with pytest.raises(ValueError, match="shape"):
        ff.verify_prop3(np.zeros((0, 8), dtype=np.int64))
