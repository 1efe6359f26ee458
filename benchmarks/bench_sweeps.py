"""Benchmark of sweeps: a sweep of >= 32 small models on the local executor vs Ray with 2 workers (a local cluster
of 2 CPUs), and the run store's write and query rates for 10^5 runs.

Sweep: 8 configurations (flip-flop, d_model x n_layers x lr) x 4 seeds = 32 Transformers, stacks of 4 seeds, the
``final`` and ``glitches`` metrics. The Ray time is measured with the cluster already started (its start-up is
printed separately); both executors must store identical metrics. Store: ``finish_many`` of 10^5 runs that share
100 configs (the bulk write, and the per-row ``Run._row`` path it replaced as the peer), ``done_keys`` of all keys
(what a rerun asks) and ``query`` of the sweep (rows decoded to ``Run``). ``--quick``: 4 models, local only,
2,000 rows. Usage: ``python benchmarks/bench_sweeps.py [--quick] [--json out.json]``.
"""

from __future__ import annotations

import argparse
import json
import tempfile
from pathlib import Path

from timing import timed

from theorylab.runs import Run, RunStore
from theorylab.runs.store import _COLUMNS
from theorylab.sweeps import SweepSpec, run_sweep


def sweep_spec(quick: bool) -> SweepSpec:
    grid = {"model.d_model": [8, 16], "model.n_layers": [1, 2], "budget.lr": [3e-3, 1e-2]}
    if quick:
        grid = {"model.d_model": [8]}
    return SweepSpec.from_dict(
        {
            "name": "bench",
            "seeds": 2 if quick else 4,
            "metrics": ["final", "glitches"],
            "task": {"name": "flipflop", "p_ignore": 0.8},
            "model": {"n_heads": 2},
            "budget": {"steps": 10 if quick else 100, "batch_size": 16, "seq_len": 16, "lr": 3e-3},
            "grid": grid,
            "metric_args": {"glitches": {"n_sparse": 32, "n_dense": 32}},
            "max_stack": 4,
        }
    )


def bench_sweep(quick: bool, tmp: Path) -> dict:
    spec = sweep_spec(quick)
    out: dict = {"models": spec.n_runs}
    local = RunStore(tmp / "local.sqlite")
    out["local_s"], _ = timed(run_sweep, spec, local, progress=False)
    if quick:
        return out
    import ray

    out["ray_start_s"], _ = timed(ray.init, num_cpus=2, include_dashboard=False, log_to_driver=False)
    try:
        remote = RunStore(tmp / "ray.sqlite")
        out["ray_s"], _ = timed(run_sweep, spec, remote, executor="ray", progress=False)
    finally:
        ray.shutdown()
    rows = lambda s: {(r.config_hash, r.seed): r.metrics for r in s.query()}  # noqa: E731
    out["identical_metrics"] = rows(local) == rows(remote)
    out["local_over_ray"] = out["local_s"] / out["ray_s"]
    return out


def bench_store(n: int, tmp: Path) -> dict:
    configs = [
        {"task": {"name": "flipflop", "p_ignore": 0.8}, "model": {"d_model": 32, "n_layers": i % 10}, "lr": i}
        for i in range(100)
    ]
    runs = [
        Run(
            "sweep",
            "store-bench",
            configs[i % 100],
            i // 100,
            "v1",
            metrics={"acc": 0.5, "ood_error": i * 1e-7},
            seconds=1.0,
            finished=1.0,
        )
        for i in range(n)
    ]
    out: dict = {"rows": n}
    store = RunStore(tmp / "store.sqlite")
    seconds, written = timed(store.finish_many, runs)
    assert written == n
    out["write_rows_per_s"] = n / seconds
    # the peer: one Run._row() per run (canonical JSON and hashes of the config recomputed per row)
    peer = RunStore(tmp / "peer.sqlite")

    def per_row_write() -> list[tuple]:
        rows = [r._row() for r in runs]
        with peer._transaction():
            peer._con.executemany(f"INSERT INTO runs VALUES ({','.join('?' * len(_COLUMNS))})", rows)
        return rows

    seconds, rows = timed(per_row_write)
    out["write_rows_per_s_per_row_path"] = n / seconds
    out["write_speedup"] = out["write_rows_per_s"] / out["write_rows_per_s_per_row_path"]
    keys = [r[0] for r in rows]
    seconds, done = timed(store.done_keys, keys)
    assert len(done) == n
    out["done_keys_per_s"] = n / seconds
    seconds, got = timed(store.query, kind="sweep", name="store-bench")
    assert len(got) == n
    out["query_rows_per_s"] = n / seconds
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        store = bench_store(2_000 if args.quick else 100_000, tmp)
        print(
            f"store, {store['rows']} runs: write {store['write_rows_per_s']:.0f} rows/s "
            f"(per-row path {store['write_rows_per_s_per_row_path']:.0f} rows/s, {store['write_speedup']:.1f}x), "
            f"done_keys {store['done_keys_per_s']:.0f} keys/s, query {store['query_rows_per_s']:.0f} rows/s"
        )
        sweep = bench_sweep(args.quick, tmp)
        if args.quick:
            print(
                f"sweep of {sweep['models']} models: local {sweep['local_s']:.1f} s (ray skipped in --quick)"
            )
        else:
            print(
                f"sweep of {sweep['models']} models: local {sweep['local_s']:.1f} s, ray (2 workers) "
                f"{sweep['ray_s']:.1f} s (+ cluster start {sweep['ray_start_s']:.1f} s), local/ray "
                f"{sweep['local_over_ray']:.2f}x, identical metrics: {sweep['identical_metrics']}"
            )
    if args.json:
        args.json.write_text(json.dumps({"store": store, "sweep": sweep}, indent=1))


if __name__ == "__main__":
    main()
