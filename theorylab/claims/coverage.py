"""Coverage of the source documents by the registry: per document and chapter, the numbered statements (from
:mod:`theorylab.claims.numbered_statements`) that some record cites in its ``source.numbering``, and the experiment
records (those citing a figure, a table or a numbered result such as "(R2)")."""

from __future__ import annotations

import re
from collections import defaultdict

from theorylab.claims import registry
from theorylab.claims.numbered_statements import STATEMENTS

_KINDS = {
    "thm": "Theorem",
    "theorem": "Theorem",
    "lem": "Lemma",
    "lemma": "Lemma",
    "prop": "Proposition",
    "proposition": "Proposition",
    "cor": "Corollary",
    "corollary": "Corollary",
    "corollaries": "Corollary",
    "def": "Definition",
    "definition": "Definition",
    "claim": "Claim",
    "assumption": "Assumption",
}
_REF = re.compile(
    r"\b(Thm|Theorem|Lem|Lemma|Prop|Proposition|Cor|Corollary|Corollaries|Def|Definition|Claim|Assumption)s?\.?\s*"
    r"((?:(?:[0-9]+|[A-Z]\.[0-9]+)(?:\.[0-9]+)*(?:\s*[-–]\s*(?:[0-9]+|[A-Z]\.[0-9]+)(?:\.[0-9]+)*)?"
    r"(?:\s*[,/]\s*|\s+and\s+)?)+)"
)
_NUMBER = re.compile(
    r"((?:[0-9]+|[A-Z]\.[0-9]+)(?:\.[0-9]+)*)(?:\s*[-–]\s*((?:[0-9]+|[A-Z]\.[0-9]+)(?:\.[0-9]+)*))?"
)
_EXPERIMENT = re.compile(r"\b(Fig|Figure|Table)s?\b|\(R[0-9]+\)|\bexperiment", re.IGNORECASE)


def _expand(first: str, last: str | None) -> list[str]:
    """The numbers of a range: "25"-"27", "4.1.4"-"6" and "4.1.4"-"4.1.6" expand over the last component; a
    range whose ends differ before it (or a lone number) gives its first number only."""
    if not last:
        return [first]
    head, _, low = first.rpartition(".")
    last_head, _, high = last.rpartition(".")
    if last_head not in ("", head) or not (low.isdigit() and high.isdigit()) or int(high) < int(low):
        return [first]
    return [f"{head}.{k}" if head else str(k) for k in range(int(low), int(high) + 1)]


def cited_statements(numbering: str) -> set[tuple[str, str]]:
    """(kind, number) pairs cited by a record's numbering, e.g. "Lemmas 25-27, Thm 1" gives Lemma 25, 26, 27 and
    Theorem 1 (ranges of plain integers are expanded)."""
    out = set()
    for m in _REF.finditer(numbering):
        kind = _KINDS[m.group(1).lower()]
        for n in _NUMBER.finditer(m.group(2)):
            out |= {(kind, number) for number in _expand(n.group(1), n.group(2))}
    return out


def coverage() -> list[dict]:
    """One row per (document, chapter): statements, covered statements, experiment records (all / decided)."""
    cited: dict[str, set] = defaultdict(set)
    experiments: dict[tuple[str, str], list] = defaultdict(list)
    for c in registry.all():
        refs = cited_statements(c.source.numbering)
        cited[c.source.document] |= refs
        if "Li " in c.source.numbering:  # results shared by both theses cite Li's numbering too
            cited["003_69b23422e33c905a.txt"] |= {r for r in refs if r[1].count(".") == 2}
        if _EXPERIMENT.search(c.source.numbering):
            chapter = ".".join(c.source.section.split(".")[: 2 if c.source.document in _THESES else 1])
            experiments[(c.source.document, chapter)].append(c)
    rows = []
    chapters = defaultdict(list)
    for doc, items in STATEMENTS.items():
        for kind, number, chapter, _line in items:
            chapters[(doc, chapter)].append((kind, number))
    for key in sorted(set(chapters) | set(experiments)):
        doc, chapter = key
        stmts = chapters.get(key, [])
        exps = experiments.get(key, [])
        rows.append(
            {
                "document": doc,
                "chapter": chapter,
                "statements": len(stmts),
                "covered": sum(s in cited[doc] for s in stmts),
                "experiments": len(exps),
                "decided": sum(c.status != "open" for c in exps),
            }
        )
    return rows


_THESES = ("001_6a230b9a9faf2198.txt", "003_69b23422e33c905a.txt")


def coverage_markdown() -> str:
    """The coverage table (Markdown), with per-document totals."""
    rows = coverage()
    lines = [
        "| document | chapter | numbered statements | with a record | experiment records | decided |",
        "|---|---|---|---|---|---|",
    ]
    totals = [0, 0, 0, 0]
    for r in rows:
        lines.append(
            f"| {r['document']} | {r['chapter']} | {r['statements']} | {r['covered']} | {r['experiments']} "
            f"| {r['decided']} |"
        )
        for i, k in enumerate(("statements", "covered", "experiments", "decided")):
            totals[i] += r[k]
    share = f" ({100 * totals[1] / totals[0]:.0f}%)" if totals[0] else ""
    lines.append(f"| **all** | | {totals[0]} | {totals[1]}{share} | {totals[2]} | {totals[3]} |")
    return "\n".join(lines) + "\n"


def statement_lines(document: str, numbering: str) -> tuple[int, ...]:
    """Lines of ``document``'s text copy where the numbered statements that ``numbering`` cites begin (sorted;
    empty where it cites none of the document's numbered statements, e.g. a figure)."""
    index = {(kind, number): line for kind, number, _chapter, line in STATEMENTS.get(document, ())}
    return tuple(sorted({index[r] for r in cited_statements(numbering) if r in index}))
