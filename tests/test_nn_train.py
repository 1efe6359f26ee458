"""The training harness: determinism, vmapped stack == sequential runs, freezing, schedules, checkpoints, errors."""

import dataclasses
import importlib
import json

import numpy as np
import pytest
import torch

from theorylab.nn import train as train_module
from theorylab.nn.models import LSTMConfig, MLPConfig, TransformerConfig
from theorylab.nn.tasks import Batch, CopyTask, FunctionTask
from theorylab.nn.train import Budget, evaluate, loss_terms, train

TASK = CopyTask(vocab_size=5, shift=1)
TF = TransformerConfig(vocab_size=5, n_outputs=5, d_model=16, n_layers=1, n_heads=2, max_len=8)
BUDGET = Budget(steps=12, batch_size=8, seq_len=8, lr=3e-3, eval_every=6, eval_batches=2, log_every=3)


TRAIN_MODULE = importlib.import_module(
    "theorylab.nn.train"
)  # the module (theorylab.nn.train is also the function)


def _weights(result):
    return [{k: v.detach().clone() for k, v in m.state_dict().items()} for m in result.models]


def test_two_runs_with_the_same_seeds_are_identical():
    a = train(TASK, TF, BUDGET, seeds=(0, 1))
    b = train(TASK, TF, BUDGET, seeds=(0, 1))
    assert a.history == b.history
    assert all(np.array_equal(a.final[k], b.final[k]) for k in a.final)
    for wa, wb in zip(_weights(a), _weights(b), strict=True):
        assert all(torch.equal(wa[k], wb[k]) for k in wa)


def test_different_seeds_give_different_runs():
    r = train(TASK, TF, BUDGET, seeds=(0, 1))
    wa, wb = _weights(r)
    assert not torch.equal(wa["head.weight"], wb["head.weight"])
    assert r.final["loss"][0] != r.final["loss"][1]


CONFIGS = {
    "transformer adamw clip": (
        TF,
        {"grad_clip": 0.05, "weight_decay": 0.1, "schedule": "warmup_cosine", "warmup": 3},
    ),
    "transformer sgd momentum fixed data": (
        dataclasses.replace(TF, norm="post", pos="sinusoidal"),
        {"optimizer": "sgd", "momentum": 0.9, "lr": 0.05, "fixed_dataset": 20},
    ),
    "lstm": (LSTMConfig(5, 5, d_embed=8, hidden=8), {"grad_clip": 0.1}),
    "mlp": (MLPConfig(5, 5, context=2, d_hidden=16), {"schedule": "linear"}),
}


@pytest.mark.parametrize("name", list(CONFIGS))
def test_vmapped_stack_equals_sequential_runs(name):
    cfg, changes = CONFIGS[name]
    budget = dataclasses.replace(BUDGET, **changes)
    seeds = (0, 3, 7)
    stacked = train(TASK, cfg, budget, seeds=seeds)
    sequential = train(TASK, cfg, budget, seeds=seeds, vectorize=False)
    # float32 training; batched and single matmuls sum in different orders (~1e-7 relative per op), 12 steps
    for k in stacked.final:
        np.testing.assert_allclose(stacked.final[k], sequential.final[k], rtol=1e-4, atol=1e-5, err_msg=k)
    for wa, wb in zip(_weights(stacked), _weights(sequential), strict=True):
        for k in wa:
            torch.testing.assert_close(wa[k], wb[k], rtol=1e-4, atol=1e-5)


def test_a_seed_trains_the_same_alone_or_in_a_stack():
    alone = train(TASK, TF, BUDGET, seeds=(5,))
    stacked = train(TASK, TF, BUDGET, seeds=(2, 5, 9))
    np.testing.assert_allclose(stacked.final["loss"][1], alone.final["loss"][0], rtol=1e-4)
    np.testing.assert_allclose(stacked.curve("loss")[1][1], alone.curve("loss")[1][0], rtol=1e-4)


def test_vmap_equivalence_control_detects_a_different_optimiser_state():
    """Control: the tolerance above is tight enough to see a real difference (one extra seed-specific step)."""
    a = train(TASK, TF, BUDGET, seeds=(0,))
    b = train(TASK, TF, dataclasses.replace(BUDGET, steps=13), seeds=(0,))
    assert not torch.allclose(
        _weights(a)[0]["head.weight"], _weights(b)[0]["head.weight"], rtol=1e-4, atol=1e-5
    )


