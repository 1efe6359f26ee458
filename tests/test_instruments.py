"""Unit tests of theorylab.instruments: API behaviour, bad input, files, the CLI and the docs tutorial."""

from __future__ import annotations

import math
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import strategies as st

from theorylab.cli import main
from theorylab.instruments import (
    FORMAT_VERSION,
    Budget,
    Form,
    PredicateError,
    Proof,
    Step,
    fit_rate,
    read_counterexample,
    search_counterexample,
    tightness,
    tightness_verdict,
    verify_file,
    write_counterexample,
)

ROOT = Path(__file__).resolve().parents[1]


# --------------------------------------------------------------------------- search


def test_search_finds_and_shrinks_discrete():
    found = search_counterexample(lambda n: n < 1000, {"n": st.integers(0, 10**9)}, budget=100)
    assert found and found.parameters == {"n": 1000} and found.first_parameters["n"] >= 1000
    assert found.examples >= 1 and found.method == "hypothesis" and "n=1000" in str(found)


def test_search_single_strategy_positional():
    found = search_counterexample(lambda xs: sum(xs) < 10, st.lists(st.integers(0, 100)), budget=100)
    assert found and sum(found.parameters["x"]) == 10 and len(found.parameters["x"]) == 1


def test_search_reports_nothing_and_which_budget():
    none = search_counterexample(lambda n: n >= 0, {"n": st.integers(0, 10)}, budget=Budget(30, 10))
    assert not none and none.stopped_by == "examples" and none.examples <= 30
    assert "stopped by the examples budget" in str(none)


def test_search_continuous_rational_shrink():
    found = search_counterexample(
        lambda x, y: x + y < 1.2, space={"x": (0.0, 1.0), "y": (0.0, 1.0)}, budget=200, seed=3
    )
    assert found and found.parameters["x"] + found.parameters["y"] >= 1.2
    for v in found.parameters.values():  # short rationals
        assert any(abs(v * d - round(v * d)) < 1e-12 for d in (1, 2, 3, 4, 5, 10))


def test_search_continuous_margin_is_minimised():
    # margin 0.2 - (x - 0.7)^2 - ... > 0 almost everywhere; Nelder-Mead must walk to the small failing region
    found = search_counterexample(
        lambda x, y: math.hypot(x - 0.73, y - 0.21) - 0.01, space={"x": (0, 1), "y": (0, 1)}, budget=400
    )
    assert found and math.hypot(found.parameters["x"] - 0.73, found.parameters["y"] - 0.21) <= 0.01


def test_search_skips_instances_outside_hypotheses():
    found = search_counterexample(lambda n: None if n % 2 else n < 50, {"n": st.integers(0, 200)}, budget=200)
    assert found and found.parameters == {"n": 50}


def test_search_seed_reproducible():
    def run():
        return search_counterexample(lambda x: x < 0.9, space={"x": (0.0, 1.0)}, budget=100, seed=7)

    a, b = run(), run()
    assert a.parameters == b.parameters and a.first_parameters == b.first_parameters


def test_raising_predicate_shows_error_and_shrunk_instance():
    def pred(n):
        if n > 5:
            raise ZeroDivisionError("boom")
        return True

    with pytest.raises(PredicateError, match=r"ZeroDivisionError: boom on the instance \{n=6\}") as info:
        search_counterexample(pred, {"n": st.integers(0, 1000)}, budget=100)
    assert isinstance(info.value.__cause__, ZeroDivisionError) and info.value.instance == {"n": 6}


def test_raising_predicate_continuous():
    with pytest.raises(PredicateError, match=r"KeyError.*instance \{x="):
        search_counterexample(lambda x: {}["k"], space={"x": (0.0, 1.0)}, budget=10)


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"strategy": None}, TypeError, "exactly one of strategy"),
        ({"strategy": {"n": 3}}, TypeError, "must be hypothesis strategies"),
        ({"space": {"x": (1.0, 0.0)}}, ValueError, "finite low < high"),
        ({"space": {"x": "a"}}, TypeError, r"\(low, high\)"),
        ({"space": {"x": (0.0, 1.0)}, "budget": 0}, ValueError, "positive int"),
        ({"space": {"x": (0.0, 1.0)}, "budget": "many"}, TypeError, "budget must be"),
    ],
)
def test_search_bad_input(kwargs, error, match):
    with pytest.raises(error, match=match):
        search_counterexample(lambda x: True, **kwargs)


def test_budget_bad_input():
    with pytest.raises(ValueError, match="seconds must be a positive finite"):
        Budget(5, -1.0)
    with pytest.raises(ValueError, match="shrink_seconds"):
        Budget(5, 1.0, shrink_seconds=math.inf)


