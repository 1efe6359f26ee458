"""The sparse contextual bigram (SCB) data model (seed ``004_4bd75c3751e9130c.txt``, Eq. (1), §2.1).

**Reconstructed**: the document lost its formulas in extraction; this is the model rebuilt from the prose.
Vocabulary [N], context length T. ``P`` is ``[N, N]`` with columns ``p_k = P e_k`` the next-token law after token k
(column convention), ``mu`` its stationary law (``P mu = mu``), ``Q`` is ``[T, N]`` with columns ``q_k`` the law of
the attended position when the last token is k. A sample: ``x_1..x_{T+1}`` i.i.d. ``mu``, ``k = x_{T+1}``,
``s ~ q_k``, label ``x_o ~ p_{x_s}``; so ``Pr(x_o = n | x_{1:T+1}) = (P X q_k)_n`` with ``X = [e_{x_1}..e_{x_T}]``.
Tokens are 0-based here. Inner product ``<M, M'>_mu = sum_k mu_k <m_k, m'_k> = tr(D M^T M')``, ``D = diag(mu)``.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from itertools import product

import numpy as np

from theorylab._fmt import plain

# Probability inputs are validated to this absolute tolerance: sums of at most a few hundred float64 terms.
PROB_TOL = 1e-10
MAX_ENUMERATION = 200_000  # N^(T+1) contexts enumerated exactly at most


def mu_inner(M1: np.ndarray, M2: np.ndarray, mu: np.ndarray) -> float:
    """``<M1, M2>_mu = sum_k mu_k <M1[:, k], M2[:, k]>``."""
    return float(np.einsum("k,ik,ik->", mu, M1, M2))


@dataclass(frozen=True)
class SCBTask:
    """An SCB instance ``(P, mu, Q)``; validated on construction."""

    P: np.ndarray
    mu: np.ndarray
    Q: np.ndarray

    def __post_init__(self) -> None:
        P, mu, Q = (np.asarray(v, dtype=np.float64) for v in (self.P, self.mu, self.Q))
        if P.ndim != 2 or P.shape[0] != P.shape[1] or P.shape[0] < 2:
            raise ValueError(f"P must be a square [N, N] matrix with N >= 2, got shape {P.shape}")
        N = P.shape[0]
        if mu.shape != (N,):
            raise ValueError(f"mu must have shape ({N},), got {mu.shape}")
        if Q.ndim != 2 or Q.shape[1] != N or Q.shape[0] < 1:
            raise ValueError(f"Q must have shape [T, {N}] with T >= 1, got {Q.shape}")
        for name, M in (("P", P), ("Q", Q)):
            if (M < -PROB_TOL).any() or np.abs(M.sum(axis=0) - 1).max() > PROB_TOL:
                raise ValueError(
                    f"the columns of {name} must be probability vectors (nonnegative, summing to 1)"
                )
        if (mu < -PROB_TOL).any() or abs(mu.sum() - 1) > PROB_TOL:
            raise ValueError("mu must be a probability vector")
        if (mu <= 0).any():
            raise ValueError("mu must be positive (the preconditioner divides by mu)")
        if np.abs(P @ mu - mu).max() > 1e-9:
            raise ValueError("mu must be stationary for P (P mu = mu)")
        for name, v in (("P", P), ("mu", mu), ("Q", Q)):
            v.setflags(write=False)
            object.__setattr__(self, name, v)

    @property
    def N(self) -> int:
        return self.P.shape[0]

    @property
    def T(self) -> int:
        return self.Q.shape[0]

    @property
    def D(self) -> np.ndarray:
        return np.diag(self.mu)

    @property
    def Pc(self) -> np.ndarray:
        """``P - mu 1^T``."""
        return self.P - self.mu[:, None]

    @property
    def Qc(self) -> np.ndarray:
        """``Q - (1/T) 1 1^T``."""
        return self.Q - 1.0 / self.T

    @cached_property
    def K_P(self) -> float:
        return mu_inner(self.Pc, self.Pc, self.mu)

    @cached_property
    def K_Q(self) -> float:
        return mu_inner(self.Qc, self.Qc, self.mu)

    def sample(self, rng: np.random.Generator, B: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``B`` samples: contexts ``xs [B, T]``, last tokens ``k [B]``, labels ``xo [B]`` (all int64)."""
        if not isinstance(B, int | np.integer) or B < 1:
            raise ValueError(f"batch size must be a positive int, got {plain(B)}")
        xs = rng.choice(self.N, size=(B, self.T), p=self.mu)
        k = rng.choice(self.N, size=B, p=self.mu)
        cq = np.cumsum(self.Q[:, k], axis=0)  # [T, B]
        s = np.minimum((rng.random(B)[None] > cq).sum(axis=0), self.T - 1)
        src = xs[np.arange(B), s]
        cp = np.cumsum(self.P[:, src], axis=0)  # [N, B]
        xo = np.minimum((rng.random(B)[None] > cp).sum(axis=0), self.N - 1)
        return xs, k, xo

    def label_law(self, xs: np.ndarray, k: np.ndarray) -> np.ndarray:
        """``Pr(x_o = . | x_{1:T}, k) = P X q_k`` for each context, ``[B, N]``."""
        return np.einsum("tb,nbt->bn", self.Q[:, k], self.P[:, xs])

    def contexts(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """All ``N^(T+1)`` contexts ``(xs, k)`` with their probabilities (exact enumeration)."""
        count = self.N ** (self.T + 1)
        if count > MAX_ENUMERATION:
            raise ValueError(
                f"N^(T+1) = {count} contexts is too many for exact enumeration (limit {MAX_ENUMERATION})"
            )
        grid = np.array(list(product(range(self.N), repeat=self.T + 1)), dtype=np.int64)
        w = np.prod(self.mu[grid], axis=1)
        return grid[:, : self.T], grid[:, self.T], w


def random_scb_task(
    rng: np.random.Generator,
    N: int,
    T: int,
    Qs: int,
    concentration: float = 1.0,
    doubly_stochastic: bool = False,
) -> SCBTask:
    """A random instance: Dirichlet(concentration) columns of P (or a mixture of N permutation matrices when
    ``doubly_stochastic``, so mu is uniform), mu its stationary law, q_k Dirichlet(5) on a random Qs-subset."""
    if N < 2 or T < 1 or not 1 <= Qs <= T:
        raise ValueError(f"need N >= 2, T >= 1 and 1 <= Qs <= T, got N={N}, T={T}, Qs={Qs}")
    if doubly_stochastic:
        weights = rng.dirichlet(np.ones(N))
        P = sum(w * np.eye(N)[rng.permutation(N)] for w in weights)
        mu = np.full(N, 1.0 / N)
    else:
        P = rng.dirichlet(np.full(N, concentration), size=N).T
        vals, vecs = np.linalg.eig(P)
        v = np.real(vecs[:, np.argmin(np.abs(vals - 1))])
        mu = v / v.sum()
        mu = np.clip(mu, 1e-300, None)
        mu /= mu.sum()
    Q = np.zeros((T, N))
    for j in range(N):
        support = rng.choice(T, size=Qs, replace=False)
        Q[support, j] = rng.dirichlet(np.full(Qs, 5.0))
    return SCBTask(P, mu, Q)


def check_assumptions(task: SCBTask) -> dict[str, float]:
    """The measured quantities of Assumption 2.1 (its constants are lost): sparsity Q_s, the smallest C with
    ``Q_tk >= 1/(C Q_s)`` on the support and ``mu_k in [1/(C N), C/N]``, and the signal constants K_P, K_Q."""
    Qs = int((task.Q > 0).sum(axis=0).max())
    nz = task.Q[task.Q > 0]
    C = max(1.0 / (Qs * nz.min()), 1.0 / (task.N * task.mu.min()), task.N * task.mu.max())
    return {"Q_s": Qs, "C": float(C), "K_P": task.K_P, "K_Q": task.K_Q}
