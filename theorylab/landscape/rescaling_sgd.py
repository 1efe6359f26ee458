"""SGD with fresh samples on a two-layer ReLU softmax network started on the rescaling orbit of a teacher
(Thm 3.3 of ``000_7523275b422019f8.txt`` beyond the toy). Plain numpy, all gradients by hand:
$z=W_2\\,\\mathrm{ReLU}(W_1e_x)$, loss $-\\log\\mathrm{softmax}(z)_y$, $x$ uniform over contexts, $y\\sim p^*(\\cdot|x)$."""

from __future__ import annotations

import numpy as np

__all__ = [
    "excess_loss",
    "imbalance",
    "population_grad",
    "sgd_fresh_samples",
    "sgd_stationary_excess",
]


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


def excess_loss(W1, W2, target: np.ndarray) -> float:
    """Population loss minus its minimum: $\\mathbb E_x\\,\\mathrm{KL}(p^*(\\cdot|x)\\,\\|\\,f(x))$, contexts uniform
    (zero exactly on the set $\\Gamma$ of global minimisers of a realisable ``target``)."""
    target = np.asarray(target, dtype=float)
    z = (W2 @ np.maximum(W1, 0)).T  # (n, c): column x of W1 is the hidden pre-activation of context x
    logp = z - z.max(axis=1, keepdims=True)
    logp -= np.log(np.exp(logp).sum(axis=1, keepdims=True))
    pos = target > 0
    return float(np.sum(target[pos] * (np.log(target[pos]) - logp[pos])) / target.shape[0])


def sgd_stationary_excess(
    eta: float, batch: int, hessian_eigenvalues, samples: int = 1, spacing: int = 1
) -> tuple[float, float]:
    """Mean excess loss of SGD with ``batch`` fresh samples per step near a minimiser of a realisable
    cross-entropy, and the standard deviation of the average of ``samples`` iterates taken ``spacing`` steps apart.

    Linearised per eigen-direction of $H$: $\\delta'=(1-\\eta\\lambda)\\delta+\\eta\\xi$ with $\\mathrm{Var}\\,\\xi=\\lambda/B$
    (the per-sample gradient covariance is the Fisher matrix, which equals $H$ on $\\Gamma$). Stationary variance
    $\\eta/(B(2-\\eta\\lambda))$, excess $e_\\lambda=\\eta\\lambda/(2B(2-\\eta\\lambda))$, in all
    $\\sum_\\lambda e_\\lambda\\approx\\eta\\,\\mathrm{Tr}H/(4B)$. Each $e_\\lambda\\chi^2_1$ has variance $2e_\\lambda^2$ and
    lag-$s$ autocorrelation $r=(1-\\eta\\lambda)^{2s}$, so the average of $n$ samples has variance
    $\\sum_\\lambda 2e_\\lambda^2\\,(n+2\\sum_{j<n}(n-j)r^j)/n^2$. Directions with $\\lambda\\le0$ (tangent to $\\Gamma$,
    round-off) carry no excess."""
    lam = np.clip(np.asarray(hessian_eigenvalues, dtype=float), 0.0, None)
    if not (eta > 0 and int(batch) == batch and batch >= 1):
        raise ValueError(f"need eta > 0 and a positive integer batch, got eta={eta}, batch={batch}")
    if int(samples) != samples or samples < 1 or int(spacing) != spacing or spacing < 1:
        raise ValueError(f"samples and spacing must be positive integers, got {samples}, {spacing}")
    if np.any(eta * lam >= 2):
        raise ValueError(
            f"eta * lambda_max = {eta * lam.max():.3g} >= 2: SGD is unstable, no stationary excess"
        )
    e = eta * lam / (2 * batch * (2 - eta * lam))
    r = (1 - eta * lam) ** (2 * int(spacing))
    j = np.arange(1, int(samples))
    pair_sum = samples + 2 * ((samples - j)[None, :] * r[:, None] ** j[None, :]).sum(axis=1)
    return float(e.sum()), float(np.sqrt(np.sum(2 * e**2 * pair_sum)) / samples)


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
