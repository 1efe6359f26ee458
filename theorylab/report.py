"""Render claim tables and run reports as Markdown or HTML.

Used by the CLI (``theorylab claims``, ``theorylab report``) and by the docs build (generated claim table and
errata page).
"""

from __future__ import annotations

import html
import json
import os
import re
from dataclasses import dataclass, field
from pathlib import Path

from theorylab.claims.registry import TIERS, Claim, natural_key


@dataclass
class Entry:
    """One claim's block in a report: an anchor (``claim-<id>``, the target of the table's links), a heading, the
    source line and labelled paragraphs whose ``$...$`` TeX is rendered as MathML in HTML."""

    anchor: str
    heading: str
    source: str
    paragraphs: list[tuple[str, str]] = field(default_factory=list)


@dataclass
class Section:
    title: str
    header: list[str] = field(default_factory=list)
    rows: list[list[str]] = field(default_factory=list)
    text: list[str] = field(default_factory=list)
    images: list[tuple[str, str]] = field(default_factory=list)  # (caption, path)
    entries: list[Entry] = field(default_factory=list)
    #: a column of claim ids linked to their entries (``#claim-<id>``)
    link_column: int | None = None


def anchor(claim_id: str) -> str:
    return f"claim-{claim_id}"


_TEX = re.compile(r"(\$\$.+?\$\$|\$[^$]+\$)", re.DOTALL)


def _mathml(tex: str, display: bool) -> str | None:
    """TeX to MathML with latex2mathml (the converter the docs use), or ``None`` without it / on a parse error."""
    try:
        from latex2mathml.converter import convert
    except ImportError:
        return None
    try:
        mathml = convert(tex, display="block" if display else "inline")
    except Exception:  # latex2mathml raises assorted errors on TeX it does not know
        return None
    # HTML5 knows <math> without the namespace attribute (the page then holds no URL at all)
    return mathml.replace(' xmlns="http://www.w3.org/1998/Math/MathML"', "")


def tex_html(text: str) -> str:
    """Text with ``$...$`` / ``$$...$$`` math as HTML: math rendered to MathML offline, the rest escaped. Without
    latex2mathml (``pip install 'theorylab[docs]'``), or for TeX it cannot parse, the TeX source is shown as code."""
    out = []
    for part in _TEX.split(text):
        if _TEX.fullmatch(part):
            display = part.startswith("$$")
            tex = part[2:-2] if display else part[1:-1]
            out.append(_mathml(tex, display) or f"<code>{html.escape(part)}</code>")
        else:
            out.append(html.escape(part))
    return "".join(out)


def _cell_md(text: str) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def to_markdown(title: str | None, sections: list[Section]) -> str:
    out = [f"# {title}", ""] if title else []
    for sec in sections:
        out += [f"## {sec.title}", ""]
        out += [*sec.text, ""] if sec.text else []
        if sec.rows:
            out.append("| " + " | ".join(sec.header) + " |")
            out.append("|" + "|".join("---" for _ in sec.header) + "|")
            for row in sec.rows:
                cells = [_cell_md(c) for c in row]
                if sec.link_column is not None:
                    cid = row[sec.link_column]
                    cells[sec.link_column] = f"[{cells[sec.link_column]}](#{anchor(cid)})"
                out.append("| " + " | ".join(cells) + " |")
            out.append("")
        for caption, path in sec.images:
            out += [f"![{caption}]({path})", ""]
        for entry in sec.entries:
            out += [f'### <a id="{entry.anchor}"></a>{entry.heading}', "", entry.source, ""]
            out += [f"**{label}:** {md_text(text)}\n" for label, text in entry.paragraphs]
    return "\n".join(out).rstrip() + "\n"


def _data_uri(path: str) -> str | None:
    """The image at ``path`` as a ``data:`` URI (so that the HTML report is one self-contained file)."""
    import base64
    import mimetypes

    file = Path(path)
    if not file.is_file():
        return None
    mime = mimetypes.guess_type(file.name)[0] or "application/octet-stream"
    return f"data:{mime};base64," + base64.b64encode(file.read_bytes()).decode("ascii")


def to_html(title: str, sections: list[Section]) -> str:
    """One self-contained HTML page: no external style, script or image (figures are embedded)."""
    e = html.escape
    out = [
        "<!doctype html><html lang='en'><head><meta charset='utf-8'>",
        "<meta name='viewport' content='width=device-width, initial-scale=1'>",
        f"<title>{e(title)}</title><style>{_CSS}</style></head><body>",
        f"<h1>{e(title)}</h1>",
    ]
    for sec in sections:
        out.append(f"<h2>{e(sec.title)}</h2>")
        out += [f"<p>{e(line)}</p>" for line in sec.text]
        if sec.rows:
            out.append(
                "<div class='wide'><table><tr>" + "".join(f"<th>{e(h)}</th>" for h in sec.header) + "</tr>"
            )
            for row in sec.rows:
                cls = " class='FAIL'" if "FAIL" in row else ""
                cells = [f"<td>{e(str(c))}</td>" for c in row]
                if sec.link_column is not None:
                    cid = str(row[sec.link_column])
                    cells[sec.link_column] = f"<td><a href='#{e(anchor(cid))}'>{e(cid)}</a></td>"
                out.append(f"<tr{cls}>" + "".join(cells) + "</tr>")
            out.append("</table></div>")
        for entry in sec.entries:
            out.append(f"<section id='{e(entry.anchor)}'><h3>{e(entry.heading)}</h3>")
            out.append(f"<p class='source'>{e(entry.source)}</p>")
            out += [f"<p><b>{e(label)}:</b> {tex_html(text)}</p>" for label, text in entry.paragraphs]
            out.append("</section>")
        for caption, path in sec.images:
            uri = _data_uri(path)
            img = (
                f"<img src='{uri}' alt='{e(caption)}' style='max-width:100%'>"
                if uri
                else f"<p>(figure file missing: {e(path)})</p>"
            )
            out.append(f"<figure>{img}<figcaption>{e(caption)}</figcaption></figure>")
    out.append("</body></html>")
    return "\n".join(out) + "\n"


