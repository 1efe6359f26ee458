"""Ising models on $\\{-1,+1\\}^N$ by exact enumeration, in both pair conventions of ``003_69b23422e33c905a.txt``.

``unordered`` (Def 4.1.12): $p(x)\\propto\\exp(\\sum_ih_ix_i+\\sum_{i<j}J_{ij}x_ix_j)$;
``ordered`` (Eq 4.6, literally): $p(x)\\propto\\exp(\\sum_ih_ix_i+\\sum_{i\\ne j}J_{ij}x_ix_j)$, i.e. every edge weighs
$2J_{ij}$. Either way $p\\propto\\exp(h^\\top x+\\tfrac12x^\\top J_{\\rm eff}x)$ with $J_{\\rm eff}=\\gamma J$, $\\gamma=1$
(unordered) or 2 (ordered); the natural parameters of the full pairwise family are $(h_i;\\gamma J_{ij},i<j)$.
States are listed in product order: state s has $x_i=+1$ iff bit $N-1-i$ of s is set.
"""

from __future__ import annotations

from functools import cached_property
from itertools import combinations

import numpy as np

from theorylab.ising.expfam import FiniteExpFamily

CONVENTIONS = ("unordered", "ordered")
#: Largest N enumerated exactly (2^22 states, ~100 MB for the state table).
MAX_EXACT_N = 22
#: J must be symmetric to this absolute tolerance (entries are user-given O(1) numbers).
SYMMETRY_TOL = 1e-12


def gamma(convention: str) -> int:
    """Weight of a pair in the energy: 1 (unordered) or 2 (ordered)."""
    if convention not in CONVENTIONS:
        raise ValueError(f"convention must be one of {CONVENTIONS}, got {convention!r}")
    return 1 if convention == "unordered" else 2


def spin_states(N: int) -> np.ndarray:
    """All $2^N$ spin configurations, shape (2^N, N), int8, product order (-1 before +1, x_0 slowest)."""
    if not isinstance(N, (int, np.integer)) or isinstance(N, bool):
        raise TypeError(f"N must be an integer, got {type(N).__name__}")
    if not 1 <= N <= MAX_EXACT_N:
        raise ValueError(f"exact enumeration needs 1 <= N <= {MAX_EXACT_N}, got N = {N}")
    s = np.arange(2**N, dtype=np.int64)
    bits = (s[:, None] >> np.arange(N - 1, -1, -1)) & 1
    return (2 * bits - 1).astype(np.int8)


