r"""An explicit ReLU-MLP decoder $g^{(2)}$ for the Thm 1 construction (in place of the lookup), and the norm /
Lipschitz bookkeeping of Cor 2 (weight decay).

The proof of Thm 1 (Liu §3.6.4.1 = Li §2.2.5.1) builds $g^{(2)}$ as a 6-layer MLP from Lemmas 38-43. This module
builds a 4-hidden-layer ReLU network that reads the second layer's output $h=\mathrm{LN}_0(\tilde a)+e_\rho$ and
returns the exact next-token distribution:

1. the last token's index $i$ from $x=\langle a,h\rangle$, $a=$ ``track @ u`` (orthogonal to every value slot, so
   $x$ sees $e_\rho$ alone): $\mathrm{ind}_i=\mathrm{clamp}(2-3|x-x_i|/g,0,1)$ with $g$ the smallest gap between
   the $x_i$ (exactly 1 within $g/3$ of $x_i$, exactly 0 beyond $2g/3$);
2. $r=h-E\,\mathrm{ind}=\mathrm{LN}_0(\tilde a)$ (the residual subtracted: the fix of the proof's decoder), the
   depth-$d$ slot values $s_{t,d}=\langle r,b_{t,d}\rangle$, gated by "the query is a close at depth $d$" with
   $\mathrm{relu}(s-2(1-c_d))-\mathrm{relu}(-s-2(1-c_d))$ ($|s|\le1$);
3. $\mathrm{top}_t=\sum_d\mathrm{clamp}(2s_{t,d}/\mu-1,0,1)$ with $\mu$ a lower bound on the top slot of
   $\mathrm{LN}_0(\tilde a)$ over all stacks (matched pairs cancel, so $\tilde a$ has at most $D$ terms and $\mu$ does
   not depend on the length);
4. the output $A\,\mathrm{ind}+(1-q)\,C\,\mathrm{top}$, linear.

Intermediate layers carry $h$ and the indicators with $[I,-I]\mathrm{ReLU}([I;-I]x)$ (Lemma 43). Every step is exact
in float64 on the constructions (indicators are exactly 0 or 1), so the outputs equal the distribution table.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from fractions import Fraction

import numpy as np

from theorylab.attention.dyck.balance import (
    DyckSolution,
    close_index,
    open_index,
    token_indices,
)

__all__ = [
    "ReluMLP",
    "MLPDecodedSolution",
    "mlp_decoder",
    "mlp_solution",
    "top_slot_margin",
    "lipschitz_from_norm",
    "weight_decay_threshold_for",
]


@dataclass(frozen=True)
class ReluMLP:
    """$x\\mapsto W_L\\,\\mathrm{ReLU}(\\cdots\\mathrm{ReLU}(W_1x+b_1)\\cdots)+b_L$ (ReLU after every layer but the
    last); ``layers`` holds ``(W, b)`` pairs."""

    layers: tuple[tuple[np.ndarray, np.ndarray], ...]

    def __post_init__(self) -> None:
        if not self.layers:
            raise ValueError("an MLP needs at least one layer")
        for i, (W, b) in enumerate(self.layers):
            if W.ndim != 2 or b.shape != (W.shape[0],):
                raise ValueError(f"layer {i}: W must be 2-d and b of shape ({W.shape[0]},)")
            if i and W.shape[1] != self.layers[i - 1][0].shape[0]:
                raise ValueError(
                    f"layer {i} takes {W.shape[1]} inputs, layer {i - 1} gives {self.layers[i - 1][0].shape[0]}"
                )

    def __call__(self, x: np.ndarray) -> np.ndarray:
        for W, b in self.layers[:-1]:
            x = np.maximum(x @ W.T + b, 0.0)
        W, b = self.layers[-1]
        return x @ W.T + b

    @property
    def depth(self) -> int:
        """Number of weight layers."""
        return len(self.layers)

    def lipschitz_bound(self) -> float:
        """$\\prod_l\\|W_l\\|_2$, an upper bound on the Lipschitz constant (ReLU is 1-Lipschitz)."""
        return float(np.prod([np.linalg.norm(W, 2) for W, _ in self.layers]))

    def squared_norm(self) -> float:
        """$\\sum_l\\|W_l\\|_F^2+\\|b_l\\|^2$, the weight-decay term's argument."""
        return float(sum(np.sum(W**2) + np.sum(b**2) for W, b in self.layers))


