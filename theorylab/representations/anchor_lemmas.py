"""The auxiliary lemmas of the anchor-vector lower bound (Wu, Lee, Ge, ``002_530e12373cc142da.txt``, App. D,
Lemmas 2-5), on abstract instances: teacher and student logits over a vocabulary with a bulk set, anchors
``c* ~ log Z*_bulk`` and ``c ~ log Z_bulk`` (Assumption 7's error eps_b), biases b*.

Notation: the teacher's pre-activation ``u*_j = <v*, v*_j - v*_0> - b*_j``, the student's ``u_j``, and
``Delta_j = u*_j - relu(u_j)`` (eq. 34); ``S(x) = {j : a*_j > 0, Delta_j > 0}`` (eq. 35).

- Lemma 2: if ``sum_{a*_j > 0} a*_j (relu(u*_j) - relu(u_j)) >= gamma/2`` then S is nonempty;
- Lemma 3: then ``sum_{j in S} Delta_j >= gamma / (2 max_{j in S} a*_j)``;
- Lemma 4: ``|A* - A| >= p_b (1 - e^{-eps_p})`` for bulk probabilities ``A* = Z*_b/Z* >= p_b``, ``A = Z_b/Z``,
  ``eps_p = |log A* - log A|``;
- Lemma 5: for ``j in S``, ``|p*_j - p_j| >= e^{b*_j - eps_b - eps_p} p_b (e^{relu(Delta_j - 2 eps_b - eps_p)} - 1)``.
"""

from __future__ import annotations

import numpy as np


def relu(z):
    return np.maximum(z, 0.0)


def deltas(u_star, u) -> np.ndarray:
    """``Delta_j = u*_j - relu(u_j)`` (eq. 34)."""
    return np.asarray(u_star, dtype=np.float64) - relu(np.asarray(u, dtype=np.float64))


def active_set(a_star, u_star, u) -> np.ndarray:
    """``S(x) = {j : a*_j > 0, Delta_j > 0}`` as a boolean mask (eq. 35)."""
    return (np.asarray(a_star) > 0) & (deltas(u_star, u) > 0)


def positive_margin(a_star, u_star, u) -> float:
    """``sum_{a*_j > 0} a*_j (relu(u*_j) - relu(u_j))``: Lemmas 2-3 assume it is at least gamma/2."""
    a = np.asarray(a_star, dtype=np.float64)
    pos = a > 0
    return float(a[pos] @ (relu(np.asarray(u_star))[pos] - relu(np.asarray(u))[pos]))


def lemma3_bound(a_star, S: np.ndarray, gamma: float) -> float:
    """``gamma / (2 max_{j in S} a*_j)``."""
    if not S.any():
        raise ValueError("S(x) is empty: Lemma 3 needs Lemma 2's conclusion")
    return gamma / (2 * float(np.asarray(a_star)[S].max()))


def lemma4_bound(A_star: float, A: float, p_b: float) -> float:
    """``p_b (1 - e^{-eps_p})`` with ``eps_p = |log A* - log A|``; requires ``0 < p_b <= A*``."""
    if not (0 < p_b <= A_star <= 1 and 0 < A <= 1):
        raise ValueError(f"need 0 < p_b <= A* <= 1 and 0 < A <= 1, got p_b={p_b}, A*={A_star}, A={A}")
    return p_b * (1 - np.exp(-abs(np.log(A_star) - np.log(A))))


def lemma5_bound(b_star_j: float, eps_b: float, eps_p: float, p_b: float, delta_j: float) -> float:
    """``e^{b*_j - eps_b - eps_p} p_b (e^{relu(Delta_j - 2 eps_b - eps_p)} - 1)``."""
    return float(np.exp(b_star_j - eps_b - eps_p) * p_b * (np.exp(relu(delta_j - 2 * eps_b - eps_p)) - 1))


def random_instance(
    rng: np.random.Generator, n: int = 12, k: int = 4, spread: float = 2.0, boost: float = 2.0
) -> dict:
    """Teacher/student logits over n words (words k.. form the bulk; the teacher's first k logits raised by
    ``boost``), anchors within a random eps_b of the bulk log-partition functions, biases b*; returns every
    quantity of Lemmas 4-5."""
    ls = rng.normal(size=n) * 2
    ls[:k] += boost
    l = ls + rng.normal(size=n) * rng.uniform(0, spread)  # noqa: E741
    Zs, Z = np.exp(ls).sum(), np.exp(l).sum()
    Zbs, Zb = np.exp(ls[k:]).sum(), np.exp(l[k:]).sum()
    eb = rng.uniform(0, 0.5)
    cs, c = np.log(Zbs) + rng.uniform(-eb, eb), np.log(Zb) + rng.uniform(-eb, eb)
    b = rng.normal(size=k)
    return {
        "p_star": np.exp(ls) / Zs,
        "p": np.exp(l) / Z,
        "A_star": Zbs / Zs,
        "A": Zb / Z,
        "eps_b": max(abs(cs - np.log(Zbs)), abs(c - np.log(Zb))),
        "eps_p": abs(np.log(Zbs / Zs) - np.log(Zb / Z)),
        "b_star": b,
        "delta": (ls[:k] - cs - b) - relu(l[:k] - c - b),
    }
