"""The captured training step (``train(..., graph=True)``) rehearsed on the CPU, and the evaluation-time stop rule.

On the CPU nothing is captured: the static-buffer step (batch and learning rate copied into fixed tensors, the
metric window updated in place, the fused capturable AdamW reading a tensor learning rate) runs eagerly, so its
arithmetic must equal the fused eager step's bit for bit; on a GPU the graph replays exactly these kernels."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from theorylab.nn import Budget, CopyTask, TransformerConfig, train  # noqa: E402


def _run(steps: int = 6, seeds=(0, 1, 2), **kw):
    task = CopyTask(vocab_size=5, shift=1)
    cfg = TransformerConfig(5, 5, d_model=16, n_layers=1, n_heads=2, max_len=8)
    budget = Budget(steps=steps, batch_size=4, seq_len=8, lr=1e-2, grad_clip=0.05, eval_batches=1, log_every=1,
                    schedule="warmup_cosine", warmup=2, weight_decay=0.1, eval_every=kw.pop("eval_every", 0))  # fmt: skip
    return train(task, cfg, budget, seeds=seeds, progress=False, **kw)


@pytest.mark.parametrize("seeds", [(0, 1, 2), (4,)], ids=["vmapped", "one-seed"])
def test_the_static_step_equals_the_eager_fused_step_bit_for_bit(seeds):
    """Warm-up and cosine schedule (the tensor learning rate changes every step), active clipping, weight decay."""
    eager, static = _run(seeds=seeds, fast=True, graph=False), _run(seeds=seeds, fast=True, graph=True)
    assert static.throughput["cuda_graph"] == "eager" and eager.throughput["cuda_graph"] == "off"
    assert eager.curve("loss")[1].tolist() == static.curve("loss")[1].tolist()
    for a, b in zip(eager.models, static.models, strict=True):
        assert all(torch.equal(p, q) for p, q in zip(a.parameters(), b.parameters(), strict=True))


def test_a_wrong_learning_rate_in_the_static_step_is_caught():
    """Negative control: the same comparison sees a static step whose learning rate is not updated (kept at the
    first step's), so a stale captured rate cannot pass as equal."""
    import theorylab.nn.graphs as graphs

    orig = graphs.StaticStep.step

    def stale(self, x, y, m, lr):
        return orig(self, x, y, m, float(self.lr))  # keeps the rate it holds

    eager = _run(fast=True, graph=False)
    graphs.StaticStep.step = stale
    try:
        bad = _run(fast=True, graph=True)
    finally:
        graphs.StaticStep.step = orig
    assert eager.curve("loss")[1].tolist() != bad.curve("loss")[1].tolist()


def test_graph_needs_adamw_and_the_cpu_default_is_unchanged():
    task = CopyTask(vocab_size=5, shift=1)
    cfg = TransformerConfig(5, 5, d_model=16, n_layers=1, n_heads=2, max_len=8)
    with pytest.raises(ValueError, match="adamw"):
        train(task, cfg, Budget(steps=2, batch_size=2, seq_len=8, lr=0.1, optimizer="sgd"), graph=True)
    assert _run(steps=2).throughput["cuda_graph"] == "off"  # the CPU default captures nothing


def test_stop_ends_training_at_the_first_evaluation_where_the_rule_holds():
    calls = []

    def rule(step, rec):
        calls.append((step, rec["eval_acc"].copy()))
        return step >= 4

    res = _run(steps=8, fast=True, graph=True, eval_every=2, stop=rule)
    assert [c[0] for c in calls] == [2, 4] and res.throughput["steps_run"] == [4]
    full = _run(steps=8, fast=True, graph=True, eval_every=2)
    assert full.throughput["steps_run"] == [8]
    # the stopped run is the full run's prefix: same history up to step 4
    assert res.curve("loss")[1].tolist() == full.curve("loss")[1][:, :4].tolist()
    with pytest.raises(ValueError, match="eval_every"):
        _run(steps=2, stop=rule)
    with pytest.raises(TypeError, match="callable"):
        _run(steps=2, eval_every=1, stop=3)
