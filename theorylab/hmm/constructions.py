"""Random parameters and the non-identifiable pairs of §2.2 (Theorems 4, 6, 8, Claim 1, Lemma 7, example 2.47).

Notation: $J=\\mathbb 1\\mathbb 1^\\top$, $P$ the cyclic shift ($Pe_1=e_2$, $Pe_2=e_3$, $Pe_3=e_1$).

* Rotation pairs (Theorem 6 and more): for any orthogonal $R$ with $R\\mathbb 1=\\mathbb 1$, $(\\tilde
  O,\\tilde T)=(OR,R^\\top TR)$ has $\\tilde\\phi=R^\\top\\phi$, so every pairwise predictor $\\tilde O\\tilde
  T^{s}\\tilde\\phi=OT^s\\phi$ (and with $T^\\top$) matches, at every gap, in both directions.
* Claim 1: $T=aI+(1-a)P$, $Q(\\theta)=M^{-1}R(\\theta)^{-1}M$ (a rotation about $\\mathbb 1$, circulant),
  $\\tilde T=Q(2\\pi/t)T$ has $\\tilde T^t=T^tQ^t=T^t$.
* Theorem 8 case 2 (false as printed): if $M^\\top M\\mathbb 1\\propto\\mathbb 1$ and $T\\le 2/k$ entrywise,
  then $(\\tilde M,\\tilde T)=(M(I-\\tfrac2kJ),\\tfrac2kJ-T)$ gives $\\tilde M\\tilde T=-MT$, $\\tilde
  M\\tilde T^\\top=-MT^\\top$, $\\phi_{\\tilde M}=\\phi_M$, hence the same $x_1\\otimes x_3\\mid x_2$
  predictor.
"""

from __future__ import annotations

import numpy as np

from theorylab._fmt import plain
from theorylab.hmm.models import GHMM, HMM

__all__ = [
    "sinkhorn",
    "random_emission",
    "random_doubly_stochastic",
    "random_unit_means",
    "random_hmm",
    "random_ghmm",
    "rotation_fixing_ones",
    "rodrigues_about_ones",
    "rotation_pair",
    "claim1_rotation",
    "claim1_pair",
    "theorem4_pair",
    "theorem6_pair",
    "example_247",
    "householder",
    "householder_pair",
    "lemma7_pair",
    "theorem8_case2_pair",
    "cyclic_shift",
]

EXAMPLE_247 = {
    "O": [
        [0.23016003, 0.3549092, 0.16493077],
        [0.30716059, 0.06962305, 0.37321636],
        [0.2580854, 0.26965425, 0.22226035],
        [0.20459398, 0.3058135, 0.23959252],
    ],
    "O_tilde": [
        [0.24120928, 0.35062535, 0.15816537],
        [0.28937626, 0.07433156, 0.38629218],
        [0.26077674, 0.26749114, 0.22173212],
        [0.20863772, 0.30755194, 0.23381033],
    ],
    "T": [
        [0.56893146, 0.35811118, 0.07295736],
        [0.35811118, 0.10805638, 0.53383243],
        [0.07295736, 0.53383243, 0.39321021],
    ],
    "T_tilde": [
        [0.59740926, 0.30452087, 0.09806987],
        [0.30452087, 0.1331689, 0.56231024],
        [0.09806987, 0.56231024, 0.33961989],
    ],
}
EXAMPLE_247_TOL = 1e-7  # the printed matrices are rounded to 8 digits


def cyclic_shift(k: int = 3) -> np.ndarray:
    """$P$ with $Pe_i=e_{i+1}$ (indices mod k)."""
    return np.roll(np.eye(k), 1, axis=0)


def sinkhorn(U, iters: int = 5000, tol: float = 1e-14) -> np.ndarray:
    """Alternate row / column normalization of a positive matrix until doubly stochastic to ``tol``."""
    X = np.array(U, dtype=float)
    if X.ndim != 2 or X.shape[0] != X.shape[1] or np.any(X <= 0):
        raise ValueError("sinkhorn needs a square matrix with positive entries")
    cols = X.sum(axis=0, keepdims=True)
    for _ in range(iters):
        X /= cols
        X /= X.sum(axis=1, keepdims=True)
        cols = X.sum(axis=0, keepdims=True)  # tested here, divided by in the next sweep
        if np.max(np.abs(cols - 1)) < tol:
            break
    return X


def _check_sizes(**sizes) -> None:
    for name, n in sizes.items():
        if not isinstance(n, int | np.integer) or isinstance(n, bool) or n < 1:
            raise ValueError(f"{name} must be a positive int, got {plain(n)}")


