"""``theorylab sweep run|status|plot SPEC.toml``: the sweep subcommands of the CLI.

run: trains the runs the store does not hold as done (exit 0; 1 if some stack failed; 2 for a bad spec or option).
status: runs done / failed / pending per configuration, and the code versions the store holds for the sweep.
plot: the violins of the OOD error per configuration and the dense-vs-sparse scatter of every model (PNG files).
"""

from __future__ import annotations

import argparse
import sys

DEFAULT_STORE = "artifacts/runs.sqlite"


def _load(args):
    from theorylab.runs import RunStore
    from theorylab.sweeps.spec import SweepSpec

    return SweepSpec.from_toml(args.spec), RunStore(args.store)


def _run(args: argparse.Namespace) -> int:
    from theorylab.sweeps.run import run_sweep

    spec, store = _load(args)
    opts = {"max_retries": args.max_retries} if args.executor == "ray" else {}
    report = run_sweep(spec, store, args.executor, args.address, progress=args.progress, **opts)
    print(report)
    for err in report.errors:
        print(f"  failed: {err}")
    return 1 if report.failed else 0


def _status(args: argparse.Namespace) -> int:
    from theorylab.sweeps.plots import config_label
    from theorylab.sweeps.run import SweepResults, sweep_status

    spec, store = _load(args)
    st = sweep_status(spec, store)
    labels = SweepResults(spec, (st.version,), [])
    print(
        f"sweep {spec.name}: {spec.n_runs} runs, {st.done} done, {st.pending} to run (code version {st.version})"
    )
    for c in st.configs:
        print(
            f"  {c.config_hash}  {config_label(labels, c.config):40s} done {c.done:4d}  failed {c.failed:4d}  "
            f"pending {c.pending:4d}"
        )
    others = {v: n for v, n in st.versions.items() if v != st.version}
    if others:
        print(
            "  the store also holds done runs of other code versions (read with --versions all, never mixed):"
        )
        for v, n in others.items():
            print(f"    {v}: {n} runs")
    return 0


def _plot(args: argparse.Namespace) -> int:
    from theorylab.sweeps.plots import plot_sweep
    from theorylab.sweeps.run import sweep_results

    spec, store = _load(args)
    results = sweep_results(spec, store, None if args.versions == "current" else args.versions)
    print(
        f"sweep {spec.name}: {len(results.runs)} done runs of code versions {', '.join(results.versions) or '-'}"
    )
    for path in plot_sweep(results, args.out, args.metric):
        print(f"wrote {path}")
    return 0


def _guarded(fn):
    def run(args: argparse.Namespace) -> int:
        from theorylab.sweeps.spec import SpecError

        try:
            return fn(args)
        except (SpecError, FileNotFoundError, ValueError, ImportError) as exc:
            print(f"theorylab sweep: error: {exc}", file=sys.stderr)
            return 2

    return run


def add_subcommands(sub) -> None:
    """Add ``sweep run|status|plot`` to the CLI's subparsers (each sets ``run``)."""
    p = sub.add_parser(
        "sweep", help="sweeps of trained models over configurations and seeds (run, status, plot)"
    )
    actions = p.add_subparsers(dest="sweep_action", required=True)
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("spec", help="the sweep's TOML spec")
    common.add_argument("--store", default=DEFAULT_STORE, help=f"the run store (default {DEFAULT_STORE})")

    r = actions.add_parser("run", parents=[common], help="train the runs the store does not hold yet")
    r.add_argument("--executor", choices=("local", "ray"), default="local")
    r.add_argument("--address", help="a running Ray cluster (auto, HOST:6379 or ray://HOST:10001)")
    r.add_argument("--max-retries", type=int, default=3, help="Ray retries of a stack whose worker died")
    r.add_argument(
        "--progress",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="progress line with ETA (default: on a terminal, off in CI)",
    )
    r.set_defaults(run=_guarded(_run))

    s = actions.add_parser("status", parents=[common], help="runs done / pending per configuration")
    s.set_defaults(run=_guarded(_status))

    q = actions.add_parser(
        "plot", parents=[common], help="violins of the OOD error and the dense-vs-sparse scatter"
    )
    q.add_argument("--out", default="artifacts/sweeps", help="folder of the PNG files")
    q.add_argument("--metric", default="ood_error", help="the metric of the violins (default ood_error)")
    q.add_argument(
        "--versions", default="current", help="code versions to aggregate: current (default) or all"
    )
    q.set_defaults(run=_guarded(_plot))
