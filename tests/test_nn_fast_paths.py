"""The fused attention path, chunked forwards and the CUDA harness paths, checked on the CPU in float64."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from theorylab.nn.models import TransformerConfig, attention_backend, chunked_forward  # noqa: E402

# float64 rounding of a softmax over <= 16 keys and a few layers of width 32: ~1e-16 (measured 1.1e-16); 1e-14 leaves room
# for the different summation order of the fused kernel, while a wrong mask or scale changes outputs by >= 1e-3.
TOL64 = 1e-14


def _configs():
    base = dict(vocab_size=7, n_outputs=5, d_model=32, n_layers=2, n_heads=4, max_len=16)
    yield TransformerConfig(**base)
    yield TransformerConfig(**base, causal=False, norm="post")
    yield TransformerConfig(**base, pos="rope", attn_scale=0.3)
    yield TransformerConfig(**base, pos="sinusoidal", d_ff=0)


@pytest.mark.parametrize("cfg", list(_configs()), ids=lambda c: f"{c.pos}-{c.causal}-{c.norm}")
def test_sdpa_equals_explicit_attention_in_float64(cfg):
    model = cfg.build(3).double().eval()
    tokens = torch.from_numpy(np.random.default_rng(0).integers(0, 7, size=(3, 16)))
    with torch.no_grad(), attention_backend("explicit"):
        ref = model(tokens)
    with torch.no_grad(), attention_backend("sdpa"):
        fused = model(tokens)
        _, weights = model(tokens, return_attention=True)  # weights requested: the explicit path still runs
    assert torch.allclose(fused, ref, rtol=0, atol=TOL64), (fused - ref).abs().max()
    assert len(weights) == cfg.n_layers and all(w.shape == (3, 4, 16, 16) for w in weights)


def test_sdpa_path_is_really_taken_and_differs_from_a_wrong_mask():
    """Negative control: the fused path with the mask flipped (non-causal) differs from the causal explicit path."""
    cfg = TransformerConfig(7, 5, d_model=32, n_layers=2, n_heads=4, max_len=16)
    model = cfg.build(1).double().eval()
    tokens = torch.from_numpy(np.random.default_rng(1).integers(0, 7, size=(2, 16)))
    with torch.no_grad(), attention_backend("explicit"):
        ref = model(tokens)
    wrong = TransformerConfig(7, 5, d_model=32, n_layers=2, n_heads=4, max_len=16, causal=False)
    other = wrong.build(1).double().eval()
    with torch.no_grad(), attention_backend("sdpa"):
        bad = other(tokens)
    assert (bad - ref).abs().max() > 1e-3


def test_forward_keeps_no_weights_unless_asked():
    cfg = TransformerConfig(7, 5, d_model=16, n_layers=3, n_heads=2, max_len=8)
    model = cfg.build(0)
    out = model(torch.zeros(2, 8, dtype=torch.long))
    assert isinstance(out, torch.Tensor)
    out, w = model(torch.zeros(2, 8, dtype=torch.long), return_attention=True)
    assert len(w) == 3


def test_chunked_forward_matches_the_full_forward_and_restores_the_model():
    cfg = TransformerConfig(7, 5, d_model=16, n_layers=2, n_heads=2, max_len=8)
    model = cfg.build(0).double().train()
    tokens = torch.from_numpy(np.random.default_rng(2).integers(0, 7, size=(11, 8)))
    out, w = chunked_forward(model, tokens, chunk=4, return_attention=True)
    model.eval()
    with torch.no_grad():
        ref, ref_w = model(tokens, return_attention=True)
    assert torch.equal(out, ref) or torch.allclose(out, ref, rtol=0, atol=TOL64)
    assert all(torch.allclose(a, b, rtol=0, atol=TOL64) for a, b in zip(w, ref_w, strict=True))
    model.train()
    chunked_forward(model, tokens, chunk=5)
    assert model.training and next(model.parameters()).device.type == "cpu"
    with pytest.raises(ValueError, match="chunk"):
        chunked_forward(model, tokens, chunk=0)
    with pytest.raises(ValueError, match="attention backend"):
        with attention_backend("flash"):
            pass


# ------------------------------------------------------------------------------------------------ harness


def _small_run(**kw):
    from theorylab.nn import Budget, CopyTask, train

    task = CopyTask(vocab_size=5, shift=1)
    cfg = TransformerConfig(5, 5, d_model=16, n_layers=1, n_heads=2, max_len=8)
    budget = Budget(steps=6, batch_size=4, seq_len=8, lr=1e-2, grad_clip=0.05, eval_batches=1, log_every=1)
    return train(task, cfg, budget, seeds=(0, 1, 2), **kw)


def test_fast_paths_give_the_same_per_seed_training_as_the_default_cpu_paths():
    """Fused AdamW, multi-tensor clipping (the clip is active: 0.05) and the prefetching feed: same batches, same
    update up to float32 rounding. 1e-5 on losses after 6 steps: float32 rounding of the two summation orders is
    ~1e-7 per step; a wrong clip or a shifted batch stream changes losses by > 1e-3."""
    ref, fast = _small_run(), _small_run(fast=True)
    a, b = ref.curve("loss")[1], fast.curve("loss")[1]
    assert np.abs(a - b).max() < 1e-5, np.abs(a - b).max()
    assert ref.curve("loss")[1][:, 0].tolist() == fast.curve("loss")[1][:, 0].tolist()  # step 1: same batches
    again = _small_run()
    assert again.curve("loss")[1].tolist() == a.tolist()  # the CPU default path is bit-reproducible
    assert ref.throughput["marginal_step_ms"] > 0 and ref.throughput["mfu"] is None  # no peak on the CPU


def test_prefetching_feed_yields_the_same_stream():
    from theorylab.nn import Budget, CopyTask
    from theorylab.nn.train import _Batches

    task = CopyTask(vocab_size=5, shift=1)
    budget = Budget(steps=5, batch_size=3, seq_len=6, lr=0.0)
    feeds = [
        _Batches(
            task, budget, [np.random.default_rng([s, 1]) for s in (0, 1)], None, torch.device("cpu"), p, True
        )
        for p in (False, True)
    ]
    for _ in range(budget.steps):
        (a, sa), (b, sb) = feeds[0].next(), feeds[1].next()
        assert all(torch.equal(u, v) for u, v in zip(a, b, strict=True)) and sa == sb
    for f in feeds:
        f.close()


def test_multi_tensor_clip_equals_the_per_tensor_clip():
    from theorylab.nn.train import _Stack

    cfg = TransformerConfig(5, 5, d_model=16, n_layers=2, n_heads=2, max_len=8)
    stacks = [_Stack(cfg, (0, 1, 2), torch.device("cpu"), True, False) for _ in range(2)]
    gen = torch.Generator().manual_seed(0)
    grads = {k: torch.randn(v.shape, generator=gen, dtype=v.dtype) for k, v in stacks[0].trainable.items()}
    grads[next(iter(grads))][1] *= 1e-4  # seed 1 has a small first gradient
    for st in stacks:
        for k, p in st.trainable.items():
            p.grad = grads[k].clone()
    stacks[0].clip_(1.0, fast=False)
    stacks[1].clip_(1.0, fast=True)
    for k in grads:
        a, b = stacks[0].trainable[k].grad, stacks[1].trainable[k].grad
        assert torch.allclose(a, b, rtol=1e-6, atol=0), k
        assert not torch.allclose(a, grads[k])  # the clip was active


def test_fused_optimizer_equals_the_per_tensor_optimizer():
    from theorylab.nn import Budget
    from theorylab.nn.train import _make_optimizer

    for opt_name in ("adamw", "sgd"):
        budget = Budget(
            steps=1, batch_size=1, seq_len=1, lr=0.1, optimizer=opt_name, weight_decay=0.1, momentum=0.9
        )
        ps = [
            [torch.ones(3, 4, requires_grad=True), torch.full((5,), 2.0, requires_grad=True)]
            for _ in range(2)
        ]
        opts = [_make_optimizer(p, budget, fast=f) for p, f in zip(ps, (False, True), strict=True)]
        for _ in range(3):
            for p, o in zip(ps, opts, strict=True):
                for t in p:
                    t.grad = torch.sin(t.detach() * 3)
                o.step()
        assert all(torch.allclose(a, b, rtol=1e-6) for a, b in zip(*ps, strict=True)), opt_name


def test_evaluate_restores_the_models_mode_and_thread_count_is_given_back():
    from theorylab.nn import CopyTask, evaluate
    from theorylab.nn.train import num_threads

    task = CopyTask(vocab_size=5, shift=1)
    model = TransformerConfig(5, 5, d_model=16, n_layers=1, n_heads=2, max_len=8).build(0).train()
    before = torch.get_num_threads()
    r = evaluate(task, model, np.random.default_rng(0), 2, 8, batch_size=4)
    assert r["count"] == 2 * 4 * 8 - 2 * 4 and model.training
    assert torch.get_num_threads() == before
    with num_threads(1):
        assert torch.get_num_threads() == 1
    assert torch.get_num_threads() == before
    with pytest.raises(ValueError, match="threads"):
        with num_threads(0):
            pass


def test_vmap_sdpa_backends_run_forward_and_backward_under_vmap():
    """The probed list ends with the math backend, and a stacked fused forward with it equals the explicit path
    and backpropagates (a kernel whose backward fails under vmap, like the memory-efficient one on CUDA, is never
    used for stacked seeds without a successful probe)."""
    import torch.nn.functional as F
    from torch.nn.attention import SDPBackend, sdpa_kernel

    from theorylab.nn.models import vmap_sdpa_backends

    g = torch.Generator().manual_seed(0)
    q, k, v = (
        torch.randn(3, 2, 2, 16, 8, generator=g, dtype=torch.float64, requires_grad=True) for _ in "qkv"
    )
    backends = vmap_sdpa_backends(q, True)
    assert backends[-1] == SDPBackend.MATH
    with sdpa_kernel(backends):
        out = torch.vmap(lambda a, b, c: F.scaled_dot_product_attention(a, b, c, is_causal=True))(q, k, v)
    scores = (q @ k.transpose(-1, -2)) / 8**0.5
    mask = torch.ones(16, 16, dtype=torch.bool).tril()
    ref = scores.masked_fill(~mask, float("-inf")).softmax(-1) @ v
    assert torch.allclose(out, ref, atol=1e-12)
    (gq,) = torch.autograd.grad(out.sum(), [q])
    assert gq.shape == q.shape and torch.isfinite(gq).all()
