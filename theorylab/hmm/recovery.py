"""Recover model parameters from optimal predictors: the constructive side of Theorems 5, 7 and 8.

Theorem 7 (HMM, triple tasks on positions 1, 2, 3): $W[j]=f(e_j)=\\sum_i A_{ji}\\,B_i\\otimes C_i$ with $B,
C\\in\\{OT^\\top, O, OT\\}$ (the targets' means given $h_2$) and $A=\\Phi K^\\top$; all three factors have
Kruskal rank $k$, so Jennrich's algorithm returns them up to permutation and scale. Scales are fixed by the
column sums (all of $O$, $OT$, $OT^\\top$ are column-stochastic); then $T=O^+(OT)$. For $x_1\\otimes x_3\\mid
x_2$, $O$ is read from $A=D^{-1}O$ with $D=\\mathrm{diag}(OT\\mathbb 1)$.

Theorem 8 cases 1 and 3 (G-HMM): the same with query points for mode 1; the target-2 factor is $M$ up to
scale, the scale is fixed by the unit norms up to a sign per column, and the $2^k$ sign patterns are resolved
by re-evaluating the predictor on fresh points. Case 2 ($x_1\\otimes x_3\\mid x_2$) is not identifiable in
general (see ``theorem8_case2_pair``) and raises.

Theorem 5 (G-HMM, $x_2\\mid x_1$): far-away points $cu$ give $f(cu)\\to(MT)_{i^*}$, revealing the columns of
$MT$; then $\\phi=(MT)^+f$, $\\log(\\phi_i/\\phi_1)=(\\mu_i-\\mu_1)^\\top x$ gives the differences, and
$\\|\\mu_1\\|=1$ leaves two solutions $M$, $HM$; only one gives column sums $+1$ for $T=M^+(MT)$.
"""

from __future__ import annotations

import itertools

import numpy as np

from theorylab._fmt import plain
from theorylab.hmm.models import GHMM, HMM, AssumptionError
from theorylab.hmm.predictors import optimal_predictor, parse_task
from theorylab.tensors import cp_decompose

__all__ = ["recover_from_predictor", "NotIdentifiableError", "RECOVERY_TOL"]

RECOVERY_TOL = (
    1e-6  # validation tolerance of recovered sums: Jennrich on exact input is accurate to ~1e-7 (case 2)
)


class NotIdentifiableError(ValueError):
    """The task does not identify the model class (a counterexample generator exists)."""


