r"""Attention-sharpening regularisers (Liu §3.5.4.2, `001_6a230b9a9faf2198.txt`, l.3054-3055) as an auxiliary loss.

``AttentionSharpening(config, lam, kind)`` wraps a :class:`TransformerConfig`; its ``build(seed)`` returns a module
whose training forward returns ``(outputs, lam * penalty)`` (the harness adds the second term to the objective) and
whose eval forward returns the outputs only. The penalty is averaged over layers, heads, query positions and batch:
``entropy`` $-\sum_j w_{ij}\log w_{ij}$, ``l2`` $1-\sum_j w_{ij}^2$, ``linf`` $1-\max_j w_{ij}$ (all $\ge0$, zero iff
the row is one-hot).
"""

from __future__ import annotations

from dataclasses import dataclass

from theorylab._extras import needs
from theorylab._fmt import plain

with needs("trained"):
    import torch
    from torch import nn

from theorylab.nn.models import TransformerConfig

__all__ = ["AttentionSharpening", "SharpenedTransformer", "attention_penalty"]

KINDS = ("entropy", "l2", "linf")


def attention_penalty(weights: list[torch.Tensor], kind: str = "entropy") -> torch.Tensor:
    """Mean sharpness penalty of a list of attention tensors ``[B, H, T, T]`` (rows sum to 1)."""
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {KINDS}, got {kind!r}")
    if not weights:
        raise ValueError("no attention weights to regularise")
    terms = []
    for w in weights:
        if kind == "entropy":
            # masked entries are exactly 0; clamping inside the log keeps 0 * log 0 = 0 with a finite gradient
            row = -(w * torch.log(w.clamp_min(1e-30))).sum(-1)
        elif kind == "l2":
            row = 1 - (w * w).sum(-1)
        else:
            row = 1 - w.amax(-1)
        terms.append(row.mean())
    return torch.stack(terms).mean()


class SharpenedTransformer(nn.Module):
    """A Transformer plus the sharpening penalty of its attention weights (see the module docstring)."""

    def __init__(self, inner: nn.Module, lam: float, kind: str, layers: tuple[int, ...] | None) -> None:
        super().__init__()
        self.inner, self.lam, self.kind, self.layers = inner, float(lam), kind, layers
        self.cfg = inner.cfg

    def forward(self, tokens: torch.Tensor, return_attention: bool = False):
        if not self.training and not return_attention:
            return self.inner(tokens)  # evaluation needs no weights: the fused attention path may run
        out, weights = self.inner(tokens, return_attention=True)
        if return_attention:
            return out, weights
        if not self.training:
            return out
        chosen = weights if self.layers is None else [weights[i] for i in self.layers]
        return out, self.lam * attention_penalty(chosen, self.kind)


@dataclass(frozen=True)
class AttentionSharpening:
    """Config wrapper: ``build(seed)`` = the wrapped config's model (same seed, same weights) with the penalty.
    Other attributes (``flops_per_token``, ``max_len``, ...) are the wrapped config's."""

    config: TransformerConfig
    lam: float = 0.1
    kind: str = "entropy"
    layers: tuple[int, ...] | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.config, TransformerConfig):
            raise TypeError(
                f"AttentionSharpening wraps a TransformerConfig, got {type(self.config).__name__}"
            )
        if not self.lam >= 0:
            raise ValueError(f"lam must be >= 0, got {plain(self.lam)}")
        if self.kind not in KINDS:
            raise ValueError(f"kind must be one of {KINDS}, got {self.kind!r}")
        if self.config.uniform_attention:
            raise ValueError("uniform attention has no weights to sharpen")
        if self.layers is not None and any(not 0 <= i < self.config.n_layers for i in self.layers):
            raise ValueError(f"layers {self.layers} outside 0..{self.config.n_layers - 1}")

    def __getattr__(self, name: str):
        if name.startswith("__"):
            raise AttributeError(name)
        return getattr(self.config, name)

    def build(self, seed: int = 0) -> SharpenedTransformer:
        return SharpenedTransformer(self.config.build(seed), self.lam, self.kind, self.layers)