@pytest.mark.parametrize(
    "cfg",
    [
        dataclasses.replace(TF, one_hot_embedding=True, identity_decoder=True, uniform_attention=True),
        dataclasses.replace(TF, freeze=("blocks.0.mlp", "pos")),
        LSTMConfig(5, 5, d_embed=4, hidden=8, freeze=("embed", "lstm.weight_hh_l0")),
    ],
)
def test_frozen_parameters_do_not_move_even_with_weight_decay(cfg):
    budget = dataclasses.replace(BUDGET, weight_decay=0.5, lr=1e-2)
    init = cfg.build(4).state_dict()
    model = train(TASK, cfg, budget, seeds=(4,)).models[0]
    frozen = {n for n, p in model.named_parameters() if not p.requires_grad}
    assert frozen
    for name, value in model.state_dict().items():
        assert torch.equal(value, init[name]) == (name in frozen), name


def test_learning_rate_zero_leaves_weights_at_init():
    model = train(TASK, TF, dataclasses.replace(BUDGET, lr=0.0), seeds=(1,)).models[0]
    init = TF.build(1).state_dict()
    assert all(torch.equal(v, init[k]) for k, v in model.state_dict().items())


def test_schedules():
    b = Budget(steps=10, batch_size=1, seq_len=1, lr=1.0, schedule="warmup_cosine", warmup=2)
    assert [b.lr_at(s) for s in (0, 1)] == [0.5, 1.0]
    assert b.lr_at(2) == 1.0 and b.lr_at(6) == pytest.approx(0.5) and b.lr_at(10) == pytest.approx(0.0)
    lin = Budget(steps=4, batch_size=1, seq_len=1, lr=2.0, schedule="linear")
    assert [lin.lr_at(s) for s in range(4)] == [2.0, 1.5, 1.0, 0.5]
    r = train(TASK, TF, dataclasses.replace(BUDGET, schedule="linear", log_every=1), seeds=(0,))
    steps, lrs = r.curve("lr")
    np.testing.assert_allclose(lrs[0], 3e-3 * (1 - (steps - 1) / 12))


def test_history_final_and_json(tmp_path):
    extra = {"shift2": CopyTask(vocab_size=5, shift=2)}
    r = train(
        TASK,
        TF,
        BUDGET,
        seeds=(0, 1),
        log_path=tmp_path / "run.json",
        eval_tasks=extra,
        eval_fn=lambda step, models: {"n_models": [len(models)] * 2},
    )
    assert [h["step"] for h in r.history[::2]] == [3, 6, 9, 12]
    assert {"eval_loss", "eval_acc", "shift2_acc", "n_models"} <= set(r.history[2])
    assert set(r.final) >= {"loss", "acc", "train_loss", "train_acc", "shift2_loss", "shift2_acc", "n_models"}
    assert all(v.shape == (2,) for v in r.final.values())
    data = json.loads((tmp_path / "run.json").read_text())
    assert data["seeds"] == [0, 1] and data["config"]["type"] == "TransformerConfig"
    assert data["final"]["acc"] == r.final["acc"].tolist() and data["throughput"]["tokens_per_s"] > 0


def test_checkpoint_resume_equals_an_uninterrupted_run(tmp_path):
    full = train(TASK, TF, BUDGET, seeds=(0, 1))
    half = dataclasses.replace(BUDGET, steps=6, checkpoint_every=6)
    train(TASK, TF, half, seeds=(0, 1), checkpoint_dir=tmp_path)
    resumed = train(
        TASK,
        TF,
        dataclasses.replace(BUDGET, checkpoint_every=6),
        seeds=(0, 1),
        checkpoint_dir=tmp_path,
        resume=True,
    )
    assert resumed.history == full.history
    for wa, wb in zip(_weights(full), _weights(resumed), strict=True):
        assert all(torch.equal(wa[k], wb[k]) for k in wa)


def test_loss_terms_for_each_loss():
    out = torch.tensor([[[2.0, 0.0], [0.0, 1.0], [5.0, 5.0]]])
    m = torch.tensor([[True, True, False]])
    loss, correct, n = loss_terms(out, torch.tensor([[0, 0, 1]]), m, "ce")
    expected = (np.log1p(np.exp(-2.0)) + np.log1p(np.exp(1.0))) / 2
    assert loss.item() == pytest.approx(expected, rel=1e-6) and correct.item() == 1 and n.item() == 2
    soft = torch.tensor([[[1.0, 0.0], [1.0, 0.0], [0.5, 0.5]]])
    assert loss_terms(out, soft, m, "soft_ce")[0].item() == pytest.approx(expected, rel=1e-6)
    loss, correct, _ = loss_terms(out, soft, m, "mse")
    assert loss.item() == pytest.approx(((1 + 0) + (1 + 1)) / 2) and correct.item() == 1


