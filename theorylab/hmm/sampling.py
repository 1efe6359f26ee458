"""Sampling stationary sequences from an HMM or a G-HMM."""

from __future__ import annotations

import numpy as np

from theorylab.hmm.models import GHMM, HMM

__all__ = ["sample"]


def _categorical(rng: np.random.Generator, probs_by_column: np.ndarray, states: np.ndarray) -> np.ndarray:
    """Draw ``i`` with probability ``probs_by_column[i, s]`` for each ``s`` in ``states`` (inverse CDF)."""
    cdf = np.cumsum(probs_by_column, axis=0)[:, states]  # (n_values, n)
    u = rng.random(states.shape[0]) * cdf[-1]
    return np.minimum((u[None, :] >= cdf).sum(axis=0), probs_by_column.shape[0] - 1)


def sample(model: HMM | GHMM, rng: np.random.Generator, n: int, length: int, *, return_hidden: bool = False):
    """``n`` independent stationary sequences of ``length`` tokens: $h_1$ uniform (Assumption 5), $h_{t+1}\\sim
    T_{:,h_t}$, $x_t\\sim O_{:,h_t}$ (int64, shape (n, length)) or $\\mathcal N(\\mu_{h_t}, I)$ (float, shape
    (n, length, d)). With ``return_hidden`` also the hidden states (n, length)."""
    if not isinstance(model, HMM | GHMM):
        raise TypeError(f"model must be an HMM or GHMM, got {type(model).__name__}")
    if not isinstance(rng, np.random.Generator):
        raise TypeError(
            f"rng must be a numpy.random.Generator, got {type(rng).__name__}: the order is sample(model, rng, n, "
            "length), as for every theorylab sampler (Semiautomaton.sample, Dyck.sample, sample_ffl, ...)"
        )
    if int(n) != n or n < 1 or int(length) != length or length < 1:
        raise ValueError(f"n and length must be positive integers, got n={n}, length={length}")
    if np.min(model.T) < 0 or (isinstance(model, HMM) and np.min(model.O) < 0):
        raise ValueError("cannot sample from a model with negative probabilities")
    n, length = int(n), int(length)
    h = np.empty((n, length), dtype=np.int64)
    h[:, 0] = rng.integers(0, model.k, size=n)
    for t in range(1, length):
        h[:, t] = _categorical(rng, model.T, h[:, t - 1])
    if isinstance(model, HMM):
        x = _categorical(rng, model.O, h.ravel()).reshape(n, length).astype(np.int64)
    else:
        x = model.M.T[h] + rng.standard_normal((n, length, model.d))
    return (x, h) if return_hidden else x
