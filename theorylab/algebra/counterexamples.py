"""Counterexample generators of the automata family's algebraic claims (``theorylab counterexample <id>``)."""

from __future__ import annotations

import itertools

import numpy as np

from theorylab.counterexamples import register, verifier

CONVENTIONS = (
    "a semiautomaton's transition table delta has shape [symbols, states]: delta[a, q] is the state after reading "
    "symbol a in state q; states and symbols are 0-based"
)

__all__ = ["smallest_nonsolvable", "holonomy_bound_examples", "nonsolvable_below_largest_subgroup"]


def smallest_nonsolvable() -> np.ndarray:
    """Transition table ``[3, 5]``: $A_5$ on 5 points by the 3-cycles $(0\\,1\\,i)$, $i = 2, 3, 4$ (the
    table of ``zoo.alternating(5, regular=False)``)."""
    out = np.tile(np.arange(5, dtype=np.int64), (3, 1))
    for row, i in zip(out, (2, 3, 4), strict=True):
        row[[0, 1, i]] = [1, i, 0]
    return out


def nonsolvable_below_largest_subgroup() -> np.ndarray:
    """Transition table ``[6, 7]`` of a 7-state semiautomaton whose largest maximal subgroup is solvable but a
    smaller one is not: the permutations $(0\\,1\\,2\\,3)$, $(0\\,1)$, $(4\\,5\\,6)$, $(4\\,5)$ generate
    $S_4\\times S_3$ (order 144, solvable), and the rank-5 maps $c\\circ e$, $\\tau\\circ e$ (with $e$ collapsing
    $\\{4,5,6\\}$ onto 4, $c=(0\\,1\\,2\\,3\\,4)$, $\\tau=(0\\,1)$) generate $S_5$ (order 120) on the image
    $\\{0,..,4\\}$. $|\\mathcal T(\\mathcal A)| = 144 + 3\\cdot120 = 504$. A solvability test that looks only at
    the largest maximal subgroup calls it solvable."""
    e = np.array([0, 1, 2, 3, 4, 4, 4])
    c, tau = np.array([1, 2, 3, 4, 0]), np.array([1, 0, 2, 3, 4])
    return np.array(
        [
            [1, 2, 3, 0, 4, 5, 6],
            [1, 0, 2, 3, 4, 5, 6],
            [0, 1, 2, 3, 5, 6, 4],
            [0, 1, 2, 3, 5, 4, 6],
            c[e],
            tau[e],
        ],
        dtype=np.int64,
    )


def holonomy_bound_examples() -> dict[str, np.ndarray]:
    """Semiautomata whose holonomy decomposition exceeds the bounds printed in Thm 15 (ii)-(iii): the tables
    of ``zoo.random(5, 2, seed=14)``, of the 2-subsets of 4 states, and of ``zoo.quaternion()`` (Q8 acting on
    itself) plus a collapse onto $\\{1, -1\\}$."""
    random_5_2_14 = np.array([[0, 4, 3, 1, 0], [3, 1, 4, 1, 3]], dtype=np.int64)
    quaternion = np.array([[1, 4, 3, 6, 5, 0, 7, 2], [2, 7, 4, 1, 6, 3, 0, 5]], dtype=np.int64)
    rank2 = np.array([[a, b, a, b] for a, b in itertools.combinations(range(4), 2)], dtype=np.int64)
    collapse = np.array([[0, 0, 0, 0, 4, 4, 4, 4]], dtype=np.int64)  # Q8 -> {1, -1} (states 0 and 4)
    return {
        "delta_more_levels_than_states": random_5_2_14,
        "delta_component_larger_than_Q": rank2,
        "delta_group_divisor_not_subgroup": np.vstack([quaternion, collapse]),
    }


@register(
    "automata.fn17_smallest_nonsolvable",
    "a 5-state non-solvable semiautomaton (A5 on 5 points)",
)
def _fn17() -> dict[str, np.ndarray]:
    return {"delta": smallest_nonsolvable(), "n_states": np.array(5), "group_order": np.array(60)}


@register("automata.thm15_bounds", "holonomy cascades exceeding |Q| levels, |Q| states, subgroup-of-T(A)")
def _thm15_bounds() -> dict[str, np.ndarray]:
    return holonomy_bound_examples()


@verifier("automata.fn17_smallest_nonsolvable")
def _fn17_check(a) -> tuple[bool, str]:
    """Every symbol permutes the n_states states and the group they generate (Schreier-Sims) has order
    group_order and is not solvable."""
    from theorylab.algebra import permutation_group

    delta = np.asarray(a["delta"], np.int64)
    n = delta.shape[1]
    perms = all(sorted(row) == list(range(n)) for row in delta.tolist())
    G = permutation_group(delta) if perms else None
    ok = perms and n == int(a["n_states"]) and G.order == int(a["group_order"]) and not G.is_solvable()
    detail = f"{n} states; symbols are permutations: {perms}"
    return ok, detail + (f"; group order {G.order}, solvable: {G.is_solvable()}" if G is not None else "")


@verifier("automata.thm15_bounds")
def _thm15_check(a) -> tuple[bool, str]:
    """Each printed bound of Thm 15 fails on its instance: more levels than |Q|; a component with more states than
    |Q|; a component group (C2 x C2, three involutions) that is no subgroup of T(A) (all have <= 1 involution)."""
    from theorylab.algebra import holonomy_decomposition, maximal_subgroups
    from theorylab.algebra.semiautomaton import Semiautomaton

    def involutions(G) -> int:
        t = G.table
        return int((t[np.arange(G.order), np.arange(G.order)] == 0).sum()) - 1

    aut1 = Semiautomaton(np.asarray(a["delta_more_levels_than_states"]))
    c1 = holonomy_decomposition(aut1)
    aut2 = Semiautomaton(np.asarray(a["delta_component_larger_than_Q"]))
    c2 = holonomy_decomposition(aut2)
    big = max(comp.n_states for comp in c2.components)
    aut3 = Semiautomaton(np.asarray(a["delta_group_divisor_not_subgroup"]))
    top = holonomy_decomposition(aut3).components[0].group
    sub_inv = max(involutions(G.group) for G in maximal_subgroups(aut3))
    ok = c1.n_levels > aut1.n_states and big > aut2.n_states and top.order == 4 and involutions(top) == 3
    ok = ok and sub_inv <= 1
    return ok, (
        f"levels {c1.n_levels} > |Q| = {aut1.n_states}; largest component {big} states > |Q| = {aut2.n_states}; "
        f"top component group of order {top.order} with {involutions(top)} involutions, maximal subgroups of "
        f"T(A) have at most {sub_inv}"
    )
