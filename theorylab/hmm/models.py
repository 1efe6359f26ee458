"""Discrete HMM and Gaussian HMM (G-HMM) parameters, validated against the thesis's Assumptions 5-9.

Conventions (column-stochastic): $T_{ij}=P(h_{t+1}=i\\mid h_t=j)$, $O_{ij}=P(x_t=i\\mid h_t=j)$ ($d\\times
k$), G-HMM means $M=[\\mu_1,\\dots,\\mu_k]$ ($d\\times k$) with $x_t\\mid h_t=i\\sim\\mathcal N(\\mu_i, I_d)$.

* Assumption 5: $T$ doubly stochastic, $h_1$ stationary (hence uniform).
* Assumption 6: every row of $O$ is non-zero.
* Assumption 7: $\\mathrm{rank}\\,T=\\mathrm{rank}\\,O=k\\le d$.
* Assumption 8: $\\mathrm{rank}\\,T=\\mathrm{rank}\\,M=k\\le d$.
* Assumption 9: $\\|\\mu_i\\|_2=1$ (footnote 9: any common known norm $c>0$; pass ``norm=c``).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

__all__ = ["AssumptionError", "HMM", "GHMM", "SUM_TOL"]

SUM_TOL = 1e-9  # sums / norms are checked to this absolute tolerance (parameters given to ~double precision)
NEG_TOL = 1e-12  # entries above -NEG_TOL count as non-negative (round-off of exactly constructed parameters)


class AssumptionError(ValueError):
    """A parameter violates one of the thesis's assumptions; ``.assumption`` names it (e.g. ``"Assumption
    5"``)."""

    def __init__(self, assumption: str, message: str):
        super().__init__(f"{assumption}: {message}")
        self.assumption = assumption


def _real_matrix(name: str, X) -> np.ndarray:
    if isinstance(X, str | bytes) or X is None:
        raise TypeError(f"{name} must be a real matrix, got {type(X).__name__}")
    arr = np.asarray(X)
    if (
        arr.dtype == object
        or np.iscomplexobj(arr)
        or not (np.issubdtype(arr.dtype, np.number) or arr.dtype == bool)
    ):
        raise TypeError(f"{name} must be a real numeric matrix, got dtype {arr.dtype}")
    arr = np.array(arr, dtype=float)
    if arr.ndim != 2:
        raise ValueError(f"{name} must be 2-d, got shape {arr.shape}")
    if arr.size == 0:
        raise ValueError(f"{name} is empty")
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{name} contains NaN or infinite entries")
    arr.setflags(write=False)
    return arr


def _check_transition(T: np.ndarray, tol: float) -> None:
    k = T.shape[0]
    if T.shape != (k, k):
        raise ValueError(f"T must be square (k x k), got shape {T.shape}")
    if T.min() < -NEG_TOL:
        raise AssumptionError(
            "Assumption 5", f"T has negative entries (min {T.min():.3g}); it must be stochastic"
        )
    if np.max(np.abs(T.sum(axis=0) - 1)) > tol:
        hint = (
            "; T looks row-stochastic (hmmlearn's transmat_[i, j] = P(h_t+1 = j | h_t = i)): theorylab's "
            "T[i, j] = P(h_t+1 = i | h_t = j) is column-stochastic, pass T.T or use theorylab.hmm.from_hmmlearn"
            if np.max(np.abs(T.sum(axis=1) - 1)) <= tol
            else ""
        )
        raise AssumptionError(
            "Assumption 5",
            f"columns of T must sum to 1 (off by up to {np.max(np.abs(T.sum(axis=0) - 1)):.3g}){hint}",
        )
    row_gap = np.max(np.abs(T.sum(axis=1) - 1))
    if row_gap > tol:
        raise AssumptionError(
            "Assumption 5",
            f"T must be doubly stochastic: row sums differ from 1 by up to {row_gap:.3g}",
        )


def _check_rank(assumption: str, name: str, X: np.ndarray, k: int) -> None:
    r = np.linalg.matrix_rank(X)
    if r < k:
        raise AssumptionError(assumption, f"rank {name} = {r} < k = {k} (full column rank is required)")


