r"""Closed-form optima of a one-layer attention model on topic data (Li's thesis §2.1, Lemma 2.1.1, Thms
2.1.1-2.1.4).

Model (2.7)/(2.8) with frozen uniform attention and one-hot embeddings: every output column is $\mathbf W y$,
where $y = m_0 e_0 + aP + b[0; \mathbf 1]$ is the masked document's token-frequency vector and $P$ its word
distribution (uniform on the words of $\tau$ of the $T$ topics). Under Assumption 2.1.1 the squared-loss
objective (2.1) is

$$L(\mathbf W) = \mathbb E_s \|\mathbf W y - P\|^2 + 1 - \frac1{\tau v},$$

so the minimum is $L^* = 1 - 1/(\tau v)$, reached exactly when $\mathbf W y(P) = P$ for every document. That
set (Lemma 2.1.1 = Thm 2.1.4) constrains only block row-sums: with free $u_0..u_{Tv}$, $\mathbf W_{00} =
-c_2u_0$, row 0's topic blocks sum to $u_0v$, $\mathbf W_{i0} = -c_1 - c_2u_i$, row $i$'s own-topic block sums
to $c_3 + u_iv$ and its other blocks to $u_iv$. The vanishing-L2 limit (Thm 2.1.2) is the minimum-norm member:
row 0 is zero and rows $i \ge 1$ are $W_{same}$ on the own topic, $W_{diff}$ elsewhere, $W_{i0}$ in column 0:

$$W_{diff} = -\frac{c_1c_2 + c_3}{c_2^2 + Tv},\quad W_{same} = W_{diff} + \frac{c_3}{v},\quad
W_{i0} = \frac{c_2c_3 - c_1Tv}{c_2^2 + Tv}.$$

Everything accepts float or :class:`fractions.Fraction` parameters; with Fractions the arrays have dtype
object and every result is exact.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from math import comb

import numpy as np

from theorylab._extras import require
from theorylab.languages.topic import Number, TopicModel

__all__ = [
    "OptimalityReport",
    "TopicConstants",
    "block_sums",
    "constants",
    "diagonal_value_matrix",
    "embedding_bias",
    "embedding_loss",
    "is_optimal_embedding",
    "hessian_rank",
    "is_optimal_value_matrix",
    "minimum_loss",
    "optimal_embedding",
    "optimal_value_matrix",
    "population_loss",
    "population_loss_enumerated",
    "population_loss_moments",
    "pinv_value_matrix",
    "ridge_value_matrix",
    "cvxpy_min_trace_embedding",
    "cvxpy_value_matrix",
    "second_moments",
    "thesis_example_embedding",
    "value_matrix_from_family",
]


# ------------------------------------------------------------------------------------------------------------
# constants
# ------------------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class TopicConstants:
    r"""The constants of Thm 2.1.2 (and $c_4 = c_3$ of Thms 2.1.3/2.1.5), named apart from the attention
    ratios.

    $c_1 = p_r / ((1-p_c-p_r)\,a\,Tv)$, $c_2 = 1/((1-p_c-p_r)p_m) - 1$, $c_3 = 1/a$, $a = 1-(1-p_c)p_m$.
    """

    c1: Number
    c2: Number
    c3: Number
    w_diff: Number
    w_same: Number
    w_mask_col: Number


def constants(params: TopicModel) -> TopicConstants:
    """Thm 2.1.2's constants and block values for ``params``."""
    p_m, p_c, p_r, Tv, v = params.p_m, params.p_c, params.p_r, params.T * params.v, params.v
    c1 = p_r / ((1 - p_c - p_r) * params.a * Tv)
    c2 = 1 / ((1 - p_c - p_r) * p_m) - 1
    c3 = 1 / params.a
    w_diff = -(c1 * c2 + c3) / (c2 * c2 + Tv)
    return TopicConstants(c1, c2, c3, w_diff, w_diff + c3 / v, (c2 * c3 - c1 * Tv) / (c2 * c2 + Tv))


