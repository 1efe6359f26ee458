"""Structure of the flattest solutions and random-feature solutions of §E-F of ``000_7523275b422019f8.txt``.

* Lemma F.3 (``neuron_form``): at a flattest solution every non-zero neuron has token weights
  $V^{(c)}_i=c_i\\mathbf 1_T$ and mask weights $V^{(p)}_i\\in\\{0,\\pm c_i\\}^T$ (proof, l.492-508). On a downstream
  string $h=z/T$ (no mask), $V_i^\\top h=c_i(\\#\\langle-\\#\\rangle)/T=-c_ig^*/T$: a neuron with $c_i>0$ (in $I_-$,
  $u_i<0$) is active exactly when $g^*<0$ (``downstream_preactivations``).
* Lemma F.7 (``lemF7_coefficient``): for $v\\sim\\mathcal N(0,\\tau^2I)$ and a linear target $w^\\top h$, the coefficient
  $a(v)=\\tfrac2{\\tau^2}v^\\top w$ has $\\mathbb E[\\sigma(v^\\top h)a(v)]=w^\\top h$ (Stein: $\\mathbb E[\\sigma(v^\\top h)v]=
  \\tfrac{\\tau^2}2h$) and $\\mathbb Ea^2=4\\|w\\|^2/\\tau^2$; $\\mathrm{Var}[\\sigma(v^\\top h)a(v)]=3(w^\\top h)^2+
  2\\|h\\|^2\\|w\\|^2$ (``lemF7_moments``).
* Theorem F.6 (``random_feature_solution``): with $V_r\\sim\\mathcal N(0,TI_{2T})$, $u_r=a(V_r)$ and $w=-T[\\mathbf1_T;
  \\mathbf0]$ (so $w^\\top h=g^*$ on the pre-training inputs, $\\|h\\|^2=1/T$): $\\mathbb E_VL=(2T^2+3)/m$ and
  $\\mathbb E\\tfrac1m\\|u\\|^2=4T^2$, so by Markov $L\\le\\epsilon$ and $\\tfrac1m\\|u\\|^2\\le8T^2/\\delta$ with probability
  $\\ge1-\\delta$ once $m\\ge2(2T^2+3)/(\\epsilon\\delta)$ (``thmF6_width``).
"""

from __future__ import annotations

from math import ceil, comb

import numpy as np

from theorylab.landscape.flat_transfer import DyckTask, OneLayerSolution, attention_features

__all__ = [
    "downstream_preactivations",
    "lemF7_coefficient",
    "lemF7_moments",
    "neuron_form",
    "pretrain_input_count",
    "pretrain_input_count_printed",
    "random_feature_solution",
    "target_vector",
    "thmF6_width",
]


def neuron_form(V, T: int, atol: float = 1e-12) -> tuple[np.ndarray, np.ndarray]:
    """Lemma F.3's form of the rows of ``V`` (m, 2T): returns $c_i$ (0 for a zero neuron) and the mask pattern
    $V^{(p)}_i/c_i\\in\\{-1,0,1\\}^T$; ``ValueError`` naming the first neuron that is not of that form."""
    V = np.atleast_2d(np.asarray(V, dtype=float))
    if V.ndim != 2 or V.shape[1] != 2 * int(T):
        raise ValueError(f"V must have 2T = {2 * int(T)} columns, got shape {V.shape}")
    c = V[:, :T].mean(axis=1)
    pattern = np.zeros((V.shape[0], T), dtype=int)
    for i, row in enumerate(V):
        if not np.any(np.abs(row) > atol):
            c[i] = 0.0
            continue
        if np.abs(row[:T] - c[i]).max() > atol or abs(c[i]) <= atol:
            raise ValueError(f"Lemma F.3 form fails at neuron {i}: token weights are not c * 1")
        q = row[T:] / c[i]
        r = np.rint(q)
        if np.abs(q - r).max() > atol / abs(c[i]) or np.abs(r).max() > 1:
            raise ValueError(f"Lemma F.3 form fails at neuron {i}: mask weights are not in {{0, +c, -c}}")
        pattern[i] = r.astype(int)
    return c, pattern


