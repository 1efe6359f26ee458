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

from theorylab._extras import needs

with needs("trained"):
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


@dataclass(frozen=True)
class TopicEmbeddingConfig:
    r"""Model (2.6) of Thm 2.1.1: frozen uniform attention ($\mathbf W^K = \mathbf W^Q = 0$), $\mathbf W^V = I$,
    tied prediction head and a fixed bias; only the embedding $\mathbf W^E \in \mathbb R^{d \times V}$ is trained,
    so every output column is $\mathbf E y + \mathbf b$ with $\mathbf E = \mathbf W^{E\top}\mathbf W^E$ and $y$ the
    masked document's token frequencies. ``init`` is the standard deviation of the Gaussian initialisation of
    $\mathbf W^E$; ``bias`` the fixed $\mathbf b^{pred}$ (Thm 2.1.1: :func:`~theorylab.attention.topic.stage1.embedding_bias`)."""

    V: int
    d: int
    bias: tuple[float, ...]
    init: float = 0.05

    @property
    def vocab_size(self) -> int:
        return self.V

    @property
    def n_outputs(self) -> int:
        return self.V

    def build(self, seed: int = 0) -> TopicEmbedding:
        return TopicEmbedding(self, seed)


class TopicEmbedding(nn.Module):
    r"""Model (2.6) with only $\mathbf W^E$ trainable: tokens ``[B, N]`` -> predictions ``[B, N, V]``."""

    def __init__(self, cfg: TopicEmbeddingConfig, seed: int = 0):
        super().__init__()
        if len(cfg.bias) != cfg.V or cfg.d < 1:
            raise ValueError(f"need d >= 1 and a bias of length V = {cfg.V}, got d={cfg.d}, {len(cfg.bias)}")
        gen = torch.Generator().manual_seed(int(seed))
        self.W_E = nn.Parameter(cfg.init * torch.randn(cfg.d, cfg.V, generator=gen))
        self.register_buffer("bias", torch.tensor(cfg.bias, dtype=torch.float32))

    def gram(self) -> torch.Tensor:
        r"""$\mathbf E = \mathbf W^{E\top}\mathbf W^E$."""
        return self.W_E.T @ self.W_E

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        x = nn.functional.one_hot(tokens, self.W_E.shape[1]).to(self.W_E.dtype)
        y = x.mean(dim=1, keepdim=True)  # uniform attention: every query sees the mean token
        out = (y @ self.W_E.T) @ self.W_E + self.bias  # (E y)^T with E symmetric
        return out.expand(-1, tokens.shape[1], -1)


