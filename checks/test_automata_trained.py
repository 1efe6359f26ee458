"""Trained tier of the automata family (Liu Ch. 3.4.2-3.4.3), scaled down for CPU at ``--scale small``.

Each experiment trains all its seeds in one vmapped call of ``theorylab.nn.train`` and is shared (module-scoped
cache) between a check and its negative control. ``--scale full`` uses the thesis's model (d=512, 8 heads,
sinusoidal positions, batch 16, AdamW) and is meant for ``--device cuda``.
"""

from __future__ import annotations

from functools import cache

import numpy as np
import pytest

from theorylab.automata import Semiautomaton, zoo
from theorylab.automata.tasks import AutomatonTask

E1 = "automata.E1_depth_table"
E6 = "automata.E6_ood_parity"
SEEDS = (0, 1, 2)


def _transformer(task, n_layers: int, scale: str, d_small: int, **kw):
    from theorylab.nn import TransformerConfig

    # the thesis's GPT-2 setting (Sec. 3.4.5.1) except the positions: GPT-2 learns them, these models use sinusoidal
    # ones, because the length-generalisation verdicts (E6/E7) read positions beyond the training length, where
    # learned rows would be untrained initialisation, not the architecture under test
    if scale == "full":
        return TransformerConfig(task.vocab_size, task.n_outputs, d_model=512, n_layers=n_layers, n_heads=8,
                                 d_ff=512, pos="sinusoidal", max_len=512, **kw)  # fmt: skip
    return TransformerConfig(task.vocab_size, task.n_outputs, d_model=d_small, n_layers=n_layers, n_heads=4,
                             d_ff=4 * d_small if kw.get("uniform_attention") else 2 * d_small, pos="sinusoidal",
                             max_len=256, **kw)  # fmt: skip


def _budget(scale: str, steps: int, T: int, lr: float):
    from theorylab.nn import Budget

    if scale == "full":
        return Budget(steps=40_000, batch_size=16, seq_len=T, lr=1e-4, weight_decay=1e-4, schedule="warmup_cosine",
                      warmup=1000, grad_clip=1.0)  # fmt: skip
    return Budget(steps=steps, batch_size=32, seq_len=T, lr=lr, schedule="warmup_cosine", warmup=20)


# Small-scale E1 tasks, chosen so that windows fail: a flip-flop whose writes are rare (P[ignore] = 0.9) at T = 64
# (the best predictor reading the last w <= 12 symbols scores ~0.90) and Grid9 at T = 64 (windows ~0.63). At the
# thesis's T = 16 with uniform symbols the last 4 symbols already give 0.9957 on the flip-flop.
SPARSE_FLIPFLOP = (0.9, 0.05, 0.05)
# windows of up to 12 symbols: longer than the mean gap of 10 symbols between flip-flop writes
MAX_WINDOW = 12
GRID_SMALL = (
    "Grid9 at T = 64 does not fit the CPU budget: depth 2, d = 32, 600 steps took 93 s of CPU and reached 0.80 "
    "(best seed) against 0.63 for the best window of <= 12 symbols, below the derived threshold 0.82; at T = 16 "
    "(Grid4) windows of 10 symbols already give 0.987. It runs at --scale full (T = 100)"
)


def _task(kind: str) -> AutomatonTask:
    if kind == "flipflop":
        return AutomatonTask(zoo.flipflop(), probs=SPARSE_FLIPFLOP)
    if kind == "grid9":
        return AutomatonTask(zoo.gridworld(9))
    if kind in ("C6", "D6"):
        return AutomatonTask(zoo.dihedral(3) if kind == "D6" else c2xc3())
    if kind in ("parity", "parity-lstm"):
        return AutomatonTask(zoo.parity())
    raise KeyError(kind)


