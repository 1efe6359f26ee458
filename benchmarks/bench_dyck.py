"""Benchmark of the Dyck family against naive peers, in the same run.

1. Prefix counting: dynamic programming over the depth vs brute force over all $(2k)^N$ strings.
2. Pumping (Thm 1 necessity): the exact search (closed form + exact sums of exponentials) vs a naive loop that
   materialises the pumped strings for beta = 1, 2, ... and runs the float model until the outputs coincide.

Usage: ``python benchmarks/bench_dyck.py [--quick] [--out results.json]``.
"""

from __future__ import annotations

import argparse
import json

import numpy as np
from timing import best_of

from theorylab.attention.dyck import balance as db
from theorylab.languages.dyck import Dyck


def _timed(fn, repeat: int = 1):
    best, out = best_of(fn, repeat)
    return out, best


def bench_counting(length: int) -> dict:
    lang = Dyck(2, 4)
    dp, t_dp = _timed(lambda: lang.count_prefixes(length), repeat=5)
    bf, t_bf = _timed(lambda: lang.count_prefixes_brute_force(length))
    assert dp == bf
    return {"length": length, "count": dp, "dp_s": t_dp, "brute_force_s": t_bf, "ratio": t_bf / t_dp}


def naive_pumping(sol: db.DyckSolution, ce: db.PumpingCounterexample, limit: int) -> int | None:
    """First beta at which the float model gives both pumped strings the same output (materialised strings)."""
    for beta in range(1, limit + 1):
        a, b = ce.pumped(beta)
        if np.array_equal(sol.predict(a)[-1], sol.predict(b)[-1]):
            return beta
    return None


def bench_pumping(delta: float) -> dict:
    rng = np.random.default_rng(0)
    M = db.random_balanced_attention(2, 4, rng, 1.0) + delta * np.round(rng.normal(size=(17, 17)) * 256) / 256
    sol = db.construct_solution(2, 4, M, allow_unbalanced=True)
    ce, t_exact = _timed(lambda: db.pumping_counterexample(sol))
    naive, t_naive = _timed(lambda: naive_pumping(sol, ce, 4 * ce.beta))
    return {
        "delta": delta,
        "beta_exact": ce.beta,
        "beta_naive": naive,
        "exact_s": t_exact,
        "naive_s": t_naive,
        "ratio": t_naive / t_exact,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small sizes (seconds)")
    parser.add_argument("--out", default=None, help="write the results as JSON")
    args = parser.parse_args()
    lengths = [6, 8] if args.quick else [8, 10]
    deltas = [2.0**-7] if args.quick else [2.0**-7, 2.0**-10, 2.0**-13]
    results = {
        "counting": [bench_counting(n) for n in lengths],
        "pumping": [bench_pumping(d) for d in deltas],
    }
    print(json.dumps(results, indent=2))
    if args.out:
        with open(args.out, "w", encoding="utf-8") as fh:
            json.dump(results, fh, indent=2)


if __name__ == "__main__":
    main()
