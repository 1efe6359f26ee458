"""The ``theorylab`` command line.

theorylab claims [--family F] [--status S] [--provenance P] [--format text|markdown]
theorylab claims show ID
theorylab report CLAIMS_JSON [--out report.md|report.html]
theorylab counterexample [ID] [--out FILE.npz]
theorylab verify FILE.npz
theorylab search [ID] [--out FILE.npz] [--seed N] [--max-examples N] [--seconds S]
"""

from __future__ import annotations

import argparse
import sys
import textwrap
from pathlib import Path

from theorylab import claims as registry
from theorylab.claims.registry import PROVENANCES, STATUSES


def _claims_table(args: argparse.Namespace) -> int:
    from theorylab.report import REGISTRY_HEADER, Section, registry_rows, to_markdown, to_text

    records = [
        c
        for c in registry.all()
        if (not args.family or c.family == args.family)
        and (not args.status or c.status == args.status)
        and (not args.provenance or c.provenance == args.provenance)
    ]
    if args.family and args.family not in registry.families():
        print(
            f"unknown family {args.family!r}; families: {', '.join(sorted(registry.families()))}",
            file=sys.stderr,
        )
        return 2
    rows = registry_rows(records)
    if args.format == "markdown":
        print(to_markdown("theorylab claims", [Section("Claims", REGISTRY_HEADER, rows)]), end="")
    else:
        for line in to_text(
            REGISTRY_HEADER,
            [[r[0], textwrap.shorten(r[1], 60), textwrap.shorten(r[2], 40), *r[3:]] for r in rows],
        ):
            print(line)
        counts = {s: sum(c.status == s for c in records) for s in STATUSES}
        print(f"{len(records)} claims: " + ", ".join(f"{n} {s}" for s, n in counts.items()))
    return 0


def _claims_show(claim_id: str, checks_dir: str) -> int:
    from theorylab.claims.checks import scan_checks

    try:
        c = registry.get(claim_id)
    except KeyError as exc:
        print(exc.args[0], file=sys.stderr)
        return 2
    wrap = lambda s: textwrap.fill(" ".join(s.split()), 100, initial_indent="  ", subsequent_indent="  ")
    print(f"{c.id}: {c.title}")
    print(f"  family: {c.family}   status: {c.status}   tiers: {', '.join(c.tiers) or '-'}")
    print(
        f"  source: {c.source.document} ({c.source.document_title}), {c.source.numbering}, §{c.source.section}"
    )
    print("statement:\n" + wrap(c.statement))
    if c.uses:
        print(f"uses: {', '.join(c.uses)}")
    if c.erratum:
        print("erratum:\n" + wrap("printed: " + c.erratum.printed))
        if c.erratum.corrected:
            print(wrap("corrected: " + c.erratum.corrected))
        print(wrap("counterexample: " + c.erratum.counterexample))
    if c.counterexample:
        print(f"counterexample generator: theorylab counterexample {c.counterexample} --out {c.id}.npz")
    if c.notes:
        print("notes:\n" + wrap(c.notes))
    refs = [r for r in scan_checks(checks_dir) if r.claim == c.id]
    print(f"checks ({len(refs)}):" if refs else f"checks: none found in {checks_dir}/")
    for r in refs:
        print(f"  [{r.tier}{', control' if r.control else ''}] {r.file}::{r.name} (line {r.line})")
    return 0


def _report(args: argparse.Namespace) -> int:
    from theorylab.report import render_report

    text = render_report(args.claims_json, args.out, args.format)
    if args.out:
        print(f"wrote {args.out}")
    else:
        print(text, end="")
    return 0


def _counterexample(args: argparse.Namespace) -> int:
    from theorylab import counterexamples

    gens = counterexamples.available()
    if not args.id:
        width = max((len(g) for g in gens), default=0)
        for gid, gen in gens.items():
            print(f"{gid.ljust(width)}  {gen.description}")
        if not gens:
            print("no counterexample generators registered")
        return 0
    if args.id not in gens:
        print(f"no counterexample generator {args.id!r}; available: {', '.join(gens)}", file=sys.stderr)
        return 2
    out = args.out or f"{args.id}.npz"
    path = counterexamples.save(args.id, out)
    import numpy as np

    with np.load(path) as data:
        shapes = ", ".join(f"{k}{list(data[k].shape)}" for k in data.files if not k.startswith("_"))
    print(f"wrote {path}: {shapes}")
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="theorylab", description="Claims of ML-theory documents, as checks."
    )
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("claims", help="the claim table; 'claims show ID' for one record with its checks")
    p.add_argument("action", nargs="*", metavar="show ID", help="show one claim")
    p.add_argument("--family", help="only this family")
    p.add_argument("--status", choices=STATUSES, help="only this status")
    p.add_argument("--provenance", choices=PROVENANCES, help="only this provenance")
    p.add_argument("--format", choices=("text", "markdown"), default="text")
    p.add_argument("--checks-dir", default="checks", help="where to look for checks (default: ./checks)")

    p = sub.add_parser("report", help="render a report from a --claims-json file")
    p.add_argument("claims_json", type=Path)
    p.add_argument("--out", help="output file (.md or .html); default: print Markdown")
    p.add_argument("--format", choices=("markdown", "html"), default=None)

    p = sub.add_parser("counterexample", help="write a counterexample to .npz; no ID lists the generators")
    p.add_argument("id", nargs="?")
    p.add_argument("--out", help="output .npz file (default: ID.npz)")

    from theorylab.instruments.cli import add_subcommands

    add_subcommands(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.command == "claims":
        if not args.action:
            return _claims_table(args)
        if len(args.action) == 2 and args.action[0] == "show":
            return _claims_show(args.action[1], args.checks_dir)
        print("usage: theorylab claims [show ID]", file=sys.stderr)
        return 2
    if args.command == "report":
        return _report(args)
    if hasattr(args, "run"):  # verify, search (theorylab.instruments.cli)
        return args.run(args)
    return _counterexample(args)


if __name__ == "__main__":
    sys.exit(main())
