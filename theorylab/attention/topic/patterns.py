r"""Diagonal against block-wise value matrices (Li §2.1.7.8, Fig 2.10), read on trained models.

Without $L_2$ regularisation the optima of $\mathbf W^V$ form a family (Thm 2.1.4) that contains both the uniform
blocks of Thm 2.1.2 and the diagonal $\mathbf D^V$ (Def 2.1.2). The statistic here is the share of a block's
excess mass that sits on the diagonal: with $\bar W_{diag}$, $\bar W_{same,i\ne l}$, $\bar W_{diff}$ the means of
the diagonal, same-topic off-diagonal and different-topic word-word entries,

$$q(\mathbf W) = \frac{\bar W_{diag}-\bar W_{diff}}{(\bar W_{diag}-\bar W_{diff}) + (v-1)(\bar W_{same,i\ne l}-\bar W_{diff})},$$

$q = 1/v$ for uniform blocks, $q = 1$ for $\mathbf D^V$; a pattern is *diagonal* when most of the block mass is on
the diagonal, $q \ge 1/2$. Row and column 0 ([MASK]) are ignored.
"""

from __future__ import annotations

import numpy as np

from theorylab.languages.topic import TopicModel
from theorylab.sweeps.stats import PopulationVerdict

DIAGONAL_SHARE = 0.5  # "diagonal": at least half of the block's excess mass on the diagonal


def diagonal_share(W: np.ndarray, params: TopicModel) -> float:
    r"""$q(\mathbf W)$ of the module docstring; NaN when the blocks carry no positive excess mass (no topic
    structure to split between diagonal and off-diagonal). Above 1 when the same-topic off-diagonal entries sit
    below the different-topic mean."""
    if params.v < 2:
        raise ValueError(f"the diagonal share needs v >= 2 words per topic, got v={params.v}")
    W = np.asarray(W, dtype=float)
    if W.shape != (params.V, params.V):
        raise ValueError(f"W must be ({params.V}, {params.V}), got {W.shape}")
    if not np.isfinite(W).all():
        raise ValueError("W must be finite")
    words = W[1:, 1:]
    same = np.kron(np.eye(params.T, dtype=bool), np.ones((params.v, params.v), dtype=bool))
    diag = np.eye(params.T * params.v, dtype=bool)
    base = words[~same].mean()
    on = words[diag].mean() - base
    off = (params.v - 1) * (words[same & ~diag].mean() - base)
    total = on + off
    return float(on / total) if total > 0 else float("nan")


def is_diagonal(W: np.ndarray, params: TopicModel, threshold: float = DIAGONAL_SHARE) -> bool:
    """Whether ``W`` shows a diagonal pattern: :func:`diagonal_share` at least ``threshold`` (NaN: no)."""
    q = diagonal_share(W, params)
    return bool(np.isfinite(q) and q >= threshold)


def sometimes_verdict(
    diagonal: list[bool], claim_low: float = 0.05, level: float = 0.95
) -> PopulationVerdict:
    r"""Verdict on "a trained $\mathbf W^V$ sometimes shows a diagonal pattern", read as: the share of runs with a
    diagonal pattern is at least ``claim_low`` (not a rare accident). Passed when the Clopper-Pearson interval of
    the share lies above ``claim_low``, failed when it lies below, open otherwise. The runs must already have
    passed the training gate (:func:`theorylab.nn.quality.require_trained`)."""
    from theorylab.sweeps.stats import zero_share

    flags = [bool(x) for x in diagonal]
    if not flags:
        raise ValueError("no runs to judge")
    if not 0 < claim_low < 1 or not 0 < level < 1:
        raise ValueError(f"claim_low and level must lie in (0, 1), got {claim_low}, {level}")
    k, n, lo, hi = zero_share([0 if f else 1 for f in flags], level)  # Clopper-Pearson of the diagonal share
    text = f"{k}/{n} runs diagonal, {level:.0%} interval [{lo:.3f}, {hi:.3f}] vs {claim_low}"
    if lo >= claim_low:
        return PopulationVerdict("passed", text, n, n)
    if hi < claim_low:
        return PopulationVerdict("failed", text, n, n)
    return PopulationVerdict("open", text + ": the replicates cannot decide", n, n)


def masked_square_loss(model, masked: np.ndarray, docs: np.ndarray, in_m: np.ndarray) -> float:
    r"""The training objective of :class:`~theorylab.languages.topic.TopicMLMTask` on fixed documents:
    $\frac1{|M|}\sum_{j\in M}\|f(\tilde X)_j - x_j\|^2$ over all masked positions of all documents (float64)."""
    import torch

    masked, docs, in_m = np.asarray(masked), np.asarray(docs), np.asarray(in_m, dtype=bool)
    if masked.shape != docs.shape or in_m.shape != docs.shape or docs.ndim != 2:
        raise ValueError(
            f"masked, docs, in_m must be equal [n, N] arrays, got {masked.shape}, {docs.shape}, {in_m.shape}"
        )
    if not in_m.any():
        raise ValueError("no masked position to score")
    with torch.no_grad():
        out = model(torch.as_tensor(masked, dtype=torch.int64)).double().cpu().numpy()
    target = np.zeros(out.shape)
    np.put_along_axis(target, docs[..., None], 1.0, axis=2)
    return float((((out - target) ** 2).sum(-1) * in_m).sum() / in_m.sum())
