"""Benchmark: transformation-semigroup enumeration (theorylab vs libsemigroups_pybind11 vs a plain loop),
group orders (theorylab vs sympy) and the holonomy decomposition.

Usage: python benchmarks/bench_algebra.py [--quick] [--out results.json]
"""

from __future__ import annotations

import argparse
import json
import time

import numpy as np

from theorylab.algebra import (
    holonomy_decomposition,
    permutation_group,
    semigroup_size,
    transformation_semigroup,
)
from theorylab.automata import Semiautomaton, zoo


def full_transformation_monoid(n: int) -> Semiautomaton:
    cycle = [(i + 1) % n for i in range(n)]
    return Semiautomaton(
        np.array([cycle, [1, 0] + list(range(2, n)), [0, 0] + list(range(2, n))]), name=f"T{n}"
    )


def plain_loop_size(aut: Semiautomaton) -> int:
    """Baseline: breadth-first closure over tuples in pure Python."""
    gens = [tuple(int(x) for x in row) for row in aut.delta]
    seen, frontier = set(gens), list(gens)
    while frontier:
        new = []
        for f in frontier:
            for g in gens:
                h = tuple(g[x] for x in f)
                if h not in seen:
                    seen.add(h)
                    new.append(h)
        frontier = new
    return len(seen)


def best_of(fn, repeat: int) -> tuple[float, object]:
    best, out = float("inf"), None
    for _ in range(repeat):
        t = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - t)
    return best, out


def libsemigroups_size(aut: Semiautomaton):
    try:
        return semigroup_size(aut, backend="libsemigroups")
    except ImportError:
        return None


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--out", default=None)
    args = ap.parse_args()
    repeat = 1 if args.quick else 3
    members = {
        "T4": full_transformation_monoid(4),
        "T5": full_transformation_monoid(5),
        "S5": zoo.symmetric(5),
    }
    members |= {"Dyck4,2": zoo.dyck(2, 4), "Grid9": zoo.gridworld(9), "random(7,3)": zoo.random(7, 3, seed=0)}
    if not args.quick:
        members |= {"T6": full_transformation_monoid(6), "random(9,3)": zoo.random(9, 3, seed=0)}
    rows = []
    for name, aut in members.items():
        t_ours, S = best_of(lambda a=aut: transformation_semigroup(a), repeat)
        t_loop, n_loop = best_of(lambda a=aut: plain_loop_size(a), repeat)
        t_ls, n_ls = best_of(lambda a=aut: libsemigroups_size(a), repeat)
        assert n_loop == S.size and (n_ls is None or n_ls == S.size)
        row = {"automaton": name, "size": S.size, "theorylab_s": t_ours, "plain_loop_s": t_loop,
               "libsemigroups_s": t_ls if n_ls is not None else None}  # fmt: skip
        row["loop/theorylab"] = t_loop / t_ours
        row["theorylab/libsemigroups"] = t_ours / t_ls if n_ls is not None else None
        if S.size <= 5000 and aut.n_states <= 12:
            row["holonomy_s"] = best_of(lambda a=aut: holonomy_decomposition(a), 1)[0]
        rows.append(row)
        print(json.dumps({k: (round(v, 5) if isinstance(v, float) else v) for k, v in row.items()}))
    # group orders: exact enumeration vs sympy's Schreier-Sims
    from sympy.combinatorics import Permutation, PermutationGroup

    groups = {"S5@points": zoo.symmetric(5, regular=False), "S6@points": zoo.symmetric(6, regular=False)}
    for name, aut in (groups | {"A5": zoo.alternating(5)}).items():
        t_ours, G = best_of(lambda a=aut: permutation_group(a.delta).composition_factors(), repeat)
        gens = [Permutation(list(map(int, r))) for r in aut.delta]
        t_sp, _ = best_of(
            lambda g=gens: (PermutationGroup(g).order(), PermutationGroup(g).is_solvable), repeat
        )
        row = {
            "group": name,
            "factors": [f.name for f in G],
            "theorylab_composition_s": t_ours,
            "sympy_order_solvable_s": t_sp,
        }
        rows.append(row)
        print(json.dumps({k: (round(v, 5) if isinstance(v, float) else v) for k, v in row.items()}))
    if args.out:
        with open(args.out, "w") as f:
            json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()