def test_evaluate_counts_masked_positions():
    model = train(TASK, TF, dataclasses.replace(BUDGET, steps=40, lr=1e-2), seeds=(0,)).models[0]
    res = evaluate(TASK, model, np.random.default_rng(0), batches=3, T=8, batch_size=10)
    assert res["count"] == 3 * 10 * 7 and res["acc"] > 0.9
    same = evaluate(TASK, model, np.random.default_rng(0), batches=3, T=8, batch_size=10, amp=False)
    assert same == res  # amp=False is the CPU default
    with pytest.raises(ValueError, match="only used on CUDA"):
        evaluate(TASK, model, np.random.default_rng(0), batches=1, T=8, amp=True)


def test_train_works_with_a_module_level_call_and_function_task():
    def sampler(rng, batch, T):
        x = rng.integers(0, 3, size=(batch, T))
        return Batch(x, (x.cumsum(1) % 2).astype(np.int64), np.ones((batch, T), bool))

    task = FunctionTask("prefix-parity", vocab_size=3, n_outputs=2, loss="ce", sampler=sampler)
    cfg = MLPConfig(3, 2, context=1)
    r = train_module(task, cfg, Budget(steps=2, batch_size=4, seq_len=5, lr=1e-3), seeds=(0,))
    assert r.final["acc"].shape == (1,)


@pytest.mark.parametrize(
    "kwargs, error, match",
    [
        ({"model_config": TransformerConfig(6, 5, d_model=8, n_heads=1)}, ValueError, "vocab_size"),
        ({"seeds": (1, 1)}, ValueError, "distinct"),
        ({"seeds": ()}, ValueError, "seeds"),
        ({"budget": {"steps": 1}}, TypeError, "Budget"),
        ({"model_config": object()}, TypeError, "build"),
        ({"device": "tpu"}, (ValueError, RuntimeError), "device|tpu"),
        ({"amp": True}, ValueError, "CUDA"),
    ],
)
def test_train_rejects_bad_arguments(kwargs, error, match):
    args = {"task": TASK, "model_config": TF, "budget": BUDGET, "seeds": (0,), **kwargs}
    with pytest.raises(error, match=match):
        train(**args)


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the CPU-only error")
def test_cuda_request_without_cuda_is_a_clear_error():
    with pytest.raises(ValueError, match="cuda"):
        train(TASK, TF, BUDGET, device="cuda")


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"steps": -1}, "steps"),
        ({"lr": float("nan")}, "lr"),
        ({"optimizer": "lion"}, "optimizer"),
        ({"schedule": "warmup_cosine"}, "warmup"),
        ({"schedule": "step"}, "schedule"),
        ({"grad_clip": 0.0}, "grad_clip"),
        ({"fixed_dataset": 0}, "fixed_dataset"),
    ],
)
def test_budget_validation(kwargs, match):
    with pytest.raises(ValueError, match=match):
        Budget(**{"steps": 1, "batch_size": 1, "seq_len": 1, "lr": 1e-3, **kwargs})


def test_malformed_batches_are_rejected():
    def bad(rng, batch, T):
        x = rng.integers(0, 9, size=(batch, T))  # token ids beyond vocab_size
        return Batch(x, x, np.ones((batch, T), bool))

    task = FunctionTask("bad", vocab_size=5, n_outputs=5, loss="ce", sampler=bad)
    with pytest.raises(ValueError, match="token ids"):
        train(task, TF, BUDGET)


def test_grouping_seeds_into_smaller_stacks_does_not_change_them():
    one = train(TASK, TF, BUDGET, seeds=(0, 1, 2, 3), max_stack=4)
    pairs = train(TASK, TF, BUDGET, seeds=(0, 1, 2, 3), max_stack=3)
    assert one.throughput["stack_size"] == 4 and pairs.throughput["stack_size"] == 3
    np.testing.assert_allclose(one.final["loss"], pairs.final["loss"], rtol=1e-4)
    assert [h["seed"] for h in pairs.history[:4]] == [0, 1, 2, 3]
    with pytest.raises(ValueError, match="max_stack"):
        train(TASK, TF, BUDGET, max_stack=0)


