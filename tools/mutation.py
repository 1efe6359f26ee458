"""Mutation testing, one claim family at a time: ``python tools/mutation.py FAMILY [--max-children N]``.

mutmut mutates the family's library modules (a sign, an operator, a constant, a dropped argument) and runs the
family's ``checks/`` file(s) on each mutant, exact and property tiers only (the trained tier is too slow to rerun
hundreds of times and is not what guards the library's arithmetic). A mutant that every check still passes is a
*survivor*: either a missing check or an equivalent mutant; triage them in ``docs/reliability.md``.

The run happens in a scratch copy (``.mutation/FAMILY/``) so that the working tree is never touched; the summary
(killed / survived / timeout / total and the kill rate) is printed and written to ``.mutation/FAMILY/summary.json``.

``--sample N --seed S`` runs a uniform random sample of N of the family's mutants (drawn with ``random.Random(S)``
from the sorted list of every mutant's name, the seed printed): the kill rate is then an estimate, reported with its
95% Wilson interval. A mutant of code that no selected check runs stays in the sample as "no tests".

``--only PATTERN ...`` restricts the run to the mutants whose names match the patterns (fnmatch, as mutmut matches
them); with ``--sample`` the sample is drawn from those mutants only. Either way the summary lists exactly the
mutants run (as a sample), so ``--rerun`` re-tests its survivors after new checks.
"""

from __future__ import annotations

import argparse
import fnmatch
import json
import math
import random
import shutil
import subprocess
import sys
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MUTMUT = str(Path(sys.executable).with_name("mutmut"))

