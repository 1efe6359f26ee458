"""The two enumeration paths of the transformation semigroup (plain Python over byte strings for small levels,
whole numpy levels for large ones) give the same object as the plain queue over tuples that defines the order:
the same elements in the same order, the same right Cayley graph, the same shortest words."""

from __future__ import annotations

import numpy as np
import pytest

import theorylab.algebra.semigroup as sg
from theorylab.automata import Semiautomaton, zoo


def queue_reference(delta: np.ndarray) -> tuple[np.ndarray, np.ndarray, tuple]:
    """The plain queue over tuples: elements, right Cayley graph, words (``right[i, s]``: element ``i`` then
    symbol ``s``; the generators first, duplicates dropped). Memoised per table (the tests reuse it)."""
    key = (delta.shape, delta.tobytes())
    if key not in _REFERENCE:
        _REFERENCE[key] = _queue(delta)
    return _REFERENCE[key]


_REFERENCE: dict = {}


def _queue(delta: np.ndarray) -> tuple[np.ndarray, np.ndarray, tuple]:
    gens = [tuple(int(x) for x in row) for row in delta]
    index, rows, words, right = {}, [], [], []
    for s, g in enumerate(gens):
        if g not in index:
            index[g] = len(rows)
            rows.append(g)
            words.append((s,))
    i = 0
    while i < len(rows):
        r = []
        for s, g in enumerate(gens):
            h = tuple(g[x] for x in rows[i])
            if h not in index:
                index[h] = len(rows)
                rows.append(h)
                words.append(words[i] + (s,))
            r.append(index[h])
        right.append(r)
        i += 1
    return np.array(rows), np.array(right), tuple(words)


def full_transformation_monoid(n: int) -> Semiautomaton:
    """T_n from an n-cycle, a transposition and a rank n-1 idempotent (n^n elements)."""
    cycle = [(i + 1) % n for i in range(n)]
    return Semiautomaton(np.array([cycle, [1, 0] + list(range(2, n)), [0, 0] + list(range(2, n))]))


def coded_zoo() -> dict[str, Semiautomaton]:
    """Semiautomata of at most 15 states (both paths apply): T3-T5, S4/S5 and A5 on points, grids, random
    ones of 3-9 states (direct-address index up to 7 states, sorted index beyond; codes in one to three
    chunks), duplicate and identity generators, 15 points (five chunks, unpacked sorts)."""
    out = {f"T{n}": full_transformation_monoid(n) for n in (3, 4, 5)}
    out |= {"S4": zoo.symmetric(4, regular=False), "S5": zoo.symmetric(5, regular=False)}
    out |= {
        "A5": zoo.alternating(5, regular=False),
        "Grid9": zoo.gridworld(9),
        "Grid6": zoo.gridworld(6, True),
    }
    for n, k, seed in [(3, 2, 0), (5, 3, 1), (6, 2, 2), (7, 3, 4), (8, 3, 0), (9, 2, 0), (9, 2, 3)]:
        out[f"random({n},{k},{seed})"] = zoo.random(n, k, seed=seed)
    out["duplicates"] = Semiautomaton(np.array([[1, 0, 2], [1, 0, 2], [0, 0, 1], [0, 1, 2]]))
    # 15 points: five 3-digit chunks, and levels of 8 products or more too wide for (code, position) packing
    c15 = [[(i + 1) % 15 for i in range(15)], [(i - 1) % 15 for i in range(15)], [3] * 15, [7] * 15]
    out["15-cycles and constants"] = Semiautomaton(np.array(c15))
    # T5 on the first 5 of 15 points: unpacked sorts of levels up to 1,809 products with many equal codes (the
    # first occurrence of each code must come first: a sort that is not stable reorders the new elements)
    t5 = full_transformation_monoid(5).delta
    out["T5 on 15 points"] = Semiautomaton(np.hstack([t5, np.tile(np.arange(5, 15), (len(t5), 1))]))
    out["one point"] = Semiautomaton(np.array([[0]]))
    return out