def random_emission(
    d: int, k: int, rng: np.random.Generator, alpha: float = 1.0, max_cond: float = 1e3
) -> np.ndarray:
    """Column-stochastic $O$ with Dirichlet($\\alpha$) columns, redrawn until cond(O) <= max_cond and all row
    sums >= 1e-3 (Assumptions 6, 7 with margin)."""
    _check_sizes(d=d, k=k)
    for _ in range(1000):
        O = rng.dirichlet(np.full(d, alpha), size=k).T
        if np.linalg.cond(O) <= max_cond and O.sum(axis=1).min() >= 1e-3:
            return O
    raise RuntimeError("could not draw a well-conditioned emission matrix")


def random_doubly_stochastic(
    k: int, rng: np.random.Generator, lam: tuple[float, float] = (0.3, 0.7), min_sv: float = 0.05
) -> np.ndarray:
    """$T=\\lambda\\Pi+(1-\\lambda)\\,\\mathrm{Sinkhorn}(U)$ with a random permutation $\\Pi$ (plain Sinkhorn of
    a uniform matrix is nearly $J/k$ and ill-conditioned); redrawn until $\\sigma_{\\min}(T)\\ge$
    ``min_sv``."""
    _check_sizes(k=k)
    for _ in range(1000):
        lam_ = rng.uniform(*lam)
        T = lam_ * np.eye(k)[rng.permutation(k)] + (1 - lam_) * sinkhorn(rng.random((k, k)) + 1e-3)
        T = sinkhorn(T)
        if np.linalg.svd(T, compute_uv=False)[-1] >= min_sv:
            return T
    raise RuntimeError("could not draw a well-conditioned doubly stochastic matrix")


def random_unit_means(
    d: int, k: int, rng: np.random.Generator, max_cond: float = 100.0, min_gap: float = 0.2
):
    """Unit-norm Gaussian columns, redrawn until cond(M) <= max_cond and all pairwise distances >= min_gap."""
    for _ in range(1000):
        M = rng.standard_normal((d, k))
        M /= np.linalg.norm(M, axis=0)
        gaps = np.linalg.norm(M[:, :, None] - M[:, None, :], axis=0) + 10 * np.eye(k)
        if np.linalg.cond(M) <= max_cond and gaps.min() >= min_gap:
            return M
    raise RuntimeError("could not draw well-separated unit means")


def random_hmm(d: int, k: int, rng: np.random.Generator, alpha: float = 1.0) -> HMM:
    return HMM(random_emission(d, k, rng, alpha), random_doubly_stochastic(k, rng))


def random_ghmm(d: int, k: int, rng: np.random.Generator) -> GHMM:
    return GHMM(random_unit_means(d, k, rng), random_doubly_stochastic(k, rng))


# ---------------------------------------------------------------- rotations about the all-ones vector


def rotation_fixing_ones(
    k: int, theta: float, rng: np.random.Generator | None = None, skew=None
) -> np.ndarray:
    """$R=\\exp(\\theta VAV^\\top)$: orthogonal, $R\\mathbb 1=\\mathbb 1$, $\\mathbb 1^\\top R=\\mathbb 1^\\top$
    ($V$ an orthonormal basis of $\\mathbb 1^\\perp$, $A$ skew-symmetric with $\\|A\\|_2=1$, random unless
    ``skew`` given)."""
    if k < 3:
        raise ValueError("a non-permutation rotation fixing the all-ones vector needs k >= 3")
    from scipy.linalg import expm, null_space  # lazy import

    V = null_space(np.ones((1, k)))
    if skew is None:
        rng = np.random.default_rng(0) if rng is None else rng
        G = rng.standard_normal((k - 1, k - 1))
        skew = G - G.T
    A = np.asarray(skew, dtype=float)
    if A.shape != (k - 1, k - 1) or not np.allclose(A, -A.T):
        raise ValueError(f"skew must be a skew-symmetric ({k - 1} x {k - 1}) matrix")
    A = A / np.linalg.norm(A, 2)
    return expm(theta * V @ A @ V.T)


def rodrigues_about_ones(theta: float) -> np.ndarray:
    """Rotation of $\\mathbb R^3$ by ``theta`` about $n=(1,1,1)/\\sqrt3$:
    $I+\\sin\\theta[n]_\\times+(1-\\cos\\theta)[n]_\\times^2$."""
    n = np.ones(3) / np.sqrt(3)
    K = np.array([[0, -n[2], n[1]], [n[2], 0, -n[0]], [-n[1], n[0], 0]])
    return np.eye(3) + np.sin(theta) * K + (1 - np.cos(theta)) * K @ K