def minimum_loss(params: TopicModel) -> Number:
    r"""$L^* = 1 - 1/(\tau v)$: the loss of the document's own word distribution as the prediction."""
    return 1 - (params.p_m * 0 + 1) / (params.tau * params.v)


def _dtype(params: TopicModel) -> type:
    return object if params.exact else float


def _check_matrix(W: np.ndarray, params: TopicModel, name: str = "W") -> np.ndarray:
    W = np.asarray(W)
    V = params.V
    if W.shape != (V, V):
        raise ValueError(
            f"{name} must have shape (V, V) = ({V}, {V}) for T={params.T}, v={params.v}; got {W.shape}"
        )
    if W.dtype != object:
        if not np.issubdtype(W.dtype, np.number):
            raise TypeError(f"{name} must be numeric, got dtype {W.dtype}")
        if not np.all(np.isfinite(W)):
            raise ValueError(f"{name} contains NaN or infinity")
    return W


def block_sums(W: np.ndarray, params: TopicModel) -> np.ndarray:
    r"""$S_{it} = \sum_{l \in t} \mathbf W_{il}$: the ``[V, T]`` topic-block row sums (column 0 excluded)."""
    W = _check_matrix(W, params)
    return W[:, 1:].reshape(params.V, params.T, params.v).sum(axis=2)


# ------------------------------------------------------------------------------------------------------------
# the population loss (Assumption 2.1.1), three independent evaluations
# ------------------------------------------------------------------------------------------------------------
def population_loss(W: np.ndarray, params: TopicModel, bias: np.ndarray | None = None) -> Number:
    r"""Exact population loss (2.1) of $f = \mathbf W\tilde{\mathbf X}A + \mathbf b$ under uniform attention.

    Computed from block sums only: with $S$ the block sums, output $i$ is $\kappa_i + h_i\cdot s$ plus the
    target $P_i$, where $s \in \{0,1\}^T$ indicates the present topics, $\kappa_i = m_0\mathbf W_{i0} +
    b\sum_t S_{it} + b_i$ and $h_i = \frac{a}{\tau v}S_{i\cdot} - \frac{1}{\tau v}e_{topic(i)}$. With $\mathbb
    E s = \frac\tau T\mathbf 1$ and $\mathbb E ss^\top = \rho\mathbf 1\mathbf 1^\top + (\frac\tau T - \rho)I$,
    $\rho = \frac{\tau(\tau-1)}{T(T-1)}$,

    $$L = \sum_i \Big[\kappa_i^2 + \tfrac{2\tau}{T}\kappa_i H_i + \rho H_i^2 + (\tfrac\tau
    T-\rho)\|h_i\|^2\Big] + 1 - \tfrac1{\tau v},\qquad H_i = \textstyle\sum_t h_{it}.$$

    $O(V\,T)$ after the $O(V^2)$ block sums; never samples.
    """
    T, v, tau = params.T, params.v, params.tau
    S = block_sums(W, params)
    W = np.asarray(W)
    if bias is None:
        bias = np.zeros(params.V, dtype=S.dtype)
    bias = np.asarray(bias)
    if bias.shape != (params.V,):
        raise ValueError(f"bias must have shape ({params.V},), got {bias.shape}")
    one = params.p_m * 0 + 1  # 1 in the arithmetic of the parameters (Fraction or float)
    kappa = params.m0 * W[:, 0] + params.b * S.sum(axis=1) + bias
    h = (params.a / (tau * v)) * S
    h[1:, :] -= np.repeat(np.eye(T, dtype=S.dtype), v, axis=0) * (one / (tau * v))
    H = h.sum(axis=1)
    mean_s = one * tau / T
    rho = one * tau * (tau - 1) / (T * (T - 1))
    per_row = kappa * kappa + 2 * mean_s * kappa * H + rho * H * H + (mean_s - rho) * (h * h).sum(axis=1)
    return per_row.sum() + minimum_loss(params)


