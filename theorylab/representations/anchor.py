"""Anchor vectors and the downstream guarantee of ``002_530e12373cc142da.txt`` (Def 1, Hyp 1, Lemma 1, Thm 3).

* Thm 1 (exact, derived): lowering the logit of a word of teacher probability $p^-$ by $s$ costs
  $\\mathrm{KL}=sp^-+\\log(1-p^-(1-e^{-s}))\\le sp^-$ (printed bound $2sp^-$, needs no $p^-\\le\\tfrac12$).
* Bulk partition function $Z_{bulk}=\\sum_{j\\in B}e^{z_j}$, anchor $\\langle v_{-i},v_0\\rangle\\approx\\log Z_{bulk}$
  fitted by float64 least squares (``fit_anchor``, with an optional intercept, reporting MSE and $R^2$).
* Lemma 1: at a misclassified context, $\\|p^*-p\\|_1\\ge p_b\\min_{\\epsilon_p\\ge0}\\{(1-e^{-\\epsilon_p})+
  k\\min_je^{b^*_j-\\epsilon_b-\\epsilon_p}(e^{\\sigma(\\Gamma/2-2\\epsilon_b-\\epsilon_p)}-1)\\}$ (``lemma1_rhs``).
  The document calls the left side TV (l.455) and applies Pinsker as for TV.
* Thm 3: $\\epsilon_{CLS}\\le\\epsilon_{KL}\\cdot C/(\\mu p_b^2\\Gamma^2)$ with printed $C=288$; the rigorous chain
  with $\\mathrm{TV}=\\tfrac12\\|\\cdot\\|_1$ gives $C=1152$ (``thm3_bound(constant=...)``).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from theorylab._logsumexp import logsumexp
from theorylab.representations.heads import AnchoredHead
from theorylab.representations.loglinear import LogLinearLM

__all__ = [
    "AnchorFit",
    "Thm3Quantities",
    "bulk_logZ",
    "fit_anchor",
    "kl_word_shift",
    "lemma1_rhs",
    "thm3_bound",
    "thm3_quantities",
]

THM3_CONSTANTS = (288, 1152)


def kl_word_shift(p_minus, s, p_rest=None):
    """Exact $\\mathrm{KL}(p^*\\|p)=sp^-+\\log(1-p^-+p^-e^{-s})$ after lowering one logit of teacher probability
    $p^-$ by $s$. ``p_rest`` (the mass $1-p^-$ of the other words, if known accurately) avoids cancellation when
    $p^-\\approx1$."""
    p = np.asarray(p_minus, dtype=float)
    s = np.asarray(s, dtype=float)
    if np.any((p < 0) | (p > 1)) or not np.all(np.isfinite(p)):
        raise ValueError("p_minus must lie in [0, 1]")
    rest = 1 - p if p_rest is None else np.asarray(p_rest, dtype=float)
    return s * p + np.log(rest + p * np.exp(-s))


def bulk_logZ(model: LogLinearLM, bulk) -> np.ndarray:
    """$\\log Z_{bulk}(x)$; ``bulk`` is an index array of bulk words (the same for all contexts) or an int k: all
    words except the top-k of each context by probability."""
    z = model.logits()
    if isinstance(bulk, int | np.integer):
        k = int(bulk)
        if not 0 <= k < model.n_words:
            raise ValueError(f"k must lie in [0, {model.n_words}), got {k}")
        if k == 0:
            return logsumexp(z, axis=1)
        return logsumexp(np.sort(z, axis=1)[:, : model.n_words - k], axis=1)
    idx = np.asarray(bulk)
    if idx.ndim != 1 or idx.size == 0 or idx.dtype.kind not in "iu":
        raise ValueError("bulk must be a non-empty integer index array or an int k")
    if idx.min() < 0 or idx.max() >= model.n_words or len(set(idx.tolist())) != idx.size:
        raise ValueError("bulk indices must be distinct words of the vocabulary")
    return logsumexp(z[:, idx], axis=1)


@dataclass(frozen=True)
class AnchorFit:
    v0: np.ndarray
    intercept: float
    mse: float
    r2: float
    max_error: float

    def values(self, model: LogLinearLM) -> np.ndarray:
        return model.contexts @ self.v0 + self.intercept


def fit_anchor(model: LogLinearLM, target: np.ndarray, *, intercept: bool = True) -> AnchorFit:
    """Weighted least squares $\\min_{v_0,c}\\mathbb E_x(\\langle v_{-i},v_0\\rangle+c-\\log Z_{bulk})^2$ in float64."""
    y = np.asarray(target, dtype=float)
    C = model.contexts
    if y.shape != (C.shape[0],) or not np.all(np.isfinite(y)):
        raise ValueError(f"target must be a finite vector of length {C.shape[0]}")
    A = np.hstack([C, np.ones((C.shape[0], 1))]) if intercept else C
    sw = np.sqrt(model.weights)
    coef = np.linalg.lstsq(A * sw[:, None], y * sw, rcond=None)[0]
    res = A @ coef - y
    mse = float(model.weights @ res**2)
    var = float(model.weights @ (y - model.weights @ y) ** 2)
    v0 = coef[: C.shape[1]]
    return AnchorFit(
        v0,
        float(coef[-1]) if intercept else 0.0,
        mse,
        1 - mse / var if var > 0 else 1.0,
        float(np.max(np.abs(res))),
    )


def lemma1_rhs(p_b: float, k: int, b_star, eps_b: float, Gamma: float) -> float:
    """$p_b\\min_{\\epsilon_p\\ge0}\\{(1-e^{-\\epsilon_p})+k\\min_je^{b^*_j-\\epsilon_b-\\epsilon_p}
    (e^{\\sigma(\\Gamma/2-2\\epsilon_b-\\epsilon_p)}-1)\\}$. The bracket is increasing for $\\epsilon_p\\ge\\Lambda=
    \\Gamma/2-2\\epsilon_b$, so the min lies in $[0,\\max(\\Lambda,0)]$ (bounded scalar search plus a grid)."""
    from scipy.optimize import minimize_scalar

    b = np.atleast_1d(np.asarray(b_star, dtype=float))
    if not 0 <= p_b <= 1 or int(k) < 1 or eps_b < 0 or Gamma <= 0:
        raise ValueError("need p_b in [0, 1], k >= 1, eps_b >= 0, Gamma > 0")
    lam = Gamma / 2 - 2 * eps_b
    cst = int(k) * np.exp(b.min() - eps_b)

    def g(e):
        return -np.expm1(-e) + cst * np.exp(-e) * np.expm1(max(lam - e, 0.0))

    hi = max(lam, 0.0)
    grid = np.linspace(0.0, hi, 2001)
    vals = -np.expm1(-grid) + cst * np.exp(-grid) * np.expm1(np.maximum(lam - grid, 0.0))  # g on the grid
    best = float(vals.min())
    if hi > 0:
        res = minimize_scalar(g, bounds=(0.0, hi), method="bounded", options={"xatol": 1e-12})
        best = min(best, float(res.fun))
    return float(p_b * best)


def thm3_bound(eps_kl: float, mu: float, p_b: float, Gamma: float, constant: int = 288) -> float:
    """$\\epsilon_{KL}\\cdot C/(\\mu p_b^2\\Gamma^2)$; ``constant`` 288 (printed) or 1152 (rigorous with TV)."""
    if constant not in THM3_CONSTANTS:
        raise ValueError(f"constant must be one of {THM3_CONSTANTS}, got {constant}")
    if not (mu >= 0 and p_b >= 0 and Gamma >= 0) or not eps_kl >= 0:
        raise ValueError("need eps_kl >= 0 and mu, p_b, Gamma >= 0 (finite)")
    denom = mu * p_b**2 * Gamma**2
    return float(eps_kl * constant / denom) if denom > 0 else float("inf")


@dataclass(frozen=True)
class Thm3Quantities:
    eps_kl: float
    eps_cls: float
    mu: float
    p_b: float
    gamma: float
    Gamma: float
    eps_b: float
    hypotheses_hold: bool
    failed: tuple[str, ...]
    eps_sign: float = float("nan")  # Pr_DS[f f* <= 0]: also counts f = 0 (eps_cls counts only strict flips)

    def bound(self, constant: int = 288) -> float:
        return thm3_bound(self.eps_kl, self.mu, self.p_b, self.Gamma, constant)

    def holds(self, constant: int = 288) -> bool:
        """The verdict: ``eps_cls <= bound`` (only meaningful when ``hypotheses_hold``)."""
        return self.eps_cls <= self.bound(constant)


def thm3_quantities(
    teacher: LogLinearLM,
    student: LogLinearLM,
    teacher_head: AnchoredHead,
    student_head: AnchoredHead,
    bulk,
    ds_weights,
) -> Thm3Quantities:
    """Every quantity of Thm 3 over the whole finite context set: $\\mu=\\min_{DS}p_{pre}/p_{DS}$, $\\gamma=\\min_{DS}
    |f^*|$, $\\Gamma=\\gamma/(k\\max|a^*|)$, $p_b=\\min_xZ^*_b/Z^*$, $\\epsilon_b$ = worst anchor error of teacher and
    student, $\\epsilon_{KL}$ over $\\mathcal D_{pre}$, $\\epsilon_{CLS}=\\Pr_{DS}[ff^*<0]$; and which hypotheses fail."""
    teacher._check_same_support(student)
    w_ds = np.asarray(ds_weights, dtype=float)
    if w_ds.shape != teacher.weights.shape or w_ds.min() < 0 or abs(w_ds.sum() - 1) > 1e-9:
        raise ValueError("ds_weights must be a probability vector over the contexts")
    a = np.asarray(teacher_head.a, dtype=float)
    b = np.asarray(teacher_head.b, dtype=float)
    k = a.size
    bulk_idx = np.asarray(bulk)
    if np.intersect1d(bulk_idx, np.arange(k)).size:
        raise ValueError("Assumption 5: the bulk must not contain the words of interest 0..k-1")
    ds = w_ds > 0
    f_star = teacher_head(teacher)
    f = student_head(student)
    mu = float(np.min(teacher.weights[ds] / w_ds[ds]))
    gamma = float(np.min(np.abs(f_star[ds])))
    Gamma = gamma / (k * np.max(np.abs(a)))
    teacher_bulk = bulk_logZ(teacher, bulk_idx)  # read twice below, computed once
    p_b = float(np.min(np.exp(teacher_bulk - teacher.logZ())))
    eps_b = float(
        max(
            np.max(np.abs(teacher_head.anchors(teacher) - teacher_bulk)),
            np.max(np.abs(student_head.anchors(student) - bulk_logZ(student, bulk_idx))),
        )
    )
    failed = []
    if not mu > 0:
        failed.append("Asm 2 (mu > 0)")
    if not gamma > 0:
        failed.append("Asm 3 (margin > 0)")
    if not eps_b <= Gamma / 4:
        failed.append("Asm 7 (eps_b <= Gamma/4)")
    if not 8 * eps_b < Gamma < 6:
        failed.append("8 eps_b < Gamma < 6")
    if not b.min() >= eps_b - np.log(4 * k):
        failed.append("min b* >= eps_b - log(4k)")
    eps_cls = float(w_ds @ (f * f_star < 0))
    return Thm3Quantities(
        max(teacher.kl_to(student), 0.0),  # round-off can give -1e-17 at KL = 0
        eps_cls,
        mu,
        p_b,
        gamma,
        Gamma,
        eps_b,
        not failed,
        tuple(failed),
        float(w_ds @ (f * f_star <= 0)),
    )