def state_index(x) -> np.ndarray:
    """Product-order index of ±1 configurations (last axis = spins)."""
    x = np.asarray(x)
    N = x.shape[-1]
    return (((x + 1) // 2).astype(np.int64) * (1 << np.arange(N - 1, -1, -1))).sum(axis=-1)


class IsingModel:
    """$p(x)\\propto\\exp(h^\\top x+\\gamma\\sum_{i<j}J_{ij}x_ix_j)$; ``J`` symmetric with zero diagonal."""

    def __init__(self, h, J, convention: str = "unordered") -> None:
        self.convention = convention
        self.gamma = gamma(convention)
        h = np.asarray(h, dtype=float)
        J = np.asarray(J, dtype=float)
        if h.ndim != 1 or h.size == 0:
            raise ValueError(f"h must be a nonempty vector, got shape {h.shape}")
        N = h.size
        if J.shape != (N, N):
            raise ValueError(f"J must have shape ({N}, {N}), got {J.shape}")
        if not (np.all(np.isfinite(h)) and np.all(np.isfinite(J))):
            raise ValueError("h and J must be finite")
        if np.abs(J - J.T).max() > SYMMETRY_TOL:
            raise ValueError("J must be symmetric (J[i, j] == J[j, i])")
        if np.abs(np.diag(J)).max() > 0:
            raise ValueError("J must have a zero diagonal (x_i^2 = 1 is a constant)")
        if N > MAX_EXACT_N:
            raise ValueError(f"exact enumeration needs N <= {MAX_EXACT_N}, got N = {N}")
        self.h, self.J, self.N = h, (J + J.T) / 2, N

    def __repr__(self) -> str:
        return f"IsingModel(N={self.N}, convention={self.convention!r})"

    @property
    def J_eff(self) -> np.ndarray:
        """Coupling matrix with $p\\propto\\exp(h^\\top x+\\tfrac12x^\\top J_{\\rm eff}x)$."""
        return self.gamma * self.J

    @cached_property
    def _states(self) -> np.ndarray:
        return spin_states(self.N)

    def states(self) -> np.ndarray:
        """All $2^N$ configurations (product order)."""
        return self._states

    def energies(self) -> np.ndarray:
        """$h^\\top x+\\tfrac12x^\\top J_{\\rm eff}x$ for every state (computed in chunks of 2^16 states)."""
        X = self._states
        out = np.empty(X.shape[0])
        for a in range(0, X.shape[0], 1 << 16):
            Xa = X[a : a + (1 << 16)].astype(float)
            out[a : a + Xa.shape[0]] = Xa @ self.h + 0.5 * np.einsum("si,si->s", Xa @ self.J_eff, Xa)
        return out

    @cached_property
    def _log_probs(self) -> np.ndarray:
        e = self.energies()
        m = e.max()
        return e - (m + np.log(np.exp(e - m).sum()))

    def log_probs(self) -> np.ndarray:
        return self._log_probs

    def probs(self) -> np.ndarray:
        return np.exp(self._log_probs)

    def local_fields(self, x=None) -> np.ndarray:
        """$f_i(x)=h_i+(J_{\\rm eff}x)_i$: $p(x_i=+1\\mid x_{-i})=\\sigma(2f_i(x))$ (rows: states or the given x)."""
        X = self._states if x is None else np.asarray(x)
        return self.h + X @ self.J_eff

    def conditional(self, K, x) -> tuple[np.ndarray, np.ndarray]:
        """Law of $x_K$ given $x_{-K}$ (from the full configuration ``x``; its K entries are ignored):
        returns (configurations of K, shape (2^|K|, |K|); probabilities)."""
        K = self._mask(K)
        x = np.asarray(x)
        if x.shape != (self.N,) or not np.isin(x, (-1, 1)).all():
            raise ValueError(f"x must be a ±1 vector of length {self.N}")
        sub = spin_states(len(K))
        Y = np.repeat(x[None, :].astype(float), sub.shape[0], axis=0)
        Y[:, list(K)] = sub
        e = Y @ self.h + 0.5 * np.einsum("si,si->s", Y @ self.J_eff, Y)
        p = np.exp(e - e.max())
        return sub, p / p.sum()

    def _mask(self, K) -> tuple[int, ...]:
        K = tuple(sorted(int(i) for i in K))
        if not K or K[0] < 0 or K[-1] >= self.N or len(set(K)) != len(K):
            raise ValueError(f"K must be a nonempty set of coordinates in 0..{self.N - 1}, got {K}")
        return K

    # ----------------------------------------------------------------- exponential family view
    def pairs(self) -> list[tuple[int, int]]:
        return list(combinations(range(self.N), 2))

    def sufficient_statistics(self, edges=None) -> np.ndarray:
        """$T(x)=((x_i)_i,(x_ix_j)_{\\{i,j\\}\\in E})$ for every state; E = all pairs unless ``edges`` is given."""
        E = self.pairs() if edges is None else [tuple(sorted(e)) for e in edges]
        X = self._states.astype(float)
        pair = np.stack([X[:, i] * X[:, j] for i, j in E], axis=1) if E else np.zeros((X.shape[0], 0))
        return np.hstack([X, pair])

    def natural_parameters(self, edges=None) -> np.ndarray:
        """$\\theta=(h;\\gamma J_{ij})$ in the coordinates of :meth:`sufficient_statistics`."""
        E = self.pairs() if edges is None else [tuple(sorted(e)) for e in edges]
        if edges is not None:
            rest = np.abs(self.J).copy()
            for i, j in E:
                rest[i, j] = rest[j, i] = 0
            if rest.max() > 0:
                raise ValueError("J has couplings outside the given edges: the model is not in that family")
        return np.concatenate([self.h, [self.gamma * self.J[i, j] for i, j in E]])

    def exp_family(self, edges=None) -> FiniteExpFamily:
        """The pairwise exponential family (all pairs, or ``edges``) containing this model."""
        X = (self._states + 1) // 2
        return FiniteExpFamily(X, self.sufficient_statistics(edges), q=2)

    @classmethod
    def from_natural(cls, theta, N: int, edges=None, convention: str = "unordered") -> IsingModel:
        """Inverse of :meth:`natural_parameters`."""
        theta = np.asarray(theta, dtype=float)
        E = list(combinations(range(N), 2)) if edges is None else [tuple(sorted(e)) for e in edges]
        if theta.shape != (N + len(E),):
            raise ValueError(f"theta must have {N + len(E)} entries, got {theta.shape}")
        J = np.zeros((N, N))
        for (i, j), t in zip(E, theta[N:], strict=True):
            J[i, j] = J[j, i] = t / gamma(convention)
        return cls(theta[:N], J, convention)

    def marginals(self) -> np.ndarray:
        """$P(x_i=+1)$ for every i."""
        p = self.probs()
        return p @ ((self._states + 1) // 2)

    def sample(self, n: int, rng: np.random.Generator) -> np.ndarray:
        """n i.i.d. exact samples (shape (n, N))."""
        return self._states[rng.choice(self._states.shape[0], size=n, p=self.probs())]


def clique_model(N: int, C, h, J: float, convention: str = "ordered") -> IsingModel:
    """Eq (4.6): a clique ``C`` with coupling J on every pair plus N-|C| isolated vertices, fields ``h``
    (a vector of length N or a scalar put on the clique only)."""
    C = sorted(int(i) for i in C)
    if len(C) < 2 or len(set(C)) != len(C) or C[0] < 0 or C[-1] >= N:
        raise ValueError(f"the clique must be >= 2 distinct vertices in 0..{N - 1}, got {C}")
    hv = np.zeros(N)
    if np.ndim(h) == 0:
        hv[C] = float(h)
    else:
        hv = np.asarray(h, dtype=float)
        if hv.shape != (N,):
            raise ValueError(f"h must be a scalar or a vector of length {N}")
    Jm = np.zeros((N, N))
    for i, j in combinations(C, 2):
        Jm[i, j] = Jm[j, i] = J
    return IsingModel(hv, Jm, convention)
