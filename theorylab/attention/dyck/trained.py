r"""Trained tier of the Dyck family: the theorems' 2-layer architecture as a torch module, a training task,
and the measurements of Liu §3.6.3 (= Li §2.2.3) - attention variation across seeds, balance violation,
contrastive regulariser.

The model has a *minimal first layer* (Assumption 10): the first-layer output of a token is the fixed one-hot
vector of its (type, depth) index (embedding (3.37), re-indexed by rank, plus a start slot), computed from the
tokens by a stack-free depth count. The trainable second layer is the theory layer (3.23): bias-free
$W_Q,W_K\in\mathbb R^{m_a\times m}$, $W_V\in\mathbb R^{m\times m}$, causal softmax attention, the theory
LayerNorm $\mathrm{LN}(x)=\mathcal P_\perp x/\sqrt{\|\mathcal P_\perp x\|^2+\epsilon}$, the residual added
after it, then a 2-layer ReLU MLP $g^{(2)}$ and a linear head. So $M=W_K^\top W_Q$ and $W_V$ are read directly
from the weights and :func:`theorylab.attention.dyck.balance.balance_ratio` applies unchanged.

This module imports torch; the exact tier does not import it.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import numpy as np

from theorylab._extras import needs

with needs("trained"):
    import torch
    from torch import nn

from theorylab.attention.dyck.balance import DyckWeights, balance_ratio, balance_violation, one_hot_embeddings
from theorylab.languages.dyck import Dyck
from theorylab.nn.tasks import Batch

__all__ = [
    "DyckTask",
    "DyckMinimalConfig",
    "DyckMinimalTransformer",
    "weights_of",
    "closing_accuracy",
    "next_token_probabilities",
    "attention_variation",
    "random_attention_variation",
    "stack_attention_mass",
    "window_closing_accuracy",
    "DyckCopyTask",
    "DyckGPTConfig",
    "DyckGPT",
    "copy_accuracy",
    "attention_distance_from_uniform",
    "closing_mass",
    "PROBE",
]

#: A probe prefix with every type and depth of Dyck_{2,4}: "[[[[]]]](((())))" with ( = 0, ) = 1, [ = 2, ] = 3.
PROBE = np.array([2, 2, 2, 2, 3, 3, 3, 3, 0, 0, 0, 0, 1, 1, 1, 1])


@dataclass(frozen=True)
class DyckTask:
    r"""Next-token prediction on prefixes from $\mathcal D_{q,k,D,T}$; targets are the exact next-token
    distributions (loss ``soft_ce``; its minimiser is the truth, like the squared loss of the theory)."""

    k: int = 2
    depth: int = 4
    q: float = 0.5
    loss: str = "soft_ce"

    @property
    def name(self) -> str:
        return f"dyck_{self.k}_{self.depth}"

    @property
    def vocab_size(self) -> int:
        return 2 * self.k

    @property
    def n_outputs(self) -> int:
        return 2 * self.k

    def sample_batch(self, rng: np.random.Generator, batch: int, T: int) -> Batch:
        lang = Dyck(self.k, self.depth, self.q)
        x = lang.sample(rng, batch, T)
        y = lang.next_token_distributions(x)[:, 1:].astype(np.float32)
        return Batch(inputs=x, targets=y, mask=np.ones(x.shape, dtype=bool))


@dataclass(frozen=True)
class DyckMinimalConfig:
    r"""The theorems' architecture with a fixed minimal first layer; ``contrastive`` weights the regulariser
    (3.40).

    ``attn_dim`` is $m_a$ (default $m=2kD+1$), ``width`` the hidden width of $g^{(2)}$, ``init_scale`` the
    standard deviation (times $1/\sqrt m$) of the attention and value weights.
    """

    k: int = 2
    depth: int = 4
    attn_dim: int | None = None
    width: int = 64
    init_scale: float = 1.0
    ln_eps: float = 1e-6
    contrastive: float = 0.0
    block: str = "thesis"  # "post_ln": the GPT block LN(attn + X) of Li Eq 2.85 instead of LN(attn) + X

    def __post_init__(self) -> None:
        Dyck(self.k, self.depth)
        if self.block not in ("thesis", "post_ln"):
            raise ValueError(f"block must be 'thesis' or 'post_ln', got {self.block!r}")
        if self.width < 1 or (self.attn_dim is not None and self.attn_dim < 1):
            raise ValueError("width and attn_dim must be positive")
        if self.contrastive < 0:
            raise ValueError(f"contrastive must be >= 0, got {self.contrastive}")

    @property
    def vocab_size(self) -> int:
        return 2 * self.k

    @property
    def n_outputs(self) -> int:
        return 2 * self.k

    def build(self, seed: int = 0) -> DyckMinimalTransformer:
        torch.manual_seed(seed)
        return DyckMinimalTransformer(self)


class DyckMinimalTransformer(nn.Module):
    """Tokens ``[B, T]`` -> logits ``[B, T, 2k]`` (position $t$ predicts token $t+1$; a start token is
    prepended). Setting ``ablate_attention = True`` replaces the attention pattern by the uniform causal one."""

    ablate_attention: bool = False

    def __init__(self, cfg: DyckMinimalConfig):
        super().__init__()
        self.cfg = cfg
        k, D = cfg.k, cfg.depth
        m = 2 * k * D + 1
        ma = cfg.attn_dim or m
        std = cfg.init_scale / np.sqrt(m)
        self.W_Q = nn.Parameter(torch.randn(ma, m) * std)
        self.W_K = nn.Parameter(torch.randn(ma, m) * std)
        self.W_V = nn.Parameter(torch.randn(m, m) * std)
        self.g = nn.Sequential(nn.Linear(m, cfg.width), nn.ReLU(), nn.Linear(cfg.width, cfg.width), nn.ReLU())
        self.head = nn.Linear(cfg.width, 2 * k)
        self.register_buffer("E", torch.tensor(one_hot_embeddings(k, D), dtype=torch.float32))

    def indices(self, tokens: torch.Tensor) -> torch.Tensor:
        """First-layer indices ``[B, T+1]`` (start first); depths are clamped for invalid strings."""
        D = self.cfg.depth
        depth = torch.cumsum(1 - 2 * (tokens % 2), dim=-1).clamp(0, D)
        idx = torch.where(
            tokens % 2 == 0, tokens * D + (depth - 1).clamp(0, D - 1), tokens * D + depth.clamp(0, D - 1)
        )
        start = torch.full_like(tokens[:, :1], 2 * self.cfg.k * D)
        return torch.cat([start, idx], dim=1)

    def layer2(self, idx: torch.Tensor, return_attention: bool = False):
        X = self.E[idx]  # [B, T1, m] (rows of the identity = columns of E)
        q, kk, v = X @ self.W_Q.T, X @ self.W_K.T, X @ self.W_V.T
        T1 = idx.shape[1]
        scores = q @ kk.transpose(1, 2)  # [B, query, key]
        mask = torch.ones(T1, T1, dtype=torch.bool, device=idx.device).tril()
        if self.ablate_attention:  # uniform causal attention: the pattern replaced, everything else kept
            scores = torch.zeros_like(scores)
        attn = torch.softmax(scores.masked_fill(~mask, float("-inf")), dim=-1)
        a = attn @ v
        if self.cfg.block == "post_ln":
            a = a + X
        a = a - a.mean(dim=-1, keepdim=True)
        h = a / torch.sqrt((a * a).sum(-1, keepdim=True) + self.cfg.ln_eps)
        if self.cfg.block == "thesis":
            h = h + X
        out = self.head(self.g(h))
        return (out, attn) if return_attention else out

    def forward(self, tokens: torch.Tensor, return_attention: bool = False):
        if return_attention:
            out, attn = self.layer2(self.indices(tokens), return_attention=True)
            return out[:, 1:], attn
        out = self.layer2(self.indices(tokens))[:, 1:]
        if not (self.training and self.cfg.contrastive > 0):
            return out
        return out, self.cfg.contrastive * self.contrastive_penalty(tokens, out)

    def contrastive_penalty(self, tokens: torch.Tensor, out: torch.Tensor) -> torch.Tensor:
        r"""(3.40): mean squared change of the logits of $s$ when a balanced block is prepended.

        Sequence $b$ gets $r=1+(b\bmod D)$ nested pairs of type $b\bmod k$ followed by $D-r$ flat pairs (so
        every block has length $2D$ and one extra forward pass serves the whole batch); a deterministic stand-in for
        $r\sim U[D]$ with uniform types, so that the loss is a fixed function of the batch.
        """
        B, T = tokens.shape
        D, k = self.cfg.depth, self.cfg.k
        blocks = []
        for b in range(min(B, D * k)):
            r, t = 1 + b % D, b % k
            blocks.append([2 * t] * r + [2 * t + 1] * r + [2 * t, 2 * t + 1] * (D - r))
        pre = torch.tensor(blocks, device=tokens.device)[torch.arange(B, device=tokens.device) % len(blocks)]
        shifted = self.layer2(self.indices(torch.cat([pre, tokens], dim=1)))[:, 2 * D + 1 :]
        return ((shifted - out) ** 2).sum(-1).mean()


def weights_of(model: DyckMinimalTransformer) -> DyckWeights:
    r"""The theory weights $(E, M=W_K^\top W_Q, W_V)$ of a trained model, as float64 numpy."""
    cfg = model.cfg
    with torch.no_grad():
        M = (model.W_K.T @ model.W_Q).double().cpu().numpy()
        W_V = model.W_V.double().cpu().numpy()
    return DyckWeights(cfg.k, cfg.depth, one_hot_embeddings(cfg.k, cfg.depth), M, W_V)


def next_token_probabilities(model: DyckMinimalTransformer, x: np.ndarray, batch: int = 512) -> np.ndarray:
    """Softmax outputs ``[B, T+1, 2k]`` after every prefix length ``0..T`` (the start position included), the
    predictor format of :meth:`theorylab.languages.dyck.Dyck.population_loss`."""
    model.eval()
    outs = []
    with torch.no_grad():
        for i in range(0, len(x), batch):
            idx = model.indices(torch.from_numpy(np.ascontiguousarray(x[i : i + batch])))
            outs.append(torch.softmax(model.layer2(idx).double(), dim=-1))
    return torch.cat(outs).numpy()


def _logits(model: nn.Module, x: np.ndarray, batch: int = 512) -> np.ndarray:
    model.eval()
    outs = []
    with torch.no_grad():
        for i in range(0, len(x), batch):
            out = model(torch.from_numpy(np.ascontiguousarray(x[i : i + batch])))
            outs.append(out[0] if isinstance(out, tuple) else out)
    return torch.cat(outs).double().numpy()


def closing_accuracy(model: nn.Module, lang: Dyck, x: np.ndarray) -> float:
    """The experiments' accuracy: at every position whose next token is a close, the argmax over the $k$
    closing logits is the correct (unique) close. ``x`` are prefixes; the last token of each is the one
    predicted."""
    logits = _logits(model, x[:, :-1])
    is_close = x[:, 1:] % 2 == 1
    pred = 2 * np.argmax(logits[..., 1::2], axis=-1) + 1
    return float(np.mean(pred[is_close] == x[:, 1:][is_close]))


def attention_pattern_of(model: DyckMinimalTransformer, tokens: np.ndarray = PROBE) -> np.ndarray:
    """Second-layer attention ``[T+1, T+1]`` (query rows, causal) on one prefix."""
    model.eval()
    with torch.no_grad():
        _, attn = model(torch.from_numpy(tokens[None]), return_attention=True)
    return attn[0].double().numpy()


def attention_variation(patterns: list[np.ndarray]) -> float:
    r"""Mean over pairs of $\|A_1-A_2\|_F^2$ (Liu §3.6.3.1)."""
    pairs = list(itertools.combinations(range(len(patterns)), 2))
    return float(np.mean([np.sum((patterns[i] - patterns[j]) ** 2) for i, j in pairs]))


def random_attention_variation(n_rows: int) -> float:
    r"""Baseline: causal rows of lengths $1..n$ drawn uniformly from the simplex,
    $\mathbb E\|A_1-A_2\|_F^2=\sum_{n}2(2/(n+1)-1/n)$."""
    n = np.arange(1, n_rows + 1)
    return float(np.sum(2 * (2 / (n + 1) - 1 / n)))


def stack_attention_mass(model: DyckMinimalTransformer, lang: Dyck, x: np.ndarray) -> float:
    """Mean attention mass that a closing query puts on the last unmatched open (1 for a stack-like
    pattern)."""
    model.eval()
    with torch.no_grad():
        _, attn = model(torch.from_numpy(x), return_attention=True)
    attn = attn.double().numpy()
    masses = []
    for b, seq in enumerate(x):
        stack: list[int] = []
        for i, tok in enumerate(seq):
            if tok % 2 == 0:
                stack.append(i)
            else:
                stack.pop()
                if stack:
                    masses.append(attn[b, i + 1, stack[-1] + 1])
    return float(np.mean(masses))


def balance_metrics(model: DyckMinimalTransformer) -> dict[str, float]:
    r"""Balance violation of Def 14 (max) and the experiments' $\beta=\mathbb E\|S\|/P$."""
    w = weights_of(model)
    return {"balance_violation": balance_violation(w), "balance_ratio": balance_ratio(w)}


