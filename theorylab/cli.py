"""The ``theorylab`` command line (also ``python -m theorylab``).

theorylab claims [--family F] [--status S] [--provenance P] [--format text|markdown|json|csv]
theorylab claims show ID [--checks-dir DIR ...] [--artifacts-dir DIR]
theorylab check [PYTEST ARGS ...]          e.g. theorylab check --tier exact
theorylab report CLAIMS_JSON [--out report.md|report.html]
theorylab counterexample [ID] [--out FILE.npz] [--param NAME=VALUE ...]
theorylab verify FILE.npz
theorylab search [ID] [--out FILE.npz] [--seed N] [--max-examples N] [--seconds S]
theorylab sweep run|status|plot SPEC.toml [--store FILE] [--executor local|ray --address ADDR]
theorylab trained [--scale full] [--device cuda] [--budget S] [--resume] [--dry-run] [--rehearse]
theorylab runs [--store PATH] [--export FILE]

Errors are one line on stderr (``theorylab: error: ...``) with exit status 2 for bad input (unknown claim, missing
file, bad option) and 1 for a failed run.
"""

from __future__ import annotations

import argparse
import sys
import textwrap
from pathlib import Path

from theorylab import claims as registry
from theorylab._extras import MissingExtraError, require
from theorylab.claims.registry import PROVENANCES, STATUSES, did_you_mean


class CLIError(Exception):
    """A user error: printed as one line, exit status 2."""


def _did_you_mean(word: str, choices) -> str:
    return did_you_mean(word, choices)


def _claims_table(args: argparse.Namespace) -> int:
    from theorylab.report import REGISTRY_HEADER, Section, document_label, registry_rows, to_markdown

    if args.family and args.family not in registry.families():
        raise CLIError(
            f"unknown family {args.family!r}{_did_you_mean(args.family, registry.families())}; "
            f"families: {', '.join(sorted(registry.families()))}"
        )
    records = [
        c
        for c in registry.all()
        if (not args.family or c.family == args.family)
        and (not args.status or c.status == args.status)
        and (not args.provenance or c.provenance == args.provenance)
    ]
    header = [REGISTRY_HEADER[0], "document", *REGISTRY_HEADER[1:]]
    rows = [[r[0], document_label(c), *r[1:]] for c, r in zip(records, registry_rows(records), strict=True)]
    checked = _check_counts(args.checks_dir)
    if args.format in ("json", "csv"):
        return _claims_machine_readable(args.format, records, checked)
    if args.format == "markdown":
        print(to_markdown("theorylab claims", [Section("Claims", header, rows)]), end="")
    else:
        for line in _fit_table(header, rows):
            print(line)
    counts = {s: sum(c.status == s for c in records) for s in STATUSES}
    print(f"{len(records)} claims: " + ", ".join(f"{n} {s}" for s, n in counts.items()))
    unchecked = [c.id for c in records if not checked.get(c.id)]
    if unchecked:
        text = f"{len(unchecked)} with no check found: {', '.join(unchecked)}"
        print(textwrap.fill(text, max(40, _table_width()), subsequent_indent="  "))
    else:
        print("every listed claim has a check")
    return 0


def _check_counts(checks_dirs: list[str] | None) -> dict[str, int]:
    """Number of checks per claim id in the searched check folders (a static scan, nothing is imported)."""
    from theorylab.claims.checks import scan_checks

    counts: dict[str, int] = {}
    for folder in search_dirs(checks_dirs):
        for ref in scan_checks(folder):
            counts[ref.claim] = counts.get(ref.claim, 0) + 1
    return counts


def _table_width() -> int:
    """``COLUMNS`` if set, else the terminal's width, else (output to a file or a pipe) 160 columns."""
    import os
    import shutil

    if os.environ.get("COLUMNS", "").isdigit() or sys.stdout.isatty():
        return shutil.get_terminal_size((120, 24)).columns
    return 160


_GIVE_WAY = (
    ("tightness", 16),
    ("document", 14),
    ("source", 16),
    ("title", 16),
)  # (column, narrowest), in the order they shrink
_TIER_LETTERS = {"exact": "E", "property": "P", "trained": "T"}


def _drop(header: list[str], rows: list[list[str]], name: str):
    i = header.index(name)
    return header[:i] + header[i + 1 :], [r[:i] + r[i + 1 :] for r in rows]


def _letters(header: list[str], rows: list[list[str]], name: str):
    i = header.index(name)
    return header, [
        [*r[:i], "".join(_TIER_LETTERS.get(t, t) for t in r[i].split(", ")), *r[i + 1 :]] for r in rows
    ]