def rotation_pair(model: HMM, R, validate: bool = True) -> HMM:
    """$(OR, R^\\top TR)$ for orthogonal $R$ with $R\\mathbb 1=\\mathbb 1$ (the Theorem 6 family)."""
    R = np.asarray(R, dtype=float)
    k = model.k
    if R.shape != (k, k):
        raise ValueError(f"R must be {k} x {k}")
    if not np.allclose(R @ R.T, np.eye(k), atol=1e-12) or not np.allclose(R @ np.ones(k), 1, atol=1e-12):
        raise ValueError("R must be orthogonal with R 1 = 1")
    return HMM(model.O @ R, R.T @ model.T @ R, validate=validate)


def theorem6_pair(model: HMM | None = None, rng: np.random.Generator | None = None, theta: float = 0.3):
    """A valid pair $(O,T)$, $(OR,R^\\top TR)$ with a random rotation about $\\mathbb 1$ (the angle is halved
    from ``theta`` until $\\tilde O,\\tilde T\\ge0$). Default model: d=4, k=3, strictly positive."""
    rng = np.random.default_rng(6) if rng is None else rng
    if model is None:
        model = HMM(random_emission(4, 3, rng, alpha=5.0), random_doubly_stochastic(3, rng, min_sv=0.2))
    G = rng.standard_normal((model.k - 1, model.k - 1))
    for _ in range(60):
        R = rotation_fixing_ones(model.k, theta, skew=G - G.T)
        O2, T2 = model.O @ R, R.T @ model.T @ R
        if O2.min() > 0 and T2.min() > 0:
            return model, HMM(O2, T2)
        theta /= 2
    raise ValueError("no admissible rotation angle: O or T has zero entries")


# ---------------------------------------------------------------- Claim 1 / Claim 3: matrix powers

_M_CLAIM3 = np.array([[1, -0.5, -0.5], [0, -np.sqrt(3) / 2, np.sqrt(3) / 2], [1 / np.sqrt(2)] * 3])


def claim1_rotation(theta: float) -> np.ndarray:
    """$Q(\\theta)=M^{-1}R(\\theta)^{-1}M$ of the proof of Claim 3 (a circulant rotation about $\\mathbb
    1$)."""
    c, s = np.cos(theta), np.sin(theta)
    Rinv = np.array([[c, s, 0], [-s, c, 0], [0, 0, 1]])
    return np.linalg.solve(_M_CLAIM3, Rinv @ _M_CLAIM3)


def claim1_pair(t: int, a: float = 0.5) -> tuple[np.ndarray, np.ndarray]:
    """$T=aI+(1-a)P$ and $\\tilde T=Q(2\\pi/t)T$ with $\\tilde T^t=T^t$, $\\tilde T\\ne T$ (needs $t\\ge2$; at
    $t=1$, $Q=I$). Raises if $\\tilde T$ has negative entries (never for $a=1/2$)."""
    if int(t) != t or t < 2:
        raise ValueError(f"Claim 1 needs an integer t >= 2 (t = 1 gives T~ = T), got {t}")
    if not 0 <= a <= 1:
        raise ValueError("a must lie in [0, 1]")
    T = a * np.eye(3) + (1 - a) * cyclic_shift(3)
    T2 = claim1_rotation(2 * np.pi / t) @ T
    T2[np.abs(T2) < 1e-15] = 0.0
    if T2.min() < 0:
        raise ValueError(f"T~ has negative entries for a = {a}, t = {t}; use a = 1/2")
    return T, T2


def theorem4_pair(t: int = 2, d: int = 4) -> tuple[HMM, HMM]:
    """Two HMMs with equal $x_t\\mid x_1$ predictors that are not relabelings (Theorem 4).

    $t=2$: the rotation pair $(OR,R^\\top TR)$; $t\\ge3$: $\\tilde O=O$ and $T,\\tilde T$ from Claim 1 with
    power $t-1$ (the predictor is $OT^{t-1}\\phi$)."""
    if int(t) != t or t < 2:
        raise ValueError(f"Theorem 4 is about t >= 2, got {t}")
    rng = np.random.default_rng(4)
    O = random_emission(d, 3, rng, alpha=5.0)
    if t == 2:
        base = HMM(O, 0.5 * np.eye(3) + 0.3 * cyclic_shift(3) + 0.2 * cyclic_shift(3).T)
        return theorem6_pair(base, rng)
    T, T2 = claim1_pair(t - 1)
    return HMM(O, T), HMM(O, T2)


