"""Checks of the automata family's Lemma 19 (wreath products) and the experiments E3, E4, E5, E7, E8 of Liu Ch. 3.4
(``001_6a230b9a9faf2198.txt``).

The trained experiments run at ``--scale small`` on CPU (one vmapped call of ``theorylab.nn.train`` per model,
cached per session and shared between a check and its negative control); ``--scale full`` uses the thesis's sizes
and is meant for a GPU.
"""

from __future__ import annotations

import itertools
from functools import cache

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from theorylab.algebra import permutation_group
from theorylab.algebra.wreath import (
    group_prefix,
    krasner_kaloujnine,
    lemma19_mix,
    lemma19_run,
    thm16_depth_bound,
    wreath_coordinates,
    wreath_element,
    wreath_product,
    wreath_tower,
)
from theorylab.automata import zoo
from theorylab.testing import rejects, trivial

L19 = "automata.lemma19_wreath"

# ------------------------------------------------------------------------------------------------ Lemma 19


def _compose_perms(perms: np.ndarray) -> np.ndarray:
    """Reference: prefix compositions $w_t \\circ \\cdots \\circ w_1$ of permutations ``perms[..., t, :]``."""
    out = np.empty_like(perms)
    acc = np.broadcast_to(np.arange(perms.shape[-1]), perms.shape[:-2] + perms.shape[-1:])
    for t in range(perms.shape[-2]):
        acc = np.take_along_axis(perms[..., t, :], acc, axis=-1)  # w_t o acc
        out[..., t, :] = acc
    return out


def _wreath_perms(N, H, f, h) -> np.ndarray:
    """The permutations of $X \\times Y$ of wreath words given by element indices ``f[..., |Y|]``, ``h[...]``."""
    nX = N.degree
    return H.elements[h][..., :, None] * nX + N.elements[f]  # [..., |Y|, |X|] -> flattened below


def simulates_wreath(N, H, f, h, run=lemma19_run) -> bool:
    """Verdict: the stages' output $(F_t, H_t)$, read as permutations of $X \\times Y$, equals the composed product."""
    F, Hp = run(N, H, f, h)
    got = _wreath_perms(N, H, F, Hp).reshape(F.shape[:-1] + (-1,))
    want = _compose_perms(_wreath_perms(N, H, f, h).reshape(f.shape[:-1] + (-1,)))
    return bool(np.array_equal(got, want))


def run_without_mixing(N, H, f, h):
    """Negative control: Lemma 17 alone (the $|Y|$ copies of $N$ read $f_t(y)$ unmixed): the direct product."""
    return np.moveaxis(group_prefix(N, np.moveaxis(f, -1, -2)), -2, -1), group_prefix(H, h)


def run_mixing_current(N, H, f, h):
    """Negative control: re-index by $H_t$ instead of $H_{t-1}$ (off by one position)."""
    Hp = group_prefix(H, h)
    a = np.take_along_axis(f, H.elements[Hp], axis=-1)
    return np.moveaxis(group_prefix(N, np.moveaxis(a, -1, -2)), -2, -1), Hp


C3 = permutation_group([[1, 2, 0]])
C2 = permutation_group([[1, 0]])
S3 = permutation_group([[1, 2, 0], [1, 0, 2]])
SWAP01 = permutation_group([[1, 0, 2]])  # intransitive on Y: point 2 is fixed


@pytest.mark.claim(L19, tier="exact")
@pytest.mark.parametrize(
    "N,H,order",
    [(C2, C2, 8), (C3, C2, 18), (C2, C3, 24), (S3, C2, 72), (C2, S3, 2**3 * 6), (C2, SWAP01, 2**3 * 2)],
)
def test_wreath_order_and_coordinates(N, H, order):
    """$|N \\wr H| = |N|^{|Y|}|H|$, and every element decodes to coordinates $(f, h)$ that re-encode to it."""
    W = wreath_product(N, H)
    assert W.order == order
    for p in W.elements:
        f, h = wreath_coordinates(p, N.degree, H.degree)
        assert np.array_equal(wreath_element(f, h), p)
        assert H.contains(h) and all(N.contains(r) for r in f)


@pytest.mark.claim(L19, tier="exact", control=True)
def test_wreath_coordinates_control():
    """A permutation of $X \\times Y$ that splits a block $X \\times \\{y\\}$ has no wreath coordinates."""
    with pytest.raises(ValueError, match="block"):
        wreath_coordinates([0, 2, 1, 3], 2, 2)


def _all_words(N, H, T: int):
    """Every word of length ``T`` over all elements of $N \\wr H$, as element indices ``(f [B,T,|Y|], h [B,T])``."""
    letters = [(f, h) for h in range(H.order) for f in itertools.product(range(N.order), repeat=H.degree)]
    words = np.array(list(itertools.product(range(len(letters)), repeat=T)))
    f = np.array([lt[0] for lt in letters])[words]
    h = np.array([lt[1] for lt in letters])[words]
    return f, h


