"""Benchmark: transformation-semigroup enumeration (theorylab vs libsemigroups_pybind11 vs a plain loop), the
holonomy decomposition, and permutation groups without a Cayley table.

Groups: order, membership, solvability and composition factors of S7, S8, A9, PSL(2,7) (on the projective line,
8 points) and a random solvable group of order > 10^5 (random elements of S4^5 on 20 points), by the table-free
Schreier-Sims path of ``PermutationGroup`` against the old Cayley-table path (``elements``/``table``/table
composition series; run where it fits: order <= 200 with --quick, <= 5040 otherwise). Times and tracemalloc
peaks are measured in separate runs (tracemalloc slows pure Python down). The libsemigroups rows are skipped
(``None``) when the optional extra ``semigroups`` is not installed. ``PermutationGroup`` is also timed against
the sympy group it wraps (order, 200 membership tests, solvability), and the holonomy decomposition against the
semigroup enumeration it needs. Every timed call is cold (``timing.best_of`` empties the library's caches).
Semigroup rows also report CPU time (``timing.best_cpu_of``, interleaved, best of many: this process only, so
less at the mercy of a loaded machine); ``paths`` times the two enumeration paths (plain Python levels, numpy
levels) against the rule that chooses between them.

Usage: python benchmarks/bench_algebra.py [--quick] [--only semigroups|paths|holonomy|sympy|groups]
[--out results.json]
"""

from __future__ import annotations

import argparse
import json
import random
import tracemalloc

import numpy as np
from timing import best_cpu_of, best_of

import theorylab.algebra.groups as groups_module
import theorylab.algebra.semigroup as semigroup_module
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


def sympy_path(gens, probes) -> dict:
    """Peer: order, membership of ``probes`` and solvability straight from sympy's Schreier-Sims."""
    from sympy.combinatorics import Permutation
    from sympy.combinatorics import PermutationGroup as SymPyGroup

    G = SymPyGroup([Permutation(list(g)) for g in gens])
    return {
        "order": int(G.order()),
        "members": [bool(G.contains(Permutation(list(p)))) for p in probes],
        "solvable": bool(G.is_solvable),
    }


def ours_core_path(gens, probes) -> dict:
    """The same questions through :class:`PermutationGroup`."""
    G = PermutationGroup(gens)
    return {"order": G.order, "members": [G.contains(p) for p in probes], "solvable": G.is_solvable()}


def sympy_rows(quick: bool) -> list[dict]:
    """PermutationGroup against the sympy it wraps: order, 200 membership tests (random permutations of the
    points, half of them group elements) and solvability, from the generators."""
    import sympy.combinatorics  # noqa: F401  (import cost is not part of any measurement)

    cases = {
        "S8": symmetric(8),
        "A9": alternating(9),
        "PSL(2,7)": psl27(),
        "random solvable": random_solvable(),
    }
    rows = []
    for name, gens in cases.items():
        n, rng = len(gens[0]), np.random.default_rng(0)
        words = [rng.integers(0, len(gens), 30) for _ in range(100)]
        members = []
        for w in words:
            p = np.arange(n)
            for s in w:
                p = np.asarray(gens[s])[p]
            members.append(p.tolist())
        probes = members + [rng.permutation(n).tolist() for _ in range(100)]
        rep = 1 if quick else 5
        t_ours, ours = best_of(lambda g=gens, q=probes: ours_core_path(g, q), rep)
        t_sympy, peer = best_of(lambda g=gens, q=probes: sympy_path(g, q), rep)
        assert ours == peer
        row = {"group": name, "order": ours["order"], "probes": len(probes), "theorylab_s": t_ours,
               "sympy_s": t_sympy, "theorylab/sympy": t_ours / t_sympy}  # fmt: skip
        rows.append(row)
        print(json.dumps({k: (round(v, 5) if isinstance(v, float) else v) for k, v in row.items()}))
    return rows


def semigroup_members(quick: bool) -> dict[str, Semiautomaton]:
    members = {
        "T4": full_transformation_monoid(4),
        "T5": full_transformation_monoid(5),
        "S5": zoo.symmetric(5),
    }
    members |= {"Dyck4,2": zoo.dyck(2, 4), "Grid9": zoo.gridworld(9), "random(7,3)": zoo.random(7, 3, seed=0)}
    if not quick:
        members |= {"T6": full_transformation_monoid(6), "T7": full_transformation_monoid(7)}
        members |= {"random(8,3)": zoo.random(8, 3, seed=0), "random(9,3)": zoo.random(9, 3, seed=0)}
        members |= {
            "random(10,3,s1)": zoo.random(10, 3, seed=1),
            "random(10,2,s2)": zoo.random(10, 2, seed=2),
        }
    return members