def top_slot_margin(sol: DyckSolution) -> float:
    r"""$\mu$: a lower bound, over every closing query $\rho$ at depth $d\ge1$ and every stack, on the top slot
    $\langle\mathrm{LN}_0(\tilde a),b_{\text{top},d}\rangle=e^{x_d}/\|\tilde a\|$ of a balanced construction, where
    $\tilde a=\sum_{s\le d}e^{x_s}b_{t_s,s}$ and $x_s=G[\text{open}_{t_s,s},\rho]$:
    $\min_{t}e^{x(t,d)}/\sqrt{\sum_{s\le d}\max_te^{2x(t,s)}}$. Independent of the length."""
    w = sol.weights
    G = w.scores()
    out = math.inf
    for j in range(w.k):
        for d in range(1, w.depth):
            rho = close_index(j, d, w.depth)
            x = np.array([[G[open_index(t, s, w.depth), rho] for t in range(w.k)] for s in range(1, d + 1)])
            shift = x.max()
            norm = math.sqrt(float(np.sum(np.exp(2 * (x.max(axis=1) - shift)))))
            out = min(out, float(np.exp(x[-1].min() - shift)) / norm)
    return out


def mlp_decoder(sol: DyckSolution, seed: int = 0, subtract_residual: bool = True) -> ReluMLP:
    """The ReLU network $g^{(2)}$ described in the module docstring for the construction ``sol``.

    ``subtract_residual=False`` builds the proof's decoder as printed (slot values read from $h$ itself).
    """
    w = sol.weights
    k, D, m = w.k, w.depth, w.m
    n = 2 * k * D + 1
    E = w.E
    rng = np.random.default_rng(seed)
    for _ in range(100):
        u = rng.normal(size=2)
        a = sol.track @ (u / np.linalg.norm(u))
        xs = a @ E
        gap = float(np.min(np.diff(np.sort(xs))))
        if gap > 1e-6:
            break
    else:  # pragma: no cover - a generic direction separates n distinct points
        raise ValueError("could not separate the embeddings along a direction of the tracking plane")
    mu = 0.99 * top_slot_margin(sol) if k * (D - 1) else 1.0
    close_d = [(t, d) for t in range(k) for d in range(1, D)]
    nc = len(close_d)
    eye_m, eye_n = np.eye(m), np.eye(n)

    # hidden 1: relu(x - x_i), relu(x_i - x) (2n); carry h (2m)
    W1 = np.vstack([np.tile(a, (n, 1)), -np.tile(a, (n, 1)), eye_m, -eye_m])
    b1 = np.concatenate([-xs, xs, np.zeros(2 * m)])
    # hidden 2: relu(t_i), relu(t_i - 1) with t_i = 2 - 3 |x - x_i| / g (2n); carry h (2m)
    absx = np.hstack([eye_n, eye_n, np.zeros((n, 2 * m))]) * (-3.0 / gap)
    carry_h = np.hstack([np.zeros((m, 2 * n)), eye_m, -eye_m])
    W2 = np.vstack([absx, absx, carry_h, -carry_h])
    b2 = np.concatenate([np.full(n, 2.0), np.full(n, 1.0), np.zeros(2 * m)])
    # hidden 3: gated slot values relu(+-s_{t,d} - 2 (1 - c_d)) (2 nc); carry ind (n)
    ind = np.hstack([eye_n, -eye_n, np.zeros((n, 2 * m))])  # ind_i = relu(t_i) - relu(t_i - 1)
    h_lin = np.hstack([np.zeros((m, 2 * n)), eye_m, -eye_m])  # h = relu(h) - relu(-h)
    r = h_lin - E @ ind if subtract_residual else h_lin
    slot_rows = np.array([sol.slots[:, t * D + d - 1] for t, d in close_d]).reshape(nc, m)
    s = slot_rows @ r
    c = (
        np.array([sum(eye_n[close_index(j, d, D)] for j in range(k)) for _, d in close_d]).reshape(nc, n)
        @ ind
    )
    W3 = np.vstack([s + 2.0 * c, -s + 2.0 * c, ind])
    b3 = np.concatenate([np.full(2 * nc, -2.0), np.zeros(n)])
    # hidden 4: relu(2 g / mu - 1), relu(2 g / mu - 2) with g = gated slot value (2 nc); carry ind (n)
    gate = np.hstack([np.eye(nc), -np.eye(nc), np.zeros((nc, n))]) * (2.0 / mu)
    W4 = np.vstack([gate, gate, np.hstack([np.zeros((n, 2 * nc)), eye_n])])
    b4 = np.concatenate([np.full(nc, -1.0), np.full(nc, -2.0), np.zeros(n)])
    # output: A ind + (1 - q) * close_t from top_t = sum_d clamp(.)
    q = float(sol.q)
    A = np.zeros((2 * k, n))
    for i in range(n):
        if i == n - 1:
            A[0::2, i] = 1.0 / k
            continue
        tok, within = divmod(i, D)
        if tok % 2 == 0:
            d = within + 1
            if d == D:
                A[tok + 1, i] = 1.0
            else:
                A[0::2, i] = q / k
                A[tok + 1, i] = 1.0 - q
        else:
            A[0::2, i] = (1.0 / k) if within == 0 else q / k
    top = np.zeros((2 * k, 2 * nc))
    for col, (t, _) in enumerate(close_d):
        top[2 * t + 1, col] = 1.0 - q
        top[2 * t + 1, nc + col] = -(1.0 - q)
    W5 = np.hstack([top, A])
    b5 = np.zeros(2 * k)
    return ReluMLP(((W1, b1), (W2, b2), (W3, b3), (W4, b4), (W5, b5)))


