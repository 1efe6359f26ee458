"""The pytest plugin: opt-in activation, tier/claim selection, unknown claims, the claim table, the JSON report,
per-check hypothesis settings, and invisibility to projects that do not use it (via pytester)."""

import json
import re
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
    """A project with its own claims (tests/data/demo.toml) that turns the plugin on in its conftest."""
    monkeypatch.setenv("THEORYLAB_CLAIMS_PATH", str(DEMO))
    pytester.makeconftest('pytest_plugins = ["theorylab.pytest_plugin"]\n')
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
    result.stdout.fnmatch_lines(["measured: 1 numbers of 1 claims (-v lists them)"])  # a summary line
    assert "demo.thm1: example_a" not in result.stdout.str()
    demo.runpytest("checks", "-v").stdout.fnmatch_lines(["*- measured -*", "demo.thm1: example_a = *"])
    assert "measured" not in demo.runpytest("checks", "-q").stdout.str()


def test_tier_selects_tiers(demo: pytest.Pytester) -> None:
    result = demo.runpytest("checks", "--theorylab-tier", "property")
    result.assert_outcomes(passed=1, deselected=3)


def test_claim_pattern_selects_claims(demo: pytest.Pytester) -> None:
    result = demo.runpytest("checks", "--theorylab-claim", "demo.thm2")
    result.assert_outcomes(passed=1, deselected=3)
    assert demo.runpytest("checks", "--theorylab-claim", "demo").parseoutcomes()["passed"] == 4
    assert (
        demo.runpytest(
            "checks", "--theorylab-claim", "demo.thm*", "--theorylab-tier", "exact"
        ).parseoutcomes()["passed"]
        == 3
    )


def test_unknown_tier_is_a_usage_error(demo: pytest.Pytester) -> None:
    result = demo.runpytest("checks", "--theorylab-tier", "exactt")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*unknown tiers*exactt*"])


def test_unknown_claim_fails_the_run(demo: pytest.Pytester) -> None:
    (demo.path / "checks" / "test_bad.py").write_text(
        'import pytest\n@pytest.mark.claim("demo.nope", tier="exact")\ndef test_x():\n    pass\n'
    )
    result = demo.runpytest("checks")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(
        ["*unknown claim 'demo.nope'*not in the claim registry (read from *data)*theorylab_claims = PATH*"]
    )


def test_tier_not_in_record_fails(demo: pytest.Pytester) -> None:
    (demo.path / "checks" / "test_bad.py").write_text(
        'import pytest\n@pytest.mark.claim("demo.thm2", tier="trained")\ndef test_x():\n    pass\n'
    )
    result = demo.runpytest("checks", "--theorylab-claim", "demo.thm2")
    result.assert_outcomes(passed=1, errors=1)
    result.stdout.fnmatch_lines(["*a trained check exists but the record lists tiers*"])


def test_claims_json(demo: pytest.Pytester) -> None:
    demo.runpytest("checks", "--theorylab-claims-json", "out/claims.json", "--theorylab-seed", "7")
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
        demo.runpytest("checks/test_seed.py", "--theorylab-claims-json", "c.json", *args)
        draws.append(
            json.loads((demo.path / "c.json").read_text())["claims"]["demo.thm1"]["measures"]["draw"]
        )
    assert draws[0] == draws[1] != draws[2]


def test_header_prints_seed(demo: pytest.Pytester) -> None:
    demo.runpytest("checks", "--theorylab-seed", "99").stdout.fnmatch_lines(["theorylab: seed=99*"])


def test_xdist_aggregates_on_the_controller(demo: pytest.Pytester) -> None:
    pytest.importorskip("xdist")
    result = demo.runpytest_subprocess("checks", "-n", "2", "--theorylab-claims-json", "x.json")
    result.assert_outcomes(passed=4)
    data = json.loads((demo.path / "x.json").read_text())
    assert data["claims"]["demo.thm1"]["tiers"]["exact"]["passed"] == 2


# ------------------------------------------------------------------ a project that does not use the plugin

USER_CONFTEST = """
import os
import pytest
from hypothesis import settings

settings.register_profile("mine", max_examples=7)
settings.load_profile("mine")


def pytest_addoption(parser):
    for name in ("--device", "--tier", "--scale", "--claim"):
        parser.addoption(name, default="user-" + name[2:])


@pytest.fixture
def user_options(request):
    return {n: request.config.getoption(n) for n in ("device", "tier", "scale", "claim")}
"""

