"""Benchmark: transformation-semigroup enumeration (theorylab vs libsemigroups_pybind11 vs a plain loop), the
holonomy decomposition, and permutation groups without a Cayley table.

Groups: order, membership, solvability and composition factors of S7, S8, A9, PSL(2,7) (on the projective line,
8 points) and a random solvable group of order > 10^5 (random elements of S4^5 on 20 points), by the table-free
Schreier-Sims path of ``PermutationGroup`` against the old Cayley-table path (``elements``/``table``/table
composition series; run where it fits: order <= 200 with --quick, <= 5040 otherwise). Times and tracemalloc
peaks are measured in separate runs (tracemalloc slows pure Python down). The libsemigroups rows are skipped
(``None``) when the optional extra ``semigroups`` is not installed.

Usage: python benchmarks/bench_algebra.py [--quick] [--out results.json]
"""

from __future__ import annotations

import argparse
import json
import random
import tracemalloc

import numpy as np
from timing import best_of

import theorylab.algebra.groups as groups_module
from theorylab.algebra import (
    PermutationGroup,
    holonomy_decomposition,
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


def libsemigroups_size(aut: Semiautomaton):
    try:
        return semigroup_size(aut, backend="libsemigroups")
    except ImportError:
        return None


def symmetric(n: int) -> list[list[int]]:
    return [[1, 0] + list(range(2, n)), list(range(1, n)) + [0]]


def alternating(n: int) -> list[list[int]]:
    """A_n by a 3-cycle and an (n or n-1)-cycle of even parity."""
    long = list(range(1, n)) + [0] if n % 2 else [0] + list(range(2, n)) + [1]
    return [[1, 2, 0] + list(range(3, n)), long]


def psl27() -> list[list[int]]:
    """PSL(2,7) on the projective line F_7 u {inf} (point 7): x -> x + 1 and x -> -1/x."""
    inv = {1: 1, 2: 4, 3: 5, 4: 2, 5: 3, 6: 6}
    shift = [(x + 1) % 7 for x in range(7)] + [7]
    neg_inv = [7] + [(-inv[x]) % 7 for x in range(1, 7)] + [0]
    return [shift, neg_inv]


def random_solvable(seed: int = 0, blocks: int = 5, n_gens: int = 3) -> list[list[int]]:
    """Random elements of S4^blocks on 4 * blocks points (a subgroup of a solvable group)."""
    rnd = random.Random(seed)
    gens = []
    for _ in range(n_gens):
        p = []
        for b in range(blocks):
            blk = list(range(4 * b, 4 * b + 4))
            rnd.shuffle(blk)
            p += blk
        gens.append(p)
    return gens


def new_path(gens) -> dict:
    """Order, membership (the reversal and a 3-cycle), solvability, composition factors: table-free."""
    G = PermutationGroup(gens)
    n = G.degree
    probes = [list(range(n))[::-1], [1, 2, 0] + list(range(3, n))]
    return {
        "order": G.order,
        "members": [G.contains(p) for p in probes],
        "solvable": G.is_solvable(),
        "factors": [f.name for f in G.composition_factors()],
    }


def old_path(gens) -> dict:
    """The same questions through the Cayley table (the old implementation's algorithms)."""
    limit = groups_module.CAYLEY_LIMIT
    groups_module.CAYLEY_LIMIT = 10**9  # lift the guard for this measurement only
    try:
        G = PermutationGroup(gens)
        n = G.degree
        H = np.arange(len(G.elements))
        G.table  # noqa: B018
        probes = [list(range(n))[::-1], [1, 2, 0] + list(range(3, n))]
        return {
            "order": len(H),
            "members": [np.asarray(p, dtype=np.int64).tobytes() in G._index for p in probes],
            "solvable": G.is_solvable(H),
            "factors": [f.name for f in G.composition_factors(H)],
        }
    finally:
        groups_module.CAYLEY_LIMIT = limit


def peak_bytes(fn) -> int:
    tracemalloc.start()
    try:
        fn()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def group_rows(quick: bool) -> list[dict]:
    import sympy.combinatorics  # noqa: F401  (import cost is not part of any measurement)

    cases = {"S7": symmetric(7), "S8": symmetric(8), "A9": alternating(9), "PSL(2,7)": psl27()}
    cases["random solvable"] = random_solvable()
    old_limit = 200 if quick else 5040
    rows = []
    for name, gens in cases.items():
        t_new, res = best_of(lambda g=gens: new_path(g), 1 if quick else 3)
        row = {"group": name, "degree": len(gens[0]), **res, "schreier_sims_s": t_new}
        row["schreier_sims_peak_kib"] = peak_bytes(lambda g=gens: new_path(g)) / 1024
        row["peak_kib_per_point"] = row["schreier_sims_peak_kib"] / row["degree"]
        if res["order"] <= old_limit:
            t_old, old = best_of(lambda g=gens: old_path(g), 1)
            assert old == res, (old, res)
            row["cayley_table_s"] = t_old
            row["cayley_table/schreier_sims"] = t_old / t_new
            if res["order"] <= 200:
                row["cayley_table_peak_kib"] = peak_bytes(lambda g=gens: old_path(g)) / 1024
        else:
            row["cayley_table_s"] = None  # too large for the old code in this mode (S8 would need ~13 GB)
        if name == "random solvable":
            assert res["order"] > 10**5 and res["solvable"]
        rows.append(row)
        print(json.dumps({k: (round(v, 5) if isinstance(v, float) else v) for k, v in row.items()}))
    return rows


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
        members |= {"T7": full_transformation_monoid(7)}
    rows = []
    libsemigroups_size(zoo.parity())  # import outside the measurements
    for name, aut in members.items():
        rep = 1 if name == "T7" else repeat
        t_ours, S = best_of(lambda a=aut: transformation_semigroup(a), rep)
        t_loop, n_loop = best_of(lambda a=aut: plain_loop_size(a), rep)
        t_ls, n_ls = best_of(lambda a=aut: libsemigroups_size(a), rep)
        assert n_loop == S.size and (n_ls is None or n_ls == S.size)
        row = {"automaton": name, "size": S.size, "theorylab_s": t_ours, "plain_loop_s": t_loop,
               "libsemigroups_s": t_ls if n_ls is not None else None}  # fmt: skip
        row["loop/theorylab"] = t_loop / t_ours
        row["theorylab/libsemigroups"] = t_ours / t_ls if n_ls is not None else None
        if S.size <= 5000 and aut.n_states <= 12:
            row["holonomy_s"] = best_of(lambda a=aut: holonomy_decomposition(a), 1)[0]
        rows.append(row)
        print(json.dumps({k: (round(v, 5) if isinstance(v, float) else v) for k, v in row.items()}))
    rows += group_rows(args.quick)
    if args.out:
        with open(args.out, "w") as f:
            json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()
