"""Benchmark: closed-form population loss (block sums) against peers that evaluate the same number.

Peers: the second-moment form $\\mathrm{tr}(W\\Sigma_{yy}W^\\top) - 2\\mathrm{tr}(W\\Sigma_{Py}^\\top) + 1$ (dense, $O(V^3)$),
a plain loop over all $\\binom T\\tau$ topic subsets, and a Monte-Carlo average over sampled subsets (which only
approximates it). Prints a table and writes JSON with the time ratios (peer / closed form) and the errors.

    python benchmarks/bench_topic.py [--quick] [--out bench_topic.json]
"""

from __future__ import annotations

import argparse
import json
from functools import partial
from math import comb

import numpy as np
from timing import best_of

from theorylab.attention.topic import stage1 as tp
from theorylab.languages.topic import TopicModel


def _time(fn, repeats: int) -> tuple[float, float]:
    best, value = best_of(fn, repeats)
    return best, float(value)


def monte_carlo_loss(W: np.ndarray, p: TopicModel, n: int, rng: np.random.Generator) -> float:
    """Average of $\\|Wy - P\\|^2$ over ``n`` random topic subsets, plus $1 - 1/(\\tau v)$ (vectorised)."""
    chosen = np.argsort(rng.random((n, p.T)), axis=1)[:, : p.tau]
    s = np.zeros((n, p.T))
    np.put_along_axis(s, chosen, 1.0, axis=1)
    P = np.zeros((n, p.V))
    P[:, 1:] = np.repeat(s, p.v, axis=1) / (p.tau * p.v)
    y = p.a * P + p.b
    y[:, 0] = p.m0
    r = y @ W.T - P
    return float((r * r).sum(axis=1).mean()) + 1 - 1 / (p.tau * p.v)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small sizes, few repeats")
    parser.add_argument("--out", default=None, help="write JSON results here")
    args = parser.parse_args()
    cases = [(10, 10, 3), (12, 8, 4)] if args.quick else [(10, 10, 3), (20, 10, 5), (40, 25, 4), (100, 30, 3)]
    repeats = 2 if args.quick else 5
    rng = np.random.default_rng(0)
    rows = []
    for T, v, tau in cases:
        p = TopicModel(T, v, tau)
        W = rng.normal(size=(p.V, p.V)) / p.V
        t_closed, closed = _time(partial(tp.population_loss, W, p), repeats)
        row = {"T": T, "v": v, "tau": tau, "V": p.V, "subsets": comb(T, tau), "closed_form_s": t_closed}
        if p.V <= 1500:
            t_mom, mom = _time(partial(tp.population_loss_moments, W, p), max(1, repeats // 2))
            row |= {
                "moments_s": t_mom,
                "moments_ratio": t_mom / t_closed,
                "moments_abs_err": abs(mom - closed),
            }
        if comb(T, tau) <= 20_000:
            t_loop, loop = _time(partial(tp.population_loss_enumerated, W, p, max_subsets=20_000), 1)
            row |= {"loop_s": t_loop, "loop_ratio": t_loop / t_closed, "loop_abs_err": abs(loop - closed)}
        n_mc = 2_000 if args.quick else 20_000
        t_mc, mc = _time(partial(monte_carlo_loss, W, p, n_mc, rng), 1)
        row |= {"mc_samples": n_mc, "mc_s": t_mc, "mc_ratio": t_mc / t_closed, "mc_abs_err": abs(mc - closed)}
        rows.append(row)
        cells = [f"T={T:<4} v={v:<3} tau={tau:<2} V={p.V:<5} closed {t_closed * 1e3:8.3f} ms"]
        for peer in ("moments", "loop", "mc"):
            if f"{peer}_ratio" in row:
                cells.append(f"{peer} x{row[f'{peer}_ratio']:.0f} (err {row[f'{peer}_abs_err']:.1e})")
        print("  ".join(cells))
    if args.out:
        with open(args.out, "w") as fh:
            json.dump({"benchmark": "topic population loss", "rows": rows}, fh, indent=1)


if __name__ == "__main__":
    main()