def downstream_preactivations(V, task: DyckTask) -> tuple[np.ndarray, np.ndarray]:
    """$V_i^\\top h(x)$ on all $2^T$ downstream strings (uniform attention) and $g^*(x)$."""
    X, g = task.downstream_support()
    return attention_features(X) @ np.atleast_2d(np.asarray(V, dtype=float)).T, g


def target_vector(T: int, scale: str = "g") -> np.ndarray:
    """$w$ with $w^\\top h=g^*$ on pre-training inputs: $-T[\\mathbf1_T;\\mathbf0]$ (``scale="g"``); the printed
    $-\\sqrt T\\mathbf1^\\top h$ (``scale="printed"``) is $g^*/\\sqrt T$."""
    if scale not in ("g", "printed"):
        raise ValueError(f"scale must be 'g' or 'printed', got {scale!r}")
    w = np.zeros(2 * int(T))
    w[: int(T)] = -float(T) if scale == "g" else -np.sqrt(T)
    return w


def lemF7_coefficient(V, w, tau2: float) -> np.ndarray:
    """$a(v)=\\tfrac2{\\tau^2}v^\\top w$ for each row $v$ of ``V`` (the coefficient of Lemma F.7 for a linear target)."""
    if not tau2 > 0:
        raise ValueError(f"tau2 must be > 0, got {tau2}")
    return 2.0 / tau2 * (np.atleast_2d(np.asarray(V, dtype=float)) @ np.asarray(w, dtype=float))


def lemF7_moments(h, w, tau2: float) -> tuple[float, float, float]:
    """$(\\mathbb E[\\sigma(v^\\top h)a],\\ \\mathrm{Var}[\\sigma(v^\\top h)a],\\ \\mathbb Ea^2)$ for $v\\sim\\mathcal N(0,\\tau^2I)$:
    $(w^\\top h,\\ 3(w^\\top h)^2+2\\|h\\|^2\\|w\\|^2,\\ 4\\|w\\|^2/\\tau^2)$."""
    if not tau2 > 0:
        raise ValueError(f"tau2 must be > 0, got {tau2}")
    h, w = np.asarray(h, dtype=float), np.asarray(w, dtype=float)
    wh = float(w @ h)
    return wh, 3 * wh**2 + 2 * float(h @ h) * float(w @ w), 4 * float(w @ w) / tau2


def random_feature_solution(task: DyckTask, m: int, rng: np.random.Generator) -> OneLayerSolution:
    """Theorem F.6's solution: $V_r\\sim\\mathcal N(0,TI_{2T})$, $u_r=a(V_r)$ with the target $g^*$ (no fitting)."""
    if int(m) < 1:
        raise ValueError(f"m must be >= 1, got {m}")
    T = task.T
    V = rng.normal(0.0, np.sqrt(T), (int(m), task.d))
    return OneLayerSolution(V, lemF7_coefficient(V, target_vector(T), float(T)))


def thmF6_width(T: int, eps: float, delta: float) -> int:
    """$m\\ge2(2T^2+3)/(\\epsilon\\delta)$: enough for $L\\le\\epsilon$ and $\\tfrac1m\\|u\\|^2\\le8T^2/\\delta$ w.p.
    $\\ge1-\\delta$ (Markov on $\\mathbb E_VL=(2T^2+3)/m$ and on $\\mathbb E\\tfrac1m\\|u\\|^2=4T^2$)."""
    if not (eps > 0 and 0 < delta < 1):
        raise ValueError("need eps > 0 and 0 < delta < 1")
    return ceil(2 * (2 * T**2 + 3) / (eps * delta))


def pretrain_input_count(T: int) -> int:
    """Distinct pre-training inputs: $2T\\binom T{T/2}$ (sentence, masked position, mask sign)."""
    return 2 * T * comb(T, T // 2)


def pretrain_input_count_printed(T: int) -> int:
    """The proof's $n(h)=(T/2-1)\\binom T{T/2+1}$ (l.543)."""
    return (T // 2 - 1) * comb(T, T // 2 + 1)