#: family -> (library modules to mutate, glob patterns relative to the repository root; checks files)
FAMILIES: dict[str, tuple[list[str], list[str]]] = {
    # hmm/mlm.py is the forward-backward of the flat family's masked-language-model claims: mutated there
    "hmm": (
        [
            f"theorylab/hmm/{m}.py"
            for m in ("compare", "constructions", "fitting", "gaussian", "interop", "models", "predictors")
            + ("recovery", "sampling", "symbolic", "training", "verify", "basins")
        ]
        + ["theorylab/tensors/*.py"],
        ["checks/test_hmm.py", "checks/test_hmm_definitions.py", "tests/test_hmm_basins.py"],
    ),
    "topic": (
        ["theorylab/languages/topic.py", "theorylab/attention/topic/*.py"],
        [
            "checks/test_topic.py",
            "checks/test_topic_landscape.py",
            "checks/test_topic_defs.py",
            "checks/test_experiments_cpu.py",
        ],
    ),
    # languages/dyck.py also holds Li's completion task, whose claims are the verifier family's
    "dyck": (
        ["theorylab/languages/dyck.py", "theorylab/attention/dyck/*.py"],
        [
            "checks/test_dyck.py",
            "checks/test_dyck_lemmas.py",
            "checks/test_dyck_lemmas2.py",
            "checks/test_verifier.py",
            "checks/test_dyck_defs.py",
            # the rewritten exact model, scan and sampler against plain computations; the completion task's states
            "tests/test_dyck.py",
            "tests/test_generation.py",
        ],
    ),
    "flipflop": (
        ["theorylab/languages/flipflop.py"],
        [
            "checks/test_flipflop.py",
            "checks/test_flipflop_glitches.py",
            "checks/test_flipflop_definitions.py",
            "checks/test_flipflop_mechanism.py",
        ],
    ),
    # nn/theory.py is the exact (numpy) transformer of the automata constructions: mutated there
    "automata": (
        [
            "theorylab/algebra/*.py",
            "theorylab/automata/*.py",
            "theorylab/automata/constructions/*.py",
            "theorylab/nn/theory.py",
        ],
        [
            "checks/test_automata_algebra.py",
            "checks/test_automata_constructions.py",
            "checks/test_automata_experiments.py",
            "checks/test_automata_definitions.py",
            # both enumeration paths of the transformation semigroup against the plain queue (and the switch)
            "tests/test_semigroup_paths.py",
            # values no claim check reads: an error message, a default, height labels, an edge case, bounds
            "tests/test_automata_pins.py",
            # the rewritten from_elements, causal softmax and distinct-row MLPs against the plain computations
            "tests/test_algebra.py::test_from_elements_keeps_the_greedy_generators_and_rejects_non_groups",
            "tests/test_automata.py::test_causal_softmax_blocks_equal_the_full_masked_softmax",
            "tests/test_automata.py::test_causal_softmax_keeps_the_smallest_nonzero_weights",
            "tests/test_constructions.py::test_mlp_on_distinct_rows_equals_every_row",
        ],
    ),
    # the PCFG modules serve the distill (Liu §4.2.3) and flat (paper 000) claims: checks/test_pcfg.py holds both
    "distill": (
        [
            "theorylab/boolean/*.py",
            "theorylab/attention/sparse_parity/*.py",
            "theorylab/nn/distill.py",
            "theorylab/nn/distill_separation.py",
            "theorylab/nn/distill_pcfg.py",
            "theorylab/languages/pcfg*.py",
        ],
        [
            "checks/test_distill.py",
            "checks/test_distill_lemmas.py",
            "checks/test_distill_separation.py",
            "checks/test_pcfg.py",
            "checks/test_hier_parity.py",
            "checks/test_distill_pcfg_trained.py",
        ],
    ),
    "scb": (["theorylab/attention/scb/*.py"], ["checks/test_scb.py", "checks/test_scb_mechanism.py"]),
    "mple": (
        ["theorylab/estimation/pseudolikelihood.py"],
        [
            "checks/test_mple.py",
            "checks/test_mple_finite.py",
            "checks/test_mple_defs.py",
            "checks/test_mple_bounds.py",
        ],
    ),
    # the Ising models, samplers and chains serve both Chapter-4 families: their mutants run against both families'
    # files (ising/finite_sample.py is Theorem 4.1.4's, checked in test_mple_finite.py)
    "gibbs": (
        ["theorylab/ising/*.py", "theorylab/markov/chain.py"],
        [
            "checks/test_gibbs.py",
            "checks/test_gibbs_defs.py",
            "checks/test_mple.py",
            "checks/test_mple_finite.py",
            "checks/test_mple_defs.py",
            "checks/test_mple_bounds.py",
        ],
    ),
    "verifier": (
        [
            f"theorylab/generation/{m}.py"
            for m in ("exact", "algorithms", "hardness", "oracles", "verifiers", "lm", "tasks")
        ],
        # the differential tests pin the authors' backtracking variant (exact laws computed once with Fractions)
        [
            "checks/test_verifier.py",
            "checks/test_verifier_defs.py",
            "checks/test_vgb.py",
            "tests/test_interop_conventions.py",
            # the oracles' validation memo (ids checked against the objects behind them)
            "tests/test_generation.py",
        ],
    ),
    # the oracles, verifiers and exact laws of theorylab/generation serve both Chapter-3 families
    "vgb": (["theorylab/generation/vgb.py"], ["checks/test_vgb.py", "checks/test_verifier.py"]),
    "nce": (
        [
            "theorylab/estimation/nce.py",
            "theorylab/estimation/nce_assumptions.py",
            "theorylab/estimation/nce_fig42.py",
            # the shared log-sum-exp (also the anchor and PCFG families'): its rows are the NCE losses'
            "theorylab/_logsumexp.py",
        ],
        [
            "checks/test_nce.py",
            "checks/test_nce_proofs.py",
            "checks/test_nce_defs.py",
            "checks/test_nce_fig42.py",
            # the shared log-sum-exp against scipy's, bit for bit; the runs off the Gaussian path
            "tests/test_logsumexp.py",
            "tests/test_nce_runs.py",
        ],
    ),
    "flat": (
        ["theorylab/landscape/*.py", "theorylab/hmm/mlm.py"],
        [
            "checks/test_flat.py",
            "checks/test_flat_structure.py",
            "checks/test_flat_shapes.py",
            "checks/test_flat_adversary.py",
        ],
    ),
    "anchor": (
        ["theorylab/representations/*.py"],
        [
            "checks/test_anchor.py",
            "checks/test_anchor_lemmas.py",
            "checks/test_anchor_assumptions.py",
            # Thm 3's labels, the open end of Gamma < 6 and the sign counts on exact hand instances
            "tests/test_anchor_thm3_pins.py",
        ],
    ),
    "contrastive": (
        [
            "theorylab/estimation/contrastive.py",
            "theorylab/markov/diffusions.py",
            "theorylab/estimation/generalization.py",
            "theorylab/markov/assumptions.py",
            "theorylab/estimation/contrastive_global.py",
        ],
        [
            "checks/test_contrastive.py",
            "checks/test_contrastive_lemma4.py",
            "checks/test_contrastive_assumptions.py",
            "checks/test_contrastive_thm3.py",
        ],
    ),
}

#: modules that are plotting, I/O or generator glue rather than mathematics: not mutated
SKIP = ("*/counterexamples.py", "*_counterexamples.py", "*_plots.py", "*/__init__.py")


