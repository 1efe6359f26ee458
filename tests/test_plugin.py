"""The pytest plugin: tier/claim selection, unknown claims, the claim table and the JSON report (via pytester)."""

import json
from pathlib import Path

import numpy  # noqa: F401  (imported before pytester runs, which must not re-import it)
import pytest

pytest_plugins = ["pytester"]

DEMO = Path(__file__).parent / "data"

CHECKS = """
import numpy  # noqa: F401  (imported before pytester runs, which must not re-import it)
import pytest

@pytest.mark.claim("demo.thm1", tier="exact")
def test_commutes_exact():
    assert all(a + b == b + a for a in range(-5, 6) for b in range(-5, 6))

@pytest.mark.claim("demo.thm1", tier="exact", control=True)
def test_commutes_control():
    assert any(a - b != b - a for a in range(3) for b in range(3))

@pytest.mark.claim("demo.thm1", tier="property")
def test_commutes_property(rng, measure):
    a, b = rng.integers(-100, 100, size=2)
    measure("example_a", int(a))
    assert a + b == b + a

@pytest.mark.claim("demo.thm2", tier="exact")
def test_corrected():
    assert all(n * n <= 2 * n for n in range(3))
"""


@pytest.fixture
def demo(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    monkeypatch.setenv("THEORYLAB_CLAIMS_PATH", str(DEMO))
    pytester.mkdir("checks")
    (pytester.path / "checks" / "test_demo.py").write_text(CHECKS)
    return pytester


def test_all_checks_run_and_table_printed(demo: pytest.Pytester) -> None:
    result = demo.runpytest("checks", "-p", "no:randomly")
    result.assert_outcomes(passed=4)
    result.stdout.fnmatch_lines(
        ["*theorylab claim table (2 claims)*", "demo.thm1*holds*exact,property*3*0*0*1*ok"]
    )
    result.stdout.fnmatch_lines(["*claims run without a negative control: demo.thm2*"])


def test_tier_selects_tiers(demo: pytest.Pytester) -> None:
    result = demo.runpytest("checks", "--tier", "property")
    result.assert_outcomes(passed=1, deselected=3)


def test_claim_pattern_selects_claims(demo: pytest.Pytester) -> None:
    result = demo.runpytest("checks", "--claim", "demo.thm2")
    result.assert_outcomes(passed=1, deselected=3)
    assert demo.runpytest("checks", "--claim", "demo").parseoutcomes()["passed"] == 4
    assert demo.runpytest("checks", "--claim", "demo.thm*", "--tier", "exact").parseoutcomes()["passed"] == 3


def test_unknown_tier_is_a_usage_error(demo: pytest.Pytester) -> None:
    result = demo.runpytest("checks", "--tier", "exactt")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*unknown tiers*exactt*"])


def test_unknown_claim_fails_the_run(demo: pytest.Pytester) -> None:
    (demo.path / "checks" / "test_bad.py").write_text(
        'import pytest\n@pytest.mark.claim("demo.nope", tier="exact")\ndef test_x():\n    pass\n'
    )
    result = demo.runpytest("checks")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(["*unknown claim 'demo.nope'*"])


def test_tier_not_in_record_fails(demo: pytest.Pytester) -> None:
    (demo.path / "checks" / "test_bad.py").write_text(
        'import pytest\n@pytest.mark.claim("demo.thm2", tier="trained")\ndef test_x():\n    pass\n'
    )
    result = demo.runpytest("checks", "--claim", "demo.thm2")
    result.assert_outcomes(passed=1, errors=1)
    result.stdout.fnmatch_lines(["*a trained check exists but the record lists tiers*"])


def test_claims_json(demo: pytest.Pytester) -> None:
    demo.runpytest("checks", "--claims-json", "out/claims.json", "--theorylab-seed", "7")
    data = json.loads((demo.path / "out" / "claims.json").read_text())
    assert data["meta"]["seed"] == 7
    rec = data["claims"]["demo.thm1"]
    assert rec["tiers"]["exact"] == {"passed": 2, "failed": 0, "skipped": 0, "controls": 1}
    assert "example_a" in rec["measures"]
    assert data["unchecked"] == []  # demo.open1 is open, so it needs no check


def test_rng_is_reproducible_and_seed_overridable(demo: pytest.Pytester) -> None:
    (demo.path / "checks" / "test_seed.py").write_text(
        'import pytest\n@pytest.mark.claim("demo.thm1", tier="property")\n'
        'def test_x(rng, measure):\n    measure("draw", float(rng.random()))\n'
    )
    draws = []
    for args in ([], [], ["--theorylab-seed", "1"]):
        demo.runpytest("checks/test_seed.py", "--claims-json", "c.json", *args)
        draws.append(
            json.loads((demo.path / "c.json").read_text())["claims"]["demo.thm1"]["measures"]["draw"]
        )
    assert draws[0] == draws[1] != draws[2]


def test_header_prints_seed(demo: pytest.Pytester) -> None:
    demo.runpytest("checks", "--theorylab-seed", "99").stdout.fnmatch_lines(["theorylab: seed=99*"])


def test_xdist_aggregates_on_the_controller(demo: pytest.Pytester) -> None:
    pytest.importorskip("xdist")
    result = demo.runpytest_subprocess("checks", "-n", "2", "--claims-json", "x.json")
    result.assert_outcomes(passed=4)
    data = json.loads((demo.path / "x.json").read_text())
    assert data["claims"]["demo.thm1"]["tiers"]["exact"]["passed"] == 2
