"""A check draws the same instances whichever command runs it: the numbers recorded by a subset of the claim checks
(exact and property checks with seeded draws whose numbers the docs quote) are identical under ``pytest checks/``
(rootdir ``checks/``, as ``make checks``), ``pytest checks/ tests/...`` (rootdir the repository, as ``make test``),
``theorylab check`` (the installed checks, run from another folder) and ``pytest checks/test_anchor.py`` (one file).
Also: ``theorylab check --help`` is theorylab's usage, and ``theorylab check`` leaves no ``.hypothesis/`` behind."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
#: seeded exact checks whose number the docs quote (the share of contexts a shifted head flips, over random
#: instances drawn from the check's rng; it read 0.325 under one command and 0.225 under another before seeds
#: stopped depending on the node id), cheap enough to run four times
SUBSET = ["--claim", "anchor.thm2", "--tier", "exact", "-p", "no:randomly", "-q"]


def _env(extra: Path | None = None) -> dict:
    paths = [str(extra)] if extra else []
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_XDIST", "THEORYLAB_SEED"))}
    env["PYTHONPATH"] = os.pathsep.join([*paths, str(ROOT), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    return env


def _run(args: list[str], cwd: Path, env: dict) -> subprocess.CompletedProcess:
    run = subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    return run


def _numbers(path: Path) -> dict:
    claims = json.loads(path.read_text())["claims"]
    return {cid: rec["measures"] for cid, rec in claims.items()}


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder on PYTHONPATH where ``theorylab_checks`` is this clone's ``checks/`` (as an installed wheel has it)."""
    site = tmp_path_factory.mktemp("site")
    (site / "theorylab_checks").symlink_to(ROOT / "checks", target_is_directory=True)
    return site


def test_four_invocations_record_the_same_numbers(tmp_path: Path, installed: Path) -> None:
    py, out = sys.executable, tmp_path / "out"
    out.mkdir()
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    runs = {
        "make checks": ([py, "-m", "pytest", "checks/"], ROOT, _env()),
        "make test": (
            [py, "-m", "pytest", "checks/", "tests/test_quoted.py", "--deselect", "tests/test_quoted.py"],
            ROOT,
            _env(),
        ),
        "theorylab check": ([py, "-m", "theorylab", "check"], elsewhere, _env(installed)),
        "one file": ([py, "-m", "pytest", "checks/test_anchor.py"], ROOT, _env()),
    }
    numbers = {}
    for name, (args, cwd, env) in runs.items():
        path = out / f"{name.replace(' ', '_')}.json"
        _run([*args, *SUBSET, "-p", "no:cacheprovider", "--claims-json", str(path)], cwd, env)
        numbers[name] = _numbers(path)
    reference = numbers["make checks"]
    assert set(reference) == {"anchor.thm2"} and "flipped fraction at KL = 0" in reference["anchor.thm2"]
    for name, got in numbers.items():
        assert got == reference, f"{name} recorded other numbers than `pytest checks/`"
    assert not (elsewhere / ".hypothesis").exists()  # theorylab check keeps hypothesis's files elsewhere


def test_check_help_is_theorylabs_usage(capsys) -> None:
    from theorylab.cli import main

    assert main(["check", "--help"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("usage: theorylab check")
    assert "--tier" in out and "-q" in out and "pytest --help" in out
    assert "pytest [options]" not in out