#: a mutant whose checks run this many times longer than on the library (plus a constant) is stopped and counted as
#: detected ("timeout"); mutmut's default of 15 lets hanging mutants burn most of a run's time
TIMEOUT_MULTIPLIER = 4.0


def _toml_list(items: list[str]) -> str:
    return "[" + ", ".join(json.dumps(i) for i in items) + "]"


def prepare(family: str, tier_args: list[str], work: Path) -> Path:
    """A scratch copy of the project in ``work`` whose pyproject.toml carries the family's mutmut configuration.

    Mutants run in processes forked from a server that has only collected the checks ("forkserver"), not from the
    process that ran them all to measure coverage: a cache filled there (the library memoises holonomy decompositions
    and semigroups per transition table) would hide the mutated code and make false survivors."""
    modules, checks = FAMILIES[family]
    if work.exists():
        shutil.rmtree(work)
    work.mkdir(parents=True)
    # the checks' top-level folders (checks/, and tests/ where a scope names a library test) travel with the copy
    folders = sorted({"checks", *(Path(c).parts[0] for c in checks)})
    for name in ("theorylab", *folders):
        shutil.copytree(ROOT / name, work / name, ignore=shutil.ignore_patterns("__pycache__"))
    config = f"""
[tool.mutmut]
source_paths = ["theorylab"]
only_mutate = {_toml_list(modules)}
do_not_mutate = {_toml_list(list(SKIP))}
also_copy = {_toml_list([f"{f}/" for f in folders])}
timeout_multiplier = {TIMEOUT_MULTIPLIER}
process_isolation = "forkserver"
pytest_add_cli_args = {_toml_list(["-p", "no:cacheprovider", "-p", "no:xdist", *tier_args])}
pytest_add_cli_args_test_selection = {_toml_list(checks)}
"""
    (work / "pyproject.toml").write_text((ROOT / "pyproject.toml").read_text() + config)
    return work


def run_command(max_children: int, only: list[str]) -> list[str]:
    """The mutmut command line: every mutant, or only those matching the ``only`` name patterns."""
    return [MUTMUT, "run", "--max-children", str(max_children), *only]


#: a pattern that names no mutant: ``mutmut run`` then generates the mutants and measures which checks reach which
#: function, and stops before running any mutant
_NO_MUTANT = "theorylab.__no_such_mutant__"


def estimated_times(work: Path) -> dict[str, float | None]:
    """Every mutant of the prepared copy -> the summed time of the checks that reach its function, in seconds (None:
    no selected check runs it), read from mutmut's mutant and coverage records after a run that tests no mutant."""
    subprocess.run([MUTMUT, "run", _NO_MUTANT], cwd=work, capture_output=True, text=True)
    stats = json.loads((work / "mutants" / "mutmut-stats.json").read_text())
    tests, duration = stats["tests_by_mangled_function_name"], stats["duration_by_test"]
    if not tests:
        raise RuntimeError(f"mutmut attributed no check to any function in {work}")
    times: dict[str, float | None] = {}
    for meta in sorted((work / "mutants").rglob("*.py.meta")):
        for name in json.loads(meta.read_text())["exit_code_by_key"]:
            reached = tests.get(name.partition("__mutmut_")[0], [])
            times[name] = sum(duration.get(t, 0.0) for t in reached) if reached else None
    if not times:
        raise RuntimeError(f"mutmut generated no mutants in {work}")
    return times


def draw_sample(names: list[str], size: int, seed: int) -> list[str]:
    """A uniform sample of ``size`` mutant names (all of them if there are fewer), reproducible from ``seed``."""
    if size < 1:
        raise ValueError(f"sample size must be >= 1, got {size}")
    names = sorted(names)
    return sorted(random.Random(seed).sample(names, min(size, len(names))))


def matching(names: list[str], patterns: list[str]) -> list[str]:
    """The names matching any of the mutmut ``patterns`` (fnmatch), sorted."""
    return sorted(n for n in names if any(fnmatch.fnmatch(n, p) for p in patterns))


def wilson_interval(successes: int, trials: int, z: float = 1.96) -> tuple[float, float]:
    """The Wilson score interval of a binomial proportion (95% for z = 1.96)."""
    if trials == 0:
        return (0.0, 1.0)
    p = successes / trials
    centre = (p + z * z / (2 * trials)) / (1 + z * z / trials)
    half = z * math.sqrt(p * (1 - p) / trials + z * z / (4 * trials * trials)) / (1 + z * z / trials)
    return (max(0.0, centre - half), min(1.0, centre + half))


