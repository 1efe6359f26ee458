"""§E of ``000_7523275b422019f8.txt``: same zero pre-training loss, different transfer (Sol1 vs Sol2).

Task (T even, d = 2T): sentences are the strings in $\\{\\langle,\\rangle\\}^T$ with **equal counts**; token $j$ is
$\\pm e_j$ ($+$ for $\\langle$); the masked position $t$ carries $\\xi e_{t+T}$, $\\xi=\\pm1$. Target
$g^*(x)=\\#\\rangle-\\#\\langle$ over unmasked tokens ($=\\pm1$ on pre-training inputs). Downstream: all $2^T$
strings, no mask, same $g^*$ (even for even T). Model: $a_j=\\mathrm{softmax}_j\\langle Qx_1,Kx_j\\rangle$,
$h=\\sum_ja_jx_j$, $f=\\tfrac1mu^\\top\\mathrm{ReLU}(Vh)$; loss $\\ell=(f-y)^2$ (no ½).

* Sol1 ($Q=K=0$; m/2 copies of $V_A=\\alpha[\\mathbf 1;\\mathbf 0]$, $u=-\\beta$ and of $V_B=-V_A$, $u=+\\beta$;
  $\\beta=\\alpha/\\sqrt T$, $\\alpha^2=2T^{3/2}$): zero loss, $\\mathrm{Tr}\\nabla^2L=4/(m\\sqrt T)$.
* Sol2: $Q=K=0$, $V_{ij}\\sim\\mathcal N(0,T)$, min-norm $u$; interpolates once $m\\ge$ #distinct $h$.
* Lemma F.4 (corrected): at zero loss $\\mathrm{Tr}\\nabla^2L=2\\,\\mathbb E\\|\\nabla f\\|^2$ (printed without the 2).
* Lemma F.1 (corrected): $\\mathrm{Tr}\\ge4/(m\\sqrt T)$ (printed $\\sqrt{4/T}$, true only for m = 2).
* Thm E.1 (corrected): with Sol1 features and a min-norm head on n i.i.d. downstream samples,
  $\\Pr[L^{P_{ds}}=0]=1-2(1-q)^n+r^n$, $r=\\binom T{T/2}2^{-T}$, $q=(1-r)/2$ (printed $1-2^{-n}$).
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from fractions import Fraction
from math import comb, factorial, sqrt

import numpy as np

from theorylab._extras import require
from theorylab.landscape.canonical import balance_rescalings
from theorylab.nn.threads import with_threads

__all__ = [
    "DyckTask",
    "OneLayerSolution",
    "downstream_mse",
    "min_norm_head",
    "sol1",
    "sol1_success_probability_exact",
    "sol2",
    "thmE1_probability",
    "thmE1_probability_printed",
]


@dataclass(frozen=True)
class DyckTask:
    """The §E task for even ``T >= 6`` (smaller even T allowed for tests: ``T >= 2``)."""

    T: int = 6

    def __post_init__(self) -> None:
        if int(self.T) != self.T or self.T < 2 or self.T % 2:
            raise ValueError(f"T must be an even integer >= 2, got {self.T}")

    @property
    def d(self) -> int:
        return 2 * self.T

    def pretrain_support(self) -> tuple[np.ndarray, np.ndarray]:
        """All $2T\\binom T{T/2}$ equiprobable inputs (N, T, d) and targets $g^*=\\pm1$ (N,)."""
        T = self.T
        X, Y = [], []
        for s in itertools.product([1, -1], repeat=T):
            if sum(s):
                continue
            for t in range(T):
                for xi in (1, -1):
                    x = np.zeros((T, 2 * T))
                    for j in range(T):
                        if j != t:
                            x[j, j] = s[j]
                    x[t, T + t] = xi
                    X.append(x)
                    Y.append(s[t])  # g* = -(sum of unmasked) = s_t since the full sum is 0
        return np.array(X), np.array(Y, dtype=float)

    def downstream_support(self) -> tuple[np.ndarray, np.ndarray]:
        """All $2^T$ unmasked strings (2^T, T, d) and $g^*=\\#\\rangle-\\#\\langle\\in\\{-T,\\dots,T\\}$."""
        T = self.T
        S = np.array(list(itertools.product([1, -1], repeat=T)), dtype=float)
        X = np.zeros((2**T, T, 2 * T))
        X[:, np.arange(T), np.arange(T)] = S
        return X, -S.sum(axis=1)


