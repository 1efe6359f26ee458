"""Kruskal rank of a matrix and Kruskal's uniqueness condition (Proposition 1).

The Kruskal rank $k_A$ is the largest $r$ such that every $r$ columns of $A$ are linearly independent;
equivalently $k_A = \\mathrm{spark}(A) - 1$ where the spark is the size of the smallest linearly dependent set
of columns. Computing it is NP-hard in general; :func:`kruskal_rank` is exact and uses, in order:

1. cheap certificates: a zero column ($k_A=0$), full column rank ($k_A=m$), two parallel columns ($k_A=1$),
   nullity one (the spark is the support size of the unique null vector);
2. otherwise the cheaper of two exact searches, chosen by counting subsets before running:
   * ``"primal"``: column subsets of size $3, 4, \\dots, r$ ($r=\\mathrm{rank}A$) with early exit at the first
     dependent one (spark $\\le r+1$ always, so sizes above $r$ are never needed);
   * ``"dual"``: with $N$ ($m\\times q$) a basis of the null space, $q=m-r$, every minimal dependent set is
     the support of a null vector $Ny$ whose zero set is as large as possible, and a maximal zero set spans a
     hyperplane of $\\mathbb R^q$ spanned by $q-1$ independent rows of $N$. Enumerating those
     $\\binom{m}{q-1}$ hyperplanes gives the spark exactly. This is fast when the nullity is small.

For integer, ``Fraction`` or sympy-rational input with ``exact=True`` (the default for such input), every rank
and null space is computed in exact rational arithmetic.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from fractions import Fraction
from math import comb

import numpy as np

__all__ = ["KruskalRank", "kruskal_rank", "kruskal_condition", "KruskalCondition"]

_BATCH = 4096


@dataclass(frozen=True)
class KruskalRank:
    """Result of :func:`kruskal_rank`: the rank, the method that certified it and the work done."""

    rank: int
    method: str  # "zero-column" | "full-column-rank" | "parallel-columns" | "nullity-one" | "primal" | "dual"
    matrix_rank: int
    subsets_tested: int
    witness: tuple[int, ...] | None  # a smallest dependent column set (None when all columns are independent)
    exact: bool

    def __int__(self) -> int:
        return self.rank


def _as_matrix(A, exact: bool | None) -> tuple[np.ndarray, bool]:
    arr = np.asarray(A)
    if arr.ndim != 2:
        raise ValueError(f"kruskal_rank expects a 2-d matrix, got shape {arr.shape}")
    if arr.shape[1] == 0:
        raise ValueError("kruskal_rank expects at least one column")
    if arr.dtype == object:
        try:
            values = [[Fraction(str(v)) if not isinstance(v, Fraction) else v for v in row] for row in arr]
        except (TypeError, ValueError) as err:
            raise TypeError(f"kruskal_rank: entries must be rational numbers ({err})") from err
        if exact is False:
            return np.array([[float(v) for v in row] for row in values], dtype=float), False
        return np.array(values, dtype=object), True
    if np.iscomplexobj(arr):
        raise TypeError("kruskal_rank supports real matrices only")
    if not (np.issubdtype(arr.dtype, np.number) or arr.dtype == bool):
        raise TypeError(f"kruskal_rank: unsupported dtype {arr.dtype}")
    if np.issubdtype(arr.dtype, np.integer) or arr.dtype == bool:
        if exact is None or exact:
            return np.array([[Fraction(int(v)) for v in row] for row in arr], dtype=object), True
        return arr.astype(float), False
    arr = arr.astype(float)
    if not np.all(np.isfinite(arr)):
        raise ValueError("kruskal_rank: matrix contains NaN or infinite entries")
    if exact:
        return np.array([[Fraction(float(v)) for v in row] for row in arr], dtype=object), True
    return arr, False


# ---------------------------------------------------------------- exact rational linear algebra


def _rref(rows: list[list[Fraction]]) -> tuple[list[list[Fraction]], list[int]]:
    """Reduced row echelon form and pivot columns (fraction arithmetic)."""
    R = [list(r) for r in rows]
    pivots: list[int] = []
    n_rows = len(R)
    n_cols = len(R[0]) if R else 0
    row = 0
    for col in range(n_cols):
        piv = next((i for i in range(row, n_rows) if R[i][col] != 0), None)
        if piv is None:
            continue
        R[row], R[piv] = R[piv], R[row]
        p = R[row][col]
        R[row] = [v / p for v in R[row]]
        for i in range(n_rows):
            if i != row and R[i][col] != 0:
                f = R[i][col]
                R[i] = [a - f * b for a, b in zip(R[i], R[row], strict=True)]
        pivots.append(col)
        row += 1
        if row == n_rows:
            break
    return R, pivots


def _exact_rank(M: np.ndarray) -> int:
    return len(_rref([list(r) for r in M])[1]) if M.size else 0


def _exact_null_space(M: np.ndarray) -> np.ndarray:
    """Columns form a basis of the null space of M (object array of Fractions)."""
    n = M.shape[1]
    R, pivots = _rref([list(r) for r in M])
    free = [j for j in range(n) if j not in pivots]
    basis = []
    for f in free:
        v = [Fraction(0)] * n
        v[f] = Fraction(1)
        for i, p in enumerate(pivots):
            v[p] = -R[i][f]
        basis.append(v)
    return np.array(basis, dtype=object).T.reshape(n, len(free))


# ---------------------------------------------------------------- numeric helpers


def _default_tol(A: np.ndarray) -> float:
    # the numpy.linalg.matrix_rank convention: singular values below max(shape) * eps * sigma_max are zero
    return max(A.shape) * np.finfo(float).eps * max(np.linalg.norm(A, 2), np.finfo(float).tiny)


def _dependent_batch(A: np.ndarray, subsets: np.ndarray, tol: float) -> np.ndarray:
    """For each row of ``subsets`` (column index sets), whether those columns are dependent (sigma_min <=
    tol)."""
    sub = A[:, subsets].transpose(1, 0, 2)  # (batch, n, s)
    s = np.linalg.svd(sub, compute_uv=False)
    return s[:, -1] <= tol


def _primal(A: np.ndarray, r: int, tol: float | None, exact: bool) -> tuple[int, int, tuple[int, ...] | None]:
    """Smallest dependent subset among sizes 3..r (sizes 1, 2 were handled before); returns (spark, tested,
    witness)."""
    m = A.shape[1]
    tested = 0
    for s in range(3, r + 1):
        combos = itertools.combinations(range(m), s)
        while True:
            chunk = list(itertools.islice(combos, _BATCH))
            if not chunk:
                break
            tested += len(chunk)
            if exact:
                for c in chunk:
                    if _exact_rank(A[:, list(c)]) < s:
                        return s, tested, c
            else:
                dep = _dependent_batch(A, np.array(chunk), tol)
                if dep.any():
                    return s, tested, chunk[int(np.argmax(dep))]
    return r + 1, tested, None


def _dual(A: np.ndarray, r: int, tol: float | None, exact: bool) -> tuple[int, int, tuple[int, ...] | None]:
    """Smallest support of a null vector, by enumerating hyperplanes spanned by q-1 rows of a null basis."""
    m = A.shape[1]
    q = m - r
    best, best_support, tested = m + 1, None, 0
    if exact:
        N = _exact_null_space(A)
        for rows in itertools.combinations(range(m), q - 1):
            tested += 1
            sub = N[list(rows), :] if rows else np.zeros((0, q), dtype=object)
            if sub.shape[0] and _exact_rank(sub) < q - 1:
                continue
            y = _exact_null_space(sub) if sub.shape[0] else np.eye(q, dtype=object)[:, :1]
            x = N.dot(y[:, 0])
            support = tuple(int(i) for i in np.flatnonzero([v != 0 for v in x]))
            if len(support) < best:
                best, best_support = len(support), support
        return best, tested, best_support
    _, sv, vt = np.linalg.svd(A)
    N = vt[r:].T  # orthonormal null basis, m x q
    # zero test for entries of a unit null vector: relative to the tolerance that defined the rank
    # zero test for the entries of a unit null vector, consistent with the rank tolerance
    ztol = max(tol / max(sv[0], np.finfo(float).tiny) * np.sqrt(m), 1e-10)
    if q == 1:
        support = tuple(int(j) for j in np.flatnonzero(np.abs(N[:, 0]) > ztol))
        return len(support), 1, support
    combos = itertools.combinations(range(m), q - 1)
    while True:
        chunk = list(itertools.islice(combos, _BATCH))
        if not chunk:
            break
        tested += len(chunk)
        _, ssub, vsub = np.linalg.svd(N[np.array(chunk)])  # (batch, q-1, q): rows spanning a hyperplane
        y = vsub[:, -1, :]  # its normal
        x = y @ N.T  # (batch, m): unit null vectors vanishing on the chosen rows
        sizes = np.where(ssub[:, -1] > ztol, (np.abs(x) > ztol).sum(1), m + 1)
        i = int(np.argmin(sizes))
        if sizes[i] < best:
            best, best_support = int(sizes[i]), tuple(int(j) for j in np.flatnonzero(np.abs(x[i]) > ztol))
    return best, tested, best_support


def kruskal_rank(
    A,
    tol: float | None = None,
    *,
    exact: bool | None = None,
    method: str = "auto",
    report: bool = False,
    max_subsets: int | None = 10**7,
):
    """The Kruskal rank of ``A`` (largest $r$ with every $r$ columns independent).

    ``tol``: singular values ``<= tol`` count as zero (float input; default ``max(shape) * eps * ||A||_2``).
    ``exact``: rational arithmetic (default for integer / ``Fraction`` input). ``method``: ``"auto"`` (the
    cheaper of primal / dual by subset count), ``"primal"``, ``"dual"`` or ``"brute"`` (all subsets by
    increasing size, no certificates; a reference). ``max_subsets``: refuse (``ValueError``) a search that
    would test more subsets (``None``: no limit). Returns an ``int``, or a :class:`KruskalRank` report when
    ``report=True``.
    """
    if method not in ("auto", "primal", "dual", "brute"):
        raise ValueError(f"unknown method {method!r}")
    M, is_exact = _as_matrix(A, exact)
    n, m = M.shape
    if not is_exact:
        tol = _default_tol(M) if tol is None else float(tol)
        if tol < 0:
            raise ValueError("tol must be non-negative")

    def done(rank, how, r, tested, witness):
        res = KruskalRank(int(rank), how, int(r), int(tested), witness, is_exact)
        return res if report else res.rank

    if method == "brute":
        tested = 0
        for s in range(1, m + 1):
            for c in itertools.combinations(range(m), s):
                tested += 1
                sub = M[:, list(c)]
                if s > n:
                    dep = True
                elif is_exact:
                    dep = _exact_rank(sub) < s
                else:
                    dep = np.linalg.svd(sub, compute_uv=False)[-1] <= tol
                if dep:
                    return done(s - 1, "brute", s - 1, tested, c)
        return done(m, "brute", m, tested, None)

    # certificate 1: zero columns
    if is_exact:
        zero = [j for j in range(m) if all(v == 0 for v in M[:, j])]
    else:
        zero = list(np.flatnonzero(np.linalg.norm(M, axis=0) <= tol))
    if zero:
        return done(0, "zero-column", -1, 0, (int(zero[0]),))
    r = _exact_rank(M) if is_exact else int(np.sum(np.linalg.svd(M, compute_uv=False) > tol))
    # certificate 2: full column rank
    if r == m:
        return done(m, "full-column-rank", r, 0, None)
    # certificate 3: parallel pairs (C(m,2) cheap tests)
    pairs = list(itertools.combinations(range(m), 2))
    if is_exact:
        par = next((p for p in pairs if _exact_rank(M[:, list(p)]) < 2), None)
    else:
        dep = _dependent_batch(M, np.array(pairs), tol)
        par = pairs[int(np.argmax(dep))] if dep.any() else None
    if par is not None:
        return done(1, "parallel-columns", r, len(pairs), par)
    q = m - r
    if method == "auto":
        if q == 1:
            method = "dual"
        else:
            primal_cost = sum(comb(m, s) for s in range(3, r + 1))
            method = "dual" if comb(m, q - 1) < primal_cost else "primal"
    cost = comb(m, q - 1) if method == "dual" else sum(comb(m, s) for s in range(3, r + 1))
    if max_subsets is not None and cost > max_subsets:
        raise ValueError(
            f"exact Kruskal rank of a {n}x{m} matrix of rank {r} needs up to {cost} subset tests "
            f"(method {method!r}); pass max_subsets=None to run it anyway"
        )
    search = _dual if method == "dual" else _primal
    spark, tested, witness = search(M, r, tol, is_exact)
    how = "nullity-one" if (method == "dual" and q == 1) else method
    return done(spark - 1, how, r, tested + len(pairs), witness)


@dataclass(frozen=True)
class KruskalCondition:
    """Kruskal's sufficient condition $k_A + k_B + k_C \\ge 2R + 2$ (Proposition 1)."""

    k_ranks: tuple[int, int, int]
    rank: int
    holds: bool

    def __bool__(self) -> bool:
        return self.holds


def kruskal_condition(A, B, C, tol: float | None = None) -> KruskalCondition:
    """Whether factors ``A, B, C`` (each with R columns) satisfy Kruskal's condition $k_A+k_B+k_C \\ge 2R+2$.

    When it holds, the CP decomposition $W=\\sum_i A_i\\otimes B_i\\otimes C_i$ is unique up to a common
    column permutation and column scalings with product one.
    """
    mats = [np.asarray(X) for X in (A, B, C)]
    if any(X.ndim != 2 for X in mats):
        raise ValueError("kruskal_condition expects three 2-d factor matrices")
    R = mats[0].shape[1]
    if any(X.shape[1] != R for X in mats):
        raise ValueError(f"factors must have the same number of columns, got {[X.shape[1] for X in mats]}")
    ks = tuple(kruskal_rank(X, tol) for X in mats)
    return KruskalCondition(ks, R, sum(ks) >= 2 * R + 2)
