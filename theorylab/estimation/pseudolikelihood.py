"""Masked pseudolikelihood (k-PL, weighted and adaptive MPLE) for finite exponential families, exactly.

Population loss (Def 4.1.2 of ``003_69b23422e33c905a.txt``; one mask per sequence, $K\\sim p_{\\mathcal K}(\\cdot\\mid X)$):
$L(\\theta)=\\mathbb E_{X\\sim p_{\\mathcal X}}\\mathbb E_{K}[-\\log p_\\theta(X_K\\mid X_{-K},K)]$. For
$p_\\theta\\propto e^{\\theta^\\top T}$: score $s=T(x)-\\mathbb E_\\theta[T\\mid x_{-K},K]$, Hessian
$H=\\mathbb E_{X,K}\\mathrm{Cov}_\\theta(T\\mid X_{-K},K)$; k-PL takes $K$ uniform over k-subsets, $k=N$ is MLE
($H_N=\\mathcal I=\\mathrm{Cov}(T)$). Asymptotic covariance (Lemma 4.1.1): $\\Gamma=H^{-1}\\mathrm{Cov}(s)H^{-1}$, equal
to $H^{-1}$ under realizability (Lemma 4.1.2). Thm 4.1.1's mechanism: $H_{k+1}=H_k+C_k$ with
$C_k=\\mathbb E_{S,a\\notin S}\\mathbb E_x[gg^\\top]\\succeq0$, $g=\\mathbb E[T\\mid x_{-S}]-\\mathbb E[T\\mid x_{-(S\\cup a)}]$.

``model`` arguments are an :class:`~theorylab.ising.IsingModel` (full pairwise family, natural parameters) or a
pair ``(family, theta)`` with a :class:`~theorylab.ising.FiniteExpFamily`.
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import combinations
from math import comb

import numpy as np

from theorylab.ising.expfam import FiniteExpFamily, MaskLaw, k_masks, mask_law

ESTIMATORS = ("single_mask", "all_masks")
#: A Hessian whose smallest eigenvalue is below this fraction of its largest is singular: the statistics are affinely
#: dependent (e.g. a repeated column, exactly singular up to round-off ~1e-16 relative); identifiable random models
#: in the checks reach condition numbers ~1e7, far from it.
SINGULAR_TOL = 1e-12


def _resolve(model) -> tuple[FiniteExpFamily, np.ndarray]:
    if isinstance(model, tuple) and len(model) == 2 and isinstance(model[0], FiniteExpFamily):
        return model[0], model[0]._theta(model[1])
    if hasattr(model, "exp_family") and hasattr(model, "natural_parameters"):
        return model.exp_family(), model.natural_parameters()
    raise TypeError("model must be an IsingModel or a pair (FiniteExpFamily, theta)")


def _data(fam: FiniteExpFamily, theta: np.ndarray, data) -> np.ndarray:
    if data is None:
        return fam.probs(theta)
    p = np.asarray(data, dtype=float)
    if p.shape != (fam.T.shape[0],):
        raise ValueError(
            f"the data law must be a probability vector over the {fam.T.shape[0]} states, got {p.shape}"
        )
    if not np.all(np.isfinite(p)) or p.min() < 0 or abs(p.sum() - 1) > 1e-10:
        raise ValueError("the data law must be nonnegative and sum to 1")
    return p


@dataclass
class PLParts:
    loss: float
    grad: np.ndarray
    hessian: np.ndarray
    score_cov: np.ndarray  # E_{X,K}[s s^T] (single mask)
    mean_score_cov: np.ndarray  # Cov_X(E_K s) (all masks)


def pl_parts(model, masks, data=None) -> PLParts:
    """Loss, gradient, Hessian and score covariances of the population PL loss under ``data`` (default: the model)."""
    fam, theta = _resolve(model)
    law = mask_law(fam.N, masks)
    if law.adaptive and law.weights.shape[0] != fam.T.shape[0]:
        raise ValueError(
            f"an adaptive mask law needs one row p_K(. | x) per state ({fam.T.shape[0]}), "
            f"got {law.weights.shape[0]}"
        )
    px = _data(fam, theta, data)
    logp = fam.log_probs(theta)
    d = fam.d
    loss, grad = 0.0, np.zeros(d)
    H, V = np.zeros((d, d)), np.zeros((d, d))
    Es = np.zeros((fam.T.shape[0], d))
    for m, K in enumerate(law.masks):
        wK = law.weights[:, m] if law.adaptive else np.full(fam.T.shape[0], law.weights[m])
        if not wK.any():
            continue
        st = fam.group_stats(theta, K, wK if law.adaptive else None)
        joint = px * wK  # P(X = x, K)
        s = fam.T - st.mean[st.index]
        on = joint > 0
        # -log p(x_K | x_-K, K) = -(log p(x) + log w(K|x)) + log sum_{z in group} p(z) w(K|z)
        logw = np.log(np.where(wK > 0, wK, 1.0)) if law.adaptive else 0.0
        lognum = logp + logw
        logden = np.log(np.where(st.weight > 0, st.weight, 1.0))[st.index]
        loss -= float(joint[on] @ (lognum - logden)[on])
        grad -= joint @ s
        gw = np.bincount(st.index, weights=joint, minlength=st.weight.size)
        H += np.einsum("g,gij->ij", gw, st.cov)
        V += (s * joint[:, None]).T @ s
        Es += wK[:, None] * s
    m = px @ Es
    Vavg = (Es * px[:, None]).T @ Es - np.outer(m, m)
    return PLParts(loss, grad, H, V - np.outer(grad, grad), Vavg)


def pl_loss(model, masks, data=None) -> float:
    """Population (or, with an empirical ``data`` law, empirical) PL loss $\\mathbb E[-\\log p_\\theta(X_K\\mid X_{-K},K)]$."""
    return pl_parts(model, masks, data).loss


def H_k(model, k, data=None) -> np.ndarray:
    """Hessian of the k-PL population loss, $\\mathbb E_K\\mathbb E_{x}\\mathrm{Cov}_\\theta(T\\mid x_{-K})$ (``k`` may be a
    mask law)."""
    return pl_parts(model, k, data).hessian


def information_matrix(model) -> np.ndarray:
    """Fisher information $\\mathcal I=\\mathrm{Cov}_\\theta(T)=H_N$."""
    fam, theta = _resolve(model)
    return fam.information_matrix(theta)


def C_k(model, k: int) -> np.ndarray:
    """The increment $C_k$ of Thm 4.1.1's proof (realizable case): $H_{k+1}=H_k+C_k$, $1\\le k<N$."""
    fam, theta = _resolve(model)
    if not 1 <= k < fam.N:
        raise ValueError(f"C_k needs 1 <= k < N = {fam.N}, got {k}")
    p = fam.probs(theta)
    C = np.zeros((fam.d, fam.d))
    n_terms = comb(fam.N, k) * (fam.N - k)
    cache: dict[tuple[int, ...], np.ndarray] = {}

    def cond_mean(K: tuple[int, ...]) -> np.ndarray:
        if K not in cache:
            st = fam.group_stats(theta, K)
            cache[K] = st.mean[st.index]
        return cache[K]

    for S in combinations(range(fam.N), k):
        for a in range(fam.N):
            if a in S:
                continue
            g = cond_mean(S) - cond_mean(tuple(sorted(S + (a,))))
            C += (g * p[:, None]).T @ g
    return C / n_terms


