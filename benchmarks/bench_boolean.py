"""Benchmark: exact Fourier transform on the hypercube (fast Walsh-Hadamard vs a dense Hadamard matrix vs a per-
coefficient loop) and teacher-student training throughput with the runs batched (vmapped seeds) vs one at a time.

Usage: python benchmarks/bench_boolean.py [--quick] [--out results.json]
"""

from __future__ import annotations

import argparse
import json

import numpy as np
from scipy.linalg import hadamard
from timing import best_of, timed

from theorylab.boolean import SparseParity, characters, walsh_transform


def dense_hadamard(values: np.ndarray) -> np.ndarray:
    """Peer: build the 2^d x 2^d Sylvester-Hadamard matrix and multiply (O(4^d) memory and time)."""
    n = len(values)
    H = hadamard(n, dtype=np.float64)  # H[s, x] = (-1)^popcount(s & x): our index convention
    return (H @ values.astype(np.float64)).round().astype(np.int64)


def loop_coefficients(values: np.ndarray, d: int, n_coef: int) -> tuple[float, int]:
    """Peer: one O(2^d) dot product per coefficient; time ``n_coef`` of them and extrapolate to 2^d."""

    def loop() -> None:
        for s in range(n_coef):
            S = [j for j in range(d) if s >> j & 1]
            float(np.dot(values, characters(d, S)))

    return timed(loop)[0] / n_coef * 2**d, n_coef


def fourier_rows(quick: bool) -> list[dict]:
    rng = np.random.default_rng(0)
    rows = []
    d_dense = 9 if quick else 12
    f = rng.integers(-3, 4, size=2**d_dense).astype(np.int64)
    t_fast, w = best_of(lambda: walsh_transform(f), 3)
    t_dense, w2 = best_of(lambda: dense_hadamard(f), 1)
    assert np.array_equal(w, w2)
    rows.append(
        {
            "d": d_dense,
            "fwht_s": t_fast,
            "peer": "dense Hadamard matmul",
            "peer_s": t_dense,
            "speedup": t_dense / t_fast,
        }
    )
    d_big = 12 if quick else 20
    f = rng.integers(-3, 4, size=2**d_big).astype(np.int64)
    t_fast, _ = best_of(lambda: walsh_transform(f), 2)
    t_loop, n = loop_coefficients(f, d_big, 4 if quick else 8)
    rows.append(
        {
            "d": d_big,
            "fwht_s": t_fast,
            "peer": f"per-coefficient loop (extrapolated from {n})",
            "peer_s": t_loop,
            "speedup": t_loop / t_fast,
        }
    )
    return rows


def training_rows(quick: bool) -> list[dict]:
    from theorylab.nn import distill as ds

    task = SparseParity(20, 3)
    steps = 30 if quick else 400
    teacher = ds.train_mlps(task, 512, [0], 100, checkpoint_every=50, eval_every=50)
    sched = ds.ProgressiveSchedule.two_stage(50, 100, steps // 2)
    n = 4 if quick else 8
    run = lambda seeds: ds.train_mlps(  # noqa: E731
        task,
        32,
        seeds,
        steps,
        supervision=[sched] * len(seeds),
        teacher=teacher.checkpoints_of(0),
        eval_every=steps,
    )
    t_batched, _ = best_of(lambda: run(list(range(n))), 1)
    t_serial, _ = best_of(lambda: [run([s]) for s in range(n)], 1)
    return [
        {
            "runs": n,
            "steps": steps,
            "batched_student_steps_per_s": n * steps / t_batched,
            "serial_student_steps_per_s": n * steps / t_serial,
            "speedup": t_serial / t_batched,
        }
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--out")
    args = parser.parse_args()
    result = {"fourier": fourier_rows(args.quick), "distillation_training": training_rows(args.quick)}
    for r in result["fourier"]:
        print(
            f"d={r['d']}: FWHT {r['fwht_s'] * 1e3:.2f} ms vs {r['peer']} {r['peer_s'] * 1e3:.1f} ms ({r['speedup']:.0f}x)"
        )
    for r in result["distillation_training"]:
        print(
            f"{r['runs']} students x {r['steps']} steps: batched {r['batched_student_steps_per_s']:.0f} steps/s, "
            f"one at a time {r['serial_student_steps_per_s']:.0f} steps/s ({r['speedup']:.1f}x)"
        )
    if args.out:
        with open(args.out, "w") as fh:
            json.dump(result, fh, indent=1)


if __name__ == "__main__":
    main()
