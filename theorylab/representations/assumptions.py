"""The assumptions of ``002_530e12373cc142da.txt`` (Asm 1-7, Def 2) as quantities and validators.

Each function computes the quantity an assumption is about on a finite instance and raises a ``ValueError`` naming
the assumption when the instance violates it. Words are 0-based: the document's words of interest $1..k$ are the
vocabulary indices $0..k-1$.

* Asm 1: $u^*=\\sum_{j\\le k}c^*_jv^*_j$ (the *teacher* atoms): ``sparse_coefficients``.
* Asm 2: $p_{pre}(x)\\ge\\mu\\,p_{DS}(x)$ on the downstream support, $\\mu=\\min_{p_{DS}>0}p_{pre}/p_{DS}\\in(0,1]$,
  and $\\mu=1$ iff the two laws are equal: ``shift_mu``.
* Asm 3: $f^*\\ge\\gamma$ on POS, $\\le-\\gamma$ on NEG: ``downstream_margin``.
* Asm 4: $f^*$ reads the logits of at most $k$ words (WLOG the first $k$): ``words_of_interest``.
* Asm 5: $B(x,i)\\cap[k]=\\emptyset$: ``check_bulk_disjoint``.
* Asm 6: $Z^*_{bulk}/Z^*\\ge p_b$ for all contexts: ``bulk_probability``.
* Asm 7: $|\\langle v_{-i},v_0\\rangle-\\log Z_{bulk}|\\le\\epsilon_b$ for teacher and student, and
  $\\epsilon_b\\le\\gamma/(4k\\max_j|a^*_j|)$: ``anchor_error``, ``check_anchor_error``.
* Def 2: $\\Gamma=\\gamma/(k\\max_{j\\in[k]}|a^*_j|)$: ``normalized_margin_of``.
"""

from __future__ import annotations

import numpy as np

from theorylab.representations.loglinear import LogLinearLM

__all__ = [
    "anchor_error",
    "bulk_probability",
    "check_anchor_error",
    "check_bulk_disjoint",
    "downstream_margin",
    "normalized_margin_of",
    "shift_mu",
    "sparse_coefficients",
    "words_of_interest",
]


def _law(name: str, p) -> np.ndarray:
    p = np.asarray(p, dtype=float)
    if p.ndim != 1 or p.size == 0 or not np.all(np.isfinite(p)) or p.min() < 0 or abs(p.sum() - 1) > 1e-9:
        raise ValueError(f"{name} must be a probability vector over the contexts")
    return p


def sparse_coefficients(u_star, atoms, k: int, rtol: float = 1e-10) -> np.ndarray:
    """Asm 1: the coefficients $c^*$ of $u^*=\\sum_{j<k}c^*_jv^*_j$ over the first ``k`` teacher atoms (rows of
    ``atoms``), by least squares; ``ValueError`` when the residual exceeds ``rtol`` times $\\|u^*\\|$."""
    A = np.asarray(atoms, dtype=float)
    u = np.asarray(u_star, dtype=float)
    if A.ndim != 2 or u.shape != (A.shape[1],):
        raise ValueError(f"u_star must have the atoms' dimension {A.shape[-1]}")
    if not 1 <= int(k) <= A.shape[0]:
        raise ValueError(f"k must lie in [1, {A.shape[0]}], got {k}")
    c = np.linalg.lstsq(A[: int(k)].T, u, rcond=None)[0]
    res = float(np.linalg.norm(A[: int(k)].T @ c - u))
    if res > rtol * max(float(np.linalg.norm(u)), 1.0):
        raise ValueError(
            f"Assumption 1 fails: u* is not a combination of the first {k} atoms (residual {res:.3g})"
        )
    return c


def shift_mu(p_pre, p_ds) -> float:
    """Asm 2: $\\mu=\\min_{x:p_{DS}(x)>0}p_{pre}(x)/p_{DS}(x)$; ``ValueError`` when $\\mu=0$ (a downstream context
    that pre-training never sees). Always $\\mu\\le1$, with equality iff $p_{pre}=p_{DS}$."""
    pre, ds = _law("p_pre", p_pre), _law("p_ds", p_ds)
    if pre.shape != ds.shape:
        raise ValueError("p_pre and p_ds must be laws on the same contexts")
    on = ds > 0
    mu = float(np.min(pre[on] / ds[on]))
    if not mu > 0:
        raise ValueError("Assumption 2 fails: a downstream context has pre-training probability 0 (mu = 0)")
    return mu


