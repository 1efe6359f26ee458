"""The command line, the counterexample registry and the report renderer."""

import json
from pathlib import Path

import numpy as np
import pytest

from theorylab import counterexamples
from theorylab.cli import main
from theorylab.report import render_report

DEMO = Path(__file__).parent / "data"


@pytest.fixture
def demo_registry(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("THEORYLAB_CLAIMS_PATH", str(DEMO))


def test_claims_table_and_filters(demo_registry, capsys: pytest.CaptureFixture, monkeypatch) -> None:
    monkeypatch.setenv("COLUMNS", "200")  # a known width: the table drops columns to fit narrower terminals
    assert main(["claims"]) == 0
    out = capsys.readouterr().out
    assert "demo.thm1" in out and "3 claims: 1 holds, 1 holds-corrected, 0 refuted, 1 open" in out
    assert main(["claims", "--status", "holds-corrected", "--format", "markdown"]) == 0
    out = capsys.readouterr().out
    assert "| demo.thm2 |" in out and "demo.thm1" not in out
    assert main(["claims", "--family", "nope"]) == 2
    capsys.readouterr()
    assert main(["claims", "--provenance", "reconstructed"]) == 0
    out = capsys.readouterr().out
    assert "demo.open1" in out and "demo.thm1" not in out and "reconstructed" in out


def test_claims_show(demo_registry, capsys: pytest.CaptureFixture, tmp_path: Path) -> None:
    checks = tmp_path / "checks"
    checks.mkdir()
    (checks / "test_demo.py").write_text(
        "import pytest\n\n@pytest.mark.claim('demo.thm2', tier='exact', control=True)\ndef test_c():\n    pass\n"
    )
    assert main(["claims", "show", "demo.thm2", "--checks-dir", str(checks)]) == 0
    out = capsys.readouterr().out
    assert "corrected: n^2 <= 2n for n in {0, 1, 2}" in out and "[exact, control]" in out and "test_c" in out
    assert main(["claims", "show", "demo.thm9"]) == 2
    assert "did you mean" in capsys.readouterr().err
    assert main(["claims", "show", "demo.thm2", "--checks-dir", str(tmp_path / "nope")]) == 2


def test_counterexample_registry_roundtrip(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    @counterexamples.register("demo.thm2", "n = 3 violates n^2 <= 2n")
    def demo_counterexample() -> dict[str, np.ndarray]:
        return {"n": np.array(3), "lhs": np.array(9), "rhs": np.array(6)}

    try:
        assert main(["counterexample"]) == 0
        assert "demo.thm2" in capsys.readouterr().out
        out = tmp_path / "c.npz"
        assert main(["counterexample", "demo.thm2", "--out", str(out)]) == 0
        with np.load(out) as data:
            assert int(data["lhs"]) > int(data["rhs"]) and str(data["_generator"]) == "demo.thm2"
        assert main(["counterexample", "demo.nope"]) == 2
        with pytest.raises(ValueError, match="registered twice"):
            counterexamples.register("demo.thm2", "other")(lambda: {})
    finally:
        counterexamples._REGISTRY.pop("demo.thm2", None)


def test_every_shipped_generator_produces_arrays() -> None:
    for gid in counterexamples.available():
        arrays = counterexamples.generate(gid)
        assert arrays and all(isinstance(v, np.ndarray) for v in arrays.values()), gid


def test_report_markdown_and_html(demo_registry, tmp_path: Path) -> None:
    payload = {
        "meta": {"seed": 1, "device": "cpu", "scale": "small", "tiers": ["exact"], "seconds": 1.5},
        "claims": {
            "demo.thm1": {
                "status": "holds",
                "family": "demo",
                "seconds": 0.2,
                "tiers": {"exact": {"passed": 2, "failed": 0, "skipped": 0, "controls": 1}},
                "measures": {"worst_error": 1.5e-13, "figure:pattern": str(tmp_path / "f.png")},
            },
            "demo.thm2": {
                "status": "holds-corrected",
                "family": "demo",
                "seconds": 0.1,
                "tiers": {"exact": {"passed": 0, "failed": 1, "skipped": 0, "controls": 0}},
                "measures": {},
            },
        },
        "unchecked": [],
    }
    path = tmp_path / "claims.json"
    path.write_text(json.dumps(payload))
    md = render_report(path)
    assert "| holds | exact | 2 | 0 | 0 | 1 | 0.2s | ok |" in md and "| [demo.thm1](#claim-demo.thm1) |" in md
    assert (
        "| [demo.thm2](#claim-demo.thm2) |" in md
        and "FAIL" in md
        and "1.5e-13" in md
        and "![demo.thm1: pattern](" in md
    )
    (tmp_path / "f.png").write_bytes(b"\x89PNG\r\n\x1a\n fake image bytes")
    html = render_report(path, tmp_path / "r.html")
    assert (tmp_path / "r.html").read_text() == html and "<table>" in html and "class='FAIL'" in html
    # self-contained: the figure is embedded, statements and errata are shown
    assert "src='data:image/png;base64," in html and "src='/" not in html and "http" not in html
    assert "Statements and errata" in html and "n^2 &lt;= 2n for n in {0, 1, 2}" in html
    with pytest.raises(ValueError, match="unknown report format"):
        render_report(path, fmt="pdf")
    _renders_in_chromium(tmp_path / "r.html", tmp_path / "shots")


def _renders_in_chromium(page: Path, out: Path) -> None:
    """The report in headless chromium, offline (scripts/check_docs_render.py): a screenshot, no raw TeX visible.
    Skipped where chromium is not installed (apt-get install -y chromium)."""
    import shutil
    import subprocess
    import sys

    if not any(shutil.which(b) for b in ("chromium", "chromium-browser", "google-chrome")):
        return
    script = Path(__file__).resolve().parents[1] / "scripts" / "check_docs_render.py"
    done = subprocess.run([sys.executable, str(script), str(page), str(out)], capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr
    assert (out / f"{page.stem}.png").is_file() and "rendered as MathML" in done.stdout


def test_every_generator_id_is_a_claim_id() -> None:
    ids = {c.id for c in __import__("theorylab.claims", fromlist=["all"]).all()}
    assert sorted(set(counterexamples.available()) - ids) == []


def run_cli(*args: str) -> tuple[int, str, str]:
    import subprocess
    import sys

    out = subprocess.run([sys.executable, "-m", "theorylab", *args], capture_output=True, text=True)
    return out.returncode, out.stdout, out.stderr


def test_version_and_python_m() -> None:
    from importlib import metadata

    code, out, _ = run_cli("--version")
    assert code == 0 and out.strip() == f"theorylab {metadata.version('theorylab')}"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["report", "missing.json"], "no such claims file: 'missing.json'"),
        (["report", "{json}", "--out", "nope/r.html"], "output folder 'nope' does not exist"),
        (["report", "{json}", "--out", "r.pdf"], "unknown output suffix '.pdf'"),
        (["report", "{bad}"], "not a --claims-json file"),
        (["counterexample", "dyck.thm1"], "dyck.thm1_balance_sufficiency?)"),
        (["counterexample", "hmm.thm4", "--out", "nope/x.npz"], "output folder 'nope' does not exist"),
        (["claims", "show", "hmm.thm77"], "unknown claim 'hmm.thm77' (did you mean"),
        (["claims", "--family", "hmmm"], "unknown family 'hmmm' (did you mean hmm?)"),
        (["claims", "frobnicate"], "unknown claims action 'frobnicate'"),
    ],
)
def test_errors_are_one_line_with_exit_status_2(args, message, tmp_path: Path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "c.json").write_text(json.dumps({"meta": {}, "claims": {}}))
    (tmp_path / "bad.json").write_text("{not json")
    args = [a.replace("{json}", "c.json").replace("{bad}", "bad.json") for a in args]
    code, out, err = run_cli(*args)
    assert code == 2, (out, err)
    assert err.count("\n") == 1 and err.startswith("theorylab: error: ") and message in err, err
    assert "Traceback" not in err


