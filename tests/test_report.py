"""The HTML report renders statements like the docs (TeX to MathML, offline), names each claim's title and
document, links the table to the statements; ``theorylab claims`` fits the terminal and exports JSON/CSV."""

from __future__ import annotations

import csv
import io
import json
import sys
from pathlib import Path

import pytest

from theorylab.cli import _fit_table, main
from theorylab.report import render_report, tex_html

DEMO = Path(__file__).parent / "data"


@pytest.fixture
def demo_registry(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("THEORYLAB_CLAIMS_PATH", str(DEMO))


def _payload(tmp_path: Path) -> Path:
    payload = {
        "meta": {"seed": 1, "device": "cpu", "scale": "small", "tiers": ["exact"], "seconds": 1.0},
        "claims": {
            cid: {
                "status": status,
                "family": "demo",
                "seconds": 0.1,
                "tiers": {"exact": {"passed": 1, "failed": 0, "skipped": 0, "controls": 1}},
                "measures": {},
            }
            for cid, status in (("demo.thm1", "holds"), ("demo.thm2", "holds-corrected"))
        },
        "unchecked": [],
    }
    path = tmp_path / "claims.json"
    path.write_text(json.dumps(payload))
    return path


def test_html_report_math_titles_documents_links(demo_registry, tmp_path):
    html = render_report(_payload(tmp_path), tmp_path / "r.html")
    # statements are MathML (as in the docs), not raw TeX
    assert "<math" in html and "$a + b = b + a$" not in html and "$n^2" not in html
    # titles and documents in the table; each claim id links to its statement block
    assert "<th>title</th><th>document</th>" in html and "Addition of integers commutes" in html
    assert "<a href='#claim-demo.thm2'>demo.thm2</a>" in html and "<section id='claim-demo.thm2'>" in html
    assert "B. Liu, PhD thesis" in html and "(001_6a230b9a9faf2198.txt), Theorem 2, §1.2" in html
    assert "padding:0 2em" in html and "<meta name='viewport'" in html  # margins on any screen width
    assert "http" not in html  # still one offline file


def test_math_falls_back_to_tex_without_latex2mathml(monkeypatch):
    monkeypatch.setitem(sys.modules, "latex2mathml", None)  # import fails
    monkeypatch.setitem(sys.modules, "latex2mathml.converter", None)
    assert tex_html("if $a<b$ then") == "if <code>$a&lt;b$</code> then"


def test_tex_html_escapes_text_and_renders_display_math():
    out = tex_html("x < y and $$\\frac{1}{2}$$")
    assert out.startswith("x &lt; y and <math") and 'display="block"' in out and "<mfrac>" in out


def test_markdown_report_links_to_statements(demo_registry, tmp_path):
    md = render_report(_payload(tmp_path))
    assert (
        "| [demo.thm1](#claim-demo.thm1) | Addition of integers commutes | B. Liu, PhD thesis | holds |" in md
    )
    assert '### <a id="claim-demo.thm2"></a>demo.thm2: Squares are at most their doubles' in md


def test_claims_table_fits_the_width_and_says_what_it_left_out():
    header = ["claim", "document", "title", "source", "tiers", "status", "provenance", "tightness"]
    row = ["fam.a_long_claim_id", "Some Author", "T" * 70, "Theorem 1 (§2.1)", "exact, property", "holds"]
    rows = [row + ["printed", "loose by 2x"], row[:4] + ["trained", "open", "reconstructed", "-"]]
    wide = _fit_table(header, rows, width=200)
    assert (
        all(len(line) <= 200 for line in wide) and "T" * 57 + "..." in wide[2] and "not shown" not in wide[-1]
    )
    narrow = _fit_table(header, rows, width=90)
    assert all(len(line) <= 90 for line in narrow)
    assert "EP " in narrow[2] and "tightness" not in narrow[0] and "not shown" in " ".join(narrow[-2:])


def test_claims_formats_and_unchecked_count(demo_registry, capsys, tmp_path):
    assert main(["claims", "--checks-dir", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert (
        "document" in out.splitlines()[0] and "3 with no check found: demo.open1, demo.thm1, demo.thm2" in out
    )
    assert main(["claims", "--format", "json"]) == 0
    items = json.loads(capsys.readouterr().out)
    assert [i["id"] for i in items] == ["demo.open1", "demo.thm1", "demo.thm2"]
    assert items[2]["document_title"].startswith("B. Liu") and items[2]["erratum"] is True
    assert main(["claims", "--format", "csv", "--status", "open"]) == 0
    rows = list(csv.DictReader(io.StringIO(capsys.readouterr().out)))
    assert len(rows) == 1 and rows[0]["id"] == "demo.open1" and rows[0]["checks"] == "0"


def test_claims_show_lists_figures_and_artifacts(demo_registry, capsys, tmp_path):
    checks = tmp_path / "checks"
    checks.mkdir()
    (checks / "test_demo.py").write_text(
        "import pytest\n\n@pytest.mark.claim('demo.thm1', tier='exact')\n"
        "def test_plot(figure):\n    figure(object(), 'commutator_heatmap')\n"
    )
    arts = tmp_path / "artifacts"
    (arts / "demo.thm1").mkdir(parents=True)
    (arts / "demo.thm1" / "commutator_heatmap.png").write_bytes(b"png")
    assert (
        main(["claims", "show", "demo.thm1", "--checks-dir", str(checks), "--artifacts-dir", str(arts)]) == 0
    )
    out = capsys.readouterr().out
    assert "figures (1):\n  commutator_heatmap.png  drawn by test_demo.py::test_plot (line 5)" in out
    assert "artifacts in" in out and "commutator_heatmap.png" in out.split("artifacts in", 1)[1]
    assert (
        main(["claims", "show", "demo.thm2", "--checks-dir", str(checks), "--artifacts-dir", str(arts)]) == 0
    )
    out = capsys.readouterr().out
    assert "figures: none drawn by its checks" in out and "artifacts: none in" in out