def fit_population(model, masks, data, *, tol: float = 1e-10, max_iter: int = 100) -> np.ndarray:
    """$\\theta^*=\\arg\\min_\\theta L(\\theta)$ under ``data`` by damped Newton (the loss is convex, Prop 4.3.6).

    Stops when the gradient is below ``tol`` (max norm) or the Newton decrement reaches round-off (1e-24)."""
    fam, theta = _resolve(model)
    theta = theta.copy()
    for _ in range(max_iter):
        parts = pl_parts((fam, theta), masks, data)
        step = np.linalg.lstsq(parts.hessian, parts.grad, rcond=None)[0]
        decrement = float(parts.grad @ step)
        if np.abs(parts.grad).max() < tol or decrement < 1e-24:
            return theta
        t = 1.0
        while t > 1e-8 and pl_loss((fam, theta - t * step), masks, data) > parts.loss - 1e-4 * t * decrement:
            t /= 2
        theta = theta - t * step
    if np.abs(pl_parts((fam, theta), masks, data).grad).max() > 1e-8:
        raise RuntimeError("Newton did not converge")
    return theta


def asymptotic_covariance(model, k, estimator: str = "single_mask", misspecified_data=None) -> np.ndarray:
    """$\\Gamma^k$: limit covariance of $\\sqrt n(\\hat\\theta_k-\\theta^*_k)$.

    ``single_mask`` (the theorem's estimator, one random mask per sample): $H^{-1}\\mathrm{Cov}_{X,K}(s)H^{-1}$;
    ``all_masks`` (average the loss over all masks of each sample): $H^{-1}\\mathrm{Cov}_X(\\mathbb E_Ks)H^{-1}$. With
    ``misspecified_data`` (a law over the states not in the family) $\\theta^*_k$ is refitted under it and the
    sandwich is returned; otherwise the model is the data and $\\theta^*=\\theta$.
    """
    if estimator not in ESTIMATORS:
        raise ValueError(f"estimator must be one of {ESTIMATORS}, got {estimator!r}")
    fam, theta = _resolve(model)
    if misspecified_data is not None:
        theta = fit_population((fam, theta), k, misspecified_data)
    parts = pl_parts((fam, theta), k, misspecified_data)
    eig = np.linalg.eigvalsh(parts.hessian)
    if eig[0] <= SINGULAR_TOL * max(eig[-1], np.finfo(float).tiny):
        raise ValueError(
            "the Hessian of the PL loss at theta* is singular (theta is not identifiable): Lemma 4.3.9 needs "
            f"a positive definite Hessian (eigenvalues {eig[0]:.3g} .. {eig[-1]:.3g})"
        )
    Hinv = np.linalg.inv(parts.hessian)
    V = parts.score_cov if estimator == "single_mask" else parts.mean_score_cov
    G = Hinv @ V @ Hinv
    return (G + G.T) / 2


