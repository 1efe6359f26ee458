"""Configurable models for the trained tier: Transformer, LSTM and MLP.

Every model maps int64 tokens ``[B, T]`` to outputs ``[B, T, n_outputs]``. A config is a frozen dataclass whose
``build(seed)`` returns a freshly initialised ``torch.nn.Module``; the same seed gives the same weights. Parameters
that a freeze flag fixes are ordinary parameters with ``requires_grad=False``: the harness never updates them.
Forward passes are written without in-place updates or data-dependent control flow, so that
``torch.func.functional_call`` + ``torch.func.vmap`` can run many seeds at once.
"""

from __future__ import annotations

import math
from contextlib import contextmanager
from dataclasses import dataclass

from theorylab._extras import needs
from theorylab._fmt import plain

with needs("trained"):
    import torch
    import torch.nn.functional as F
    from torch import nn

NORMS = ("pre", "post", "none")
ATTENTIONS = ("softmax", "linear")
POSITIONS = ("learned", "sinusoidal", "linear", "none", "rope", "alibi")
ACTIVATIONS = {"gelu": F.gelu, "relu": F.relu, "tanh": torch.tanh}


def _check_choice(name: str, value: object, choices) -> None:
    if value not in choices:
        raise ValueError(f"{name} must be one of {tuple(choices)}, got {plain(value)}")


def _check_positive(**values: int) -> None:
    for name, value in values.items():
        if not isinstance(value, int) or value < 1:
            raise ValueError(f"{name} must be a positive int, got {plain(value)}")


def _seeded_build(seed: int, make):
    """Run ``make()`` under a forked global torch RNG seeded with ``seed`` (the caller's RNG is untouched)."""
    if not isinstance(seed, int) or seed < 0:
        raise ValueError(f"seed must be a non-negative int, got {plain(seed)}")
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        return make()


def _freeze(module: nn.Module, prefixes: tuple[str, ...]) -> None:
    names = [n for n, _ in module.named_parameters()]
    for prefix in prefixes:
        hits = [n for n in names if n == prefix or n.startswith(prefix + ".")]
        if not hits:
            raise ValueError(f"freeze prefix {prefix!r} matches no parameter; parameters are {names}")
        for n in hits:
            module.get_parameter(n).requires_grad_(False)


def count_parameters(module: nn.Module, trainable_only: bool = False) -> int:
    """Number of scalar parameters (optionally only those with ``requires_grad``)."""
    return sum(p.numel() for p in module.parameters() if p.requires_grad or not trainable_only)


