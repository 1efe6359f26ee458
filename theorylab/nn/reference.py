"""Plain-numpy forward passes of the harness models, written from the formulas (float64, one sequence at a time).

Used to check that the torch modules compute what their configs say: ``reference_forward(config, params, tokens)``
takes the parameters as a name -> numpy array dict (``{k: v.numpy() for k, v in module.state_dict().items()}``)
and int tokens ``[B, T]`` and returns outputs ``[B, T, n_outputs]``; ``return_attention=True`` (Transformer only)
also returns the attention weights ``[B, L, H, T, T]``. No torch import.
"""

from __future__ import annotations

import math

import numpy as np
from scipy.special import erf


def _gelu(x):
    return 0.5 * x * (1.0 + erf(x / math.sqrt(2.0)))


_ACT = {"gelu": _gelu, "relu": lambda x: np.maximum(x, 0.0), "tanh": np.tanh}


def _sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


def _linear(P, name, x):
    y = x @ P[f"{name}.weight"].T
    return y + P[f"{name}.bias"] if f"{name}.bias" in P else y


def _layer_norm(P, name, x, eps, affine):
    mu = x.mean(-1, keepdims=True)
    var = ((x - mu) ** 2).mean(-1, keepdims=True)
    y = (x - mu) / np.sqrt(var + eps)
    return y * P[f"{name}.weight"] + P[f"{name}.bias"] if affine else y


def _sinusoid(T, d):
    P = np.zeros((T, d))
    for t in range(T):
        for i in range(0, d, 2):
            angle = t / 10000.0 ** (i / d)
            P[t, i] = math.sin(angle)
            P[t, i + 1] = math.cos(angle)
    return P


def _rope(x):
    """Rotary positions, written as an explicit 2x2 rotation per pair and position (float64)."""
    T, dh = x.shape
    out = np.empty_like(x)
    for t in range(T):
        for i in range(0, dh, 2):
            a = t * 10000.0 ** (-i / dh)
            c, s = math.cos(a), math.sin(a)
            out[t, i] = c * x[t, i] - s * x[t, i + 1]
            out[t, i + 1] = s * x[t, i] + c * x[t, i + 1]
    return out


def _attention(cfg, P, name, x):
    """x: [T, d] -> (output [T, d], weights [H, T, T]); query i may see key j iff j <= i (causal) or always."""
    T, d = x.shape
    H = cfg.n_heads
    dh = d // H
    allowed = np.tril(np.ones((T, T), bool)) if cfg.causal else np.ones((T, T), bool)
    v = _linear(P, f"{name}.v", x)
    out = np.zeros((T, d))
    weights = np.zeros((H, T, T))
    for h in range(H):
        sl = slice(h * dh, (h + 1) * dh)
        if cfg.uniform_attention:
            w = allowed / allowed.sum(1, keepdims=True)
        else:
            scale = cfg.attn_scale if cfg.attn_scale is not None else 1.0 / math.sqrt(dh)
            qh, kh = _linear(P, f"{name}.q", x)[:, sl], _linear(P, f"{name}.k", x)[:, sl]
            if cfg.pos == "rope":
                qh, kh = _rope(qh), _rope(kh)
            s = qh @ kh.T * scale
            if cfg.pos == "alibi":
                slope = 2.0 ** (-8.0 * (h + 1) / H)
                s = s - slope * np.abs(np.arange(T)[:, None] - np.arange(T)[None, :])
            if cfg.attention == "softmax":
                s = np.where(allowed, s, -np.inf)
                e = np.exp(s - s.max(1, keepdims=True))
                w = e / e.sum(1, keepdims=True)
            else:
                w = np.where(allowed, s, 0.0)
                if cfg.linear_norm:
                    w = w / allowed.sum(1, keepdims=True)
        weights[h] = w
        out[:, sl] = w @ v[:, sl]
    return _linear(P, f"{name}.o", out), weights


