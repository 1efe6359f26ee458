"""Stage 2 of Algorithm 1 and its concentration lemmas (seed ``004_4bd75c3751e9130c.txt``, §3.3, Lemmas B.9-B.13,
E.1-E.10, §5.1, App. I). **Reconstructed**: the document lost the formulas; these are rebuilt from its prose.

- Lemma E.1 (separation): on the population line ``A(beta) = (1 - beta)/T + beta Q`` an entry on the support of
  ``q_k`` exceeds every entry off it by ``beta q_min``; so if ``||Delta_A||_inf < beta q_min / 2`` the threshold
  ``theta = (1 - beta)/T + beta q_min / 2`` keeps exactly the support (``a >= theta iff Q > 0``).
- Lemma E.9 (scalar recursion): ``x_{t+1} <= (1 - a) x_t + b`` with ``0 < a <= 1``, ``b > 0``: if ``x_0 <= 2b/a``
  then ``x_t <= 2b/a`` for all t; otherwise ``x_t <= 2b/a`` for all ``t >= 2 log(a x_0 / (2b)) / a``.
- Lemma B.9 (Chebyshev): the mean of ``B >= sigma^2 / (delta eps^2)`` i.i.d. copies of Z with
  ``E||Z - EZ||^2 <= sigma^2`` is within eps of EZ with probability >= 1 - delta.
- Lemma B.10 (reconstructed bound): with V and A probability-column matrices, every entry of a per-sample
  preconditioned A-gradient is at most ``2 / min mu`` in absolute value, whatever T.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from theorylab.attention.scb.algorithm import prox_project
from theorylab.attention.scb.dynamics import line_coordinates, line_point, per_sample_grads, precondition
from theorylab.attention.scb.task import SCBTask


def support_gap(task: SCBTask) -> float:
    """``q_min``: the smallest nonzero entry of Q (the on-support level of Assumption 2.1, ``>= 1/(C Q_s)``)."""
    return float(task.Q[task.Q > 0].min())


def separation_threshold(T: int, beta, q_min):
    """Lemma E.1's threshold ``(1 - beta)/T + beta q_min / 2`` (exact for Fraction inputs)."""
    if T < 1:
        raise ValueError(f"T must be >= 1, got {T}")
    if not beta > 0 or not 0 < q_min <= 1:
        raise ValueError(f"need beta > 0 and 0 < q_min <= 1, got beta={beta}, q_min={q_min}")
    return (1 - beta) / T + beta * q_min / 2


def separation_margin(beta, q_min):
    """Lemma E.1's noise level: the rule recovers the support whenever ``||Delta_A||_inf < beta q_min / 2``."""
    return beta * q_min / 2


def kept_support(A, theta) -> np.ndarray:
    """The boolean mask ``a_{t,k} >= theta`` (works on object arrays of Fractions)."""
    return np.asarray(A >= theta, dtype=bool)


def round_and_project(A: np.ndarray, theta: float) -> np.ndarray:
    """The rounding at the start of Stage 2 (App. E.1): set ``a_{t,k} < theta`` to 0, then add
    ``(1 - 1^T a_k)/T`` to every entry of the column (the affine projection onto unit column sums)."""
    kept = np.where(A >= theta, A, 0.0)
    return kept + (1 - kept.sum(axis=0, keepdims=True)) / A.shape[0]


def recursion_level(a, b):
    """Lemma E.9's level ``2b/a``."""
    if not 0 < a <= 1 or not b > 0:
        raise ValueError(f"Lemma E.9 needs 0 < a <= 1 and b > 0, got a={a}, b={b}")
    return 2 * b / a


def recursion_passage_bound(a: float, b: float, x0: float) -> float:
    """Lemma E.9's first-passage bound ``2 log(a x_0 / (2b)) / a`` (0 when ``x_0 <= 2b/a``)."""
    level = recursion_level(a, b)
    return 0.0 if x0 <= level else 2.0 * math.log(x0 / level) / a