@cache
def _trained(kind: str, scale: str, device: str, fraction: float = 1.0):
    """Train (once per session) the models of one experiment with ``fraction`` of its step budget (0: untrained);
    returns (task, TrainResult, T)."""
    from theorylab.nn import LSTMConfig, train

    full = scale == "full"
    task = _task(kind)
    L, steps, T, lr, d = {
        "flipflop": (1, 300, 64, 3e-3, 32),
        "grid9": (2, 600, 64, 1e-2, 32),
        "C6": (1, 400, 8, 1e-2, 64),
        "D6": (1, 400, 8, 1e-2, 64),
        "parity": (1, 600, 8, 1e-2, 64),
        "parity-lstm": (1, 600, 8, 1e-2, 64),
    }[kind]
    T = 100 if full and kind not in ("parity", "parity-lstm") else (40 if full else T)
    if kind == "parity-lstm":
        from theorylab.nn import Budget

        cfg = LSTMConfig(2, 2, d_embed=64 if full else 16, hidden=128 if full else 32)
        budget = Budget(steps=5000 if full else 300, batch_size=64 if full else 32, seq_len=T, lr=1e-2 if not full
                        else 3e-3)  # fmt: skip
    else:
        # parity: layer 1 is frozen to uniform causal attention, the Lemma-15 prefix-count layer, so that the
        # shortcut is learnable within the CPU budget; the MLP must learn count -> parity.
        cfg = _transformer(task, L, scale, d, uniform_attention=kind == "parity")
        budget = _budget(scale, steps, T, lr)
    if fraction != 1.0:
        import dataclasses

        budget = dataclasses.replace(budget, steps=int(round(budget.steps * fraction)))
    return task, train(task, cfg, budget, seeds=SEEDS, device=device, progress=False), T


@cache
def _baselines(kind: str, scale: str, device: str) -> dict[str, float]:
    """The trivial baselines of one E1 task, computed here: the best last-w-symbols predictor (w <= MAX_WINDOW),
    the best untrained seed and the best seed trained for 10% of the budget."""
    from theorylab.automata.baselines import best_window_accuracy

    task, _, T = _trained(kind, scale, device)
    windows = best_window_accuracy(task, T, MAX_WINDOW, np.random.default_rng(7), n_fit=2048, n_eval=256)
    out = {"window": max(windows.values()), "window_w": float(max(windows, key=windows.get))}
    for name, frac in (("untrained", 0.0), ("10% budget", 0.1)):
        t, res, _ = _trained(kind, scale, device, frac)
        out[name] = float(_acc(t, res.models, T, device).max())
    return out


def c2xc3() -> Semiautomaton:
    """$C_6 = C_2 \\times C_3$ with generators of orders 3 (+2) and 2 (+3): the abelian twin of
    ``zoo.dihedral(3)`` ($S_3$, generators of orders 3 and 2)."""
    return zoo.group_semiautomaton(
        [[(i + 2) % 6 for i in range(6)], [(i + 3) % 6 for i in range(6)]], name="C6"
    )


def _acc(task, models, T: int, device: str, rng_seed: int = 1) -> np.ndarray:
    from theorylab.nn import evaluate

    return np.array([evaluate(task, m, np.random.default_rng(rng_seed), 8, T, device)["acc"] for m in models])


# ------------------------------------------------------------------------------------------------ E1


def threshold(baselines: dict[str, float], scale: str) -> float:
    """The accuracy a trained model must reach: halfway from the best trivial baseline to 1 (so it removes at least
    half of the errors the best baseline makes); at ``--scale full`` also the thesis's 99%."""
    best = max(v for k, v in baselines.items() if k != "window_w")
    return max(best + (1.0 - best) / 2, 0.99 if scale == "full" else 0.0)


def reaches(acc: np.ndarray, thr: float) -> bool:
    """Verdict: the best seed reaches the threshold (the thesis reports the max over runs, Fig 3.15)."""
    return bool(np.max(acc) >= thr)


@pytest.mark.claim(E1, tier="trained")
@pytest.mark.parametrize("kind", ["flipflop", "grid9"])
def test_memory_and_grid_learned_shallow(kind, scale, device, measure):
    """Depth 1 (flip-flop) and depth 2 (Grid9) models learn the task beyond every trivial baseline computed here."""
    if kind == "grid9" and scale != "full":
        pytest.skip(GRID_SMALL)
    task, res, T = _trained(kind, scale, device)
    acc = _acc(task, res.models, T, device)
    base = _baselines(kind, scale, device)
    thr = threshold(base, scale)
    measure(f"{kind} token accuracy per seed", acc.round(4).tolist())
    measure(f"{kind} baselines", {k: round(v, 4) for k, v in base.items()})
    measure(f"{kind} threshold", round(thr, 4))
    measure(f"{kind} train seconds", round(res.seconds, 1))
    assert reaches(acc, thr), (acc, base)


