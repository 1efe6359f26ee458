"""Which transformer shapes B.4 of ``000_7523275b422019f8.txt`` can embed into which (Tables 3-4, B.3).

B.4's replication by a factor $r$ maps (d-model $d$, heads $n_h$, layers $L$, d-inter $d_i$) to $(rd, rn_h, L, rd_i)$;
appending blocks with $O=U=0$ raises $L$. So a small shape embeds into a large $(D,N_h,L',D_i)$ by the printed recipe
iff $r=D/d$ is an integer, $N_h=rn_h$, $D_i=rd_i$ and $L'\\ge L$ (``embedding_plan``). The $r$ copies of each
intermediate neuron are identical functions of the replicated input, so they merge into one neuron whose output
weights are their sum; neurons with zero output weights can then be appended: the intermediate width can be any
$D_i\\ge d_i$ (``resize_intermediate``, a repair of the printed recipe). ``widen_transformer_by`` is B.4.2's
replication for any integer $r$ (``widen_transformer`` is $r=2$).
"""

from __future__ import annotations

import copy
from dataclasses import dataclass

import numpy as np

__all__ = [
    "TABLE3",
    "TABLE4",
    "EmbeddingPlan",
    "Shape",
    "embedding_plan",
    "resize_intermediate",
    "widen_transformer_by",
]


@dataclass(frozen=True)
class Shape:
    d_model: int
    n_head: int
    n_layers: int
    d_inter: int


#: Table 3 (l.214-225) and Table 4 (l.289-297), columns d-model, n-head, #layers, d-inter
TABLE3 = tuple(
    Shape(*r)
    for r in (
        (64, 1, 1, 256),
        (128, 2, 4, 512),
        (192, 3, 5, 768),
        (256, 4, 6, 1024),
        (512, 8, 8, 2048),
        (768, 12, 12, 3072),
        (1024, 16, 16, 4096),
        (1280, 20, 20, 5120),
        (1536, 24, 24, 6144),
    )
)
TABLE4 = tuple(
    Shape(*r)
    for r in (
        (128, 2, 4, 512),
        (192, 3, 5, 768),
        (320, 5, 6, 1024),
        (384, 6, 7, 2048),
        (640, 10, 12, 3072),
        (960, 15, 16, 4096),
        (1920, 30, 20, 5120),
    )
)


@dataclass(frozen=True)
class EmbeddingPlan:
    r: int  # replication factor (0 if D/d is not an integer)
    added_layers: int
    printed: bool  # B.4 as printed reaches the large shape
    repaired: bool  # with merged intermediate copies and zero-output padding
    reasons: tuple[str, ...]


def embedding_plan(small: Shape, large: Shape) -> EmbeddingPlan:
    """Whether B.4 (replication by $r=D/d$, then appended blocks) maps ``small`` onto ``large``, as printed and
    with the intermediate width repaired; ``reasons`` names what fails."""
    reasons = []
    r = large.d_model // small.d_model if large.d_model % small.d_model == 0 else 0
    if r == 0:
        reasons.append(f"d-model {large.d_model} is not a multiple of {small.d_model}")
    elif large.n_head != r * small.n_head:
        reasons.append(f"n-head {large.n_head} != r n_h = {r * small.n_head}")
    if large.n_layers < small.n_layers:
        reasons.append(f"#layers {large.n_layers} < {small.n_layers}")
    shared_ok = not reasons
    d_inter_printed = r > 0 and large.d_inter == r * small.d_inter
    if r > 0 and not d_inter_printed:
        reasons.append(f"d-inter {large.d_inter} != r d_i = {r * small.d_inter}")
    return EmbeddingPlan(
        r,
        max(large.n_layers - small.n_layers, 0),
        shared_ok and d_inter_printed,
        shared_ok and large.d_inter >= small.d_inter,
        tuple(reasons),
    )


def widen_transformer_by(params: dict, r: int) -> dict:
    """B.4.2's replication by ``r``: $\\tilde W_E=\\tfrac1r[W_E,\\dots]$, LN affine and biases repeated, $W,U,O$ become
    $\\tfrac1r$ times an $r\\times r$ grid, each head's $Q,K,V$ is $\\tfrac1r$ of the $r$-fold stack along the input
    dimension, heads repeated $r$ times. $\\tilde h_l=[h_l;\\dots;h_l]$ (exact with LayerNorm $\\varepsilon=0$)."""
    r = int(r)
    if r < 1:
        raise ValueError(f"r must be a positive integer, got {r}")

    def grid(M):
        return np.block([[M] * r] * r) / r

    out = {
        "WE": np.hstack([params["WE"]] * r) / r,
        "ln0": {k: np.concatenate([v] * r) for k, v in params["ln0"].items()},
        "blocks": [],
    }
    for B in params["blocks"]:
        new = {}
        for name in ("Q", "K", "V"):
            per = np.concatenate([B[name]] * r, axis=1) / r
            new[name] = np.concatenate([per] * r, axis=0)
        new["O"], new["W"], new["U"] = grid(B["O"]), grid(B["W"]), grid(B["U"])
        new["b"] = np.concatenate([B["b"]] * r)
        for ln in ("ln1", "ln2"):
            new[ln] = {k: np.concatenate([v] * r) for k, v in B[ln].items()}
        out["blocks"].append(new)
    return out


def resize_intermediate(params: dict, d_inter: int, rng: np.random.Generator | None = None) -> dict:
    """Every block's MLP $U\\,\\mathrm{GeLU}(Wv+b)$ rewritten with ``d_inter`` intermediate neurons and the same
    function: neurons with equal input weights and bias are merged (output weights summed), then neurons with random
    input weights and zero output weights are appended. ``ValueError`` if a block has more distinct neurons."""
    rng = np.random.default_rng(0) if rng is None else rng
    out = copy.deepcopy(params)
    for l, B in enumerate(out["blocks"]):
        keys = np.vstack([B["W"], B["b"][None]]).T  # one row per intermediate neuron: (input weights, bias)
        uniq, inverse = np.unique(keys, axis=0, return_inverse=True)
        inverse = np.asarray(inverse).reshape(-1)
        k = uniq.shape[0]
        if k > int(d_inter):
            raise ValueError(
                f"block {l} has {k} distinct intermediate neurons, more than d_inter = {d_inter}"
            )
        U = np.zeros((int(d_inter), B["U"].shape[1]))
        np.add.at(U, inverse, B["U"])
        extra = int(d_inter) - k
        B["W"] = np.hstack([uniq[:, :-1].T, rng.normal(0, 1, (B["W"].shape[0], extra))])
        B["b"] = np.concatenate([uniq[:, -1], rng.normal(0, 1, extra)])
        B["U"] = U
    return out
