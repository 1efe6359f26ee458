"""Registered counterexample generators of the verifier / VGB families (``theorylab counterexample <id>``)."""

from __future__ import annotations

import itertools
from fractions import Fraction

import numpy as np

from theorylab.counterexamples import register
from theorylab.generation.exact import exact_values
from theorylab.generation.hardness import argmax_trap, parity_minimax_queries, parity_optimal_cost
from theorylab.generation.oracles import TabularOracle
from theorylab.generation.vgb import VGB


@register(
    "verifier.thm3.1.1", "D = 3: the optimal expected oracle calls 9/4 against the printed bound 2^(D-1) = 4"
)
def parity_secret_d3() -> dict[str, np.ndarray]:
    D = 3
    cost = parity_optimal_cost(D)
    assert cost == parity_minimax_queries(D)
    order = np.array(list(itertools.product((0, 1), repeat=D - 1)), dtype=np.int64)
    return {
        "D": np.asarray(D),
        "optimal_numerator": np.asarray(cost.numerator),
        "optimal_denominator": np.asarray(cost.denominator),
        "printed_bound": np.asarray(2 ** (D - 1)),
        "query_order": order,
    }


@register(
    "verifier.alg1", "argmax trap: Sigma={0,1,2}, D=4, position-2 law (1/5,1/5,3/5), A = strings without 2"
)
def argmax_trap_instance() -> dict[str, np.ndarray]:
    oracle, _ = argmax_trap(4)
    law = np.array([[float(p) for p in oracle.probs((0,) * h)] for h in range(4)])
    return {"D": np.asarray(4), "next_token_law_by_position": law, "forbidden_token": np.asarray(2)}


def noisy_value_instance():
    """Binary tree H = 3, pi_ref(0|u) = 2/3 everywhere, tau(y) = (1 + #ones)/4 at leaves, internal values V* times
    3/2 on the nodes of odd length whose first token is 0."""
    H = 3
    oracle = TabularOracle(2, lambda u: (Fraction(2, 3), Fraction(1, 3)))

    def tau(y):
        return Fraction(1 + sum(y), 4)

    exact = exact_values(oracle, H, tau)

    def noisy(u):
        return exact[u] * (Fraction(3, 2) if len(u) % 2 == 1 and u[0] == 0 else 1)

    return oracle, H, tau, exact, noisy


@register(
    "vgb.derived.first_leaf_bias",
    "noisy internal values (x3/2 on odd levels under token 0): first-leaf law != pi*",
)
def first_leaf_bias() -> dict[str, np.ndarray]:
    oracle, H, tau, _, noisy = noisy_value_instance()
    walk = VGB(oracle, H, noisy, reward=tau)
    leaves = walk.leaves
    return {
        "leaves": np.array(leaves, dtype=np.int64),
        "target": np.array([float(walk.target()[y]) for y in leaves]),
        "first_leaf": np.array([float(walk.first_leaf_law()[y]) for y in leaves]),
        "stationary_leaf": np.array([float(walk.leaf_law()[y]) for y in leaves]),
    }


@register("vgb.fn12", "non-lazy VGB walk (H=2, binary, exact values) has eigenvalue -1: f(u) = (-1)^|u|")
def non_lazy_periodic() -> dict[str, np.ndarray]:
    oracle, H, tau, exact, _ = noisy_value_instance()
    walk = VGB(oracle, 2, exact_values(oracle, 2, tau).__getitem__)
    return {
        "P": walk.transition_matrix(lazy=False),
        "f": np.array([(-1) ** len(u) for u in walk.nodes], dtype=float),
    }


@register(
    "verifier.def3.2.1",
    "Dyck_8 (p=1/5, q=1/2): Eq 3.4 with the printed '<=' differs from Remark 3.2.1's process",
)
def dyck_closed_form() -> dict[str, np.ndarray]:
    from theorylab.languages.dyck import DyckCompletion  # noqa: PLC0415

    task = DyckCompletion(8, Fraction(1, 5), Fraction(1, 2))
    words = task.words()
    process = [task.probability(w) for w in words]
    printed = [task.closed_form(w, strict=False) for w in words]
    return {
        "words": np.array(words, dtype=np.int64),
        "process": np.array([float(p) for p in process]),
        "printed_unnormalised": np.array([float(p) for p in printed]),
    }
