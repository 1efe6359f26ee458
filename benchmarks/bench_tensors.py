"""Benchmarks of theorylab.tensors against peers, as ratios measured in one run.

1. ``kruskal_rank`` (certificates + the cheaper of the primal subset search and the dual null-space search) vs
   brute force over column subsets by increasing size (one SVD per subset, early exit; the catalog's recipe), on
   12x12 .. 20x20 matrices: generic (full rank), rank-deficient (nullity 3) and with a planted 4-column circuit.
2. ``cp_decompose`` (Jennrich; and Jennrich + ALS refinement) vs tensorly's ``parafac`` alone (SVD init) on the
   triple-predictor tensors of random HMMs: time and parameter-recovery error after matching.

Usage: ``python benchmarks/bench_tensors.py [--quick] [--json out.json]``.
"""

from __future__ import annotations

import argparse
import itertools
import json

import numpy as np
from timing import timed

from theorylab.hmm import optimal_predictor, random_hmm
from theorylab.tensors import CPDecomposition, cp_decompose, kruskal_rank, match_factors


def brute_kruskal_rank(A: np.ndarray, tol: float) -> tuple[int, int]:
    """Largest r with all r-subsets independent: subsets by increasing size, one SVD each, early exit."""
    n, m = A.shape
    tested = 0
    for s in range(1, m + 1):
        for c in itertools.combinations(range(m), s):
            tested += 1
            if s > n or np.linalg.svd(A[:, c], compute_uv=False)[-1] <= tol:
                return s - 1, tested
    return m, tested


def _timed(fn, *args, **kwargs):
    t, out = timed(fn, *args, **kwargs)
    return out, t


def bench_kruskal(sizes, rng) -> list[dict]:
    rows = []
    for m in sizes:
        cases = {
            "generic": rng.standard_normal((m, m)),
            "nullity-3": rng.standard_normal((m, m - 3)) @ rng.standard_normal((m - 3, m)),
        }
        circuit = rng.standard_normal((m, m))
        circuit[:, -1] = circuit[:, 0] + circuit[:, 1] - circuit[:, 2]
        cases["circuit-4"] = circuit
        for name, A in cases.items():
            tol = max(A.shape) * np.finfo(float).eps * np.linalg.norm(A, 2)
            rep, t_ours = _timed(kruskal_rank, A, report=True)
            (ref, tested), t_brute = _timed(brute_kruskal_rank, A, tol)
            assert rep.rank == ref, (name, m, rep, ref)
            rows.append(
                dict(
                    matrix=f"{m}x{m} {name}",
                    k_rank=rep.rank,
                    method=rep.method,
                    subsets_ours=rep.subsets_tested,
                    subsets_brute=tested,
                    seconds_ours=t_ours,
                    seconds_brute=t_brute,
                    speedup=t_brute / max(t_ours, 1e-9),
                )
            )
    return rows


def _param_error(model, W, cp) -> float:
    """Max abs error of O read off the mode-2 factor (column sums 1), after Hungarian matching."""
    B = cp.B / cp.B.sum(axis=0)
    return match_factors(model.O, B, scale=False).error


def bench_cp(n_instances: int, rng) -> dict:
    import tensorly as tl
    from tensorly.decomposition import parafac

    times = {"jennrich": 0.0, "jennrich+als": 0.0, "parafac": 0.0}
    errors = {key: [] for key in times}
    for _ in range(n_instances):
        d = int(rng.integers(3, 9))
        k = int(rng.integers(2, d + 1))
        model = random_hmm(d, k, rng)
        W = optimal_predictor(model, "x2x3|x1")
        cp, t = _timed(cp_decompose, W, k)
        times["jennrich"] += t
        errors["jennrich"].append(_param_error(model, W, cp))
        cp, t = _timed(cp_decompose, W, k, refine=True)
        times["jennrich+als"] += t
        errors["jennrich+als"].append(_param_error(model, W, cp))

        def als_alone(W=W, k=k):
            return parafac(tl.tensor(W), k, init="svd", n_iter_max=1000, tol=1e-12)

        (weights, (A, B, C)), t = _timed(als_alone)
        times["parafac"] += t
        errors["parafac"].append(_param_error(model, W, CPDecomposition(A * weights, B, C, 0.0, "als")))
    out = {"instances": n_instances}
    for key in times:
        e = np.array(errors[key])
        out[key] = dict(
            seconds=times[key],
            median_error=float(np.median(e)),
            worst_error=float(e.max()),
            failures=int(np.sum(e > 1e-4)),
        )
    out["time_ratio_parafac_over_jennrich"] = times["parafac"] / times["jennrich"]
    return out


