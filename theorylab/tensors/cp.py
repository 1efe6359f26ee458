"""CP (canonical polyadic) decomposition of 3-tensors $W=\\sum_{i=1}^R A_i\\otimes B_i\\otimes C_i$.

``cp_decompose(W, R, method="jennrich")`` is Jennrich's simultaneous diagonalization: for random $u, v$,
$W_u=\\sum_a u_aW_{a\\cdot\\cdot}=B\\,\\mathrm{diag}(A^\\top u)\\,C^\\top$, so after projecting onto the
top-$R$ singular subspaces $U, V$ of the mode-2 / mode-3 unfoldings, the eigenvectors of $\\hat W_u\\hat
W_v^{-1}$ are the columns of $U^\\top B$. Then $(C\\odot A)^\\top=B^{+}W_{(2)}$, and each column of the
Khatri-Rao product is a rank-one $n_1\\times n_3$ matrix whose top singular pair gives $A_i, C_i$. It is exact
when $B$, $C$ have full column rank and no two columns of $A$ are parallel. ``method="als"`` is tensorly's
``parafac`` alone; ``refine=True`` polishes a Jennrich result with ALS started from it.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from theorylab._extras import require
from theorylab._fmt import plain

__all__ = ["CPDecomposition", "cp_to_tensor", "cp_decompose", "nonunique_decomposition"]


@dataclass(frozen=True)
class CPDecomposition:
    """Factors with $W\\approx\\sum_i A_i\\otimes B_i\\otimes C_i$ and the relative residual $\\|W-\\hat
    W\\|/\\|W\\|$."""

    A: np.ndarray
    B: np.ndarray
    C: np.ndarray
    residual: float
    method: str

    @property
    def factors(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        return self.A, self.B, self.C

    @property
    def weights(self) -> np.ndarray:
        """All ones: the scales are absorbed in the factors."""
        return np.ones(self.A.shape[1])

    def __iter__(self):
        """Unpacks as tensorly's ``(weights, factors)`` pair, so ``tensorly.cp_to_tensor(result)`` works."""
        return iter((self.weights, [self.A, self.B, self.C]))

    def __len__(self) -> int:
        return 2

    def to_tensorly(self):
        """A ``tensorly.cp_tensor.CPTensor`` (imports tensorly)."""
        CPTensor = require("tensorly.cp_tensor", extra="tensors").CPTensor

        return CPTensor((self.weights, [self.A, self.B, self.C]))

    def tensor(self) -> np.ndarray:
        return cp_to_tensor(self.A, self.B, self.C)


def cp_to_tensor(A, B, C) -> np.ndarray:
    """$W_{abc}=\\sum_i A_{ai}B_{bi}C_{ci}$."""
    A, B, C = (np.asarray(X) for X in (A, B, C))
    if any(X.ndim != 2 for X in (A, B, C)) or not A.shape[1] == B.shape[1] == C.shape[1]:
        raise ValueError(
            f"factors must be 2-d with the same number of columns, got shapes {A.shape}, {B.shape}, {C.shape}"
        )
    if any(X.dtype.kind not in "biuf" for X in (A, B, C)):
        raise TypeError(f"factors must be real matrices, got dtypes {A.dtype}, {B.dtype}, {C.dtype}")
    if not all(np.all(np.isfinite(X)) for X in (A, B, C)):
        raise ValueError("factors contain NaN or infinite entries")
    return np.einsum("ai,bi,ci->abc", A, B, C)


def _check_tensor(W, rank: int) -> np.ndarray:
    W = np.asarray(W)
    if W.ndim != 3:
        raise ValueError(f"expected a 3-tensor, got shape {W.shape}")
    if np.iscomplexobj(W) or not np.issubdtype(W.dtype, np.number):
        raise TypeError(f"expected a real tensor, got dtype {W.dtype}")
    W = W.astype(float)
    if not np.all(np.isfinite(W)):
        raise ValueError("tensor contains NaN or infinite entries")
    if not isinstance(rank, int | np.integer) or rank < 1:
        raise ValueError(f"rank must be a positive integer, got {plain(rank)}")
    return W


def _residual(W: np.ndarray, A, B, C) -> float:
    return float(np.linalg.norm(W - cp_to_tensor(A, B, C)) / max(np.linalg.norm(W), np.finfo(float).tiny))