def test_auto_stack_size_is_cache_sized_on_cpu():
    from theorylab.nn.train import auto_stack_size

    big = Budget(steps=1, batch_size=16, seq_len=64, lr=1e-3)
    cfg = TransformerConfig(5, 5, d_model=64, n_heads=4, max_len=64)
    assert auto_stack_size(cfg, big, 32, torch.device("cpu")) == 1  # 1 MiB of MLP activations per seed: alone
    half = dataclasses.replace(big, seq_len=32)  # 0.5 MiB per seed: stacks of 16
    assert auto_stack_size(cfg, half, 32, torch.device("cpu")) == 16
    assert auto_stack_size(cfg, half, 3, torch.device("cpu")) == 3
    assert auto_stack_size(cfg, big, 32, torch.device("cuda")) == 32
    wide = dataclasses.replace(big, seq_len=128)  # 4 MiB of attention weights per seed: alone
    assert auto_stack_size(dataclasses.replace(cfg, max_len=128), wide, 8, torch.device("cpu")) == 1
    assert auto_stack_size(dataclasses.replace(cfg, max_len=128), wide, 8, torch.device("cuda")) == 8


def test_auto_stack_size_on_cuda_follows_the_h100_measurements():
    """The CUDA rule, on cuda-typed devices (no GPU needed): the 19M baseline (128 MiB of activations per seed, its
    8-seed stack lost 1.4-1.6x on an H100) trains its seeds one after another; the same seeds with explicit
    attention (the stack won 1.6x) and smaller seeds stack; LSTMs train unstacked (cuDNN) unless the loop is forced."""
    from theorylab.nn.models import attention_backend, lstm_backend
    from theorylab.nn.recipes import flipflop_baseline
    from theorylab.nn.regularizers import AttentionSharpening
    from theorylab.nn.train import CUDA_SEED_BYTES_ALONE, _seed_bytes, auto_stack_size

    cuda = torch.device("cuda")
    r = flipflop_baseline(T=512)
    assert _seed_bytes(r.config, r.budget) == CUDA_SEED_BYTES_ALONE == 128 * 2**20
    assert auto_stack_size(r.config, r.budget, 8, cuda) == 1
    assert auto_stack_size(r.config, r.budget, 8, torch.device("cuda:1")) == 1
    # just under the threshold (15 sequences instead of 16): all seeds in one stack
    assert auto_stack_size(r.config, dataclasses.replace(r.budget, batch_size=15), 8, cuda) == 8
    assert auto_stack_size(AttentionSharpening(r.config, 0.1), r.budget, 8, cuda) == 8  # needs the weights
    assert auto_stack_size(dataclasses.replace(r.config, pos="alibi"), r.budget, 8, cuda) == 8
    with attention_backend("explicit"):
        assert auto_stack_size(r.config, r.budget, 8, cuda) == 8
    lstm, lb = LSTMConfig(5, 5, hidden=128), Budget(steps=1, batch_size=16, seq_len=512, lr=1e-3)
    assert auto_stack_size(lstm, lb, 16, cuda) == 1
    with lstm_backend("loop"):
        assert auto_stack_size(lstm, lb, 16, cuda) == 16
    # the CPU rule is unchanged: 16 MiB per seed trains alone
    assert auto_stack_size(lstm, lb, 16, torch.device("cpu")) == 1


def test_the_deterministic_choice_is_validated_recorded_and_restored():
    """``deterministic`` defaults to True (the CPU result is the same bit for bit as asking for it), False runs with
    torch's deterministic mode off during training; the caller's mode is restored either way; a non-bool is refused."""
    prev = torch.are_deterministic_algorithms_enabled()
    seen = []
    probe = FunctionTask("probe", 5, 5, "ce", lambda rng, b, t: _probe_batch(rng, b, t, seen))
    small = dataclasses.replace(BUDGET, steps=3, eval_every=0, eval_batches=0)
    default = train(probe, TF, small, seeds=(0, 1))
    on = train(probe, TF, small, seeds=(0, 1), deterministic=True)
    off = train(probe, TF, small, seeds=(0, 1), deterministic=False)
    assert default.throughput["deterministic"] is True and off.throughput["deterministic"] is False
    assert np.array_equal(default.final["loss"], on.final["loss"])
    # the mode while each batch was drawn (2 seeds x 3 steps per run)
    assert seen[: 2 * 3] == [True] * 6 and seen[-2 * 3 :] == [False] * 6
    assert torch.are_deterministic_algorithms_enabled() == prev
    with pytest.raises(TypeError, match="deterministic must be None or a bool"):
        train(TASK, TF, small, deterministic=1)


def _probe_batch(rng, batch, T, seen):
    seen.append(torch.are_deterministic_algorithms_enabled())
    return TASK.sample_batch(rng, batch, T)


