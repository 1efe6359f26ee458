"""The mutation-testing set-up (tools/mutation.py): every claim family is mapped to library modules and checks."""

import importlib.util
import tomllib
from pathlib import Path

import pytest

import theorylab.claims as claims

ROOT = Path(__file__).resolve().parents[1]
_spec = importlib.util.spec_from_file_location("mutation_tool", ROOT / "tools" / "mutation.py")
mutation = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(mutation)


def test_every_claim_family_has_a_mutation_scope() -> None:
    assert set(claims.families()) <= set(mutation.FAMILIES)


@pytest.mark.parametrize("family", sorted(mutation.FAMILIES))
def test_scope_names_existing_modules_and_checks(family: str) -> None:
    modules, checks = mutation.FAMILIES[family]
    assert any(list(ROOT.glob(m)) for m in modules)
    for check in checks:  # a file, or one test of it (``path::name``)
        path, _, name = check.partition("::")
        assert (ROOT / path).is_file(), check
        assert not name or f"def {name}(" in (ROOT / path).read_text(), check


def test_prepared_copy_carries_the_family_configuration(tmp_path: Path) -> None:
    work = mutation.prepare("flipflop", ["--tier", "exact,property"], tmp_path / "flipflop")
    config = tomllib.loads((work / "pyproject.toml").read_text())["tool"]["mutmut"]
    assert config["only_mutate"] == ["theorylab/languages/flipflop.py"]
    selection = config["pytest_add_cli_args_test_selection"]
    assert selection == mutation.FAMILIES["flipflop"][1]
    assert selection[:2] == ["checks/test_flipflop.py", "checks/test_flipflop_glitches.py"]
    assert config["pytest_add_cli_args"][-2:] == ["--tier", "exact,property"]
    assert (work / "theorylab" / "languages" / "flipflop.py").is_file() and (work / "checks").is_dir()


def test_prepared_copy_carries_the_library_tests_a_scope_names(tmp_path: Path) -> None:
    """The verifier scope runs ``tests/test_interop_conventions.py``: the copy must hold ``tests/`` (mutmut's
    coverage step fails on a missing file), and ``also_copy`` must list it; a scope of checks only copies none."""
    work = mutation.prepare("verifier", ["--tier", "exact,property"], tmp_path / "verifier")
    config = tomllib.loads((work / "pyproject.toml").read_text())["tool"]["mutmut"]
    assert (work / "tests" / "test_interop_conventions.py").is_file()
    assert config["also_copy"] == ["checks/", "tests/"]
    flip = mutation.prepare("flipflop", ["--tier", "exact,property"], tmp_path / "flipflop")
    assert not (flip / "tests").exists()
    assert tomllib.loads((flip / "pyproject.toml").read_text())["tool"]["mutmut"]["also_copy"] == ["checks/"]


def test_only_patterns_are_passed_to_mutmut_as_names() -> None:
    pattern = "theorylab.languages.flipflop.x_window_predictor*"
    assert mutation.run_command(1, [])[1:] == ["run", "--max-children", "1"]
    assert mutation.run_command(1, [pattern, "x_is_valid*"])[-2:] == [pattern, "x_is_valid*"]


def test_sample_is_uniform_reproducible_and_bounded() -> None:
    names = [f"m.x_f__mutmut_{i}" for i in range(50)]
    first = mutation.draw_sample(names, 10, seed=3)
    assert first == mutation.draw_sample(list(reversed(names)), 10, seed=3)
    assert len(set(first)) == 10 and set(first) <= set(names)
    assert first != mutation.draw_sample(names, 10, seed=4)
    assert mutation.draw_sample(names, 80, seed=0) == sorted(names)
    with pytest.raises(ValueError, match="sample size"):
        mutation.draw_sample(names, 0, seed=0)


def test_wilson_interval_matches_the_closed_form() -> None:
    # 95 of 100: the textbook Wilson interval is (0.8883, 0.9785)
    low, high = mutation.wilson_interval(95, 100)
    assert abs(low - 0.8883) < 1e-4 and abs(high - 0.9785) < 1e-4
    assert mutation.wilson_interval(0, 0) == (0.0, 1.0)
    assert mutation.wilson_interval(10, 10)[1] == 1.0


def test_only_patterns_select_mutants_as_mutmut_does() -> None:
    names = [
        "theorylab.estimation.nce.x_ngd__mutmut_1",
        "theorylab.estimation.nce.x_nce_loss__mutmut_2",
        "theorylab.tensors.cp.x__jennrich_once__mutmut_3",
        "theorylab.languages.dyck.xǁDyckǁscan__mutmut_4",
    ]
    assert mutation.matching(names, ["theorylab.estimation.nce.x_ngd*", "*xǁDyckǁscan*"]) == [
        names[0],
        names[3],
    ]
    assert mutation.matching(names, ["theorylab.nowhere*"]) == []