USER_TOML = """
family = "mylemma"
title = "My paper's lemmas"
checks = "checks"
documents = { "mypaper.pdf" = "Me: My Paper (2026)" }

[[claim]]
id = "mylemma.l1"
title = "Doubling is injective"
source = { document = "mypaper.pdf", numbering = "Lemma 1", section = "2" }
statement = "For all integers a, b: 2a = 2b implies a = b."
tiers = ["exact"]
status = "holds"
"""


def test_user_registry_with_its_own_document_and_checks(tmp_path: Path, monkeypatch, capsys) -> None:
    project = tmp_path / "project"
    (project / "checks").mkdir(parents=True)
    (project / "claims.toml").write_text(USER_TOML)
    (project / "checks" / "test_mine.py").write_text(
        "import pytest\n\n@pytest.mark.claim('mylemma.l1', tier='exact')\ndef test_l1():\n    pass\n"
    )
    monkeypatch.setenv("THEORYLAB_CLAIMS_PATH", str(project / "claims.toml"))
    monkeypatch.chdir(tmp_path)  # not the project: the checks are found through the registry's `checks` key
    assert main(["claims", "show", "mylemma.l1"]) == 0
    out = capsys.readouterr().out
    assert "mypaper.pdf (Me: My Paper (2026))" in out and "checks (1):" in out and "test_l1" in out
    assert main(["claims"]) == 0 and "mylemma.l1" in capsys.readouterr().out
    (project / "claims.toml").write_text(
        USER_TOML.replace('document = "mypaper.pdf"', 'document = "other.pdf"')
    )
    assert main(["claims"]) == 2
    err = capsys.readouterr().err
    assert "unknown source document 'other.pdf': declare it in the file's [documents] table" in err