def second_moments(params: TopicModel) -> tuple[np.ndarray, np.ndarray]:
    r"""$(\Sigma_{yy}, \Sigma_{Py}) = (\mathbb E\,yy^\top, \mathbb E\,Py^\top)$ over the uniform choice of
    topics."""
    T, v, tau, V = params.T, params.v, params.tau, params.V
    dt = _dtype(params)
    one = params.p_m * 0 + 1
    B = np.zeros((V, T), dtype=dt)
    B[1:, :] = np.repeat(np.eye(T, dtype=dt), v, axis=0) * (one / (tau * v))
    c = np.full(V, params.b, dtype=dt)
    c[0] = params.m0
    mean_s = np.full(T, one * tau / T, dtype=dt)
    rho = one * tau * (tau - 1) / (T * (T - 1))
    ss = np.full((T, T), rho, dtype=dt) + np.eye(T, dtype=dt) * (one * tau / T - rho)
    Bm = B @ mean_s
    BssB = B @ ss @ B.T
    a = params.a
    Syy = np.outer(c, c) + a * (np.outer(c, Bm) + np.outer(Bm, c)) + a * a * BssB
    SPy = np.outer(Bm, c) + a * BssB
    return Syy, SPy


def population_loss_moments(W: np.ndarray, params: TopicModel) -> Number:
    r"""The same loss as $\mathrm{tr}(\mathbf W\Sigma_{yy}\mathbf W^\top) - 2\,\mathrm{tr}(\mathbf
    W\Sigma_{Py}^\top) + 1$."""
    W = _check_matrix(W, params)
    Syy, SPy = second_moments(params)
    return np.trace(W @ Syy @ W.T) - 2 * np.trace(W @ SPy.T) + 1


def population_loss_enumerated(W: np.ndarray, params: TopicModel, max_subsets: int = 5000) -> Number:
    r"""The same loss by a plain loop over all $\binom T\tau$ topic subsets (reference for
    tests/benchmarks)."""
    from itertools import combinations

    W = _check_matrix(W, params)
    n = comb(params.T, params.tau)
    if n > max_subsets:
        raise ValueError(f"{n} topic subsets exceed max_subsets = {max_subsets}")
    total = 0
    for topics in combinations(range(params.T), params.tau):
        y = params.word_frequencies(np.array(topics))
        P = (y - params.b) / params.a
        P[0] = 0
        r = W @ y - P
        total = total + (r * r).sum()
    return total / n + minimum_loss(params)


# ------------------------------------------------------------------------------------------------------------
# the optimal set (Lemma 2.1.1 / Thm 2.1.4) and its members
# ------------------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class OptimalityReport:
    """Verdict of the block-row-sum characterisation; truthy iff every condition holds within ``tol``."""

    optimal: bool
    max_violation: float
    tol: float
    u: np.ndarray = field(repr=False)
    violations: dict[str, float]

    def __bool__(self) -> bool:
        return self.optimal


def _block_conditions(
    W: np.ndarray, params: TopicModel, c1: Number, tol: float, require_sparse: bool = True
) -> OptimalityReport:
    if require_sparse:
        params.require_sparse()
    k = constants(params)
    T, v = params.T, params.v
    S = block_sums(W, params)
    W = np.asarray(W)
    own = np.repeat(np.arange(T), v)  # topic of word i (rows 1..Tv)
    # row 0: all T block sums equal u0 v, W00 = -c2 u0
    u0 = S[0].sum() / (T * v)
    # rows i >= 1: the T-1 cross-topic block sums equal u_i v
    cross = S[1:].copy()
    own_sum = cross[np.arange(T * v), own].copy()
    cross_total = cross.sum(axis=1) - own_sum
    u = np.concatenate([[u0], cross_total / ((T - 1) * v)]).astype(S.dtype)
    cross[np.arange(T * v), own] = (u[1:] * v).astype(S.dtype)  # neutral for the spread test
    gaps = {
        "row0_block_sums": np.abs(S[0] - u0 * v).max(),
        "row0_mask_entry": abs(W[0, 0] + k.c2 * u0),
        "cross_topic_block_sums": np.abs(cross - (u[1:] * v)[:, None]).max(),
        "same_topic_block_sums": np.abs(own_sum - k.c3 - u[1:] * v).max(),
        "mask_column": np.abs(W[1:, 0] + c1 + k.c2 * u[1:]).max(),
    }
    gaps = {name: float(g) for name, g in gaps.items()}
    worst = max(gaps.values())
    return OptimalityReport(worst <= tol, worst, tol, u, gaps)


