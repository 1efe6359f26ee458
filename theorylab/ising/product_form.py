"""Product-form transitions (Prop 4.1.3 / 4.3.5 of ``003_69b23422e33c905a.txt``): one parallel-decoding step samples
every position independently, so its transition rows are product laws.

For a law $q$ on $\\{-1,+1\\}^N$ (a transition row, product order) the total correlation is
$TC(q)=\\sum_iH(q_i)-H(q)\\ge0$, zero iff $q$ is a product law; the best product approximation in KL,
$\\arg\\min_{r=\\otimes r_i}D(q\\|r)$, is the product of the marginals, and its cross-entropy is
$H(q)+TC(q)=\\sum_iH(q_i)$: the floor of any parallel decoder trained by maximum likelihood.
"""

from __future__ import annotations

import numpy as np

from theorylab.ising.model import spin_states


def _row(q) -> tuple[np.ndarray, int]:
    q = np.asarray(q, dtype=float)
    if q.ndim != 1 or q.size < 2 or q.size & (q.size - 1):
        raise ValueError(f"a law on {{-1,+1}}^N has 2^N entries, got shape {q.shape}")
    if not np.all(np.isfinite(q)) or q.min() < 0 or abs(q.sum() - 1) > 1e-10:
        raise ValueError("q must be a probability vector (nonnegative, summing to 1)")
    return q, int(q.size).bit_length() - 1


def entropy(q) -> float:
    """Shannon entropy in nats."""
    q = np.asarray(q, dtype=float)
    nz = q[q > 0]
    return float(-(nz * np.log(nz)).sum())


def marginals(q) -> np.ndarray:
    """$q(x_i=+1)$ for each coordinate."""
    q, N = _row(q)
    return q @ ((spin_states(N) + 1) // 2)


def best_product_approximation(q) -> np.ndarray:
    """The product of the marginals of q (the KL projection onto product laws), as a law on the $2^N$ states."""
    q, N = _row(q)
    m = marginals(q)
    X = (spin_states(N) + 1) // 2
    return np.prod(np.where(X == 1, m, 1 - m), axis=1)


def total_correlation(q) -> float:
    """$TC(q)=\\sum_iH(q_i)-H(q)$ (nats)."""
    q, _ = _row(q)
    m = marginals(q)
    Hm = sum(entropy([a, 1 - a]) for a in m)
    return max(0.0, Hm - entropy(q))


def product_floor(rows, weights) -> float:
    """$\\mathbb E_x[H(P(x,\\cdot))+TC(P(x,\\cdot))]$: the least cross-entropy of a product-form model of the rows."""
    rows = np.asarray(rows, dtype=float)
    w = np.asarray(weights, dtype=float)
    return float(sum(wi * (entropy(r) + total_correlation(r)) for r, wi in zip(rows, w, strict=True)))