def window_closing_accuracy(x: np.ndarray, w: int, vocab: int) -> float:
    r"""Closing accuracy of the best predictor that sees only the last ``w`` tokens (in-sample Bayes rule: the
    majority close type for each window content on ``x`` itself, an upper bound for any ``w``-window predictor fitted
    elsewhere). ``x`` are prefixes ``[B, T]`` over ``vocab`` tokens; positions before the start read as an extra
    symbol."""
    if w < 0:
        raise ValueError(f"window w must be >= 0, got {w}")
    B, T = x.shape
    pad = np.concatenate([np.full((B, w), vocab, dtype=np.int64), x], axis=1)
    if (vocab + 1) ** w >= 2**62:
        raise ValueError(f"window w={w} too long to encode over {vocab + 1} symbols")
    close = x % 2 == 1
    code = np.zeros(int(close.sum()), dtype=np.int64)
    for j in range(w):
        code = code * (vocab + 1) + pad[:, j : j + T][close]
    n_types = vocab // 2
    _, content = np.unique(code, return_inverse=True)
    counts = np.bincount(
        content.reshape(-1) * n_types + x[close] // 2, minlength=(int(content.max()) + 1) * n_types
    )
    return float(counts.reshape(-1, n_types).max(axis=1).sum() / close.sum())