def semigroup_rows(quick: bool) -> list[dict]:
    """Enumeration of T(A) (elements, right Cayley graph) against libsemigroups' FroidurePin (its size: the
    enumeration alone, nothing read back) and a plain loop; cold calls only (``best_of`` empties the caches
    before each). ``libsemigroups_object_s``: the same TransformationSemigroup built through
    ``backend="libsemigroups"`` (enumeration plus reading the Cayley graph and factorisations back)."""
    rows = []
    libsemigroups_size(zoo.parity())  # import outside the measurements
    for name, aut in semigroup_members(quick).items():
        rep = 1 if quick or name in ("T7", "random(10,2,s2)") else 3
        t_ours, S = best_of(lambda a=aut: transformation_semigroup(a), rep)
        t_ls, n_ls = best_of(lambda a=aut: libsemigroups_size(a), rep)
        t_loop, n_loop = best_of(lambda a=aut: plain_loop_size(a), 1)
        assert n_loop == S.size and (n_ls is None or n_ls == S.size)
        row = {"automaton": name, "size": S.size, "theorylab_s": t_ours, "plain_loop_s": t_loop,
               "libsemigroups_s": t_ls if n_ls is not None else None}  # fmt: skip
        row["theorylab/plain_loop"] = t_ours / t_loop
        row["theorylab/libsemigroups"] = t_ours / t_ls if n_ls is not None else None
        cpu = best_cpu_of({"theorylab": lambda a=aut: transformation_semigroup(a),
                           "libsemigroups": lambda a=aut: libsemigroups_size(a)}, repeat=rep)  # fmt: skip
        row["theorylab_cpu_s"] = cpu["theorylab"]
        if n_ls is not None:
            row["libsemigroups_cpu_s"] = cpu["libsemigroups"]
            row["theorylab/libsemigroups_cpu"] = cpu["theorylab"] / cpu["libsemigroups"]
        if n_ls is not None and S.size <= 150_000:  # the whole object through libsemigroups (read back)
            t_full, S2 = best_of(lambda a=aut: transformation_semigroup(a, backend="libsemigroups"), 1)
            assert np.array_equal(S2.elements, S.elements) and np.array_equal(S2.right, S.right)
            row["libsemigroups_object_s"] = t_full
        rows.append(row)
        print(json.dumps({k: (round(v, 5) if isinstance(v, float) else v) for k, v in row.items()}))
    return rows


def path_rows(quick: bool) -> list[dict]:
    """The rule that picks the enumeration path (plain Python for levels of fewer than ``_VECTOR_FROM``
    products, numpy from the first level with more; more than 15 states: plain Python) against each path
    forced for the whole enumeration, in CPU time (interleaved, best of many): ``rule/best`` near 1 (or below:
    the rule mixes the paths) says the threshold is where the two cross."""
    members = {"T4": full_transformation_monoid(4), "Grid9": zoo.gridworld(9), "S5 on points": symmetric(5)}
    members |= {"T5": full_transformation_monoid(5), "random(7,3,4)": zoo.random(7, 3, seed=4)}
    members |= {"random(8,3)": zoo.random(8, 3, seed=0), "random(9,2,3)": zoo.random(9, 2, seed=3)}
    if not quick:
        members |= {"random(9,3)": zoo.random(9, 3, seed=0), "T6": full_transformation_monoid(6)}
    rule = semigroup_module._VECTOR_FROM

    def forced(aut, vector_from):
        semigroup_module._VECTOR_FROM = vector_from
        try:
            return semigroup_module._enumerate(aut, 10**7)
        finally:
            semigroup_module._VECTOR_FROM = rule

    rows = []
    for name, aut in members.items():
        aut = aut if isinstance(aut, Semiautomaton) else Semiautomaton(np.array(aut))
        S = forced(aut, rule)
        levels = np.bincount([len(w) for w in S.words]) * aut.n_symbols
        fns = {"rule": lambda a=aut: forced(a, rule), "python": lambda a=aut: forced(a, 10**12),
               "numpy": lambda a=aut: forced(a, 1)}  # fmt: skip
        cpu = best_cpu_of(fns, budget=0.05 if quick else 0.5, repeat=1 if quick else 5)
        row = {"automaton": name, "size": S.size, "max_level_products": int(levels.max()), "threshold": rule}
        row |= {f"{k}_cpu_s": v for k, v in cpu.items()}
        row["rule/best"] = cpu["rule"] / min(cpu["python"], cpu["numpy"])
        rows.append(row)
        print(json.dumps({k: (round(v, 6) if isinstance(v, float) else v) for k, v in row.items()}))
    return rows


def holonomy_rows(quick: bool) -> list[dict]:
    """The holonomy decomposition against the semigroup enumeration it needs at least (both cold)."""
    members = {
        "T4": full_transformation_monoid(4),
        "Grid9": zoo.gridworld(9),
        "random(7,3)": zoo.random(7, 3, seed=0),
    }
    if not quick:
        members |= {"T5": full_transformation_monoid(5), "random(8,3)": zoo.random(8, 3, seed=0)}
        members |= {"random(10,3,s1)": zoo.random(10, 3, seed=1)}
    rows = []
    holonomy_decomposition(zoo.flipflop())  # lazy imports outside the measurements
    for name, aut in members.items():
        t_hol, C = best_of(lambda a=aut: holonomy_decomposition(a), 1)
        t_sg, S = best_of(lambda a=aut: transformation_semigroup(a), 1)
        row = {"automaton": name, "n_states": aut.n_states, "size": S.size, "components": len(C.components),
               "holonomy_s": t_hol, "semigroup_s": t_sg, "holonomy/semigroup": t_hol / t_sg}  # fmt: skip
        rows.append(row)
        print(json.dumps({k: (round(v, 5) if isinstance(v, float) else v) for k, v in row.items()}))
    return rows


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--only", choices=["semigroups", "paths", "holonomy", "sympy", "groups"], default=None)
    ap.add_argument("--out", default=None)
    args = ap.parse_args()
    parts = {
        "semigroups": semigroup_rows,
        "paths": path_rows,
        "holonomy": holonomy_rows,
        "sympy": sympy_rows,
        "groups": group_rows,
    }
    out = {}
    for key, fn in parts.items():
        if args.only in (None, key):
            out[key] = fn(args.quick)
    if args.out:
        with open(args.out, "w") as f:
            json.dump(out, f, indent=1)


if __name__ == "__main__":
    main()
