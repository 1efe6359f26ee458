"""The docs: generated pages from the registry, a page for every family, every code block of README.md and
docs/*.md runs (tests/docsnippets.py), and the tutorial runs end to end in a fresh folder."""

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import theorylab.claims as claims

ROOT = Path(__file__).parents[1]


def _load(name: str, path: Path):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


_snippets = _load("docsnippets", Path(__file__).parent / "docsnippets.py")
blocks, python_blocks, run_block = _snippets.blocks, _snippets.python_blocks, _snippets.run_block
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


def load_hooks():
    spec = importlib.util.spec_from_file_location("docs_hooks", ROOT / "docs" / "hooks.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class _Page:
    class file:
        src_path = "x.md"


def test_placeholders_are_filled_from_the_registry() -> None:
    hooks = load_hooks()
    table = hooks.on_page_markdown("# T\n\n<!-- theorylab:claims -->\n", _Page, None, None)
    for c in claims.all():
        assert f"| {c.id} |" in table
    errata = hooks.on_page_markdown("<!-- theorylab:errata -->", _Page, None, None)
    for c in claims.all():
        assert (f"## {c.id}" in errata) == (c.erratum is not None)
    api = hooks.on_page_markdown("<!-- theorylab:api theorylab.counterexamples -->", _Page, None, None)
    assert "#### `register(" in api
    with pytest.raises(ValueError, match="unknown theorylab placeholder"):
        hooks.on_page_markdown("<!-- theorylab:nope -->", _Page, None, None)


def test_errata_page_states_the_policy_and_its_count_matches_the_registry() -> None:
    import re

    hooks = load_hooks()
    page = hooks.on_page_markdown((ROOT / "docs" / "errata.md").read_text(), _Page, None, None)
    for kind in ("**erratum** (statement)", "**proof erratum**", "**proof repair**", "**note**"):
        assert kind in page
    match = re.search(r"(\d+) errata: (\d+) statement errata and (\d+) proof errata, over (\d+) claims", page)
    assert match, "the errata page states no count"
    total, statement, proof, records = map(int, match.groups())
    corrected = [c for c in claims.all() if c.status in ("holds-corrected", "refuted")]
    assert (total, records) == (len(corrected), len(claims.all()))
    assert statement + proof == total == page.count("\n## ") - page.count("\n## Policy")
    assert proof == sum(c.erratum.kind == "proof" for c in corrected)
    for c in corrected:  # a proof erratum says that the printed statement is not refuted
        assert c.erratum.kind == "statement" or "not refuted" in c.erratum.corrected, c.id


def test_every_family_has_a_docs_page_in_the_nav() -> None:
    nav = (ROOT / "mkdocs.yml").read_text()
    for name, fam in claims.families().items():
        assert fam.docs, f"family {name} names no docs page"
        assert (ROOT / "docs" / fam.docs).is_file(), f"docs/{fam.docs} missing"
        assert fam.docs in nav, f"docs/{fam.docs} not in the mkdocs nav"


@pytest.mark.parametrize("page", [p for p in PAGES if python_blocks(p)], ids=lambda p: p.name)
def test_every_python_block_runs(page: Path) -> None:
    namespace: dict = {}
    for line, code in python_blocks(page):
        run_block(code, f"{page.name}:{line}", namespace)


def test_expected_exceptions_are_checked() -> None:
    ns: dict = {}
    run_block("int('x')  # raises ValueError: not a number\n", "t", ns)
    with pytest.raises(AssertionError, match="did not raise"):
        run_block("int('1')  # raises ValueError\n", "t", ns)


def test_tutorial_runs_end_to_end(tmp_path: Path) -> None:
    """docs/tutorial.md: write its files, run its shell blocks (one shell, in order) in a fresh folder."""
    page = ROOT / "docs" / "tutorial.md"
    script = ["set -euo pipefail"]
    for _, lang, file, code in blocks(page):
        if file:
            (tmp_path / file).parent.mkdir(parents=True, exist_ok=True)
            (tmp_path / file).write_text(code)
        elif lang == "bash":
            script.append(code)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("THEORYLAB_", "PYTEST_"))}
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    out = subprocess.run(
        ["bash", "-c", "\n".join(script)], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600
    )
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    assert "mylemma.lemma1" in out.stdout and "Me and You: My Paper (2026)" in out.stdout
    assert "checks (3):" in out.stdout and "test_lemma1_control_row_stochastic_is_rejected" in out.stdout
    run = json.loads((tmp_path / "run.json").read_text())["claims"]["mylemma.lemma1"]
    assert run["tiers"]["exact"] == {"passed": 2, "failed": 0, "skipped": 0, "controls": 1}
    assert run["tiers"]["property"]["passed"] == 1 and run["measures"]["pairs_checked"] == 9
    report = (tmp_path / "report.html").read_text()
    assert "mylemma.lemma1" in report and "If <math" in report  # the statement's TeX rendered as MathML


def test_errata_text_is_literal_markdown_and_math_is_rendered() -> None:
    import markdown

    from theorylab.report import md_text

    printed = "psi(x) = ((x + Delta)/(2 Delta))_+ - ((x - Delta)/(2 Delta))_+"  # Lemma 12 as printed
    rendered = markdown.markdown(md_text(printed))
    assert "<em>" not in rendered and "(2 Delta))_+ - ((x" in rendered
    assert md_text("keep $a_1 * b$ math") == "keep $a_1 * b$ math"
    hooks = load_hooks()
    page = '<p><span class="arithmatex">\\(\\frac{a}{b} \\le 1\\)</span></p><div class="arithmatex">\\[x^2\\]</div>'
    out = hooks.render_math(page)
    assert "<math" in out and 'display="block"' in out and "\\(" not in out and "\\frac" not in out


def test_built_site_renders_offline_in_chromium(tmp_path: Path) -> None:
    """Build the site and run scripts/check_docs_render.py (needs chromium; skipped without it)."""
    import shutil

    if not any(shutil.which(b) for b in ("chromium", "chromium-browser", "google-chrome")):
        pytest.skip("chromium is not installed (apt-get install -y chromium)")
    site = tmp_path / "site"
    subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "-q", "--strict", "--site-dir", str(site)],
        cwd=ROOT,
        check=True,
    )
    out = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "check_docs_render.py"), str(site), str(tmp_path / "shots")],
        capture_output=True,
        text=True,
    )
    assert out.returncode == 0, out.stdout + out.stderr
    assert len(list((tmp_path / "shots").glob("*.png"))) == 3