def test_predicate_bad_return_values():
    with pytest.raises(TypeError, match="must return a bool"):
        search_counterexample(lambda x: "yes", space={"x": (0.0, 1.0)}, budget=5)
    with pytest.raises(ValueError, match="NaN margin"):
        search_counterexample(lambda x: float("nan"), space={"x": (0.0, 1.0)}, budget=5)


# --------------------------------------------------------------------------- tightness


def test_tightness_verdicts():
    assert tightness_verdict(1.0) == "tight (attained)"
    assert tightness_verdict(0.99995) == "tight to 4 digits"
    assert tightness_verdict(0.2) == "loose by 5x"
    assert tightness_verdict(1.001) == "violated"
    assert tightness_verdict(-0.5).startswith("loose (")


def test_tightness_continuous_finds_max():
    # x(1-x) <= 1/4 is attained at x = 1/2
    t = tightness(lambda x: x * (1 - x), lambda x: 0.25, space={"x": (0.0, 1.0)}, budget=200, rtol=1e-9)
    assert t.verdict == "tight (attained)" and abs(t.instance["x"] - 0.5) < 1e-4
    loose = tightness(lambda x: x * (1 - x), lambda x: 1.0, space={"x": (0.0, 1.0)}, budget=200, rtol=1e-9)
    assert loose.verdict == "loose by 4x"


def test_tightness_gap_mode():
    t = tightness(lambda x: x, lambda x: 1.0, space={"x": (0.0, 2.0)}, mode="gap", budget=50)
    assert t.verdict == "violated" and t.best > 0.9


def test_tightness_bad_input():
    with pytest.raises(ValueError, match="non-finite ratio|non-finite side"):
        tightness(lambda n: math.inf, lambda n: 1.0, {"n": st.integers(1, 5)}, budget=10)
    with pytest.raises(ValueError, match=r"needs rhs > 0, got rhs = 0.0 at \{n="):
        tightness(lambda n: 1.0, lambda n: 0.0, {"n": st.integers(1, 5)}, budget=10)
    with pytest.raises(ValueError, match="non-finite"):
        tightness(lambda x: float("nan"), lambda x: 1.0, space={"x": (0.0, 1.0)}, budget=10)
    with pytest.raises(ValueError, match="mode must be"):
        tightness(lambda x: 1, lambda x: 1, space={"x": (0.0, 1.0)}, mode="ratios")
    with pytest.raises(PredicateError, match="RuntimeError: no"):
        tightness(lambda x: (_ for _ in ()).throw(RuntimeError("no")), lambda x: 1, space={"x": (0.0, 1.0)})


# --------------------------------------------------------------------------- fit_rate


def test_fit_rate_forms():
    x = np.linspace(1, 10, 12)
    assert abs(fit_rate(x, 2 * 1.5**x, "a*b^x").estimate - 1.5) < 1e-9
    assert abs(fit_rate(x, 3 * np.exp(-0.7 * x), "a*exp(-b*x)").estimate - 0.7) < 1e-9
    g = fit_rate(x, 2 * x**0.5 * np.exp(-0.01 * x**2), "a*x^b*exp(-c*x^2)", printed=0.5)
    assert g.consistent and abs(g.params["c"] - 0.01) < 1e-9
    xs = np.geomspace(1e-4, 1e-1, 8)
    h = fit_rate(xs, 5 * xs**-1 * (1 + 0.3 * xs), "a*x^b*(1+c*x)", printed=-1.0)
    assert h.consistent and abs(h.params["c"] - 0.3) < 1e-6
    custom = Form("a*(x+c)^b", ("a", "b", "c"), lambda x, a, b, c: a * (x + c) ** b, "b")
    assert abs(fit_rate(x, 2 * (x + 1.0) ** -2, custom).estimate + 2) < 1e-5


def test_fit_rate_bootstrap_is_seeded():
    rng = np.random.default_rng(1)
    x = np.geomspace(1, 100, 15)
    y = x**-0.5 * np.exp(rng.normal(0, 0.1, x.size))
    assert fit_rate(x, y, "a*x^b", seed=3).interval == fit_rate(x, y, "a*x^b", seed=3).interval


