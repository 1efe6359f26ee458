r"""The one-layer, one-head attention model (2.7) of §2.1 in torch, and the statistics used to read it.

$f(\tilde{\mathbf X}) = \mathbf W^V\tilde{\mathbf X}A(\tilde{\mathbf X})$ with one-hot embeddings, no
residual, no normalisation, no positional encoding and no biases; $A_{ij}$ (key $i$, query $j$) is a softmax
over keys of $(\mathbf W^K x_i)\cdot(\mathbf W^Q x_j)/\sqrt{d_a}$. Frozen $\mathbf W^K = \mathbf W^Q = 0$
gives uniform attention (stage 1 of the thesis). Importing this module imports torch.

Also here: the least-squares optimum of the uniform-attention model on a finite set of masked documents (the
reference a trained $\mathbf W^V$ should approach), the block contrast $v(\overline W_{same} - \overline
W_{diff})$, and average attention by pair type (same word / same topic, different word / different topic).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch
from torch import nn

from theorylab.languages.topic import MASK, TopicModel, frequency_vectors


@dataclass(frozen=True)
class TopicAttentionConfig:
    r"""Configuration of :class:`TopicAttention` (accepted by :func:`theorylab.nn.train`).

    ``train_value`` / ``train_attention`` choose the trainable matrices; ``init_value`` and ``init_attention``
    are the standard deviations of the zero-mean Gaussian initialisation (0 gives exact zeros; note that
    exactly zero $\mathbf W^K, \mathbf W^Q$ have exactly zero gradient, so attention then never leaves
    uniform). ``fixed_value`` freezes $\mathbf W^V$ to a given matrix (stage 2).
    """

    V: int
    d_a: int | None = None
    train_value: bool = True
    train_attention: bool = False
    init_value: float = 0.0
    init_attention: float = 0.0
    fixed_value: tuple[tuple[float, ...], ...] | None = None

    @property
    def vocab_size(self) -> int:
        return self.V

    @property
    def n_outputs(self) -> int:
        return self.V

    def build(self, seed: int = 0) -> TopicAttention:
        return TopicAttention(self, seed)


class TopicAttention(nn.Module):
    """Model (2.7): tokens ``[B, N]`` -> predictions ``[B, N, V]``."""

    def __init__(self, cfg: TopicAttentionConfig, seed: int = 0):
        super().__init__()
        V, d_a = cfg.V, cfg.d_a or cfg.V
        gen = torch.Generator().manual_seed(int(seed))
        if cfg.fixed_value is not None:
            value = torch.tensor(np.asarray(cfg.fixed_value, dtype=np.float32))
            if value.shape != (V, V):
                raise ValueError(f"fixed_value must be ({V}, {V}), got {tuple(value.shape)}")
        else:
            value = cfg.init_value * torch.randn(V, V, generator=gen)
        self.W_V = nn.Parameter(value, requires_grad=cfg.train_value and cfg.fixed_value is None)
        self.W_K = nn.Parameter(cfg.init_attention * torch.randn(d_a, V, generator=gen), cfg.train_attention)
        self.W_Q = nn.Parameter(cfg.init_attention * torch.randn(d_a, V, generator=gen), cfg.train_attention)
        self.scale = float(d_a) ** -0.5
        self.uniform = not cfg.train_attention and cfg.init_attention == 0  # W^K = W^Q = 0 frozen

    def attention(self, tokens: torch.Tensor) -> torch.Tensor:
        """$A$ as ``[B, N_keys, N_queries]`` (each column sums to 1)."""
        x = nn.functional.one_hot(tokens, self.W_V.shape[0]).to(self.W_K.dtype)  # [B, N, V]
        keys, queries = x @ self.W_K.T, x @ self.W_Q.T  # [B, N, d_a]
        scores = keys @ queries.transpose(1, 2) * self.scale
        return torch.softmax(scores, dim=1)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        x = nn.functional.one_hot(tokens, self.W_V.shape[0]).to(self.W_V.dtype)
        if self.uniform:  # A = 11^T / N: every query sees W^V applied to the mean token
            return (x.mean(dim=1, keepdim=True) @ self.W_V.T).expand(-1, tokens.shape[1], -1)
        return self.attention(tokens).transpose(1, 2) @ (x @ self.W_V.T)


# ------------------------------------------------------------------------------------------------------------
# reading trained models
# ------------------------------------------------------------------------------------------------------------
def least_squares_value_matrix(masked: np.ndarray, docs: np.ndarray, in_m: np.ndarray, V: int) -> np.ndarray:
    r"""Minimum-norm minimiser of the training loss of the uniform-attention model on these documents.

    The harness pools the squared loss over all masked positions, so document $d$ contributes
    $\sum_{j \in M_d}\|\mathbf W y_d - x_j\|^2$: the normal equations are
    $\mathbf W\sum_d |M_d|\,y_dy_d^\top = \sum_d (\sum_{j\in M_d} x_j)\,y_d^\top$.
    """
    y = frequency_vectors(masked, V)  # [n, V]
    n_masked = in_m.sum(axis=1).astype(float)
    target_counts = np.zeros((len(docs), V))
    rows = np.repeat(np.arange(len(docs)), docs.shape[1])
    np.add.at(target_counts, (rows, docs.ravel()), in_m.ravel().astype(float))
    gram = (y * n_masked[:, None]).T @ y
    cross = target_counts.T @ y
    return cross @ np.linalg.pinv(gram, rtol=1e-12, hermitian=True)


def block_contrast(W: np.ndarray, params: TopicModel) -> dict[str, float]:
    r"""Means of the same-topic and cross-topic word-word entries of ``W`` and the contrast
    $v(\overline W_{same} - \overline W_{diff})$, which equals $c_3$ for every optimum with uniform blocks and
    is robust to the row offsets $u_i$ that finite documents pin differently."""
    W = np.asarray(W, dtype=float)[1:, 1:]
    same = np.kron(np.eye(params.T, dtype=bool), np.ones((params.v, params.v), dtype=bool))
    diag = np.eye(params.T * params.v, dtype=bool)
    mean_same, mean_diff = W[same].mean(), W[~same].mean()
    return {
        "mean_same": float(mean_same),
        "mean_diff": float(mean_diff),
        "mean_diag": float(W[diag].mean()),
        "mean_same_offdiag": float(W[same & ~diag].mean()) if params.v > 1 else float("nan"),
        "contrast": float(params.v * (mean_same - mean_diff)),
    }


def attention_by_pair_type(model: TopicAttention, masked: np.ndarray, params: TopicModel) -> dict[str, float]:
    r"""Average attention weight from non-[MASK] queries to non-[MASK] keys at other positions, by pair type,
    and the ratios to the different-topic average: $\hat\beta$ (same word), $\hat\alpha$ (same topic, other
    word), $\hat\gamma = \frac{v-1}{v}\hat\alpha + \frac1v\hat\beta$."""
    tokens = torch.as_tensor(np.asarray(masked, dtype=np.int64))
    with torch.no_grad():
        A = model.attention(tokens).double().numpy()  # [B, keys, queries]
    tok = np.asarray(masked)
    valid = (tok != MASK)[:, :, None] & (tok != MASK)[:, None, :]
    valid &= ~np.eye(tok.shape[1], dtype=bool)[None]
    topic = np.where(tok == MASK, -1, (tok - 1) // params.v)
    same_word = tok[:, :, None] == tok[:, None, :]
    same_topic = topic[:, :, None] == topic[:, None, :]
    kinds = {
        "same_word": valid & same_word,
        "same_topic_other_word": valid & same_topic & ~same_word,
        "different_topic": valid & ~same_topic,
    }
    out = {name: float(A[sel].mean()) for name, sel in kinds.items()}
    base = out["different_topic"]
    out["beta_hat"] = out["same_word"] / base
    out["alpha_hat"] = out["same_topic_other_word"] / base
    out["gamma_hat"] = ((params.v - 1) * out["alpha_hat"] + out["beta_hat"]) / params.v
    return out


def weight_norms(model: TopicAttention) -> dict[str, float]:
    r"""Frobenius norms of $\mathbf W^K, \mathbf W^Q, \mathbf W^V$."""
    return {name: float(getattr(model, name).detach().norm()) for name in ("W_K", "W_Q", "W_V")}


def initial_gradient_norms(
    params: TopicModel, scale: float, rng: np.random.Generator, batch: int = 16, N: int = 32, seed: int = 0
) -> dict[str, float]:
    r"""Gradient norms of the squared MLM loss at a Gaussian initialisation of scale ``scale`` for all of
    $\mathbf W^K, \mathbf W^Q, \mathbf W^V$ (the two-stage heuristic of §2.1.6.1: the key/query gradients
    carry a factor of the other matrix, so they are $O(s)$ relative to the value gradient)."""
    cfg = TopicAttentionConfig(V=params.V, train_attention=True, init_value=scale, init_attention=scale)
    model = cfg.build(seed)
    docs = params.sample_documents(rng, batch, N)
    masked, in_m = params.mask_documents(rng, docs)
    out = model(torch.as_tensor(masked))
    target = torch.nn.functional.one_hot(torch.as_tensor(docs), params.V).float()
    mask = torch.as_tensor(in_m).float()
    loss = (((out - target) ** 2).sum(-1) * mask).sum() / mask.sum().clamp_min(1)
    loss.backward()
    return {name: float(getattr(model, name).grad.norm()) for name in ("W_K", "W_Q", "W_V")}


def stage_onsets(
    steps: np.ndarray, norm_k: np.ndarray, norm_q: np.ndarray, norm_v: np.ndarray
) -> dict[str, float]:
    r"""Onsets of the two stages from norm trajectories (index 0 = initialisation): $t_V$, the first step
    where $\|\mathbf W^V\|$ reaches half its final value, and $t_{KQ}$, the first step where
    $\|\mathbf W^K\|\|\mathbf W^Q\|$ reaches twice its initial value (``inf`` if never)."""
    steps = np.asarray(steps, dtype=float)
    kq = np.asarray(norm_k) * np.asarray(norm_q)
    v = np.asarray(norm_v)

    def first(mask: np.ndarray) -> float:
        return float(steps[np.argmax(mask)]) if mask.any() else float("inf")

    return {"t_V": first(v >= 0.5 * v[-1]), "t_KQ": first(kq >= 2.0 * kq[0])}


def stage1_verdict(W: np.ndarray, W_reference: np.ndarray, params: TopicModel, rel_tol: float = 0.05) -> dict:
    r"""Does a trained $\mathbf W^V$ carry the block structure of the reference optimum? ``ok`` when its contrast
    $v(\overline W_{same} - \overline W_{diff})$ is within ``rel_tol`` of the reference's and
    $\overline W_{same} > 0 > \overline W_{diff}$ (the sign pattern of Thm 2.1.2)."""
    got, ref = block_contrast(W, params), block_contrast(W_reference, params)
    rel = abs(got["contrast"] - ref["contrast"]) / abs(ref["contrast"])
    ok = rel < rel_tol and got["mean_same"] > 0 > got["mean_diff"]
    return {"ok": bool(ok), "contrast": got["contrast"], "reference": ref["contrast"], "relative_gap": rel}


def attention_verdict(stats: dict[str, float], margin: float = 0.05) -> bool:
    r"""Same-topic attention exceeds different-topic attention: $\hat\gamma > 1 + $ ``margin`` and the
    different-topic average is the smallest of the three pair types."""
    base = stats["different_topic"]
    return bool(
        stats["gamma_hat"] > 1 + margin
        and base < stats["same_word"]
        and base < stats["same_topic_other_word"]
    )
