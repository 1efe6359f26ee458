"""The finite-sample TV bound of MPLE (Li thesis Ch. 4, Theorem 4.1.4, Props 4.3.1-4.3.2, Lemma 4.3.6) on the
finite state space ``{-1, +1}^N`` (states in product order, see ``theorylab.ising.model.spin_states``).

- The conditional-KL pseudolikelihood loss ``L_PL(q; r) = E_{X~r} E_K KL(r(.|X_{-K}), q(.|X_{-K}))`` (a fixed mask
  law, the KL form of the loss).
- Block approximate tensorization (Def 4.1.9): ``KL(r, q) <= C_AT(q) L_PL(q; r)`` for every r; the ratio
  ``KL(r, q) / L_PL(q; r)`` at ``r = q (1 + eps f)`` tends to ``Var_q f / E(f, f)`` (E the Dirichlet form of the block
  dynamics), so ``C_AT(q) >= 1 / gap`` (Prop 4.3.1's constant is at least the relaxation time).
- Lemma 4.3.6: the empirical law of n draws is within ``sqrt(|Omega|^{3N} / (16 delta n))`` in TV w.p. >= 1 - delta.
"""

from __future__ import annotations

import functools
import math
from fractions import Fraction
from itertools import product

import numpy as np

from theorylab.ising.expfam import mask_law
from theorylab.ising.model import spin_states

#: mask counts of one state are drawn from a multinomial with at most this many trials (int64 range)
MAX_DRAWS = 2**62


def _groups(N: int, K) -> np.ndarray:
    """For each state (product order) the index of its class ``x_{-K}`` (read-only; computed once per N and K)."""
    return _groups_cached(int(N), tuple(int(i) for i in K))


@functools.lru_cache(maxsize=256)
def _groups_cached(N: int, K: tuple[int, ...]) -> np.ndarray:
    out = _groups_uncached(N, K)
    out.setflags(write=False)
    return out


def _groups_uncached(N: int, K) -> np.ndarray:
    X = spin_states(N)
    rest = [i for i in range(N) if i not in set(K)]
    if not rest:
        return np.zeros(len(X), dtype=np.int64)
    return np.unique(X[:, rest], axis=0, return_inverse=True)[1].reshape(-1)


def _law(v, N: int, name: str) -> np.ndarray:
    v = np.asarray(v, dtype=np.float64)
    if v.shape != (2**N,) or (v < 0).any() or abs(v.sum() - 1) > 1e-10:
        raise ValueError(f"{name} must be a probability vector over the 2^N = {2**N} states")
    return v


def conditional_kl(r, q, N: int, K) -> np.ndarray:
    """Per state x: ``KL(r(.|x_{-K}), q(.|x_{-K}))`` over the block K (0 where r has no mass in the class)."""
    r, q = _law(r, N, "r"), _law(q, N, "q")
    g = _groups(N, K)
    R, Qm = np.bincount(g, weights=r), np.bincount(g, weights=q)
    rc = r / np.where(R[g] > 0, R[g], 1.0)
    qc = q / np.where(Qm[g] > 0, Qm[g], 1.0)
    with np.errstate(divide="ignore", invalid="ignore"):
        terms = np.where(rc > 0, rc * np.log(rc / qc), 0.0)
    return np.bincount(g, weights=terms)[g]


def pl_kl_loss(r, q, N: int, masks, weights=None) -> float:
    """``E_{X~r} E_K KL(r(.|X_{-K}), q(.|X_{-K}))`` for a fixed mask law."""
    law = mask_law(N, masks, weights)
    r = _law(r, N, "r")
    return float(sum(w * r @ conditional_kl(r, q, N, K) for K, w in zip(law.masks, law.weights, strict=True)))


def kl(r, q) -> float:
    r, q = np.asarray(r, dtype=np.float64), np.asarray(q, dtype=np.float64)
    m = r > 0
    return float(r[m] @ np.log(r[m] / q[m]))


def tensorization_ratio(r, q, N: int, masks, weights=None) -> float:
    """``KL(r, q) / L_PL(q; r)``: every value is a lower bound on ``C_AT(q)`` (Def 4.1.9)."""
    return kl(r, q) / pl_kl_loss(r, q, N, masks, weights)