def _colsum_normalize(X: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    s = X.sum(axis=0)
    if np.any(np.abs(s) < 1e-12 * np.abs(X).sum(axis=0).max()):
        raise np.linalg.LinAlgError("a recovered factor has a column summing to 0; cannot fix its scale")
    return X / s, s


def _recover_hmm(W: np.ndarray, k: int, targets, given, refine: bool, seed: int, validate: bool) -> HMM:
    if W.ndim != 3 or len(set(W.shape)) != 1:
        raise ValueError(f"a discrete triple predictor has shape (d, d, d), got {W.shape}")
    if not np.all(np.isfinite(W)):
        raise ValueError("predictor contains NaN or infinite entries")
    d = W.shape[0]
    if not 1 <= k <= d:
        raise ValueError(f"need 1 <= k <= d = {d} (Assumption 7), got k = {k}")
    _check_multilinear_rank(W, k, "Assumption 7")
    cp = cp_decompose(W, k, refine=refine, seed=seed)
    B, sB = _colsum_normalize(cp.B)
    C, sC = _colsum_normalize(cp.C)
    A = cp.A * sB * sC
    factor = {targets[0]: B, targets[1]: C}
    if 2 in factor:
        O = factor[2]
        other = targets[0] if targets[1] == 2 else targets[1]
        K = np.linalg.pinv(O) @ factor[other]
        T = K if other == 3 else K.T
    else:  # x1 (x) x3 | x2: A = D^{-1} O, D = diag(O T 1)
        OT = factor[3]
        O, _ = _colsum_normalize(OT.sum(axis=1, keepdims=True) * A)
        T = np.linalg.pinv(O) @ OT
    return HMM(O, T, validate=validate, tol=RECOVERY_TOL)


def _check_multilinear_rank(W: np.ndarray, k: int, assumption: str, rtol: float = 1e-10) -> None:
    """Modes 2 and 3 of the stacked predictor span col(B), col(C): rank < k means the factors are rank-deficient
    (the relative threshold 1e-10 sits far above round-off of exact predictors and far below any noise
    level)."""
    for mode in (1, 2):
        unfolding = np.moveaxis(W, mode, 0).reshape(W.shape[mode], -1)
        s = np.linalg.svd(unfolding, compute_uv=False)
        if len(s) < k or s[k - 1] <= rtol * s[0]:
            raise AssumptionError(
                assumption,
                f"the mode-{mode + 1} unfolding of the predictor tensor has rank < k = {k}: the emission / transition "
                "factors are rank-deficient, so the CP decomposition is not unique",
            )


def _sign_patterns(k: int):
    for signs in itertools.product((1.0, -1.0), repeat=k):
        yield np.array(signs)


def _recover_ghmm_triple(f, d, k, targets, given, rng, norm, refine, validate) -> GHMM:
    if given == 2:
        raise NotIdentifiableError(
            "x1 (x) x3 | x2 does not identify a G-HMM in general (Theorem 8, case 2 fails as printed): "
            "(M, T) and (M(I - 2J/k), 2J/k - T) give the same predictor when M^T M 1 ∝ 1 and T <= 2/k; "
            "see theorylab.hmm.theorem8_case2_pair"
        )
    X = 1.5 * rng.standard_normal((max(3 * k, d + 1), d))
    W = np.asarray(f(X), dtype=float)
    _check_multilinear_rank(W, k, "Assumption 8")
    cp = cp_decompose(W, k, refine=refine, seed=int(rng.integers(2**31)))
    factor = {targets[0]: cp.B, targets[1]: cp.C}
    other = targets[0] if targets[1] == 2 else targets[1]
    Mu = factor[2] / np.linalg.norm(factor[2], axis=0) * norm
    X_test = 1.5 * rng.standard_normal((4 * k + 8, d))
    f_test = np.asarray(f(X_test))
    best = None
    for s in _sign_patterns(k):
        M = Mu * s
        K = np.linalg.pinv(M) @ factor[other]
        try:
            K, _ = _colsum_normalize(K)
        except np.linalg.LinAlgError:
            continue
        T = K if other == 3 else K.T
        cand = GHMM(M, T, norm=norm, validate=False)
        err = float(np.max(np.abs(optimal_predictor(cand, targets, given)(X_test) - f_test)))
        if best is None or err < best[0]:
            best = (err, M, T)
    if best is None:
        raise np.linalg.LinAlgError("no sign pattern gives a transition matrix with non-zero column sums")
    return GHMM(best[1], best[2], norm=norm, validate=validate, tol=RECOVERY_TOL)


def _recover_ghmm_pairwise(f, d, k, targets, given, rng, norm, validate, directions: int = 4000) -> GHMM:
    if (targets, given) not in (((2,), 1), ((1,), 2)):
        raise ValueError("Theorem 5 recovery handles x2 | x1 (and its reverse x1 | x2)")
    # the predictor's range is col(MT) = col(M) (T invertible): restrict directions to it
    Y = np.asarray(f(rng.standard_normal((20 * k + 20, d))))
    U, s, _ = np.linalg.svd(Y.T, full_matrices=False)
    if np.sum(s > 1e-9 * s[0]) < k:
        raise ValueError(f"the predictor's range has dimension < k = {k} (Assumption 8 violated?)")
    Qb = U[:, :k]
    # columns of MT: limits of f(c u) for c -> infinity (the posterior concentrates on argmax_i mu_i^T u)
    cols: list[np.ndarray] = []
    for _ in range(3):
        g = rng.standard_normal((directions, k))
        u = (g / np.linalg.norm(g, axis=1, keepdims=True)) @ Qb.T
        f1, f2 = np.asarray(f(500.0 * u)), np.asarray(f(1000.0 * u))
        conv = f2[np.max(np.abs(f1 - f2), axis=1) < 1e-10]
        for c in cols:  # drop limits already found
            conv = conv[np.max(np.abs(conv - c), axis=1) > 1e-6]
        while len(conv):  # greedy clustering in order: a new column, then drop everything within 1e-6 of it
            cols.append(conv[0])
            conv = conv[np.max(np.abs(conv - conv[0]), axis=1) > 1e-6]
        if len(cols) >= k:
            break
    if len(cols) != k:
        raise np.linalg.LinAlgError(f"found {len(cols)} limit columns of MT, expected k = {k}")
    MT = np.column_stack(cols)
    # posteriors and mean differences: log(phi_i / phi_1) = (mu_i - mu_1)^T x for equal norms
    X = rng.standard_normal((4 * d + 20, d))
    phi = np.asarray(f(X)) @ np.linalg.pinv(MT).T
    if phi.min() <= 0:
        raise np.linalg.LinAlgError(
            "recovered posteriors are not positive; the predictor is not a G-HMM predictor"
        )
    logr = np.log(phi[:, 1:]) - np.log(phi[:, :1])
    design = np.column_stack([X, np.ones(len(X))])
    coef = np.linalg.lstsq(design, logr, rcond=None)[0]
    delta = coef[:d].T  # (k-1, d): mu_i - mu_1
    # mu_1 = Qb a with 2 mu_1^T delta_i = -|delta_i|^2 and |a| = norm: a line meets a sphere in two points
    G = 2 * delta @ Qb
    h = -np.sum(delta**2, axis=1)
    a0 = np.linalg.lstsq(G, h, rcond=None)[0]
    n = np.linalg.svd(G)[2][-1]
    t = np.sqrt(max(norm**2 - float(a0 @ a0), 0.0))
    best = None
    for sign in (1.0, -1.0):
        mu1 = Qb @ (a0 + sign * t * n)
        M = np.column_stack([mu1, mu1[:, None] + delta.T])
        K = np.linalg.pinv(M) @ MT
        T = K if given == 1 else K.T
        gap = float(np.max(np.abs(T.sum(axis=0) - 1)))  # the Householder partner has column sums -1
        if best is None or gap < best[0]:
            best = (gap, M, T)
    return GHMM(best[1], best[2], norm=norm, validate=validate, tol=RECOVERY_TOL)


def recover_from_predictor(
    pred,
    k: int,
    task,
    *,
    d: int | None = None,
    norm: float = 1.0,
    rng: np.random.Generator | None = None,
    refine: bool = False,
    validate: bool = True,
    seed: int = 0,
) -> HMM | GHMM:
    """Parameters (up to relabeling) from the optimal predictor ``pred`` of ``task``.

    HMM: ``pred`` is the array of shape (d, d, d) of a triple task ``"x2x3|x1"``, ``"x1x3|x2"`` or
    ``"x1x2|x3"`` (Theorem 7). G-HMM: ``pred`` is a function of points (..., d) (``d`` from ``pred.d`` or the
    keyword) for ``"x2|x1"`` (Theorem 5) or ``"x2x3|x1"`` / ``"x1x2|x3"`` (Theorem 8). ``refine`` adds ALS
    refinement (useful for noisy predictors); ``validate=False`` returns parameters even when they violate the
    assumptions (noisy input). Pairwise discrete tasks and the G-HMM task ``"x1x3|x2"`` raise
    :class:`NotIdentifiableError`.
    """
    targets, given = parse_task(task)
    if not isinstance(k, int | np.integer) or k < 1:
        raise ValueError(f"k must be a positive integer, got {plain(k)}")
    k = int(k)
    rng = np.random.default_rng(seed) if rng is None else rng
    if callable(pred):
        d = getattr(pred, "d", d)
        if d is None:
            raise ValueError("pass d (the observation dimension) for a G-HMM predictor function")
        if k < 2 or k > d:
            raise ValueError(f"need 2 <= k <= d = {d} (Assumption 8), got k = {k}")
        if len(targets) == 1:
            return _recover_ghmm_pairwise(pred, d, k, targets, given, rng, norm, validate)
        if len(targets) == 2 and sorted([*targets, given]) == [1, 2, 3]:
            return _recover_ghmm_triple(pred, d, k, targets, given, rng, norm, refine, validate)
        raise ValueError(f"unsupported G-HMM task {task!r}")
    W = np.asarray(pred)
    if W.dtype == object or not np.issubdtype(W.dtype, np.number):
        raise TypeError(f"pred must be a numeric array or a function, got dtype {W.dtype}")
    if len(targets) == 1:
        raise NotIdentifiableError(
            "a pairwise task does not identify a discrete HMM (Theorem 4, Theorem 6); "
            "see the counterexamples hmm.thm4 and hmm.thm6"
        )
    if len(targets) != 2 or sorted([*targets, given]) != [1, 2, 3]:
        raise ValueError(f"Theorem 7 recovery needs a triple task on positions 1, 2, 3, got {task!r}")
    return _recover_hmm(W.astype(float), k, targets, given, refine, seed, validate)
