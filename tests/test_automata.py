"""Library tests: Semiautomaton, the zoo and the automaton training task."""

from __future__ import annotations

import numpy as np
import pytest

from theorylab.automata import Semiautomaton, zoo
from theorylab.automata.tasks import AutomatonTask


def test_run_shapes_and_start_state():
    a = zoo.parity()
    assert a.run([1, 1, 0, 1]).tolist() == [[1, 0, 0, 1]]
    assert a.run(np.array([[1, 0], [0, 0]]), q0=1).tolist() == [[0, 0], [1, 1]]
    assert a.run(np.array([[1, 1], [1, 0]]), q0=np.array([0, 1])).tolist() == [[1, 0], [0, 0]]
    assert a.run(np.zeros((3, 0), dtype=int)).shape == (3, 0)


def test_step_and_transformation():
    g = zoo.gridworld(3)
    assert g.step(0, 0) == 0 and g.step(0, 1) == 1
    assert g.step(np.array([0, 2]), np.array([1, 1])).tolist() == [1, 2]
    assert g.transformation([1, 1]).tolist() == [2, 2, 2]
    assert g.transformation([]).tolist() == [0, 1, 2]


def test_sample_is_seeded_and_uniform():
    a = zoo.cyclic(4)
    w1, w2 = a.sample(np.random.default_rng(3), 50, 40), a.sample(np.random.default_rng(3), 50, 40)
    assert np.array_equal(w1, w2) and w1.dtype == np.int64 and w1.shape == (50, 40)
    assert np.abs(np.bincount(w1.ravel(), minlength=4) / w1.size - 0.25).max() < 0.03


@pytest.mark.parametrize(
    "delta, err",
    [
        (np.array([[0, 2]]), ValueError),  # out of range
        (np.array([[0, -1]]), ValueError),
        (np.zeros((0, 2), dtype=int), ValueError),  # empty alphabet
        (np.zeros((2, 0), dtype=int), ValueError),  # no states
        (np.array([0, 1]), ValueError),  # wrong shape
        (np.array([[0.0, 1.0]]), TypeError),  # float dtype
        (np.array([[True, False]]), TypeError),
    ],
)
def test_bad_tables(delta, err):
    with pytest.raises(err):
        Semiautomaton(delta)


def test_bad_run_and_sample_arguments():
    a = zoo.flipflop()
    with pytest.raises(ValueError, match="q0"):
        a.run([0, 1], q0=2)
    with pytest.raises(TypeError):
        a.run([0, 1], q0=1.0)
    with pytest.raises(ValueError, match="symbols"):
        a.run([0, 3])
    with pytest.raises(TypeError):
        a.run([0.5, 1.0])
    with pytest.raises(ValueError):
        a.run(np.zeros((1, 1, 1), dtype=int))
    with pytest.raises(ValueError):
        a.sample(np.random.default_rng(0), 0, 5)
    with pytest.raises(ValueError):
        a.sample(np.random.default_rng(0), 2, 0)
    with pytest.raises(TypeError):
        a.sample(0, 2, 2)
    with pytest.raises(ValueError):
        Semiautomaton(np.array([[0, 1]]), state_labels=("a",))


def test_immutable_and_hashable():
    a = zoo.parity()
    with pytest.raises(ValueError):
        a.delta[0, 0] = 1
    assert a == zoo.cyclic(2) and hash(a) == hash(zoo.cyclic(2))
    assert "parity" in repr(a)


