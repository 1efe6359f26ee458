"""Function-preserving embeddings of a small network into a larger one (B.4 of ``000_7523275b422019f8.txt``).

* ``widen_mlp`` (B.4.1): $\\tilde W_0=\\tfrac1{\\sqrt r}[W_0;\\dots;W_0]$ ($rd_1\\times d_0$: the input is not
  replicated; the printed "$2d_{l+1}\\times2d_l$ for all $l$" is wrong at $l=0$), inner blocks $\\tfrac1r$ times an
  $r\\times r$ grid of $W_l$, $\\tilde a=\\tfrac1{\\sqrt r}[a;\\dots;a]$. Then $\\tilde h_l=\\tfrac1{\\sqrt r}[h_l;\\dots;h_l]$
  and $\\tilde f=f$, **if** $\\sigma(cx)=c\\sigma(x)$ for $c>0$ (ReLU, leaky ReLU, identity).
* ``widen_transformer`` (B.4.2, post-LN): $\\tilde W_E=\\tfrac12[W_E,W_E]$, LN affine and biases duplicated, $W,U,O$
  become $\\tfrac12\\begin{bmatrix}M&M\\\\M&M\\end{bmatrix}$, each head's $Q,K,V$ is $\\tfrac12$ of the stack along the
  input dimension, heads duplicated. $\\tilde h_l=[h_l;h_l]$; exact when LayerNorm has $\\varepsilon=0$.
* ``deepen_transformer`` (B.4.2): append blocks with $O=U=0$. ``recipe="paper"`` keeps the new LayerNorms at
  $\\gamma=1,\\beta=0$: then $v=\\mathrm{LN}(h_L)\\ne h_L$ when the last LN has a non-trivial affine, so $f$ changes.
  ``recipe="fixed"`` moves the final LN affine $(\\gamma_L,\\beta_L)$ to the top-most added LN and resets the old one
  to $(1,0)$: every intermediate $h$ is a standardised vector, which LN ($\\varepsilon=0$) fixes.

Transformers here are plain dicts of float64 arrays (``random_transformer``), evaluated by ``transformer_forward``.
"""

from __future__ import annotations

import copy
from math import erf, sqrt

import numpy as np

__all__ = [
    "HOMOGENEOUS",
    "deepen_transformer",
    "mlp_forward",
    "random_mlp",
    "random_transformer",
    "transformer_forward",
    "widen_mlp",
    "widen_transformer",
]

_erf = np.vectorize(erf)


def _gelu(x):
    return 0.5 * x * (1 + _erf(x / sqrt(2)))


MLP_ACTIVATIONS = {
    "relu": lambda x: np.maximum(x, 0.0),
    "leaky_relu": lambda x: np.where(x > 0, x, 0.1 * x),
    "linear": lambda x: x,
    "gelu": _gelu,
    "tanh": np.tanh,
}
HOMOGENEOUS = ("relu", "leaky_relu", "linear")


def _check_weights(weights, a):
    if not isinstance(weights, list | tuple) or not weights:
        raise TypeError("weights must be a non-empty list of 2-D arrays W_0..W_{L-1}")
    Ws = [np.asarray(W, dtype=float) for W in weights]
    for l, W in enumerate(Ws):
        if W.ndim != 2:
            raise ValueError(f"W_{l} must be 2-D, got shape {W.shape}")
        if not np.all(np.isfinite(W)):
            raise ValueError(f"W_{l} contains NaN or infinite entries")
        if l and W.shape[1] != Ws[l - 1].shape[0]:
            raise ValueError(f"W_{l} has {W.shape[1]} columns, expected {Ws[l - 1].shape[0]}")
    a = np.asarray(a, dtype=float)
    if a.shape != (Ws[-1].shape[0],) or not np.all(np.isfinite(a)):
        raise ValueError(f"a must be a finite vector of length {Ws[-1].shape[0]}, got shape {a.shape}")
    return Ws, a


