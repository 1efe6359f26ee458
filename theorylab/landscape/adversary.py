"""The meta-learning adversary of A.4 of ``000_7523275b422019f8.txt`` (after Liu et al. 2020).

Two disjoint downstream batches $D_1,D_2$; the head is the ridge solution on $D_1$,
$\\hat\\phi(H_1)=(H_1^\\top H_1+\\rho I)^{-1}H_1^\\top Y_1$ (labels one-hot or $\\pm1$, squared loss), and the
representation minimises $L(\\psi)-\\lambda V$ with the validation loss $V=\\tfrac1{|D_2|}\\|H_2\\hat\\phi-Y_2\\|_F^2$
(``adversary_objective``). Because $\\hat\\phi$ is in closed form the gradient goes through it
(``validation_gradient``, by the implicit function theorem): with $r_2=H_2\\hat\\phi-Y_2$,
$G=\\tfrac2{|D_2|}H_2^\\top r_2$, $M=(H_1^\\top H_1+\\rho I)^{-1}G$,

$$\\partial V/\\partial H_2=\\tfrac2{|D_2|}r_2\\hat\\phi^\\top,\\qquad
\\partial V/\\partial H_1=(Y_1-H_1\\hat\\phi)M^\\top-H_1M\\hat\\phi^\\top .$$

The text names neither $\\lambda$ nor $\\rho$.
"""

from __future__ import annotations

import numpy as np

__all__ = ["adversary_objective", "ridge_head", "validation_gradient", "validation_loss"]


def _batch(name: str, H, Y) -> tuple[np.ndarray, np.ndarray]:
    H, Y = np.asarray(H, dtype=float), np.asarray(Y, dtype=float)
    if Y.ndim == 1:
        Y = Y[:, None]
    if H.ndim != 2 or Y.ndim != 2 or H.shape[0] != Y.shape[0] or H.shape[0] == 0:
        raise ValueError(f"{name}: features (n, k) and labels (n,) or (n, c) with the same n >= 1")
    if not (np.all(np.isfinite(H)) and np.all(np.isfinite(Y))):
        raise ValueError(f"{name}: features and labels must be finite")
    return H, Y


def ridge_head(H1, Y1, rho: float) -> np.ndarray:
    """$\\hat\\phi=\\arg\\min_\\phi\\|H_1\\phi-Y_1\\|_F^2+\\rho\\|\\phi\\|_F^2=(H_1^\\top H_1+\\rho I)^{-1}H_1^\\top Y_1$."""
    H1, Y1 = _batch("D1", H1, Y1)
    if not rho > 0:
        raise ValueError(f"rho must be > 0 (the ridge solution is then unique), got {rho}")
    return np.linalg.solve(H1.T @ H1 + rho * np.eye(H1.shape[1]), H1.T @ Y1)


def validation_loss(H1, Y1, H2, Y2, rho: float) -> float:
    """$V=\\tfrac1{|D_2|}\\|H_2\\hat\\phi(H_1)-Y_2\\|_F^2$."""
    H2, Y2 = _batch("D2", H2, Y2)
    phi = ridge_head(H1, Y1, rho)
    if H2.shape[1] != phi.shape[0] or Y2.shape[1] != phi.shape[1]:
        raise ValueError("D1 and D2 must have the same feature and label dimensions")
    return float(np.sum((H2 @ phi - Y2) ** 2) / H2.shape[0])


def validation_gradient(H1, Y1, H2, Y2, rho: float) -> tuple[np.ndarray, np.ndarray]:
    """$(\\partial V/\\partial H_1,\\partial V/\\partial H_2)$ through the closed-form head (module docstring)."""
    H1, Y1 = _batch("D1", H1, Y1)
    H2, Y2 = _batch("D2", H2, Y2)
    A = H1.T @ H1 + rho * np.eye(H1.shape[1])
    phi = ridge_head(H1, Y1, rho)
    r2 = H2 @ phi - Y2
    G = 2.0 / H2.shape[0] * H2.T @ r2
    M = np.linalg.solve(A, G)
    return (Y1 - H1 @ phi) @ M.T - H1 @ M @ phi.T, 2.0 / H2.shape[0] * r2 @ phi.T


def adversary_objective(pretrain_loss: float, H1, Y1, H2, Y2, lam: float, rho: float) -> float:
    """$L(\\psi)-\\lambda V$: what the adversary minimises (``lam`` >= 0; 0 is ordinary pre-training)."""
    if not lam >= 0:
        raise ValueError(f"lam must be >= 0, got {lam}")
    return float(pretrain_loss - lam * validation_loss(H1, Y1, H2, Y2, rho))
