"""Recipes: the model and training budget of a document's experiment at the document's size.

A recipe is data (a frozen :class:`Recipe`); ``train(task, recipe.config, recipe.budget, seeds=recipe.seeds)`` runs
it. The sizes are the documents'; they are meant for a GPU (``--scale full --device cuda``).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from theorylab._fmt import plain
from theorylab.nn.models import TransformerConfig
from theorylab.nn.train import Budget


@dataclass(frozen=True)
class Recipe:
    """A model configuration, a training budget and the seeds trained together (one vmapped stack)."""

    config: TransformerConfig
    budget: Budget
    seeds: tuple[int, ...]


def flipflop_baseline(T: int = 512, n_seeds: int = 8, **changes) -> Recipe:
    """The 19M-parameter baseline of the flip-flop experiments (``001_6a230b9a9faf2198.txt`` §3.5): a causal
    pre-LN GPT with 6 layers, d_model = 512, 8 heads (12 L d^2 ~ 18.9M weights in the blocks), sequence length T,
    AdamW at lr 3e-4 with weight decay 0.1, batch 16, 10,000 steps, 50 warm-up steps then linear decay.

    ``changes`` override fields of the model configuration, e.g. ``emb_dropout=0.5`` (R6) or ``pos="alibi"``.
    """
    if not isinstance(n_seeds, int) or n_seeds < 1:
        raise ValueError(f"n_seeds must be a positive int, got {plain(n_seeds)}")
    config = TransformerConfig(vocab_size=5, n_outputs=5, d_model=512, n_layers=6, n_heads=8, max_len=T)
    budget = Budget(
        steps=10_000,
        batch_size=16,
        seq_len=T,
        lr=3e-4,
        weight_decay=0.1,
        schedule="warmup_linear",
        warmup=50,
        eval_every=1000,
        eval_batches=4,
    )
    return Recipe(replace(config, **changes), budget, tuple(range(n_seeds)))