def is_optimal_value_matrix(W: np.ndarray, params: TopicModel, tol: float = 1e-9) -> OptimalityReport:
    r"""Lemma 2.1.1 / Thm 2.1.4: is ``W`` a minimiser of the uniform-attention loss (no bias)?

    Solves for $u_0$ from row 0's block sums and for $u_i$ from row $i$'s cross-topic block sums, then checks
    every condition; ``tol`` bounds the absolute violation (in units of block sums; use 0 for Fraction input).
    Requires $1 \le \tau \le T-1$.
    """
    return _block_conditions(W, params, constants(params).c1, tol)


def value_matrix_from_family(
    params: TopicModel, u: np.ndarray, splits: np.ndarray | None = None
) -> np.ndarray:
    """The member of the optimal family with free constants ``u`` ($V$ values) and within-block weights
    ``splits``.

    ``splits[i, t]`` ($[V, T, v]$, each summing to 1 over the last axis; default $1/v$) spreads block $(i,
    t)$'s prescribed sum over its $v$ entries. Any such matrix is optimal (Lemma 2.1.1).
    """
    k = constants(params)
    T, v, V = params.T, params.v, params.V
    u = np.asarray(u)
    if u.shape != (V,):
        raise ValueError(f"u must have shape ({V},), got {u.shape}")
    dt = object if (params.exact or u.dtype == object) else float
    if splits is None:
        splits = np.full((V, T, v), (params.p_m * 0 + 1) / v, dtype=dt)
    splits = np.asarray(splits)
    if splits.shape != (V, T, v):
        raise ValueError(f"splits must have shape ({V}, {T}, {v}), got {splits.shape}")
    sums = splits.sum(axis=2)
    if splits.dtype == object:
        if np.any(sums != 1):
            raise ValueError("each block's splits must sum to 1")
    elif not np.allclose(sums, 1.0, atol=1e-12):
        raise ValueError("each block's splits must sum to 1")
    blocks = (u * v)[:, None] * np.ones((V, T), dtype=dt)
    blocks[1:, :] += np.repeat(np.eye(T, dtype=dt), v, axis=0) * k.c3
    W = np.zeros((V, V), dtype=dt)
    W[:, 1:] = (blocks[:, :, None] * splits).reshape(V, T * v)
    W[0, 0] = -k.c2 * u[0]
    W[1:, 0] = -k.c1 - k.c2 * u[1:]
    return W


def optimal_value_matrix(params: TopicModel, require_sparse: bool = True) -> np.ndarray:
    r"""Thm 2.1.2: $\mathbf W^{V*} = \lim_{\lambda\to0}\arg\min L + \lambda\|\mathbf W\|_F^2$ (minimum norm).

    ``require_sparse=False`` builds the printed formula even for $\tau = T$, where it is optimal but no longer
    the minimum-norm optimum (the thesis's unstated hypothesis $\tau \le T-1$)."""
    if require_sparse:
        params.require_sparse()
    k = constants(params)
    T, v, V = params.T, params.v, params.V
    W = np.full((V, V), k.w_diff, dtype=_dtype(params))
    same = np.kron(np.eye(T, dtype=bool), np.ones((v, v), dtype=bool))
    W[1:, 1:][same] = k.w_same
    W[1:, 0] = k.w_mask_col
    W[0, :] = 0 * k.w_diff
    return W


