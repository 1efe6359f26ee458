"""Finite Markov chains given by a dense row-stochastic matrix: stationary law, spectral gap, Dirichlet form,
Poincare constant, hitting times.

For a chain $P$ with stationary law $\\pi$ the Dirichlet form is
$\\mathcal E(f,g)=\\tfrac12\\sum_{x,y}\\pi(x)P(x,y)(f(x)-f(y))(g(x)-g(y))$ (which equals $\\langle f,(I-P)g\\rangle_\\pi$ when
$P$ is reversible), the spectral gap is $1-\\lambda_2$ of $D_\\pi^{1/2}PD_\\pi^{-1/2}$ (symmetric when $P$ is
reversible; computed with ``eigh``) and the optimal Poincare constant is $1/\\mathrm{gap}$:
$\\mathcal E(f,f)\\ge\\mathrm{Var}_\\pi(f)/C$ for every $f$.
"""

from __future__ import annotations

from functools import cached_property

import numpy as np

from theorylab._fmt import plain

#: Row sums and detailed balance are compared to 1e-10 (float64 matrices built from <= a few thousand products
#: and sums of probabilities carry round-off ~1e-13; 1e-10 leaves room and still rejects real errors).
STOCHASTIC_TOL = 1e-10


def _as_matrix(P) -> np.ndarray:
    if isinstance(P, (str, bytes)) or P is None:
        raise TypeError(f"P must be a square array of transition probabilities, got {type(P).__name__}")
    try:
        A = np.asarray(P, dtype=float)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"P must be a numeric square array, got {type(P).__name__}") from exc
    if A.ndim != 2 or A.shape[0] != A.shape[1] or A.shape[0] == 0:
        raise ValueError(f"P must be a non-empty square matrix, got shape {A.shape}")
    if not np.all(np.isfinite(A)):
        raise ValueError("P has non-finite entries")
    if A.min() < -STOCHASTIC_TOL:
        raise ValueError(f"P has negative entries (min {A.min():.3g})")
    rows = A.sum(axis=1)
    bad = np.flatnonzero(np.abs(rows - 1) > STOCHASTIC_TOL * max(1, A.shape[0]))
    if bad.size:
        raise ValueError(f"rows of P must sum to 1; row {bad[0]} sums to {plain(rows[bad[0]])}")
    return np.clip(A, 0.0, None)


