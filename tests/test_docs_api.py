"""The API page shows source-like signatures and readable docstrings: no run-time values (function addresses,
numpy reprs), no raw Sphinx roles, no dataclass signature repeated as its docstring; the site does not ship the
build's hook or its measured numbers."""

from __future__ import annotations

import importlib.util
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _hooks():
    spec = importlib.util.spec_from_file_location("docs_hooks_api", ROOT / "docs" / "hooks.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_api_page_shows_no_run_time_values_or_roles():
    hooks = _hooks()
    out = "\n".join(
        hooks._api_md(m)
        for m in (
            "theorylab.claims",
            "theorylab.estimation.nce",
            "theorylab.instruments",
            "theorylab.algebra",
        )
    )
    assert " at 0x" not in out and "np.float64(" not in out
    assert ":func:`" not in out and ":class:`" not in out and ":meth:`" not in out
    assert "stats: 'Callable[[Array], Array]' = gaussian_stats)" in out  # a function default by name
    assert "rtol: 'float' = 8.881784197001252e-16" in out  # a numpy default as a number
    # frozen dataclasses without their own docstring: the signature once, no generated repeat
    claim = out.split("#### `Claim(", 1)[1].split("####", 1)[0]
    assert "```text\nClaim(" not in claim


def test_site_excludes_build_inputs():
    text = (ROOT / "mkdocs.yml").read_text(encoding="utf-8")
    block = text.split("exclude_docs: |", 1)[1].split("\n\n", 1)[0]
    assert "hooks.py" in block and "measured.json" in block
