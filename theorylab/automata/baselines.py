"""Trivial baselines for the state-prediction tasks: predictors that see only the last ``w`` symbols.

A trained model's accuracy says something about a claim only if it beats these. The window predictor is the
Bayes-optimal rule among those that read the last ``w`` symbols (positions before the start are a padding symbol, so
the first ``w`` positions see their whole prefix), estimated as the majority state per window on fitted words.
"""

from __future__ import annotations

import numpy as np

__all__ = ["window_codes", "window_accuracy", "best_window_accuracy"]


def window_codes(words: np.ndarray, n_symbols: int, w: int) -> np.ndarray:
    """Integer code ``[B, T]`` of the last ``w`` symbols at each position (base ``n_symbols + 1``; the extra digit
    pads positions before the start)."""
    words = np.asarray(words, dtype=np.int64)
    if words.ndim != 2:
        raise ValueError(f"words must be [B, T], got shape {words.shape}")
    if w < 1:
        raise ValueError(f"the window must have w >= 1, got {w}")
    base = n_symbols + 1
    padded = np.concatenate([np.full((words.shape[0], w - 1), n_symbols), words], axis=1)
    code = np.zeros(words.shape, dtype=np.int64)
    for i in range(w):
        code = code * base + padded[:, i : i + words.shape[1]]
    return code


def window_accuracy(
    task, w: int, T: int, rng: np.random.Generator, n_fit: int = 4096, n_eval: int = 1024
) -> float:
    """Token accuracy of the majority-state-per-window predictor of width ``w`` (fit on ``n_fit`` words of
    ``task``, scored on ``n_eval`` fresh ones, over the positions the task scores)."""
    k, n = task.vocab_size, task.n_outputs
    fit, ev = task.sample_batch(rng, n_fit, T), task.sample_batch(rng, n_eval, T)
    keys, inv = np.unique(window_codes(fit.inputs, k, w), return_inverse=True)
    counts = np.zeros((len(keys), n), dtype=np.int64)
    np.add.at(counts, (inv.reshape(-1), fit.targets.reshape(-1)), 1)
    table = counts.argmax(axis=1)
    fallback = int(np.bincount(fit.targets.reshape(-1), minlength=n).argmax())
    codes = window_codes(ev.inputs, k, w)
    pos = np.clip(np.searchsorted(keys, codes), 0, len(keys) - 1)
    pred = np.where(keys[pos] == codes, table[pos], fallback)
    mask = np.asarray(ev.mask, dtype=bool)
    return float((pred == ev.targets)[mask].mean())


def best_window_accuracy(task, T: int, max_w: int, rng: np.random.Generator, **kw) -> dict[int, float]:
    """:func:`window_accuracy` for every ``w = 1..max_w``."""
    return {w: window_accuracy(task, w, T, rng, **kw) for w in range(1, max_w + 1)}