_CSS = (
    "body{font-family:sans-serif;line-height:1.45;max-width:75em;margin:2em auto;padding:0 2em}"
    "table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:.2em .5em;text-align:left;"
    "vertical-align:top}.wide{overflow-x:auto}.FAIL{background:#fdd}.source{color:#555;margin-top:-.5em}"
    "section{margin:1.5em 0;padding-top:.5em;border-top:1px solid #eee}math{font-size:1.05em}"
)


def _where(c: Claim) -> str:
    """Section and, where known, the lines of the text copy: "§3.6.4.3, l. 4178"."""
    lines = c.source.lines
    return f"§{c.source.section}" + (f", l. {', '.join(map(str, lines))}" if lines else "")


def registry_rows(records: list[Claim], link: bool = False) -> list[list[str]]:
    """One row per claim: id, title, source, tiers, status, provenance, tightness (bound claims)."""
    rows = []
    for c in records:
        title = f"[{c.title}]({c.family}.md)" if link else c.title
        rows.append(
            [
                c.id,
                title,
                f"{c.source.numbering} ({_where(c)})",
                ", ".join(c.tiers),
                c.status,
                c.provenance,
                c.tightness or "-",
            ]
        )
    return rows


REGISTRY_HEADER = ["claim", "title", "source", "tiers", "status", "provenance", "tightness"]
RUN_HEADER = ["claim", "status", "tiers", "passed", "failed", "skipped", "controls", "time", "result"]
_COUNTS = ("passed", "failed", "skipped", "controls")


def run_rows(results: dict[str, dict]) -> list[list[str]]:
    """One row per checked claim (columns ``RUN_HEADER``): counts summed over tiers, time and a verdict
    (``FAIL`` if any check failed, ``ok`` if some passed, else ``skip``)."""
    rows = []
    for cid in sorted(results, key=natural_key):
        r = results[cid]
        total = {k: sum(t[k] for t in r["tiers"].values()) for k in _COUNTS}
        verdict = "FAIL" if total["failed"] else ("ok" if total["passed"] else "skip")
        tiers = ",".join(t for t in TIERS if t in r["tiers"])
        rows.append(
            [cid, r.get("status", ""), tiers, *(str(total[k]) for k in _COUNTS)]
            + [f"{r.get('seconds', 0):.1f}s", verdict]
        )
    return rows


def to_text(header: list[str], rows: list[list[str]]) -> list[str]:
    """A plain-text table with aligned columns, one string per line."""
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]
    line = lambda r: "  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip()
    return [line(header), line(["-" * w for w in widths]), *(line(r) for r in rows)]


_MD_SPECIAL = re.compile(r"([\\`*_\[\]|])")


def md_text(text: str) -> str:
    """Plain text (e.g. an erratum's ASCII formula) made literal in Markdown: ``*``, ``_``, brackets, ``|``
    are escaped so that ``(x/2)_+ - (y/2)_+`` is not read as emphasis. ``$...$`` math is kept as it is."""
    parts = re.split(r"(\$\$.*?\$\$|\$[^$]+\$)", text)
    return "".join(p if p.startswith("$") else _MD_SPECIAL.sub(r"\\\1", p) for p in parts)


def errata_sections(records: list[Claim]) -> list[Section]:
    """One section per ``holds-corrected`` or ``refuted`` claim: printed, corrected, counterexample (a proof erratum
    is marked as such: its corrected text is what the repaired proof certifies)."""
    sections = []
    for c in records:
        if c.erratum is None:
            continue
        kind = (
            "proof erratum: the printed statement is not refuted" if c.erratum.kind == "proof" else c.status
        )
        text = [
            f"**{c.title}** ({kind}); source: `{c.source.document}`, {c.source.numbering}, {_where(c)}.",
            f"**As printed:** {md_text(c.erratum.printed)}",
        ]
        if c.erratum.corrected:
            text.append(f"**Corrected:** {md_text(c.erratum.corrected)}")
        text.append(f"**Counterexample:** {md_text(c.erratum.counterexample)}")
        if c.counterexample:
            text.append(f"Generate it: `theorylab counterexample {c.counterexample} --out {c.id}.npz`")
        sections.append(Section(c.id, text=[t + "\n" for t in text]))
    return sections


