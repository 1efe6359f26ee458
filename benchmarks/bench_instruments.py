"""Benchmark: time to the first counterexample and shrink quality of search_counterexample on three rediscoveries.

Claims: hmm.lemma7 (d > k), the printed Dyck decoder (dyck.thm1_balance_sufficiency), the range c1 in (0, 1) of
topic.thm2.1.2. Peer, measured in the same run: an unguided search drawing uniformly from the same instance space
with numpy (same predicate, no shrinking). Reported per claim and seed: examples and seconds to the first failure
(instrument and peer), the ratio peer / instrument, shrink seconds, and the instance size (sum of absolute values of
its numbers, plus sequence lengths; seeds left out) before and after shrinking.

    python benchmarks/bench_instruments.py [--quick] [--out bench_instruments.json]
"""

from __future__ import annotations

import argparse
import json

import numpy as np
from timing import Stopwatch

from theorylab.instruments import Budget
from theorylab.instruments import rediscoveries as R
from theorylab.instruments.search import evaluate, instance_size

CLAIMS = ("hmm.lemma7", "dyck.thm1_balance_sufficiency", "topic.thm2.1.2")


def _draw(claim: str, rng: np.random.Generator) -> dict:
    if claim == "hmm.lemma7":
        return {
            "d": int(rng.integers(2, 6)),
            "k": int(rng.integers(2, 6)),
            "seed": int(rng.integers(0, 2**16)),
            "v0": rng.integers(-3, 4, 5).tolist(),
        }
    if claim == "dyck.thm1_balance_sufficiency":
        return {
            "k": int(rng.integers(1, 4)),
            "depth": int(rng.integers(2, 5)),
            "seed": int(rng.integers(0, 2**16)),
            "moves": rng.integers(0, 6, int(rng.integers(3, 15))).tolist(),
        }
    space = R.C1_SPACE
    out = {n: float(rng.uniform(*space[n])) for n in ("p_m", "p_c", "p_r")}
    out.update({n: int(rng.choice(space[n])) for n in ("T", "v")})
    return out


def random_search(claim: str, seed: int, max_examples: int) -> tuple[int | None, float]:
    """(examples, seconds) until the printed predicate first fails on a uniform draw; (None, s) if never."""
    predicate = R.SEARCHES[claim][0]
    rng = np.random.default_rng(seed)
    clock = Stopwatch()
    for n in range(1, max_examples + 1):
        if evaluate(predicate, _draw(claim, rng)).holds is False:
            return n, clock.elapsed()
    return None, clock.elapsed()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="one seed per claim, small budgets")
    parser.add_argument("--out", default=None, help="write JSON results here")
    args = parser.parse_args()
    seeds = [0] if args.quick else [0, 1, 2, 3, 4]
    budget = Budget(
        max_examples=60 if args.quick else 150, seconds=30.0, shrink_seconds=2.0 if args.quick else 10.0
    )
    for claim in CLAIMS:  # warm imports and caches, so the first timed search does not pay for them
        random_search(claim, 99, 2)
    rows = []
    for claim in CLAIMS:
        for seed in seeds:
            cx = R.search_claim(claim, seed=seed, budget=budget)
            peer_n, peer_s = random_search(claim, seed, budget.max_examples)
            rows.append(
                {
                    "claim": claim,
                    "seed": seed,
                    "found": bool(cx),
                    "examples_to_first": cx.examples if cx else None,
                    "seconds_to_first": cx.seconds if cx else None,
                    "shrink_seconds": cx.shrink_seconds if cx else None,
                    "size_first": instance_size(cx.first_parameters) if cx else None,
                    "size_shrunk": instance_size(cx.parameters) if cx else None,
                    "shrunk": {k: v for k, v in cx.parameters.items()} if cx else None,
                    "random_examples_to_first": peer_n,
                    "random_seconds_to_first": peer_s,
                    "time_ratio_random_over_instrument": (peer_s / cx.seconds) if cx and peer_n else None,
                }
            )
    head = f"{'claim':32s} {'seed':>4s} {'ex':>4s} {'t_first':>8s} {'shrink':>7s} {'size':>17s} {'rand_ex':>7s} {'ratio':>7s}"
    print(head)
    for r in rows:
        size = f"{r['size_first']:.4g} -> {r['size_shrunk']:.4g}" if r["found"] else "-"
        ratio = r["time_ratio_random_over_instrument"]
        print(
            f"{r['claim']:32s} {r['seed']:4d} {r['examples_to_first'] or '-':>4} "
            f"{(r['seconds_to_first'] or 0):8.3f} {(r['shrink_seconds'] or 0):7.3f} {size:>17s} "
            f"{r['random_examples_to_first'] or 'none':>7} {(f'{ratio:.2f}' if ratio else '-'):>7s}"
        )
    if args.out:
        with open(args.out, "w", encoding="utf-8") as fh:
            json.dump(rows, fh, indent=2, default=str)


if __name__ == "__main__":
    main()