@dataclass(frozen=True, eq=False)
class HMM:
    """Discrete HMM with emission ``O`` (d x k, column-stochastic) and doubly stochastic transition ``T``.

    Convention (column-stochastic, the thesis's): ``O[x, h] = P(x_t = x | h_t = h)`` and
    ``T[i, j] = P(h_{t+1} = i | h_t = j)``; the initial state is uniform (Assumption 5). hmmlearn's row-stochastic
    ``emissionprob_`` / ``transmat_`` are the transposes: convert with :func:`theorylab.hmm.from_hmmlearn` /
    :func:`theorylab.hmm.to_hmmlearn`. A row-stochastic ``O`` or ``T`` that is not column-stochastic is rejected
    with a hint; a doubly stochastic ``T`` cannot be told from its transpose (it would be read as the reversed
    chain), so say which one you mean.

    ``validate=False`` skips the assumption checks (for signed / noisy parameters, e.g. read-outs of trained
    predictors); shapes and finiteness are always checked. ``tol``: absolute tolerance of the sum checks.
    """

    O: np.ndarray
    T: np.ndarray
    validate: bool = field(default=True, repr=False)
    tol: float = field(default=SUM_TOL, repr=False)

    def __post_init__(self) -> None:
        O = _real_matrix("O", self.O)
        T = _real_matrix("T", self.T)
        object.__setattr__(self, "O", O)
        object.__setattr__(self, "T", T)
        d, k = O.shape
        if T.shape != (k, k):
            hint = (
                "; O looks like hmmlearn's emissionprob_ (states x symbols): theorylab's O is symbols x states, "
                "pass O.T or use theorylab.hmm.from_hmmlearn"
                if T.shape == (d, d)
                else ""
            )
            raise ValueError(f"T must be k x k with k = {k} (columns of O), got shape {T.shape}{hint}")
        if not self.validate:
            return
        _check_transition(T, self.tol)
        if O.min() < -NEG_TOL:
            raise AssumptionError(
                "HMM definition",
                f"O has negative entries (min {O.min():.3g}); its columns must be distributions",
            )
        if np.max(np.abs(O.sum(axis=0) - 1)) > self.tol:
            hint = (
                "; O looks row-stochastic (hmmlearn's emissionprob_ convention): theorylab's O[x, h] = "
                "P(x | h), pass O.T or use theorylab.hmm.from_hmmlearn"
                if np.max(np.abs(O.sum(axis=1) - 1)) <= self.tol
                else ""
            )
            raise AssumptionError(
                "HMM definition", f"O must be column-stochastic (column sums {O.sum(axis=0)}){hint}"
            )
        if np.any(O.sum(axis=1) <= 0):
            rows = np.flatnonzero(O.sum(axis=1) <= 0).tolist()
            raise AssumptionError("Assumption 6", f"rows {rows} of O are zero (token never emitted)")
        if k > d:
            raise AssumptionError("Assumption 7", f"k = {k} hidden states exceed d = {d} observations")
        _check_rank("Assumption 7", "O", O, k)
        _check_rank("Assumption 7", "T", T, k)

    @property
    def d(self) -> int:
        return self.O.shape[0]

    @property
    def k(self) -> int:
        return self.O.shape[1]

    @property
    def emission(self) -> np.ndarray:
        """$E[x_t\\mid h_t]$ as columns (the one-hot mean of token $x_t$ given each hidden state)."""
        return self.O

    def posterior(self) -> np.ndarray:
        """$\\Phi=D^{-1}O$ ($d\\times k$): row $j$ is $\\phi(e_j)=E[h_t\\mid x_t=e_j]$ (uniform prior, Assumption
        5)."""
        rows = self.O.sum(axis=1, keepdims=True)
        if np.any(rows == 0):
            raise AssumptionError("Assumption 6", "a zero row of O makes the posterior undefined")
        return self.O / rows

    def relabel(self, perm) -> HMM:
        """The same model with hidden state ``perm[i]`` renamed ``i``: $(O\\Pi, \\Pi^\\top T\\Pi)$."""
        p = _perm(perm, self.k)
        return HMM(self.O[:, p], self.T[np.ix_(p, p)], validate=self.validate, tol=self.tol)

    def __eq__(self, other) -> bool:
        return isinstance(other, HMM) and np.array_equal(self.O, other.O) and np.array_equal(self.T, other.T)

    __hash__ = None  # type: ignore[assignment]