def _mode_subspaces(W: np.ndarray, R: int) -> tuple[np.ndarray, np.ndarray, float]:
    """The leading ``R`` left singular vectors of the mode-2 and mode-3 unfoldings (independent of the random
    projections, so computed once per decomposition) and the residual floor: every rank-``R`` tensor ``X``
    has unfoldings of rank ``<= R``, so by Eckart-Young $\\|W - X\\| \\ge \\max_m (\\sum_{i > R}
    \\sigma_i(W_{(m)})^2)^{1/2}$; divided by $\\|W\\|$ it bounds the relative residual of any decomposition."""
    n1, n2, n3 = W.shape
    U, s2, _ = np.linalg.svd(W.transpose(1, 0, 2).reshape(n2, -1), full_matrices=False)
    V, s3, _ = np.linalg.svd(W.transpose(2, 0, 1).reshape(n3, -1), full_matrices=False)
    tail = max(float(np.sqrt(np.sum(s2[R:] ** 2))), float(np.sqrt(np.sum(s3[R:] ** 2))))
    return U[:, :R], V[:, :R], tail / max(float(np.linalg.norm(W)), np.finfo(float).tiny)


def _jennrich_once(W: np.ndarray, R: int, rng: np.random.Generator, U: np.ndarray, V: np.ndarray):
    n1, n2, n3 = W.shape
    u, v = rng.standard_normal(n1), rng.standard_normal(n1)
    Wu = U.T @ np.einsum("a,abc->bc", u, W) @ V
    Wv = U.T @ np.einsum("a,abc->bc", v, W) @ V
    _, vecs = np.linalg.eig(Wu @ np.linalg.inv(Wv))
    B = U @ np.real(vecs)
    B /= np.linalg.norm(B, axis=0)
    # (C kr A)^T = B^+ W_(2); column i reshaped to n1 x n3 is A_i C_i^T
    KR = np.linalg.pinv(B) @ W.transpose(1, 0, 2).reshape(n2, -1)  # (R, n1*n3)
    # the leading singular pair of each reshaped row, one stacked SVD (the same LAPACK call per matrix); the
    # factors C-contiguous, as later products round differently on another memory layout
    Ui, si, Vti = np.linalg.svd(KR.reshape(R, n1, n3))
    return np.ascontiguousarray((Ui[:, :, 0] * si[:, :1]).T), B, np.ascontiguousarray(Vti[:, 0, :].T)


def _als(W: np.ndarray, R: int, init, n_iter: int, tol: float, seed: int):
    try:
        tl = require("tensorly", extra="tensors")
    except ImportError:  # a host without tensorly (e.g. a bare GPU machine): the same ALS updates in numpy
        return _als_numpy(W, R, init, n_iter, tol, seed)
    CPTensor = require("tensorly.cp_tensor", extra="tensors").CPTensor
    parafac = require("tensorly.decomposition", extra="tensors").parafac

    if init is None:
        init = "svd"
    elif not isinstance(init, str):
        init = CPTensor((np.ones(R), [np.asarray(f, float) for f in init]))
    with np.errstate(all="ignore"):
        cp = parafac(
            tl.tensor(W), R, init=init, n_iter_max=n_iter, tol=tol, random_state=seed, normalize_factors=False
        )
    weights, (A, B, C) = cp
    return np.asarray(A) * np.asarray(weights), np.asarray(B), np.asarray(C)