@pytest.mark.claim(E1, tier="trained", control=True)
def test_memory_and_grid_control(scale, device):
    """The same verdict rejects the 10%-budget flip-flop models and the trained models scored against the exact
    solution of a different instance (a flip-flop with swapped writes)."""
    task, res, T = _trained("flipflop", scale, device)
    base = _baselines("flipflop", scale, device)
    thr = threshold(base, scale)
    t10, res10, _ = _trained("flipflop", scale, device, 0.1)
    assert not reaches(_acc(t10, res10.models, T, device), thr)
    swapped = AutomatonTask(Semiautomaton(zoo.flipflop().delta[[0, 2, 1]]), probs=SPARSE_FLIPFLOP)
    assert not reaches(_acc(swapped, res.models, T, device), thr)


def abelian_advantage(
    acc_abelian: np.ndarray, acc_nonabelian: np.ndarray, thr_abelian: float, margin: float = 0.05
) -> bool:
    """Verdict: the abelian group is learned beyond its trivial baselines (``thr_abelian``, see :func:`threshold`)
    and better than the non-abelian one at equal depth and budget (mean over seeds, with a margin)."""
    return bool(reaches(acc_abelian, thr_abelian) and acc_abelian.mean() - acc_nonabelian.mean() > margin)


SMALL_SCALE_GROUPS = (
    "at --scale small (T = 8, depth 1, 400 steps) the trained models scored 0.62 (C2 x C3) and 0.49 (S3), at the "
    "level of the predictor that reads the last 3 symbols (0.631 and 0.547): the comparison says nothing about "
    "commutativity there, so it runs at --scale full only (T = 100, where windows score about 1/6)"
)


@pytest.mark.claim(E1, tier="trained")
def test_abelian_before_nonabelian(scale, device, measure):
    """C2 x C3 vs S3 (same states, generators of the same orders 3 and 2) at depth 1: only commutativity
    differs, and the non-abelian one is harder (the thesis: D6 needs depth 5, C6 depth <= 4; Lemma 18)."""
    if scale != "full":
        pytest.skip(SMALL_SCALE_GROUPS)
    accs = {}
    for kind in ("C6", "D6"):
        task, res, T = _trained(kind, scale, device)
        accs[kind] = _acc(task, res.models, T, device)
        measure(f"{kind} token accuracy per seed (L=1)", accs[kind].round(4).tolist())
    base = _baselines("C6", scale, device)
    measure("C6 baselines", base)
    assert abelian_advantage(accs["C6"], accs["D6"], threshold(base, scale)), accs


@pytest.mark.claim(E1, tier="trained", control=True)
def test_abelian_before_nonabelian_control(scale, device):
    """With the roles swapped (S3 presented as the abelian task) the verdict rejects."""
    if scale != "full":
        pytest.skip(SMALL_SCALE_GROUPS)
    accs = {}
    for kind in ("C6", "D6"):
        task, res, T = _trained(kind, scale, device)
        accs[kind] = _acc(task, res.models, T, device)
    assert not abelian_advantage(accs["D6"], accs["C6"], threshold(_baselines("D6", scale, device), scale))


DEPTHS = (1, 2, 4, 8)
DEPTH_TARGET = 0.99  # "the minimum number of layers required to achieve 99%+ performance" (Sec. 3.4.5.1)
DEPTH_EVAL = dict(
    eval_every=2000, eval_batches=128
)  # 128 x 16 = 2,048 held-out sequences: the thesis's set size


def depth_budget(scale: str):
    """The depth table's budget: the thesis's (40,000 steps, batch 16) with an evaluation of 2,048 held-out
    sequences every 2,000 steps, where :func:`depth_reached` may stop the training."""
    import dataclasses

    return dataclasses.replace(_budget(scale, 0, 100, 0.0), **DEPTH_EVAL)


def depth_reached(step: int, record: dict) -> bool:
    """The stopping rule of a depth-table training: its best seed has reached 99% on the held-out sequences (the
    row's verdict is then decided; training on cannot undo "achieved 99%")."""
    return reaches(record["eval_acc"], DEPTH_TARGET)