@dataclass(frozen=True, eq=False)
class GHMM:
    """Gaussian HMM: means ``M`` (d x k, unit-norm columns by Assumption 9) and doubly stochastic ``T``.

    Convention (column-stochastic): ``M[:, h]`` is the mean of state ``h`` and ``T[i, j] = P(h_{t+1} = i | h_t =
    j)``; hmmlearn's ``means_`` (k x d) and ``transmat_`` are the transposes (see :func:`theorylab.hmm.from_hmmlearn`).

    ``norm`` is the common column norm (Assumption 9 / footnote 9); ``norm=None`` drops Assumption 9 (Theorem
    9 needs only Assumptions 5 and 8). ``validate=False`` skips the assumption checks.
    """

    M: np.ndarray
    T: np.ndarray
    norm: float | None = 1.0
    validate: bool = field(default=True, repr=False)
    tol: float = field(default=SUM_TOL, repr=False)

    def __post_init__(self) -> None:
        M = _real_matrix("M", self.M)
        T = _real_matrix("T", self.T)
        object.__setattr__(self, "M", M)
        object.__setattr__(self, "T", T)
        d, k = M.shape
        if T.shape != (k, k):
            raise ValueError(f"T must be k x k with k = {k} (columns of M), got shape {T.shape}")
        if not self.validate:
            return
        _check_transition(T, self.tol)
        if k > d:
            raise AssumptionError("Assumption 8", f"k = {k} hidden states exceed the dimension d = {d}")
        _check_rank("Assumption 8", "M", M, k)
        _check_rank("Assumption 8", "T", T, k)
        if self.norm is not None:
            if not self.norm > 0:
                raise ValueError(f"norm must be positive, got {self.norm}")
            norms = np.linalg.norm(M, axis=0)
            if np.max(np.abs(norms - self.norm)) > self.tol * max(1.0, self.norm):
                raise AssumptionError("Assumption 9", f"means must have norm {self.norm}, got norms {norms}")

    @property
    def d(self) -> int:
        return self.M.shape[0]

    @property
    def k(self) -> int:
        return self.M.shape[1]

    @property
    def emission(self) -> np.ndarray:
        """$E[x_t\\mid h_t]$ as columns: the means."""
        return self.M

    def posterior(self, x) -> np.ndarray:
        """$\\phi(x)_i=\\mathrm{softmax}_i(\\mu_i^\\top x-\\|\\mu_i\\|^2/2)$ for ``x`` of shape (..., d)
        (log-sum-exp)."""
        x = np.asarray(x, dtype=float)
        if x.shape[-1] != self.d:
            raise ValueError(f"points must have last dimension d = {self.d}, got shape {x.shape}")
        if not np.all(np.isfinite(x)):
            raise ValueError("points contain NaN or infinite entries")
        logits = x @ self.M - 0.5 * np.sum(self.M**2, axis=0)
        logits -= logits.max(axis=-1, keepdims=True)
        p = np.exp(logits)
        return p / p.sum(axis=-1, keepdims=True)

    def relabel(self, perm) -> GHMM:
        p = _perm(perm, self.k)
        return GHMM(self.M[:, p], self.T[np.ix_(p, p)], norm=self.norm, validate=self.validate, tol=self.tol)

    def __eq__(self, other) -> bool:
        return isinstance(other, GHMM) and np.array_equal(self.M, other.M) and np.array_equal(self.T, other.T)

    __hash__ = None  # type: ignore[assignment]


def _perm(perm, k: int) -> np.ndarray:
    p = np.asarray(perm)
    if p.shape != (k,) or not np.issubdtype(p.dtype, np.integer) or sorted(p.tolist()) != list(range(k)):
        raise ValueError(f"perm must be a permutation of range({k}), got {perm!r}")
    return p
