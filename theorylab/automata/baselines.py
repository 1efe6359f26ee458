"""Trivial baselines for the state-prediction tasks: predictors that see only the last ``w`` symbols.

A trained model's accuracy says something about a claim only if it beats these. The window predictor is the
Bayes-optimal rule among those that read the last ``w`` symbols (positions before the start are a padding symbol, so
the first ``w`` positions see their whole prefix), estimated as the majority state per window on fitted words.
"""

from __future__ import annotations

import numpy as np

__all__ = ["window_codes", "fitted_window_accuracy", "window_accuracy", "best_window_accuracy"]


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


def fitted_window_accuracy(
    train_words: np.ndarray,
    train_labels: np.ndarray,
    test_words: np.ndarray,
    test_labels: np.ndarray,
    w: int,
    n_symbols: int,
    test_mask: np.ndarray | None = None,
) -> float:
    """Accuracy on the test sample of the best predictor of the label from the last ``w`` symbols, fitted on the
    training sample (per window the most frequent label; unseen windows get the overall majority label).
    ``w = 0`` is the majority-class predictor."""
    if w < 0:
        raise ValueError(f"w must be >= 0, got {w}")

    def codes(words) -> np.ndarray:  # w = 0: one window for every position
        return window_codes(words, n_symbols, w) if w else np.zeros(np.shape(words), dtype=np.int64)

    tr_labels = np.asarray(train_labels).reshape(-1)
    te_labels = np.asarray(test_labels)
    n_labels = int(max(tr_labels.max(), te_labels.max())) + 1
    keys, inv = np.unique(codes(train_words), return_inverse=True)
    counts = np.zeros((len(keys), n_labels), dtype=np.int64)
    np.add.at(counts, (inv.reshape(-1), tr_labels), 1)
    table = counts.argmax(axis=1)
    fallback = int(np.bincount(tr_labels, minlength=n_labels).argmax())
    test = codes(test_words)
    pos = np.clip(np.searchsorted(keys, test), 0, len(keys) - 1)
    hit = np.where(keys[pos] == test, table[pos], fallback) == te_labels
    mask = np.ones(hit.shape, dtype=bool) if test_mask is None else np.asarray(test_mask, dtype=bool)
    return float(hit[mask].mean())


def window_accuracy(
    task, w: int, T: int, rng: np.random.Generator, n_fit: int = 4096, n_eval: int = 1024
) -> float:
    """Token accuracy of the majority-state-per-window predictor of width ``w`` (fit on ``n_fit`` words of
    ``task``, scored on ``n_eval`` fresh ones, over the positions the task scores)."""
    fit, ev = task.sample_batch(rng, n_fit, T), task.sample_batch(rng, n_eval, T)
    return fitted_window_accuracy(fit.inputs, fit.targets, ev.inputs, ev.targets, w, task.vocab_size, ev.mask)


def best_window_accuracy(task, T: int, max_w: int, rng: np.random.Generator, **kw) -> dict[int, float]:
    """:func:`window_accuracy` for every ``w = 1..max_w``."""
    return {w: window_accuracy(task, w, T, rng, **kw) for w in range(1, max_w + 1)}
