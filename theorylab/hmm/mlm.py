"""Single-mask MLM conditionals of a discrete HMM (seed ``000_7523275b422019f8.txt``, A.2 and §2.1).

For a sentence $x_{1:L}$ and a masked position $t$,
$$\\Pr(x_t=c\\mid x_{-t})\\propto\\sum_s\\alpha_t(s)\\,O_{cs}\\,\\beta_t(s),\\qquad
\\alpha_t(s)=\\Pr(x_{1:t-1},h_t=s),\\ \\beta_t(s)=\\Pr(x_{t+1:L}\\mid h_t=s).$$
This is the forward-backward (sum-product) recursion. The document says "Viterbi" (l.208); a max over hidden paths
does not give these conditionals (``mlm_conditionals_viterbi`` is kept as the printed variant, for the check that
rejects it). Conventions follow :class:`theorylab.hmm.HMM`: $O$ is $d\\times k$ column-stochastic,
$T_{ij}=\\Pr(h_{t+1}=i\\mid h_t=j)$, $h_1$ uniform unless ``initial`` is given.

The MLM loss decomposes as $\\mathrm{CE}=\\mathbb E_{x,t}H(\\Pr(\\cdot\\mid x_{-t}))+\\mathbb E_{x,t}
\\mathrm{KL}(\\Pr(\\cdot\\mid x_{-t})\\,\\|\\,f(x_{-t}))$ (``mlm_entropy`` and ``excess_kl``).
"""

from __future__ import annotations

import itertools
from collections.abc import Callable

import numpy as np

from theorylab.hmm.models import HMM

__all__ = [
    "excess_kl",
    "mlm_conditionals",
    "mlm_conditionals_bruteforce",
    "mlm_conditionals_viterbi",
    "mlm_entropy",
]


def _setup(hmm: HMM, x, t: int, initial):
    if not isinstance(hmm, HMM):
        raise TypeError(f"hmm must be a theorylab.hmm.HMM, got {type(hmm).__name__}")
    O, T = hmm.O, hmm.T
    d, k = O.shape
    X = np.asarray(x)
    if X.dtype.kind not in "iu":
        raise TypeError(f"x must hold integer tokens, got dtype {X.dtype}")
    squeeze = X.ndim == 1
    X = np.atleast_2d(X)
    if X.ndim != 2 or X.shape[1] == 0:
        raise ValueError(f"x must be a sentence (L,) or a batch (N, L) with L >= 1, got shape {np.shape(x)}")
    if X.min() < 0 or X.max() >= d:
        raise ValueError(f"tokens must lie in [0, {d}), got range [{X.min()}, {X.max()}]")
    L = X.shape[1]
    if not 0 <= int(t) < L:
        raise ValueError(f"masked position t must lie in [0, {L}), got {t}")
    pi = np.full(k, 1.0 / k) if initial is None else np.asarray(initial, dtype=float)
    if pi.shape != (k,) or not np.all(np.isfinite(pi)) or pi.min() < 0 or abs(pi.sum() - 1) > 1e-9:
        raise ValueError(f"initial must be a probability vector of length {k}")
    return O, T, pi, X, int(t), squeeze


def mlm_conditionals(hmm: HMM, x, t: int, initial=None) -> np.ndarray:
    """$\\Pr(x_t=\\cdot\\mid x_{-t})$ by forward-backward; ``x`` is (L,) or a batch (N, L); the token at
    position ``t`` is ignored. Returns (d,) or (N, d). Scaled recursions (no underflow for long sentences)."""
    O, T, pi, X, t, squeeze = _setup(hmm, x, t, initial)
    N, L = X.shape
    alpha = np.broadcast_to(pi, (N, pi.size)).copy()  # P(h_1) before any emission
    for s in range(t):
        alpha = alpha * O[X[:, s]]
        alpha /= alpha.sum(axis=1, keepdims=True)
        alpha = alpha @ T.T
    beta = np.ones_like(alpha)
    for s in range(L - 1, t, -1):
        beta = (beta * O[X[:, s]]) @ T  # beta_{s-1}(j) = sum_i T_ij O_{x_s i} beta_s(i)
        beta /= beta.sum(axis=1, keepdims=True)
    joint = (alpha * beta) @ O.T
    out = joint / joint.sum(axis=1, keepdims=True)
    return out[0] if squeeze else out