def support_margin(laws, N: int, masks) -> float:
    """Assumption 4.1.3's beta for a finite class: the smallest conditional ``q(x_K | x_{-K})`` over the laws, the
    states and the masks."""
    law = mask_law(N, masks)
    out = 1.0
    for q in laws:
        q = _law(q, N, "q")
        for K in law.masks:
            g = _groups(N, K)
            out = min(out, float((q / np.bincount(g, weights=q)[g]).min()))
    return out


def tv_bound_lemma436(n_states: int, delta: float, n: int) -> float:
    """``sqrt(|Omega|^{3N} / (16 delta n)) = sqrt(S^3 / (16 delta n))`` with ``S = |Omega|^N`` states."""
    if not 0 < delta < 1 or n < 1:
        raise ValueError(f"need 0 < delta < 1 and n >= 1, got delta={delta}, n={n}")
    return math.sqrt(n_states**3 / (16 * delta * n))


def empirical_tv_tail(p, n: int, threshold) -> Fraction:
    """Exactly ``Pr(TV(p_tilde, p) >= threshold)`` for the empirical law of n i.i.d. draws from a rational p
    (sum over all multinomial count vectors)."""
    p = [Fraction(v) for v in p]
    if sum(p) != 1 or min(p) < 0:
        raise ValueError("p must be a probability vector of Fractions")
    S, total = len(p), Fraction(0)
    for counts in product(range(n + 1), repeat=S - 1):
        last = n - sum(counts)
        if last < 0:
            continue
        c = (*counts, last)
        tv = sum(abs(Fraction(ci, n) - pi) for ci, pi in zip(c, p, strict=True)) / 2
        if tv >= threshold:
            coef = math.factorial(n)
            for ci in c:
                coef //= math.factorial(ci)
            prob = Fraction(coef)
            for ci, pi in zip(c, p, strict=True):
                prob *= pi**ci
            total += prob
    return total


def simulate_tv_bound(
    laws: np.ndarray,
    truth: np.ndarray,
    N: int,
    masks,
    rng: np.random.Generator,
    *,
    n: int,
    m: int,
    delta: float,
    C_AT: np.ndarray,
) -> dict[str, float]:
    """One draw of Theorem 4.1.4's experiment on a finite class ``laws [|Theta|, 2^N]`` (so ``C_eps = |Theta|``,
    eps -> 0): n sequences from ``truth``, m masks per sequence (mask counts drawn as multinomials, at most
    ``MAX_DRAWS`` trials per state), theta_hat the
    minimiser of the empirical conditional-KL loss ``L_hat``; returns TV(p_theta_hat, p) and the right side
    ``sqrt(C_AT/2 (L_hat + B ln(1/beta))) + C`` with the given ``C_AT[theta]`` (a lower bound on C_AT makes the
    checked inequality stronger than the theorem's)."""
    law = mask_law(N, masks)
    S, M = 2**N, len(law.masks)
    p_tilde = rng.multinomial(n, truth) / n
    freq = np.zeros((S, M))
    for x in np.flatnonzero(p_tilde):
        draws = min(int(round(p_tilde[x] * n)) * m, MAX_DRAWS)  # beyond 2^62 draws the noise is ~1e-9: capped
        freq[x] = rng.multinomial(draws, law.weights) / draws
    losses = np.array(
        [
            sum(freq[:, j] * p_tilde @ conditional_kl(p_tilde, q, N, K) for j, K in enumerate(law.masks))
            for q in laws
        ]
    )
    i = int(np.argmin(losses))
    beta = support_margin(laws, N, law.masks)
    Ce = len(laws)
    B = math.sqrt(2 ** (3 * N) * S * Ce / (m * delta)) + math.sqrt(math.log(8 * Ce / delta) / (2 * n))
    C = math.sqrt(S**3 / (8 * delta * n))
    tv = 0.5 * float(np.abs(laws[i] - truth).sum())
    gen = B * math.log(1 / beta)
    return {
        "tv": tv,
        "rhs": math.sqrt(0.5 * C_AT[i] * (losses[i] + gen)) + C,
        "rhs_without_loss": math.sqrt(0.5 * C_AT[i] * gen) + C,
        "loss": float(losses[i]),
        "step1": math.sqrt(0.5 * C_AT[i] * losses[i]),
        "tv_tilde": 0.5 * float(np.abs(p_tilde - truth).sum()),
        "beta": beta,
        "index": i,
    }