@pytest.mark.parametrize(
    ("xs", "ys", "form", "match"),
    [
        ([1, 2], [1, 2], "a*x^b", "2 parameters but there are only 2 distinct x"),
        ([1, 2, 3], [1, 2, 3], "a*x^b*exp(-c*x^2)", "3 parameters but there are only 3 distinct"),
        ([1, 2, 3], [1, 0, 3], "a*x^b", "needs ys > 0"),
        ([1, 2, np.nan], [1, 2, 3], "a*x^b", "finite"),
        ([0, 2, 3], [1, 2, 3], "a*x^b", "needs xs > 0"),
        ([1, 2, 3], [1, 2], "a*x^b", "equal length"),
        ([1, 2, 3], [1, 2, 3], "x^k", "unknown form"),
    ],
)
def test_fit_rate_bad_input(xs, ys, form, match):
    with pytest.raises(ValueError, match=match):
        fit_rate(xs, ys, form)


# --------------------------------------------------------------------------- Proof


def test_proof_reports_first_failing_step_exactly():
    from fractions import Fraction

    proof = Proof(
        [
            Step("expand", lambda n: (n + 1) ** 2, lambda n: n * n + 2 * n + 1, "=="),
            Step("AM-GM", lambda n: Fraction(n + 1, 2), lambda n: Fraction(n * (n + 1)) ** 0, ">="),
            Step("bogus", lambda n: n * n, lambda n: 10 * n, "<="),
        ]
    )
    report = proof.check({"n": st.integers(1, 10**6)}, budget=100)
    assert report.first_failure == (2, "bogus") and report.counterexample.parameters == {"n": 11}
    assert "step 3 (bogus) fails" in str(report)
    assert [r[3] for r in proof.evaluate(n=11)] == [True, True, False]


def test_proof_bad_input():
    with pytest.raises(ValueError, match="at least one Step"):
        Proof([])
    with pytest.raises(TypeError, match="list of Step"):
        Proof([("a", 1, 2)])
    with pytest.raises(ValueError, match="unknown relation"):
        Step("s", lambda: 1, lambda: 1, "=<")
    with pytest.raises(ValueError, match="distinct"):
        Proof([Step("s", lambda: 1, lambda: 1), Step("s", lambda: 1, lambda: 1)])
    with pytest.raises(ValueError, match="tol"):
        Step("s", lambda: 1, lambda: 1, "<=", tol=-1)


# --------------------------------------------------------------------------- files and CLI


def test_file_roundtrip_and_version(tmp_path):
    p = write_counterexample(
        tmp_path / "x",
        {"a": np.arange(3)},
        claim="c.x",
        statement="s",
        parameters={"n": np.int64(3), "v": [1]},
    )
    meta, arrays = read_counterexample(p)
    assert p.suffix == ".npz" and meta["format_version"] == FORMAT_VERSION
    assert meta["claim"] == "c.x" and meta["parameters"] == {"n": 3} and list(arrays) == ["a"]
    with pytest.raises(ValueError, match="reserved"):
        write_counterexample(tmp_path / "y", {"_claim": 1}, claim="c", statement="s")
    np.savez(tmp_path / "plain.npz", a=np.zeros(2))
    with pytest.raises(ValueError, match="not a theorylab counterexample"):
        read_counterexample(tmp_path / "plain.npz")
    np.savez(tmp_path / "future.npz", a=np.zeros(2), _claim="c", _format_version=99)
    with pytest.raises(ValueError, match="newer"):
        read_counterexample(tmp_path / "future.npz")


def test_cli_counterexample_files_are_self_describing_and_verify(tmp_path, capsys):
    out = tmp_path / "l7.npz"
    assert main(["counterexample", "hmm.lemma7", "--out", str(out)]) == 0
    meta, _ = read_counterexample(out)
    assert meta["claim"] == "hmm.lemma7" and meta["format_version"] == FORMAT_VERSION
    assert "M~ = M or M~ = HM" in meta["statement"]
    capsys.readouterr()
    assert main(["verify", str(out)]) == 0
    assert "FAILS" in capsys.readouterr().out


def test_cli_verify_exit_codes(tmp_path, capsys):
    from theorylab.hmm.constructions import householder, random_unit_means

    M = random_unit_means(3, 3, np.random.default_rng(0))
    holds = write_counterexample(
        tmp_path / "h", {"M": M, "M_tilde": householder(M) @ M}, claim="hmm.lemma7", statement="s"
    )
    assert main(["verify", str(holds)]) == 1 and "HOLDS" in capsys.readouterr().out
    assert main(["verify", str(tmp_path / "missing.npz")]) == 2
    assert "no such counterexample file" in capsys.readouterr().err
    nover = write_counterexample(tmp_path / "n", {"a": 1}, claim="hmm.thm5", statement="s")
    assert main(["verify", str(nover)]) == 2 and "no refutation registered" in capsys.readouterr().err
    lacking = write_counterexample(tmp_path / "l", {"a": 1}, claim="hmm.thm4", statement="s")
    assert main(["verify", str(lacking)]) == 2 and "lacks the arrays" in capsys.readouterr().err
    broken = write_counterexample(tmp_path / "b", {"M": M}, claim="hmm.lemma7", statement="s")
    assert main(["verify", str(broken)]) == 2 and "lacks the arrays ['M_tilde']" in capsys.readouterr().err


