"""The harness models: each variant's forward equals the numpy reference with the same weights; freeze flags."""

import dataclasses

import numpy as np
import pytest
import torch

from theorylab.nn.models import LSTMConfig, MLPConfig, TransformerConfig, count_parameters
from theorylab.nn.reference import reference_forward

BASE = TransformerConfig(
    vocab_size=7, n_outputs=5, d_model=16, n_layers=2, n_heads=2, max_len=12, init_std=0.3
)

VARIANTS = {
    "pre-ln softmax learned causal": {},
    "post-ln": {"norm": "post"},
    "no-ln": {"norm": "none"},
    "no-ln final-norm": {"norm": "none", "final_norm": True},
    "bidirectional": {"causal": False},
    "linear attention": {"attention": "linear"},
    "linear attention unnormalised": {"attention": "linear", "linear_norm": False},
    "sinusoidal": {"pos": "sinusoidal"},
    "linear pe": {"pos": "linear"},
    "no pe": {"pos": "none"},
    "rope": {"pos": "rope"},
    "alibi": {"pos": "alibi"},
    "alibi, linear attention": {"pos": "alibi", "attention": "linear"},
    "uniform attention": {"uniform_attention": True},
    "one-hot + identity decoder": {"one_hot_embedding": True, "identity_decoder": True},
    "relu, no mlp bias, no residual": {"activation": "relu", "bias": False, "residual": False},
    "attention only, 4 heads": {"d_ff": 0, "n_heads": 4, "n_layers": 1},
    "ln without affine, custom scale": {"ln_affine": False, "attn_scale": 0.7},
}


def _params(module):
    return {k: v.detach().double().numpy() for k, v in module.state_dict().items()}


def _perturb_(module, rng):
    """Random non-trivial values for LayerNorm gains/biases and all biases (inits leave them at 1 / 0)."""
    with torch.no_grad():
        for name, p in module.named_parameters():
            if name.endswith("bias") or ".ln" in name or name.startswith("ln_f"):
                p.add_(torch.from_numpy(rng.normal(0, 0.3, p.shape)).float())


