"""Stored counterexamples of the flat family (``000_7523275b422019f8.txt``)."""

from __future__ import annotations

import numpy as np

from theorylab.counterexamples import register

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


@register("flat.lemF.1", "Sol1 with m = 4, T = 6: zero loss and Tr = 0.408 < sqrt(4/T) = 0.816")
def lemF1_instance() -> dict[str, np.ndarray]:
    from theorylab.landscape.flat_transfer import DyckTask, sol1

    s = sol1(DyckTask(6), 4)
    return {"T": np.array(6), "V": s.V, "u": s.u}


@register("flat.thmE.1", "T = 6, n = 2: P[zero downstream loss] = 121/512 (printed 1 - 2^-n = 3/4)")
def thmE1_instance() -> dict[str, np.ndarray]:
    return {"T": np.array(6), "n": np.array(2), "probability": np.array([121, 512])}


@register("flat.lemF.4", "Sol1 (T = 6, m = 2): Tr Hessian = 2 E|grad f|^2, not E|grad f|^2")
def lemF4_instance() -> dict[str, np.ndarray]:
    from theorylab.landscape.flat_transfer import DyckTask, sol1

    s = sol1(DyckTask(6), 2)
    return {"T": np.array(6), "V": s.V, "u": s.u}
