"""The install's shape: a light core, one extra per heavy package (named by theorylab._extras), dev = everything,
and CITATION.cff in step with the package version."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

from theorylab._extras import EXTRAS

ROOT = Path(__file__).resolve().parents[1]
PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]


def _names(reqs: list[str]) -> set[str]:
    return {re.split(r"[<>=!\[ ;]", r, maxsplit=1)[0].lower() for r in reqs}


def test_core_is_light_and_extras_name_the_heavy_packages():
    core = _names(PROJECT["dependencies"])
    assert core == {"numpy", "scipy", "sympy", "mpmath"}
    extras = PROJECT["optional-dependencies"]
    for dist, extra in EXTRAS.values():
        assert dist.lower() in _names(extras[extra]), (dist, extra)
    assert extras["all"] == ["theorylab[trained,convex,tensors,plots,checks,docs]"]
    assert "theorylab[all]" in extras["dev"]  # `pip install -e .[dev]` (make, CI) still gets every dependency


def test_citation_matches_the_package_version():
    text = (ROOT / "CITATION.cff").read_text(encoding="utf-8")
    assert re.search(r'^version: "(.+)"$', text, flags=re.M).group(1) == PROJECT["version"]
    assert text.startswith("cff-version: 1.2.0")