def fit_kpl(
    samples, k, model=None, *, method: str = "newton", masks_per_sample=None, seed: int = 0
) -> np.ndarray:
    """Fit k-PL to ±1 ``samples`` (shape (n, N)) in the full pairwise Ising family (or ``model``'s family).

    Each sample gets one uniform random k-mask (the single-mask estimator of Def 4.1.2; ``masks_per_sample`` can
    pass them explicitly as indices into ``k_masks(N, k)``). ``method``: ``newton`` (exact minimiser of the convex
    empirical loss) or ``gd`` (full-batch gradient descent, step 1/lambda_max).
    """
    X = np.asarray(samples)
    if X.ndim != 2 or X.shape[0] == 0:
        raise ValueError(f"samples must have shape (n, N), got {X.shape}")
    if not np.isin(X, (-1, 1)).all():
        raise ValueError("samples must be ±1 spins")
    N = X.shape[1]
    if model is None:
        from theorylab.ising.model import IsingModel

        model = IsingModel(np.zeros(N), np.zeros((N, N)))
    fam, theta0 = _resolve(model)
    ms = k_masks(N, int(k))
    rng = np.random.default_rng(seed)
    idx = rng.integers(len(ms), size=X.shape[0]) if masks_per_sample is None else np.asarray(masks_per_sample)
    state = ((X + 1) // 2) @ (2 ** np.arange(N - 1, -1, -1))
    joint = np.zeros((fam.T.shape[0], len(ms)))
    np.add.at(joint, (state, idx), 1.0)
    joint /= X.shape[0]
    # single-mask empirical loss = adaptive-law loss with data p(x) and law p(K | x) = joint / p(x)
    px = joint.sum(axis=1)
    w = np.where(px[:, None] > 0, joint / np.where(px > 0, px, 1)[:, None], 1.0 / len(ms))
    # the empirical (state, mask) frequencies; the model's conditional ignores them (masks are independent of X)
    law = MaskLaw(tuple(ms), w)
    return _fit_joint(fam, theta0, law, px, method)


def _fit_joint(
    fam: FiniteExpFamily, theta: np.ndarray, law: MaskLaw, px: np.ndarray, method: str
) -> np.ndarray:
    def parts(th):
        loss, grad, H = 0.0, np.zeros(fam.d), np.zeros((fam.d, fam.d))
        logp = fam.log_probs(th)
        for m, K in enumerate(law.masks):
            joint = px * law.weights[:, m]
            if not joint.any():
                continue
            st = fam.group_stats(th, K)
            s = fam.T - st.mean[st.index]
            on = joint > 0
            loss -= float(joint[on] @ (logp - np.log(st.weight)[st.index])[on])
            grad -= joint @ s
            H += np.einsum(
                "g,gij->ij", np.bincount(st.index, weights=joint, minlength=st.weight.size), st.cov
            )
        return loss, grad, H

    if method == "newton":
        for _ in range(100):
            loss, grad, H = parts(theta)
            step = np.linalg.lstsq(H, grad, rcond=None)[0]
            decrement = float(grad @ step)
            if np.abs(grad).max() < 1e-11 or decrement < 1e-24:
                break
            t = 1.0
            while t > 1e-8 and parts(theta - t * step)[0] > loss - 1e-4 * t * decrement:
                t /= 2
            theta = theta - t * step
        return theta
    if method == "gd":
        _, _, H = parts(theta)
        lr = 1.0 / max(np.linalg.eigvalsh(H)[-1], 1e-12)
        for _ in range(20000):
            _, grad, _ = parts(theta)
            if np.abs(grad).max() < 1e-9:
                break
            theta = theta - lr * grad
        return theta
    raise ValueError(f"method must be 'newton' or 'gd', got {method!r}")
