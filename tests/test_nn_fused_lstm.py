"""The fused LSTM path (``torch.lstm``, cuDNN on CUDA) against the loop over positions, in float64 on the CPU:
outputs and gradients equal to rounding, one and two layers; under ``vmap`` over stacked seeds (the harness) the
loop runs (``torch.lstm`` has no batching rule); a wrong gate order is caught by the same comparison."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from theorylab.nn import LSTMConfig, lstm_backend  # noqa: E402

# float64, hidden 16, T = 12: the two paths sum the same products in other orders (~1e-16 per op); 1e-12 leaves
# room, while a permuted gate or a dropped bias moves outputs by >= 1e-2
TOL = 1e-12


def _tokens(B=3, T=12, seed=0):
    return torch.from_numpy(np.random.default_rng(seed).integers(0, 5, size=(B, T)))


@pytest.mark.parametrize("layers", [1, 2])
def test_fused_lstm_equals_the_loop_outputs_and_gradients(layers):
    model = LSTMConfig(5, 4, d_embed=8, hidden=16, n_layers=layers).build(3).double()
    x = _tokens()
    outs, grads = [], []
    for mode in ("loop", "fused"):
        model.zero_grad()
        with lstm_backend(mode):
            out = model(x)
        out.square().sum().backward()
        outs.append(out.detach())
        grads.append([p.grad.clone() for p in model.parameters()])
    assert (outs[0] - outs[1]).abs().max() < TOL
    assert max((a - b).abs().max() for a, b in zip(*grads, strict=True)) < TOL


def test_under_vmap_the_loop_runs_whatever_the_mode():
    from torch.func import functional_call, stack_module_state, vmap

    cfg = LSTMConfig(5, 4, d_embed=8, hidden=16)
    models = [cfg.build(s).double() for s in range(3)]
    params, buffers = stack_module_state(models)
    base = cfg.build(0).double().to("meta")
    x = torch.stack([_tokens(seed=s) for s in range(3)])
    outs = {}
    for mode in ("loop", "fused"):
        with lstm_backend(mode):
            outs[mode] = vmap(lambda p, b, t: functional_call(base, (p, b), (t,)))(params, buffers, x)
    assert torch.equal(outs["loop"], outs["fused"])  # the same loop, bit for bit


def test_a_wrong_gate_order_is_caught():
    """Negative control: swapping the input and forget gate rows of the fused weights changes the outputs."""
    model = LSTMConfig(5, 4, d_embed=8, hidden=16).build(1).double()
    x = _tokens()
    with lstm_backend("loop"):
        ref = model(x)
    w = model.lstm.weight_ih_l0.data
    w[:16], w[16:32] = w[16:32].clone(), w[:16].clone()
    with lstm_backend("fused"):
        bad = model(x)
    assert (ref - bad).abs().max() > 1e-2
    with pytest.raises(ValueError):
        with lstm_backend("cudnn"):
            pass