def test_cli_search_writes_verifiable_file(tmp_path, capsys):
    out = tmp_path / "c1.npz"
    assert main(["search", "topic.thm2.1.2", "--out", str(out), "--max-examples", "100"]) == 0
    assert "wrote" in capsys.readouterr().out
    assert verify_file(out).fails
    assert main(["search"]) == 0 and "hmm.lemma7" in capsys.readouterr().out
    assert main(["search", "hmm.lemma", "--max-examples", "5"]) == 2
    assert "did you mean hmm.lemma7" in capsys.readouterr().err


def test_cli_search_reports_budget_stop(capsys):
    rc = main(["search", "topic.thm2.1.2", "--max-examples", "1", "--seed", "1"])
    text = capsys.readouterr().out
    assert (rc == 1 and "stopped by the examples budget" in text) or (rc == 0 and "wrote" in text)


def test_claims_table_has_tightness_column(capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "200")  # a known width: the table drops columns to fit narrower terminals
    assert main(["claims", "--family", "topic"]) == 0
    out = capsys.readouterr().out
    assert "tightness" in out.splitlines()[0] and "loose by 1.56x" in out


# --------------------------------------------------------------------------- the docs tutorial


def _tutorial_blocks() -> list[tuple[str, str]]:
    text = (ROOT / "docs" / "instruments.md").read_text(encoding="utf-8")
    section = text.split("## Continuing the tutorial", 1)[1]
    return re.findall(r"```(\w+)\n(.*?)```", section, flags=re.S)


def test_tutorial_runs_end_to_end(tmp_path, monkeypatch, capsys):
    blocks = _tutorial_blocks()
    assert [lang for lang, _ in blocks] == ["toml", "python", "bash", "python", "python", "python"]
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("THEORYLAB_CLAIMS_PATH", "myclaims")
    namespace: dict = {}
    for lang, code in blocks:
        first = code.splitlines()[0]
        if lang == "toml":
            path = tmp_path / first.lstrip("# ").strip()
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(code, encoding="utf-8")
        elif lang == "python" and first.startswith("# file: "):
            (tmp_path / first[len("# file: ") :].strip()).write_text(code, encoding="utf-8")
        elif lang == "bash":
            cmd = code.strip().split()
            assert cmd[0] == "pytest"
            env = {**os.environ, "THEORYLAB_CLAIMS_PATH": "myclaims"}
            run = subprocess.run(
                [sys.executable, "-m", *cmd, "-p", "no:cacheprovider"],
                cwd=tmp_path,
                env=env,
                capture_output=True,
                text=True,
                timeout=300,
            )
            assert run.returncode == 0, run.stdout + run.stderr
            assert "2 passed" in run.stdout and "mylab.softmax_floor" in run.stdout
        else:
            exec(compile(code, "docs/instruments.md", "exec"), namespace)  # noqa: S102
    printed = capsys.readouterr().out
    assert "counterexample to 'min weight >= exp(-B)/n'" in printed and "tight to 4 digits" in printed


def test_instruments_modules_import_no_circle():
    """The static import graph of ``theorylab.instruments`` (lazy imports inside functions included) is acyclic:
    the refutation registry is a leaf that the providers import, and it loads them by name."""
    import ast
    from pathlib import Path

    import theorylab.instruments

    root = Path(theorylab.instruments.__file__).parent
    mods = {p.stem for p in root.glob("*.py") if p.stem != "__init__"}
    graph = {}
    for m in mods:
        deps = set()
        for node in ast.walk(ast.parse((root / f"{m}.py").read_text())):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("theorylab.instruments"):
                leaf = node.module.split(".")[2:3] or [a.name for a in node.names]
                deps |= {d for d in leaf if d in mods}
        graph[m] = deps - {m}

    def cycle_from(m, path):
        for d in graph[m]:
            if d in path:
                return path[path.index(d) :] + [d]
            found = cycle_from(d, path + [d])
            if found:
                return found
        return None

    cycles = [c for m in sorted(mods) if (c := cycle_from(m, [m]))]
    assert cycles == []
    from theorylab.instruments.files import refutations

    assert "hmm.lemma7" in refutations()  # the built-in providers are still registered