def test_zoo_conventions():
    ff = zoo.flipflop()
    assert ff.symbol_labels == ("⊥", "1", "2") and ff.run([1, 0, 2, 0, 0]).tolist() == [[0, 0, 1, 1, 1]]
    grid = zoo.gridworld(4, stay=True)
    assert grid.symbol_labels == ("L", "⊥", "R")
    assert grid.run([2, 2, 2, 2, 1, 0]).tolist() == [[1, 2, 3, 3, 3, 2]]
    d8 = zoo.dihedral(4)
    assert d8.run([0, 1, 0]).tolist() == [[1, 5, 4]]  # advance, reverse, advance backwards
    q8 = zoo.quaternion()
    i, j = 0, 1
    # state after i then j is j*i = -k (index 7)
    assert q8.run([i, j]).tolist() == [[1, 7]]
    assert zoo.symmetric(5).n_symbols == 8 and zoo.symmetric(5).n_states == 120
    assert zoo.alternating(5).n_states == 60 and zoo.alternating(5, regular=False).n_states == 5
    dy = zoo.dyck(2, 2)
    assert dy.n_states == 1 + 2 + 4 + 1 and dy.run([0, 2]).tolist() == [[1, 0]]  # "(" then ")"
    assert dy.run([2]).tolist() == [[dy.n_states - 1]]  # unmatched close -> sink
    assert zoo.random(3, 2, seed=1) == zoo.random(3, 2, seed=1)
    assert zoo.memory(3).run([2, 0, 3]).tolist() == [[1, 1, 2]]


def test_zoo_bad_arguments():
    for f, args in ((zoo.cyclic, (0,)), (zoo.dihedral, (1,)), (zoo.dyck, (0, 2)), (zoo.random, (0, 1))):
        with pytest.raises(ValueError):
            f(*args)
    with pytest.raises(TypeError):
        zoo.cyclic(2.0)
    with pytest.raises(ValueError):
        zoo.quaternion(("i", "x"))
    with pytest.raises(ValueError):
        zoo.group_semiautomaton([[0, 0]])


def test_sample_valid_dyck():
    d = zoo.dyck(1, 2)
    w = zoo.sample_valid(d, np.random.default_rng(0), 64, 30, dead=[d.n_states - 1])
    assert (d.run(w) != d.n_states - 1).all()
    with pytest.raises(ValueError, match="no symbol"):
        zoo.sample_valid(Semiautomaton(np.array([[1, 1]])), np.random.default_rng(0), 2, 2, dead=[1])
    with pytest.raises(ValueError, match="dead"):
        zoo.sample_valid(zoo.flipflop(), np.random.default_rng(0), 2, 2, dead=[0])


def test_automaton_task():
    task = AutomatonTask(zoo.parity(), probs=(0.9, 0.1))
    batch = task.sample_batch(np.random.default_rng(0), 128, 20)
    assert batch.inputs.shape == (128, 20) and batch.mask.all()
    assert np.array_equal(batch.targets, zoo.parity().run(batch.inputs))
    assert abs(batch.inputs.mean() - 0.1) < 0.03
    assert task.vocab_size == 2 and task.n_outputs == 2 and task.loss == "ce"
    with pytest.raises(ValueError):
        AutomatonTask(zoo.parity(), probs=(0.5, 0.6))
    with pytest.raises(ValueError):
        AutomatonTask(zoo.parity(), q0=2)
    with pytest.raises(TypeError):
        AutomatonTask(np.eye(2, dtype=int))
    dy = zoo.dyck(2, 3)
    t2 = AutomatonTask(dy, dead=(dy.n_states - 1,))
    assert (t2.sample_batch(np.random.default_rng(1), 16, 40).targets != dy.n_states - 1).all()


def test_gadgets_and_theory_reject_bad_input():
    from theorylab.automata.constructions.gadgets import composition_mlp, hardmax_error, interp_mlp_1d
    from theorylab.nn.theory import causal_softmax

    with pytest.raises(ValueError, match="NaN"):
        hardmax_error([0.0, np.nan])
    with pytest.raises(ValueError, match="n_states must be >= 1"):
        composition_mlp(0)
    with pytest.raises(ValueError, match="one row per point"):
        interp_mlp_1d([0.0, 1.0], np.zeros((3, 1)))
    with pytest.raises(ValueError, match=r"\[\.\.\., N, N\]"):
        causal_softmax(np.zeros(3))
    with pytest.raises(ValueError, match=r"\[\.\.\., N, N\]"):
        causal_softmax(np.zeros((2, 3)))