def _fit_table(header: list[str], rows: list[list[str]], width: int | None = None) -> list[str]:
    """The text table fitted to ``width`` (default: the terminal's): the tightness, document, source and title
    columns are shortened (down to 16, 14, 16 and 16 characters); if that is not enough, the tightness and
    provenance columns are left out and the tiers written as letters, with a note saying so."""

    from theorylab.report import to_text

    width = width or _table_width()
    steps = [
        ("tightness", _drop, "tightness"),
        ("provenance", _drop, "provenance"),
        ("tiers", _letters, "tier names (E exact, P property, T trained)"),
    ]
    notes = []

    def narrowest(h: list[str], rs: list[list[str]]) -> int:
        floors = dict(_GIVE_WAY)
        cols = [max(len(str(r[i])) for r in [h, *rs]) for i in range(len(h))]
        return sum(min(c, floors.get(n, c)) for n, c in zip(h, cols, strict=True)) + 2 * (len(h) - 1)

    for name, step, note in steps:
        if narrowest(header, rows) <= width or name not in header:
            continue
        header, rows = step(header, rows, name)
        notes.append(note)
    floors = {header.index(h): f for h, f in _GIVE_WAY if h in header}
    limits = {i: min(60, max(len(str(r[i])) for r in [header, *rows])) for i in floors}
    cut = lambda text, n: text if len(text) <= n else text[: n - 3].rstrip() + "..."
    while True:
        shortened = [
            [cut(str(c), limits[i]) if i in limits else str(c) for i, c in enumerate(r)] for r in rows
        ]
        lines = to_text(header, shortened)
        over = max(len(line) for line in lines) - width
        slack = {i: limits[i] - floors[i] for i in limits if limits[i] > floors[i]}
        if over <= 0 or not slack:
            break
        i = max(slack, key=slack.get)
        limits[i] -= min(over, slack[i], max(1, slack[i] // 2))
    if notes:
        note = (
            f"(to fit {width} columns, not shown: {', '.join(notes)}; --format csv or json has every field)"
        )
        lines += textwrap.wrap(note, max(40, width))
    return lines


def _claims_machine_readable(fmt: str, records, checked: dict[str, int]) -> int:
    """``--format json`` (one object per claim, full text) or ``csv`` (one row per claim) on stdout."""
    import csv
    import json

    def record(c) -> dict:
        return {
            "id": c.id,
            "family": c.family,
            "title": c.title,
            "document": c.source.document,
            "document_title": c.source.document_title,
            "numbering": c.source.numbering,
            "section": c.source.section,
            "lines": list(c.source.lines),
            "tiers": list(c.tiers),
            "status": c.status,
            "provenance": c.provenance,
            "tightness": c.tightness,
            "checks": checked.get(c.id, 0),
            "statement": " ".join(c.statement.split()),
            "erratum": bool(c.erratum),
            "counterexample": c.counterexample,
        }

    items = [record(c) for c in records]
    if fmt == "json":
        print(json.dumps(items, indent=1, ensure_ascii=False))
        return 0
    writer = csv.DictWriter(sys.stdout, fieldnames=list(items[0]) if items else ["id"], lineterminator="\n")
    writer.writeheader()
    for item in items:
        writer.writerow({**item, "tiers": " ".join(item["tiers"])})
    return 0


def search_dirs(extra: list[str] | None = None) -> list[Path]:
    """Folders searched for checks: ``--checks-dir`` folders, ``./checks``, the folders the registry's files
    declare (``checks = ...``) and theorylab's installed claim checks."""
    from theorylab.claims.checks import check_dirs

    folders = [Path(d) for d in extra or []] + [Path("checks")] + check_dirs()
    seen: dict[Path, None] = {}
    for folder in folders:
        if folder.is_dir():
            seen.setdefault(folder.resolve(), None)
    return list(seen)


def _claims_show(claim_id: str, checks_dirs: list[str] | None, artifacts_dir: str | None = None) -> int:
    from theorylab.claims.checks import scan_checks

    for folder in checks_dirs or []:
        if not Path(folder).is_dir():
            raise CLIError(f"--checks-dir {folder!r} is not a folder")
    try:
        c = registry.get(claim_id)
    except KeyError as exc:
        raise CLIError(exc.args[0]) from None
    wrap = lambda s: textwrap.fill(" ".join(s.split()), 100, initial_indent="  ", subsequent_indent="  ")
    print(f"{c.id}: {c.title}")
    print(f"  family: {c.family}   status: {c.status}   tiers: {', '.join(c.tiers) or '-'}")
    where = f", l. {', '.join(map(str, c.source.lines))}" if c.source.lines else ""
    print(
        f"  source: {c.source.document} ({c.source.document_title}), {c.source.numbering}, "
        f"§{c.source.section}{where}"
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
    folders = search_dirs(checks_dirs)
    refs = [r for folder in folders for r in scan_checks(folder) if r.claim == c.id]
    where = ", ".join(str(f) for f in folders) or "no checks folder found"
    print(f"checks ({len(refs)}):" if refs else f"checks: none found (searched: {where})")
    for r in refs:
        print(f"  [{r.tier}{', control' if r.control else ''}] {r.file}::{r.name} (line {r.line})")
    _print_figures_and_artifacts(c.id, refs, artifacts_dir)
    return 0


def _print_figures_and_artifacts(claim_id: str, refs, artifacts_dir: str | None) -> None:
    from theorylab.claims.figures import claim_artifacts, claim_figures

    figures = list(dict.fromkeys(claim_figures(refs)))
    print(f"figures ({len(figures)}):" if figures else "figures: none drawn by its checks")
    for f in figures:
        print(f"  {f.name}.png  drawn by {f.file}::{f.check} (line {f.line})")
    folder = Path(artifacts_dir or "artifacts")
    files = claim_artifacts(claim_id, folder)
    where = folder / claim_id
    print(f"artifacts in {where} ({len(files)}):" if files else f"artifacts: none in {where}")
    for path in files:
        print(f"  {path}")


def _report(args: argparse.Namespace) -> int:
    from theorylab.report import render_report

    if not args.claims_json.is_file():
        raise CLIError(f"no such claims file: {str(args.claims_json)!r} (write one with --claims-json)")
    if args.out:
        out = Path(args.out)
        if not out.parent.is_dir():
            raise CLIError(f"output folder {str(out.parent)!r} does not exist")
        if args.format is None and out.suffix.lower() not in (".md", ".markdown", ".html", ".htm"):
            raise CLIError(
                f"unknown output suffix {out.suffix or '(none)'!r}: use .md or .html (or --format)"
            )
    try:
        text = render_report(args.claims_json, args.out, args.format)
    except ValueError as exc:  # malformed JSON / payload
        raise CLIError(f"{args.claims_json}: {exc}") from None
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
            params = " ".join(f"{k}={v}" for k, v in gen.parameters.items())
            print(f"{gid.ljust(width)}  {gen.description}" + (f"  [--param {params}]" if params else ""))
        if not gens:
            print("no counterexample generators registered")
        return 0
    if args.id not in gens:
        raise CLIError(
            f"no counterexample generator {args.id!r}{_did_you_mean(args.id, gens)}; "
            "`theorylab counterexample` lists them"
        )
    out = Path(args.out or f"{args.id}.npz")
    if not out.parent.is_dir():
        raise CLIError(f"output folder {str(out.parent)!r} does not exist")
    try:
        path = counterexamples.save(args.id, out, **_generator_params(args.param))
    except (TypeError, ValueError) as exc:
        raise CLIError(f"counterexample {args.id}: {exc}") from None
    import numpy as np

    with np.load(path) as data:
        shapes = ", ".join(f"{k}{list(data[k].shape)}" for k in data.files if not k.startswith("_"))
    print(f"wrote {path}: {shapes}")
    return 0


def _generator_params(pairs: list[str] | None) -> dict[str, object]:
    """``["t=4", "name=x"]`` -> ``{"t": 4, "name": "x"}`` (values read as Python literals, else as strings)."""
    import ast

    params: dict[str, object] = {}
    for pair in pairs or []:
        name, sep, text = pair.partition("=")
        if not sep or not name.strip().isidentifier():
            raise CLIError(f"--param takes NAME=VALUE, not {pair!r}")
        try:
            params[name.strip()] = ast.literal_eval(text.strip())
        except (ValueError, SyntaxError):
            params[name.strip()] = text.strip()
    return params


CHECK_USAGE = """usage: theorylab check [OPTIONS] [PYTEST OPTIONS]

Run theorylab's claim checks (the installed checks; `checks/` in a clone) with pytest and print the claim table.

options:
  --tier TIERS          comma-separated tiers: exact,property,trained (default: all)
  --claim PATTERNS      comma-separated claim id patterns or families, e.g. 'hmm.*' (default: all)
  --scale small|full    size of the trained tier (default: small)
  --device cpu|cuda     device of the trained tier (default: cpu)
  --claims-json PATH    write per-claim results (and measured numbers) as JSON
  --artifacts-dir DIR   where checks save figures (default: a temporary folder)
  --theorylab-seed N    base seed of the checks (default: $THEORYLAB_SEED or 20240601); a check's seed derives
                        from it, its claim id, function name and parameters, the same from every command
  -q                    quieter: no measured-numbers section, no progress of trained checks
  -n N                  N processes (needs pytest-xdist)
  -h, --help            show this message and exit

Every other option goes to pytest (see `pytest --help`). Example: theorylab check --tier exact --claim 'hmm.*'
"""


def _check(pytest_args: list[str]) -> int:
    """Run theorylab's claim checks (the installed ``theorylab_checks``, i.e. ``checks/`` in a clone) with pytest;
    extra arguments go to pytest (``--tier exact``, ``--claim 'hmm.*'``, ``-n 2``, ...). Hypothesis keeps its
    files in a temporary folder, not in the working directory."""
    if any(a in ("-h", "--help") for a in pytest_args):
        print(CHECK_USAGE, end="")
        return 0
    from theorylab.claims.checks import installed_checks_dir

    folder = installed_checks_dir()
    if folder is None or not folder.is_dir():
        raise CLIError("theorylab's claim checks are not installed (package theorylab_checks)")
    import os
    import tempfile

    import pytest

    ini = folder / "theorylab_check.ini"
    args = ["-c", str(ini), "--rootdir", str(folder)] if ini.is_file() else []
    if os.environ.get("HYPOTHESIS_STORAGE_DIRECTORY"):
        return int(pytest.main([str(folder), *args, *pytest_args]))
    with tempfile.TemporaryDirectory(prefix="theorylab-hypothesis-") as storage:
        from hypothesis.configuration import set_hypothesis_home_dir

        os.environ["HYPOTHESIS_STORAGE_DIRECTORY"] = storage  # xdist workers read it
        set_hypothesis_home_dir(storage)
        try:
            return int(pytest.main([str(folder), *args, *pytest_args]))
        finally:
            set_hypothesis_home_dir(None)
            del os.environ["HYPOTHESIS_STORAGE_DIRECTORY"]


def _version() -> str:
    from importlib import metadata

    try:
        return metadata.version("theorylab")
    except metadata.PackageNotFoundError:  # pragma: no cover - running from a source tree
        return "unknown"


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="theorylab", description="Claims of ML-theory documents, as checks."
    )
    parser.add_argument("--version", action="version", version=f"theorylab {_version()}")
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("claims", help="the claim table; 'claims show ID' for one record with its checks")
    p.add_argument("action", nargs="*", metavar="show ID", help="show one claim")
    p.add_argument("--family", help="only this family")
    p.add_argument("--status", choices=STATUSES, help="only this status")
    p.add_argument("--provenance", choices=PROVENANCES, help="only this provenance")
    p.add_argument("--format", choices=("text", "markdown", "json", "csv"), default="text")
    p.add_argument(
        "--checks-dir",
        action="append",
        help="a folder of checks to search (repeatable; ./checks, the registry's declared folders and the "
        "installed theorylab checks are always searched)",
    )
    p.add_argument(
        "--artifacts-dir",
        help="for 'claims show': a run's artifacts folder (default: ./artifacts, as make writes)",
    )

    sub.add_parser(
        "check",
        help="run theorylab's claim checks with pytest (works from an installed wheel); "
        "extra arguments go to pytest, e.g. --tier exact",
        add_help=False,
    )

    p = sub.add_parser("report", help="render a report from a --claims-json file")
    p.add_argument("claims_json", type=Path)
    p.add_argument("--out", help="output file (.md or .html); default: print Markdown")
    p.add_argument("--format", choices=("markdown", "html"), default=None)

    p = sub.add_parser("counterexample", help="write a counterexample to .npz; no ID lists the generators")
    p.add_argument("id", nargs="?")
    p.add_argument("--out", help="output .npz file (default: ID.npz)")
    p.add_argument(
        "--param",
        action="append",
        metavar="NAME=VALUE",
        help="a generator parameter (repeatable; the listing shows each generator's parameters)",
    )

    from theorylab.instruments.cli import add_subcommands

    add_subcommands(sub)
    from theorylab.sweeps.cli import add_subcommands as add_sweep_subcommands

    add_sweep_subcommands(sub)

    from theorylab.trained.cli import add_subcommands as add_trained

    add_trained(sub)  # trained, runs
    return parser


def _run(argv: list[str]) -> int:
    if argv[:1] == ["check"]:
        require("pytest", extra="checks")
        return _check(argv[1:])
    args = build_parser().parse_args(argv)
    if args.command == "claims":
        if not args.action:
            return _claims_table(args)
        if len(args.action) == 2 and args.action[0] == "show":
            return _claims_show(args.action[1], args.checks_dir, args.artifacts_dir)
        raise CLIError(f"unknown claims action {' '.join(args.action)!r}; usage: theorylab claims [show ID]")
    if args.command == "report":
        return _report(args)
    if hasattr(args, "run"):  # verify, search (theorylab.instruments.cli)
        return args.run(args)
    return _counterexample(args)


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    try:
        return _run(argv)
    except (CLIError, registry.ClaimRegistryError, MissingExtraError) as exc:
        print(f"theorylab: error: {exc}", file=sys.stderr)
        return 2
    except BrokenPipeError:  # the reader went away (`theorylab claims | head`): nothing left to say
        import os

        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except OSError as exc:
        print(f"theorylab: error: {exc.strerror or exc}: {exc.filename or ''}".rstrip(": "), file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
