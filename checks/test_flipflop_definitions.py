"""Claim check of Liu Def 11 (§3.5.1.1): the flip-flop automaton, its transformation monoid's printed
multiplication table, and the flip-flop language read through it, against a from-scratch brute force."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from theorylab.algebra import transformation_semigroup
from theorylab.automata import zoo
from theorylab.languages.flipflop import ONE, ZERO, R, W, is_valid
from theorylab.testing import rejects

# Def 11 on Q = {0, 1}: sigma_0 writes 0, sigma_1 writes 1, ⊥ keeps the state
DEF11 = {"s0": (0, 0), "s1": (1, 1), "bot": (0, 1)}
# the library's flipflop(): symbol 0 = ⊥, symbol 1 writes state 0, symbol 2 writes state 1
LIB_SYMBOL = {"bot": 0, "s0": 1, "s1": 2}
# the printed table, f ∘ g for rows f and columns g (g = sigma_0, sigma_1, ⊥)
PRINTED = {
    "s0": ("s0", "s0", "s0"),
    "s1": ("s1", "s1", "s1"),
    "bot": ("s0", "s1", "bot"),
}
COLS = ("s0", "s1", "bot")


def _name(f: tuple) -> str:
    return next(k for k, v in DEF11.items() if v == f)


def _compose(f: tuple, g: tuple) -> tuple:
    return tuple(f[g[q]] for q in range(2))  # f ∘ g: apply g, then f


def _monoids_of_order(n: int):
    """All monoids on {0..n-1} with identity 0 (brute force over the products of the non-identity elements)."""
    for flat in itertools.product(range(n), repeat=(n - 1) ** 2):
        op = np.zeros((n, n), dtype=np.int64)
        op[0], op[:, 0] = np.arange(n), np.arange(n)
        op[1:, 1:] = np.array(flat).reshape(n - 1, n - 1)
        if all(op[op[a, b], c] == op[a, op[b, c]] for a in range(n) for b in range(n) for c in range(n)):
            yield op


@pytest.mark.claim("flipflop.def11_automaton", tier="exact")
def test_def11_flipflop_automaton_and_monoid(measure) -> None:
    ff = zoo.flipflop()
    for name, f in DEF11.items():
        assert tuple(ff.delta[LIB_SYMBOL[name]]) == f
    # the printed multiplication table of the flip-flop monoid, f ∘ g
    for f in PRINTED:
        assert tuple(_name(_compose(DEF11[f], DEF11[g])) for g in COLS) == PRINTED[f]
    # footnote 35: the closure under composition is the generator set itself
    sg = transformation_semigroup(ff)
    assert sg.size == 3 and {tuple(e) for e in sg.elements} == set(DEF11.values())
    assert _compose(DEF11["s0"], DEF11["s1"]) != _compose(DEF11["s1"], DEF11["s0"])  # non-commutative
    # smallest such monoid: every monoid of order <= 2 is commutative (and a group or {1, 0}); order 3 is not
    small = [op for n in (1, 2) for op in _monoids_of_order(n)]
    assert len(small) == 3 and all(np.array_equal(op, op.T) for op in small)
    three = list(_monoids_of_order(3))
    assert sum(not np.array_equal(op, op.T) for op in three) == 2  # the flip-flop monoid, with 1, 2 swapped
    measure("monoids_of_order_3", len(three))
    # FFL: a string is valid iff every read returns the flip-flop state (w b -> sigma_b, r and i -> ⊥)
    n_valid = 0
    for instr in itertools.product((W, R, 2), repeat=3):
        for bits in itertools.product((ZERO, ONE), repeat=3):
            x = np.array([v for pair in zip(instr, bits, strict=True) for v in pair])
            word = [
                LIB_SYMBOL["s1" if b == ONE else "s0"] if i == W else 0
                for i, b in zip(instr, bits, strict=True)
            ]
            states = ff.run(np.array(word), q0=0)[0]
            before = np.r_[0, states[:-1]]
            brute = instr[0] == W and all(
                (b == ONE) == bool(before[k])
                for k, (i, b) in enumerate(zip(instr, bits, strict=True))
                if i == R
            )
            assert bool(is_valid(x[None])[0]) == brute
            n_valid += brute
    assert n_valid == 50  # 2 first writes x 5 (w 0, w 1, i 0, i 1, r b) per later pair, squared
    measure("valid_ffl_strings_T6", n_valid)
    rejects(lambda: ff.run(np.array([3]), q0=0), r"words contain symbols outside range\(3\)")


@pytest.mark.claim("flipflop.def11_automaton", tier="exact", control=True)
def test_def11_control_reversed_composition() -> None:
    # reading the table as "apply f, then g" (g ∘ f) gives a different first row: (s0, s1, s0)
    row = tuple(_name(_compose(DEF11[g], DEF11["s0"])) for g in COLS)
    assert row == ("s0", "s1", "s0") != PRINTED["s0"]