def mlp_forward(weights, a, X, activation: str = "relu") -> np.ndarray:
    """$f(x)=a^\\top\\sigma(W_{L-1}\\cdots\\sigma(W_0x))$ for the rows of ``X``."""
    Ws, a = _check_weights(weights, a)
    if activation not in MLP_ACTIVATIONS:
        raise ValueError(f"activation must be one of {sorted(MLP_ACTIVATIONS)}, got {activation!r}")
    h = np.atleast_2d(np.asarray(X, dtype=float))
    for W in Ws:
        h = MLP_ACTIVATIONS[activation](h @ W.T)
    return h @ a


def random_mlp(dims, rng: np.random.Generator):
    """Gaussian weights for layer widths ``dims = [d_0, ..., d_L]`` and a head ``a``."""
    Ws = [rng.normal(0, 1 / sqrt(dims[i]), (dims[i + 1], dims[i])) for i in range(len(dims) - 1)]
    return Ws, rng.normal(0, 1, dims[-1])


def widen_mlp(weights, a, activation: str = "relu", copies: int = 2):
    """The r-fold replication of B.4.1 (``copies = r``); refuses activations that are not positively homogeneous."""
    Ws, a = _check_weights(weights, a)
    if activation not in HOMOGENEOUS:
        raise ValueError(
            f"widen_mlp needs a positively homogeneous activation (one of {HOMOGENEOUS}); {activation!r} is not: "
            "sigma(x/sqrt(r)) != sigma(x)/sqrt(r)"
        )
    r = int(copies)
    if r < 1:
        raise ValueError(f"copies must be >= 1, got {copies}")
    new = [np.vstack([Ws[0]] * r) / sqrt(r)]
    new += [np.block([[W] * r] * r) / r for W in Ws[1:]]
    return new, np.concatenate([a] * r) / sqrt(r)


# ------------------------------------------------------------------------------------------- transformer


def _ln(x, gamma, beta, eps):
    mu = x.mean(axis=-1, keepdims=True)
    var = ((x - mu) ** 2).mean(axis=-1, keepdims=True)
    return gamma * (x - mu) / np.sqrt(var + eps) + beta


def _softmax(s):
    s = s - s.max(axis=-1, keepdims=True)
    e = np.exp(s)
    return e / e.sum(axis=-1, keepdims=True)


def random_transformer(
    vocab: int,
    d: int,
    n_heads: int,
    head_dim: int,
    d_inter: int,
    n_layers: int,
    rng,
    *,
    affine_ln: bool = True,
) -> dict:
    """Post-LN transformer of the document: $h_0=\\mathrm{LN}(W_Ex)$, $v=\\mathrm{LN}(h+\\mathrm{Attn}(h))$,
    $h'=\\mathrm{LN}(v+U\\,\\mathrm{GeLU}(Wv+b))$, $f=h_LW_E^\\top$ (tied). Random LN affine if ``affine_ln``."""
    for name, v in dict(vocab=vocab, d=d, n_heads=n_heads, head_dim=head_dim, d_inter=d_inter).items():
        if int(v) < 1:
            raise ValueError(f"{name} must be >= 1, got {v}")

    def ln():
        if affine_ln:
            return {"gamma": rng.uniform(0.5, 1.5, d), "beta": rng.normal(0, 0.5, d)}
        return {"gamma": np.ones(d), "beta": np.zeros(d)}

    s = 1 / sqrt(d)
    blocks = []
    for _ in range(int(n_layers)):
        blocks.append(
            {
                "Q": rng.normal(0, s, (n_heads, d, head_dim)),
                "K": rng.normal(0, s, (n_heads, d, head_dim)),
                "V": rng.normal(0, s, (n_heads, d, head_dim)),
                "O": rng.normal(0, 1 / sqrt(n_heads * head_dim), (n_heads * head_dim, d)),
                "ln1": ln(),
                "W": rng.normal(0, s, (d, d_inter)),
                "b": rng.normal(0, 0.1, d_inter),
                "U": rng.normal(0, 1 / sqrt(d_inter), (d_inter, d)),
                "ln2": ln(),
            }
        )
    return {"WE": rng.normal(0, 1, (vocab, d)), "ln0": ln(), "blocks": blocks}


