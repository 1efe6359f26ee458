"""Checks of the automata family's Lemma 19 (wreath products) and the experiments E3, E4, E5, E7, E8 of Liu Ch. 3.4
(``001_6a230b9a9faf2198.txt``).

The trained experiments run at ``--scale small`` on CPU (one vmapped call of ``theorylab.nn.train`` per model,
cached per session and shared between a check and its negative control); ``--scale full`` uses the thesis's sizes
and is meant for a GPU.
"""

from __future__ import annotations

import itertools

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
from theorylab.testing import trivial

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


@pytest.mark.claim(L19, tier="exact")
@pytest.mark.parametrize(
    "N,H,order", [(C2, C2, 8), (C3, C2, 18), (C2, C3, 24), (S3, C2, 72), (C2, S3, 2**3 * 6)]
)
def test_wreath_order_and_coordinates(N, H, order):
    """$|N \\wr H| = |N|^{|Y|}|H|$, and every element decodes to coordinates $(f, h)$ that re-encode to it."""
    W = wreath_product(N, H)
    assert W.order == order
    for p in W.elements:
        f, h = wreath_coordinates(p, N.degree, H.degree)
        assert np.array_equal(wreath_element(f, h), p)
        assert H.contains(h) and all(N.contains(r) for r in f)


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
