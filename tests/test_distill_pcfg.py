"""The masked-LM / progressive-distillation harness on PCFGs (theorylab.nn.distill_pcfg): validation, the schedule's
teacher switching, and the vectorised measures against the per-position reference of pcfg_measures."""

from __future__ import annotations

import numpy as np
import pytest

from theorylab.languages.pcfg_grammars import layered_grammar
from theorylab.languages.pcfg_measures import l_close, l_robust
from theorylab.nn.distill import ProgressiveSchedule
from theorylab.nn.threads import num_threads
from theorylab.testing import rejects

torch = pytest.importorskip("torch")

from theorylab.nn import distill_pcfg as dp  # noqa: E402


@pytest.fixture(scope="module")
def grammar():
    return layered_grammar(np.random.default_rng(0), level_sizes=(1, 3, 3), degrees=(2,), rhs_lengths=(2,))


@pytest.fixture(autouse=True)
def _one_thread():
    with num_threads(1):
        yield


CFG = dp.MLMConfig(n_vocab=3, seq_len=8, n_heads=2, head_dim=4, n_layers=1)


def test_config_and_inputs_are_validated(grammar) -> None:
    rejects(lambda: dp.MLMConfig(3, 8, 0), "n_heads must be >= 1")
    rejects(lambda: dp.MLMConfig(3, 8.0, 2), "seq_len must be an int", TypeError)
    rejects(lambda: dp.fixed_length_batch(grammar, np.random.default_rng(0), 4, 9), "the grammar's sentences")
    varying = layered_grammar(np.random.default_rng(0), level_sizes=(1, 2), degrees=(2,), rhs_lengths=(2, 3))
    rejects(
        lambda: dp.fixed_length_batch(varying, np.random.default_rng(0), 64, 4), "the grammar's sentences"
    )
    rejects(lambda: dp.train_mlm(grammar, CFG, 0, 0), "steps and checkpoint_every must be >= 1")
    rejects(lambda: dp.train_mlm(grammar, CFG, 2, 0, teacher={}), "teacher checkpoints and a schedule")
    sched = ProgressiveSchedule.one_shot(5)
    rejects(
        lambda: dp.train_mlm(grammar, CFG, 2, 0, teacher={1: None}, schedule=sched), "schedule needs teacher"
    )
    rejects(
        lambda: dp.train_mlm(grammar, CFG, 2, 0, teacher={5: None}, schedule=sched, tau=0), "temperature tau"
    )
    run = dp.train_mlm(grammar, CFG, 2, 0, checkpoint_every=1)
    rejects(lambda: run.model_at(7), "no checkpoint at step 7")


def test_the_schedule_picks_the_supervising_checkpoint_each_step(grammar) -> None:
    model = dp.masked_lm(CFG, 0).eval()
    calls = {1: 0, 2: 0}

    def spy(step):
        def teacher(x):
            calls[step] += 1
            return model(x)

        return teacher

    sched = ProgressiveSchedule((1, 2), (3,))
    run = dp.train_mlm(grammar, CFG, 5, 0, teacher={1: spy(1), 2: spy(2)}, schedule=sched, checkpoint_every=5)
    assert calls == {1: 3, 2: 2}
    assert sorted(run.checkpoints) == [0, 5]


def test_labels_training_reduces_the_held_out_loss_and_records_checkpoints(grammar) -> None:
    held = dp.held_out_set(grammar, CFG, 64, seed=1)
    run = dp.train_mlm(grammar, CFG, 20, 0, held_out=held, checkpoint_every=10, batch=32, lr=1e-2)
    frozen = dp.train_mlm(grammar, CFG, 20, 0, held_out=held, checkpoint_every=10, batch=32, lr=0.0)
    assert run.steps == [0, 10, 20] and run.final == 20
    assert run.loss[-1] < run.loss[0] - 0.1
    assert frozen.loss == [frozen.loss[0]] * 3  # control: lr = 0 leaves the held-out loss where it started
    assert run.loss[0] == frozen.loss[0]  # same seed, same initialisation


def test_vectorised_measures_match_the_per_position_definitions(grammar) -> None:
    """median_l_robust / median_l_close against pcfg_measures' Eq. 4.94-4.95 with the model as the predictor
    (unobserved positions fed as the mask token), on the same sentences and positions."""
    model = dp.masked_lm(CFG, 3).eval()
    tokens = dp.fixed_length_batch(grammar, np.random.default_rng(2), 9, 8)
    pos = np.random.default_rng(0).integers(0, 8, len(tokens))  # the positions _pairs draws with seed 0

    def predict(x, observed, i):
        inp = np.where(observed, x, CFG.mask_token)
        inp[i] = CFG.mask_token
        with torch.no_grad():
            return torch.softmax(model(torch.as_tensor(inp[None])), -1)[0, i].numpy()

    for n in (1, 3, 4):
        rob = [l_robust(predict, x, int(i), n) for x, i in zip(tokens, pos, strict=True)]
        close = [l_close(predict, x, int(i), n) for x, i in zip(tokens, pos, strict=True)]
        assert dp.median_l_robust(model, tokens, n, CFG.mask_token) == pytest.approx(np.median(rob), abs=1e-6)
        assert dp.median_l_close(model, tokens, n, CFG.mask_token) == pytest.approx(
            np.median(close), abs=1e-6
        )
    assert (
        dp.median_l_robust(model, tokens, 1, CFG.mask_token) == 0.0
    )  # control: the 1-gram window is i alone


def test_probe_reads_the_root_exactly_and_rejects_a_negative_level(grammar) -> None:
    model = dp.masked_lm(CFG, 0).eval()
    assert (
        dp.probe_accuracy(model, grammar, 0, 16, 16, seed=0, steps=5) == 1.0
    )  # one root label: trivially read
    rejects(lambda: dp.probe_accuracy(model, grammar, -1, 4, 4, seed=0), "level must be >= 0")
    acc = dp.probe_accuracy(model, grammar, 2, 64, 64, seed=0, steps=50)
    assert 0.0 <= acc <= 1.0


def test_masked_hits_are_the_top1_hits_on_masked_positions(grammar) -> None:
    model = dp.masked_lm(CFG, 0).eval()
    held = dp.held_out_set(grammar, CFG, 32, seed=2)
    hits = dp.masked_hits(model, held)
    assert hits.shape == (int(held[2].sum()),) and hits.dtype == bool
    run = dp.train_mlm(grammar, CFG, 1, 0, held_out=held, lr=0.0)
    assert run.acc[0] == pytest.approx(hits.mean(), abs=1e-6)  # the recorded accuracy is the same count