USER_TESTS = """
import os
from hypothesis import given, settings, strategies as st

CALLS = []


def test_options(user_options):
    assert user_options == {"device": "cuda:1", "tier": "user-tier", "scale": "user-scale", "claim": "x"}


@given(st.integers())
def test_profile(n):
    CALLS.append(n)
    assert settings.default.max_examples == 7


def test_profile_count():
    assert settings.get_current_profile_name() == "mine"
    assert len(CALLS) == 7  # the user's profile, not theorylab's (25)


def test_environment():
    print("OMP_NUM_THREADS=%s" % os.environ.get("OMP_NUM_THREADS"))


def test_no_theorylab_fixtures(request):
    import pytest

    for name in ("rng", "seed", "scale", "measure", "figure", "theorylab_seed", "artifacts_dir"):
        with pytest.raises(pytest.FixtureLookupError):
            request.getfixturevalue(name)
"""


@pytest.fixture
def user_project(pytester: pytest.Pytester) -> pytest.Pytester:
    pytester.makeconftest(USER_CONFTEST)
    pytester.makepyfile(test_user=USER_TESTS)
    return pytester


def _normalized(lines: list[str]) -> list[str]:
    return [
        line
        for line in lines
        if not any(s in line for s in ("rootdir:", "platform ", "cachedir", "plugins:", "_of_theorylab"))
    ]


def test_unrelated_project_sees_nothing_of_theorylab(user_project: pytest.Pytester, monkeypatch) -> None:
    import theorylab  # noqa: F401  installed, as in a researcher's environment

    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)  # (this suite's own xdist workers set it)

    args = ("--device", "cuda:1", "--claim", "x", "-p", "no:randomly", "-s")
    result = user_project.runpytest_subprocess(*args)
    result.assert_outcomes(passed=5)
    assert not [line for line in _normalized(result.outlines + result.errlines) if "theorylab" in line]
    result.stdout.fnmatch_lines(["*OMP_NUM_THREADS=None*"])
    helptext = user_project.runpytest_subprocess("--help").stdout.str()
    assert not [line for line in _normalized(helptext.splitlines()) if "theorylab" in line]


def test_unrelated_project_under_xdist_keeps_its_environment(user_project: pytest.Pytester) -> None:
    pytest.importorskip("xdist")
    result = user_project.runpytest_subprocess(
        "--device", "cuda:1", "--claim", "x", "-n", "2", "-p", "no:randomly"
    )
    result.assert_outcomes(passed=4, failed=1)  # test_profile_count ran in another worker than test_profile
    result = user_project.runpytest_subprocess(
        "--device", "cuda:1", "--claim", "x", "-n", "1", "-s", "-k", "environment"
    )
    assert not [line for line in _normalized(result.outlines) if "theorylab" in line]


def test_project_with_its_own_options_can_use_the_plugin(user_project: pytest.Pytester, monkeypatch) -> None:
    """The plugin on, next to a conftest that owns --device/--tier/--scale/--claim and a hypothesis profile: no
    collision; the project's tests keep the project's profile, claim checks get theorylab's."""
    monkeypatch.setenv("THEORYLAB_CLAIMS_PATH", str(DEMO))
    (user_project.path / "test_claims.py").write_text(
        "import pytest\nfrom hypothesis import given, settings, strategies as st\nSEEN = []\n\n"
        '@pytest.mark.claim("demo.thm1", tier="property")\n@given(st.integers())\n'
        "def test_c(n):\n    SEEN.append(n)\n\n"
        "def test_count():\n    assert len(SEEN) == 25\n"
    )
    result = user_project.runpytest_subprocess(
        "-p",
        "theorylab.pytest_plugin",
        "--device",
        "cuda:1",
        "--claim",
        "x",
        "-p",
        "no:randomly",
        "--theorylab-tier",
        "property,exact",
        "--deselect",
        "test_user.py::test_profile_count",
        "--deselect",
        "test_user.py::test_no_theorylab_fixtures",  # here the plugin is on: its fixtures exist
    )
    # the tier selects among claim checks only: the project's own tests (but the deselected ones) still run
    result.assert_outcomes(passed=5, deselected=2)
    result = user_project.runpytest_subprocess(
        "-p",
        "theorylab.pytest_plugin",
        "--device",
        "cuda:1",
        "--claim",
        "x",
        "-p",
        "no:randomly",
        "--deselect",
        "test_user.py::test_profile_count",
        "--deselect",
        "test_user.py::test_no_theorylab_fixtures",  # here the plugin is on: its fixtures exist
    )
    result.assert_outcomes(passed=5, deselected=2)


