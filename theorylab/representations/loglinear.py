"""Log-linear language models on a finite context set (§2 of ``002_530e12373cc142da.txt``).

$p(x_i=j\\mid x_{-i})=e^{z_j}/Z$, $z_j=\\langle v_{-i}(x_{-i}),v_j\\rangle$, $Z=\\sum_je^{z_j}$. Contexts are the rows of
``contexts`` (N, d) with probabilities ``weights`` ($\\mathcal D_{pre}$); atoms are the rows of ``atoms`` (n, d).
Cross-entropy $=\\mathrm{KL}(p^*\\|p)+H(p^*)$ (the printed equation l.95 omits $\\sum_j$). Realisability tricks:
``shift_word(t, s)`` appends a coordinate ($v_{-i}\\to[v_{-i};1]$, $v_t\\to[v_t;-s]$) lowering logit $t$ by $s$
in every context; ``shift_contexts(tau)`` appends ($v_{-i}\\to[v_{-i};\\tau(x)]$, $v_j\\to[v_j;1]$), a per-context
shift of all logits that leaves $p$ unchanged.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from theorylab._logsumexp import logsumexp

__all__ = ["LogLinearLM"]


def _matrix(name: str, A) -> np.ndarray:
    A = np.asarray(A, dtype=float)
    if A.ndim != 2 or 0 in A.shape:
        raise ValueError(f"{name} must be a non-empty 2-D array, got shape {A.shape}")
    if not np.all(np.isfinite(A)):
        raise ValueError(f"{name} contains NaN or infinite entries")
    return A


@dataclass(frozen=True)
class LogLinearLM:
    contexts: np.ndarray
    atoms: np.ndarray
    weights: np.ndarray | None = field(default=None)

    def __post_init__(self) -> None:
        C = _matrix("contexts", self.contexts)
        A = _matrix("atoms", self.atoms)
        if C.shape[1] != A.shape[1]:
            raise ValueError(f"contexts have dimension {C.shape[1]} but atoms have {A.shape[1]}")
        if A.shape[0] < 2:
            raise ValueError("need at least 2 words")
        w = np.full(C.shape[0], 1.0 / C.shape[0]) if self.weights is None else np.asarray(self.weights, float)
        if w.shape != (C.shape[0],) or not np.all(np.isfinite(w)) or w.min() < 0 or abs(w.sum() - 1) > 1e-9:
            raise ValueError(f"weights must be a probability vector over the {C.shape[0]} contexts")
        object.__setattr__(self, "contexts", C)
        object.__setattr__(self, "atoms", A)
        object.__setattr__(self, "weights", w)

    @property
    def n_words(self) -> int:
        return self.atoms.shape[0]

    def logits(self) -> np.ndarray:
        return self.contexts @ self.atoms.T

    def logZ(self) -> np.ndarray:
        return logsumexp(self.logits(), axis=1)

    def log_probs(self) -> np.ndarray:
        z = self.logits()
        return z - logsumexp(z, axis=1, keepdims=True)

    def probs(self) -> np.ndarray:
        return np.exp(self.log_probs())

    def _check_same_support(self, other: LogLinearLM) -> None:
        if not isinstance(other, LogLinearLM):
            raise TypeError(f"expected a LogLinearLM, got {type(other).__name__}")
        if other.contexts.shape[0] != self.contexts.shape[0] or other.n_words != self.n_words:
            raise ValueError("models must share the context set and the vocabulary")

    def kl_per_context(self, other: LogLinearLM) -> np.ndarray:
        """$\\mathrm{KL}(p_{self}(\\cdot|x)\\,\\|\\,p_{other}(\\cdot|x))$ for each context (self is the teacher)."""
        self._check_same_support(other)
        lp, lq = self.log_probs(), other.log_probs()
        return np.sum(np.exp(lp) * (lp - lq), axis=1)

    def kl_to(self, other: LogLinearLM) -> float:
        """$\\epsilon_{KL}=\\mathbb E_{x\\sim\\mathcal D_{pre}}\\mathrm{KL}(p^*\\|p)$ with self = teacher."""
        return float(self.weights @ self.kl_per_context(other))

    def entropy(self) -> float:
        lp = self.log_probs()
        return float(self.weights @ -np.sum(np.exp(lp) * lp, axis=1))

    def cross_entropy(self, other: LogLinearLM) -> float:
        """$\\mathbb E_x\\sum_jp^*_j(-\\log p_j)$."""
        self._check_same_support(other)
        return float(self.weights @ -np.sum(self.probs() * other.log_probs(), axis=1))

    def shift_word(self, t: int, s: float) -> LogLinearLM:
        """Student of Thm 1: logit $t$ lowered by $s$ in every context (one extra coordinate)."""
        if not 0 <= int(t) < self.n_words:
            raise ValueError(f"word t must lie in [0, {self.n_words}), got {t}")
        if not np.isfinite(s):
            raise ValueError("s must be finite")
        extra = np.zeros(self.n_words)
        extra[int(t)] = -float(s)
        return LogLinearLM(
            np.hstack([self.contexts, np.ones((self.contexts.shape[0], 1))]),
            np.hstack([self.atoms, extra[:, None]]),
            self.weights,
        )

    def shift_contexts(self, tau) -> LogLinearLM:
        """All logits of context x shifted by $\\tau(x)$ (same probabilities; Thm 2)."""
        tau = np.asarray(tau, dtype=float)
        if tau.ndim == 0:
            tau = np.full(self.contexts.shape[0], float(tau))
        if tau.shape != (self.contexts.shape[0],) or not np.all(np.isfinite(tau)):
            raise ValueError(f"tau must be a scalar or a finite vector of length {self.contexts.shape[0]}")
        return LogLinearLM(
            np.hstack([self.contexts, tau[:, None]]),
            np.hstack([self.atoms, np.ones((self.n_words, 1))]),
            self.weights,
        )
