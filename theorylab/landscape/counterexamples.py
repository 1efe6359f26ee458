"""Stored counterexamples of the flat family (``000_7523275b422019f8.txt``)."""

from __future__ import annotations

import numpy as np

from theorylab.counterexamples import register, verifier

CONVENTIONS = (
    "HMM: column-stochastic O[x, h] = P(x | h), T[i, j] = P(h' = i | h = j), positions 0-based (t is the masked "
    "one); MLP: W_l has shape [d_{l+1}, d_l] acting on column inputs, rows of X are inputs; transformer blocks "
    "b{i}_* (Q, K, V, O, W, b, U, LayerNorm gamma/beta); Sol1: V [m, d] first layer, u [m] head, T the sequence "
    "length of the Dyck task; probability as [numerator, denominator]"
)

__all__ = [
    "data_hmm_instance",
    "deepen_instance",
    "lemF1_instance",
    "lemF4_instance",
    "mlp_embed_instance",
    "thmE1_instance",
    "unpack_transformer",
]


@register("flat.data.hmm", "an HMM whose max-product ('Viterbi') MLM conditional differs from the true one")
def data_hmm_instance() -> dict[str, np.ndarray]:
    """2 hidden states, 2 tokens, L = 3, masked t = 1 (0-based); x = (0, ., 0)."""
    O = np.array([[0.9, 0.2], [0.1, 0.8]])
    T = np.array([[0.6, 0.4], [0.4, 0.6]])
    return {"O": O, "T": T, "x": np.array([0, 0, 0]), "t": np.array(1)}


@verifier("flat.data.hmm")
def _data_hmm_check(a) -> tuple[bool, str]:
    """The max-product conditional of the masked token differs from the true one (brute force) by more than 0.05."""
    from theorylab.hmm import HMM
    from theorylab.hmm.mlm import mlm_conditionals_bruteforce, mlm_conditionals_viterbi

    hmm = HMM(np.asarray(a["O"], float), np.asarray(a["T"], float), validate=False)
    x, t = np.asarray(a["x"], np.int64), int(a["t"])
    truth, vit = mlm_conditionals_bruteforce(hmm, x, t), mlm_conditionals_viterbi(hmm, x, t)
    gap = float(np.abs(vit - truth).max())
    return (
        gap > 0.05,
        f"true conditional {np.round(truth, 4).tolist()}, max-product {np.round(vit, 4).tolist()}: gap {gap:.4f}",
    )


@register(
    "flat.cons.mlp_embed", "a ReLU MLP for which the printed 2d_{l+1} x 2d_l shape of W_0 is impossible"
)
def mlp_embed_instance() -> dict[str, np.ndarray]:
    rng = np.random.default_rng(0)
    return {
        "W0": rng.normal(0, 1, (4, 3)),
        "W1": rng.normal(0, 1, (5, 4)),
        "a": rng.normal(0, 1, 5),
        "X": rng.normal(0, 1, (20, 3)),
    }


@verifier("flat.cons.mlp_embed")
def _mlp_embed_check(a) -> tuple[bool, str]:
    """The printed 2d_1 x 2d_0 first layer cannot multiply the (undoubled) inputs, while the widening with a
    2d_1 x d_0 first layer computes the same function (ReLU, to 1e-12)."""
    from theorylab.landscape.embed import mlp_forward, widen_mlp

    Ws, w, X = (
        [np.asarray(a["W0"], float), np.asarray(a["W1"], float)],
        np.asarray(a["a"], float),
        np.asarray(a["X"], float),
    )
    printed_shape = (2 * Ws[0].shape[0], 2 * Ws[0].shape[1])
    W2, a2 = widen_mlp(Ws, w, "relu")
    gap = float(np.abs(mlp_forward(W2, a2, X, "relu") - mlp_forward(Ws, w, X, "relu")).max())
    ok = printed_shape[1] != X.shape[1] and W2[0].shape == (printed_shape[0], X.shape[1]) and gap <= 1e-12
    return ok, (
        f"inputs have d_0 = {X.shape[1]} coordinates, the printed W_0 is {printed_shape[0]} x {printed_shape[1]}; "
        f"the working widening has W_0 {W2[0].shape[0]} x {W2[0].shape[1]} and max |f - f_wide| = {gap:.1e}"
    )


@register(
    "flat.cons.tfm_deepen", "a post-LN transformer with affine LayerNorm that the printed deepening changes"
)
def deepen_instance() -> dict[str, np.ndarray]:
    from theorylab.landscape.embed import random_transformer

    p = random_transformer(7, 8, 2, 4, 16, 2, np.random.default_rng(0), affine_ln=True)
    out = {"WE": p["WE"], "ln0_gamma": p["ln0"]["gamma"], "ln0_beta": p["ln0"]["beta"]}
    for i, B in enumerate(p["blocks"]):
        for name in ("Q", "K", "V", "O", "W", "b", "U"):
            out[f"b{i}_{name}"] = B[name]
        for ln in ("ln1", "ln2"):
            for k, v in B[ln].items():
                out[f"b{i}_{ln}_{k}"] = v
    out["tokens"] = np.array([0, 3, 6, 1, 2])
    return out


