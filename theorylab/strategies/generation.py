"""Hypothesis strategies for constrained generation: random tabular oracles on small prefix trees, random
constraint sets, random rewards and value noise (all exact Fractions)."""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from fractions import Fraction

import numpy as np
from hypothesis import strategies as st

from theorylab.generation.oracles import TabularOracle

__all__ = ["Instance", "instances", "random_oracle"]


@dataclass(frozen=True)
class Instance:
    """A tabular oracle on $\\{0..k-1\\}^{\\le D}$, a constraint set ``A`` (nonempty, proper) and its table."""

    oracle: TabularOracle
    k: int
    D: int
    A: frozenset
    seed: int


def random_oracle(rng: np.random.Generator, k: int, D: int, zeros: bool = True) -> TabularOracle:
    """Integer weights in 0..4 (1..4 when ``zeros`` is False) per token and prefix, normalised as Fractions."""
    table = {}
    for h in range(D):
        for u in itertools.product(range(k), repeat=h):
            w = rng.integers(0 if zeros else 1, 5, size=k)
            if w.sum() == 0:
                w[rng.integers(k)] = 1
            table[u] = tuple(Fraction(int(x), int(w.sum())) for x in w)
    return TabularOracle(k, table.__getitem__)


@st.composite
def instances(draw, max_D: int = 5, zeros: bool = True) -> Instance:
    """k in {2, 3}, D in 2..max_D (D <= 4 when k = 3); A holds each string with probability in [0.2, 0.8],
    redrawn until A is a nonempty proper subset with positive oracle mass."""
    from theorylab.generation.exact import sequence_law  # noqa: PLC0415

    k = draw(st.sampled_from([2, 3]))
    D = draw(st.integers(2, min(max_D, 4) if k == 3 else max_D))
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    oracle = random_oracle(rng, k, D, zeros)
    support = set(sequence_law(oracle, D))
    strings = list(itertools.product(range(k), repeat=D))
    rho = rng.uniform(0.2, 0.8)
    while True:
        A = frozenset(s for s in strings if rng.random() < rho)
        if A and len(A) < len(strings) and A & support:
            return Instance(oracle, k, D, A, seed)