class FiniteChain:
    """A Markov chain on the states ``0..n-1`` with dense row-stochastic transition matrix ``P``.

    ``pi`` (optional) is a known stationary law; it is validated ($\\pi P=\\pi$). Methods that need an ergodic
    chain (``stationary`` without ``pi``, ``spectral_gap``, ``poincare_constant``) raise ``ValueError`` on
    reducible chains; ``spectral_gap`` also needs reversibility (it symmetrises with $D_\\pi^{1/2}$).
    """

    def __init__(self, P, pi=None) -> None:
        self.P = _as_matrix(P)
        self.n = self.P.shape[0]
        self._pi = None
        if pi is not None:
            p = np.asarray(pi, dtype=float)
            if p.shape != (self.n,):
                raise ValueError(f"pi must have shape ({self.n},), got {p.shape}")
            if not np.all(np.isfinite(p)) or p.min() < 0 or abs(p.sum() - 1) > STOCHASTIC_TOL * self.n:
                raise ValueError("pi must be a probability vector (nonnegative, summing to 1)")
            if np.abs(p @ self.P - p).max() > STOCHASTIC_TOL * max(1, self.n):
                raise ValueError("pi is not stationary for P (pi P != pi)")
            self._pi = p

    def __repr__(self) -> str:
        return f"FiniteChain(n={self.n})"

    # ------------------------------------------------------------------ structure
    @cached_property
    def _components(self) -> tuple[int, np.ndarray]:
        from scipy.sparse import csr_matrix
        from scipy.sparse.csgraph import connected_components

        return connected_components(csr_matrix(self.P > 0), directed=True, connection="strong")

    def is_irreducible(self) -> bool:
        """Every state reaches every other one (one strongly connected component)."""
        return self._components[0] == 1

    def _require_irreducible(self, what: str) -> None:
        if not self.is_irreducible():
            raise ValueError(
                f"{what} needs an irreducible chain; this one has {self._components[0]} communicating classes"
            )

    def stationary(self) -> np.ndarray:
        """The stationary law $\\pi$ ($\\pi P=\\pi$, $\\sum\\pi=1$); unique because the chain is irreducible."""
        if self._pi is not None:
            return self._pi
        self._require_irreducible("stationary()")
        A = self.P.T - np.eye(self.n)
        A[-1, :] = 1.0
        b = np.zeros(self.n)
        b[-1] = 1.0
        pi = np.linalg.solve(A, b)
        pi = np.clip(pi, 0.0, None)
        self._pi = pi / pi.sum()
        return self._pi

    def is_reversible(self, tol: float = STOCHASTIC_TOL) -> bool:
        """Detailed balance $\\pi(x)P(x,y)=\\pi(y)P(y,x)$ for all $x,y$ (to ``tol``)."""
        F = self.stationary()[:, None] * self.P
        return bool(np.abs(F - F.T).max() <= tol)

    # ------------------------------------------------------------------ spectra
    def _symmetrised(self) -> np.ndarray:
        self._require_irreducible("the spectral gap")
        if not self.is_reversible():
            raise ValueError("spectral_gap() needs a reversible chain (detailed balance fails)")
        s = np.sqrt(self.stationary())
        S = s[:, None] * self.P / s[None, :]
        return (S + S.T) / 2

    def eigenvalues(self) -> np.ndarray:
        """Eigenvalues of the (reversible) chain, in decreasing order; the first is 1."""
        return np.linalg.eigvalsh(self._symmetrised())[::-1]

    def spectral_gap(self) -> float:
        """$1-\\lambda_2$ of the reversible chain (eigenvalues from ``eigh`` of $D_\\pi^{1/2}PD_\\pi^{-1/2}$)."""
        if self.n == 1:
            return 1.0
        return float(1.0 - self.eigenvalues()[1])

    def absolute_spectral_gap(self) -> float:
        """$1-\\max(\\lambda_2,|\\lambda_n|)$ (governs discrete-time mixing)."""
        if self.n == 1:
            return 1.0
        ev = self.eigenvalues()
        return float(1.0 - max(ev[1], abs(ev[-1])))

    def poincare_constant(self) -> float:
        """Optimal Poincare constant $C=1/\\mathrm{gap}$: $\\mathcal E(f,f)\\ge\\mathrm{Var}_\\pi(f)/C$."""
        return 1.0 / self.spectral_gap()

    # ------------------------------------------------------------------ functionals
    def _vector(self, f, name: str) -> np.ndarray:
        v = np.asarray(f, dtype=float)
        if v.shape != (self.n,):
            raise ValueError(
                f"{name} must be a function on the {self.n} states (shape ({self.n},)), got {v.shape}"
            )
        return v

    def dirichlet_form(self, f, g=None) -> float:
        """$\\tfrac12\\sum_{x,y}\\pi(x)P(x,y)(f(x)-f(y))(g(x)-g(y))$ ($g=f$ if omitted)."""
        f = self._vector(f, "f")
        g = f if g is None else self._vector(g, "g")
        W = self.stationary()[:, None] * self.P
        df = f[:, None] - f[None, :]
        dg = g[:, None] - g[None, :]
        return float(0.5 * np.sum(W * df * dg))

    def variance(self, f) -> float:
        """$\\mathrm{Var}_\\pi(f)$."""
        f = self._vector(f, "f")
        pi = self.stationary()
        m = pi @ f
        return float(pi @ (f - m) ** 2)

    def hitting_times(self, target) -> np.ndarray:
        """Expected hitting times $\\mathbb E_x[\\tau_A]$, $\\tau_A=\\min\\{t\\ge0:X_t\\in A\\}$, for every start x.

        ``target`` is a boolean mask of length n or a collection of state indices. Starts that cannot reach the
        target get ``inf``. Solves $(I-Q)h=\\mathbf 1$ on the complement of A.
        """
        if isinstance(target, (str, bytes)):
            raise TypeError("target must be a boolean mask or a list of state indices")
        t = np.asarray(target)
        if t.dtype == bool:
            if t.shape != (self.n,):
                raise ValueError(f"a boolean target must have shape ({self.n},), got {t.shape}")
            A = t.copy()
        else:
            idx = np.asarray(t, dtype=int).ravel()
            if idx.size and (idx.min() < 0 or idx.max() >= self.n):
                raise ValueError(f"target indices must lie in 0..{self.n - 1}")
            A = np.zeros(self.n, dtype=bool)
            A[idx] = True
        if not A.any():
            raise ValueError("target set is empty")
        # states that can reach A: backward search in the transition graph
        reach = A.copy()
        G = self.P > 0
        while True:
            new = reach | G[:, reach].any(axis=1)
            if (new == reach).all():
                break
            reach = new
        h = np.full(self.n, np.inf)
        h[A] = 0.0
        rest = reach & ~A
        if rest.any():
            # I - Q with its diagonal written as the exit probability sum_{j != i} P(i, j): no cancellation in
            # 1 - P(i, i) when P(i, i) ~ 1 (hitting times up to ~1e15 stay accurate; cf. the GTH algorithm)
            idx = np.flatnonzero(rest)
            A = -self.P[np.ix_(idx, idx)]
            rows = self.P[idx].copy()
            rows[np.arange(idx.size), idx] = 0.0
            off = rows.sum(axis=1)
            A[np.arange(idx.size), np.arange(idx.size)] = off
            h[rest] = np.linalg.solve(A, np.ones(idx.size))
        return h

    def distribution_after(self, start, steps: int) -> np.ndarray:
        """Law of $X_t$ from ``start`` (a state index or a distribution) after ``steps`` steps."""
        if isinstance(start, (int, np.integer)):
            mu = np.zeros(self.n)
            mu[int(start)] = 1.0
        else:
            mu = self._vector(start, "start")
        for _ in range(int(steps)):
            mu = mu @ self.P
        return mu
