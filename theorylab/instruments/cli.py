"""``theorylab verify FILE.npz`` and ``theorylab search ID``: the instruments' subcommands of the CLI.

verify: re-checks a counterexample file from its arrays alone; exit 0 iff the file is what it says it is (the printed
statement fails on a refutation; a witness has the stated property), 1 if not, 2 if the file cannot be checked
(unreadable, or no check registered for its claim).
search: runs the search registered for a claim; writes what it finds (exit 0) or says which budget stopped it (1).
"""

from __future__ import annotations

import argparse
import sys


def _verify(args: argparse.Namespace) -> int:
    from theorylab.instruments.files import verify_file

    try:
        result = verify_file(args.file)
    except (FileNotFoundError, ValueError, KeyError, ImportError) as exc:  # ImportError: a missing extra
        print(f"theorylab verify: {exc.args[0] if exc.args else exc}", file=sys.stderr)
        return 2
    print(result)
    return 0 if result.ok else 1


def _search(args: argparse.Namespace) -> int:
    from theorylab.instruments.budget import Budget
    from theorylab.instruments.files import refutation, refutations, write_counterexample

    if args.id is None:
        for cid, r in refutations().items():
            print(f"{cid}  {r.statement}")
        return 0
    try:
        r = refutation(args.id)
        budget = Budget(max_examples=args.max_examples, seconds=args.seconds)
    except (KeyError, ValueError) as exc:
        print(f"theorylab search: {exc.args[0]}", file=sys.stderr)
        return 2
    if r.search is None:
        print(f"theorylab search: no search registered for {r.claim}", file=sys.stderr)
        return 2
    found = r.search(seed=args.seed, budget=budget)
    if not found:
        print(found)
        return 1
    out = args.out or f"{r.claim}.search.npz"
    path = write_counterexample(
        out, r.to_arrays(found), claim=r.claim, statement=r.statement, parameters=found.parameters
    )
    print(found)
    print(
        f"shrunk from {found.first_parameters} in {found.shrink_seconds:.3g} s\nwrote {path} "
        f"(check it: theorylab verify {path})"
    )
    return 0


def add_subcommands(sub) -> None:
    """Add ``verify`` and ``search`` to the CLI's subparsers (each sets ``run``)."""
    p = sub.add_parser(
        "verify",
        help="re-check a counterexample .npz from the file alone (exit 0 iff it refutes the printed statement, or "
        "for a witness iff the instance has the stated property)",
    )
    p.add_argument("file")
    p.set_defaults(run=_verify)
    p = sub.add_parser(
        "search", help="run the counterexample search registered for a claim; no ID lists them"
    )
    p.add_argument("id", nargs="?")
    p.add_argument("--out", help="output .npz (default: ID.search.npz)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--max-examples", type=int, default=150)
    p.add_argument("--seconds", type=float, default=60.0)
    p.set_defaults(run=_search)
