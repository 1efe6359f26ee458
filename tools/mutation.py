"""Mutation testing, one claim family at a time: ``python tools/mutation.py FAMILY [--max-children N]``.

mutmut mutates the family's library modules (a sign, an operator, a constant, a dropped argument) and runs the
family's ``checks/`` file(s) on each mutant, exact and property tiers only (the trained tier is too slow to rerun
hundreds of times and is not what guards the library's arithmetic). A mutant that every check still passes is a
*survivor*: either a missing check or an equivalent mutant; triage them in ``docs/reliability.md``.

The run happens in a scratch copy (``.mutation/FAMILY/``) so that the working tree is never touched; the summary
(killed / survived / timeout / total and the kill rate) is printed and written to ``.mutation/FAMILY/summary.json``.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MUTMUT = str(Path(sys.executable).with_name("mutmut"))

#: family -> (library modules to mutate, glob patterns relative to the repository root; checks files)
FAMILIES: dict[str, tuple[list[str], list[str]]] = {
    "hmm": (["theorylab/hmm/*.py", "theorylab/tensors/*.py"], ["checks/test_hmm.py"]),
    "topic": (
        ["theorylab/languages/topic.py", "theorylab/attention/topic/*.py"],
        ["checks/test_topic.py"],
    ),
    "dyck": (
        ["theorylab/languages/dyck.py", "theorylab/attention/dyck/*.py"],
        ["checks/test_dyck.py"],
    ),
    "flipflop": (
        ["theorylab/languages/flipflop.py"],
        ["checks/test_flipflop.py", "checks/test_flipflop_glitches.py"],
    ),
    "automata": (
        ["theorylab/algebra/*.py", "theorylab/automata/*.py", "theorylab/automata/constructions/*.py"],
        [
            "checks/test_automata_algebra.py",
            "checks/test_automata_constructions.py",
            "checks/test_automata_experiments.py",
        ],
    ),
    "distill": (
        ["theorylab/boolean/*.py", "theorylab/attention/sparse_parity/*.py", "theorylab/nn/distill.py"],
        ["checks/test_distill.py"],
    ),
    "scb": (["theorylab/attention/scb/*.py"], ["checks/test_scb.py"]),
    "mple": (
        ["theorylab/estimation/pseudolikelihood.py", "theorylab/ising/*.py", "theorylab/markov/chain.py"],
        ["checks/test_mple.py"],
    ),
    "gibbs": (["theorylab/ising/*.py", "theorylab/markov/chain.py"], ["checks/test_gibbs.py"]),
    "verifier": (["theorylab/generation/*.py", "theorylab/languages/dyck.py"], ["checks/test_verifier.py"]),
    "vgb": (["theorylab/generation/*.py"], ["checks/test_vgb.py"]),
    "nce": (["theorylab/estimation/nce.py"], ["checks/test_nce.py"]),
    "flat": (["theorylab/landscape/*.py", "theorylab/hmm/mlm.py"], ["checks/test_flat.py"]),
    "anchor": (["theorylab/representations/*.py"], ["checks/test_anchor.py"]),
    "contrastive": (
        ["theorylab/estimation/contrastive.py", "theorylab/markov/diffusions.py"],
        ["checks/test_contrastive.py"],
    ),
}

#: modules that are plotting, I/O or generator glue rather than mathematics: not mutated
SKIP = ("*/counterexamples.py", "*_counterexamples.py", "*_plots.py", "*/__init__.py")


def _toml_list(items: list[str]) -> str:
    return "[" + ", ".join(json.dumps(i) for i in items) + "]"


def prepare(family: str, tier_args: list[str], work: Path) -> Path:
    """A scratch copy of the project in ``work`` whose pyproject.toml carries the family's mutmut configuration."""
    modules, checks = FAMILIES[family]
    if work.exists():
        shutil.rmtree(work)
    work.mkdir(parents=True)
    for name in ("theorylab", "checks"):
        shutil.copytree(ROOT / name, work / name, ignore=shutil.ignore_patterns("__pycache__"))
    config = f"""
[tool.mutmut]
source_paths = ["theorylab"]
only_mutate = {_toml_list(modules)}
do_not_mutate = {_toml_list(list(SKIP))}
also_copy = ["checks/"]
pytest_add_cli_args = {_toml_list(["-p", "no:cacheprovider", "-p", "no:xdist", *tier_args])}
pytest_add_cli_args_test_selection = {_toml_list(checks)}
"""
    (work / "pyproject.toml").write_text((ROOT / "pyproject.toml").read_text() + config)
    return work


def run_command(max_children: int, only: list[str]) -> list[str]:
    """The mutmut command line: every mutant, or only those matching the ``only`` name patterns."""
    return [MUTMUT, "run", "--max-children", str(max_children), *only]


def summarise(work: Path) -> dict:
    out = subprocess.run(
        [MUTMUT, "results", "--all", "true"],
        cwd=work,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    statuses = Counter(line.rsplit(": ", 1)[1].strip() for line in out.splitlines() if ": " in line)
    survivors = [line.split(":")[0].strip() for line in out.splitlines() if line.endswith(": survived")]
    # a mutant that hangs the checks is detected too (mutmut's convention); a mutant in code that no selected check
    # runs ("no tests") counts against the family in the strict rate
    detected, total = statuses.get("killed", 0) + statuses.get("timeout", 0), sum(statuses.values())
    covered = total - statuses.get("no tests", 0)
    summary = {"counts": dict(statuses), "total": total, "survivors": survivors}
    summary["kill_rate"] = detected / total if total else None
    summary["kill_rate_covered"] = detected / covered if covered else None
    (work / "summary.json").write_text(json.dumps(summary, indent=2))
    return summary


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("family", choices=sorted(FAMILIES))
    parser.add_argument("--max-children", type=int, default=2, help="parallel mutant runs (default 2)")
    parser.add_argument(
        "--tier-args",
        default="--tier exact,property",
        help="pytest arguments that select the tiers to run (default: '--tier exact,property')",
    )
    parser.add_argument(
        "--only",
        nargs="+",
        metavar="PATTERN",
        default=[],
        help="run only the mutants whose names match these mutmut patterns, e.g."
        " 'theorylab.languages.flipflop.x_window_predictor*' (the summary still lists every mutant's status)",
    )
    args = parser.parse_args(argv)
    work = prepare(args.family, args.tier_args.split(), ROOT / ".mutation" / args.family)
    run = subprocess.run(run_command(args.max_children, args.only), cwd=work)
    if run.returncode not in (0, 1):
        return run.returncode
    summary = summarise(work)
    rate = lambda r: "n/a" if r is None else f"{r:.1%}"
    print(
        f"{args.family}: {summary['counts']} of {summary['total']} mutants; kill rate {rate(summary['kill_rate'])}"
        f" of all, {rate(summary['kill_rate_covered'])} of those the selected checks run"
    )
    for name in summary["survivors"]:
        print(f"  survived: {name}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
