"""The core install (numpy, scipy, sympy, mpmath) runs the exact constructions: in a fresh interpreter where the
optional packages cannot be imported, the algebra, automata and HMM constructions import and work, and code that
needs an extra says which one in one line."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

# makes every optional package look uninstalled (ModuleNotFoundError, as pip's absence would)
BLOCKER = textwrap.dedent(
    """
    import importlib.abc, sys

    OPTIONAL = {"torch", "cvxpy", "tensorly", "matplotlib", "pytest", "_pytest", "hypothesis", "xdist",
                "threadpoolctl", "latex2mathml"}

    class _Blocker(importlib.abc.MetaPathFinder):
        def find_spec(self, name, path=None, target=None):
            if name.split(".")[0] in OPTIONAL:
                raise ModuleNotFoundError(f"No module named {name!r}", name=name)

    for _m in [m for m in sys.modules if m.split(".")[0] in OPTIONAL]:
        del sys.modules[_m]
    sys.meta_path.insert(0, _Blocker())
    """
)


def _run_blocked(code: str, *argv: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run(
        [sys.executable, "-c", BLOCKER + textwrap.dedent(code), *argv],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=env,
        timeout=120,
    )


def test_constructions_work_without_optional_packages():
    code = """
    import numpy as np

    from theorylab.algebra import permutation_group
    from theorylab.automata import compile_log_depth, zoo
    from theorylab.hmm.constructions import theorem4_pair
    from theorylab.hmm.compare import predictor_gap

    assert permutation_group([[1, 2, 3, 4, 0], [1, 0, 2, 3, 4]]).order == 120  # S5

    aut = zoo.dihedral(4)
    net = compile_log_depth(aut, T=16, q0=0)
    words = aut.sample(np.random.default_rng(0), batch=4, T=16)
    assert (net.forward(words) == aut.run(words, q0=0)).all()

    a, b = theorem4_pair(3)
    assert predictor_gap(a, b, "x3|x1") < 1e-12 and not np.allclose(a.T, b.T)

    heavy = sorted({m.split(".")[0] for m in sys.modules} & OPTIONAL)
    assert not heavy, heavy
    print("core ok")
    """
    r = _run_blocked(code)
    assert r.returncode == 0, r.stderr
    assert "core ok" in r.stdout


def test_missing_extra_is_one_line_naming_the_extra():
    code = """
    from theorylab._extras import MissingExtraError, require

    for module, extra in [("torch", "trained"), ("cvxpy", "convex"), ("matplotlib.pyplot", "plots"),
                          ("hypothesis", "checks")]:
        try:
            require(module)
        except MissingExtraError as exc:
            msg = str(exc)
            assert "\\n" not in msg and f"theorylab[{extra}]" in msg, msg
        else:
            raise AssertionError(module)
    try:
        import theorylab.nn.models  # a torch-only module: the same error at import
    except MissingExtraError as exc:
        assert "theorylab[trained]" in str(exc), exc
    else:
        raise AssertionError("theorylab.nn.models imported without torch")
    print("extras ok")
    """
    r = _run_blocked(code)
    assert r.returncode == 0, r.stderr
    assert "extras ok" in r.stdout


def test_cli_check_without_pytest_names_the_checks_extra():
    r = _run_blocked(
        "from theorylab.cli import main; sys.exit(main(sys.argv[1:]))", "check", "--tier", "exact"
    )
    assert r.returncode == 2
    assert r.stderr.strip().count("\n") == 0
    assert "theorylab[checks]" in r.stderr


def test_verify_without_torch_names_the_trained_extra(tmp_path):
    """flat.lemF.4's check differentiates with torch: without it, verify says which extra to install."""
    path = tmp_path / "f4.npz"
    code = f"""
    from theorylab.cli import main
    assert main(["counterexample", "flat.lemF.4", "--out", {str(path)!r}]) == 0
    sys.exit(main(["verify", {str(path)!r}]))
    """
    r = _run_blocked(code)
    assert r.returncode == 2 and "theorylab[trained]" in r.stderr and "Traceback" not in r.stderr
