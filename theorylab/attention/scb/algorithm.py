"""Algorithm 1 (reconstructed): preconditioned, projected, proximal mini-batch descent in three stages
(seed ``004_4bd75c3751e9130c.txt``, Eqs. (4)-(6), §2.3, §3.2-3.4).

Stage 1 (signal boosting): lambda = 0, large batches, until ``max(alpha, beta) >= delta_1`` (oracle stop, using
the line coordinates). Stage 2: l1 proximal step on A then the affine projection of each column; it converges to
the valley ``alpha beta = 1`` but stays near ``(1 + delta, 1/(1 + delta))`` (the Stage-2 trap). Stage 3: round A
(keep entries ``>= c/Q_s``, renormalise columns), freeze it and train V alone.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from theorylab.attention.scb.dynamics import line_coordinates, per_sample_grads, precondition
from theorylab.attention.scb.task import SCBTask


def prox_project(A_tilde: np.ndarray, thresh: float) -> np.ndarray:
    """Entrywise soft threshold ``sign(x)(|x| - thresh)_+`` then ``a_k += (1 - 1^T a_k)/T`` per column: every
    zeroed entry of a column ends at the same value ``(1 - sum of the kept entries)/T``."""
    if thresh < 0:
        raise ValueError(f"the proximal threshold eta_A * lambda must be >= 0, got {thresh}")
    A = np.sign(A_tilde) * np.maximum(np.abs(A_tilde) - thresh, 0.0)
    return A + (1 - A.sum(axis=0, keepdims=True)) / A.shape[0]


def round_attention(A: np.ndarray, cutoff: float) -> np.ndarray:
    """Stage 3 rounding: ``a_k * 1[a_k >= cutoff]`` normalised to sum 1 (columns with nothing kept stay uniform)."""
    kept = np.where(A >= cutoff, A, 0.0)
    s = kept.sum(axis=0, keepdims=True)
    return np.where(s > 0, kept / np.where(s > 0, s, 1.0), 1.0 / A.shape[0])


@dataclass
class Algorithm1Result:
    V: np.ndarray
    A: np.ndarray
    history: list[dict] = field(default_factory=list)  # per step: stage, alpha, beta, |Delta_V|, |Delta_A|
    stage_ends: dict[str, int] = field(default_factory=dict)
    after_stage2: tuple[np.ndarray, np.ndarray] | None = None  # (V, A) before the Stage-3 rounding


def _minibatch_grads(task: SCBTask, V, A, rng, B):
    xs, k, xo = task.sample(rng, B)
    gV, gA = per_sample_grads(V, A, xs, k, np.eye(task.N)[xo])
    return precondition(gV.mean(axis=0), gA.mean(axis=0), task.mu)


def run_algorithm1(
    task: SCBTask,
    rng: np.random.Generator,
    *,
    eta: float = 0.05,
    B1: int = 2048,
    B2: int = 256,
    delta1: float = 0.3,
    max_stage1: int = 2000,
    stage2_steps: int = 2000,
    stage3_steps: int = 1000,
    lam: float = 1e-3,
    cutoff: float | None = None,
) -> Algorithm1Result:
    """Run the three stages from ``V_0 = mu 1^T``, ``A_0 = 11^T/T``. Step sizes ``eta_V = eta K_P``,
    ``eta_A = eta K_Q`` (so ``eta_V K_Q = eta_A K_P``, the symmetric linearisation of §3.1, up to the common
    factor; the paper's exact choice is lost)."""
    if min(B1, B2) < 1 or eta <= 0:
        raise ValueError("batch sizes must be >= 1 and eta > 0")
    T, N = task.T, task.N
    etaV, etaA = eta / task.K_Q, eta / task.K_P  # eta_V K_Q = eta_A K_P = eta
    V = np.tile(task.mu[:, None], (1, N))
    A = np.full((T, N), 1.0 / T)
    res = Algorithm1Result(V, A)

    def log(stage: str) -> None:
        a, b, dV, dA = line_coordinates(task, V, A)
        res.history.append(
            {
                "stage": stage,
                "alpha": a,
                "beta": b,
                "dV": float(np.abs(dV).max()),
                "dA": float(np.abs(dA).max()),
            }
        )

    for _ in range(max_stage1):
        GV, GA = _minibatch_grads(task, V, A, rng, B1)
        V, A = V - etaV * GV, A - etaA * GA
        log("1")
        if max(res.history[-1]["alpha"], res.history[-1]["beta"]) >= delta1:
            break
    res.stage_ends["1"] = len(res.history)
    Qs = int((task.Q > 0).sum(axis=0).max())
    cut = (0.5 / Qs) if cutoff is None else cutoff
    for _ in range(stage2_steps):
        GV, GA = _minibatch_grads(task, V, A, rng, B2)
        V = V - etaV * GV
        A = prox_project(A - etaA * GA, etaA * lam)
        log("2")
    res.stage_ends["2"] = len(res.history)
    res.after_stage2 = (V.copy(), A.copy())
    A = round_attention(A, cut * res.history[-1]["beta"] if cutoff is None else cut)
    for _ in range(stage3_steps):
        GV, _ = _minibatch_grads(task, V, A, rng, B2)
        V = V - etaV * GV
        log("3")
    res.stage_ends["3"] = len(res.history)
    res.V, res.A = V, A
    return res
