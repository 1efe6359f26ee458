"""The one-layer linear Transformer on SCB data and its exact population dynamics (seed ``004_4bd75c3751e9130c.txt``,
Eqs. (2)-(4), §3.1, Lemmas B.3, B.7-B.8, C.1; **all reconstructed**, see the module docstring of ``task``).

Model ``f(X, k; V, A) = V X a_k`` (``V [N, N]``, ``A [T, N]``, ``a_k = A e_k``), loss ``1/2 ||e_{x_o} - f||^2``.
Preconditioned gradients ``G_V = (I - 11^T/N) grad_V D^-1``, ``G_A = (I - 11^T/T) grad_A D^-1``.
Population line ``V(alpha) = mu 1^T + alpha P_c``, ``A(beta) = (1/T) 1 1^T + beta Q_c``.
"""

from __future__ import annotations

import numpy as np

from theorylab.attention.scb.task import SCBTask, mu_inner


def attended_counts(A: np.ndarray, xs: np.ndarray, k: np.ndarray, N: int) -> np.ndarray:
    """``X a_k`` for each sample: ``u[b, n] = sum_t A[t, k_b] 1[x_{b,t} = n]``, ``[B, N]``."""
    B, T = xs.shape
    u = np.zeros((B, N))
    np.add.at(u, (np.repeat(np.arange(B), T), xs.ravel()), A[np.tile(np.arange(T), B), np.repeat(k, T)])
    return u


def predict(V: np.ndarray, A: np.ndarray, xs: np.ndarray, k: np.ndarray) -> np.ndarray:
    """``f = V X a_k`` for each sample, ``[B, N]``."""
    return attended_counts(A, xs, k, V.shape[0]) @ V.T


def per_sample_grads(V, A, xs, k, target) -> tuple[np.ndarray, np.ndarray]:
    """Lemma B.3: with residual ``r = y - V X a_k`` (``y`` = one-hot label, or its conditional mean),
    ``grad_V = -r (X a_k)^T`` and ``grad_{a_k} = -X^T V^T r`` (other columns 0). Returns ``[B, N, N]``, ``[B, T, N]``."""
    N, T = V.shape[0], A.shape[0]
    u = attended_counts(A, xs, k, N)
    r = target - u @ V.T
    gV = -np.einsum("bi,bj->bij", r, u)
    vr = r @ V  # [B, N]: (V^T r)_n
    gA = np.zeros((len(k), T, N))
    gA[np.arange(len(k))[:, None], np.arange(T)[None], k[:, None]] = -np.take_along_axis(vr, xs, axis=1)
    return gV, gA


