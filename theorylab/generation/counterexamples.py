"""Registered counterexample generators of the verifier / VGB families (``theorylab counterexample <id>``)."""

from __future__ import annotations

import itertools
from fractions import Fraction

import numpy as np

from theorylab.counterexamples import register, verifier
from theorylab.generation.exact import exact_values
from theorylab.generation.hardness import argmax_trap, parity_minimax_queries, parity_optimal_cost
from theorylab.generation.oracles import TabularOracle
from theorylab.generation.vgb import VGB

CONVENTIONS = (
    "tokens are 0-based integers; strings are rows of int arrays; a prefix u has depth len(u); probabilities are "
    "stored as floats of exact rationals (numerator/denominator arrays where the exact value matters); a next-token "
    "law row h is the law of the token at position h (0-based)"
)


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


@verifier("verifier.thm3.1.1")
def _thm311_check(a) -> tuple[bool, str]:
    """The optimal expected number of oracle calls (exact, recomputed) equals the stored fraction and is below the
    printed lower bound 2^(D-1)."""
    from theorylab.generation.hardness import parity_printed_bound

    D = int(a["D"])
    stored = Fraction(int(a["optimal_numerator"]), int(a["optimal_denominator"]))
    cost, bound = parity_optimal_cost(D), parity_printed_bound(D)
    ok = cost == stored and bound == int(a["printed_bound"]) and cost < bound
    return ok, f"D = {D}: optimal expected calls {cost} (stored {stored}) < printed bound 2^(D-1) = {bound}"


@register(
    "verifier.alg1", "argmax trap: Sigma={0,1,2}, D=4, position-2 law (1/5,1/5,3/5), A = strings without 2"
)
def argmax_trap_instance() -> dict[str, np.ndarray]:
    oracle, _ = argmax_trap(4)
    law = np.array([[float(p) for p in oracle.probs((0,) * h)] for h in range(4)])
    return {"D": np.asarray(4), "next_token_law_by_position": law, "forbidden_token": np.asarray(2)}


@verifier("verifier.alg1")
def _alg1_check(a) -> tuple[bool, str]:
    """Exact laws: backtracking with argmax re-generation (Algorithm 1, backtrack budget 10, 2 steps back)
    succeeds less often than token-wise rejection sampling (which the printed claim says it dominates)."""
    from theorylab.generation.exact import backtracking_law, tokenwise_law
    from theorylab.generation.verifiers import language_from_predicate, perfect_verifier

    D, bad = int(a["D"]), int(a["forbidden_token"])
    table = [
        tuple(Fraction(float(p)).limit_denominator(100) for p in row)
        for row in a["next_token_law_by_position"]
    ]
    vocab = len(table[0])
    oracle = TabularOracle(vocab, lambda u: table[len(u)])
    V = perfect_verifier(language_from_predicate(lambda s: bad not in s, vocab, D), vocab, D)
    alg1, trs = backtracking_law(oracle, D, V, 10, 2).success, tokenwise_law(oracle, D, V).success
    return (
        alg1 < trs,
        f"success probability: Algorithm 1 {alg1} ({float(alg1):.4f}) < token-wise {trs} ({float(trs):.4f})",
    )


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


@verifier("vgb.derived.first_leaf_bias")
def _first_leaf_check(a) -> tuple[bool, str]:
    """The stored laws are those of the walk on the stated instance (recomputed exactly, to 1e-15); the stationary
    leaf law equals pi* and the first-leaf law does not (total variation > 1e-3)."""
    fresh = first_leaf_bias()
    same = all(
        np.allclose(np.asarray(a[k], float), fresh[k], rtol=0, atol=1e-15) for k in fresh if k != "leaves"
    )
    target, first, stat = (np.asarray(a[k], float) for k in ("target", "first_leaf", "stationary_leaf"))
    tv = 0.5 * float(np.abs(first - target).sum())
    stat_err = float(np.abs(stat - target).max())
    ok = same and stat_err < 1e-15 and tv > 1e-3
    return (
        ok,
        f"TV(first leaf, pi*) = {tv:.4f}; max |stationary - pi*| = {stat_err:.1e}; matches the instance: {same}",
    )


@register("vgb.fn12", "non-lazy VGB walk (H=2, binary, exact values) has eigenvalue -1: f(u) = (-1)^|u|")
def non_lazy_periodic() -> dict[str, np.ndarray]:
    oracle, H, tau, exact, _ = noisy_value_instance()
    walk = VGB(oracle, 2, exact_values(oracle, 2, tau).__getitem__)
    return {
        "P": walk.transition_matrix(lazy=False),
        "f": np.array([(-1) ** len(u) for u in walk.nodes], dtype=float),
    }


@verifier("vgb.fn12")
def _fn12_check(a) -> tuple[bool, str]:
    """P is a transition matrix (rows sum to 1) and P f = -f with f != 0: eigenvalue -1, so the non-lazy walk is
    periodic and does not converge."""
    P, f = np.asarray(a["P"], float), np.asarray(a["f"], float)
    rows = float(np.abs(P.sum(axis=1) - 1).max())
    res = float(np.abs(P @ f + f).max())
    ok = rows < 1e-12 and P.min() >= 0 and res < 1e-12 and np.abs(f).max() > 0
    return (
        ok,
        f"max |P f + f| = {res:.1e} with |f|_inf = {np.abs(f).max():g}; rows sum to 1 within {rows:.1e}",
    )


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


@verifier("verifier.def3.2.1")
def _def321_check(a) -> tuple[bool, str]:
    """On the stored words, Eq 3.4 with the printed '<=' (recomputed exactly, normalised) differs from the process
    of Remark 3.2.1 (recomputed exactly) in total variation."""
    from theorylab.languages.dyck import DyckCompletion

    words = [tuple(int(t) for t in w) for w in np.asarray(a["words"])]
    task = DyckCompletion(len(words[0]), Fraction(1, 5), Fraction(1, 2))
    process = [task.probability(w) for w in words]
    printed = [task.closed_form(w, strict=False) for w in words]
    total = sum(printed)
    tv = sum(abs(p - q / total) for p, q in zip(process, printed, strict=True)) / 2
    return (
        tv > 0,
        f"{len(words)} words of Dyck_{len(words[0])}: TV(process, printed closed form) = {float(tv):.4f} (exact, > 0)",
    )