def wide_zoo() -> dict[str, Semiautomaton]:
    """More than 15 states (plain Python only): Dyck, S4/S5 and A5 on themselves, a 16-cycle."""
    out = {"Dyck4,2": zoo.dyck(2, 4), "S4 regular": zoo.symmetric(4), "S5 regular": zoo.symmetric(5)}
    out |= {"A5 regular": zoo.alternating(5), "Grid16": zoo.gridworld(16)}
    out["16-cycle"] = Semiautomaton(np.array([[(i + 1) % 16 for i in range(16)]]))
    return out


def assert_same(S: sg.TransformationSemigroup, aut: Semiautomaton, name: str) -> None:
    elements, right, words = queue_reference(aut.delta)
    assert S.elements.dtype == np.int64 and S.right.dtype == np.int64, name
    assert np.array_equal(S.elements, elements), name
    assert np.array_equal(S.right, right), name
    assert tuple(S.words) == words and S.words[-1] == words[-1], name


@pytest.mark.parametrize("vector_from", [1, 40, None, 10**9])
def test_both_paths_give_the_queue_object(monkeypatch, vector_from):
    """From the first level in numpy, from a mid level (40 products), at the default threshold, never: the
    same elements, right Cayley graph and words as the queue, on every member of the zoo."""
    if vector_from is not None:
        monkeypatch.setattr(sg, "_VECTOR_FROM", vector_from)
    for name, aut in (coded_zoo() | wide_zoo()).items():
        assert_same(sg._enumerate(aut, 10**6), aut, name)


def test_the_zoo_exercises_both_paths(monkeypatch):
    """At the default threshold the coded zoo has members that never leave plain Python and members that
    switch to numpy (so the comparison above is not vacuous)."""
    calls = []
    real = sg._enumerate_levels
    monkeypatch.setattr(sg, "_enumerate_levels", lambda *a: calls.append(a[2]) or real(*a))
    switched = {}
    for name, aut in coded_zoo().items():
        calls.clear()
        sg._enumerate(aut, 10**6)
        switched[name] = bool(calls)
    assert switched["T5"] and switched["random(8,3,0)"] and switched["random(7,3,4)"]
    assert not switched["T3"] and not switched["T4"] and not switched["duplicates"]


def test_the_switch_is_at_the_first_level_of_enough_products(monkeypatch):
    """T4's levels have 3, 7, 13 elements (9, 21, 39 products): numpy takes over at the first level of at
    least ``_VECTOR_FROM`` products, never for more than 15 states."""
    calls = []
    real = sg._enumerate_levels
    monkeypatch.setattr(sg, "_enumerate_levels", lambda *a: calls.append((len(a[1]), a[2])) or real(*a))
    T4 = full_transformation_monoid(4)
    for vector_from, switch in [(9, (3, 0)), (10, (10, 3)), (21, (10, 3)), (22, (23, 10)), (39, (23, 10))]:
        monkeypatch.setattr(sg, "_VECTOR_FROM", vector_from)
        calls.clear()
        assert_same(sg._enumerate(T4, 10**6), T4, str(vector_from))
        assert calls == [switch], (vector_from, calls)
    monkeypatch.setattr(sg, "_VECTOR_FROM", 1)
    for n, expected in [(15, 1), (16, 0)]:
        calls.clear()
        cycle = Semiautomaton(np.array([[(i + 1) % n for i in range(n)]]))
        assert_same(sg._enumerate(cycle, 10**6), cycle, f"{n}-cycle")
        assert len(calls) == expected, n