def downstream_margin(f_star, labels, ds_weights) -> float:
    """Asm 3: $\\gamma=\\min_{x:p_{DS}(x)>0}y(x)f^*(x)$ with labels $y=\\pm1$ (POS = +1); ``ValueError`` unless
    $\\gamma>0$."""
    f = np.asarray(f_star, dtype=float)
    y = np.asarray(labels)
    w = _law("ds_weights", ds_weights)
    if f.shape != w.shape or y.shape != w.shape:
        raise ValueError("f_star, labels and ds_weights must have one entry per context")
    if not np.all(np.isin(y, (-1, 1))):
        raise ValueError("labels must be +1 (POS) or -1 (NEG)")
    gamma = float(np.min(y[w > 0] * f[w > 0]))
    if not gamma > 0:
        raise ValueError(f"Assumption 3 fails: min y f* over the downstream support is {gamma:.3g} <= 0")
    return gamma


def words_of_interest(a_full) -> np.ndarray:
    """Asm 4: the words whose logits $f^*=\\sum_ja_j\\sigma(\\cdot)$ reads (non-zero $a_j$ over the whole vocabulary);
    $k$ is their number. The document relabels them $1..k$ (here $0..k-1$)."""
    a = np.asarray(a_full, dtype=float)
    if a.ndim != 1 or not np.all(np.isfinite(a)):
        raise ValueError("a must be a finite vector over the vocabulary")
    idx = np.flatnonzero(a)
    if idx.size == 0:
        raise ValueError("Assumption 4: f* reads no word (all a_j = 0)")
    return idx


def check_bulk_disjoint(bulk, k: int) -> np.ndarray:
    """Asm 5: the bulk words (an index array) avoid the words of interest $0..k-1$; returns the bulk."""
    idx = np.asarray(bulk)
    if idx.ndim != 1 or idx.dtype.kind not in "iu":
        raise ValueError("bulk must be an integer index array")
    if np.intersect1d(idx, np.arange(int(k))).size:
        raise ValueError("Assumption 5: the bulk must not contain the words of interest 0..k-1")
    return idx


def bulk_probability(model: LogLinearLM, bulk, p_b: float | None = None) -> float:
    """Asm 6: $\\min_xZ_{bulk}(x)/Z(x)$; with ``p_b`` given, ``ValueError`` if some context has less."""
    from theorylab.representations.anchor import bulk_logZ

    ratio = float(np.min(np.exp(bulk_logZ(model, np.asarray(bulk)) - model.logZ())))
    if p_b is not None and ratio < p_b:
        raise ValueError(f"Assumption 6 fails: a context has bulk probability {ratio:.3g} < p_b = {p_b:.3g}")
    return ratio


def anchor_error(model: LogLinearLM, anchor_values, bulk) -> float:
    """$\\max_x|\\langle v_{-i}(x),v_0\\rangle-\\log Z_{bulk}(x)|$ for one model (the anchor given per context)."""
    from theorylab.representations.anchor import bulk_logZ

    A = np.asarray(anchor_values, dtype=float)
    if A.shape != (model.contexts.shape[0],):
        raise ValueError("anchor_values must have one value per context")
    return float(np.max(np.abs(A - bulk_logZ(model, np.asarray(bulk)))))


def normalized_margin_of(gamma: float, a) -> float:
    """Def 2: $\\Gamma=\\gamma/(k\\max_{j\\in[k]}|a^*_j|)$ for the $k$ head weights ``a``."""
    a = np.atleast_1d(np.asarray(a, dtype=float))
    if a.ndim != 1 or not np.all(np.isfinite(a)) or not np.any(a):
        raise ValueError("a must be a finite, non-zero vector of head weights")
    if not gamma >= 0:
        raise ValueError(f"gamma must be >= 0, got {gamma}")
    return float(gamma / (a.size * np.max(np.abs(a))))


def check_anchor_error(eps_b: float, gamma: float, a) -> float:
    """Asm 7's second half: $\\epsilon_b\\le\\gamma/(4k\\max_j|a^*_j|)=\\Gamma/4$; returns $\\Gamma/4$."""
    quarter = normalized_margin_of(gamma, a) / 4
    if not eps_b <= quarter:
        raise ValueError(f"Assumption 7 fails: eps_b = {eps_b:.3g} > gamma / (4 k max|a*|) = {quarter:.3g}")
    return quarter
