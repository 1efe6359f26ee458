"""Benchmark: population NCE gradients by trapezoid quadrature against Monte Carlo at equal accuracy.

The quantity is the population gradient ``grad L(tau)`` of the 1-D Gaussian NCE (mean gap R) at a point on the GD
path. Reference: quadrature on a spacing-0.01 grid (error < 1e-15). For each target accuracy ``eps`` the quadrature
peer uses the coarsest grid of ``h in {0.8, 0.5, 0.4, 0.3, 0.2, 0.1, 0.05}`` whose error is <= eps; the Monte-Carlo
peer draws ``N = (z sd/eps)^2`` samples from each of P_* and Q (``sd`` the per-sample standard deviation of the
gradient's largest coordinate, z = 3, measured on a pilot batch). Monte-Carlo runs above 10^7 samples are timed at
10^7 and extrapolated linearly (marked). Prints a table and writes JSON with the time ratios (MC / quadrature).

    python benchmarks/bench_nce.py [--quick] [--out bench_nce.json]
"""

from __future__ import annotations

import argparse
import json
from functools import partial

import numpy as np
from timing import best_of

from theorylab.estimation import nce

CAP = 10**7


def _time(fn, repeats: int):
    return best_of(fn, repeats)


def _mc_grad(tau, R, n, rng, tq):
    return nce.sample_nce_grad(tau, rng.normal(R, 1, n), rng.normal(0, 1, n), tq)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="one case, loose accuracies")
    parser.add_argument("--out", default=None, help="write JSON results here")
    args = parser.parse_args()
    cases = (
        [(4.0, (1e-2, 1e-3))] if args.quick else [(4.0, (1e-2, 1e-3, 1e-4, 1e-6)), (8.0, (1e-3, 1e-4, 1e-6))]
    )
    repeats = 2 if args.quick else 5
    rng = np.random.default_rng(0)
    rows = []
    for R, epsilons in cases:
        ts, tq = nce.tau_star(R), nce.tau_q()
        tau = 0.5 * (ts + tq)
        fam_ref = nce.gaussian_mean_family(-12, R + 12, 0.01)
        ref = nce.nce_grad(fam_ref, tau, ts, tq)
        pilot = 20_000
        xs, xq = rng.normal(R, 1, pilot), rng.normal(0, 1, pilot)
        u_s, u_q = xs * tau[0] - (tau[1] - tq[1]), xq * tau[0] - (tau[1] - tq[1])
        per = np.concatenate(
            [
                -np.column_stack([xs, -np.ones(pilot)]) / (1 + np.exp(u_s))[:, None],
                np.column_stack([xq, -np.ones(pilot)]) / (1 + np.exp(-u_q))[:, None],
            ]
        )
        sd = float(per.std(axis=0).max())
        for eps in epsilons:
            t_q, h_used = None, None
            for h in (0.8, 0.5, 0.4, 0.3, 0.2, 0.1, 0.05):
                fam = nce.gaussian_mean_family(-12, R + 12, h)
                t, g = _time(partial(nce.nce_grad, fam, tau, ts, tq), repeats)
                if np.abs(g - ref).max() <= eps:
                    t_q, h_used = t, h
                    break
            n_mc = int(np.ceil((3 * sd / eps) ** 2))
            n_run = min(n_mc, CAP)
            t_mc, g_mc = _time(partial(_mc_grad, tau, R, n_run, rng, tq), 1 if n_run > 10**6 else repeats)
            t_mc *= n_mc / n_run
            rows.append(
                {
                    "R": R,
                    "eps": eps,
                    "quad_h": h_used,
                    "quad_s": t_q,
                    "mc_samples": n_mc,
                    "mc_s": t_mc,
                    "mc_extrapolated": n_mc > CAP,
                    "mc_error": float(np.abs(g_mc - ref).max()),
                    "ratio_mc_over_quad": t_mc / t_q,
                }
            )
    print(f"{'R':>4} {'eps':>8} {'quad h':>7} {'quad s':>10} {'MC samples':>12} {'MC s':>10} {'MC/quad':>10}")
    for r in rows:
        mark = "*" if r["mc_extrapolated"] else " "
        print(
            f"{r['R']:>4} {r['eps']:>8.0e} {r['quad_h']:>7} {r['quad_s']:>10.2e} {r['mc_samples']:>12d} "
            f"{r['mc_s']:>10.2e}{mark} {r['ratio_mc_over_quad']:>10.1f}"
        )
    print("* Monte Carlo timed at 1e7 samples and extrapolated linearly")
    if args.out:
        with open(args.out, "w") as fh:
            json.dump(rows, fh, indent=2)


if __name__ == "__main__":
    main()
