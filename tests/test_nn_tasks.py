"""Tasks of the harness: batch validation, helpers, and the flip-flop task's inputs and errors."""

import numpy as np
import pytest

from theorylab.languages import flipflop as ff
from theorylab.nn.tasks import (
    Batch,
    CopyTask,
    FunctionTask,
    Task,
    check_batch,
    check_task,
    sample_fixed_dataset,
    stack_batches,
)


def test_copy_task_is_a_task_and_its_batches_validate():
    task = CopyTask(vocab_size=4, shift=2)
    assert isinstance(task, Task)
    b = check_batch(task.sample_batch(np.random.default_rng(0), 3, 7), task, 3, 7)
    assert (b.targets[:, 2:] == b.inputs[:, :-2]).all() and not b.mask[:, :2].any()


@pytest.mark.parametrize(
    "batch, match",
    [
        (Batch(np.zeros((2, 3)), np.zeros((2, 3), int), np.ones((2, 3), bool)), "integer array"),
        (Batch(np.zeros((2, 3), int), np.zeros((2, 3), int), np.ones((2, 3))), "bool"),
        (Batch(np.zeros((2, 3), int), np.full((2, 3), 9), np.ones((2, 3), bool)), "targets at masked"),
        (Batch(np.zeros((2, 3), int), np.zeros((2, 4), int), np.ones((2, 3), bool)), "'ce' targets"),
    ],
)
def test_check_batch_names_the_problem(batch, match):
    with pytest.raises(ValueError, match=match):
        check_batch(batch, CopyTask(vocab_size=4))


def test_soft_targets_must_be_finite_distributions_of_the_right_shape():
    task = FunctionTask("soft", 3, 2, "soft_ce", lambda rng, b, T: None)
    good = Batch(np.zeros((1, 2), int), np.full((1, 2, 2), 0.5), np.ones((1, 2), bool))
    check_batch(good, task)
    with pytest.raises(ValueError, match="shape"):
        check_batch(Batch(good.inputs, np.zeros((1, 2, 3)), good.mask), task)
    with pytest.raises(ValueError, match="NaN"):
        check_batch(Batch(good.inputs, np.full((1, 2, 2), np.nan), good.mask), task)
    with pytest.raises(TypeError, match="Batch"):
        check_batch((1, 2, 3), task)


def test_check_task_rejects_bad_tasks():
    with pytest.raises(TypeError, match="Task protocol"):
        check_task(object())
    with pytest.raises(ValueError, match="loss"):
        FunctionTask("x", 3, 3, "hinge", lambda rng, b, T: None)
    with pytest.raises(ValueError, match="vocab_size"):
        FunctionTask("x", 0, 3, "ce", lambda rng, b, T: None)


def test_fixed_dataset_and_stacking():
    task = CopyTask(vocab_size=5)
    d = sample_fixed_dataset(task, np.random.default_rng(0), 10, 4, chunk=3)
    assert d.inputs.shape == (10, 4)
    s = stack_batches([d, d])
    assert s.inputs.shape == (2, 10, 4) and s.mask.dtype == bool
    with pytest.raises(ValueError, match=">= 1"):
        sample_fixed_dataset(task, np.random.default_rng(0), 0, 4)


def test_flipflop_task_batches():
    clean = ff.FlipFlopTask.ffl(0.8)
    b = check_batch(clean.sample_batch(np.random.default_rng(1), 8, 12), clean, 8, 12)
    assert (b.mask == ff.read_positions(b.inputs)).all() and b.mask[:, 10].all()
    assert (b.targets[:, :-1] == b.inputs[:, 1:]).all()
    noisy = ff.FlipFlopTask.ffl(0.8, mode="noisy")
    assert noisy.sample_batch(np.random.default_rng(1), 2, 6).mask.sum() == 2 * 5


@pytest.mark.parametrize("T", [3, 5, 2, 0])
def test_flipflop_rejects_bad_lengths(T):
    with pytest.raises(ValueError, match="even length"):
        ff.sample_ffl(np.random.default_rng(0), 1, T, 0.1, 0.1)


@pytest.mark.parametrize("p", [(0.5, 0.6, -0.1), (0.2, 0.2, 0.2), (float("nan"), 0.5, 0.5)])
def test_flipflop_rejects_bad_probabilities(p):
    with pytest.raises(ValueError, match="probability vector"):
        ff.FlipFlopTask(*p)


def test_flipflop_misc_errors():
    with pytest.raises(ValueError, match="mode"):
        ff.FlipFlopTask(mode="greedy")
    with pytest.raises(ValueError, match="symbols"):
        ff.from_text("w0x1")
    with pytest.raises(ValueError, match="T <= 16"):
        ff.enumerate_ffl(18, (0.2, 0.3, 0.5))
    with pytest.raises(ValueError, match="exact probability"):
        ff.enumerate_ffl(6, (0.5, 0.5, 0.5))
    assert ff.to_text(ff.from_text("w 0 i 1 r 0")) == "w0i1r0"
    assert ff.expected_reads(512, 0.01) == pytest.approx(3.54)
    assert not ff.is_valid(np.array([0, 3, 1]))[0]


def test_read_accuracy_verdict_needs_the_clean_mode():
    with pytest.raises(ValueError, match="clean"):
        ff.verify_read_accuracy([], ff.FlipFlopTask.ffl(0.8, mode="noisy"), 8, 4, 0.9)


def test_last_write_bit_positions():
    x = ff.from_text("w0i1w1r1")
    assert ff.last_write_bit(x).tolist() == [[1, 1, 1, 1, 5, 5, 5, 5]]