# --------------------------------------------------------------------------------- misleading attention (copying)
@dataclass(frozen=True)
class DyckCopyTask(DyckTask):
    r"""The copying task of Liu §3.6.5.1 (Figs 3.41-3.43): on prefixes from $\mathcal D_{q,k,D,T}$ the output at
    position $t$ must be the input token $t$ itself."""

    loss: str = "ce"

    @property
    def name(self) -> str:
        return f"dyck_copy_{self.k}_{self.depth}"

    def sample_batch(self, rng: np.random.Generator, batch: int, T: int) -> Batch:
        x = Dyck(self.k, self.depth, self.q).sample(rng, batch, T)
        return Batch(inputs=x, targets=x.copy(), mask=np.ones(x.shape, dtype=bool))


@dataclass(frozen=True)
class DyckGPTConfig:
    r"""A standard causal Transformer: learned token embeddings, ``layers`` post-LN GPT blocks (one head,
    $X\leftarrow\mathrm{LN}(X+\mathrm{attn}(X))$, $X\leftarrow\mathrm{LN}(X+\mathrm{MLP}(X))$), a linear head; no
    positional encoding."""

    k: int = 2
    layers: int = 1
    width: int = 16

    def __post_init__(self) -> None:
        if self.k < 1 or self.layers < 1 or self.width < 1:
            raise ValueError("k, layers and width must be positive")

    @property
    def vocab_size(self) -> int:
        return 2 * self.k

    @property
    def n_outputs(self) -> int:
        return 2 * self.k

    def build(self, seed: int = 0) -> DyckGPT:
        torch.manual_seed(seed)
        return DyckGPT(self)


