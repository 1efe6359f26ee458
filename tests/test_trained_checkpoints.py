"""Trainings shared between processes through checkpoints (``THEORYLAB_CHECKPOINTS``): a second call loads the
finished training instead of repeating it, and gives the same models; another budget is another training."""

from __future__ import annotations

import dataclasses

import pytest

torch = pytest.importorskip("torch")

from theorylab.nn import Budget, CopyTask, TransformerConfig  # noqa: E402
from theorylab.trained.checkpoints import ENV, checkpoint_dir, train_shared  # noqa: E402

TASK = CopyTask(vocab_size=5, shift=1)
CFG = TransformerConfig(5, 5, d_model=16, n_layers=1, n_heads=2, max_len=8)
BUDGET = Budget(steps=8, batch_size=4, seq_len=8, lr=1e-2, eval_batches=1)


def test_a_finished_training_is_loaded_not_repeated(tmp_path, monkeypatch):
    monkeypatch.setenv(ENV, str(tmp_path))
    first = train_shared(TASK, CFG, BUDGET, (0, 1), "cpu", progress=False)
    again = train_shared(TASK, CFG, BUDGET, (0, 1), "cpu", progress=False)
    assert first.throughput["steps_run"] == [8] and again.throughput["steps_run"] == [0]
    assert again.throughput["marginal_step_ms"] is None  # nothing was timed
    for a, b in zip(first.models, again.models, strict=True):
        assert all(torch.equal(p, q) for p, q in zip(a.parameters(), b.parameters(), strict=True))
    assert first.final["acc"].tolist() == again.final["acc"].tolist()
    # another budget is another training (its own folder), and unset means no checkpoint at all
    other = dataclasses.replace(BUDGET, lr=2e-2)
    assert checkpoint_dir(TASK, CFG, other, (0, 1), "cpu") != checkpoint_dir(TASK, CFG, BUDGET, (0, 1), "cpu")
    assert train_shared(TASK, CFG, other, (0, 1), "cpu", progress=False).throughput["steps_run"] == [8]
    monkeypatch.delenv(ENV)
    assert checkpoint_dir(TASK, CFG, BUDGET, (0, 1), "cpu") is None
