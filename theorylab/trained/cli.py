"""The ``theorylab trained`` and ``theorylab runs`` subcommands (registered by :mod:`theorylab.cli`).

theorylab trained [--scale full|small] [--device cpu|cuda] [--budget SECONDS] [--resume] [--store PATH]
                  [--only NAME ...] [--dry-run [--code before|fused|after|both|all] [--model-only]] [--rehearse]
theorylab runs [--store PATH] [--kind K] [--name N] [--export FILE.json|FILE.csv]
"""

from __future__ import annotations

import argparse

from theorylab.trained.runner import DEFAULT_STORE


def _error(msg: str):
    from theorylab.cli import CLIError

    return CLIError(msg)


def _trained(args: argparse.Namespace) -> int:
    from theorylab.trained import runner
    from theorylab.trained.calibration import load

    if args.budget is not None and args.budget <= 0:
        raise _error(f"--budget must be > 0 seconds, got {args.budget}")
    try:
        if args.dry_run:
            device = args.device_name or ("cuda" if args.device == "cuda" else "h100-sxm")
            codes = {"both": ("before", "after"), "all": ("before", "fused", "after")}.get(
                args.code, (args.code,)
            )
            host = runner.host_samples(args.only, codes)  # measured once, shared by the plans
            measured = None if args.model_only else load(device, args.store)
            for code in codes:
                rows = runner.plan(device, args.budget, code, only=args.only, host=host, measured=measured)
                print(runner.format_plan(rows, device, code, measured))
            return 0
        if args.rehearse:
            rows = runner.rehearse(args.only, args.device_name or "cuda")
            bad = [r for r in rows if not r["ok"]]
            print(f"rehearsal: {len(rows) - len(bad)} of {len(rows)} full-size configurations ran")
            return 1 if bad else 0
        return runner.run(args.scale, args.device, args.budget, args.store, args.resume, args.only)
    except (ValueError, FileNotFoundError) as exc:
        raise _error(str(exc)) from exc


def _runs(args: argparse.Namespace) -> int:
    from theorylab.runs import RunStore

    with RunStore(args.store) as store:
        filters = {"kind": args.kind, "name": args.name, "status": None}
        if args.export:
            n = store.export(args.export, **filters)
            print(f"{n} runs written to {args.export}")
            return 0
        rows = store.query(**filters)
        print(f"{'kind':6s} {'name':28s} {'status':7s} {'verdict':8s} {'device':8s} {'seconds':>8s} {'step ms':>8s} "
              f"{'MFU':>5s}  code")  # fmt: skip
        for r in rows:
            step = f"{r.step_ms:8.2f}" if r.step_ms is not None else f"{'':8s}"
            mfu = f"{r.mfu:5.2f}" if r.mfu is not None else f"{'':5s}"
            secs = f"{r.seconds:8.1f}" if r.seconds is not None else f"{'':8s}"
            print(f"{r.kind:6s} {r.name:28s} {r.status:7s} {r.verdict or '':8s} {r.device or '':8s} {secs} {step} "
                  f"{mfu}  {r.code_version}")  # fmt: skip
        print(f"{len(rows)} runs in {args.store}")
    return 0


def add_subcommands(sub) -> None:
    p = sub.add_parser(
        "trained", help="run the full-size trained checks in order of value within a time budget"
    )
    p.add_argument("--scale", choices=("small", "full"), default="full")
    p.add_argument("--device", choices=("cpu", "cuda"), default="cuda")
    p.add_argument("--device-name", help="plan for this device: h100-sxm, h100-pcie, h200, a100 (dry run)")
    p.add_argument("--budget", type=float, default=None, metavar="SECONDS", help="run what fits in this time")
    p.add_argument(
        "--resume", action="store_true", help="skip checks the store holds for this code and config"
    )
    p.add_argument("--store", default=DEFAULT_STORE, help=f"run store (SQLite path; default {DEFAULT_STORE})")
    p.add_argument("--only", nargs="+", metavar="NAME", help="only these catalog checks (e.g. flipflop.R1)")
    p.add_argument("--dry-run", action="store_true", help="print the plan with estimated seconds per check")
    p.add_argument("--code", choices=("before", "fused", "after", "both", "all"), default="after",
                   help="dry run: the harness before the CUDA fast paths, with them (fused), with them and CUDA "
                        "graphs (after); both: before and after; all: the three")  # fmt: skip
    p.add_argument("--model-only", action="store_true",
                   help="dry run: the cost model alone, without the measurements of the device (run store and the "
                        "packaged measurements of earlier GPU windows)")  # fmt: skip
    p.add_argument("--rehearse", action="store_true",
                   help="every full-size configuration for 2 steps on the CPU, with a memory estimate")  # fmt: skip
    p.set_defaults(run=_trained)

    p = sub.add_parser("runs", help="list or export the run store")
    p.add_argument("--store", default=DEFAULT_STORE)
    p.add_argument("--kind", help="check or sweep")
    p.add_argument("--name")
    p.add_argument("--export", metavar="FILE", help="write .json or .csv instead of listing")
    p.set_defaults(run=_runs)