def test_more_than_256_states_use_two_bytes_a_state():
    """Beyond 256 states a state takes two bytes (products gathered by numpy, not ``bytes.translate``): the
    dihedral group of a 300-gon with a constant map (600 + 300 elements)."""
    n = 300
    rotate = [(i + 1) % n for i in range(n)]
    reflect = [(-i) % n for i in range(n)]
    aut = Semiautomaton(np.array([rotate, reflect, [0] * n]))
    assert sg._byte_dtype(256) == np.uint8 and sg._byte_dtype(257) == np.uint16
    assert sg._byte_dtype(1 << 16) == np.uint16 and sg._byte_dtype((1 << 16) + 1) == np.uint32
    S = sg._enumerate(aut, 10**6)
    assert S.size == 900
    assert_same(S, aut, "dihedral 300 + constant")


@pytest.mark.parametrize("vector_from", [1, 10**9])
def test_max_size_is_enforced_on_both_paths(monkeypatch, vector_from):
    monkeypatch.setattr(sg, "_VECTOR_FROM", vector_from)
    T4 = full_transformation_monoid(4)
    for limit in (2, 5, 100, 255):  # the generators alone, the first level, mid-way, one short
        with pytest.raises(ValueError, match=f"more than {limit} elements"):
            sg._enumerate(T4, limit)
    assert sg._enumerate(T4, 256).size == 256  # exactly at the limit
    with pytest.raises(ValueError, match="more than 100 elements"):
        sg._enumerate(zoo.dyck(2, 4), 100)  # 32 states: plain Python whatever the threshold


def test_public_entry_point_and_libsemigroups_agree_on_the_zoo():
    """``transformation_semigroup`` (cached, read-only arrays) is the same object as libsemigroups' enumeration
    where that peer is installed."""
    from theorylab.algebra import transformation_semigroup

    for name, aut in (coded_zoo() | wide_zoo()).items():
        S = transformation_semigroup(aut)
        assert not S.elements.flags.writeable and not S.right.flags.writeable
        assert_same(S, aut, name)
    pytest.importorskip("libsemigroups_pybind11")
    for name, aut in coded_zoo().items():
        A, B = transformation_semigroup(aut), transformation_semigroup(aut, backend="libsemigroups")
        assert np.array_equal(A.elements, B.elements) and np.array_equal(A.right, B.right), name
        assert tuple(A.words) == tuple(B.words), name


def test_chunk_sizes_are_the_fewest_within_the_table_budget():
    """Chunks as equal as possible, the fewest whose product tables keep ``k * n**c`` within budget."""
    assert sg._TABLE_ENTRIES == 1 << 15
    cases = {(1, 1): (1,), (3, 3): (3,), (5, 3): (5,), (6, 3): (3, 3), (7, 3): (4, 3), (8, 3): (4, 4)}
    cases |= {(8, 8): (4, 4), (8, 9): (3, 3, 2), (9, 3): (3, 3, 3), (10, 3): (4, 3, 3), (15, 2): (3,) * 5}
    for (n, k), sizes in cases.items():
        assert sg._chunk_sizes(n, k) == sizes, (n, k)
        assert sum(sizes) == n and k * n ** max(sizes) <= sg._TABLE_ENTRIES or n == 1


@pytest.mark.parametrize("n, k", [(4, 3), (7, 2), (9, 3), (13, 2)])
def test_codes_round_trip_and_products_are_the_compositions(n, k):
    """Chunked codes (seed 0): split then joined is the code, decoded is the transformation, and the table
    products are the codes of ``g_s o f`` computed directly."""
    rng = np.random.default_rng(0)
    d = rng.integers(0, n, size=(k, n))
    coder = sg._Codes(d)
    rows = rng.integers(0, n, size=(50, n))
    codes = rows @ coder.radix
    chunks = coder.split(codes)
    assert len(chunks) == len(sg._chunk_sizes(n, k))
    assert np.array_equal(coder.code(chunks), codes)
    decoded = coder.decode(chunks)
    assert decoded.dtype == np.int64 and np.array_equal(decoded, rows)
    composed = d[:, rows].transpose(1, 0, 2)  # [f, s, q] = g_s(f(q))
    assert np.array_equal(coder.code(coder.products(chunks)), (composed @ coder.radix).reshape(-1))