@pytest.mark.claim(L19, tier="exact")
@pytest.mark.parametrize("N,H,T", [(C2, C2, 4), (C3, C2, 3), (C2, C3, 3)])
def test_lemma19_simulates_wreath_exhaustive(N, H, T):
    """All words of length ``T`` over all of $N \\wr H$ (8^4, 18^3, 24^3 words): the four stages give the product."""
    f, h = _all_words(N, H, T)
    assert simulates_wreath(N, H, f, h)


@pytest.mark.claim(L19, tier="exact", control=True)
@pytest.mark.parametrize("wrong", [run_without_mixing, run_mixing_current])
def test_lemma19_control_exhaustive(wrong):
    """Without the mixing stage (Lemma 17 alone) or mixing with $H_t$ the same verdict rejects, on the same words."""
    f, h = _all_words(C3, C2, 3)
    assert simulates_wreath(C3, C2, f, h)
    assert not simulates_wreath(C3, C2, f, h, run=wrong)


def _group(name: str):
    return permutation_group(
        {
            "Q8": zoo.quaternion(),
            "D8": zoo.dihedral(4),
            "S3": zoo.dihedral(3),
            "A4": zoo.alternating(4, regular=False),
            "S4": zoo.symmetric(4, regular=False),
        }[name].delta
    )


def is_embedding(kk) -> bool:
    """Verdict: $\\psi$ is an injective homomorphism $G \\to N \\wr G/N$ and ``decode`` inverts it."""
    G = kk.G
    img = np.array([kk.embed(g) for g in range(G.order)])
    if len({r.tobytes() for r in img}) != G.order:
        return False
    comp = img[np.arange(len(img))[:, None, None], img[None, :, :]]  # comp[a, b] = psi(a) o psi(b)
    prod = img[G.table.T]  # psi(a o b) = psi(table[b, a])
    dec = kk.decode(kk.f, kk.h)
    return bool(np.array_equal(comp, prod) and np.array_equal(dec, np.arange(G.order)))


@pytest.mark.claim(L19, tier="exact")
@pytest.mark.parametrize("name,index", [("Q8", 2), ("D8", 2), ("S3", 2), ("A4", 3), ("S4", 2)])
def test_krasner_kaloujnine_embedding(name, index, measure):
    """Krasner-Kaloujnine: $G \\hookrightarrow N \\wr G/N$ for a maximal normal $N$, checked on all $|G|^2$ products
    ($Q_8 \\hookrightarrow C_4 \\wr C_2$: the non-split extension that no semidirect product gives)."""
    G = _group(name)
    N = G.composition_series()[1]
    kk = krasner_kaloujnine(G, N)
    assert kk.H.order == index and kk.N.order * index == G.order
    assert is_embedding(kk)
    W = wreath_product(kk.N, kk.H)
    assert all(W.contains(kk.embed(g)) for g in range(G.order))
    measure(f"{name}: |N wr G/N|", W.order)


@pytest.mark.claim(L19, tier="exact", control=True)
def test_krasner_kaloujnine_control():
    """Dropping the transversal correction ($f_g(y) = g$'s $N$-part read at the wrong coset) breaks the homomorphism:
    the same verdict rejects it."""
    G = _group("Q8")
    kk = krasner_kaloujnine(G, G.composition_series()[1])
    broken = type(kk)(kk.G, kk.normal, kk.N, kk.H, kk.coset, kk.transversal, np.roll(kk.f, 1, axis=1))
    assert is_embedding(kk) and not is_embedding(broken)


TOWER = {"Q8": (4, 3), "D8": (4, 3), "S3": (4, 3), "A4": (7, 10), "S4": (10, 21)}


@pytest.mark.claim(L19, tier="exact")
@pytest.mark.parametrize("name", sorted(TOWER))
def test_thm16_wreath_tower(name, rng, measure):
    """Theorem 16's proof as printed: one Lemma-19 step per composition factor simulates $G$ exactly on random
    words ($T = 64$), depth $= L_N + L_H + 2$ per step $\\le 3\\log_2|G|$, repDim $= |H|\\,\\mathrm{repDim}_N + 1$."""
    G = _group(name)
    tower = wreath_tower(G)
    words = rng.integers(0, G.order, size=(64, 64))
    assert np.array_equal(tower.run(words), group_prefix(G, words))
    depth, rep = TOWER[name]
    assert (tower.depth, tower.rep_dim) == (depth, rep)
    assert tower.depth == tower.inner.depth + 1 + 2
    assert tower.depth <= thm16_depth_bound(G)
    assert wreath_tower(permutation_group([[0, 1, 2]])).depth == 0  # the trivial group needs no layer
    measure(f"{name}: depth, repDim, composition steps", [tower.depth, tower.rep_dim, tower.length])