@pytest.mark.parametrize("name", list(VARIANTS))
def test_transformer_forward_matches_numpy_reference(name):
    cfg = dataclasses.replace(BASE, **VARIANTS[name])
    rng = np.random.default_rng(0)
    model = cfg.build(seed=3).double().eval()
    _perturb_(model, rng)
    tokens = rng.integers(0, cfg.vocab_size, size=(3, 9))
    with torch.no_grad():
        out, attn = model(torch.from_numpy(tokens), return_attention=True)
    ref, ref_attn = reference_forward(cfg, _params(model), tokens, return_attention=True)
    # float64 on both sides; the only differences are summation orders: 1e-10 is ~1e6 ulps of margin
    np.testing.assert_allclose(out.numpy(), ref, rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(torch.stack(attn, 1).numpy(), ref_attn, rtol=1e-10, atol=1e-10)


def test_reference_rejects_a_perturbed_weight():
    """Control: the comparison above can fail."""
    rng = np.random.default_rng(1)
    model = BASE.build(0).double().eval()
    tokens = rng.integers(0, BASE.vocab_size, size=(2, 6))
    P = _params(model)
    P["blocks.1.attn.k.weight"] = P["blocks.1.attn.k.weight"] + rng.normal(0, 1e-3, (16, 16))
    with torch.no_grad():
        out = model(torch.from_numpy(tokens)).numpy()
    assert np.abs(out - reference_forward(BASE, P, tokens)).max() > 1e-8


def test_causal_outputs_ignore_the_future():
    model = BASE.build(0).eval()
    x = torch.randint(0, 7, (2, 10), generator=torch.Generator().manual_seed(0))
    y = x.clone()
    y[:, 6:] = (y[:, 6:] + 1) % 7
    with torch.no_grad():
        a, b = model(x), model(y)
    assert torch.equal(a[:, :6], b[:, :6]) and not torch.allclose(a[:, 6:], b[:, 6:])


def test_uniform_attention_weights_and_no_query_key_parameters():
    cfg = dataclasses.replace(BASE, uniform_attention=True)
    model = cfg.build(0)
    assert not any(".attn.q." in n or ".attn.k." in n for n, _ in model.named_parameters())
    _, attn = model(torch.zeros(1, 4, dtype=torch.long), return_attention=True)
    expected = torch.tril(torch.ones(4, 4)) / torch.arange(1, 5)[:, None]
    assert torch.allclose(attn[0][0, 0], expected)


@pytest.mark.parametrize(
    "cfg, frozen",
    [
        (dataclasses.replace(BASE, one_hot_embedding=True), {"embed.weight"}),
        (dataclasses.replace(BASE, identity_decoder=True), {"head.weight"}),
        (dataclasses.replace(BASE, freeze=("blocks.0.attn", "pos")), None),
        (LSTMConfig(5, 3, d_embed=4, hidden=6, freeze=("embed",)), {"embed.weight"}),
        (MLPConfig(5, 3, context=2), {"embed.weight"}),
    ],
)
def test_freeze_flags_mark_parameters(cfg, frozen):
    model = cfg.build(0)
    got = {n for n, p in model.named_parameters() if not p.requires_grad}
    if frozen is None:
        frozen = {n for n, _ in model.named_parameters() if n.startswith(("blocks.0.attn.", "pos."))}
    assert got == frozen


def test_one_hot_embedding_and_identity_decoder_values():
    cfg = dataclasses.replace(BASE, one_hot_embedding=True, identity_decoder=True)
    model = cfg.build(0)
    assert torch.equal(model.embed.weight, torch.eye(7, 16))
    assert torch.equal(model.head.weight, torch.eye(5, 16)) and model.head.bias is None


def test_same_seed_same_weights_and_global_rng_untouched():
    torch.manual_seed(123)
    before = torch.rand(1)
    torch.manual_seed(123)
    a, b, c = BASE.build(5), BASE.build(5), BASE.build(6)
    assert torch.rand(1) == before
    sa, sb, sc = a.state_dict(), b.state_dict(), c.state_dict()
    assert all(torch.equal(sa[k], sb[k]) for k in sa)
    assert not torch.equal(sa["blocks.0.attn.q.weight"], sc["blocks.0.attn.q.weight"])


def test_lstm_matches_torch_lstm_and_numpy_reference():
    cfg = LSTMConfig(vocab_size=5, n_outputs=4, d_embed=6, hidden=8, n_layers=2)
    model = cfg.build(1).double().eval()
    ref = torch.nn.LSTM(6, 8, num_layers=2, batch_first=True).double()
    ref.load_state_dict(
        {k.removeprefix("lstm."): v for k, v in model.state_dict().items() if k.startswith("lstm.")}
    )
    tokens = torch.randint(0, 5, (3, 11), generator=torch.Generator().manual_seed(0))
    with torch.no_grad():
        ours = model(tokens)
        theirs = model.head(ref(model.embed(tokens))[0])
    np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(
        ours.numpy(), reference_forward(cfg, _params(model), tokens.numpy()), atol=1e-10
    )


def test_lstm_parameter_count_is_the_flipflop_skyline():
    # 4(2*128^2 + 2*128) + 5*128 + (128*5 + 5) = 133,381 (Liu et al., 133K)
    assert count_parameters(LSTMConfig(5, 5).build(0)) == 133_381


@pytest.mark.parametrize("d_embed, context, n_layers", [(None, 1, 1), (None, 4, 2), (3, 3, 0)])
def test_mlp_matches_numpy_reference(d_embed, context, n_layers):
    cfg = MLPConfig(
        vocab_size=4, n_outputs=3, context=context, d_embed=d_embed, d_hidden=7, n_layers=n_layers
    )
    model = cfg.build(2).double().eval()
    tokens = torch.randint(0, 4, (2, 6), generator=torch.Generator().manual_seed(1))
    with torch.no_grad():
        out = model(tokens).numpy()
    np.testing.assert_allclose(
        out, reference_forward(cfg, _params(model), tokens.numpy()), rtol=1e-10, atol=1e-12
    )


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"d_model": 10, "n_heads": 4}, "divisible"),
        ({"norm": "sandwich"}, "norm"),
        ({"pos": "xpos"}, "pos"),
        ({"pos": "rope", "d_model": 12, "n_heads": 4}, "even head dimension"),
        ({"attention": "cosine"}, "attention"),
        ({"one_hot_embedding": True, "d_model": 4, "n_heads": 1}, "vocab_size"),
        ({"identity_decoder": True, "n_outputs": 32}, "n_outputs"),
        ({"dropout": 1.0}, "dropout"),
        ({"d_ff": -1}, "d_ff"),
        ({"n_layers": 0}, "n_layers"),
        ({"freeze": ("nothing",)}, "matches no parameter"),
    ],
)
def test_transformer_config_validation(kwargs, match):
    with pytest.raises(ValueError, match=match):
        dataclasses.replace(BASE, **kwargs).build(0)


def test_learned_positions_reject_too_long_inputs():
    with pytest.raises(ValueError, match="max_len"):
        BASE.build(0)(torch.zeros(1, 13, dtype=torch.long))


def test_invalid_seed_and_mlp_config():
    with pytest.raises(ValueError, match="seed"):
        BASE.build(-1)
    with pytest.raises(ValueError, match="context"):
        MLPConfig(3, 3, context=0)


def test_flipflop_baseline_recipe_has_the_documents_size() -> None:
    from theorylab.nn.recipes import flipflop_baseline

    recipe = flipflop_baseline(T=64, n_seeds=2, emb_dropout=0.5)
    assert recipe.config.emb_dropout == 0.5 and recipe.budget.seq_len == 64 and recipe.seeds == (0, 1)
    n = sum(p.numel() for p in flipflop_baseline().config.build(0).parameters())
    assert 18_500_000 < n < 19_500_000, n  # the "19M" baseline
    with pytest.raises(ValueError, match="n_seeds"):
        flipflop_baseline(n_seeds=0)
