"""The docs: generated pages from the registry, a page for every family, and the README's code runs."""

import importlib.util
import re
from pathlib import Path

import pytest

import theorylab.claims as claims

ROOT = Path(__file__).parents[1]


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


def test_every_family_has_a_docs_page_in_the_nav() -> None:
    nav = (ROOT / "mkdocs.yml").read_text()
    for name, fam in claims.families().items():
        assert fam.docs, f"family {name} names no docs page"
        assert (ROOT / "docs" / fam.docs).is_file(), f"docs/{fam.docs} missing"
        assert fam.docs in nav, f"docs/{fam.docs} not in the mkdocs nav"


def test_readme_python_example_runs() -> None:
    blocks = re.findall(r"```python\n(.*?)```", (ROOT / "README.md").read_text(), flags=re.DOTALL)
    assert blocks
    for block in blocks:
        exec(compile(block, "README.md", "exec"), {})