def mlm_conditionals_viterbi(hmm: HMM, x, t: int, initial=None) -> np.ndarray:
    """The printed recipe read literally: max over hidden paths (max-product) instead of a sum. Wrong in
    general; kept as the negative control of ``flat.data.hmm``."""
    O, T, pi, X, t, squeeze = _setup(hmm, x, t, initial)
    N, L = X.shape
    alpha = np.broadcast_to(pi, (N, pi.size)).copy()
    for s in range(t):
        alpha = alpha * O[X[:, s]]
        alpha /= alpha.max(axis=1, keepdims=True)
        alpha = (alpha[:, None, :] * T[None]).max(axis=2)
    beta = np.ones_like(alpha)
    for s in range(L - 1, t, -1):
        beta = ((beta * O[X[:, s]])[:, :, None] * T[None]).max(axis=1)
        beta /= beta.max(axis=1, keepdims=True)
    joint = ((alpha * beta)[:, None, :] * O[None]).max(axis=2)
    out = joint / joint.sum(axis=1, keepdims=True)
    return out[0] if squeeze else out


def _sentence_probs(hmm: HMM, L: int, initial) -> tuple[np.ndarray, np.ndarray]:
    d, k = hmm.O.shape
    if d**L * k > 2_000_000:
        raise ValueError(f"enumeration of d^L = {d}^{L} sentences is too large; sample sentences instead")
    pi = np.full(k, 1.0 / k) if initial is None else np.asarray(initial, dtype=float)
    X = np.array(list(itertools.product(range(d), repeat=L)), dtype=np.int64)
    alpha = pi * hmm.O[X[:, 0]]
    for s in range(1, L):
        alpha = (alpha @ hmm.T.T) * hmm.O[X[:, s]]
    return X, alpha.sum(axis=1)


def mlm_conditionals_bruteforce(hmm: HMM, x, t: int, initial=None) -> np.ndarray:
    """The same conditional by enumerating every sentence: $\\Pr(x_t=c,x_{-t})$ from the joint law."""
    O, _, _, X, t, squeeze = _setup(hmm, x, t, initial)
    xs, probs = _sentence_probs(hmm, X.shape[1], initial)
    out = np.empty((X.shape[0], O.shape[0]))
    for n, row in enumerate(X):
        keep = np.all(np.delete(xs, t, axis=1) == np.delete(row, t), axis=1)
        joint = np.bincount(xs[keep, t], weights=probs[keep], minlength=O.shape[0])
        out[n] = joint / joint.sum()
    return out[0] if squeeze else out


def _entropy(p: np.ndarray) -> np.ndarray:
    return -np.sum(np.where(p > 0, p * np.log(np.where(p > 0, p, 1.0)), 0.0), axis=-1)


def mlm_entropy(hmm: HMM, length: int, sentences=None, initial=None) -> float:
    """$\\frac1L\\sum_t\\mathbb E_xH(x_t\\mid x_{-t})$ in nats: exact by enumeration when ``sentences`` is None
    (small d^L), else the average over the given sample sentences (the A.4/A.6 estimator)."""
    if int(length) < 1:
        raise ValueError(f"length must be >= 1, got {length}")
    if sentences is None:
        X, w = _sentence_probs(hmm, int(length), initial)
    else:
        X = np.atleast_2d(np.asarray(sentences))
        if X.shape[1] != length:
            raise ValueError(f"sentences have length {X.shape[1]}, expected {length}")
        w = np.full(X.shape[0], 1.0 / X.shape[0])
    H = [w @ _entropy(mlm_conditionals(hmm, X, t, initial)) for t in range(int(length))]
    return float(np.mean(H))


def excess_kl(model_fn: Callable[[np.ndarray, int], np.ndarray], hmm: HMM, sentences, initial=None) -> float:
    """$\\mathbb E_{x,t}\\mathrm{KL}(\\Pr(\\cdot\\mid x_{-t})\\,\\|\\,f(x_{-t}))$ over the given sentences (uniform t).
    ``model_fn(X, t)`` returns the model's (N, d) probabilities for the batch ``X`` masked at ``t``."""
    X = np.atleast_2d(np.asarray(sentences))
    total = 0.0
    for t in range(X.shape[1]):
        p = mlm_conditionals(hmm, X, t, initial)
        q = np.asarray(model_fn(X, t), dtype=float)
        if q.shape != p.shape:
            raise ValueError(f"model_fn returned shape {q.shape}, expected {p.shape}")
        if not np.all(np.isfinite(q)) or q.min() < 0:
            raise ValueError("model_fn must return finite probabilities")
        with np.errstate(divide="ignore"):
            kl = np.sum(np.where(p > 0, p * (np.log(np.where(p > 0, p, 1.0)) - np.log(q)), 0.0), axis=1)
        total += kl.mean()
    return float(total / X.shape[1])