def recursion_first_passage(a, b, x0, slack=None, max_steps: int = 10**6) -> int:
    """The first t with ``x_t <= 2b/a`` for ``x_{t+1} = (1 - a) x_t + b - slack_t`` (``slack_t >= 0``; none: the
    extremal sequence, equality in E.9). Exact for Fraction inputs."""
    level = recursion_level(a, b)
    x = x0
    for t in range(max_steps):
        if x <= level:
            return t
        x = (1 - a) * x + b - (0 if slack is None else slack[t % len(slack)])
    raise ValueError(f"x_t did not reach 2b/a within {max_steps} steps")


def binomial_mean_tail(B: int, eps: Fraction) -> Fraction:
    """``Pr(|mean of B Rademacher signs| >= eps)`` exactly: ``sum_{|2j - B| >= eps B} C(B, j) / 2^B``."""
    if B < 1:
        raise ValueError(f"B must be >= 1, got {B}")
    hits = sum(math.comb(B, j) for j in range(B + 1) if abs(2 * j - B) >= eps * B)
    return Fraction(hits, 2**B)


def chebyshev_batch(sigma2, delta, eps) -> int:
    """Lemma B.9's batch ``ceil(sigma^2 / (delta eps^2))``."""
    if not (sigma2 > 0 and 0 < delta < 1 and eps > 0):
        raise ValueError(f"need sigma2 > 0, 0 < delta < 1, eps > 0, got {sigma2}, {delta}, {eps}")
    return math.ceil(Fraction(sigma2) / (Fraction(delta) * Fraction(eps) ** 2))


def preconditioned_grad_samples(
    task: SCBTask, V: np.ndarray, A: np.ndarray, rng: np.random.Generator, n: int
) -> tuple[np.ndarray, np.ndarray]:
    """``n`` per-sample preconditioned gradients ``(G_V [n, N, N], G_A [n, T, N])`` at (V, A)."""
    xs, k, xo = task.sample(rng, n)
    gV, gA = per_sample_grads(V, A, xs, k, np.eye(task.N)[xo])
    return precondition(gV, gA, task.mu)


def grad_noise_stats(task: SCBTask, V, A, rng: np.random.Generator, n: int) -> dict[str, float]:
    """Monte-Carlo ``E||G_A - E G_A||_F^2`` (the variance that grows like T, footnote 4), its standard error, and
    the largest per-sample ``||G_A||_inf`` (which stays O(1), Lemma B.10)."""
    _, gA = preconditioned_grad_samples(task, V, A, rng, n)
    sq = ((gA - gA.mean(axis=0)) ** 2).sum(axis=(1, 2)) * n / (n - 1)
    return {
        "var": float(sq.mean()),
        "var_se": float(sq.std(ddof=1) / math.sqrt(n)),
        "linf": float(np.abs(gA).max()),
    }


@dataclass
class Stage2Result:
    alpha: float
    beta: float
    dA_inf: float  # ||Delta_A||_inf, distance of A to the population line
    support_ok: bool  # the final A, rounded at half its on-support level, keeps exactly supp(Q)
    A_norm_err: float  # max |normalise(round(A)) - Q|