@pytest.mark.claim(L19, tier="exact", control=True)
def test_thm16_wreath_tower_control(rng):
    """The tower of $D_8$ run on $Q_8$'s words (same order, different extension) does not simulate $Q_8$."""
    Q8, D8 = _group("Q8"), _group("D8")
    words = rng.integers(0, 8, size=(64, 16))
    assert not np.array_equal(wreath_tower(D8).run(words), group_prefix(Q8, words))
    with pytest.raises(ValueError, match="not solvable"):
        wreath_tower(permutation_group(zoo.alternating(5, regular=False).delta))


@st.composite
def wreath_instances(draw):
    """A wreath product $N \\wr H$ of two non-trivial groups ($|X| \\le 4$, $|Y| \\le 3$) and a random word over it."""

    def group(n_max: int):
        n = draw(st.integers(2, n_max))
        perms = st.permutations(list(range(n))).filter(lambda p: p != list(range(n)))
        return permutation_group(draw(st.lists(perms, min_size=1, max_size=2)))

    N, H = group(4), group(3)
    T = draw(st.integers(2, 12))
    seed = draw(st.integers(0, 2**32 - 1))
    r = np.random.default_rng(seed)
    f = r.integers(0, N.order, size=(8, T, H.degree))
    h = r.integers(0, H.order, size=(8, T))
    return N, H, f, h


@pytest.mark.claim(L19, tier="property")
@given(wreath_instances())
def test_lemma19_property(inst):
    """Random $N$, $H$ and words: Lemma 19's stages simulate $N \\wr H$."""
    N, H, f, h = inst
    trivial(bool((h == 0).all()))  # no H-move: mixing is the identity and Lemma 17 alone would do
    assert simulates_wreath(N, H, f, h)


@pytest.mark.claim(L19, tier="property", control=True)
@given(wreath_instances())
def test_lemma19_property_control(inst):
    """The same verdict rejects the unmixed product whenever some copy of $N$ is re-indexed non-trivially and
    that changes a product (decided by brute force on the instance)."""
    N, H, f, h = inst
    wrong = run_without_mixing(N, H, f, h)
    differs = not np.array_equal(wrong[0], lemma19_run(N, H, f, h)[0])
    trivial(not differs)
    assert simulates_wreath(N, H, f, h, run=run_without_mixing) == (not differs)


@st.composite
def solvable_groups(draw):
    """A non-cyclic subgroup of $S_4$ (solvable) generated by 2 random permutations, and a word seed."""
    perms = st.permutations([0, 1, 2, 3]).filter(lambda p: p != [0, 1, 2, 3])
    G = draw(st.lists(perms, min_size=2, max_size=2).map(permutation_group).filter(_not_cyclic))
    return G, draw(st.integers(0, 2**32 - 1))


def _not_cyclic(G) -> bool:
    """Cyclic groups are Theorem 16's base case (one counter, no Lemma-19 step): most draws must not be."""
    return not any(G.element_order(a) == G.order for a in range(G.order))


@pytest.mark.claim(L19, tier="property")
@given(solvable_groups())
def test_thm16_tower_property(inst):
    """Random solvable groups: the Lemma-19 tower simulates them, depth $\\le 3\\log_2|G|$."""
    G, seed = inst
    tower = wreath_tower(G)
    trivial(tower.step is None)  # a cyclic group needs no Lemma-19 step
    words = np.random.default_rng(seed).integers(0, G.order, size=(16, 24))
    assert np.array_equal(tower.run(words), group_prefix(G, words))
    assert tower.depth <= thm16_depth_bound(G)


@pytest.mark.claim(L19, tier="exact")
def test_lemma19_mix_is_reindexing():
    """Stage 2 by hand on $C_2 \\wr C_2$: with $H_{t-1}$ the swap, coordinates are exchanged."""
    f = np.array([[[0, 1]], [[0, 1]]]).reshape(1, 2, 2)
    h = np.array([[1, 0]])
    a = lemma19_mix(C2, f, h, group_prefix(C2, h))
    assert a.tolist() == [[[0, 1], [1, 0]]]


# ------------------------------------------------------------------------------------------------ trained tier

E3 = "automata.E3_attention_mechanism_grid"
E4 = "automata.E4_indirect_supervision"
E5 = "automata.E5_incomplete_supervision"
E7 = "automata.E7_length_generalization"
E8 = "automata.E8_scratchpad_recency"
SEEDS = (0, 1)
WINDOWS = (0, 2, 4, 6, 8, 10)  # last-w-symbol predictors; w = 0 is the majority class


def _grid_n(scale: str) -> int:
    return 9  # Grid9 at both scales (the thesis's E3/E4 task)


