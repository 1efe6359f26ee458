"""Trivial draws of property checks: the plugin fails a check that mostly draws trivial instances, and every
hypothesis-driven claim check in ``checks/`` records its draws with :func:`theorylab.testing.trivial` (or states on
its claim marker, ``no_trivial="..."``, why its strategy cannot draw a trivial instance)."""

import ast
import json
from pathlib import Path

import numpy  # noqa: F401  (imported before pytester runs, which must not re-import it)
import pytest

from theorylab.testing import MAX_TRIVIAL_SHARE, trivial

pytest_plugins = ["pytester"]

CHECKS_DIR = Path(__file__).resolve().parents[1] / "checks"
DEMO = Path(__file__).parent / "data"

CHECK = """
import pytest
from hypothesis import given, strategies as st
from theorylab.testing import trivial

@pytest.mark.claim("demo.thm1", tier="property", examples=40)
@given(st.integers(0, 9))
def test_commutes(k):
    trivial(k < {cut})
    assert k + 1 == 1 + k
"""


def _run(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, cut: int) -> pytest.RunResult:
    monkeypatch.setenv("THEORYLAB_CLAIMS_PATH", str(DEMO))
    pytester.makeconftest('pytest_plugins = ["theorylab.pytest_plugin"]\n')
    pytester.makepyfile(test_demo=CHECK.format(cut=cut))
    return pytester.runpytest("--theorylab-claims-json", "claims.json")


def test_mostly_trivial_draws_fail_the_check(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    result = _run(pytester, monkeypatch, cut=5)  # half of 0..9 is "trivial"
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*drawn examples were trivial instances*"])


def test_rare_trivial_draws_pass_and_are_reported(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    result = _run(pytester, monkeypatch, cut=1)  # one value in ten
    result.assert_outcomes(passed=1)
    (check,) = json.loads((pytester.path / "claims.json").read_text())["claims"]["demo.thm1"]["checks"]
    trivial_draws, draws = check["trivial_draws"]
    assert draws >= 10 and trivial_draws / draws <= MAX_TRIVIAL_SHARE


def test_trivial_returns_its_flag_and_rejects_non_bools() -> None:
    assert trivial(True) is True and trivial(numpy.bool_(False)) is False
    with pytest.raises(TypeError, match="takes a bool"):
        trivial(0.0)  # type: ignore[arg-type]


def _given_checks(path: Path) -> list[tuple[str, bool, bool]]:
    """(name, calls trivial(), marker says no_trivial=...) for each @given claim check of one checks file."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    out = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.FunctionDef):
            continue
        decorators = [ast.unparse(d) for d in node.decorator_list]
        if not any(d.startswith("given(") for d in decorators) or not any(".claim(" in d for d in decorators):
            continue
        calls = any(
            isinstance(n, ast.Call) and getattr(n.func, "id", getattr(n.func, "attr", "")) == "trivial"
            for n in ast.walk(node)
        )
        out.append((node.name, calls, any("no_trivial=" in d for d in decorators)))
    return out


@pytest.mark.parametrize("path", sorted(CHECKS_DIR.glob("test_*.py")), ids=lambda p: p.stem)
def test_every_hypothesis_check_records_its_trivial_draws(path: Path) -> None:
    missing = [name for name, calls, exempt in _given_checks(path) if not (calls or exempt)]
    assert not missing, (
        f"{path.name}: hypothesis checks that neither call theorylab.testing.trivial(...) nor give "
        f"no_trivial='why' on their claim marker: {missing}"
    )


def test_rejects_requires_the_error_and_a_message_that_begins_with_the_match() -> None:
    from theorylab.testing import rejects

    def bad():
        raise ValueError("n must be >= 1, got 0")

    assert str(rejects(bad, r"n must be >= 1")) == "n must be >= 1, got 0"
    with pytest.raises(AssertionError, match="does not begin with"):
        rejects(bad, r"must be")  # matched from the first word
    with pytest.raises(AssertionError, match="does not begin with"):
        rejects(bad, r"N must be")  # case-sensitive
    with pytest.raises(pytest.fail.Exception):
        rejects(lambda: None, r"n must be")  # no error at all
    with pytest.raises(ValueError):
        rejects(bad, r"n must be", TypeError)  # another error type passes through