def diagonal_value_matrix(params: TopicModel) -> np.ndarray:
    r"""Def. 2.1.2's diagonal optimum $\mathbf D^V$: $u = 0$, $D_{ii} = c_3$, $D_{i0} = -c_1$; row 0 = 0 (min
    norm)."""
    k = constants(params)
    W = np.zeros((params.V, params.V), dtype=_dtype(params))
    W = W * k.c3  # keep Fraction zeros in exact mode
    idx = np.arange(1, params.V)
    W[idx, idx] = k.c3
    W[1:, 0] = -k.c1
    return W


# ------------------------------------------------------------------------------------------------------------
# numerical cross-checks that do not use the closed form
# ------------------------------------------------------------------------------------------------------------
def pinv_value_matrix(params: TopicModel, rtol: float = 1e-10) -> np.ndarray:
    r"""Minimum-norm least-squares solution $\Sigma_{Py}\Sigma_{yy}^+$ from the exact second moments
    (floats)."""
    Syy, SPy = (m.astype(float) for m in second_moments(params))
    return SPy @ np.linalg.pinv(Syy, rtol=rtol, hermitian=True)


def ridge_value_matrix(params: TopicModel, lam: float) -> np.ndarray:
    r"""$\arg\min L + \lambda\|\mathbf W\|_F^2 = \Sigma_{Py}(\Sigma_{yy} + \lambda I)^{-1}$ (floats)."""
    if not lam > 0:
        raise ValueError(f"ridge parameter must be positive, got {lam}")
    Syy, SPy = (m.astype(float) for m in second_moments(params))
    return np.linalg.solve(Syy + lam * np.eye(params.V), SPy.T).T


def cvxpy_value_matrix(params: TopicModel, lam: float) -> np.ndarray:
    r"""Solve $\min_W L(W) + \lambda\|W\|_F^2$ with cvxpy (a generic convex solver; small sizes only)."""
    cp = require("cvxpy", extra="convex")

    if not lam > 0:
        raise ValueError(f"ridge parameter must be positive, got {lam}")
    Syy, SPy = (m.astype(float) for m in second_moments(params))
    evals, evecs = np.linalg.eigh(Syy)
    root = evecs * np.sqrt(np.clip(evals, 0, None))  # Syy = root @ root.T
    W = cp.Variable((params.V, params.V))
    objective = cp.sum_squares(W @ root) - 2 * cp.trace(W @ SPy.T) + 1 + lam * cp.sum_squares(W)
    cp.Problem(cp.Minimize(objective)).solve(solver=cp.CLARABEL)
    if W.value is None:
        raise RuntimeError("cvxpy did not return a solution")
    return np.asarray(W.value)


# ------------------------------------------------------------------------------------------------------------
# Thm 2.1.1: embeddings with frozen uniform attention, W^V = I and the denoising bias
# ------------------------------------------------------------------------------------------------------------
def embedding_bias(params: TopicModel) -> np.ndarray:
    r"""$\mathbf b^{pred}$ of Thm 2.1.1: $-p_mp_r/(aTv)$ on words, 0 on ``MASK`` (the restatement's
    reading)."""
    bias = np.full(
        params.V, -params.p_m * params.p_r / (params.a * params.T * params.v), dtype=_dtype(params)
    )
    bias[0] = 0 * bias[1]
    return bias


def embedding_loss(E: np.ndarray, params: TopicModel) -> Number:
    r"""Population loss of $f = \mathbf E y + \mathbf b^{pred}$, $\mathbf E = \mathbf W^{E\top}\mathbf
    W^E$."""
    return population_loss(E, params, bias=embedding_bias(params))


