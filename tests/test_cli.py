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


def test_claims_table_and_filters(demo_registry, capsys: pytest.CaptureFixture) -> None:
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
    assert "| demo.thm1 | holds | exact | 2 | 0 | 0 | 1 | 0.2s | ok |" in md
    assert "| demo.thm2 |" in md and "FAIL" in md and "1.5e-13" in md and "![demo.thm1: pattern](" in md
    html = render_report(path, tmp_path / "r.html")
    assert (tmp_path / "r.html").read_text() == html and "<table>" in html and "class='FAIL'" in html
    with pytest.raises(ValueError, match="unknown report format"):
        render_report(path, fmt="pdf")