def attention_features(X: np.ndarray, Q: np.ndarray | None = None, K: np.ndarray | None = None) -> np.ndarray:
    """$h(x)=\\sum_ja_jx_j$ with attention from the first token; uniform when Q = K = 0 (or None)."""
    if Q is None or K is None or (not np.any(Q) and not np.any(K)):
        return X.mean(axis=1)
    s = np.einsum("nd,kd,ke,nje->nj", X[:, 0], Q, K, X)
    a = np.exp(s - s.max(axis=1, keepdims=True))
    a /= a.sum(axis=1, keepdims=True)
    return np.einsum("nj,njd->nd", a, X)


@dataclass(frozen=True)
class OneLayerSolution:
    """$Q=K=0$ solution: ``V`` (m, d), ``u`` (m,)."""

    V: np.ndarray
    u: np.ndarray

    @property
    def m(self) -> int:
        return self.u.size

    def f(self, H: np.ndarray) -> np.ndarray:
        return np.maximum(H @ self.V.T, 0) @ self.u / self.m

    def loss(self, task: DyckTask) -> float:
        X, Y = task.pretrain_support()
        return float(np.mean((self.f(attention_features(X)) - Y) ** 2))

    def neuron_grad_sq(self, task: DyckTask, atol: float = 0.0) -> tuple[np.ndarray, np.ndarray]:
        """Per neuron $(\\mathbb E\\|\\nabla_{V_i}f\\|^2,\\mathbb E(\\nabla_{u_i}f)^2)$ over pre-training inputs; a
        neuron counts as active where its pre-activation exceeds ``atol`` ($\\sigma'(0)=0$; a positive ``atol``
        keeps round-off at an exact kink from counting)."""
        H = attention_features(task.pretrain_support()[0])
        pre = H @ self.V.T
        A = ((pre > atol) * self.u**2 * (H**2).sum(axis=1, keepdims=True)).mean(axis=0) / self.m**2
        B = (np.maximum(pre, 0) ** 2).mean(axis=0) / self.m**2
        return A, B

    def trace_zero_loss(self, task: DyckTask, factor: float = 2.0, atol: float = 0.0) -> float:
        """$\\mathrm{Tr}\\nabla^2L=2\\,\\mathbb E\\|\\nabla f\\|^2$ at zero loss (Lemma F.4 corrected; ``factor=1``
        is the printed version). $\\nabla_{Q,K}f=0$ at $Q=K=0$."""
        A, B = self.neuron_grad_sq(task, atol)
        return float(factor * (A.sum() + B.sum()))

    def balanced_trace(self, task: DyckTask) -> float:
        """The trace after the per-neuron AM-GM rebalancing (``balance_rescalings``)."""
        A, B = self.neuron_grad_sq(task)
        return 2.0 * balance_rescalings(A, B)[1]

    def rescale(self, c) -> OneLayerSolution:
        c = np.asarray(c, dtype=float)
        if c.shape != (self.m,) or c.min() <= 0:
            raise ValueError(f"c must hold {self.m} positive factors")
        return OneLayerSolution(self.V * c[:, None], self.u / c)