def test_claims_show_finds_the_installed_checks(capsys, monkeypatch, tmp_path: Path) -> None:
    monkeypatch.chdir(tmp_path)  # outside the clone: no ./checks
    assert main(["claims", "show", "hmm.thm4"]) == 0
    out = capsys.readouterr().out
    assert "checks (" in out and "test_hmm.py" in out


def test_installed_wheel_runs_its_checks_outside_a_clone(tmp_path: Path) -> None:
    """Build the wheel, unpack it into a fresh folder put first on sys.path, and run from an unrelated folder:
    `claims show` lists the shipped checks and `theorylab check` runs them."""
    import os
    import subprocess
    import sys
    import zipfile

    root = Path(__file__).parents[1]
    wheels = tmp_path / "wheels"
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--no-deps",
            "--no-build-isolation",
            "-q",
            "-w",
            str(wheels),
            str(root),
        ],
        check=True,
        capture_output=True,
    )
    site = tmp_path / "site"
    with zipfile.ZipFile(next(wheels.glob("theorylab-*.whl"))) as whl:
        whl.extractall(site)
    assert (site / "theorylab_checks" / "test_hmm.py").is_file() and (
        site / "theorylab_checks" / "conftest.py"
    ).is_file()
    work = tmp_path / "elsewhere"
    work.mkdir()
    env = {**os.environ, "PYTHONPATH": str(site)}
    env.pop("THEORYLAB_CLAIMS_PATH", None)
    run = lambda *a: subprocess.run(
        [sys.executable, "-m", "theorylab", *a], cwd=work, env=env, capture_output=True, text=True
    )
    shown = run("claims", "show", "hmm.thm9")
    assert shown.returncode == 0 and str(site / "theorylab_checks" / "test_hmm.py") in shown.stdout
    checked = run("check", "--tier", "exact", "--claim", "hmm.thm9", "-p", "no:randomly")
    assert checked.returncode == 0, checked.stdout[-2000:] + checked.stderr[-2000:]
    assert "hmm.thm9" in checked.stdout and "2 passed" in checked.stdout
    assert (
        f"rootdir: {site / 'theorylab_checks'}" in checked.stdout
    )  # the installed checks ran, not the clone's