def run_stage2(
    task: SCBTask,
    rng: np.random.Generator,
    *,
    B: int,
    steps: int,
    eta: float = 0.05,
    lam: float | None = None,
    alpha0: float = 0.3,
    beta0: float = 0.3,
) -> Stage2Result:
    """Stage 2 from the clean end of Stage 1 ``(V(alpha0), A(beta0))``: round with Lemma E.1's threshold, then
    ``steps`` mini-batch steps of batch B: proximal (l1 weight ``lam``, then projection) or, with ``lam=None``,
    plain preconditioned SGD. Step sizes ``eta_V = eta/K_Q``, ``eta_A = eta/K_P`` as in Algorithm 1."""
    if B < 1 or steps < 0:
        raise ValueError(f"need B >= 1 and steps >= 0, got B={B}, steps={steps}")
    N, T, q_min = task.N, task.T, support_gap(task)
    etaV, etaA = eta / task.K_Q, eta / task.K_P
    V, A = line_point(task, alpha0, beta0)
    if lam is not None:
        A = round_and_project(A, separation_threshold(T, beta0, q_min))
    for _ in range(steps):
        xs, k, xo = task.sample(rng, B)
        gV, gA = per_sample_grads(V, A, xs, k, np.eye(N)[xo])
        GV, GA = precondition(gV.mean(axis=0), gA.mean(axis=0), task.mu)
        V = V - etaV * GV
        A = A - etaA * GA if lam is None else prox_project(A - etaA * GA, etaA * lam)
    alpha, beta, _, dA = line_coordinates(task, V, A)
    theta = separation_threshold(T, beta, q_min) if beta > 0 else np.inf
    kept = A >= theta
    s = np.where(kept, A, 0.0).sum(axis=0)
    A_norm = np.where(kept, A, 0.0) / np.where(s > 0, s, 1.0)
    return Stage2Result(
        float(alpha),
        float(beta),
        float(np.abs(dA).max()),
        bool(np.array_equal(kept, task.Q > 0)),
        float(np.abs(A_norm - task.Q).max()),
    )


def population_loss(task: SCBTask, V: np.ndarray, A: np.ndarray) -> float:
    """The exact population loss for any (V, A), by Lemma B.4: with
    ``M(a, b) = (a.b)(D - mu mu^T) + (1.a)(1.b) mu mu^T = E[X a b^T X^T]``,
    ``L = 1/2 sum_k mu_k [1 - 2 tr(P^T V M(a_k, q_k)) + tr(V^T V M(a_k, a_k))]``."""
    mu, Q = task.mu, task.Q
    D, mm = np.diag(mu), np.outer(mu, mu)
    aq, aa = np.einsum("tk,tk->k", A, Q), np.einsum("tk,tk->k", A, A)
    sa, sq = A.sum(axis=0), Q.sum(axis=0)
    PV, VV = task.P.T @ V, V.T @ V
    c_PV, m_PV = np.trace(PV @ (D - mm)), np.trace(PV @ mm)
    c_VV, m_VV = np.trace(VV @ (D - mm)), np.trace(VV @ mm)
    per_k = 1 - 2 * (aq * c_PV + sa * sq * m_PV) + (aa * c_VV + sa * sa * m_VV)
    return float(0.5 * mu @ per_k)


def noisy_two_d_escape(
    T: int,
    B: float,
    rng: np.random.Generator,
    *,
    runs: int,
    K_P: float = 1.0,
    K_Q: float = 1.0,
    eta: float = 0.1,
    sigma: float = 1.0,
    delta1: float = 0.3,
    max_steps: int = 100_000,
) -> float:
    """App. I's Gaussian-noise simulation of Stage 1: the 2-D map of ``scb.popline`` from (0, 0) plus independent
    noise ``eta_V sigma xi / sqrt(B)``, ``eta_A sigma xi' / sqrt(B)`` per step (``eta_V = eta/K_Q``,
    ``eta_A = eta/K_P``), run until ``max(|alpha|, |beta|) >= delta1``. Returns the fraction of ``runs`` that
    escape with the correct sign (alpha, beta > 0)."""
    if T < 1 or B <= 0 or runs < 1:
        raise ValueError(f"need T >= 1, B > 0 and runs >= 1, got T={T}, B={B}, runs={runs}")
    etaV, etaA, s = eta / K_Q, eta / K_P, sigma / math.sqrt(B)
    a, b = np.zeros(runs), np.zeros(runs)
    done = np.zeros(runs, dtype=bool)
    good = np.zeros(runs, dtype=bool)
    for _ in range(max_steps):
        live = ~done
        if not live.any():
            break
        al, bl = a[live], b[live]
        na = (
            al + etaV * ((1 - al) / T + K_Q * bl * (1 - al * bl)) + etaV * s * rng.standard_normal(live.sum())
        )
        nb = bl + etaA * K_P * al * (1 - al * bl) + etaA * s * rng.standard_normal(live.sum())
        a[live], b[live] = na, nb
        out = live & (np.maximum(np.abs(a), np.abs(b)) >= delta1)
        good |= out & (a > 0) & (b > 0)
        done |= out
    if not done.all():
        raise ValueError(f"{(~done).sum()} runs did not escape within {max_steps} steps")
    return float(good.mean())