def test_causal_softmax_blocks_equal_the_full_masked_softmax():
    from theorylab.nn.theory import causal_softmax

    rng = np.random.default_rng(0)
    for shape in [(1, 1), (3, 3), (2, 5, 5), (2, 3, 70, 70), (2, 300, 300)]:  # one block, and several
        for scale in (1.0, 1e3, 1e12):  # the largest scores underflow almost every exponential
            x = rng.normal(size=shape) * scale
            full = np.where(np.tri(shape[-1], dtype=bool), x, -np.inf)
            want = np.exp(full - full.max(axis=-1, keepdims=True))
            want /= want.sum(axis=-1, keepdims=True)
            got = causal_softmax(x)
            assert not np.shares_memory(got, x) and np.abs(got - want).max() <= 4e-16
            above = np.triu_indices(shape[-1], 1)
            assert np.all(got[..., above[0], above[1]] == 0)


def test_causal_softmax_keeps_the_smallest_nonzero_weights():
    """Weights down to the smallest subnormal are computed, not cut: exp(-720) and exp(-745) (4.9e-324) are
    nonzero; exp(-746) rounds to 0."""
    from theorylab.nn.theory import causal_softmax

    for gap in (-720.0, -745.0, -745.1, -746.0, -800.0):
        got = causal_softmax(np.array([[0.0, 0.0], [0.0, gap]]))
        assert got[1, 1] == np.exp(gap) and got[1, 0] == 1.0 and got[0].tolist() == [1.0, 0.0]
    assert np.exp(-745.1) > 0 and np.exp(-746.0) == 0
    # integer and float32 scores are computed in float64, as their float64 copies (and left as they were)
    x = np.array([[3, -2, 7], [1, 4, 0], [2, 2, 9]])
    for scores in (x, x.astype(np.float32) / 3):
        got = causal_softmax(scores)
        assert got.dtype == np.float64 and np.array_equal(got, causal_softmax(scores.astype(np.float64)))
    assert x.tolist() == [[3, -2, 7], [1, 4, 0], [2, 2, 9]]


def test_sample_valid_and_verify_cascade_reject_bad_input():
    from theorylab.algebra.verify import verify_cascade

    with pytest.raises(ValueError, match="dead state = 99 is out of range"):
        zoo.sample_valid(zoo.dyck(2, 2), np.random.default_rng(0), 2, 5, dead=[99])
    with pytest.raises(TypeError, match="expected a HolonomyCascade"):
        verify_cascade(zoo.parity())


def test_window_baselines():
    from theorylab.automata.baselines import best_window_accuracy, window_codes

    with pytest.raises(ValueError, match="w >= 1"):
        window_codes(np.zeros((2, 3), dtype=int), 2, 0)
    with pytest.raises(ValueError, match=r"\[B, T\]"):
        window_codes(np.zeros(3, dtype=int), 2, 1)
    # codes: base 3 digits of the last 2 symbols, padding digit 2 before the start
    assert window_codes(np.array([[0, 1, 1]]), 2, 2).tolist() == [[2 * 3 + 0, 0 * 3 + 1, 1 * 3 + 1]]
    # the flip-flop at T = 16 with uniform symbols: the last 4 symbols give about 0.9957 (1 - (1/3)^4 / 2 on most
    # positions), a window as long as the word is exact
    acc = best_window_accuracy(AutomatonTask(zoo.flipflop()), 16, 4, np.random.default_rng(0))
    assert 0.99 < acc[4] < 0.999 and acc[1] < acc[2] < acc[3] < acc[4]


def test_readout_margin_and_strategies():
    from hypothesis import given, settings

    from theorylab.algebra import is_solvable
    from theorylab.automata.constructions import compile_log_depth
    from theorylab.strategies.automata import one_element_semigroup, semiautomata

    c = compile_log_depth(zoo.parity(), 8, 0)
    assert c.readout_margin(np.array([[0, 1, 1, 0]])) == 0.0
    assert one_element_semigroup([[0, 0]]) and not one_element_semigroup([[1, 0]])

    @settings(max_examples=10, database=None, deadline=None)
    @given(semiautomata(max_states=6, max_symbols=3, nonsolvable=1.0))
    def always_nonsolvable(aut):
        assert aut.n_states >= 5 and not is_solvable(aut)

    always_nonsolvable()


def test_compile_gridworld_bad_mlp2():
    from theorylab.automata.constructions import compile_gridworld

    with pytest.raises(ValueError, match="'log' or 'constant'"):
        compile_gridworld(3, 8, mlp2="bogus")