def sinusoidal_positions(T: int, d: int, device=None, dtype=torch.float32) -> torch.Tensor:
    """The sinusoidal encoding of Vaswani et al.: ``P[t, 2i] = sin(t / 10000^{2i/d})``, ``P[t, 2i+1] = cos(...)``."""
    t = torch.arange(T, device=device, dtype=torch.float64)[:, None]
    freq = torch.exp(-math.log(10000.0) * torch.arange(0, d, 2, device=device, dtype=torch.float64) / d)
    P = torch.zeros(T, d, device=device, dtype=torch.float64)
    P[:, 0::2] = torch.sin(t * freq)
    P[:, 1::2] = torch.cos(t * freq[: d // 2])
    return P.to(dtype)


ATTENTION_BACKENDS = ("auto", "sdpa", "explicit")
_BACKEND = {"mode": "auto"}


@contextmanager
def attention_backend(mode: str):
    """Choose how softmax attention is computed when no caller needs the weights: ``"auto"`` (fused
    ``scaled_dot_product_attention`` on CUDA, the explicit ``softmax(q k^T s) v`` on the CPU, where ``vmap`` over the
    fused kernel falls back to a per-seed loop and the explicit path keeps CPU results bit-identical), ``"sdpa"``
    (fused on every device) or ``"explicit"`` (never fused)."""
    _check_choice("attention backend", mode, ATTENTION_BACKENDS)
    prev, _BACKEND["mode"] = _BACKEND["mode"], mode
    try:
        yield
    finally:
        _BACKEND["mode"] = prev


def fused_attention_applies(cfg: TransformerConfig) -> bool:
    """The fused kernel computes exactly softmax attention with a causal or full mask and no score bias."""
    return not (cfg.uniform_attention or cfg.attention != "softmax" or cfg.pos == "alibi")


def _use_sdpa(cfg: TransformerConfig, x: torch.Tensor, need_weights: bool) -> bool:
    if need_weights or not fused_attention_applies(cfg):
        return False
    mode = _BACKEND["mode"]
    return mode == "sdpa" or (mode == "auto" and x.device.type == "cuda")


_VMAP_SDPA: dict[tuple, list] = {}


def vmap_sdpa_backends(q: torch.Tensor, causal: bool) -> list:
    """The fused-attention backends whose forward and backward run under ``vmap`` on ``q``'s device and dtype,
    probed once per (device, dtype, head size, causal) on a 2-seed stack of tiny inputs. PyTorch's memory-efficient
    kernel fails its backward under ``vmap`` ("LSE is not correctly aligned"; seen on an H100 with torch 2.11), so
    stacked seeds must not reach it; the math backend always runs and closes the list."""
    from torch.nn.attention import SDPBackend, sdpa_kernel

    key = (q.device.type, q.device.index, q.dtype, q.shape[-1], causal)
    if key not in _VMAP_SDPA:
        names = ("FLASH_ATTENTION", "CUDNN_ATTENTION", "EFFICIENT_ATTENTION")
        found = [getattr(SDPBackend, n) for n in names if hasattr(SDPBackend, n)]
        ok = []
        for backend in found:
            try:
                with sdpa_kernel([backend]), torch.inference_mode(False), torch.enable_grad():
                    shape = (2, 2, 2, 64, q.shape[-1])
                    leaves = [
                        torch.randn(shape, device=q.device, dtype=q.dtype, requires_grad=True) for _ in "qkv"
                    ]
                    out = torch.vmap(
                        lambda a, b, c: F.scaled_dot_product_attention(a, b, c, is_causal=causal)
                    )(*leaves)
                    torch.autograd.grad(out.float().square().sum(), leaves)
                ok.append(backend)
            except RuntimeError:
                continue
        _VMAP_SDPA[key] = ok + [SDPBackend.MATH]
    return _VMAP_SDPA[key]


def _under_vmap(x: torch.Tensor) -> bool:
    """Whether ``x`` is a vmapped (batched) tensor: ``torch.lstm`` has no batching rule, so stacked seeds keep the
    loop (an unstacked forward, e.g. an evaluation, takes the fused op)."""
    check = getattr(getattr(torch._C, "_functorch", None), "is_batchedtensor", None)
    return bool(check(x)) if check is not None else False


LSTM_BACKENDS = ("auto", "fused", "loop")
_LSTM_BACKEND = {"mode": "auto"}


@contextmanager
def lstm_backend(mode: str):
    """Choose how :class:`LSTM` runs its recurrence: ``"auto"`` (PyTorch's fused ``torch.lstm``, cuDNN, on CUDA; the
    loop over positions on the CPU, bit-identical to earlier versions), ``"fused"`` (``torch.lstm`` on every device)
    or ``"loop"`` (the Python loop: 12 kernels per position and layer). Under ``vmap`` (the harness's stacked
    seeds) the loop runs whatever the mode: ``torch.lstm`` has no batching rule."""
    _check_choice("LSTM backend", mode, LSTM_BACKENDS)
    prev, _LSTM_BACKEND["mode"] = _LSTM_BACKEND["mode"], mode
    try:
        yield
    finally:
        _LSTM_BACKEND["mode"] = prev


def attention_mask(T: int, causal: bool, device=None) -> torch.Tensor:
    """Bool ``[T, T]``: entry (query i, key j) is True iff i may attend to j."""
    full = torch.ones(T, T, dtype=torch.bool, device=device)
    return torch.tril(full) if causal else full


# ----------------------------------------------------------------------------------------------- Transformer


@dataclass(frozen=True)
class TransformerConfig:
    """A GPT-style Transformer with the switches the documents vary.

    ``norm``: ``"pre"`` (x + f(LN x)), ``"post"`` (LN(x + f(x))) or ``"none"``. ``attention``: ``"softmax"``
    (softmax(q k^T * scale) v) or ``"linear"`` (masked q k^T * scale, divided by the number of visible keys when
    ``linear_norm``, times v). ``pos``: ``"learned"``, ``"sinusoidal"`` (added), ``"linear"`` (adds ``t / max_len``
    to the last coordinate, t = 0-based position) or ``"none"``. ``d_ff=0`` removes the MLP blocks; ``residual=False``
    drops the skip connections. Freeze flags: ``uniform_attention`` (each query averages the values it may see; no
    query/key weights exist), ``one_hot_embedding`` (fixed identity embedding, needs ``vocab_size <= d_model``),
    ``identity_decoder`` (fixed readout of the first ``n_outputs`` coordinates), ``freeze`` (parameter-name
    prefixes, e.g. ``("embed", "blocks.0.attn.v")``). Parameter names: ``embed.weight``, ``pos.weight``,
    ``blocks.{l}.ln1/attn.{q,k,v,o}/ln2/mlp.{fc1,fc2}``, ``ln_f``, ``head``.
    """

    vocab_size: int
    n_outputs: int
    d_model: int = 64
    n_layers: int = 2
    n_heads: int = 4
    d_ff: int | None = None
    causal: bool = True
    norm: str = "pre"
    final_norm: bool | None = None
    ln_affine: bool = True
    ln_eps: float = 1e-5
    attention: str = "softmax"
    linear_norm: bool = True
    attn_scale: float | None = None
    pos: str = "learned"
    max_len: int = 512
    activation: str = "gelu"
    bias: bool = True
    residual: bool = True
    dropout: float = 0.0
    emb_dropout: float = 0.0
    uniform_attention: bool = False
    one_hot_embedding: bool = False
    identity_decoder: bool = False
    freeze: tuple[str, ...] = ()
    init_std: float = 0.02

    def __post_init__(self) -> None:
        _check_positive(
            vocab_size=self.vocab_size,
            n_outputs=self.n_outputs,
            d_model=self.d_model,
            n_layers=self.n_layers,
            n_heads=self.n_heads,
            max_len=self.max_len,
        )
        if self.d_model % self.n_heads:
            raise ValueError(f"d_model={self.d_model} must be divisible by n_heads={self.n_heads}")
        _check_choice("norm", self.norm, NORMS)
        _check_choice("attention", self.attention, ATTENTIONS)
        _check_choice("pos", self.pos, POSITIONS)
        _check_choice("activation", self.activation, ACTIVATIONS)
        if self.d_ff is not None and (not isinstance(self.d_ff, int) or self.d_ff < 0):
            raise ValueError(f"d_ff must be None or an int >= 0, got {plain(self.d_ff)}")
        if self.pos == "sinusoidal" and self.d_model % 2:
            raise ValueError("sinusoidal positions need an even d_model")
        if self.pos == "rope" and (self.d_model // self.n_heads) % 2:
            raise ValueError("rope positions need an even head dimension d_model / n_heads")
        if self.one_hot_embedding and self.vocab_size > self.d_model:
            raise ValueError(
                f"one_hot_embedding needs vocab_size ({self.vocab_size}) <= d_model ({self.d_model})"
            )
        if self.identity_decoder and self.n_outputs > self.d_model:
            raise ValueError(
                f"identity_decoder needs n_outputs ({self.n_outputs}) <= d_model ({self.d_model})"
            )
        for p in (self.dropout, self.emb_dropout):
            if not 0.0 <= p < 1.0:
                raise ValueError(f"dropout probabilities must lie in [0, 1), got {p}")
        if not isinstance(self.freeze, tuple):
            raise TypeError("freeze must be a tuple of parameter-name prefixes")

    @property
    def ff_width(self) -> int:
        return 4 * self.d_model if self.d_ff is None else self.d_ff

    @property
    def has_final_norm(self) -> bool:
        return (self.norm == "pre") if self.final_norm is None else self.final_norm

    @property
    def has_dropout(self) -> bool:
        return self.dropout > 0 or self.emb_dropout > 0

    def activation_floats_per_token(self, T: int) -> int:
        """Size of the largest activation per token (attention weights, MLP hidden or residual stream)."""
        return max(self.n_heads * T, self.ff_width, self.d_model)

    def build(self, seed: int = 0) -> Transformer:
        return _seeded_build(seed, lambda: Transformer(self))

    def flops_per_token(self, T: int) -> float:
        """Training FLOPs per token: 2 FLOPs per multiply-add, backward = 2x forward (the MFU convention of PaLM)."""
        d, L = self.d_model, self.n_layers
        per_layer = 2 * d * d + 2 * d * self.ff_width + (0 if self.uniform_attention else 2 * d * d)  # MACs
        keys = T / 2 if self.causal else T  # average number of keys a query sees
        attn = 0 if self.uniform_attention else 2 * keys * d  # q.k scores and the weighted sum of values
        return 3 * 2 * (L * (per_layer + attn) + d * self.n_outputs)


def _layer_norm(cfg: TransformerConfig) -> nn.Module:
    return nn.LayerNorm(cfg.d_model, eps=cfg.ln_eps, elementwise_affine=cfg.ln_affine)


def rope_rotate(x: torch.Tensor) -> torch.Tensor:
    r"""Rotary positions (Su et al.): rotate each pair (2i, 2i+1) of a head vector at position t (0-based) by the
    angle $t\,10000^{-2i/d_h}$; ``x`` is ``[..., T, d_h]``. Scores then depend on positions only through $j-i$."""
    T, dh = x.shape[-2], x.shape[-1]
    freq = 10000.0 ** (-torch.arange(0, dh, 2, device=x.device, dtype=torch.float64) / dh)
    angle = (torch.arange(T, device=x.device, dtype=torch.float64)[:, None] * freq).to(x.dtype)
    cos, sin = torch.cos(angle), torch.sin(angle)
    even, odd = x[..., 0::2], x[..., 1::2]
    return torch.stack((even * cos - odd * sin, even * sin + odd * cos), dim=-1).flatten(-2)


def alibi_bias(H: int, T: int, device=None, dtype=torch.float32) -> torch.Tensor:
    r"""ALiBi (Press et al.): score bias $-m_h\,|i-j|$ with head slopes $m_h=2^{-8(h+1)/H}$, ``[H, T, T]``."""
    slopes = 2.0 ** (-8.0 * torch.arange(1, H + 1, device=device, dtype=torch.float64) / H)
    pos = torch.arange(T, device=device, dtype=torch.float64)
    dist = (pos[:, None] - pos[None, :]).abs()
    return (-slopes[:, None, None] * dist).to(dtype)


class Attention(nn.Module):
    """Multi-head self-attention; returns the output and the attention weights ``[B, H, T, T]`` (None when
    ``need_weights`` is False and the fused kernel ran: see :func:`attention_backend`)."""

    def __init__(self, cfg: TransformerConfig):
        super().__init__()
        d = cfg.d_model
        self.cfg = cfg
        if not cfg.uniform_attention:
            self.q = nn.Linear(d, d, bias=cfg.bias)
            self.k = nn.Linear(d, d, bias=cfg.bias)
        self.v = nn.Linear(d, d, bias=cfg.bias)
        self.o = nn.Linear(d, d, bias=cfg.bias)

    def forward(self, x: torch.Tensor, need_weights: bool = True) -> tuple[torch.Tensor, torch.Tensor | None]:
        cfg = self.cfg
        B, T, d = x.shape
        H = cfg.n_heads
        dh = d // H
        v = self.v(x).reshape(B, T, H, dh).transpose(1, 2)
        if _use_sdpa(cfg, x, need_weights):
            scale = cfg.attn_scale if cfg.attn_scale is not None else 1.0 / math.sqrt(dh)
            q = self.q(x).reshape(B, T, H, dh).transpose(1, 2)
            k = self.k(x).reshape(B, T, H, dh).transpose(1, 2)
            if cfg.pos == "rope":
                q, k = rope_rotate(q), rope_rotate(k)
            if _under_vmap(q):
                from torch.nn.attention import sdpa_kernel

                with sdpa_kernel(vmap_sdpa_backends(q, cfg.causal)):
                    out = F.scaled_dot_product_attention(q, k, v, is_causal=cfg.causal, scale=scale)
            else:
                out = F.scaled_dot_product_attention(q, k, v, is_causal=cfg.causal, scale=scale)
            return self.o(out.transpose(1, 2).reshape(B, T, d)), None
        allowed = attention_mask(T, cfg.causal, x.device)
        if cfg.uniform_attention:
            w = allowed.to(x.dtype) / allowed.sum(-1, keepdim=True).to(x.dtype)
            w = w.expand(B, H, T, T)
        else:
            scale = cfg.attn_scale if cfg.attn_scale is not None else 1.0 / math.sqrt(dh)
            q = self.q(x).reshape(B, T, H, dh).transpose(1, 2)
            k = self.k(x).reshape(B, T, H, dh).transpose(1, 2)
            if cfg.pos == "rope":
                q, k = rope_rotate(q), rope_rotate(k)
            s = (q @ k.transpose(-1, -2)) * scale
            if cfg.pos == "alibi":
                s = s + alibi_bias(H, T, x.device, s.dtype)
            if cfg.attention == "softmax":
                w = torch.softmax(s.masked_fill(~allowed, float("-inf")), dim=-1)
            else:
                w = s * allowed
                if cfg.linear_norm:
                    w = w / allowed.sum(-1, keepdim=True).to(x.dtype)
        out = (w @ v).transpose(1, 2).reshape(B, T, d)
        return self.o(out), w


class MLPBlock(nn.Module):
    def __init__(self, cfg: TransformerConfig):
        super().__init__()
        self.fc1 = nn.Linear(cfg.d_model, cfg.ff_width, bias=cfg.bias)
        self.fc2 = nn.Linear(cfg.ff_width, cfg.d_model, bias=cfg.bias)
        self.act = ACTIVATIONS[cfg.activation]

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc2(self.act(self.fc1(x)))


class Block(nn.Module):
    def __init__(self, cfg: TransformerConfig):
        super().__init__()
        self.cfg = cfg
        self.attn = Attention(cfg)
        self.mlp = MLPBlock(cfg) if cfg.ff_width > 0 else None
        if cfg.norm != "none":
            self.ln1 = _layer_norm(cfg)
            if self.mlp is not None:
                self.ln2 = _layer_norm(cfg)
        self.drop = nn.Dropout(cfg.dropout)

    def _sublayer(self, x: torch.Tensor, f, ln) -> tuple[torch.Tensor, object]:
        cfg = self.cfg
        h = ln(x) if cfg.norm == "pre" else x
        out = f(h)
        extra = None
        if isinstance(out, tuple):
            out, extra = out
        out = self.drop(out)
        y = x + out if cfg.residual else out
        if cfg.norm == "post":
            y = ln(y)
        return y, extra

    def forward(self, x: torch.Tensor, need_weights: bool = True) -> tuple[torch.Tensor, torch.Tensor | None]:
        ident = lambda z: z
        attn = lambda h: self.attn(h, need_weights)
        x, w = self._sublayer(x, attn, getattr(self, "ln1", ident))
        if self.mlp is not None:
            x, _ = self._sublayer(x, self.mlp, getattr(self, "ln2", ident))
        return x, w


class Transformer(nn.Module):
    """The module built by :class:`TransformerConfig`; ``forward(tokens, return_attention=False)``."""

    def __init__(self, cfg: TransformerConfig):
        super().__init__()
        self.cfg = cfg
        d = cfg.d_model
        self.embed = nn.Embedding(cfg.vocab_size, d)
        if cfg.pos == "learned":
            self.pos = nn.Embedding(cfg.max_len, d)
        self.blocks = nn.ModuleList(Block(cfg) for _ in range(cfg.n_layers))
        if cfg.has_final_norm:
            self.ln_f = _layer_norm(cfg)
        self.head = nn.Linear(d, cfg.n_outputs, bias=cfg.bias and not cfg.identity_decoder)
        self.emb_drop = nn.Dropout(cfg.emb_dropout)
        self._init_weights()

    def _init_weights(self) -> None:
        cfg = self.cfg
        for m in self.modules():
            if isinstance(m, nn.Linear | nn.Embedding):
                nn.init.normal_(m.weight, 0.0, cfg.init_std)
                if getattr(m, "bias", None) is not None:
                    nn.init.zeros_(m.bias)
        with torch.no_grad():
            if cfg.one_hot_embedding:
                self.embed.weight.copy_(torch.eye(cfg.vocab_size, cfg.d_model))
                self.embed.weight.requires_grad_(False)
            if cfg.identity_decoder:
                self.head.weight.copy_(torch.eye(cfg.n_outputs, cfg.d_model))
                self.head.weight.requires_grad_(False)
        _freeze(self, cfg.freeze)

    def forward(self, tokens: torch.Tensor, return_attention: bool = False):
        cfg = self.cfg
        T = tokens.shape[-1]
        if T > cfg.max_len and cfg.pos in ("learned",):
            raise ValueError(f"sequence length {T} exceeds max_len={cfg.max_len} of the learned positions")
        x = self.embed(tokens)
        if cfg.pos == "learned":
            x = x + self.pos.weight[:T]
        elif cfg.pos == "sinusoidal":
            x = x + sinusoidal_positions(T, cfg.d_model, x.device, x.dtype)
        elif cfg.pos == "linear":
            ramp = torch.arange(T, device=x.device, dtype=x.dtype) / cfg.max_len
            x = x + F.pad(ramp[:, None], (cfg.d_model - 1, 0))
        x = self.emb_drop(x)
        weights = []
        for block in self.blocks:
            x, w = block(x, return_attention)
            if return_attention:
                weights.append(w)
        if cfg.has_final_norm:
            x = self.ln_f(x)
        out = self.head(x)
        return (out, weights) if return_attention else out


def chunked_forward(
    model: nn.Module,
    tokens,
    chunk: int = 32,
    device: str | torch.device | None = None,
    return_attention=False,
):
    """``model(tokens)`` in chunks of ``chunk`` sequences on ``device`` (default: where the model is), under
    ``no_grad`` and in eval mode, gathered on the CPU; the model's device and training mode are restored. A module
    without parameters (a hand-written solver) runs on the CPU.

    With ``return_attention`` (Transformers), also the per-layer attention weights ``[N, H, T, T]`` on the CPU. Peak
    device memory is that of one chunk, so checks that need weights at T = 512 do not materialise them for the
    whole set at once."""
    if not isinstance(chunk, int) or chunk < 1:
        raise ValueError(f"chunk must be a positive int, got {chunk!r}")
    tokens = torch.as_tensor(tokens)
    if tokens.dim() != 2:
        raise ValueError(f"tokens must be [N, T], got shape {tuple(tokens.shape)}")
    params = list(model.parameters())
    home = params[0].device if params else torch.device("cpu")
    dev = torch.device(device) if device is not None and params else home  # no parameters: runs on the CPU
    was_training = model.training
    model.eval().to(dev)
    outs, weights = [], []
    try:
        with torch.no_grad():
            for i in range(0, tokens.shape[0], chunk):
                x = tokens[i : i + chunk].to(dev, non_blocking=True)
                res = model(x, return_attention=True) if return_attention else model(x)
                if return_attention:
                    res, w = res
                    weights.append([wl.cpu() for wl in w])
                if isinstance(res, tuple):
                    res = res[0]
                outs.append(res.cpu())
    finally:
        model.to(home).train(was_training)
    out = torch.cat(outs) if outs else torch.empty(0)
    if return_attention:
        return out, [torch.cat(layer) for layer in zip(*weights, strict=True)]
    return out


# ----------------------------------------------------------------------------------------------- LSTM


@dataclass(frozen=True)
class LSTMConfig:
    """Embedding -> ``n_layers`` LSTM layers -> linear head, with PyTorch's LSTM equations and initialisation.

    Parameter names follow ``torch.nn.LSTM`` (``lstm.weight_ih_l0`` ...), so weights can be copied both ways. The
    defaults are the flip-flop skyline of Liu et al. (hidden 128, embedding 128: 133,381 parameters at vocab 5).
    """

    vocab_size: int
    n_outputs: int
    d_embed: int = 128
    hidden: int = 128
    n_layers: int = 1
    freeze: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        _check_positive(
            vocab_size=self.vocab_size,
            n_outputs=self.n_outputs,
            d_embed=self.d_embed,
            hidden=self.hidden,
            n_layers=self.n_layers,
        )

    has_dropout = False

    def activation_floats_per_token(self, T: int) -> int:
        return 4 * self.hidden

    def build(self, seed: int = 0) -> LSTM:
        return _seeded_build(seed, lambda: LSTM(self))

    def flops_per_token(self, T: int) -> float:
        h, e = self.hidden, self.d_embed
        per_token = sum(2 * 4 * h * ((e if k == 0 else h) + h) for k in range(self.n_layers))
        return 3 * (per_token + 2 * h * self.n_outputs)


class _LSTMWeights(nn.Module):
    def __init__(self, cfg: LSTMConfig):
        super().__init__()
        h = cfg.hidden
        bound = 1.0 / math.sqrt(h)
        for k in range(cfg.n_layers):
            fan_in = cfg.d_embed if k == 0 else h
            for name, shape in (
                (f"weight_ih_l{k}", (4 * h, fan_in)),
                (f"weight_hh_l{k}", (4 * h, h)),
                (f"bias_ih_l{k}", (4 * h,)),
                (f"bias_hh_l{k}", (4 * h,)),
            ):
                self.register_parameter(name, nn.Parameter(torch.empty(shape).uniform_(-bound, bound)))


class LSTM(nn.Module):
    """The module built by :class:`LSTMConfig` (gate order i, f, g, o as in PyTorch; zero initial state)."""

    def __init__(self, cfg: LSTMConfig):
        super().__init__()
        self.cfg = cfg
        self.embed = nn.Embedding(cfg.vocab_size, cfg.d_embed)
        self.lstm = _LSTMWeights(cfg)
        self.head = nn.Linear(cfg.hidden, cfg.n_outputs)
        _freeze(self, cfg.freeze)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        x = self.embed(tokens)
        B, T = tokens.shape
        mode = _LSTM_BACKEND["mode"]
        if (mode == "fused" or (mode == "auto" and x.device.type == "cuda")) and not _under_vmap(x):
            return self.head(self._fused(x, B))
        for k in range(self.cfg.n_layers):
            W_ih, W_hh = getattr(self.lstm, f"weight_ih_l{k}"), getattr(self.lstm, f"weight_hh_l{k}")
            pre = x @ W_ih.T + getattr(self.lstm, f"bias_ih_l{k}") + getattr(self.lstm, f"bias_hh_l{k}")
            h = x.new_zeros(B, self.cfg.hidden)
            c = x.new_zeros(B, self.cfg.hidden)
            outs = []
            for t in range(T):
                i, f, g, o = (pre[:, t] + h @ W_hh.T).chunk(4, dim=-1)
                c = torch.sigmoid(f) * c + torch.sigmoid(i) * torch.tanh(g)
                h = torch.sigmoid(o) * torch.tanh(c)
                outs.append(h)
            x = torch.stack(outs, dim=1)
        return self.head(x)

    def _fused(self, x: torch.Tensor, B: int) -> torch.Tensor:
        """The same recurrence through ``torch.lstm`` (the op behind ``torch.nn.LSTM``; cuDNN on CUDA): the weights
        are already in its layout and gate order."""
        L, h = self.cfg.n_layers, self.cfg.hidden
        names = ("weight_ih", "weight_hh", "bias_ih", "bias_hh")
        weights = [getattr(self.lstm, f"{n}_l{k}") for k in range(L) for n in names]
        dtype = weights[0].dtype  # the recurrence in the weights' precision: no bf16 RNN kernel is relied on
        with torch.autocast(x.device.type, enabled=False):
            x = x.to(dtype)
            zeros = x.new_zeros(L, B, h)
            out, _, _ = torch.lstm(x, (zeros, zeros), weights, True, L, 0.0, self.training, False, True)
        return out


# ----------------------------------------------------------------------------------------------- MLP


@dataclass(frozen=True)
class MLPConfig:
    """A causal window MLP: the output at position t sees the ``context`` most recent tokens (t-context+1 .. t).

    Tokens are embedded (learned, width ``d_embed``; or one-hot when ``d_embed`` is None), the window is
    concatenated oldest first (zero-padded before the sequence start) and passed through ``n_layers`` hidden layers
    of width ``d_hidden``. ``context=1`` is a per-token MLP; ``context=T`` with the loss on the last position is a
    plain MLP on the whole input (e.g. sparse parity); intermediate values give an n-gram model.
    """

    vocab_size: int
    n_outputs: int
    context: int = 1
    d_embed: int | None = None
    d_hidden: int = 256
    n_layers: int = 1
    activation: str = "relu"
    bias: bool = True
    freeze: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        _check_positive(
            vocab_size=self.vocab_size, n_outputs=self.n_outputs, context=self.context, d_hidden=self.d_hidden
        )
        if not isinstance(self.n_layers, int) or self.n_layers < 0:
            raise ValueError(f"n_layers must be an int >= 0, got {plain(self.n_layers)}")
        if self.d_embed is not None:
            _check_positive(d_embed=self.d_embed)
        _check_choice("activation", self.activation, ACTIVATIONS)

    has_dropout = False

    @property
    def embed_width(self) -> int:
        return self.vocab_size if self.d_embed is None else self.d_embed

    def activation_floats_per_token(self, T: int) -> int:
        return max(self.d_hidden, self.context * self.embed_width)

    def build(self, seed: int = 0) -> MLP:
        return _seeded_build(seed, lambda: MLP(self))

    def flops_per_token(self, T: int) -> float:
        widths = [self.context * self.embed_width] + [self.d_hidden] * self.n_layers + [self.n_outputs]
        return 3 * sum(2 * a * b for a, b in zip(widths, widths[1:], strict=False))


class MLP(nn.Module):
    """The module built by :class:`MLPConfig`; layers are ``layers.{i}`` (``nn.Linear``)."""

    def __init__(self, cfg: MLPConfig):
        super().__init__()
        self.cfg = cfg
        self.embed = nn.Embedding(cfg.vocab_size, cfg.embed_width)
        if cfg.d_embed is None:
            with torch.no_grad():
                self.embed.weight.copy_(torch.eye(cfg.vocab_size))
            self.embed.weight.requires_grad_(False)
        widths = [cfg.context * cfg.embed_width] + [cfg.d_hidden] * cfg.n_layers + [cfg.n_outputs]
        self.layers = nn.ModuleList(
            nn.Linear(a, b, bias=cfg.bias) for a, b in zip(widths, widths[1:], strict=False)
        )
        self.act = ACTIVATIONS[cfg.activation]
        _freeze(self, cfg.freeze)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        c = self.cfg.context
        x = self.embed(tokens)  # [B, T, E]
        B, T, E = x.shape
        if c > 1:
            x = F.pad(x, (0, 0, c - 1, 0))  # zero embeddings before the start
            x = torch.stack([x[:, j : j + T] for j in range(c)], dim=2).reshape(B, T, c * E)
        for i, layer in enumerate(self.layers):
            x = layer(x)
            if i < len(self.layers) - 1:
                x = self.act(x)
        return x
