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
class Section:
    title: str
    header: list[str] = field(default_factory=list)
    rows: list[list[str]] = field(default_factory=list)
    text: list[str] = field(default_factory=list)
    images: list[tuple[str, str]] = field(default_factory=list)  # (caption, path)


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
            out += ["| " + " | ".join(_cell_md(c) for c in row) + " |" for row in sec.rows]
            out.append("")
        for caption, path in sec.images:
            out += [f"![{caption}]({path})", ""]
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
        "<!doctype html><html><head><meta charset='utf-8'>",
        f"<title>{e(title)}</title><style>body{{font-family:sans-serif;max-width:75em;margin:2em auto}}"
        "table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:.2em .5em;text-align:left}"
        ".FAIL{background:#fdd}</style></head><body>",
        f"<h1>{e(title)}</h1>",
    ]
    for sec in sections:
        out.append(f"<h2>{e(sec.title)}</h2>")
        out += [f"<p>{e(line)}</p>" for line in sec.text]
        if sec.rows:
            out.append("<table><tr>" + "".join(f"<th>{e(h)}</th>" for h in sec.header) + "</tr>")
            for row in sec.rows:
                cls = " class='FAIL'" if "FAIL" in row else ""
                out.append(f"<tr{cls}>" + "".join(f"<td>{e(str(c))}</td>" for c in row) + "</tr>")
            out.append("</table>")
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


def registry_rows(records: list[Claim], link: bool = False) -> list[list[str]]:
    """One row per claim: id, title, source, tiers, status, provenance, tightness (bound claims)."""
    rows = []
    for c in records:
        title = f"[{c.title}]({c.family}.md)" if link else c.title
        rows.append(
            [
                c.id,
                title,
                f"{c.source.numbering} (§{c.source.section})",
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
            f"**{c.title}** ({kind}); source: `{c.source.document}`, {c.source.numbering}, §{c.source.section}.",
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
    table = Section("Claims", RUN_HEADER, run_rows(results))
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
    statements = [
        line
        for cid in sorted(results, key=natural_key)
        if cid in registry
        for line in _statement_lines(registry[cid])
    ]
    if statements:
        sections.append(Section("Statements and errata", text=statements))
    return sections


def _statement_lines(c: Claim) -> list[str]:
    lines = [
        f"{c.id} ({c.status}): {c.title}. Source: {c.source.document}, {c.source.numbering}, "
        f"section {c.source.section}. Statement: {' '.join(c.statement.split())}"
    ]
    if c.erratum:
        label = "proof erratum" if c.erratum.kind == "proof" else "erratum"
        lines.append(f"{c.id} {label}. As printed: {c.erratum.printed}")
        if c.erratum.corrected:
            lines.append(f"{c.id} {label}. Corrected: {c.erratum.corrected}")
        lines.append(f"{c.id} {label}. Counterexample: {c.erratum.counterexample}")
    return lines


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