def _als_numpy(W: np.ndarray, R: int, init, n_iter: int, tol: float, seed: int):
    """Plain alternating least squares in numpy (the same updates as tensorly's ``parafac``, without its per-iteration
    backend overhead: ~20x faster on small tensors). ``init``: ``"svd"`` (leading left singular vectors of the
    unfoldings, random columns where the mode is smaller than R), ``"random"`` (uniform [0, 1)) or a factor triple.
    Stops when the relative residual changes by less than ``tol``."""
    rng = np.random.default_rng(seed)
    unf = [
        W.reshape(W.shape[0], -1),
        W.transpose(1, 0, 2).reshape(W.shape[1], -1),
        W.transpose(2, 0, 1).reshape(W.shape[2], -1),
    ]
    if isinstance(init, str) or init is None:
        if init in (None, "svd"):
            factors = []
            for X in unf:
                U = np.linalg.svd(X, full_matrices=False)[0][:, :R]
                if U.shape[1] < R:
                    U = np.hstack([U, rng.random((X.shape[0], R - U.shape[1]))])
                factors.append(U)
        elif init == "random":
            factors = [rng.random((n, R)) for n in W.shape]
        else:
            raise ValueError(f"unknown init {init!r} (choose 'svd', 'random' or a factor triple)")
    else:
        factors = [np.array(f, dtype=float) for f in init]
    A, B, C = factors
    norm = max(np.linalg.norm(W), np.finfo(float).tiny)
    previous = np.inf
    with np.errstate(all="ignore"):
        # each Gram matrix and the (B, C) Khatri-Rao product are computed once per change of their factors
        gB, gC, krBC = B.T @ B, C.T @ C, _khatri_rao(B, C)
        for _ in range(n_iter):
            A = np.linalg.lstsq(gB * gC, (unf[0] @ krBC).T, rcond=None)[0].T
            gA = A.T @ A
            B = np.linalg.lstsq(gA * gC, (unf[1] @ _khatri_rao(A, C)).T, rcond=None)[0].T
            gB = B.T @ B
            C = np.linalg.lstsq(gA * gB, (unf[2] @ _khatri_rao(A, B)).T, rcond=None)[0].T
            gC, krBC = C.T @ C, _khatri_rao(B, C)
            res = np.linalg.norm(unf[0] - A @ krBC.T) / norm
            if not np.isfinite(res) or abs(previous - res) < tol:
                break
            previous = res
    return A, B, C


def _khatri_rao(X: np.ndarray, Y: np.ndarray) -> np.ndarray:
    """Column-wise Kronecker product, rows indexed (i, j) with j fastest: matches ``W.reshape(n1, n2 * n3)``."""
    return (X[:, None, :] * Y[None, :, :]).reshape(-1, X.shape[1])


EXACT_RESIDUAL = 1e-12  # an exact-rank tensor: the residual is rounding error
FLOOR_FACTOR = (
    2.0  # restarts stop within this factor of the Eckart-Young floor (no decomposition goes below it)
)


def cp_decompose(
    W,
    rank: int,
    method: str = "jennrich",
    *,
    refine: bool = False,
    tries: int = 5,
    seed: int = 0,
    init=None,
    n_iter: int = 1000,
    tol: float = 1e-14,
) -> CPDecomposition:
    """Rank-``rank`` CP decomposition of the 3-tensor ``W``.

    ``method="jennrich"``: simultaneous diagonalization, up to ``tries`` random $(u, v)$ pairs, keep the
    smallest residual (noise can merge eigenvalues); the restarts stop once the relative residual is below
    :data:`EXACT_RESIDUAL` or within :data:`FLOOR_FACTOR` of its noise floor (the Eckart-Young bound of the
    unfoldings, which no rank-``rank`` decomposition beats); ``refine=True`` adds ALS iterations started from it.
    ``method="als"``: tensorly ``parafac`` alone (``init``: ``"svd"``, ``"random"`` or a factor triple);
    ``method="als-numpy"``: the same plain ALS updates in numpy (no tensorly; ~20x faster on small tensors).
    Factors carry an arbitrary column scaling (Jennrich: unit-norm $B$ and $C$); compare with
    :func:`theorylab.tensors.match_factors`.
    """
    W = _check_tensor(W, rank)
    if method == "jennrich":
        if rank > min(W.shape[1], W.shape[2]):
            raise ValueError(
                "Jennrich needs rank <= min(n2, n3) (two factors of full column rank); "
                f"got rank {rank}, shape {W.shape}"
            )
        rng = np.random.default_rng(seed)
        U, V, floor = _mode_subspaces(W, rank)
        good_enough = max(EXACT_RESIDUAL, FLOOR_FACTOR * floor)
        best = None
        for _ in range(max(1, tries)):
            try:
                A, B, C = _jennrich_once(W, rank, rng, U, V)
            except np.linalg.LinAlgError:
                continue
            res = _residual(W, A, B, C)
            if best is None or res < best[0]:
                best = (res, A, B, C)
            if res <= good_enough:  # another projection could gain at most a factor FLOOR_FACTOR
                break
        if best is None:
            raise np.linalg.LinAlgError("Jennrich failed on every random projection (degenerate slices)")
        res, A, B, C = best
        name = "jennrich"
        if refine:
            A2, B2, C2 = _als(W, rank, (A, B, C), n_iter, tol, seed)
            res2 = _residual(W, A2, B2, C2)
            if res2 <= res:
                A, B, C, res = A2, B2, C2, res2
            name = "jennrich+als"
        return CPDecomposition(A, B, C, res, name)
    if method == "als":
        A, B, C = _als(W, rank, init, n_iter, tol, seed)
        return CPDecomposition(A, B, C, _residual(W, A, B, C), "als")
    if method == "als-numpy":
        A, B, C = _als_numpy(W, rank, init, n_iter, tol, seed)
        return CPDecomposition(A, B, C, _residual(W, A, B, C), "als-numpy")
    raise ValueError(f"unknown method {method!r} (choose 'jennrich', 'als' or 'als-numpy')")


