r"""Stage 2 of §2.1: optimal attention with a frozen value matrix (Thms 2.1.3 and 2.1.5), exact finite-size
losses.

Attention family (Assumption 2.1.2): key $i$ gets weight $\beta a_0$ from query $j$ if they show the same
word, $\alpha a_0$ if different words of one topic, $a_0$ otherwise; columns sum to 1 (Prop. 2.1.2). Under
Assumption 2.1.1 the attention-weighted frequency vector $y = [\tilde{\mathbf X}A]_{:j}$ depends only on the
query's word (Prop. 2.1.3), so the loss is a finite sum over (target, shown word) cases, normalised per masked
position with [MASK] queries dropped (their attention does not depend on $\alpha, \beta$).

Two conventions (the thesis leaves them implicit; they move the optimum by up to ~13%):

* ``"thesis"``: [MASK] keys are absent from the normaliser ($z_1, z_2$ of Prop. 2.1.2) and the prediction is
  the proof's denoiser $q(x) = c_3x - c_3p_mp_r/(Tv)$ of the topic average (block $\mathbf W^{V*}$) or of
  $y_i$ (diagonal $\mathbf D^V$);
* ``"literal"``: [MASK] keys get the base weight $a_0$ and the frozen matrix is applied as it is.

With the block matrix only $\gamma = \frac{v-1}v\alpha + \frac1v\beta$ matters (Remark 2.1.5).
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import combinations
from math import comb

import numpy as np

from theorylab.attention.topic.stage1 import (
    _check_matrix,
    constants,
    diagonal_value_matrix,
    optimal_value_matrix,
)
from theorylab.languages.topic import TopicModel

CONVENTIONS = ("thesis", "literal")

__all__ = [
    "CONVENTIONS",
    "Stage2Constants",
    "attended_frequencies",
    "attention_loss_explicit",
    "block_attention_loss",
    "denoiser_matrix",
    "diagonal_attention_loss",
    "diagonal_bounds_hold",
    "explicit_optimal_attention",
    "frozen_value_matrix",
    "gamma_in_interval",
    "gamma_only_gap",
    "optimal_diagonal_attention",
    "optimal_gamma",
    "prop212_normalisers",
    "prop213_case_table",
    "prop213_cases",
    "stage2_constants",
]


@dataclass(frozen=True)
class Stage2Constants:
    r"""Interval constants of Thms 2.1.3 / 2.1.5 and the leading-order optima (all floats).

    ``lambda1`` is the constant printed in Thm 2.1.3; ``c5`` is what its proof establishes,
    $c_5 = (1 + c_4p_mp_r)(2 - c_4)/(2c_4)$. ``gamma_star`` $= ((\tau-1) + c_4p_mp_r\tau)/(c_4-1)$ minimises
    the leading-order loss (2.27) (where the top-topic score $r(\gamma) = 1/v$); ``beta_star``
    $= v((1+c_4p_mp_r)\tau - 1)/(c_4-1)$ likewise for (2.36) with $\alpha \ll \beta/(v-1)$.
    """

    lambda1: float
    c5: float
    lambda2: float
    lambda3: float
    lambda4: float
    lambda5: float
    gamma_star: float
    beta_star: float


def stage2_constants(params: TopicModel) -> Stage2Constants:
    p_m, p_c, p_r = float(params.p_m), float(params.p_c), float(params.p_r)
    v, tau = params.v, params.tau
    a = float(params.a)
    c4 = 1 / a
    x = (1 - p_c) * p_m
    lam4_den = np.sqrt(v - 1) - 2 + x if v > 1 else -1.0
    return Stage2Constants(
        lambda1=(a + p_m * p_r) * (1 + x) / (2 * a),
        c5=(1 + c4 * p_m * p_r) * (2 - c4) / (2 * c4),
        lambda2=100 * (a / (p_m * p_r) + 1),
        lambda3=(a + p_m * p_r) * v / 100,
        lambda4=a / lam4_den * (1 - (1 - p_c - p_r) * p_m) / (p_m * p_r) * v
        if lam4_den > 0
        else float("nan"),
        lambda5=c4 / (v - 1) if v > 1 else float("inf"),
        gamma_star=((tau - 1) + c4 * p_m * p_r * tau) / (c4 - 1),
        beta_star=v * ((1 + c4 * p_m * p_r) * tau - 1) / (c4 - 1),
    )


def _check_convention(convention: str) -> None:
    if convention not in CONVENTIONS:
        raise ValueError(f"convention must be one of {CONVENTIONS}, got {convention!r}")


def _positive(name: str, x) -> np.ndarray:
    x = np.asarray(x, dtype=float)
    if not np.all(np.isfinite(x)) or np.any(x <= 0):
        raise ValueError(f"attention ratio {name} must be positive and finite")
    return x


def _floats(params: TopicModel) -> tuple[float, ...]:
    k = constants(params)
    return (float(params.p1), float(params.p2), float(params.m0), float(params.b), float(k.c3), float(k.c1))


def block_attention_loss(gamma, params: TopicModel, convention: str = "thesis") -> np.ndarray:
    r"""Exact finite-size loss $L(\gamma)$ of the proof of Thm 2.1.3 (three cases: the shown word is in the
    target's topic, in another present topic, in an absent topic), vectorised over ``gamma``."""
    _check_convention(convention)
    g = _positive("gamma", gamma)
    T, v, tau = params.T, params.v, params.tau
    p_c, p_r = float(params.p_c), float(params.p_r)
    p1, p2, m0, b, c3, _ = _floats(params)
    k = constants(params)
    extra = m0 if convention == "literal" else 0.0
    Z1 = v * g * p1 + p1 * v * (tau - 1) + p2 * v * (T - tau) + extra
    Z2 = v * g * p2 + p1 * v * tau + p2 * v * (T - tau - 1) + extra

    def pred(x, Z):
        if convention == "thesis":
            return c3 * x - c3 * b
        y0 = m0 / Z
        return c3 * x + float(k.w_mask_col) * y0 + float(k.w_diff) * (1 - y0)

    f = lambda x, Z: pred(x, Z) ** 2
    case_a = (1 - pred(p1 * g / Z1, Z1)) ** 2 + (v - 1) * f(p1 * g / Z1, Z1)
    case_a = case_a + v * (tau - 1) * f(p1 / Z1, Z1) + v * (T - tau) * f(p2 / Z1, Z1)
    case_b = (1 - pred(p1 / Z1, Z1)) ** 2 + v * f(p1 * g / Z1, Z1)
    case_b = case_b + (v * (tau - 1) - 1) * f(p1 / Z1, Z1) + v * (T - tau) * f(p2 / Z1, Z1)
    case_c = (1 - pred(p1 / Z2, Z2)) ** 2 + (v * tau - 1) * f(p1 / Z2, Z2)
    case_c = case_c + v * f(p2 * g / Z2, Z2) + v * (T - tau - 1) * f(p2 / Z2, Z2)
    return (p_c + p_r / T) * case_a + p_r * (tau - 1) / T * case_b + p_r * (1 - tau / T) * case_c


def diagonal_attention_loss(alpha, beta, params: TopicModel, convention: str = "thesis") -> np.ndarray:
    r"""Exact finite-size loss $L(\alpha, \beta)$ of the proof of Thm 2.1.5 (four cases), frozen $\mathbf
    D^V$."""
    _check_convention(convention)
    al, be = np.broadcast_arrays(_positive("alpha", alpha), _positive("beta", beta))
    return _diagonal_loss(params, convention)(al, be)


def _diagonal_loss(params: TopicModel, convention: str):
    r"""$L(\alpha, \beta)$ of :func:`diagonal_attention_loss` as a function of validated ratios, with the
    model's constants read once: on numpy arrays it is the vectorised loss; on Python floats the same operations
    in the same order, a scalar path for the optimiser's many single evaluations (``x ** 2`` is ``pow`` for
    Python and numpy scalars alike, so a float gives the value a 0-d array gives, to the last bit)."""
    T, v, tau = params.T, params.v, params.tau
    p_c, p_r = float(params.p_c), float(params.p_r)
    p1, p2, m0, b, c3, c1 = _floats(params)
    extra = m0 if convention == "literal" else 0.0
    thesis = convention == "thesis"

    def loss(al, be):
        z1 = be * p1 + al * p1 * (v - 1) + p1 * v * (tau - 1) + p2 * v * (T - tau) + extra
        z2 = be * p2 + al * p2 * (v - 1) + p1 * v * tau + p2 * v * (T - tau - 1) + extra

        def pred(x, z):
            return c3 * x - (c3 * b if thesis else c1 * m0 / z)

        f = lambda x, z: pred(x, z) ** 2
        rest1 = v * (tau - 1) * f(p1 / z1, z1) + v * (T - tau) * f(p2 / z1, z1)
        case1 = (1 - pred(p1 * be / z1, z1)) ** 2 + (v - 1) * f(p1 * al / z1, z1) + rest1
        case2 = (
            (1 - pred(p1 * al / z1, z1)) ** 2 + f(p1 * be / z1, z1) + (v - 2) * f(p1 * al / z1, z1) + rest1
        )
        case3 = (1 - pred(p1 / z1, z1)) ** 2 + f(p1 * be / z1, z1) + (v - 1) * f(p1 * al / z1, z1)
        case3 = case3 + (v * (tau - 1) - 1) * f(p1 / z1, z1) + v * (T - tau) * f(p2 / z1, z1)
        case4 = (1 - pred(p1 / z2, z2)) ** 2 + (v * tau - 1) * f(p1 / z2, z2) + f(p2 * be / z2, z2)
        case4 = case4 + (v - 1) * f(p2 * al / z2, z2) + v * (T - tau - 1) * f(p2 / z2, z2)
        return (
            (p_c + p_r / (v * T)) * case1
            + p_r / T * (1 - 1 / v) * case2
            + p_r * (tau - 1) / T * case3
            + p_r * (1 - tau / T) * case4
        )

    return loss


def denoiser_matrix(params: TopicModel, kind: str = "block") -> np.ndarray:
    r"""The proof's prediction map as a matrix acting on $y$ with $y_0 = 0$ and $\sum y = 1$ ("thesis"
    convention): $c_3\cdot$(topic average, or $y_i$) $- c_3p_mp_r/(Tv)$; row 0 is zero."""
    k = constants(params)
    c3, b, V, T, v = float(k.c3), float(params.b), params.V, params.T, params.v
    W = np.zeros((V, V))
    if kind == "block":
        W[1:, 1:] = np.kron(np.eye(T), np.ones((v, v))) * (c3 / v)
    elif kind == "diagonal":
        W[1:, 1:] = np.eye(T * v) * c3
    else:
        raise ValueError(f"kind must be 'block' or 'diagonal', got {kind!r}")
    W[1:, 1:] -= c3 * b
    return W


def attention_loss_explicit(
    W: np.ndarray,
    alpha: float,
    beta: float,
    params: TopicModel,
    mask_keys: bool,
    all_subsets: bool = False,
    max_subsets: int = 2000,
) -> float:
    r"""The stage-2 loss computed directly from vectors, for any frozen ``W`` (no case algebra).

    For each shown word $q$ builds $y(q)$ from the masked frequencies and the attention ratios (``mask_keys``:
    whether [MASK] keys get the base weight), predicts $\mathbf W y(q)$ and averages
    $\|\mathbf W y(q) - e_w\|^2$ over target words $w$ and shown words $q \ne$ [MASK] with probability
    $P(w)(p_c[q = w] + p_r/(Tv))$. Uses the document with topics $0..\tau-1$ (valid for topic-permutation
    equivariant ``W``), or averages over all topic subsets with ``all_subsets``. $O(V^3)$ per subset.
    """
    W = _check_matrix(W, params).astype(float)
    alpha, beta = float(_positive("alpha", alpha)), float(_positive("beta", beta))
    T, v, tau, V = params.T, params.v, params.tau, params.V
    Tv = T * v
    p_c, p_r = float(params.p_c), float(params.p_r)
    p1, p2, m0 = float(params.p1), float(params.p2), float(params.m0)
    weights = np.ones((V, Tv))  # weight of key l (rows) for the query showing word q (columns)
    weights[1:, :] += (alpha - 1) * np.kron(np.eye(T), np.ones((v, v)))
    weights[np.arange(1, V), np.arange(Tv)] = beta
    weights[0, :] = 1.0 if mask_keys else 0.0
    if all_subsets:
        if comb(T, tau) > max_subsets:
            raise ValueError(f"{comb(T, tau)} topic subsets exceed max_subsets = {max_subsets}")
        subsets = list(combinations(range(T), tau))
    else:
        subsets = [tuple(range(tau))]
    total = 0.0
    for topics in subsets:
        present = np.zeros(Tv, dtype=bool)
        for t in topics:
            present[t * v : (t + 1) * v] = True
        freq = np.concatenate([[m0], np.where(present, p1, p2)])
        Y = freq[:, None] * weights
        Y /= Y.sum(axis=0, keepdims=True)
        pred = W @ Y  # column q: the prediction when the query shows word q
        p_w = present / (tau * v)
        joint = p_w[:, None] * (p_c * np.eye(Tv) + p_r / Tv)  # P(target w, shown q)
        total += (
            (joint.sum(axis=0) * (pred**2).sum(axis=0)).sum() - 2 * (joint * pred[1:, :]).sum() + joint.sum()
        )
    return total / len(subsets)


# ------------------------------------------------------------------------------------------------------------
# optimisers
# ------------------------------------------------------------------------------------------------------------
def optimal_gamma(
    params: TopicModel, convention: str = "thesis", log10_range=(-4.0, 12.0)
) -> tuple[float, float]:
    r"""$\arg\min_\gamma L(\gamma)$ and the minimum: log-grid scan, then bounded Brent refinement in
    $\log\gamma$."""
    from scipy.optimize import minimize_scalar

    grid = np.linspace(*log10_range, 1601)
    losses = block_attention_loss(10.0**grid, params, convention)
    i = int(np.argmin(losses))
    lo, hi = grid[max(i - 1, 0)], grid[min(i + 1, len(grid) - 1)]
    res = minimize_scalar(
        lambda s: float(block_attention_loss(10.0**s, params, convention)),
        bounds=(lo, hi),
        method="bounded",
        options={"xatol": 1e-10},
    )
    best = (
        (10.0 ** float(res.x), float(res.fun))
        if res.fun <= losses[i]
        else (10.0 ** grid[i], float(losses[i]))
    )
    return best


def optimal_diagonal_attention(
    params: TopicModel, convention: str = "thesis", log10_alpha=(-12.0, 8.0), log10_beta=(-4.0, 12.0)
) -> tuple[float, float, float]:
    r"""$\arg\min_{\alpha,\beta} L(\alpha, \beta)$ for frozen $\mathbf D^V$, returned as ``(alpha, beta,
    loss)``.

    The landscape is nearly flat in $\alpha$ (differences ~1e-11), so a joint simplex search stalls; instead
    the profile $\min_\beta L(\alpha, \beta)$ is minimised over a log grid of $\alpha$, then refined (Brent in
    $\log\alpha$, each profile value by Brent in $\log\beta$ after a grid scan).
    """
    from scipy.optimize import minimize_scalar

    _check_convention(convention)
    _positive("alpha", 10.0 ** np.asarray(log10_alpha, dtype=float))  # the ends of the searched ranges: every
    _positive("beta", 10.0 ** np.asarray(log10_beta, dtype=float))  # ratio searched lies between them
    loss = _diagonal_loss(params, convention)
    lb = np.linspace(*log10_beta, 801)
    betas = 10.0**lb

    def profile(la: float) -> tuple[float, float]:
        alpha = 10.0**la
        losses = loss(alpha, betas)
        j = int(np.argmin(losses))
        alpha = float(alpha)
        res = minimize_scalar(
            lambda x: loss(alpha, float(10.0**x)),
            bounds=(lb[max(j - 1, 0)], lb[min(j + 1, len(lb) - 1)]),
            method="bounded",
            options={"xatol": 1e-10},
        )
        return (float(res.x), float(res.fun)) if res.fun <= losses[j] else (float(lb[j]), float(losses[j]))

    la_grid = np.linspace(*log10_alpha, 161)
    values = [profile(la)[1] for la in la_grid]
    i = int(np.argmin(values))
    res = minimize_scalar(
        lambda la: profile(la)[1],
        bounds=(la_grid[max(i - 1, 0)], la_grid[min(i + 1, len(la_grid) - 1)]),
        method="bounded",
        options={"xatol": 1e-8},
    )
    la = float(res.x) if res.fun <= values[i] else float(la_grid[i])
    lb_best, loss_best = profile(la)
    return 10.0**la, 10.0**lb_best, loss_best


def frozen_value_matrix(params: TopicModel, kind: str, convention: str) -> np.ndarray:
    r"""The frozen $\mathbf W^V$ that the closed-form stage-2 losses assume under ``convention``."""
    _check_convention(convention)
    if convention == "thesis":
        return denoiser_matrix(params, kind)
    matrix = optimal_value_matrix(params) if kind == "block" else diagonal_value_matrix(params)
    return matrix.astype(float)


# ------------------------------------------------------------------------------------------------------------
# verdicts
# ------------------------------------------------------------------------------------------------------------
def gamma_only_gap(W: np.ndarray, params: TopicModel, mask_keys: bool, pairs=None) -> float:
    r"""Remark 2.1.5 as a number: the largest change of the (explicit) loss between attention ratios with the
    same $\gamma$; zero up to round-off for a block-uniform frozen matrix."""
    v = params.v
    if pairs is None:  # four (alpha, beta) with gamma = 2
        pairs = [(al, 2.0 * v - (v - 1) * al) for al in (0.25, 1.0, 1.5, 2.0)]
    losses = [attention_loss_explicit(W, al, be, params, mask_keys) for al, be in pairs]
    gammas = [(v - 1) / v * al + be / v for al, be in pairs]
    if max(gammas) - min(gammas) > 1e-9 * max(gammas):
        raise ValueError("the pairs must share one value of gamma")
    return float(max(losses) - min(losses))


def gamma_in_interval(params: TopicModel, gamma: float, constant: str = "proved") -> bool:
    r"""Thm 2.1.3's conclusion for ``gamma``: inside $(c(\tau-1), \lambda_2T)$ with $c = c_5$ (``"proved"``)
    or the printed $\lambda_1$ (``"stated"``)."""
    if constant not in ("proved", "stated"):
        raise ValueError(f"constant must be 'proved' or 'stated', got {constant!r}")
    if not np.isfinite(gamma):
        raise ValueError(f"gamma must be finite, got {gamma}")
    k = stage2_constants(params)
    lower = {"proved": k.c5, "stated": k.lambda1}[constant] * (params.tau - 1)
    return bool(lower < gamma < k.lambda2 * params.T)


def diagonal_bounds_hold(params: TopicModel, alpha: float, beta: float) -> bool:
    r"""Thm 2.1.5's conclusion: $\lambda_3\tau < \beta < \lambda_4T$ and $\alpha < \lambda_5\beta$."""
    if not (np.isfinite(alpha) and np.isfinite(beta)):
        raise ValueError(f"alpha and beta must be finite, got alpha={alpha}, beta={beta}")
    k = stage2_constants(params)
    return bool(k.lambda3 * params.tau < beta < k.lambda4 * params.T and alpha < k.lambda5 * beta)


def explicit_optimal_attention(
    W: np.ndarray, params: TopicModel, mask_keys: bool, start=(0.0, 1.0)
) -> tuple[float, float, float]:
    r"""Direct numerical minimisation of :func:`attention_loss_explicit` over $(\log\alpha, \log\beta)$
    (Nelder-Mead from a coarse grid); returns ``(alpha, beta, loss)``. Small vocabularies only."""
    from scipy.optimize import minimize

    fun = lambda x: attention_loss_explicit(W, 10.0 ** x[0], 10.0 ** x[1], params, mask_keys)
    grid = [(la, lb) for la in np.linspace(-3, 3, 7) for lb in np.linspace(-1, 4, 11)]
    x0 = min(grid, key=fun)
    res = minimize(fun, x0=np.array(x0), method="Nelder-Mead", options={"xatol": 1e-9, "fatol": 1e-16})
    return 10.0 ** float(res.x[0]), 10.0 ** float(res.x[1]), float(res.fun)


# ------------------------------------------------------------------------------------------------------------
# Props 2.1.2 / 2.1.3: the attention family on an infinitely long document
# ------------------------------------------------------------------------------------------------------------
def _one(params: TopicModel):
    return params.p_m * 0 + 1  # 1 in the parameters' arithmetic (Fraction or float)


def _ratio_matrix(params: TopicModel, alpha, beta, mask_keys: bool) -> np.ndarray:
    """Unnormalised weight of key word $l$ (rows, ``MASK`` = row 0) for query word $q$ (columns $1..Tv$)."""
    T, v, V = params.T, params.v, params.V
    one = _one(params)
    dt = object if params.exact else float
    R = np.full((V, T * v), one, dtype=dt)
    same_topic = np.kron(np.eye(T, dtype=bool), np.ones((v, v), dtype=bool))
    R[1:, :][same_topic] = alpha * one
    R[np.arange(1, V), np.arange(T * v)] = beta * one
    R[0, :] = one if mask_keys else 0 * one
    return R


def attended_frequencies(
    params: TopicModel, alpha, beta, topics=None, mask_keys: bool = False, normalise: str = "keys"
) -> np.ndarray:
    r"""$[\tilde{\mathbf X}A]_{lq}$ on an infinitely long masked document (Assumption 2.1.1) under the attention
    family of Assumption 2.1.2, computed from vectors: the attention mass that a query showing word $q$ (columns
    $1..Tv$) puts on the keys showing word $l$ (rows; row 0 = ``MASK``).

    Key frequencies are $p_1$ (present topics, default ``topics`` $= 0..\tau-1$), $p_2$ (absent) and $m_0$
    (``MASK``). ``mask_keys``: whether ``MASK`` keys get the base weight (the "literal" reading) or none (the
    thesis's normaliser). ``normalise="keys"`` is the softmax over keys (each query's column sums to 1, as the
    proofs use); ``"queries"`` is the formula printed under (2.5), $\exp(A_{ij}) / \sum_l \exp(A_{il})$, which
    normalises each key's weights over the queries. Exact with Fraction parameters and ratios."""
    if normalise not in ("keys", "queries"):
        raise ValueError(f"normalise must be 'keys' or 'queries', got {normalise!r}")
    for name, x in (("alpha", alpha), ("beta", beta)):
        if not x > 0:
            raise ValueError(f"attention ratio {name} must be positive, got {x}")
    T, tau = params.T, params.tau
    topics = tuple(range(tau)) if topics is None else tuple(int(t) for t in topics)
    if len(set(topics)) != tau or not all(0 <= t < T for t in topics):
        raise ValueError(f"need {tau} distinct present topics in 0..{T - 1}, got {topics}")
    freq = params.word_frequencies(np.array(topics))  # [V], MASK first
    query_freq = freq[1:]
    W = freq[:, None] * _ratio_matrix(params, alpha, beta, mask_keys)  # mass before normalisation
    if normalise == "keys":
        return W / W.sum(axis=0)[None, :]
    # the printed formula: key l's weights are normalised over all query positions; a query showing word q occurs
    # with frequency freq(q), a [MASK] query (score 0, weight 1) with frequency m0
    R = _ratio_matrix(params, alpha, beta, mask_keys)
    per_key = (R * query_freq[None, :]).sum(axis=1) + freq[0]
    return W / per_key[:, None]


def prop212_normalisers(params: TopicModel, alpha, beta) -> tuple:
    r"""Prop 2.1.2's printed normalisers: $a_0 = 1/(zN)$ with
    $z_1 = \beta p_1 + \alpha p_1(v-1) + p_1v(\tau-1) + p_2v(T-\tau)$ for a query word of a present topic and
    $z_2 = \beta p_2 + \alpha p_2(v-1) + p_1v\tau + p_2v(T-\tau-1)$ for one of an absent topic."""
    T, v, tau, p1, p2 = params.T, params.v, params.tau, params.p1, params.p2
    z1 = beta * p1 + alpha * p1 * (v - 1) + p1 * v * (tau - 1) + p2 * v * (T - tau)
    z2 = beta * p2 + alpha * p2 * (v - 1) + p1 * v * tau + p2 * v * (T - tau - 1)
    return z1, z2


def prop213_cases(params: TopicModel, alpha, beta) -> dict[tuple[str, str], object]:
    r"""Prop 2.1.3's eight printed entries of $[\tilde{\mathbf X}A]_{lq}$, keyed by (query kind, key kind): query
    in a present or an absent topic; key the same word, another word of the query's topic, a word of another
    present topic, a word of another absent topic."""
    z1, z2 = prop212_normalisers(params, alpha, beta)
    p1, p2 = params.p1, params.p2
    return {
        ("present", "same_word"): p1 * beta / z1,
        ("present", "same_topic"): p1 * alpha / z1,
        ("present", "other_present"): p1 / z1,
        ("present", "other_absent"): p2 / z1,
        ("absent", "same_word"): p2 * beta / z2,
        ("absent", "same_topic"): p2 * alpha / z2,
        ("absent", "other_present"): p1 / z2,
        ("absent", "other_absent"): p2 / z2,
    }


def prop213_case_table(params: TopicModel, attended: np.ndarray, topics=None) -> dict[tuple[str, str], set]:
    r"""The distinct values of an ``attended`` matrix (:func:`attended_frequencies`) in each of Prop 2.1.3's eight
    (query kind, key kind) classes; a class that the document cannot contain (e.g. another absent topic when
    $\tau = T - 1$) is left out."""
    T, v, tau = params.T, params.v, params.tau
    topics = set(range(tau) if topics is None else topics)
    word_topic = np.repeat(np.arange(T), v)
    out: dict[tuple[str, str], set] = {}
    for q in range(T * v):
        q_kind = "present" if word_topic[q] in topics else "absent"
        for l in range(T * v):
            if l == q:
                k_kind = "same_word"
            elif word_topic[l] == word_topic[q]:
                k_kind = "same_topic"
            else:
                k_kind = "other_present" if word_topic[l] in topics else "other_absent"
            out.setdefault((q_kind, k_kind), set()).add(attended[1 + l, q])
    return out