def top_eigen_share(E: np.ndarray, k: int) -> float:
    r"""Share of the trace of a symmetric PSD ``E`` carried by its ``k`` largest eigenvalues (1 when rank $\le k$)."""
    eig = np.linalg.eigvalsh((np.asarray(E, dtype=float) + np.asarray(E, dtype=float).T) / 2)[::-1]
    return float(eig[:k].sum() / eig.sum())


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
    r"""Means of the word-word entries of ``W`` by kind (same topic, different topic, diagonal, same topic off
    the diagonal) and two contrasts: $v(\overline W_{same} - \overline W_{diff})$ (``contrast``), which equals
    $c_3$ for every optimum whatever its within-block spread (Lemma 2.1.1), and
    $v(\overline W_{same, i\ne l} - \overline W_{diff})$ (``contrast_offdiag``), which equals $c_3$ only when the
    same-topic mass is spread over the block (Thm 2.1.2) and is 0 for the diagonal optimum $\mathbf D^V$. Both are
    robust to the row offsets $u_i$ that finite documents pin differently."""
    W = np.asarray(W, dtype=float)[1:, 1:]
    same = np.kron(np.eye(params.T, dtype=bool), np.ones((params.v, params.v), dtype=bool))
    diag = np.eye(params.T * params.v, dtype=bool)
    mean_same, mean_diff = W[same].mean(), W[~same].mean()
    mean_off = W[same & ~diag].mean() if params.v > 1 else float("nan")
    return {
        "mean_same": float(mean_same),
        "mean_diff": float(mean_diff),
        "mean_diag": float(W[diag].mean()),
        "mean_same_offdiag": float(mean_off),
        "contrast": float(params.v * (mean_same - mean_diff)),
        "contrast_offdiag": float(params.v * (mean_off - mean_diff)),
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
    r"""Does a trained $\mathbf W^V$ carry the block structure of the reference optimum (the minimum-norm
    least-squares solution on the same documents)? ``ok`` when both contrasts of :func:`block_contrast` are within
    ``rel_tol`` of the reference's and $\overline W_{same} > 0 > \overline W_{diff}$ (the sign pattern of Thm 2.1.2).

    The full contrast alone cannot tell block-wise from diagonal optima (it is $c_3$ for both); the off-diagonal
    contrast can (it is 0 for $\mathbf D^V$), and comparing with the reference on the same data (rather than with
    $c_3$) separates a converged model from one stopped early, whose finite-data structure is not yet formed."""
    got, ref = block_contrast(W, params), block_contrast(W_reference, params)
    gaps = {
        key: abs(got[key] - ref[key]) / abs(ref[key]) if np.isfinite(got[key]) else float("inf")
        for key in ("contrast", "contrast_offdiag")
    }
    ok = max(gaps.values()) < rel_tol and got["mean_same"] > 0 > got["mean_diff"]
    return {
        "ok": bool(ok),
        "contrast": got["contrast"],
        "contrast_offdiag": got["contrast_offdiag"],
        "reference": ref["contrast"],
        "reference_offdiag": ref["contrast_offdiag"],
        "relative_gap": gaps["contrast"],
        "relative_gap_offdiag": gaps["contrast_offdiag"],
    }


def attention_gap_closed(gamma: float, params: TopicModel, convention: str = "thesis") -> float:
    r"""Share of the loss gap between uniform attention ($\gamma = 1$) and the optimum $\gamma^*$ that attention
    with ratio ``gamma`` closes on the exact finite-size landscape $L(\gamma)$ of Thm 2.1.3 (infinite documents):
    $(L(1) - L(\gamma)) / (L(1) - L(\gamma^*))$; 1 at the optimum, 0 for uniform attention, negative below it."""
    from theorylab.attention.topic.stage2 import block_attention_loss, optimal_gamma

    if not (np.isfinite(gamma) and gamma > 0):
        raise ValueError(f"gamma must be positive and finite, got {gamma}")
    _, best = optimal_gamma(params, convention)
    uniform = float(block_attention_loss(1.0, params, convention))
    return float((uniform - float(block_attention_loss(gamma, params, convention))) / (uniform - best))


def attention_verdict(stats: dict[str, float], params: TopicModel, min_gap_closed: float = 0.9) -> bool:
    r"""Thm 2.1.3 read on a trained model: the measured $\hat\gamma$ closes at least ``min_gap_closed`` of the gap
    between uniform attention and the optimum on the exact landscape (:func:`attention_gap_closed`), and the
    different-topic average is the smallest of the three pair types.

    Why not just $\hat\gamma > 1$: any attention that has started to move passes that (50 of 300 Adam steps give
    $\hat\gamma = 1.2$, closing 18% of the gap). At $T = v = 10$, $\tau = 3$ a share of 0.9 means
    $\hat\gamma \in (3.6, 17)$ around $\gamma^* = 7.04$."""
    base = stats["different_topic"]
    return bool(
        attention_gap_closed(stats["gamma_hat"], params) >= min_gap_closed
        and base < stats["same_word"]
        and base < stats["same_topic_other_word"]
    )


def ratio_attention(params: TopicModel, alpha: float, beta: float) -> TopicAttention:
    r"""A :class:`TopicAttention` (float64, $\mathbf W^V = I$) whose attention is exactly the family of
    Assumption 2.1.2: key $i$ gets weight $\propto\beta$ from a query showing the same word, $\alpha$ for another
    word of the same topic and 1 otherwise; [MASK] keys and queries get the base weight 1.

    Realised with $\mathbf W^K = I$ and $\mathbf W^Q = \sqrt{d_a}\,S$, $S_{lq} = \log(\text{ratio of key word } l$
    for query word $q)$, so the score of key $i$ for query $j$ is $S_{w_iw_j}$: the family is realisable by the
    one-layer model, as the thesis states after Assumption 2.1.2."""
    for name, x in (("alpha", alpha), ("beta", beta)):
        if not (np.isfinite(x) and x > 0):
            raise ValueError(f"attention ratio {name} must be positive and finite, got {x}")
    V, T, v = params.V, params.T, params.v
    S = np.zeros((V, V))
    S[1:, 1:] = np.kron(np.eye(T), np.ones((v, v))) * np.log(alpha)
    S[np.arange(1, V), np.arange(1, V)] = np.log(beta)
    model = TopicAttentionConfig(V=V, train_value=False, train_attention=False).build().double()
    with torch.no_grad():
        model.W_V.copy_(torch.eye(V, dtype=torch.float64))
        model.W_K.copy_(torch.eye(V, dtype=torch.float64))
        model.W_Q.copy_(torch.as_tensor(S * np.sqrt(V)))
    model.uniform = False
    return model


def embedding_verdict(
    E: np.ndarray, params: TopicModel, rel_tol: float = 0.1, min_offdiag: float = 0.8
) -> dict:
    r"""Thm 2.1.1 read on a trained $\mathbf E = \mathbf W^{E\top}\mathbf W^E$: ``ok`` when its contrast
    $v(\overline E_{same} - \overline E_{diff})$ is within ``rel_tol`` of $c_3$ (every optimum has exactly $c_3$;
    the finite-document optimum sits a few percent below it) and the off-diagonal contrast is at least
    ``min_offdiag`` $c_3$ (the same-topic mass is spread over the block, as in the minimum-trace optimum
    $\frac{c_3}{v}\mathrm{blockdiag}(J_v)$, rather than on the diagonal, $c_3\,\mathrm{diag}(0, 1, \dots, 1)$)."""
    from theorylab.attention.topic.stage1 import constants

    c3 = float(constants(params).c3)
    got = block_contrast(E, params)
    gap = abs(got["contrast"] / c3 - 1)
    ok = gap < rel_tol and got["contrast_offdiag"] >= min_offdiag * c3
    return {
        "ok": bool(ok),
        "contrast": got["contrast"],
        "contrast_offdiag": got["contrast_offdiag"],
        "relative_gap": gap,
        "c3": c3,
    }