def is_optimal_embedding(E: np.ndarray, params: TopicModel, tol: float = 1e-9) -> OptimalityReport:
    r"""Thm 2.1.1: ``E`` is symmetric PSD (realisable as $\mathbf W^{E\top}\mathbf W^E$) and satisfies the
    block conditions of Lemma 2.1.1 with $c_1$ removed from column 0 (the bias absorbs it)."""
    E = _check_matrix(E, params, "E")
    report = _block_conditions(E, params, 0 * constants(params).c1, tol)
    Ef = E.astype(float)
    gaps = dict(report.violations)
    gaps["symmetry"] = float(np.abs(Ef - Ef.T).max())
    # eigenvalues are computed in floats: ignore negative parts below the eigensolver's accuracy
    eig_floor = 64 * np.finfo(float).eps * max(1.0, float(np.abs(Ef).max())) * params.V
    gaps["psd"] = float(max(0.0, -np.linalg.eigvalsh((Ef + Ef.T) / 2).min() - eig_floor))
    worst = max(gaps.values())
    return OptimalityReport(worst <= tol, worst, tol, report.u, gaps)


def optimal_embedding(params: TopicModel) -> np.ndarray:
    r"""Minimum-trace optimal $\mathbf E^\star = \frac{c_3}{v}\mathrm{blockdiag}(J_v, \dots, J_v)$, zero
    ``MASK`` row/column: the $\lambda \to 0$ limit with weight decay on $\mathbf W^E$ (rank $T$, trace
    $Tc_3$)."""
    k = constants(params)
    E = np.zeros((params.V, params.V), dtype=_dtype(params)) * k.c3
    E[1:, 1:] = np.kron(np.eye(params.T, dtype=int), np.ones((params.v, params.v), dtype=int)) * (
        k.c3 / params.v
    )
    return E


def cvxpy_min_trace_embedding(params: TopicModel) -> np.ndarray:
    r"""Solve $\min \mathrm{tr}\,\mathbf E$ over symmetric PSD $\mathbf E$ satisfying Thm 2.1.1's optimality conditions
    (free $u$) with cvxpy: an SDP whose solution should be :func:`optimal_embedding` (small sizes only)."""
    cp = require("cvxpy", extra="convex")

    params.require_sparse()
    k = constants(params)
    T, v, V = params.T, params.v, params.V
    c2, c3 = float(k.c2), float(k.c3)
    E = cp.Variable((V, V), symmetric=True)
    u = cp.Variable(V)
    blocks = [E[:, 1 + t * v : 1 + (t + 1) * v] @ np.ones(v) for t in range(T)]  # [V] block sums per topic
    own = np.repeat(np.arange(T), v)
    cons = [E >> 0, E[0, 0] == -c2 * u[0], E[1:, 0] == -c2 * u[1:]]
    for t in range(T):
        target = np.where(own == t, c3, 0.0)  # own-topic rows get c3 on top of u_i v
        cons += [blocks[t][0] == u[0] * v, blocks[t][1:] == target + u[1:] * v]
    cp.Problem(cp.Minimize(cp.trace(E)), cons).solve(solver=cp.CLARABEL)
    if E.value is None:
        raise RuntimeError("cvxpy did not return a solution")
    return np.asarray(E.value)


def thesis_example_embedding(params: TopicModel) -> np.ndarray:
    r"""The "simplest realizable example" printed in the proof of Thm 2.1.1: $\mathbf E = c_3 I$ (not
    optimal)."""
    k = constants(params)
    E = np.zeros((params.V, params.V), dtype=_dtype(params)) * k.c3
    np.fill_diagonal(E, k.c3)
    return E


def hessian_rank(params: TopicModel, rtol: float = 1e-10) -> int:
    r"""Rank of the per-row Hessian $2\Sigma_{yy}$ of the uniform-attention loss ($T$ when $\tau < T$, 1 when
    $\tau = T$); Remark 2.1.8 prints 1."""
    eig = np.linalg.eigvalsh(second_moments(params)[0].astype(float))
    return int((eig > rtol * eig.max()).sum())