def example_247(exact: bool = False) -> tuple[HMM, HMM]:
    """The printed example (2.47) (8-digit data; checks need tolerance ``EXAMPLE_247_TOL``), or with ``exact``
    the same pair rebuilt as $(OQ, Q^\\top TQ)$ with $Q$ the rotation by +0.1 rad about $(1,1,1)/\\sqrt3$."""
    O, T = np.array(EXAMPLE_247["O"]), np.array(EXAMPLE_247["T"])
    if exact:
        O = O - (O.sum(axis=0) - 1) / O.shape[0]  # remove the 1e-8 rounding of the column sums
        T = sinkhorn(T)
        T = (T + T.T) / 2  # still doubly stochastic; removes the rounding of the printed digits
        Q = rodrigues_about_ones(0.1)
        return HMM(O, T), HMM(O @ Q, Q.T @ T @ Q)
    tol = EXAMPLE_247_TOL
    return HMM(O, T, tol=tol), HMM(
        np.array(EXAMPLE_247["O_tilde"]), np.array(EXAMPLE_247["T_tilde"]), tol=tol
    )


# ---------------------------------------------------------------- G-HMM: Householder, Lemma 7, Theorem 8


def householder(M) -> np.ndarray:
    """$H=I-2\\hat v\\hat v^\\top$, $\\hat v\\propto(M^\\dagger)^\\top\\mathbb 1$ (Lemma 7)."""
    M = np.asarray(M, dtype=float)
    if M.ndim != 2 or M.size == 0:
        raise ValueError(f"M must be a non-empty d x k matrix, got shape {M.shape}")
    if not np.all(np.isfinite(M)):
        raise ValueError("M contains NaN or infinite entries")
    u = np.linalg.pinv(M).T @ np.ones(M.shape[1])
    v = u / np.linalg.norm(u)
    return np.eye(M.shape[0]) - 2 * np.outer(v, v)


def householder_pair(model: GHMM) -> GHMM:
    """The signed partner $(HM, M^\\dagger HMT)$: same posterior and same $x_2\\mid x_1$ predictor, but $\\mathbb
    1^\\top\\tilde T=-\\mathbb 1^\\top$, so it violates Assumption 5 (returned unvalidated)."""
    HM = householder(model.M) @ model.M
    return GHMM(HM, np.linalg.pinv(HM) @ model.M @ model.T, norm=model.norm, validate=False)


def lemma7_pair(model: GHMM, c: float | None = None, w=None) -> GHMM:
    """For $d>k$: $\\tilde M=M-v\\mathbb 1^\\top$ with $v=cu+\\sqrt{2c-c^2\\|u\\|^2}\\,w$,
    $u=(M^\\dagger)^\\top\\mathbb 1$, $w\\perp\\mathrm{col}(M)$ a unit vector, $c\\in(0,2/\\|u\\|^2)$:
    unit-norm means with $\\phi_{\\tilde M}=\\phi_M$ but $\\tilde M\\notin\\{M,HM\\}$ (Lemma 7 as printed
    fails). Returns the model with the same $T$."""
    M = model.M
    d, k = M.shape
    if d <= k:
        raise ValueError("the Lemma 7 counterexample needs d > k (an orthogonal direction to col(M))")
    u = np.linalg.pinv(M).T @ np.ones(k)
    uu = float(u @ u)
    c = 1.0 / uu if c is None else float(c)
    if not 0 < c < 2 / uu:
        raise ValueError(f"c must lie in (0, 2/|u|^2) = (0, {2 / uu:.4g})")
    if w is None:
        from scipy.linalg import null_space  # lazy import

        w = null_space(M.T)[:, 0]
    w = np.asarray(w, dtype=float)
    w = w - M @ np.linalg.lstsq(M, w, rcond=None)[0]
    w /= np.linalg.norm(w)
    v = c * u + np.sqrt(2 * c - c * c * uu) * w
    return GHMM(M - np.outer(v, np.ones(k)), model.T, norm=model.norm)


def theorem8_case2_pair(model: GHMM) -> GHMM:
    """$(M(I-\\tfrac2kJ),\\ \\tfrac2kJ-T)$, valid and with the same $x_1\\otimes x_3\\mid x_2$ predictor when
    $M^\\top M\\mathbb 1\\propto\\mathbb 1$ and $\\max T_{ij}\\le 2/k$ (always the case for $k=2$)."""
    M, T = model.M, model.T
    k = model.k
    g = M.T @ M @ np.ones(k)
    if np.max(np.abs(g - g.mean())) > 1e-10:
        raise ValueError("needs M^T M 1 proportional to 1 (e.g. orthonormal or equiangular means, or k = 2)")
    if T.max() > 2 / k + 1e-12:
        raise ValueError(f"needs all entries of T <= 2/k = {2 / k:.4g} (max is {T.max():.4g})")
    J = np.ones((k, k))
    return GHMM(M @ (np.eye(k) - 2 * J / k), 2 * J / k - T, norm=model.norm)