def nonunique_decomposition(A, B, C, rng: np.random.Generator | None = None, tol: float = 1e-10):
    """A second CP decomposition of $W=[A,B,C]$ that is not a rescaled permutation of it.

    Works whenever one factor has two parallel columns (Kruskal rank $\\le 1$), the standard way Kruskal's
    condition fails: if $C_j=\\alpha C_i$ then $A_iB_i^\\top+\\alpha A_jB_j^\\top=[A_i,\\alpha
    A_j]\\,G\\,G^{-1} [B_i,B_j]^\\top$ for any invertible $2\\times2$ $G$, and a non-diagonal,
    non-antidiagonal $G$ mixes the columns. Raises ``ValueError`` when no factor has parallel (or zero)
    columns: Kruskal's condition is sufficient, not necessary, and other failures need not give
    non-uniqueness. Returns ``(A2, B2, C2)``.
    """
    rng = np.random.default_rng(0) if rng is None else rng
    mats = [np.array(X, dtype=float) for X in (A, B, C)]
    R = mats[0].shape[1]
    if any(X.ndim != 2 or X.shape[1] != R for X in mats):
        raise ValueError("factors must be 2-d with the same number of columns")
    if R < 2:
        raise ValueError("a rank-1 decomposition is always unique up to scaling")
    for mode in range(3):
        X = mats[mode]
        norms = np.linalg.norm(X, axis=0)
        for i in range(R):
            for j in range(i + 1, R):
                ni, nj = norms[i], norms[j]
                if min(ni, nj) <= tol * max(1.0, norms.max()):
                    continue
                if np.linalg.svd(np.column_stack([X[:, i] / ni, X[:, j] / nj]), compute_uv=False)[-1] > tol:
                    continue
                alpha = float(X[:, j] @ X[:, i] / (ni * ni))  # X_j = alpha X_i
                P, Q = [mats[m] for m in range(3) if m != mode]
                G = np.array([[1.0, 0.0], [0.0, 1.0]]) + rng.uniform(0.3, 0.7) * np.array(
                    [[0.0, 1.0], [1.0, 0.0]]
                )
                left = np.column_stack([P[:, i], alpha * P[:, j]]) @ G
                right = np.column_stack([Q[:, i], Q[:, j]]) @ np.linalg.inv(G).T
                P2, Q2, X2 = P.copy(), Q.copy(), X.copy()
                P2[:, [i, j]] = left
                Q2[:, [i, j]] = right
                X2[:, j] = X[:, i]
                out = [None, None, None]
                out[mode] = X2
                others = [m for m in range(3) if m != mode]
                out[others[0]], out[others[1]] = P2, Q2
                return tuple(out)
        # a zero column: its rank-one term vanishes, so the partner columns are arbitrary
        zero = np.flatnonzero(norms <= tol * max(1.0, norms.max()))
        if zero.size:
            z = int(zero[0])
            out = [M.copy() for M in mats]
            for m in range(3):
                if m != mode:
                    out[m][:, z] = out[m][:, z] + rng.standard_normal(out[m].shape[0])
            return tuple(out)
    raise ValueError(
        "no factor has parallel or zero columns: Kruskal's condition is only sufficient, "
        "so no generic second decomposition is available"
    )