def _setup(kind: str, scale: str):
    """(task, model config, budget) of one trained model; ``kind`` ends in ``-10pct`` for the same run at a tenth
    of the steps (the 10%-budget baseline)."""
    from theorylab.automata.experiments import ObservedTask, RevealedTask, ScratchpadTask
    from theorylab.nn import Budget, TransformerConfig

    full = scale == "full"
    base, tenth = kind.removesuffix("-10pct"), kind.endswith("-10pct")
    n = _grid_n(scale)
    grid = zoo.gridworld(n)
    if base.startswith("reveal"):  # E5 (reveal1 is also E3's and E7's model); full: the thesis's C2 and S5
        p = float(base.split(":")[1])
        aut = grid if not full else (zoo.parity() if "S5" not in base else zoo.symmetric(5))
        task, T = RevealedTask(aut, p), (100 if full else 32)
    elif base == "grid":  # E3 / E7 at --scale full: Grid9 at T=128 (Fig 3.17), 4 layers
        task, T = RevealedTask(grid, 1.0), (128 if full else 32)
    elif base == "observed":  # E4: only the boundary indicator 1[q in {0, S}] is supervised
        task, T = ObservedTask(grid, tuple(int(q in (0, n - 1)) for q in range(n))), (40 if full else 32)
    elif base.startswith("scratch"):  # E8: parity with a scratchpad, ALiBi (recency) or sinusoidal positions
        task, T = ScratchpadTask(zoo.parity()), (80 if full else 16)
    else:
        raise KeyError(kind)
    pos = "alibi" if base == "scratch-alibi" else "sinusoidal"
    if full:  # the thesis's GPT-2 setting (Sec. 3.4.5.1); E3's Fig 3.17 model has 4 layers
        L = {"observed": 8, "scratch-alibi": 2, "scratch-sin": 2}.get(base, 4)
        cfg = TransformerConfig(task.vocab_size, task.n_outputs, d_model=512, n_layers=L, n_heads=8 if pos !=
                                "alibi" else 16, d_ff=512, pos=pos, max_len=1024)  # fmt: skip
        steps, lr, batch = 40_000, 1e-4, 16
    else:
        heads = 16 if base.startswith("scratch") else 4  # 16 ALiBi heads: the steepest slope is 2^(-1/2)
        L = 1 if base.startswith("scratch") else 2
        cfg = TransformerConfig(task.vocab_size, task.n_outputs, d_model=32, n_layers=L, n_heads=heads, d_ff=64,
                                pos=pos, max_len=1024)  # fmt: skip
        steps, lr, batch = (300 if base.startswith("scratch") else 400), 1e-2, 32
    steps = max(1, steps // 10) if tenth else steps
    budget = Budget(steps=steps, batch_size=batch, seq_len=T, lr=lr, schedule="warmup_cosine",
                    warmup=min(20, steps), weight_decay=1e-4 if full else 0.0, grad_clip=1.0 if full else None)  # fmt: skip
    return task, cfg, budget


def _grid_kind(scale: str) -> str:
    """E3's and E7's Grid9 model: at ``--scale small`` the same run as E5's $p_{\rm reveal}=1$ (shared)."""
    return "grid" if scale == "full" else "reveal:1.0"


@cache
def _trained(kind: str, scale: str, device: str):
    """Train (once per session) all seeds of one model; returns (task, models, T, seconds)."""
    from theorylab.nn import train

    task, cfg, budget = _setup(kind, scale)
    res = train(task, cfg, budget, seeds=SEEDS, device=device, progress=False)
    return task, res.models, budget.seq_len, res.seconds


@cache
def _untrained(kind: str, scale: str):
    task, cfg, budget = _setup(kind, scale)
    return [cfg.build(s) for s in SEEDS]


def _acc(task, models, T: int, device: str, batches: int = 8) -> np.ndarray:
    from theorylab.nn import evaluate

    return np.array([evaluate(task, m, np.random.default_rng(1), batches, T, device)["acc"] for m in models])


def _window_baselines(task, T: int, labels_of=None) -> dict[int, float]:
    """Accuracy of the best last-w-symbol predictor for each w in ``WINDOWS`` (fitted on 4,000 sampled sequences,
    scored on 1,000 others)."""
    from theorylab.automata.experiments import window_accuracy

    rng = np.random.default_rng(7)
    tr, te = task.sample_batch(rng, 4000, T), task.sample_batch(rng, 1000, T)
    return {
        w: window_accuracy(tr.inputs, tr.targets, te.inputs, te.targets, w, task.vocab_size) for w in WINDOWS
    }


def closes_gap(acc: float, trivial_best: float, share: float = 0.5) -> bool:
    """Verdict used by every trained check: the model closes at least ``share`` of the gap between the best trivial
    predictor of its task and perfect accuracy, ``acc >= trivial + share * (1 - trivial)``."""
    return bool(acc >= trivial_best + share * (1.0 - trivial_best))


def _baselines(kind: str, task, T: int, scale: str, device: str, measure) -> float:
    """The best trivial accuracy of a task: last-w-symbol windows, the untrained model, the 10%-budget model."""
    windows = _window_baselines(task, T)
    untrained = _acc(task, _untrained(kind, scale), T, device)
    tenth = _acc(task, _trained(f"{kind}-10pct", scale, device)[1], T, device)
    measure("window predictors (w: accuracy)", {w: round(a, 4) for w, a in windows.items()})
    measure("untrained model accuracy per seed", untrained.round(4).tolist())
    measure("10%-budget model accuracy per seed", tenth.round(4).tolist())
    return float(max(max(windows.values()), untrained.max(), tenth.max()))


# ---------------------------------------------------------------- E4: indirect supervision


@pytest.mark.claim(E4, tier="trained")
def test_indirect_supervision(scale, device, measure):
    """Grid9 trained only on the boundary indicator $\\mathbf 1[q_t \\in \\{0, 8\\}]$ predicts it; the best trivial
    predictor (a window of up to 10 symbols) is well below, because the boundary depends on the whole history."""
    task, models, T, secs = _trained("observed", scale, device)
    acc = _acc(task, models, T, device)
    trivial_best = _baselines("observed", task, T, scale, device, measure)
    measure("observation accuracy per seed", acc.round(4).tolist())
    measure("train seconds", round(secs, 1))
    assert closes_gap(acc.max(), trivial_best), (
        acc,
        trivial_best,
    )  # half the gap from the best baseline to 1


@pytest.mark.claim(E4, tier="trained", control=True)
def test_indirect_supervision_control(scale, device):
    """The same verdict rejects the trained models scored against a different observation ($\\mathbf 1[q \\in \\{1,
    S-1\\}]$, next to the walls), with that observation's own baselines."""
    from theorylab.automata.experiments import ObservedTask

    task, models, T, _ = _trained("observed", scale, device)
    n = task.automaton.n_states
    other = ObservedTask(task.automaton, tuple(int(q in (1, n - 2)) for q in range(n)))
    acc = _acc(other, models, T, device)
    trivial_best = max(_window_baselines(other, T).values())
    assert not closes_gap(acc.max(), trivial_best)


# ---------------------------------------------------------------- E5: incomplete supervision

P_SMALL = (1.0, 0.2)
P_FULL = (1.0, 0.3, 0.1, 0.03)


def holds_up(acc_full: np.ndarray, acc_sparse: np.ndarray, trivial_best: float, keep: float = 0.75) -> bool:
    """Verdict (best seeds): with sparse labels the model keeps at least ``keep`` of the fully supervised model's
    gain over the best trivial predictor, and closes half the gap from that predictor to perfect accuracy."""
    gain_full, gain_sparse = acc_full.max() - trivial_best, acc_sparse.max() - trivial_best
    return bool(gain_sparse >= keep * gain_full and closes_gap(acc_sparse.max(), trivial_best))


@pytest.mark.claim(E5, tier="trained")
def test_incomplete_supervision(scale, device, measure):
    """Labels revealed with probability $p$: accuracy on all positions barely moves from $p = 1$ to $p = 0.2$ (the
    thesis's C2 result; S5 degrades, GPU only)."""
    from theorylab.automata.tasks import AutomatonTask

    ps = P_FULL if scale == "full" else P_SMALL
    runs = {p: _trained(f"reveal:{p}", scale, device) for p in ps}
    task, _, T, _ = runs[1.0]
    every = AutomatonTask(task.automaton)
    accs = {p: _acc(every, r[1], T, device) for p, r in runs.items()}
    for p, a in accs.items():
        measure(f"state accuracy per seed, p_reveal={p}", a.round(4).tolist())
    trivial_best = _baselines("reveal:1.0", every, T, scale, device, measure)
    for p in ps[1:]:
        assert holds_up(accs[1.0], accs[p], trivial_best), (p, accs, trivial_best)


@pytest.mark.claim(E5, tier="trained", control=True)
def test_incomplete_supervision_control(scale, device):
    """The 10%-budget run at the smallest $p$ (a tenth of its labels) is rejected by the same verdict."""
    from theorylab.automata.tasks import AutomatonTask

    p = (P_FULL if scale == "full" else P_SMALL)[-1]
    task, full_models, T, _ = _trained("reveal:1.0", scale, device)
    every = AutomatonTask(task.automaton)
    few = _trained(f"reveal:{p}-10pct", scale, device)[1]
    trivial_best = max(_window_baselines(every, T).values())
    assert not holds_up(_acc(every, full_models, T, device), _acc(every, few, T, device), trivial_best)


# ---------------------------------------------------------------- E7: length generalisation


def fails_beyond_length(
    acc_in: np.ndarray, acc_beyond: np.ndarray, trivial_best: float, drop: float = 0.1
) -> bool:
    """Verdict for the seed with the best in-distribution accuracy: it learned the task (closes half the gap from
    the best trivial predictor to 1) and loses more than ``drop`` on positions beyond the training length."""
    b = int(np.argmax(acc_in))
    return bool(closes_gap(acc_in[b], trivial_best) and acc_in[b] - acc_beyond[b] > drop)


def _beyond(task, models, T: int, device: str) -> np.ndarray:
    """Accuracy on positions $T+1..2T$ of length-$2T$ sequences."""
    from theorylab.automata.tasks import AutomatonTask

    return _acc(AutomatonTask(task.automaton, score_from=T), models, 2 * T, device)


@pytest.mark.claim(E7, tier="trained")
def test_length_generalization_fails(scale, device, measure):
    """The Transformer trained at length $T$ (sinusoidal positions) loses accuracy beyond $T$."""
    from theorylab.automata.tasks import AutomatonTask

    task, models, T, _ = _trained(_grid_kind(scale), scale, device)
    every = AutomatonTask(task.automaton)
    acc_in, acc_out = _acc(every, models, T, device), _beyond(every, models, T, device)
    measure("in-distribution accuracy per seed", acc_in.round(4).tolist())
    measure("accuracy on positions T+1..2T per seed", acc_out.round(4).tolist())
    trivial_best = _baselines(_grid_kind(scale), every, T, scale, device, measure)
    assert fails_beyond_length(acc_in, acc_out, trivial_best), (acc_in, acc_out, trivial_best)


@pytest.mark.claim(E7, tier="trained", control=True)
def test_length_generalization_lstm_control(scale, device, measure):
    """An LSTM (the recurrent solution) trained at the same length is not flagged: no drop beyond $T$."""
    from theorylab.automata.tasks import AutomatonTask
    from theorylab.nn import Budget, LSTMConfig, train

    task, _, T, _ = _trained(_grid_kind(scale), scale, device)
    every = AutomatonTask(task.automaton)
    full = scale == "full"
    cfg = LSTMConfig(
        every.vocab_size, every.n_outputs, d_embed=64 if full else 16, hidden=128 if full else 32
    )
    budget = Budget(
        steps=5000 if full else 300, batch_size=64 if full else 32, seq_len=T, lr=3e-3 if full else 1e-2
    )
    models = train(every, cfg, budget, seeds=SEEDS, device=device, progress=False).models
    acc_in, acc_out = _acc(every, models, T, device), _beyond(every, models, T, device)
    measure(
        "LSTM in-distribution / beyond-T accuracy per seed",
        [acc_in.round(4).tolist(), acc_out.round(4).tolist()],
    )
    trivial_best = max(_window_baselines(every, T).values())
    assert closes_gap(acc_in.max(), trivial_best)
    assert not fails_beyond_length(acc_in, acc_out, trivial_best)


# ---------------------------------------------------------------- E8: scratchpad + recency bias

LONG = 4  # test at 4x the training length (iterative decoding)
P_OOD = (0.1, 0.9)


def _iterative(task, models, n: int, probs=None, seed: int = 11, device: str = "cpu") -> np.ndarray:
    """Per seed: accuracy of iterative scratchpad decoding on 128 fresh words of length ``n``."""
    from theorylab.automata.experiments import scratchpad_decode

    aut = task.automaton
    rng = np.random.default_rng(seed)
    if probs is None:
        words = aut.sample(rng, 128, n)
    else:
        words = rng.choice(aut.n_symbols, size=(128, n), p=probs).astype(np.int64)
    states = aut.run(words)
    return np.array([float((scratchpad_decode(task, m, words, device) == states).mean()) for m in models])


def _parity_baselines(n: int, measure) -> float:
    """Best last-w-symbol predictor of parity at length ``n`` (no scratchpad: the symbols only)."""
    from theorylab.automata.tasks import AutomatonTask

    windows = _window_baselines(AutomatonTask(zoo.parity()), n)
    measure(f"parity window predictors at length {n}", {w: round(a, 4) for w, a in windows.items()})
    return max(windows.values())


def recurrent_solution(acc_long: np.ndarray, acc_ood: np.ndarray, trivial_best: float) -> bool:
    """Verdict (best seed): iterative decoding at ``LONG`` times the training length and at $P[\\sigma=1]$ far
    from 0.5 both close 90% of the gap from the best trivial predictor to perfect accuracy."""
    b = int(np.argmax(acc_long))
    return bool(
        closes_gap(acc_long[b], trivial_best, 0.9) and closes_gap(acc_ood[:, b].min(), trivial_best, 0.9)
    )


def _scratch_scores(kind: str, scale: str, device: str):
    task, models, T, _ = _trained(kind, scale, device)
    n = LONG * T // 2
    long = _iterative(task, models, n, device=device)
    ood = np.stack([_iterative(task, models, n, probs=(1 - p, p), device=device) for p in P_OOD])
    return task, models, T, n, long, ood


@pytest.mark.claim(E8, tier="trained")
def test_scratchpad_recency(scale, device, measure):
    """Parity with a scratchpad and ALiBi recency bias, trained at $n$ symbols: iterative decoding is (near)
    perfect at $4n$ symbols and at $P[\\sigma=1] \\in \\{0.1, 0.9\\}$, where every window predictor, the untrained
    model and the 10%-budget model are near chance."""
    task, models, T, n, long, ood = _scratch_scores("scratch-alibi", scale, device)
    trivial = [_parity_baselines(n, measure)]
    trivial.append(_iterative(task, _untrained("scratch-alibi", scale), n).max())
    trivial.append(_iterative(task, _trained("scratch-alibi-10pct", scale, device)[1], n).max())
    measure(f"iterative accuracy at {n} symbols per seed", long.round(4).tolist())
    measure(f"iterative accuracy at P[1] = {P_OOD} per seed", ood.round(4).tolist())
    measure(
        "untrained / 10%-budget iterative accuracy (best seed)", [round(float(x), 4) for x in trivial[1:]]
    )
    assert recurrent_solution(long, ood, max(trivial)), (long, ood, trivial)


@pytest.mark.claim(E8, tier="trained", control=True)
def test_scratchpad_without_recency_control(scale, device, measure):
    """The same scratchpad with sinusoidal positions instead of the recency bias: the verdict rejects it."""
    task, models, T, n, long, ood = _scratch_scores("scratch-sin", scale, device)
    measure(f"sinusoidal scratchpad: iterative accuracy at {n} symbols per seed", long.round(4).tolist())
    assert not recurrent_solution(long, ood, 0.5)


# ---------------------------------------------------------------- E3: the attention mechanism on the gridworld


def _attention(models, words: np.ndarray) -> list[list[np.ndarray]]:
    """Per model, the attention weights of each layer ``[B, H, T, T]`` on ``words``."""
    from theorylab.nn import chunked_forward

    out = []
    for m in (
        models
    ):  # wherever the model is, the weights are computed where its parameters are and come back here
        _, attn = chunked_forward(m, words, chunk=256, return_attention=True)
        out.append([a.numpy() for a in attn])
    return out


def boundary_readout(attn_layers: list[np.ndarray], states: np.ndarray, S: int) -> dict[str, np.ndarray]:
    """Per boundary state $b \\in \\{0, S\\}$ and last-layer head: attention on the most recent visit to $b$
    (``on``), on positions before it (``before``), and uniform attention's mass on it (``uniform``); and the first
    layer's mean KL to uniform causal attention (``kl1``)."""
    from theorylab.automata.experiments import boundary_attention

    last = [boundary_attention(attn_layers[-1], states, (b,)) for b in (0, S)]
    first = boundary_attention(attn_layers[0], states, (0, S))
    return {
        "on": np.stack([r["on_boundary"] for r in last]),
        "before": np.stack([r["before"] for r in last]),
        "uniform": np.array([float(r["uniform"]) for r in last]),
        "kl1": float(first["kl_uniform"].mean()),
    }


def detects_boundaries(r: dict, ratio: float = 3.0, before: float = 0.1) -> bool:
    """Verdict (Fig 3.6/3.17): for each boundary state some last-layer head puts at least ``ratio`` times uniform
    attention's mass on its most recent visit and at most ``before`` on the positions before it."""
    ok = (r["on"] >= ratio * r["uniform"][:, None]) & (r["before"] <= before)
    return bool(ok.any(axis=1).all())


@pytest.mark.claim(E3, tier="trained")
def test_attention_detects_boundaries(scale, device, measure):
    """The trained Grid9 model's last-layer heads attend to the most recent boundary state. Asserted at ``--scale
    full`` (the thesis's 4-layer model at $T=128$); at ``--scale small`` the measurements are recorded and the
    check is skipped: the CPU model (about 89% accurate) has not learned the mechanism (see the claim's notes)."""
    task, models, T, _ = _trained(_grid_kind(scale), scale, device)
    aut = task.automaton
    S = aut.n_states - 1
    words = aut.sample(np.random.default_rng(3), 256, T)
    states = aut.run(words)
    for i, layers in enumerate(_attention(models, words)):
        r = boundary_readout(layers, states, S)
        measure(
            f"seed {SEEDS[i]}: last-layer mass on the latest visit to 0 / S per head",
            r["on"].round(3).tolist(),
        )
        measure(f"seed {SEEDS[i]}: last-layer mass before it per head", r["before"].round(3).tolist())
        measure(f"seed {SEEDS[i]}: uniform attention's mass on it (0 / S)", r["uniform"].round(3).tolist())
        measure(f"seed {SEEDS[i]}: layer-1 KL to uniform", round(r["kl1"], 3))
        if scale == "full":
            assert detects_boundaries(r), r
    if scale != "full":
        pytest.skip("the mechanism is asserted at --scale full (GPU); the CPU-sized model has not learned it")


@pytest.mark.claim(E3, tier="trained", control=True)
def test_attention_detects_boundaries_control(scale, device):
    """The same verdict rejects the untrained model and the trained one read against shuffled states."""
    task, models, T, _ = _trained(_grid_kind(scale), scale, device)
    aut = task.automaton
    S = aut.n_states - 1
    words = aut.sample(np.random.default_rng(3), 256, T)
    states = aut.run(words)
    for layers in _attention(_untrained(_grid_kind(scale), scale), words):
        assert not detects_boundaries(boundary_readout(layers, states, S))
    shuffled = np.random.default_rng(4).permutation(states, axis=0)
    for layers in _attention(models, words):
        assert not detects_boundaries(boundary_readout(layers, shuffled, S))


# ------------------------------------------------------------------------------------------------ domains and tasks
# The definitions have a domain: Krasner-Kaloujnine takes any normal subgroup (the trivial one and G itself are its
# boundary cases); the experiments' tasks take probabilities and offsets in their documented ranges. The boundary
# instances are accepted and the ones just outside are rejected with a ValueError whose message begins by naming
# the problem.

DEF = "automata.def_semiautomaton"


@pytest.mark.claim(L19, tier="exact")
def test_krasner_kaloujnine_domain_is_the_normal_subgroups():
    """$N = 1$ ($G \\hookrightarrow 1 \\wr G$) and $N = G$ are embeddings too; a set that is not a subgroup, a
    non-normal subgroup and a set without the identity are rejected by name."""
    G = _group("S3")
    for normal in ([0], np.arange(G.order)):
        kk = krasner_kaloujnine(G, normal)
        assert kk.N.order * kk.H.order == G.order and is_embedding(kk)
    rot = next(i for i in range(1, G.order) if G.element_order(i) == 3)
    flip = next(i for i in range(1, G.order) if G.element_order(i) == 2)
    rejects(
        lambda: krasner_kaloujnine(G, [0, rot]), r"^normal is not closed under the product: not a subgroup"
    )
    rejects(lambda: krasner_kaloujnine(G, [0, flip]), r"^the subgroup is not normal in G")
    rejects(
        lambda: krasner_kaloujnine(G, [rot]), r"^normal must be element indices of G containing the identity"
    )


@pytest.mark.claim(DEF, tier="exact")
def test_task_targets_are_the_runs():
    """Every task's targets are the semiautomaton's run on its inputs (Def 1), with the documented masks and symbol
    laws: a symbol of probability 0 never occurs; score_from = 0 and p_reveal = 1 are the boundary of their ranges,
    -1, 0 and 1.5 lie outside."""
    from theorylab.automata.experiments import ObservedTask, RevealedTask, ScratchpadTask
    from theorylab.automata.tasks import AutomatonTask

    rng = np.random.default_rng(0)
    par, grid = zoo.parity(), zoo.gridworld(4)
    b = AutomatonTask(grid, q0=2).sample_batch(rng, 8, 6)
    assert np.array_equal(b.targets, grid.run(b.inputs, 2)) and b.mask.all()
    b = AutomatonTask(grid, score_from=2).sample_batch(rng, 8, 6)
    assert np.array_equal(b.targets, grid.run(b.inputs, 0)) and b.mask.sum(1).tolist() == [4] * 8
    rejects(lambda: AutomatonTask(grid, score_from=-1), r"^score_from must be a non-negative int, got -1")
    b = ObservedTask(grid, (1, 0, 0, 1), probs=(0.0, 1.0)).sample_batch(rng, 8, 6)
    assert (b.inputs == 1).all() and np.array_equal(b.targets, np.array([1, 0, 0, 1])[grid.run(b.inputs, 0)])
    b = RevealedTask(grid, 1.0, q0=1).sample_batch(rng, 8, 6)
    assert np.array_equal(b.targets, grid.run(b.inputs, 1)) and b.mask.all()
    assert RevealedTask(grid, 1e-9).p_reveal == 1e-9
    for p in (0.0, 1.5):
        rejects(lambda p=p: RevealedTask(grid, p), r"^p_reveal must lie in \(0, 1\], got")
    task = ScratchpadTask(par, q0=1, probs=(0.0, 1.0))
    b = task.sample_batch(rng, 4, 8)
    states = par.run(b.inputs[:, 0::2], 1)
    assert (b.inputs[:, 0::2] == 1).all() and np.array_equal(b.inputs[:, 1::2], 2 + states)
    assert np.array_equal(b.targets[:, 0::2], states) and b.mask[:, 0::2].all() and not b.mask[:, 1::2].any()


@pytest.mark.claim(DEF, tier="exact")
def test_trivial_baselines_on_known_answers():
    """The majority predictor's accuracy is the largest label share; a window of w >= 1 symbols predicts a
    semiautomaton whose every symbol is a reset (the state is the last symbol) perfectly, for every w."""
    from theorylab.automata.baselines import best_window_accuracy
    from theorylab.automata.experiments import majority_accuracy
    from theorylab.automata.semiautomaton import Semiautomaton
    from theorylab.automata.tasks import AutomatonTask

    y = np.array([[0, 0, 1], [2, 0, 1]])
    assert majority_accuracy(y) == 3 / 6
    assert majority_accuracy(y, mask=np.array([[1, 1, 1], [0, 0, 0]], dtype=bool)) == 2 / 3
    resets = AutomatonTask(Semiautomaton(np.array([[0, 0, 0], [1, 1, 1], [2, 2, 2]])))
    acc = best_window_accuracy(resets, 6, 3, np.random.default_rng(0), n_fit=64, n_eval=16)
    assert acc == {1: 1.0, 2: 1.0, 3: 1.0}