def unpack_transformer(arrays: dict[str, np.ndarray]) -> dict:
    """Inverse of the flattening in ``deepen_instance``."""
    n = 1 + max(int(k[1 : k.index("_")]) for k in arrays if k.startswith("b") and k[1].isdigit())
    blocks = []
    for i in range(n):
        B = {name: arrays[f"b{i}_{name}"] for name in ("Q", "K", "V", "O", "W", "b", "U")}
        for ln in ("ln1", "ln2"):
            B[ln] = {k: arrays[f"b{i}_{ln}_{k}"] for k in ("gamma", "beta")}
        blocks.append(B)
    return {
        "WE": arrays["WE"],
        "ln0": {"gamma": arrays["ln0_gamma"], "beta": arrays["ln0_beta"]},
        "blocks": blocks,
    }


@verifier("flat.cons.tfm_deepen")
def _deepen_check(a) -> tuple[bool, str]:
    """The printed deepening changes the network's output (by > 0.1) on the stored tokens; the fixed recipe does
    not (to 1e-12)."""
    from theorylab.landscape.embed import deepen_transformer, transformer_forward

    p, tokens = (
        unpack_transformer({k: np.asarray(v) for k, v in a.items()}),
        np.asarray(a["tokens"], np.int64),
    )
    f = transformer_forward(p, tokens)
    printed = float(np.abs(transformer_forward(deepen_transformer(p, 2, "paper"), tokens) - f).max())
    fixed = float(np.abs(transformer_forward(deepen_transformer(p, 2, "fixed"), tokens) - f).max())
    return (
        printed > 0.1 and fixed < 1e-12,
        f"max |f_deep - f|: printed recipe {printed:.3g}, fixed recipe {fixed:.1e}",
    )


@register("flat.lemF.1", "Sol1 with m = 4, T = 6: zero loss and Tr = 0.408 < sqrt(4/T) = 0.816")
def lemF1_instance() -> dict[str, np.ndarray]:
    from theorylab.landscape.flat_transfer import DyckTask, sol1

    s = sol1(DyckTask(6), 4)
    return {"T": np.array(6), "V": s.V, "u": s.u}


@verifier("flat.lemF.1")
def _lemF1_check(a) -> tuple[bool, str]:
    """Sol1 has zero loss (< 1e-28) and Hessian trace below the printed lower bound sqrt(m/T)."""
    from math import sqrt

    from theorylab.landscape.flat_transfer import DyckTask, OneLayerSolution

    task, s = DyckTask(int(a["T"])), OneLayerSolution(np.asarray(a["V"], float), np.asarray(a["u"], float))
    loss, tr, bound = s.loss(task), s.trace_zero_loss(task), sqrt(s.m / task.T)
    ok = loss < 1e-28 and tr < bound
    return (
        ok,
        f"m = {s.m}, T = {task.T}: loss {loss:.1e}, Tr Hessian {tr:.4g} < printed sqrt(m/T) = {bound:.4g}",
    )


@register("flat.thmE.1", "T = 6, n = 2: P[zero downstream loss] = 121/512 (printed 1 - 2^-n = 3/4)")
def thmE1_instance() -> dict[str, np.ndarray]:
    return {"T": np.array(6), "n": np.array(2), "probability": np.array([121, 512])}


@verifier("flat.thmE.1")
def _thmE1_check(a) -> tuple[bool, str]:
    """P[zero downstream loss] of Sol1 (exact, by enumeration) equals the stored fraction and not the printed
    1 - 2^-n."""
    from fractions import Fraction

    from theorylab.landscape.flat_transfer import (
        DyckTask,
        sol1_success_probability_exact,
        thmE1_probability_printed,
    )

    T, n = int(a["T"]), int(a["n"])
    num, den = (int(v) for v in a["probability"])
    exact, printed = sol1_success_probability_exact(DyckTask(T), n), thmE1_probability_printed(n)
    return exact == Fraction(
        num, den
    ) and exact != printed, f"T = {T}, n = {n}: exact {exact}, printed {printed}"


@register("flat.lemF.4", "Sol1 (T = 6, m = 2): Tr Hessian = 2 E|grad f|^2, not E|grad f|^2")
def lemF4_instance() -> dict[str, np.ndarray]:
    from theorylab.landscape.flat_transfer import DyckTask, sol1

    s = sol1(DyckTask(6), 2)
    return {"T": np.array(6), "V": s.V, "u": s.u}


@verifier("flat.lemF.4")
def _lemF4_check(a) -> tuple[bool, str]:
    """The Hessian trace of the loss at Sol1 (torch autodiff, all parameters) equals 2 E|grad f|^2 (to 1e-12) and
    differs from the printed E|grad f|^2 by more than 0.1."""
    from theorylab.landscape import flat_transfer as ft
    from theorylab.landscape import trace_hessian

    task = ft.DyckTask(int(a["T"]))
    s = ft.OneLayerSolution(np.asarray(a["V"], float), np.asarray(a["u"], float))
    loss, pack = ft.torch_loss(task, s.m, 1)
    tr = trace_hessian(loss, pack(np.zeros((1, task.d)), np.zeros((1, task.d)), s)).value
    two, one = s.trace_zero_loss(task), s.trace_zero_loss(task, factor=1.0)
    ok = abs(tr - two) < 1e-12 and abs(tr - one) > 0.1
    return ok, f"Tr Hessian {tr:.6g}; 2 E|grad f|^2 = {two:.6g}; printed E|grad f|^2 = {one:.6g}"
