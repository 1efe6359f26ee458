"""How far from a G-HMM a fitted model with a given predictor error can be: the basin radius of the trained
experiment E5, derived from the instance instead of calibrated on one.

For a task $t$ with optimal predictor $f_\\theta$ the population excess of a candidate $\\theta$ over the truth
$\\theta^*$ is the predictor error $\\varepsilon(\\theta)=\\mathbb E_x\\|f_\\theta(x)-f_{\\theta^*}(x)\\|_F^2$ (squared
loss: the truth's predictor is the conditional mean). To second order
$\\varepsilon(\\theta^*+\\delta)=\\delta^\\top G\\delta$ with $G=\\mathbb E_x[J(x)^\\top J(x)]$, $J=\\partial f/\\partial(M,T)$, and
$\\delta$ in the tangent space of the parameter set (columns of $M$ of fixed norm, $T$ doubly stochastic). With
$\\mu$ the smallest eigenvalue of $G$ there, every entry of $\\delta$ is at most
$\\|\\delta\\|_2\\le\\sqrt{\\varepsilon/\\mu}$: a model in the basin of $\\theta^*$ with predictor error $\\varepsilon$ lies
within $\\sqrt{\\varepsilon/\\mu}$ of it (max abs entry). torch is imported inside the functions.
"""

from __future__ import annotations

import numpy as np

from theorylab._extras import require
from theorylab.hmm.models import GHMM

__all__ = [
    "basin_radius",
    "ghmm_predictor_error",
    "ghmm_tangent_curvatures",
    "ghmm_tangent_moments",
    "statistical_floor",
]


def _triples(model: GHMM, task: str, n: int, seed: int):
    """(given points, target outer products, canonical task) of ``n`` sampled stationary triples of ``model``."""
    from theorylab.hmm.fitting import _check_task, _ghmm_batch

    if not isinstance(model, GHMM):
        raise TypeError(f"model must be a GHMM, got {type(model).__name__}")
    if int(n) != n or n < 2:
        raise ValueError(f"n must be an integer >= 2, got {n}")
    task = _check_task(task, ("x1x3|x2", "x2x3|x1"))
    X, Y = _ghmm_batch(model, np.random.default_rng(seed), int(n), task)
    return X, Y, task


def ghmm_predictor_error(
    model: GHMM, candidates, task: str, n: int = 50_000, seed: int = 4321
) -> tuple[np.ndarray, np.ndarray]:
    """Monte Carlo $\\varepsilon_c=\\mathbb E_x\\|f_c(x)-f_{model}(x)\\|_F^2$ over ``n`` stationary given points of
    ``model`` (no target noise, so $\\ge0$) and its standard error, for each candidate."""
    torch = require("torch", extra="trained")
    from theorylab.hmm.fitting import _torch_ghmm_predictor

    X, _, task = _triples(model, task, n, seed)
    X = torch.tensor(X)

    def f(models):
        M, T = (torch.tensor(np.stack([getattr(m, a) for m in models])) for a in ("M", "T"))
        return _torch_ghmm_predictor(torch, M, T, X, task)

    with torch.no_grad():
        ref = f([model])
        sq = np.concatenate([((f([c]) - ref) ** 2).sum(dim=(2, 3)).numpy() for c in candidates])
    return sq.mean(axis=1), sq.std(axis=1, ddof=1) / np.sqrt(sq.shape[1])


def _tangent_basis(M: np.ndarray, k: int) -> np.ndarray:
    """Orthonormal basis of the tangent space at (M, T) of {columns of M of fixed norm} x {doubly stochastic T},
    in the coordinates (M.ravel(), T.ravel())."""
    d = M.shape[0]
    rows = []
    for j in range(k):  # m_j . dm_j = 0
        v = np.zeros(d * k + k * k)
        v[np.arange(d) * k + j] = M[:, j]
        rows.append(v)
    for i in range(k):  # row and column sums of dT vanish
        r, c = np.zeros(d * k + k * k), np.zeros(d * k + k * k)
        r[d * k + i * k : d * k + (i + 1) * k] = 1
        c[d * k + np.arange(k) * k + i] = 1
        rows += [r, c]
    _, s, vt = np.linalg.svd(np.array(rows))
    return vt[int((s > 1e-10 * s[0]).sum()) :].T


def ghmm_tangent_moments(
    model: GHMM, task: str, n: int = 50_000, seed: int = 4321
) -> tuple[np.ndarray, np.ndarray]:
    """$(G, V)$ on the tangent space of the parameter set at ``model`` (orthonormal basis): $G=\\mathbb E[J^\\top J]$
    ($\\varepsilon\\approx\\delta^\\top G\\delta$) and $V=\\mathbb E[J^\\top rr^\\top J]$, $r=x\\otimes x'-f(x)$ the target
    noise (Monte Carlo over ``n`` sampled triples). The least-squares fit on $N$ fresh triples has expected
    predictor error $\\mathrm{tr}(G^{-1}V)/N$ (its covariance is $G^{-1}VG^{-1}/N$): the statistical floor."""
    torch = require("torch", extra="trained")
    from theorylab.hmm.fitting import _torch_ghmm_predictor

    X, Y, task = _triples(model, task, n, seed)
    d, k = model.M.shape
    p0 = torch.tensor(np.concatenate([model.M.ravel(), model.T.ravel()]))
    G, V = np.zeros((d * k + k * k,) * 2), np.zeros((d * k + k * k,) * 2)
    for idx in np.array_split(np.arange(len(X)), max(1, len(X) // 10_000)):
        Xc = torch.tensor(X[idx])

        def f(p, Xc=Xc):
            M, T = p[: d * k].reshape(1, d, k), p[d * k :].reshape(1, k, k)
            return _torch_ghmm_predictor(torch, M, T, Xc, task)[0].reshape(len(Xc), -1)

        J = torch.func.jacfwd(f)(p0)  # (n, d*d, params)
        r = torch.tensor(Y[idx].reshape(len(idx), -1)) - f(p0)
        g = torch.einsum("nop,no->np", J, r).numpy()
        G += torch.einsum("nop,noq->pq", J, J).numpy()
        V += g.T @ g
    Q = _tangent_basis(model.M, k)
    return Q.T @ (G / len(X)) @ Q, Q.T @ (V / len(X)) @ Q


def ghmm_tangent_curvatures(model: GHMM, task: str, n: int = 50_000, seed: int = 4321) -> np.ndarray:
    """Eigenvalues (ascending) of $G$ on the tangent space at ``model`` (:func:`ghmm_tangent_moments`)."""
    return np.linalg.eigvalsh(ghmm_tangent_moments(model, task, n, seed)[0])


def statistical_floor(G: np.ndarray, V: np.ndarray, n_samples: int) -> float:
    """$\\mathrm{tr}(G^{-1}V)/N$: the expected predictor error of the least-squares fit on ``n_samples`` triples."""
    if int(n_samples) != n_samples or n_samples < 1:
        raise ValueError(f"n_samples must be a positive integer, got {n_samples}")
    return float(np.trace(np.linalg.solve(G, V)) / n_samples)


def basin_radius(error, mu: float) -> np.ndarray:
    """$\\sqrt{\\varepsilon/\\mu}$: the largest max-abs distance (to second order) at which a model in the basin
    can have predictor error ``error``, given the basin's smallest tangent curvature ``mu`` > 0."""
    if not mu > 0:
        raise ValueError(f"mu must be a positive curvature, got {mu}")
    error = np.asarray(error, dtype=float)
    if np.any(error < 0):
        raise ValueError("predictor errors must be >= 0")
    return np.sqrt(error / mu)
