"""mkdocs hook: fills the generated parts of the docs from the claim registry and the package docstrings, and
renders the math at build time (TeX -> MathML with latex2mathml), so the site needs no script or CDN: it renders
offline in any current browser.

Placeholders (HTML comments, alone on a line):
    <!-- theorylab:claims -->          the claim table, grouped by family
    <!-- theorylab:errata -->          every holds-corrected / refuted claim: printed, corrected, counterexample
    <!-- theorylab:api MODULE -->      public names of MODULE with signatures and docstrings
    <!-- theorylab:coverage -->        numbered statements and experiments of each document against the records

Numbers quoted inline as ``{{ run(CLAIM, NAME, FORMAT) }}`` are filled from ``docs/measured.json``, the values a
run of the checks recorded (``scripts/quoted_numbers.py``; ``theorylab.claims.quoted``).
"""

from __future__ import annotations

import dataclasses
import importlib
import inspect
import re
from pathlib import Path

from theorylab import claims
from theorylab.claims import quoted
from theorylab.report import REGISTRY_HEADER, Section, errata_sections, registry_rows, to_markdown

_PLACEHOLDER = re.compile(r"^<!-- theorylab:(\w+)\s*([\w.]*)\s*-->$", re.MULTILINE)


def _claims_md() -> str:
    fams = claims.families()
    sections = []
    for name in sorted(fams):
        records = [c for c in claims.all() if c.family == name]
        rows = registry_rows(records)
        if fams[name].docs:
            rows = [[r[0], f"[{r[1]}]({fams[name].docs})", *r[2:]] for r in rows]
        sections.append(Section(f"{fams[name].title} (`{name}`)", REGISTRY_HEADER, rows))
    counts = {s: sum(c.status == s for c in claims.all()) for s in claims.STATUSES}
    summary = f"{len(claims.all())} claims: " + ", ".join(f"{n} {s}" for s, n in counts.items()) + ".\n\n"
    return summary + to_markdown(None, sections)


def errata_count_line(records) -> str:
    """The errata page's count: records with an erratum, split by kind (statement / proof)."""
    kinds = [c.erratum.kind for c in records if c.erratum is not None]
    return (
        f"{len(kinds)} errata: {kinds.count('statement')} statement errata and {kinds.count('proof')} proof "
        f"errata, over {len(records)} claims.\n\n"
    )


def _errata_md() -> str:
    sections = errata_sections(claims.all())
    if not sections:
        return "No errata are recorded yet.\n"
    return errata_count_line(claims.all()) + to_markdown(None, sections)


_ROLE = re.compile(r":(?:py:)?(?:func|class|meth|mod|attr|data|obj|exc|const):`~?([^`]+)`")
_LITERAL = re.compile(r"``([^`]+)``")


def _plain_doc(doc: str) -> str:
    """A docstring for a text block: Sphinx roles (``:func:`x```) and double-backtick literals shown as the bare
    name."""
    return _LITERAL.sub(r"\1", _ROLE.sub(r"\1", doc))


def _default_text(value) -> str:
    """A parameter default as source-like text: functions and classes by name, numbers plainly; reprs that show a
    memory address are replaced by the type name."""
    from theorylab._fmt import plain

    if inspect.isfunction(value) or inspect.isclass(value) or inspect.isbuiltin(value):
        return value.__qualname__
    text = plain(value)
    return f"<{type(value).__name__}>" if " at 0x" in text else text


def _signature(obj) -> str:
    try:
        sig = inspect.signature(obj)
    except (TypeError, ValueError):
        return "(...)"
    params = [
        p.replace(default=_Shown(_default_text(p.default))) if p.default is not inspect.Parameter.empty else p
        for p in sig.parameters.values()
    ]
    return str(sig.replace(parameters=params))


class _Shown:
    """A default value printed as given text in a signature."""

    def __init__(self, text: str):
        self.text = text

    def __repr__(self) -> str:
        return self.text


def _docstring(obj, name: str) -> str:
    """The object's own docstring; a dataclass's generated ``Name(field: type, ...)`` (a repeat of the signature)
    counts as none."""
    doc = inspect.getdoc(obj) or ""
    if inspect.isclass(obj) and dataclasses.is_dataclass(obj) and doc.startswith(f"{obj.__name__}("):
        return ""
    return _plain_doc(doc)


def _api_md(module_name: str) -> str:
    module = importlib.import_module(module_name)
    names = getattr(module, "__all__", None) or [n for n in dir(module) if not n.startswith("_")]
    out = [f"### `{module_name}`", "", _plain_doc(inspect.getdoc(module) or ""), ""]
    for name in names:
        obj = getattr(module, name, None)
        if obj is None or inspect.ismodule(obj) or not (inspect.isclass(obj) or callable(obj)):
            continue
        if not getattr(obj, "__module__", "").startswith("theorylab"):
            continue  # re-exported third-party names (numpy, hypothesis, ...)
        doc = _docstring(obj, name)
        out += [f"#### `{name}{_signature(obj)}`", ""]
        out += ["```text", doc, "```", ""] if doc else [""]
    return "\n".join(out)


_MATH = re.compile(
    r'<span class="arithmatex">\\\((?P<inline>.*?)\\\)</span>|<div class="arithmatex">\\\[(?P<display>.*?)\\\]</div>',
    re.DOTALL,
)


def render_math(page_html: str) -> str:
    """Replace pymdownx.arithmatex's ``\\(...\\)`` / ``\\[...\\]`` spans by MathML (display math as blocks)."""
    import html

    from latex2mathml.converter import convert

    def mathml(match: re.Match) -> str:
        display = match.group("display") is not None
        tex = html.unescape(match.group("display") if display else match.group("inline"))
        return convert(tex, display="block" if display else "inline")

    return _MATH.sub(mathml, page_html)


def on_post_page(output: str, page, config) -> str:
    return render_math(output)


def on_page_markdown(markdown: str, page, config, files) -> str:
    def fill(match: re.Match) -> str:
        kind, arg = match.group(1), match.group(2)
        if kind == "claims":
            return _claims_md()
        if kind == "errata":
            return _errata_md()
        if kind == "api":
            return _api_md(arg)
        if kind == "coverage":
            from theorylab.claims.coverage import coverage_markdown

            return coverage_markdown()
        raise ValueError(f"unknown theorylab placeholder {kind!r} in {page.file.src_path}")

    markdown = _PLACEHOLDER.sub(fill, markdown)
    if quoted.quotes(markdown):
        measured = quoted.load(Path(__file__).with_name("measured.json"))
        markdown = quoted.fill(markdown, measured, where=page.file.src_path)
    return markdown