def _transformer(cfg, P, seq):
    T = len(seq)
    d = cfg.d_model
    x = P["embed.weight"][seq].copy()
    if cfg.pos == "learned":
        x += P["pos.weight"][:T]
    elif cfg.pos == "sinusoidal":
        x += _sinusoid(T, d)
    elif cfg.pos == "linear":
        x[:, d - 1] += np.arange(T) / cfg.max_len
    layer_weights = []

    def sub(x, f, ln):
        h = _layer_norm(P, ln, x, cfg.ln_eps, cfg.ln_affine) if cfg.norm == "pre" else x
        y = f(h)
        y = x + y if cfg.residual else y
        return _layer_norm(P, ln, y, cfg.ln_eps, cfg.ln_affine) if cfg.norm == "post" else y

    act = _ACT[cfg.activation]
    for layer in range(cfg.n_layers):
        b = f"blocks.{layer}"
        store = {}

        def attn(h, b=b, store=store):
            out, w = _attention(cfg, P, f"{b}.attn", h)
            store["w"] = w
            return out

        x = sub(x, attn, f"{b}.ln1")
        layer_weights.append(store["w"])
        if cfg.ff_width > 0:
            x = sub(
                x, lambda h, b=b: _linear(P, f"{b}.mlp.fc2", act(_linear(P, f"{b}.mlp.fc1", h))), f"{b}.ln2"
            )
    if cfg.has_final_norm:
        x = _layer_norm(P, "ln_f", x, cfg.ln_eps, cfg.ln_affine)
    return _linear(P, "head", x), np.stack(layer_weights)


def _lstm(cfg, P, seq):
    x = P["embed.weight"][seq]
    H = cfg.hidden
    for k in range(cfg.n_layers):
        W_ih, W_hh = P[f"lstm.weight_ih_l{k}"], P[f"lstm.weight_hh_l{k}"]
        b = P[f"lstm.bias_ih_l{k}"] + P[f"lstm.bias_hh_l{k}"]
        h, c = np.zeros(H), np.zeros(H)
        outs = []
        for x_t in x:
            z = W_ih @ x_t + W_hh @ h + b
            i, f, g, o = (
                _sigmoid(z[:H]),
                _sigmoid(z[H : 2 * H]),
                np.tanh(z[2 * H : 3 * H]),
                _sigmoid(z[3 * H :]),
            )
            c = f * c + i * g
            h = o * np.tanh(c)
            outs.append(h)
        x = np.stack(outs)
    return _linear(P, "head", x)


def _mlp(cfg, P, seq):
    E = P["embed.weight"][seq]
    T, width = E.shape
    n_lin = cfg.n_layers + 1
    act = _ACT[cfg.activation]
    outs = []
    for t in range(T):
        window = [E[j] if j >= 0 else np.zeros(width) for j in range(t - cfg.context + 1, t + 1)]
        h = np.concatenate(window)
        for i in range(n_lin):
            h = _linear(P, f"layers.{i}", h)
            if i < n_lin - 1:
                h = act(h)
        outs.append(h)
    return np.stack(outs)


def reference_forward(config, params: dict[str, np.ndarray], tokens, return_attention: bool = False):
    """The output ``[B, T, n_outputs]`` of the model described by ``config`` with parameters ``params``."""
    P = {k: np.asarray(v, dtype=np.float64) for k, v in params.items()}
    tokens = np.asarray(tokens)
    if tokens.ndim != 2 or not np.issubdtype(tokens.dtype, np.integer):
        raise ValueError(f"tokens must be an int array [B, T], got {tokens.dtype} {tokens.shape}")
    kind = type(config).__name__
    if kind == "TransformerConfig":
        pairs = [_transformer(config, P, seq) for seq in tokens]
        out = np.stack([p[0] for p in pairs])
        return (out, np.stack([p[1] for p in pairs])) if return_attention else out
    if return_attention:
        raise ValueError(f"{kind} has no attention weights")
    if kind == "LSTMConfig":
        return np.stack([_lstm(config, P, seq) for seq in tokens])
    if kind == "MLPConfig":
        return np.stack([_mlp(config, P, seq) for seq in tokens])
    raise TypeError(f"no reference forward for {kind}")