def test_dropout_runs_are_reproducible_and_leave_the_global_rng_alone():
    cfg = dataclasses.replace(TF, dropout=0.3, emb_dropout=0.2)
    torch.manual_seed(7)
    expected = torch.rand(1)
    torch.manual_seed(7)
    a = train(TASK, cfg, BUDGET, seeds=(0, 1))
    assert torch.rand(1) == expected
    b = train(TASK, cfg, BUDGET, seeds=(0, 1))
    assert a.history == b.history
    no_dropout = train(TASK, TF, BUDGET, seeds=(0, 1))
    assert a.history != no_dropout.history


class _PenalisedConfig:
    """A custom config: an MLP whose forward also returns an L2 penalty (the aux-loss protocol)."""

    vocab_size, n_outputs = 5, 5

    def __init__(self, coef: float):
        self.coef = coef

    def build(self, seed: int):
        inner = MLPConfig(5, 5, context=2, d_hidden=8).build(seed)
        coef = self.coef

        class Penalised(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.inner = inner

            def forward(self, x):
                out = self.inner(x)
                return out, coef * sum((p * p).sum() for p in self.inner.layers.parameters())

        return Penalised()


def test_models_may_add_an_auxiliary_loss():
    plain = train(TASK, _PenalisedConfig(0.0), BUDGET, seeds=(0, 1))
    penalised = train(TASK, _PenalisedConfig(10.0), BUDGET, seeds=(0, 1))
    norm = lambda m: sum(float((p.detach() ** 2).sum()) for p in m.inner.layers.parameters())
    assert all(norm(a) < norm(b) for a, b in zip(penalised.models, plain.models, strict=True))
    assert np.all(penalised.final["train_loss"] < 10)  # the task loss, without the (large) penalty
    assert "flops_per_token" in penalised.throughput and penalised.throughput["threads"] == 1


def test_progress_line(capsys):
    from theorylab.nn.train import _Progress

    bar = _Progress("demo", 10, enabled=True)
    assert not bar.due()  # nothing during the first seconds
    bar.start -= 10
    bar.last -= 10
    assert bar.due()
    bar.update(5, 0.5, 0.75)
    bar.close()
    err = capsys.readouterr().err
    assert "[demo] step 5/10 loss 0.5000 acc 0.7500" in err and err.endswith("\n")
    assert not _Progress("quiet", 10, enabled=False).due()


@pytest.mark.parametrize(
    "name",
    [*CONFIGS, "dropout", "frozen"],
)
def test_a_single_seed_with_bound_parameters_trains_as_through_functional_call(name, monkeypatch):
    """One seed trains its module directly (parameters bound once): bit-identical to the functional_call path."""
    if name == "dropout":
        cfg, changes = dataclasses.replace(TF, dropout=0.3), {"grad_clip": 0.05}
    elif name == "frozen":
        cfg, changes = dataclasses.replace(TF, freeze=("blocks.0.mlp", "pos")), {"weight_decay": 0.5}
    else:
        cfg, changes = CONFIGS[name]
    budget = dataclasses.replace(BUDGET, **changes)
    bound = train(TASK, cfg, budget, seeds=(3,))
    monkeypatch.setattr(TRAIN_MODULE, "BIND_SINGLE_SEED", False)
    reference = train(TASK, cfg, budget, seeds=(3,))
    assert bound.history == reference.history
    assert all(np.array_equal(bound.final[k], reference.final[k]) for k in bound.final)
    for wa, wb in zip(_weights(bound), _weights(reference), strict=True):
        assert all(torch.equal(wa[k], wb[k]) for k in wa)


def test_single_seed_checkpoints_resume_across_the_bound_and_reference_layouts(tmp_path, monkeypatch):
    full = train(TASK, TF, BUDGET, seeds=(2,))
    monkeypatch.setattr(TRAIN_MODULE, "BIND_SINGLE_SEED", False)  # a checkpoint with the seed axis
    train(
        TASK,
        TF,
        dataclasses.replace(BUDGET, steps=6, checkpoint_every=6),
        seeds=(2,),
        checkpoint_dir=tmp_path,
    )
    monkeypatch.setattr(TRAIN_MODULE, "BIND_SINGLE_SEED", True)
    resumed = train(
        TASK,
        TF,
        dataclasses.replace(BUDGET, checkpoint_every=6),
        seeds=(2,),
        checkpoint_dir=tmp_path,
        resume=True,
    )
    assert resumed.history == full.history
    for wa, wb in zip(_weights(full), _weights(resumed), strict=True):
        assert all(torch.equal(wa[k], wb[k]) for k in wa)