def test_short_options_for_theorylabs_own_checks(demo: pytest.Pytester) -> None:
    demo.makeconftest(
        'pytest_plugins = ["theorylab.pytest_plugin"]\n'
        "def pytest_addoption(parser):\n"
        "    from theorylab.pytest_options import add_short_options\n\n"
        "    add_short_options(parser)\n"
    )
    demo.runpytest("checks", "--tier", "property").assert_outcomes(passed=1, deselected=3)
    demo.runpytest("checks", "--claim", "demo.thm2", "--theorylab-tier", "exact").assert_outcomes(
        passed=1, deselected=3
    )


def test_thorough_profile_scales_every_property_check(demo: pytest.Pytester) -> None:
    (demo.path / "checks" / "test_hyp.py").write_text(
        "import pytest\nfrom hypothesis import given, settings, strategies as st\n"
        "COUNTS = {'free': 0, 'examples': 0, 'pinned': 0}\n\n"
        '@pytest.mark.claim("demo.thm1", tier="property")\n@given(st.integers())\n'
        "def test_free(n):\n    COUNTS['free'] += 1\n\n"
        '@pytest.mark.claim("demo.thm1", tier="property", examples=3)\n@given(st.integers())\n'
        "def test_examples(n):\n    COUNTS['examples'] += 1\n\n"
        '@pytest.mark.claim("demo.thm1", tier="property")\n@settings(max_examples=2)\n@given(st.integers())\n'
        "def test_pinned(n):\n    COUNTS['pinned'] += 1\n\n"
        "def test_zz_report():\n    print('COUNTS', sorted(COUNTS.items()))\n"
    )
    out = demo.runpytest("checks/test_hyp.py", "-s", "-p", "no:randomly").stdout.str()
    assert "COUNTS [('examples', 3), ('free', 25), ('pinned', 2)]" in out
    out = demo.runpytest(
        "checks/test_hyp.py", "-s", "-p", "no:randomly", "--hypothesis-profile", "theorylab-thorough"
    ).stdout.str()
    assert "COUNTS [('examples', 60), ('free', 500), ('pinned', 40)]" in out


def test_claim_pattern_without_match_says_so(demo: pytest.Pytester) -> None:
    result = demo.runpytest("checks", "--theorylab-claim", "demo.thm3")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        ["*--theorylab-claim 'demo.thm3' matches no registered claim (did you mean *demo.thm1*"]
    )
    assert "theorylab_claims" in result.stderr.str()  # names the ways to register one's own claims


def test_bad_user_registry_is_a_one_line_usage_error(
    demo: pytest.Pytester, tmp_path: Path, monkeypatch
) -> None:
    bad = tmp_path / "bad.toml"
    bad.write_text((DEMO / "demo.toml").read_text().replace('status = "holds"', 'status = "proven"', 1))
    monkeypatch.setenv("THEORYLAB_CLAIMS_PATH", str(bad))
    result = demo.runpytest("checks")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert "INTERNALERROR" not in result.stdout.str() + result.stderr.str()
    result.stderr.fnmatch_lines(
        ["*theorylab claim registry: bad.toml: claim 'demo.thm1': unknown status 'proven'*"]
    )


def test_claims_json_records_the_machine(demo: pytest.Pytester) -> None:
    demo.runpytest("checks", "--theorylab-claims-json", "m.json")
    meta = json.loads((demo.path / "m.json").read_text())["meta"]
    for key in ("theorylab", "python", "torch", "numpy", "date", "git_commit", "platform"):
        assert key in meta
    assert meta["python"].count(".") == 2 and meta["date"].endswith("Z")


def test_exact_and_property_checks_run_with_single_threaded_blas() -> None:
    from threadpoolctl import threadpool_info

    from theorylab.pytest_plugin import _serial_blas

    def blas_threads() -> list[int]:
        return [lib["num_threads"] for lib in threadpool_info() if lib["user_api"] == "blas"]

    before = blas_threads()
    assert before  # numpy's BLAS is seen
    for tier in ("exact", "property"):
        with _serial_blas([("x.y", tier, False)]):
            assert set(blas_threads()) == {1}
        assert blas_threads() == before
    for marks in ([("x.y", "trained", False)], [("x.y", "exact", False), ("x.z", "trained", False)], []):
        with _serial_blas(marks):  # trained checks and tests that are not claim checks keep their threads
            assert blas_threads() == before