@pytest.mark.claim(E1, tier="trained")
def test_group_depth_table_full(scale, device, measure):
    """Fig 3.15 rows for the groups at the thesis's model size (GPU): the smallest depth in ``DEPTHS`` at which the
    best of 3 seeds reaches 99% on 2,048 held-out sequences; abelian groups need no more depth than non-abelian
    ones, S5 the most. A training stops at the first evaluation where its best seed reaches 99%
    (:func:`depth_reached`); one that never does trains all 40,000 steps."""
    if scale != "full":
        pytest.skip("the group depth table runs at --scale full (thesis model size, meant for a GPU)")
    from theorylab.nn import train

    rows = {"C2": zoo.parity(), "C2xC3": c2xc3(), "D6": zoo.dihedral(3), "D8": zoo.dihedral(4),
            "Q8": zoo.quaternion(), "A4": zoo.alternating(4), "A5": zoo.alternating(5), "S5": zoo.symmetric(5)}  # fmt: skip
    min_depth = {}
    for name, aut in rows.items():
        task, min_depth[name] = AutomatonTask(aut), np.inf
        for L in DEPTHS:
            res = train(task, _transformer(task, L, scale, 0), depth_budget(scale), seeds=SEEDS, device=device,
                        progress=False, stop=depth_reached)  # fmt: skip
            acc = res.final["acc"]  # the held-out 2,048 sequences of the last evaluation
            measure(f"{name} L={L} best accuracy", float(acc.max()))
            measure(f"{name} L={L} steps", int(res.throughput["steps_run"][0]))
            if reaches(acc, DEPTH_TARGET):
                min_depth[name] = L
                break
    measure(
        "smallest depth reaching 99%", {k: (None if np.isinf(v) else int(v)) for k, v in min_depth.items()}
    )
    # the comparisons below pass vacuously when nothing was learned (inf <= inf): the abelian rows must reach 99%
    # at some depth of the table first
    from theorylab.nn.quality import require_trained

    require_trained(
        [min_depth[k] for k in ("C2xC3", "C2", "D8")], max(DEPTHS), "smallest depth reaching 99% (C2xC3, C2, D8)",
        above=False,
    )  # fmt: skip
    assert min_depth["C2xC3"] <= min_depth["D6"]
    assert max(min_depth["C2"], min_depth["D8"]) <= min_depth["S5"]


# ------------------------------------------------------------------------------------------------ E6 / E7

P_ONES = (0.1, 0.3, 0.5, 0.7, 0.9)


def shortcut_gaps(task, models, T: int, device: str) -> dict[str, np.ndarray]:
    """Per seed: in-distribution accuracy, the largest drop over $P[\\sigma=1] \\in$ ``P_ONES``, and the drop on
    positions $T+1..2T$ of length-$2T$ sequences."""
    aut = task.automaton
    ind = _acc(task, models, T, device)
    by_p = np.stack([_acc(AutomatonTask(aut, probs=(1 - p, p)), models, T, device) for p in P_ONES])
    longer = _acc(AutomatonTask(aut, score_from=T), models, 2 * T, device)
    return {"in_dist": ind, "by_p": by_p, "ood_drop": ind - by_p.min(axis=0), "length_drop": ind - longer}


def fails_out_of_distribution(g: dict, ood: float = 0.05, length: float = 0.1) -> bool:
    """Verdict for the seed with the best in-distribution accuracy (>= 0.95): it loses more than ``ood`` at some
    $P[\\sigma=1]$ and more than ``length`` beyond the training length."""
    b = int(np.argmax(g["in_dist"]))
    return bool(g["in_dist"][b] >= 0.95 and g["ood_drop"][b] > ood and g["length_drop"][b] > length)


@pytest.mark.claim(E6, tier="trained")
def test_parity_shortcut_fails_ood(scale, device, measure, figure):
    task, res, T = _trained("parity", scale, device)
    g = shortcut_gaps(task, res.models, T, device)
    measure("in-distribution accuracy per seed", g["in_dist"].round(4).tolist())
    for p, row in zip(P_ONES, g["by_p"], strict=True):
        measure(f"accuracy at P[1]={p}", row.round(4).tolist())
    measure("accuracy drop beyond T per seed", g["length_drop"].round(4).tolist())
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(4, 3))
    ax.plot(P_ONES, g["by_p"], marker="o")
    ax.set_xlabel("P[σ=1] at test time (train: 0.5)")
    ax.set_ylabel("token accuracy")
    ax.set_title(f"parity, T={T}, 1-layer Transformer")
    figure(fig, "parity_ood")
    plt.close(fig)
    assert fails_out_of_distribution(g), g


@pytest.mark.claim(E6, tier="trained", control=True)
def test_parity_lstm_control(scale, device, measure):
    """The LSTM (the recurrent solution) is not flagged: no drop out of distribution or beyond T."""
    task, res, T = _trained("parity-lstm", scale, device)
    g = shortcut_gaps(task, res.models, T, device)
    measure("LSTM in-distribution accuracy per seed", g["in_dist"].round(4).tolist())
    measure("LSTM worst OOD accuracy per seed", g["by_p"].min(axis=0).round(4).tolist())
    assert not fails_out_of_distribution(g)
    assert g["in_dist"].max() >= 0.99