def run_sections(payload: dict, registry: dict[str, Claim], out_dir: Path | None = None) -> list[Section]:
    """Sections of a run report from a ``--claims-json`` payload: summary, claim table, per-family measures."""
    meta, results = payload.get("meta", {}), payload.get("claims", {})
    failed = [cid for cid, r in results.items() if any(t["failed"] for t in r["tiers"].values())]
    summary = Section(
        "Run",
        text=[
            f"seed {meta.get('seed')}, device {meta.get('device')}, scale {meta.get('scale')}, "
            f"tiers {', '.join(meta.get('tiers', []))}, {meta.get('seconds', 0):.1f} s; "
            f"{len(results)} claims checked, {len(failed)} with failures."
        ],
    )
    machine = [
        (key, meta[key])
        for key in ("theorylab", "git_commit", "python", "numpy", "torch", "hypothesis", "platform", "date")
        if meta.get(key) is not None
    ]
    if machine:
        summary.text.append("; ".join(f"{key} {value}" for key, value in machine))
    table = Section("Claims", REPORT_HEADER, report_rows(results, registry), link_column=0)
    sections = [summary, table]
    if payload.get("unchecked"):
        sections.append(Section("Claims without checks", text=[", ".join(payload["unchecked"])]))
    by_family: dict[str, list[str]] = {}
    for cid, r in results.items():
        by_family.setdefault(r.get("family") or cid.split(".")[0], []).append(cid)
    for fam in sorted(by_family):
        sec = Section(f"Family {fam}: measurements", ["claim", "quantity", "value"])
        for cid in sorted(by_family[fam], key=natural_key):
            for name, value in sorted(results[cid].get("measures", {}).items()):
                if name.startswith("figure:"):
                    path = Path(value)
                    shown = (
                        os.path.relpath(path, out_dir)
                        if out_dir is not None and path.is_absolute()
                        else value
                    )
                    sec.images.append((f"{cid}: {name[7:]}", shown))
                else:
                    sec.rows.append([cid, name, f"{value:.6g}" if isinstance(value, float) else str(value)])
        if sec.rows or sec.images:
            sections.append(sec)
    entries = [claim_entry(registry[cid]) for cid in sorted(results, key=natural_key) if cid in registry]
    if entries:
        sections.append(Section("Statements and errata", entries=entries))
    return sections


def document_label(c: Claim) -> str:
    """A short name of the claim's document: its title up to the first colon (the authors), else shortened."""
    import textwrap

    head = c.source.document_title.split(":", 1)[0]
    return head if head != c.source.document_title else textwrap.shorten(head, 36, placeholder=" ...")


REPORT_HEADER = ["claim", "title", "document", *RUN_HEADER[1:]]


def report_rows(results: dict[str, dict], registry: dict[str, Claim]) -> list[list[str]]:
    """The run table of a report: ``run_rows`` with each claim's title and document."""
    rows = []
    for row in run_rows(results):
        c = registry.get(row[0])
        rows.append([row[0], c.title if c else "", document_label(c) if c else "", *row[1:]])
    return rows


def claim_entry(c: Claim) -> Entry:
    """A claim's statement (and erratum) block, anchored for the table's links."""
    paragraphs = [("Statement", " ".join(c.statement.split()))]
    if c.erratum:
        label = (
            "As printed (proof erratum: the statement is not refuted)"
            if c.erratum.kind == "proof"
            else "As printed"
        )
        paragraphs.append((label, c.erratum.printed))
        if c.erratum.corrected:
            paragraphs.append(("Corrected", c.erratum.corrected))
        paragraphs.append(("Counterexample", c.erratum.counterexample))
    source = (
        f"{c.source.document_title} ({c.source.document}), {c.source.numbering}, {_where(c)}; "
        f"status {c.status}"
    )
    return Entry(anchor(c.id), f"{c.id}: {c.title}", source, paragraphs)


def render_report(json_path: str | Path, out: str | Path | None = None, fmt: str | None = None) -> str:
    """Render a run report from ``json_path``; write it to ``out`` if given; return the text."""
    from theorylab.claims.registry import _default

    try:
        payload = json.loads(Path(json_path).read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise ValueError(f"not a --claims-json file ({exc})") from None
    if not isinstance(payload, dict) or not isinstance(payload.get("claims"), dict):
        raise ValueError("not a --claims-json file (no 'claims' table)")
    fmt = fmt or ("html" if out and str(out).endswith((".html", ".htm")) else "markdown")
    if fmt not in ("markdown", "html"):
        raise ValueError(f"unknown report format {fmt!r} (markdown or html)")
    # Markdown links figures relative to the report; HTML embeds them, reading them from the recorded paths
    out_dir = Path(out).resolve().parent if out and fmt == "markdown" else None
    sections = run_sections(payload, _default()[0], out_dir)
    text = (to_html if fmt == "html" else to_markdown)("theorylab claim report", sections)
    if out:
        Path(out).write_text(text, encoding="utf-8")
    return text