def test_exact_and_property_checks_run_torch_on_one_thread() -> None:
    import torch

    from theorylab.pytest_plugin import _serial_blas

    before = torch.get_num_threads()
    torch.set_num_threads(2)
    try:
        for tier in ("exact", "property"):
            with _serial_blas([("x.y", tier, False)]):
                assert torch.get_num_threads() == 1
            assert torch.get_num_threads() == 2
        for marks in ([("x.y", "trained", False)], []):
            with _serial_blas(marks):  # trained checks and other tests keep torch's threads
                assert torch.get_num_threads() == 2
    finally:
        torch.set_num_threads(before)


# ------------------------------------------------- a user project: filters, its own claims path, lazy collection

USER_CHECKS = """
import pytest

@pytest.mark.claim("demo.thm1", tier="exact")
def test_exact():
    pass

@pytest.mark.claim("demo.thm1", tier="property")
def test_property():
    pass

def test_unmarked():
    pass

class TestUnmarked:
    def test_method(self):
        pass
"""


@pytest.fixture
def scratch(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    """A researcher's project: its claims in ``claims/demo.toml`` named by the ini file (no environment variable),
    claim checks next to ordinary tests."""
    monkeypatch.delenv("THEORYLAB_CLAIMS_PATH", raising=False)
    pytester.mkdir("claims")
    (pytester.path / "claims" / "demo.toml").write_text((DEMO / "demo.toml").read_text())
    pytester.makeini("[pytest]\ntheorylab_claims = claims\n")
    pytester.makeconftest('pytest_plugins = ["theorylab.pytest_plugin"]\n')
    pytester.makepyfile(test_mine=USER_CHECKS)
    return pytester


def test_tier_filter_leaves_unmarked_tests_running(scratch: pytest.Pytester) -> None:
    result = scratch.runpytest("--theorylab-tier", "exact", "-v")
    result.assert_outcomes(passed=3, deselected=1)
    result.stdout.fnmatch_lines(["*test_exact PASSED*", "*test_unmarked PASSED*", "*test_method PASSED*"])
    scratch.runpytest("--theorylab-claim", "demo.thm1", "--theorylab-tier", "property").assert_outcomes(
        passed=3, deselected=1
    )
    scratch.runpytest().assert_outcomes(passed=4)
    assert "THEORYLAB_CLAIMS_PATH" not in __import__("os").environ  # the ini key set it for the run only


def test_claims_path_from_ini_or_option(scratch: pytest.Pytester, tmp_path: Path) -> None:
    (scratch.path / "test_other.py").write_text(
        'import pytest\n@pytest.mark.claim("other.thm1", tier="exact")\ndef test_o():\n    pass\n'
    )
    result = scratch.runpytest()  # the ini's registry does not have other.thm1
    result.assert_outcomes(passed=4, errors=1)
    result.stdout.fnmatch_lines(["*unknown claim 'other.thm1'*read from *claims*"])
    other = tmp_path / "other.toml"
    other.write_text(
        (DEMO / "demo.toml").read_text().replace('"demo', '"other').replace('= "demo', '= "other')
    )
    paths = f"{scratch.path / 'claims'}{__import__('os').pathsep}{other}"
    scratch.runpytest("--theorylab-claims-path", paths).assert_outcomes(passed=5)
    result = scratch.runpytest("--theorylab-claims-path", "nowhere")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--theorylab-claims-path names '*nowhere', which does not exist*"])


def test_mistyped_claim_names_the_option_given(scratch: pytest.Pytester) -> None:
    result = scratch.runpytest("--theorylab-claim", "demo.thm9")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--theorylab-claim 'demo.thm9' matches no registered claim*"])
    assert "--claim " not in result.stderr.str()


def test_claim_filter_skips_files_that_cannot_match_without_importing_them(scratch: pytest.Pytester) -> None:
    scratch.makepyfile(
        test_heavy='import pytest\nraise RuntimeError("imported")\n'
        '@pytest.mark.claim("demo.thm2", tier="exact")\ndef test_h():\n    pass\n'
    )
    result = scratch.runpytest("--theorylab-claim", "demo.thm1", "--theorylab-tier", "exact")
    result.assert_outcomes(passed=3, deselected=1)  # test_heavy.py was not imported
    result = scratch.runpytest("--theorylab-tier", "property")
    result.assert_outcomes(passed=3, deselected=1)  # nor here: its one check is exact
    scratch.runpytest("--theorylab-claim", "demo.thm2").assert_outcomes(errors=1)  # this one imports it


def test_seed_depends_on_claim_function_and_parameters_only(pytester: pytest.Pytester, monkeypatch) -> None:
    """The same check gets the same seed from another rootdir and another path: the seed derives from claim id,
    function name and parametrisation id (and the base seed), not from the node id."""
    monkeypatch.setenv("THEORYLAB_CLAIMS_PATH", str(DEMO))
    body = (
        "import pytest\n\n"
        '@pytest.mark.claim("demo.thm1", tier="property")\n@pytest.mark.parametrize("k", [1, 2])\n'
        'def test_s(seed, k):\n    print("SEED", k, seed)\n'
    )
    for folder in ("a", "b/deeper"):
        pytester.mkdir(folder) if "/" not in folder else (pytester.path / folder).mkdir(parents=True)
        (pytester.path / folder / "test_s.py").write_text(body)
    seen = []
    for args in (["a"], ["b/deeper/test_s.py"], ["--rootdir", "b", "b"]):
        out = pytester.runpytest(*args, "-p", "theorylab.pytest_plugin", "-s", "-p", "no:randomly")
        seen.append(sorted(re.findall(r"SEED \d \d+", out.stdout.str())))
    assert len(seen[0]) == 2 and seen[0][0] != seen[0][1]  # parametrisations get different seeds
    assert seen[0] == seen[1] == seen[2]
    from theorylab.pytest_options import DEFAULT_SEED
    from theorylab.pytest_plugin import derive_seed

    assert seen[0][0] == f"SEED 1 {derive_seed(DEFAULT_SEED, 'demo.thm1|test_s|1')}"


def test_trained_progress_is_quiet_in_logs_and_erased_on_a_terminal(demo: pytest.Pytester) -> None:
    """In a log (no terminal) a trained check gets no progress display; on a terminal the progress is appended to
    the current line and erased again, leaving pytest's own line bookkeeping alone."""
    import io
    from types import SimpleNamespace

    from theorylab.pytest_plugin import _TerminalProgress

    (demo.path / "checks" / "test_t.py").write_text(
        "import pytest\nfrom theorylab import testing\n\n"
        '@pytest.mark.claim("demo.thm1", tier="exact")\ndef test_t():\n'
        '    print("SINK", testing.progress_sink())\n'
    )
    demo.runpytest("checks/test_t.py", "-s").stdout.fnmatch_lines(["*SINK None*"])

    class Writer:
        fullwidth, width_of_current_line, _file = 80, 20, io.StringIO()

    config = SimpleNamespace(pluginmanager=SimpleNamespace(getplugin=lambda name: None))
    writer = Writer()
    sink = _TerminalProgress(config, writer)
    sink("parity seeds 0..2", 120, 600)
    shown = writer._file.getvalue()
    assert shown.startswith(" [parity seeds 0..2: step 120/600, ") and shown.endswith(" s]")
    sink.close()
    n = len(shown)
    assert writer._file.getvalue() == shown + "\b" * n + " " * n + "\b" * n
    writer.width_of_current_line = 79  # no room left on the line: nothing is shown
    sink("parity seeds 0..2", 130, 600)
    assert sink.shown == ""


def test_static_scan_is_read_once_per_version_of_a_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """pytest asks about every file of a folder once per path argument: the static scan parses each version of
    a file once, and an edit (new size or modification time) is read again."""
    from theorylab import pytest_plugin as plugin

    path = tmp_path / "test_x.py"
    path.write_text(
        'import pytest\n\n@pytest.mark.claim("demo.thm1", tier="exact")\ndef test_a():\n    pass\n'
    )
    reads = []
    real = plugin._read_static_checks
    monkeypatch.setattr(plugin, "_read_static_checks", lambda *a: reads.append(a) or real(*a))
    first = plugin._static_checks(path)
    first[0].append(("mutated", "by", "caller"))  # the caller's copy: the cache keeps its own
    assert plugin._static_checks(path) == [[("demo.thm1", "exact", False)]] and len(reads) == 1
    path.write_text(path.read_text().replace('tier="exact"', 'tier="property"') + "\n")
    assert plugin._static_checks(path) == [[("demo.thm1", "property", False)]] and len(reads) == 2
    assert plugin._static_checks(tmp_path / "missing.py") is None


def test_filters_parse_only_the_files_they_may_skip(demo: pytest.Pytester, monkeypatch) -> None:
    """A file with a one-line claim marker that passes the filters is imported without a syntax tree; a file with
    none is read statically (and skipped when none of its checks passes); the claim table then reads no file
    twice and still counts the claims of the skipped file as checked."""
    from theorylab import pytest_plugin as plugin
    from theorylab.claims import checks

    (demo.path / "checks" / "test_split.py").write_text(
        'import pytest\n@pytest.mark.claim(\n    "demo.thm2", tier="exact"\n)\ndef test_s():\n    pass\n'
    )
    parsed = []
    real = checks.parse_file
    monkeypatch.setattr(checks, "parse_file", lambda path: parsed.append(Path(path).name) or real(path))
    monkeypatch.setattr(plugin, "_STATIC", {})
    monkeypatch.setattr(checks, "_SCANNED", {})
    result = demo.runpytest("checks", "--theorylab-claim", "demo.thm1", "--theorylab-claims-json", "c.json")
    result.assert_outcomes(passed=3, deselected=1)  # test_split.py: its marker spans lines, read and skipped
    assert parsed == ["test_split.py"]  # test_demo.py has `@pytest.mark.claim("demo.thm1", tier="exact")`
    assert json.loads((demo.path / "c.json").read_text())["unchecked"] == []  # demo.thm2: in test_split.py
    assert plugin._marker_lines(demo.path / "checks" / "test_demo.py") == (
        ("demo.thm1", "exact"),
        ("demo.thm1", "exact"),
        ("demo.thm1", "property"),
        ("demo.thm2", "exact"),
    )
    assert plugin._marker_lines(demo.path / "checks" / "missing.py") == ()
    # a named id is evidence for a tier filter only: the claim filter reads the file
    (demo.path / "checks" / "test_split.py").write_text(
        'import pytest\nC = "demo.thm2"\n@pytest.mark.claim(C, tier="exact")\ndef test_s():\n    pass\n'
    )
    parsed.clear()
    demo.runpytest("checks", "--theorylab-tier", "exact").assert_outcomes(passed=4, deselected=1)
    assert parsed == []
    demo.runpytest("checks", "--theorylab-claim", "demo.thm1").assert_outcomes(passed=3, deselected=1)
    assert parsed == ["test_split.py"]


def test_claim_table_counts_a_claim_whose_only_check_is_in_a_skipped_file(
    demo: pytest.Pytester, monkeypatch
) -> None:
    """The claim table's unchecked claims: those of the collected checks count, the skipped file is read (once,
    at collection), the collected file is not read."""
    from theorylab import pytest_plugin as plugin
    from theorylab.claims import checks

    (demo.path / "checks" / "test_demo.py").write_text(
        CHECKS.replace('"demo.thm2", tier="exact"', '"demo.thm1"')
    )
    (demo.path / "checks" / "test_only2.py").write_text(
        'import pytest\n@pytest.mark.claim("demo.thm2", tier="exact")\ndef test_t():\n    pass\n'
    )
    decoy = demo.mkdir("a_declared")  # a registry's check folder, sorted before checks/: read only if needed
    (decoy / "test_decoy.py").write_text(CHECKS.replace('"demo.thm2", tier="exact"', '"demo.thm1"'))
    monkeypatch.setattr(checks, "check_dirs", lambda: [decoy])
    parsed = []
    real = checks.parse_file
    monkeypatch.setattr(checks, "parse_file", lambda path: parsed.append(Path(path).name) or real(path))
    monkeypatch.setattr(plugin, "_STATIC", {})
    monkeypatch.setattr(checks, "_SCANNED", {})
    demo.runpytest("checks", "--theorylab-tier", "property", "--theorylab-claims-json", "c.json")
    assert json.loads((demo.path / "c.json").read_text())["unchecked"] == []
    assert parsed == ["test_only2.py"]
    (demo.path / "checks" / "test_only2.py").unlink()
    demo.runpytest("checks", "--theorylab-tier", "property", "--theorylab-claims-json", "c.json")
    assert json.loads((demo.path / "c.json").read_text())["unchecked"] == ["demo.thm2"]