def transformer_forward(params: dict, tokens, eps: float = 0.0) -> np.ndarray:
    """(T, vocab) outputs for a token sequence (T,); LayerNorm with ``eps`` (0 for exact embeddings)."""
    tokens = np.asarray(tokens)
    if tokens.ndim != 1 or tokens.dtype.kind not in "iu":
        raise ValueError("tokens must be a 1-D integer array")
    WE = params["WE"]
    h = _ln(WE[tokens], params["ln0"]["gamma"], params["ln0"]["beta"], eps)
    for B in params["blocks"]:
        heads = []
        for k in range(B["Q"].shape[0]):
            A = _softmax((h @ B["Q"][k]) @ (h @ B["K"][k]).T)  # T x T
            heads.append(A @ h @ B["V"][k])
        v = _ln(h + np.concatenate(heads, axis=1) @ B["O"], B["ln1"]["gamma"], B["ln1"]["beta"], eps)
        h = _ln(v + _gelu(v @ B["W"] + B["b"]) @ B["U"], B["ln2"]["gamma"], B["ln2"]["beta"], eps)
    return h @ WE.T


def _dup(M):
    return 0.5 * np.block([[M, M], [M, M]])


def widen_transformer(params: dict) -> dict:
    """Double the width and the number of heads (B.4.2); $\\tilde f=f$ exactly for LayerNorm $\\varepsilon=0$."""
    out = {
        "WE": 0.5 * np.hstack([params["WE"], params["WE"]]),
        "ln0": {k: np.concatenate([v, v]) for k, v in params["ln0"].items()},
        "blocks": [],
    }
    for B in params["blocks"]:
        nh, d, dh = B["Q"].shape
        new = {}
        for name in ("Q", "K", "V"):
            per = 0.5 * np.concatenate([B[name], B[name]], axis=1)  # stacked along the input dimension
            new[name] = np.concatenate([per, per], axis=0)  # heads nh+1..2nh copy heads 1..nh
        new["O"] = _dup(B["O"])
        new["W"], new["U"] = _dup(B["W"]), _dup(B["U"])
        new["b"] = np.concatenate([B["b"], B["b"]])
        for ln in ("ln1", "ln2"):
            new[ln] = {k: np.concatenate([v, v]) for k, v in B[ln].items()}
        out["blocks"].append(new)
    return out


def deepen_transformer(params: dict, n_new: int, recipe: str = "paper", rng=None) -> dict:
    """Append ``n_new`` blocks with $O=U=0$ (other weights random). ``recipe``: "paper" (new LN at $(1,0)$,
    printed; fails for an affine final LN) or "fixed" (final LN affine moved to the top added LN)."""
    if recipe not in ("paper", "fixed"):
        raise ValueError(f"recipe must be 'paper' or 'fixed', got {recipe!r}")
    if int(n_new) < 1:
        raise ValueError(f"n_new must be >= 1, got {n_new}")
    if not params["blocks"]:
        raise ValueError("the model needs at least one block")
    rng = np.random.default_rng(0) if rng is None else rng
    out = copy.deepcopy(params)
    B0 = params["blocks"][-1]
    nh, d, dh = B0["Q"].shape
    di = B0["W"].shape[1]
    for _ in range(int(n_new)):
        out["blocks"].append(
            {
                "Q": rng.normal(0, 1, (nh, d, dh)),
                "K": rng.normal(0, 1, (nh, d, dh)),
                "V": rng.normal(0, 1, (nh, d, dh)),
                "O": np.zeros((nh * dh, d)),
                "ln1": {"gamma": np.ones(d), "beta": np.zeros(d)},
                "W": rng.normal(0, 1, (d, di)),
                "b": rng.normal(0, 1, di),
                "U": np.zeros((di, d)),
                "ln2": {"gamma": np.ones(d), "beta": np.zeros(d)},
            }
        )
    if recipe == "fixed":
        old = len(params["blocks"]) - 1
        out["blocks"][-1]["ln2"] = copy.deepcopy(params["blocks"][-1]["ln2"])
        out["blocks"][old]["ln2"] = {"gamma": np.ones(d), "beta": np.zeros(d)}
    return out
