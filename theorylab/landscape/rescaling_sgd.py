"""SGD with fresh samples on a two-layer ReLU softmax network started on the rescaling orbit of a teacher
(Thm 3.3 of ``000_7523275b422019f8.txt`` beyond the toy). Plain numpy, all gradients by hand:
$z=W_2\\,\\mathrm{ReLU}(W_1e_x)$, loss $-\\log\\mathrm{softmax}(z)_y$, $x$ uniform over contexts, $y\\sim p^*(\\cdot|x)$."""

from __future__ import annotations

import numpy as np

__all__ = ["imbalance", "population_grad", "sgd_fresh_samples"]


def _softmax(z):
    e = np.exp(z - z.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def imbalance(W1: np.ndarray, W2: np.ndarray) -> float:
    """$\\sum_i|\\log(\\|W_1[i]\\|/\\|W_2[:,i]\\|)|$: zero iff every neuron is balanced (the AM-GM point)."""
    return float(np.sum(np.abs(np.log(np.linalg.norm(W1, axis=1) / np.linalg.norm(W2, axis=0)))))


def _grads(W1, W2, x, Y):
    """Mean gradient over contexts ``x`` (B,) with label distributions / one-hots ``Y`` (B, c)."""
    pre = W1[:, x].T  # (B, h)
    act = np.maximum(pre, 0)
    p = _softmax(act @ W2.T)
    r = p - Y  # dL/dz
    gW2 = r.T @ act / len(x)
    back = (r @ W2) * (pre > 0)  # (B, h)
    gW1 = np.zeros_like(W1)
    np.add.at(gW1.T, x, back / len(x))
    return gW1, gW2


def population_grad(W1, W2, target: np.ndarray):
    """Full-batch gradient of the population loss (contexts uniform, soft targets ``target`` (n, c))."""
    return _grads(W1, W2, np.arange(target.shape[0]), target)


def sgd_fresh_samples(W1, W2, target, eta: float, steps: int, batch: int, rng, *, full_batch: bool = False):
    """SGD with ``batch`` fresh (context, label) samples per step (or full-batch GD); returns (W1, W2)."""
    W1, W2 = W1.copy(), W2.copy()
    n, c = target.shape
    cum = target.cumsum(axis=1)
    for _ in range(int(steps)):
        if full_batch:
            g1, g2 = population_grad(W1, W2, target)
        else:
            x = rng.integers(0, n, batch)
            y = (rng.random((batch, 1)) > cum[x]).sum(axis=1).clip(max=c - 1)
            g1, g2 = _grads(W1, W2, x, np.eye(c)[y])
        W1 -= eta * g1
        W2 -= eta * g2
    return W1, W2