def precondition(gV: np.ndarray, gA: np.ndarray, mu: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(I - 11^T/N) gV D^-1`` and ``(I - 11^T/T) gA D^-1`` (last two axes)."""
    gV = gV / mu
    gA = gA / mu
    return gV - gV.mean(axis=-2, keepdims=True), gA - gA.mean(axis=-2, keepdims=True)


def expected_grads_enumerated(task: SCBTask, V: np.ndarray, A: np.ndarray, preconditioned: bool = True):
    """Exact expected (preconditioned) gradients by enumerating all ``N^(T+1)`` contexts; the label enters
    linearly, so its conditional mean ``P X q_k`` replaces the one-hot label exactly."""
    xs, k, w = task.contexts()
    gV, gA = per_sample_grads(V, A, xs, k, task.label_law(xs, k))
    EgV, EgA = np.einsum("b,bij->ij", w, gV), np.einsum("b,bij->ij", w, gA)
    return precondition(EgV, EgA, task.mu) if preconditioned else (EgV, EgA)


def expected_preconditioned_grads(
    task: SCBTask, V: np.ndarray, A: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Lemmas B.7-B.8 (reconstructed) for any V, A with unit column sums:
    ``E G_V = ||A||_mu^2 V_c - <A, Q>_mu P_c + (V mu - mu) 1^T`` with ``V_c = V - V mu 1^T``, and
    ``E G_{a_k} = ||V_c||_mu^2 (a_k - 1/T) - <V_c, P_c>_mu (q_k - 1/T)``."""
    _check_unit_columns(V, "V")
    _check_unit_columns(A, "A")
    mu, T = task.mu, task.T
    Vc = V - (V @ mu)[:, None]
    GV = mu_inner(A, A, mu) * Vc - mu_inner(A, task.Q, mu) * task.Pc + (V @ mu - mu)[:, None]
    GA = mu_inner(Vc, Vc, mu) * (A - 1.0 / T) - mu_inner(Vc, task.Pc, mu) * task.Qc
    return GV, GA


def _check_unit_columns(M: np.ndarray, name: str) -> None:
    if np.abs(np.asarray(M).sum(axis=0) - 1).max() > 1e-9:
        raise ValueError(f"{name} must have unit column sums (1^T {name} = 1^T) for the closed form")


def population_loss_enumerated(task: SCBTask, V: np.ndarray, A: np.ndarray) -> float:
    """``E 1/2 ||e_{x_o} - f||^2 = 1/2 E[1 - 2 <P X q_k, f> + ||f||^2]`` by exact enumeration."""
    xs, k, w = task.contexts()
    f = predict(V, A, xs, k)
    y = task.label_law(xs, k)
    return float(0.5 * np.dot(w, 1 - 2 * (y * f).sum(axis=1) + (f * f).sum(axis=1)))


def bayes_loss(task: SCBTask) -> float:
    """``L* = 1/2 (1 - E ||P X q_k||^2)``, the loss of ``V = P, A = Q`` (enumerated)."""
    xs, k, w = task.contexts()
    y = task.label_law(xs, k)
    return float(0.5 * (1 - np.dot(w, (y * y).sum(axis=1))))


def line_point(task: SCBTask, alpha: float, beta: float) -> tuple[np.ndarray, np.ndarray]:
    """``(V(alpha), A(beta))`` on the population line."""
    return task.mu[:, None] + alpha * task.Pc, 1.0 / task.T + beta * task.Qc


def line_loss(task: SCBTask, alpha: float, beta: float, L_star: float) -> float:
    """Population loss on the line: ``L* + K_P (alpha-1)^2 / (2T) + K_P K_Q (alpha beta - 1)^2 / 2``."""
    return (
        L_star
        + task.K_P * (alpha - 1) ** 2 / (2 * task.T)
        + task.K_P * task.K_Q * (alpha * beta - 1) ** 2 / 2
    )


def line_coordinates(task: SCBTask, V: np.ndarray, A: np.ndarray):
    """Lemma C.1 (reconstructed): mu-weighted projections ``alpha = <V - mu 1^T, P_c>_mu / K_P``,
    ``beta = <A - 11^T/T, Q_c>_mu / K_Q`` and the residuals ``Delta_V``, ``Delta_A``."""
    alpha = mu_inner(V - task.mu[:, None], task.Pc, task.mu) / task.K_P
    beta = mu_inner(A - 1.0 / task.T, task.Qc, task.mu) / task.K_Q
    V0, A0 = line_point(task, alpha, beta)
    return alpha, beta, V - V0, A - A0


def two_d_step(task: SCBTask, alpha: float, beta: float, eta_V: float, eta_A: float) -> tuple[float, float]:
    """One population step on the line: ``alpha+ = alpha + eta_V [(1-alpha)/T + K_Q beta (1 - alpha beta)]``,
    ``beta+ = beta + eta_A K_P alpha (1 - alpha beta)``."""
    a = alpha + eta_V * ((1 - alpha) / task.T + task.K_Q * beta * (1 - alpha * beta))
    b = beta + eta_A * task.K_P * alpha * (1 - alpha * beta)
    return a, b


def population_step(task: SCBTask, V, A, eta_V: float, eta_A: float) -> tuple[np.ndarray, np.ndarray]:
    """``V - eta_V E[G_V]``, ``A - eta_A E[G_A]`` with the closed-form expected gradients."""
    GV, GA = expected_preconditioned_grads(task, V, A)
    return V - eta_V * GV, A - eta_A * GA


def two_d_trajectory(
    task: SCBTask, steps: int, eta_V: float, eta_A: float, alpha=0.0, beta=0.0
) -> np.ndarray:
    """``[(alpha_t, beta_t)]`` for t = 0..steps from (alpha, beta) (default: the initialisation (0, 0))."""
    out = np.empty((steps + 1, 2))
    out[0] = alpha, beta
    kq, kp, T = task.K_Q, task.K_P, task.T
    a, b = float(alpha), float(beta)
    for t in range(steps):  # the same update as two_d_step, with the constants hoisted
        a, b = a + eta_V * ((1 - a) / T + kq * b * (1 - a * b)), b + eta_A * kp * a * (1 - a * b)
        out[t + 1] = a, b
    return out


def stage3_value_fixed_point(task: SCBTask, A_hat: np.ndarray) -> np.ndarray:
    """Lemma F.2 (reconstructed): with A frozen at ``A_hat`` the V-dynamics have the unique fixed point
    ``V* = mu 1^T + <A_hat, Q>_mu / ||A_hat||_mu^2 P_c`` (= P iff ``<A_hat, Q>_mu = ||A_hat||_mu^2``, e.g. A_hat = Q)."""
    _check_unit_columns(A_hat, "A_hat")
    mu = task.mu
    return mu[:, None] + mu_inner(A_hat, task.Q, mu) / mu_inner(A_hat, A_hat, mu) * task.Pc


def transfer_one_step_gradient(task: SCBTask, V0: np.ndarray) -> np.ndarray:
    """At uniform attention ``A_0 = 11^T/T`` the expected preconditioned A-gradient is
    ``-<V_{0,c}, P_c>_mu (q_k - 1/T)``: it does not depend on the part of V_0 orthogonal to P_c."""
    Vc = V0 - (V0 @ task.mu)[:, None]
    return -mu_inner(Vc, task.Pc, task.mu) * task.Qc


def softmax_jacobian(a: np.ndarray) -> np.ndarray:
    """``J(a) = diag(a) - a a^T``, the Jacobian of softmax at output a (§5.2)."""
    a = np.asarray(a, dtype=np.float64)
    return np.diag(a) - np.outer(a, a)


def context_moments(
    task: SCBTask, a: np.ndarray, a2: np.ndarray, M: np.ndarray, k: int
) -> dict[str, np.ndarray]:
    """Lemmas B.4-B.6 (reconstructed), x_t i.i.d. mu: ``E[X a a2^T X^T] = (a.a2)(D - mu mu^T) + (1.a)(1.a2) mu mu^T``,
    ``E[X^T M X] = (tr(DM) - mu^T M mu) I + (mu^T M mu) 11^T`` and
    ``E[e_{x_o} (X a)^T | k] = P[(q_k.a)(D - mu mu^T) + (1.a) mu mu^T]``."""
    mu, T = task.mu, task.T
    D, mm = np.diag(mu), np.outer(mu, mu)
    quad = float(mu @ M @ mu)
    return {
        "XaaX": float(a @ a2) * (D - mm) + float(a.sum() * a2.sum()) * mm,
        "XMX": (float(np.trace(D @ M)) - quad) * np.eye(T) + quad * np.ones((T, T)),
        "label_cross": task.P @ (float(task.Q[:, k] @ a) * (D - mm) + float(a.sum()) * mm),
    }
