"""Unit tests of ``theorylab.automata.experiments`` and ``theorylab.algebra.wreath``: bad input, small hand cases."""

from __future__ import annotations

import numpy as np
import pytest

from theorylab.algebra import permutation_group
from theorylab.algebra.wreath import (
    group_prefix,
    krasner_kaloujnine,
    lemma19_run,
    wreath_coordinates,
    wreath_element,
    wreath_tower,
)
from theorylab.automata import zoo
from theorylab.automata.experiments import (
    ObservedTask,
    RevealedTask,
    ScratchpadTask,
    boundary_attention,
    majority_accuracy,
    most_recent,
    window_accuracy,
)

C2 = permutation_group([[1, 0]])
S3 = permutation_group([[1, 2, 0], [1, 0, 2]])


def test_wreath_element_rejects_bad_input():
    with pytest.raises(ValueError, match="permutation"):
        wreath_element([[0, 0]], [0])
    with pytest.raises(ValueError, match="rows"):
        wreath_element([[0, 1], [1, 0]], [0])
    with pytest.raises(ValueError, match="block"):
        wreath_coordinates([0, 2, 1, 3], 2, 2)
    with pytest.raises(ValueError, match="points"):
        wreath_coordinates([0, 1, 2], 2, 2)


def test_wreath_coordinates_roundtrip():
    p = wreath_element([[1, 0], [0, 1]], [1, 0])
    assert p.tolist() == [3, 2, 0, 1]
    f, h = wreath_coordinates(p, 2, 2)
    assert f.tolist() == [[1, 0], [0, 1]] and h.tolist() == [1, 0]


def test_lemma19_run_and_prefix_reject_bad_shapes():
    with pytest.raises(ValueError, match="shape"):
        lemma19_run(C2, C2, np.zeros((2, 3, 3), dtype=int), np.zeros((2, 3), dtype=int))
    with pytest.raises(ValueError, match="element indices"):
        group_prefix(C2, np.array([[0, 2]]))


def test_krasner_kaloujnine_rejects_non_normal():
    with pytest.raises(ValueError, match="not normal"):
        krasner_kaloujnine(S3, [0, S3.index([1, 0, 2])])
    with pytest.raises(ValueError, match="identity"):
        krasner_kaloujnine(S3, [1])
    with pytest.raises(ValueError, match="not closed"):
        krasner_kaloujnine(S3, [0, S3.index([1, 2, 0])])


def test_wreath_tower_cyclic_base_case():
    tower = wreath_tower(permutation_group([[1, 2, 3, 0]]))
    assert tower.step is None and tower.depth == 1 and tower.rep_dim == 1 and tower.length == 0
    trivial = wreath_tower(permutation_group([[0, 1]]))
    assert trivial.depth == 0


def test_tasks_reject_bad_input():
    aut = zoo.gridworld(4)
    with pytest.raises(ValueError, match="observe"):
        ObservedTask(aut, (0, 1))
    with pytest.raises(ValueError, match="p_reveal"):
        RevealedTask(aut, 0.0)
    with pytest.raises(ValueError, match="probs"):
        ScratchpadTask(zoo.parity(), probs=(0.5, 0.6))
    with pytest.raises(ValueError, match="even"):
        ScratchpadTask(zoo.parity()).sample_batch(np.random.default_rng(0), 2, 5)
    with pytest.raises(ValueError, match="w must"):
        window_accuracy(
            np.zeros((1, 2), int), np.zeros((1, 2), int), np.zeros((1, 2), int), np.zeros((1, 2), int), -1, 2
        )


def test_scratchpad_layout():
    task = ScratchpadTask(zoo.parity())
    b = task.sample_batch(np.random.default_rng(0), 3, 8)
    assert (b.inputs[:, 0::2] < 2).all() and (b.inputs[:, 1::2] >= 2).all()
    states = zoo.parity().run(b.inputs[:, 0::2])
    assert np.array_equal(b.inputs[:, 1::2] - 2, states) and np.array_equal(b.targets[:, 0::2], states)
    assert b.mask[:, 0::2].all() and not b.mask[:, 1::2].any()


def test_revealed_mask_rate():
    b = RevealedTask(zoo.parity(), 0.25).sample_batch(np.random.default_rng(0), 200, 50)
    assert abs(b.mask.mean() - 0.25) < 0.02  # 10^4 Bernoulli(0.25): sd 0.0043


def test_window_accuracy_hand_cases():
    words = np.array([[0, 1, 1, 0]])
    labels = np.array([[0, 1, 0, 0]])
    assert window_accuracy(words, labels, words, labels, 0, 2) == 0.75
    assert window_accuracy(words, labels, words, labels, 2, 2) == 1.0
    assert majority_accuracy(labels) == 0.75


def test_most_recent_and_boundary_attention():
    flags = np.array([[False, True, False, True, False]])
    assert most_recent(flags).tolist() == [[-1, 1, 1, 3, 3]]
    T = 4
    attn = np.zeros((1, 1, T, T))
    states = np.array([[0, 1, 1, 1]])  # boundary 0 at position 0 only
    attn[0, 0, :, 0] = 1.0  # every query attends to position 0
    out = boundary_attention(attn, states, (0,))
    assert out["on_boundary"][0] == 1.0 and out["before"][0] == 0.0
    assert np.isclose(out["uniform"], np.mean([1, 1 / 2, 1 / 3, 1 / 4]))