def statuses_of(work: Path) -> dict[str, str]:
    """mutmut's status of every mutant of the prepared copy ("killed", "survived", "no tests", "not checked", ...)."""
    out = subprocess.run(
        [MUTMUT, "results", "--all", "true"], cwd=work, capture_output=True, text=True, check=True
    ).stdout
    return {
        line.rsplit(": ", 1)[0].strip(): line.rsplit(": ", 1)[1].strip()
        for line in out.splitlines()
        if ": " in line
    }


DETECTED = ("killed", "timeout")


def summarise(
    work: Path,
    sample: list[str] | None = None,
    no_tests: set[str] = frozenset(),
    earlier: dict[str, str] | None = None,
) -> dict:
    """Counts, survivors and kill rates of the run (of the sample only, if one was drawn); with ``earlier`` statuses
    (a re-run), a mutant detected earlier keeps its status."""
    status = statuses_of(work)
    if sample is not None:
        earlier = earlier or {}
        status = {
            name: earlier[name]
            if earlier.get(name) in DETECTED
            else "no tests"
            if name in no_tests
            else status.get(name, "not checked")
            for name in sample
        }
    statuses = Counter(status.values())
    survivors = sorted(name for name, s in status.items() if s == "survived")
    # a mutant that hangs the checks is detected too (mutmut's convention); a mutant in code that no selected check
    # runs ("no tests") counts against the family in the strict rate
    detected, total = statuses.get("killed", 0) + statuses.get("timeout", 0), sum(statuses.values())
    covered = total - statuses.get("no tests", 0)
    summary = {"counts": dict(statuses), "total": total, "survivors": survivors}
    summary["kill_rate"] = detected / total if total else None
    summary["kill_rate_covered"] = detected / covered if covered else None
    if sample is not None:
        summary["sample"] = sample
        summary["statuses"] = status
        summary["kill_rate_interval"] = wilson_interval(detected, total)
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
    parser.add_argument("--sample", type=int, metavar="N", help="run a uniform random sample of N mutants")
    parser.add_argument("--seed", type=int, default=0, help="seed of the sample (default 0)")
    parser.add_argument(
        "--rerun",
        type=Path,
        metavar="SUMMARY",
        help="re-test the mutants of an earlier sample (its summary.json) that it did not detect; the detected ones"
        " keep their status (checks only grow), so the summary covers the same sample",
    )
    args = parser.parse_args(argv)
    # read before the scratch copy is remade (the earlier summary usually lies inside it)
    old = json.loads(args.rerun.read_text()) if args.rerun is not None else None
    work = prepare(args.family, args.tier_args.split(), ROOT / ".mutation" / args.family)
    sample, no_tests, earlier = None, set(), None
    if args.sample is not None or args.rerun is not None or args.only:
        times = estimated_times(work)
        if old is not None:
            sample, earlier = old["sample"], old["statuses"]
            gone = [name for name in sample if name not in times and earlier[name] not in DETECTED]
            if gone:
                raise SystemExit(
                    f"mutants of the earlier sample no longer generated (library changed): {gone}"
                )
            print(f"{args.family}: re-run of the {len(sample)}-mutant sample of {args.rerun}")
        else:
            names = matching(list(times), args.only) if args.only else list(times)
            if not names:
                raise SystemExit(f"no mutant of {args.family} matches {args.only}")
            if args.sample is None:
                sample = names  # sorted
                print(f"{args.family}: the {len(sample)} mutants matching {args.only}")
            else:
                sample = draw_sample(names, args.sample, args.seed)
                print(f"{args.family}: sample of {len(sample)} of {len(names)} mutants, seed {args.seed}")
        no_tests = {name for name in sample if times.get(name, 0.0) is None}
        only = [n for n in sample if n not in no_tests and (earlier or {}).get(n) not in DETECTED]
    else:
        only = []
    run = subprocess.run(run_command(args.max_children, only), cwd=work) if only or sample is None else None
    if run is not None and run.returncode not in (0, 1):
        return run.returncode
    summary = summarise(work, sample, no_tests, earlier)
    rate = lambda r: "n/a" if r is None else f"{r:.1%}"
    print(
        f"{args.family}: {summary['counts']} of {summary['total']} mutants; kill rate {rate(summary['kill_rate'])}"
        f" of all, {rate(summary['kill_rate_covered'])} of those the selected checks run"
    )
    if sample is not None:
        low, high = summary["kill_rate_interval"]
        print(f"  95% Wilson interval of the strict rate: {low:.1%} .. {high:.1%}")
    for name in summary["survivors"]:
        print(f"  survived: {name}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