def simulate_stage2(
    task: SCBTask,
    rng: np.random.Generator,
    *,
    B: float,
    steps: int,
    lam: float | None,
    eta: float = 0.05,
    sigma: float = 1.0,
    alpha0: float = 0.3,
    beta0: float = 0.3,
    start: tuple[np.ndarray, np.ndarray, float] | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """App. I's Gaussian-noise simulation of Stage 2: from the clean end of Stage 1 (rounded with Lemma E.1's
    threshold when proximal), steps of the exact expected preconditioned gradients (Lemmas B.7-B.8) plus i.i.d.
    ``N(0, sigma^2 / B)`` noise per entry, centred per column (the preconditioner's projection); proximal
    (``lam``: l1 weight) or plain (``lam=None``). ``start = (V, A, beta)`` starts elsewhere (rounded at beta).
    Returns the final (V, A)."""
    from theorylab.attention.scb.dynamics import expected_preconditioned_grads

    if B <= 0 or steps < 0:
        raise ValueError(f"need B > 0 and steps >= 0, got B={B}, steps={steps}")
    etaV, etaA, s = eta / task.K_Q, eta / task.K_P, sigma / math.sqrt(B)
    V, A = line_point(task, alpha0, beta0) if start is None else (start[0], start[1])
    if lam is not None:
        beta_r = beta0 if start is None else start[2]
        A = round_and_project(A, separation_threshold(task.T, beta_r, support_gap(task)))
    for _ in range(steps):
        GV, GA = expected_preconditioned_grads(task, V, A)
        nV, nA = s * rng.standard_normal(V.shape), s * rng.standard_normal(A.shape)
        V = V - etaV * (GV + nV - nV.mean(axis=0))
        A = A - etaA * (GA + nA - nA.mean(axis=0))
        if lam is not None:
            A = prox_project(A, etaA * lam)
    return V, A


def transfer_first_step(
    task: SCBTask,
    V0: np.ndarray,
    rng: np.random.Generator,
    *,
    B: float,
    beta1: float = 0.5,
    sigma: float = 1.0,
) -> tuple[np.ndarray, float]:
    """Thm 4.1's first step (Lemma H.2, reconstructed) in App. I's noise model: from uniform attention and a
    pretrained V_0 with ``alpha_0 = <V_0 - mu 1^T, P_c>_mu / K_P > 0``, one A-step of size
    ``eta_A = beta1 / (alpha_0 K_P)`` with gradient noise ``N(0, sigma^2/B)`` per entry (centred per column); in
    expectation it lands at ``beta = beta1`` whatever T (scb.transfer_one_step). Returns (A_1, beta_1)."""
    from theorylab.attention.scb.dynamics import expected_preconditioned_grads

    A0 = np.full((task.T, task.N), 1.0 / task.T)
    alpha0 = line_coordinates(task, V0, A0)[0]
    if not alpha0 > 0:
        raise ValueError(f"the pretrained V_0 must correlate positively with P (alpha_0 = {alpha0:.3g})")
    etaA = beta1 / (alpha0 * task.K_P)
    _, GA = expected_preconditioned_grads(task, V0, A0)
    n = sigma / math.sqrt(B) * rng.standard_normal(A0.shape)
    A1 = A0 - etaA * (GA + n - n.mean(axis=0))
    return A1, float(line_coordinates(task, V0, A1)[1])