class DyckGPT(nn.Module):
    """Tokens ``[B, T]`` -> logits ``[B, T, 2k]``; ``ablate_attention = True`` makes every head uniform (causal)."""

    ablate_attention: bool = False

    def __init__(self, cfg: DyckGPTConfig):
        super().__init__()
        self.cfg = cfg
        d = cfg.width
        self.embed = nn.Embedding(2 * cfg.k, d)
        self.qkv = nn.ModuleList(nn.Linear(d, 3 * d) for _ in range(cfg.layers))
        self.mlp = nn.ModuleList(
            nn.Sequential(nn.Linear(d, 2 * d), nn.ReLU(), nn.Linear(2 * d, d)) for _ in range(cfg.layers)
        )
        self.ln1 = nn.ModuleList(nn.LayerNorm(d) for _ in range(cfg.layers))
        self.ln2 = nn.ModuleList(nn.LayerNorm(d) for _ in range(cfg.layers))
        self.head = nn.Linear(d, 2 * cfg.k)

    def forward(self, tokens: torch.Tensor, return_attention: bool = False):
        X = self.embed(tokens)
        T = tokens.shape[1]
        mask = torch.ones(T, T, dtype=torch.bool, device=tokens.device).tril()
        patterns = []
        for qkv, mlp, ln1, ln2 in zip(self.qkv, self.mlp, self.ln1, self.ln2, strict=True):
            q, k, v = qkv(X).chunk(3, dim=-1)
            scores = q @ k.transpose(1, 2) / np.sqrt(self.cfg.width)
            if self.ablate_attention:
                scores = torch.zeros_like(scores)
            attn = torch.softmax(scores.masked_fill(~mask, float("-inf")), dim=-1)
            patterns.append(attn)
            X = ln1(X + attn @ v)
            X = ln2(X + mlp(X))
        out = self.head(X)
        return (out, torch.stack(patterns, 1)) if return_attention else out