@dataclass(frozen=True)
class MLPDecodedSolution:
    """The Thm 1 construction with the ReLU network of :func:`mlp_decoder` as $g^{(2)}$."""

    base: DyckSolution
    mlp: ReluMLP = field(repr=False)

    @property
    def language(self):
        return self.base.language

    @property
    def weights(self):
        return self.base.weights

    def predict(self, tokens: np.ndarray) -> np.ndarray:
        """Next-token distributions ``[B, T+1, 2k]`` after each prefix length."""
        tokens = np.asarray(tokens)
        if tokens.ndim == 1:
            return self.predict(tokens[None])[0]
        return self.mlp(self.base.hidden(token_indices(self.language, tokens)))

    def predict_last(self, tokens: np.ndarray) -> np.ndarray:
        """Next-token distributions ``[B, 2k]`` after each whole prefix."""
        return self.mlp(self.base.hidden_last(token_indices(self.language, np.asarray(tokens))))

    def squared_norm(self) -> float:
        r"""$\|\theta^{(2)}\|^2$: $W_K$, $W_Q$ taken as the balanced factorisation $M=W_K^\top W_Q$ of least norm
        ($\|W_K\|_F^2+\|W_Q\|_F^2=2\|M\|_*$, nuclear norm), plus $W_V$ and the MLP."""
        w = self.weights
        return float(2 * np.linalg.norm(w.M, "nuc") + np.sum(w.W_V**2) + self.mlp.squared_norm())


def mlp_solution(sol: DyckSolution, seed: int = 0, subtract_residual: bool = True) -> MLPDecodedSolution:
    """``sol`` with its lookup decoder replaced by the ReLU network of :func:`mlp_decoder`."""
    return MLPDecodedSolution(sol, mlp_decoder(sol, seed, subtract_residual))


def lipschitz_from_norm(squared_norm: float, layers: int) -> float:
    r"""Cor 2's step "bounded weights give a bounded Lipschitz constant": an MLP with $L$ weight layers and
    $\sum_l\|W_l\|_F^2\le B$ is $\prod_l\|W_l\|_2\le\prod_l\|W_l\|_F\le(B/L)^{L/2}$-Lipschitz (AM-GM)."""
    if squared_norm < 0 or layers < 1:
        raise ValueError(f"need squared_norm >= 0 and layers >= 1, got {squared_norm}, {layers}")
    return (squared_norm / layers) ** (layers / 2)


def weight_decay_threshold_for(sol: MLPDecodedSolution, length: int, eps: float) -> float:
    r"""Cor 2's $\lambda_N=2\epsilon(q(1-q)/k^2)^N/\|\theta^*\|^2$ for the explicit zero-loss $\theta^*$ ``sol``:
    every minimiser of $\mathcal L+\frac\lambda2\|\theta\|^2$ with $\lambda\le\lambda_N$ has excess loss at most
    $\epsilon(q(1-q)/k^2)^N$ and norm at most $\|\theta^*\|$."""
    if length < 1 or not eps > 0:
        raise ValueError(f"need length >= 1 and eps > 0, got {length}, {eps}")
    q, k = Fraction(sol.base.q), sol.weights.k
    return float(2 * eps * (q * (1 - q) / k**2) ** length / sol.squared_norm())
