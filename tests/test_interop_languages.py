"""Converters for flip-flop and Dyck data files, the FFL support, and the depth-cap tail (exact)."""

from fractions import Fraction

import numpy as np
import pytest

from theorylab.languages import interop as li
from theorylab.languages.flipflop import is_valid, sample_ffl

SEED = 31


def test_ffl_records_round_trip_and_support():
    rng = np.random.default_rng(SEED)
    x = sample_ffl(rng, 200, 16, 0.1, 0.1, 0.8)
    records = li.to_ffl_records(x)
    assert records[0]["text"][0] == "w" and len(records[0]["text"]) == 16
    assert np.array_equal(li.from_ffl_records(records), x)
    assert np.array_equal(li.from_ffl_records([r["text"] for r in records]), x)
    assert li.in_ffl_support(x).all()
    with pytest.raises(ValueError, match="symbols"):
        li.from_ffl_records([{"text": "w0x1"}])
    with pytest.raises(ValueError, match="one length"):
        li.from_ffl_records(["w0r0", "w0i1r0"])


def test_a_generator_without_the_final_read_leaves_the_support():
    """Fraction outside the support = 1 - p_r exactly; 20000 draws: sd <= 0.0036, tolerance 0.015 (> 4 sd)."""
    rng = np.random.default_rng(SEED + 1)
    for p in ((0.1, 0.1, 0.8), (0.45, 0.45, 0.1)):
        x = li.sample_unforced_ffl(rng, 20000, 16, *p)
        assert is_valid(x).all()  # every read is correct: the check that misses the final read
        assert abs(np.mean(~li.in_ffl_support(x)) - (1 - p[1])) < 0.015


def test_dyck_lines_round_trip():
    from theorylab.languages.dyck import Dyck

    rng = np.random.default_rng(SEED + 2)
    words = Dyck(2, 4).sample(rng, 30, 12)
    lengths = rng.integers(1, 13, size=30)
    lines = li.to_dyck_lines(words, lengths)
    assert lines[0].startswith("B") and lines[0].endswith("E")
    ids, mask = li.from_dyck_lines(lines)
    assert np.array_equal(mask.sum(1), lengths)
    assert all(np.array_equal(ids[b, :n], words[b, :n]) for b, n in enumerate(lengths))
    with pytest.raises(ValueError, match="brackets"):
        li.from_dyck_lines(["[()]"])
    with pytest.raises(ValueError, match="outside"):
        li.from_dyck_lines(["B[x]E"])


def test_depth_cap_tail_is_exact():
    from theorylab.generation.exact import sequence_law
    from theorylab.languages.dyck import DyckCompletion

    assert li.depth_exceedance(32, 12) == Fraction(1351, 262144)  # ~0.00515: a depth cap of 12 at D = 32
    law = sequence_law(DyckCompletion(8).oracle(Fraction(0)), 8)  # brute force on every string of length 8
    for cap in (1, 2, 3):
        brute = sum(p for s, p in law.items() if max(np.cumsum([1 if t % 2 == 0 else -1 for t in s])) > cap)
        assert li.depth_exceedance(8, cap) == brute
    assert li.depth_exceedance(8, 4) == 0 and li.depth_exceedance(8, 0) == 1
    with pytest.raises(ValueError, match="even"):
        li.depth_exceedance(7, 2)


def test_lda_lines_round_trip_with_variable_lengths():
    from theorylab.languages.topic import TopicModel

    model = TopicModel(10, 10, 3)
    rng = np.random.default_rng(SEED + 3)
    docs, mask = li.sample_variable_length_documents(model, rng, 40, 5, 30)
    assert 5 <= mask.sum(1).min() < mask.sum(1).max() <= 30 and (docs[~mask] == 0).all()
    lines = li.to_lda_lines(docs, mask)
    assert lines[0].split()[0] == str(docs[0, 0] - 1)
    back, back_mask = li.from_lda_lines(lines, n_words=100)
    assert np.array_equal(back_mask, mask[:, : back.shape[1]]) and np.array_equal(
        back, docs[:, : back.shape[1]]
    )
    with pytest.raises(ValueError, match="0..99"):
        li.from_lda_lines(["3 100"], n_words=100)
    with pytest.raises(ValueError, match="MASK"):
        li.to_lda_lines(np.array([[0, 1]]))
    # the topic repository's replacement draws from all 104 ids (4 specials first): simulate its masking on
    # 10^6 tokens; expected fraction 0.15 * 0.1 * 4/104 = 5.77e-4, sd 2.4e-5, tolerance 1.2e-4 (5 sd)
    n = 10**6
    masked = rng.random(n) < 0.15
    replaced = masked & (rng.random(n) < 0.1)
    special = replaced & (rng.integers(0, 104, size=n) < 4)
    expected = li.special_replacement_fraction(0.15, 0.1, 4, 100)
    assert abs(special.mean() - expected) < 1.2e-4 and abs(expected - 5.769e-4) < 1e-7