def copy_accuracy(model: nn.Module, x: np.ndarray, ablate: bool = False) -> float:
    """Fraction of positions where the argmax output equals the input token (``ablate``: uniform attention)."""
    model.ablate_attention = ablate
    try:
        logits = _logits(model, x)
    finally:
        model.ablate_attention = False
    return float(np.mean(np.argmax(logits, axis=-1) == x))


def attention_distance_from_uniform(model: nn.Module, x: np.ndarray) -> float:
    """Mean total-variation distance between each query's attention row and the uniform causal row (over layers,
    positions and sequences): 0 for uniform attention, near 1 for sharp patterns."""
    model.eval()
    with torch.no_grad():
        _, attn = model(torch.from_numpy(np.ascontiguousarray(x)), return_attention=True)
    attn = attn.double().numpy()  # [B, L, query, key]
    T = attn.shape[-1]
    uniform = np.tril(np.ones((T, T))) / np.arange(1, T + 1)[:, None]
    return float(0.5 * np.abs(attn - uniform).sum(-1).mean())


def closing_mass(model: nn.Module, x: np.ndarray) -> float:
    """Mean attention mass on closing-bracket keys, against their share among the causal keys (the ratio the
    thesis's 'attends to closing brackets' reading rests on): returns mass / share."""
    model.eval()
    with torch.no_grad():
        _, attn = model(torch.from_numpy(np.ascontiguousarray(x)), return_attention=True)
    attn = attn.double().numpy()
    close = (x % 2 == 1).astype(float)  # [B, key]
    mass = np.einsum("blqk,bk->blq", attn, close).mean()
    share = (np.cumsum(close, axis=1) / np.arange(1, x.shape[1] + 1)).mean()
    return float(mass / share)