def sol1(task: DyckTask, m: int = 2) -> OneLayerSolution:
    """The flattest solution of §E (even ``m``)."""
    if int(m) < 2 or m % 2:
        raise ValueError(f"m must be an even integer >= 2, got {m}")
    T = task.T
    alpha = sqrt(2 * T**1.5)
    beta = alpha / sqrt(T)
    V = np.zeros((m, task.d))
    V[: m // 2, :T] = alpha
    V[m // 2 :, :T] = -alpha
    u = np.concatenate([np.full(m // 2, -beta), np.full(m // 2, beta)])
    return OneLayerSolution(V, u)


def sol2(task: DyckTask, m: int, rng: np.random.Generator) -> OneLayerSolution:
    """Random features $V_{ij}\\sim\\mathcal N(0,T)$ with the min-norm interpolating head."""
    if int(m) < 1:
        raise ValueError(f"m must be >= 1, got {m}")
    X, Y = task.pretrain_support()
    V = rng.normal(0, sqrt(task.T), (int(m), task.d))
    Phi = np.maximum(attention_features(X) @ V.T, 0) / m
    return OneLayerSolution(V, np.linalg.pinv(Phi) @ Y)


def min_norm_head(features: np.ndarray, targets: np.ndarray, rcond: float = 1e-12) -> np.ndarray:
    """$\\tilde u=\\arg\\min\\|u\\|$ s.t. $\\Phi u=y$ (least squares if infeasible): ``pinv`` with singular values
    below ``rcond`` times the largest treated as zero (trained features carry tiny residual directions)."""
    return np.linalg.pinv(np.atleast_2d(features), rcond=rcond) @ np.asarray(targets, dtype=float)


def downstream_mse(sol: OneLayerSolution, task: DyckTask, sample: np.ndarray, rcond: float = 1e-12) -> float:
    """Population downstream MSE over all $2^T$ strings of the min-norm head fitted on the strings ``sample``."""
    Phi, g = _downstream_features(sol, task)
    return _fit_mse(Phi, g, sample, rcond)


def _downstream_features(sol: OneLayerSolution, task: DyckTask) -> tuple[np.ndarray, np.ndarray]:
    """``(Phi, g)``: the features of all $2^T$ downstream strings under ``sol`` and their targets."""
    X, g = task.downstream_support()
    return np.maximum(attention_features(X) @ sol.V.T, 0) / sol.m, g


def _fit_mse(Phi: np.ndarray, g: np.ndarray, sample: np.ndarray, rcond: float) -> float:
    u = min_norm_head(Phi[sample], g[sample], rcond)
    return float(np.mean((Phi @ u - g) ** 2))


def thmE1_probability(T: int, n: int) -> Fraction:
    """$1-2(1-q)^n+r^n$ with $r=\\binom T{T/2}/2^T$, $q=(1-r)/2$ (exact rational)."""
    r = Fraction(comb(T, T // 2), 2**T)
    q = (1 - r) / 2
    return 1 - 2 * (1 - q) ** n + r**n


def thmE1_probability_printed(n: int) -> Fraction:
    return 1 - Fraction(1, 2**n)


def sol1_success_probability_exact(task: DyckTask, n: int, m: int = 2, tol: float = 1e-18) -> Fraction:
    """$\\Pr[L^{P_{ds}}(\\hat\\psi,\\tilde u)=0]$ for Sol1 by exact enumeration: Sol1's downstream features depend
    on $g^*$ only, so the n-sample law reduces to multisets of $g^*$ values (multinomial weights, rational); each
    multiset's min-norm fit is evaluated (zero error: population MSE <= ``tol``)."""
    if int(n) < 1:
        raise ValueError(f"n must be >= 1, got {n}")
    T = task.T
    Phi, g = _downstream_features(sol1(task, m), task)  # computed once for every multiset below
    levels = sorted(set(g.tolist()))
    rep = {v: int(np.flatnonzero(g == v)[0]) for v in levels}
    prob = {v: Fraction(int(np.sum(g == v)), 2**T) for v in levels}
    total = Fraction(0)
    for combo in itertools.combinations_with_replacement(levels, int(n)):
        counts = {v: combo.count(v) for v in set(combo)}
        w = Fraction(factorial(int(n)))
        for v, c in counts.items():
            w = w * prob[v] ** c / factorial(c)
        if _fit_mse(Phi, g, np.array([rep[v] for v in combo]), 1e-12) <= tol:
            total += w
    return total


def torch_loss(task: DyckTask, m: int, k: int = 2):
    """``(loss_fn, pack)``: the pre-training loss $L(Q,K,V,u)$ as a function of a flat float64 torch vector
    (full attention, for exact Hessians) and ``pack(Q, K, sol)`` building that vector."""
    torch = require("torch", extra="trained")

    X, Y = task.pretrain_support()
    Xt, Yt = torch.as_tensor(X), torch.as_tensor(Y)
    d = task.d
    sizes = [k * d, k * d, m * d, m]

    def loss_fn(theta):
        Q, K, V, u = torch.split(theta, sizes)
        Q, K, V = Q.reshape(k, d), K.reshape(k, d), V.reshape(m, d)
        s = torch.einsum("nd,kd,ke,nje->nj", Xt[:, 0], Q, K, Xt)
        a = torch.softmax(s, dim=1)
        h = torch.einsum("nj,njd->nd", a, Xt)
        f = torch.relu(h @ V.T) @ u / m
        return ((f - Yt) ** 2).mean()

    def pack(Q, K, sol: OneLayerSolution):
        parts = [np.ravel(Q), np.ravel(K), np.ravel(sol.V), np.ravel(sol.u)]
        return torch.as_tensor(np.concatenate(parts))

    return loss_fn, pack


@with_threads(1)  # tiny steps: threads only add contention; the caller's count is given back
def train_flat(
    task: DyckTask, m: int, *, penalty: float = 0.1, steps: int = 600, lr: float = 5e-2, seed: int = 0
) -> OneLayerSolution:
    """Flatness-seeking training of (V, u) at Q = K = 0 (uniform attention): Adam on
    $L+\\lambda\\cdot2\\,\\mathbb E\\|\\nabla_{V,u}f\\|^2$ (the zero-loss trace, Lemma F.4), with $\\lambda$ cut 100x for the last
    30% of the steps. MSE pre-training has no gradient noise at interpolation, so plain SGD has no Tr bias here;
    the explicit penalty stands in for label-noise SGD."""
    torch = require("torch", extra="trained")

    if int(m) < 2 or steps < 1 or not penalty >= 0:
        raise ValueError("need m >= 2, steps >= 1 and penalty >= 0")
    X, Y = task.pretrain_support()
    H = torch.as_tensor(attention_features(X))
    Yt = torch.as_tensor(Y)
    hn = (H**2).sum(dim=1)
    g = torch.Generator().manual_seed(int(seed))
    V = (0.5 * torch.randn(m, task.d, generator=g, dtype=torch.float64)).requires_grad_()
    u = (0.5 * torch.randn(m, generator=g, dtype=torch.float64)).requires_grad_()
    opt = torch.optim.Adam([V, u], lr=lr)
    for k in range(int(steps)):
        pre = H @ V.T
        act = torch.relu(pre)
        loss = ((act @ u / m - Yt) ** 2).mean()
        tr = 2 * ((act**2).sum(dim=1) + ((pre > 0) * u**2).sum(dim=1) * hn).mean() / m**2
        lam = penalty if k < 0.7 * steps else penalty * 0.01
        opt.zero_grad()
        (loss + lam * tr).backward()
        opt.step()
    return OneLayerSolution(V.detach().numpy().copy(), u.detach().numpy().copy())


def mean_downstream_mse(
    sol: OneLayerSolution, task: DyckTask, n: int, reps: int, rng: np.random.Generator, rcond: float = 1e-12
) -> float:
    """Average over ``reps`` i.i.d. downstream samples of size n of the population MSE of the min-norm head."""
    return float(
        np.mean([downstream_mse(sol, task, rng.integers(0, 2**task.T, n), rcond) for _ in range(reps)])
    )