def bench_noisy_cp(sides, rank: int, noise: float, rng) -> list[dict]:
    """Random rank-``rank`` tensors plus Gaussian noise (relative Frobenius size ``noise``): Jennrich (restarts
    stop at the residual's noise floor) and Jennrich + ALS against tensorly's ``parafac`` (SVD init)."""
    import tensorly as tl
    from tensorly.decomposition import parafac

    rows = []
    for n in sides:
        A, B, C = (rng.standard_normal((n, rank)) for _ in range(3))
        T = np.einsum("ir,jr,kr->ijk", A, B, C)
        E = rng.standard_normal(T.shape)
        W = T + noise * np.linalg.norm(T) / np.linalg.norm(E) * E
        cp, t_j = _timed(cp_decompose, W, rank)
        cp_r, t_jr = _timed(cp_decompose, W, rank, refine=True)
        (weights, (A2, B2, C2)), t_p = _timed(
            lambda W=W: parafac(tl.tensor(W), rank, init="svd", n_iter_max=1000, tol=1e-12)
        )
        res_p = float(
            np.linalg.norm(W - np.einsum("ir,jr,kr->ijk", A2 * weights, B2, C2)) / np.linalg.norm(W)
        )
        rows.append(
            dict(
                side=n,
                rank=rank,
                noise=noise,
                jennrich_s=t_j,
                jennrich_als_s=t_jr,
                parafac_s=t_p,
                jennrich_residual=cp.residual,
                jennrich_als_residual=cp_r.residual,
                parafac_residual=res_p,
                jennrich_over_parafac=t_j / t_p,
                jennrich_als_over_parafac=t_jr / t_p,
            )  # fmt: skip
        )
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small sizes (seconds)")
    parser.add_argument("--json", default=None, help="write the results to this JSON file")
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    sizes = [12, 14, 16] if args.quick else [12, 14, 16, 18, 20]
    kr = bench_kruskal(sizes, rng)
    print(
        f"{'matrix':<20} {'k':>3} {'method':<17} {'subsets':>9} {'brute':>9} {'ours s':>9} {'brute s':>9} {'x':>8}"
    )
    for r in kr:
        print(
            f"{r['matrix']:<20} {r['k_rank']:>3} {r['method']:<17} {r['subsets_ours']:>9} {r['subsets_brute']:>9} "
            f"{r['seconds_ours']:>9.4f} {r['seconds_brute']:>9.3f} {r['speedup']:>8.0f}"
        )
    cp = bench_cp(10 if args.quick else 40, rng)
    print(f"\nCP on HMM triple tensors ({cp['instances']} instances, parameter error of O after matching):")
    for key in ("jennrich", "jennrich+als", "parafac"):
        v = cp[key]
        print(
            f"  {key:<13} {v['seconds']:7.3f} s  median {v['median_error']:.1e}  worst {v['worst_error']:.1e}  "
            f"failures(>1e-4) {v['failures']}"
        )
    print(f"  time ratio parafac / jennrich: {cp['time_ratio_parafac_over_jennrich']:.1f}")
    noisy = bench_noisy_cp([30] if args.quick else [30, 40, 50], 5, 1e-3, rng)
    print("\nCP on noisy rank-5 tensors (noise 1e-3), seconds and relative residual; ratio ours / parafac:")
    for r in noisy:
        print(
            f"  side {r['side']}: jennrich {r['jennrich_s']:.4f} s ({r['jennrich_residual']:.2e}), "
            f"+als {r['jennrich_als_s']:.4f} s ({r['jennrich_als_residual']:.2e}), parafac {r['parafac_s']:.4f} s "
            f"({r['parafac_residual']:.2e}); ratios {r['jennrich_over_parafac']:.2f}, {r['jennrich_als_over_parafac']:.2f}"
        )
    if args.json:
        with open(args.json, "w") as fh:
            json.dump({"kruskal_rank": kr, "cp_decompose": cp, "noisy_cp": noisy}, fh, indent=2)


if __name__ == "__main__":
    main()
