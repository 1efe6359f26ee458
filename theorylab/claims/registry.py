"""Loading and validating claim records (TOML, one or more files per claim family).

A file may declare, besides ``family``, ``title``, ``docs`` and its ``[[claim]]`` records:

- ``documents``: a table ``{"file name" = "title"}`` of source documents of its own, which its claims may cite in
  ``source.document`` (a project's own paper); the five built-in documents are always known;
- ``checks``: a folder (or a list of folders), relative to the TOML file, holding the checks of its claims
  (``theorylab claims show`` and the claim table look there).
"""

from __future__ import annotations

import builtins
import os
import re
import tomllib
from collections.abc import Iterable
from dataclasses import dataclass
from functools import cache
from pathlib import Path

DATA_DIR = Path(__file__).parent / "data"

STATUSES = ("holds", "holds-corrected", "refuted", "open")
TIERS = ("exact", "property", "trained")
#: Where a claim's statement comes from: ``printed`` in the document (the default), ``derived`` (a true fact the
#: document does not state, e.g. a sharpened bound), ``reconstructed`` (the text copy lost the statement; a check
#: then proves our reconstruction, not the document).
PROVENANCES = ("printed", "derived", "reconstructed")

#: The source documents, by file name (see the documents' index).
DOCUMENTS = {
    "000_7523275b422019f8.txt": "Liu, Xie, Li, Ma: Same Pre-training Loss, Better Downstream",
    "001_6a230b9a9faf2198.txt": "B. Liu, PhD thesis: Guiding ML Design with Insights from Simple Sandboxes",
    "002_530e12373cc142da.txt": "Wu, Lee, Ge: Connecting Pre-trained LMs and Downstream Tasks (anchor vectors)",
    "003_69b23422e33c905a.txt": "Y. Li, PhD thesis: Data-Training-Inference Interaction in Language Modeling",
    "004_4bd75c3751e9130c.txt": "Learning and Transferring Sparse Contextual Bigrams with Linear Transformers",
}

_ID = re.compile(r"^[a-z][a-z0-9_]*\.[A-Za-z0-9_.\-]+$")
_FILE_KEYS = {"family", "title", "docs", "claim", "documents", "checks"}
_CLAIM_KEYS = {
    "id",
    "title",
    "source",
    "statement",
    "tiers",
    "status",
    "uses",
    "counterexample",
    "notes",
    "erratum",
    "provenance",
    "tightness",
    "aliases",
}
_REQUIRED = ("id", "title", "source", "statement", "tiers", "status")
_SOURCE_KEYS = {"document", "numbering", "section"}
_ERRATUM_KEYS = {"printed", "corrected", "counterexample", "kind"}
#: What an erratum is about (docs/errata.md states the policy): a printed ``statement`` (a theorem, a constant, a
#: value the text names) that a counterexample refutes, or a ``proof`` step that is false while the printed
#: statement is not refuted (then ``corrected`` is what the repaired proof certifies).
ERRATUM_KINDS = ("statement", "proof")


class ClaimRegistryError(ValueError):
    """A malformed claim record; the message names the file and the record."""


@dataclass(frozen=True)
class Source:
    document: str
    numbering: str
    section: str
    #: The document's title: from ``DOCUMENTS`` or from the ``documents`` table of the claim's file.
    document_title: str = ""

    def __post_init__(self) -> None:
        if not self.document_title:
            object.__setattr__(self, "document_title", DOCUMENTS.get(self.document, self.document))

    @property
    def lines(self) -> tuple[int, ...]:
        """Lines of the document's text copy where the cited numbered statements begin (where known)."""
        from theorylab.claims.coverage import statement_lines

        return statement_lines(self.document, self.numbering)


@dataclass(frozen=True)
class Erratum:
    printed: str
    corrected: str
    counterexample: str
    kind: str = "statement"


@dataclass(frozen=True)
class Claim:
    id: str
    family: str
    title: str
    source: Source
    statement: str
    tiers: tuple[str, ...]
    status: str
    uses: tuple[str, ...] = ()
    counterexample: str | None = None
    notes: str = ""
    erratum: Erratum | None = None
    file: str = ""
    provenance: str = "printed"
    #: for bound claims: how tight the bound is, as measured by a check (e.g. "loose by 1.5x", "tight (attained)")
    tightness: str = ""
    #: other names of the claim (catalog ids, the other thesis' numbering); see ``theorylab.claims.aliases``
    aliases: tuple[str, ...] = ()


@dataclass(frozen=True)
class Family:
    name: str
    title: str
    docs: str | None
    files: tuple[str, ...]
    #: Folders holding the family's checks, declared by ``checks = ...`` in its files (absolute paths).
    checks: tuple[str, ...] = ()


def _fail(file: str, record: str | None, problem: str) -> ClaimRegistryError:
    where = f"{file}: claim {record!r}" if record else file
    return ClaimRegistryError(f"{where}: {problem}")


def _string(value, file: str, record: str | None, key: str, *, empty_ok: bool = False) -> str:
    if not isinstance(value, str) or (not empty_ok and not value.strip()):
        raise _fail(file, record, f"{key!r} must be a non-empty string, got {value!r}")
    return value.strip()


def _strings(value, file: str, record: str, key: str) -> tuple[str, ...]:
    if not isinstance(value, list) or not builtins.all(isinstance(v, str) for v in value):
        raise _fail(file, record, f"{key!r} must be a list of strings, got {value!r}")
    if len(set(value)) != len(value):
        raise _fail(file, record, f"{key!r} has duplicates: {value!r}")
    return tuple(value)


def _table(value, file: str, record: str, key: str, allowed: set[str], required: Iterable[str]) -> dict:
    if not isinstance(value, dict):
        raise _fail(file, record, f"{key!r} must be a table with keys {sorted(allowed)}, got {value!r}")
    unknown = set(value) - allowed
    if unknown:
        raise _fail(file, record, f"{key!r} has unknown keys {sorted(unknown)} (allowed: {sorted(allowed)})")
    for name in required:
        _string(value.get(name), file, record, f"{key}.{name}")
    return value


def _parse_claim(raw: dict, family: str, file: str, documents: dict[str, str] | None = None) -> Claim:
    if not isinstance(raw, dict):
        raise _fail(file, None, f"each [[claim]] must be a table, got {raw!r}")
    cid = raw.get("id")
    if not isinstance(cid, str) or not _ID.match(cid):
        raise _fail(file, str(cid), "'id' must look like 'family.name' (e.g. 'hmm.thm7')")
    if cid.split(".", 1)[0] != family:
        raise _fail(file, cid, f"id prefix must be the file's family {family!r}")
    unknown = set(raw) - _CLAIM_KEYS
    if unknown:
        raise _fail(file, cid, f"unknown keys {sorted(unknown)} (allowed: {sorted(_CLAIM_KEYS)})")
    missing = [k for k in _REQUIRED if k not in raw]
    if missing:
        raise _fail(file, cid, f"missing required keys {missing}")

    src = _table(raw["source"], file, cid, "source", _SOURCE_KEYS, _SOURCE_KEYS)
    known = {**DOCUMENTS, **(documents or {})}
    if src["document"] not in known:
        raise _fail(
            file,
            cid,
            f"unknown source document {src['document']!r}: declare it in the file's [documents] table "
            f'(e.g. documents = {{ "{src["document"]}" = "Author: Title" }}); known: {sorted(known)}',
        )
    status = raw["status"]
    if status not in STATUSES:
        raise _fail(file, cid, f"unknown status {status!r} (allowed: {', '.join(STATUSES)})")
    tiers = _strings(raw["tiers"], file, cid, "tiers")
    bad = [t for t in tiers if t not in TIERS]
    if bad:
        raise _fail(file, cid, f"unknown tiers {bad} (allowed: {', '.join(TIERS)})")
    if not tiers and status != "open":
        raise _fail(file, cid, f"status {status!r} needs at least one checked tier")

    erratum = None
    if status in ("holds-corrected", "refuted"):
        if "erratum" not in raw:
            raise _fail(
                file,
                cid,
                f"status {status!r} requires an 'erratum' table (printed, corrected, counterexample)",
            )
        required = ("printed", "counterexample") + (("corrected",) if status == "holds-corrected" else ())
        e = _table(raw["erratum"], file, cid, "erratum", _ERRATUM_KEYS, required)
        kind = e.get("kind", "statement")
        if kind not in ERRATUM_KINDS:
            raise _fail(file, cid, f"unknown erratum kind {kind!r} (allowed: {', '.join(ERRATUM_KINDS)})")
        if kind == "proof" and status != "holds-corrected":
            raise _fail(
                file, cid, "a proof erratum leaves the statement unrefuted: its status is holds-corrected"
            )
        erratum = Erratum(
            e["printed"].strip(), str(e.get("corrected", "")).strip(), e["counterexample"].strip(), kind
        )
    elif "erratum" in raw:
        raise _fail(
            file, cid, f"an 'erratum' is only allowed with status holds-corrected or refuted, not {status!r}"
        )

    provenance = raw.get("provenance", "printed")
    if provenance not in PROVENANCES:
        raise _fail(file, cid, f"unknown provenance {provenance!r} (allowed: {', '.join(PROVENANCES)})")

    counterexample = raw.get("counterexample")
    if counterexample is not None:
        counterexample = _string(counterexample, file, cid, "counterexample")
    return Claim(
        id=cid,
        family=family,
        title=_string(raw["title"], file, cid, "title"),
        source=Source(
            **{k: src[k].strip() for k in _SOURCE_KEYS}, document_title=known[src["document"].strip()]
        ),
        statement=_string(raw["statement"], file, cid, "statement"),
        tiers=tiers,
        status=status,
        uses=_strings(raw.get("uses", []), file, cid, "uses"),
        counterexample=counterexample,
        notes=_string(raw.get("notes", ""), file, cid, "notes", empty_ok=True),
        erratum=erratum,
        file=file,
        provenance=provenance,
        tightness=_string(raw.get("tightness", ""), file, cid, "tightness", empty_ok=True),
        aliases=_aliases(raw.get("aliases", []), file, cid),
    )


def _aliases(value, file: str, cid: str) -> tuple[str, ...]:
    names = _strings(value, file, cid, "aliases")
    bad = [a for a in names if not _ID.match(a) or a == cid]
    if bad:
        raise _fail(file, cid, f"aliases must look like 'family.name' and differ from the id, got {bad}")
    return names


def _parse_file(path: Path) -> tuple[Family, list[Claim]]:
    file = path.name
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as exc:
        raise _fail(file, None, f"invalid TOML: {exc}") from None
    unknown = set(data) - _FILE_KEYS
    if unknown:
        raise _fail(file, None, f"unknown top-level keys {sorted(unknown)} (allowed: {sorted(_FILE_KEYS)})")
    family = _string(data.get("family"), file, None, "family")
    title = _string(data.get("title"), file, None, "title")
    docs = data.get("docs")
    if docs is not None:
        docs = _string(docs, file, None, "docs")
    documents = data.get("documents", {})
    if not isinstance(documents, dict) or not builtins.all(
        isinstance(k, str) and isinstance(v, str) and v.strip() for k, v in documents.items()
    ):
        raise _fail(
            file, None, f"'documents' must be a table of file name = title strings, got {documents!r}"
        )
    checks = data.get("checks", [])
    checks = [checks] if isinstance(checks, str) else checks
    if not isinstance(checks, list) or not builtins.all(isinstance(c, str) and c for c in checks):
        raise _fail(file, None, f"'checks' must be a folder or a list of folders, got {checks!r}")
    folders = tuple(str((path.parent / c).resolve()) for c in checks)
    raws = data.get("claim")
    if not isinstance(raws, list) or not raws:
        raise _fail(file, None, "no [[claim]] records")
    records = [_parse_claim(r, family, file, documents) for r in raws]
    return Family(family, title, docs, (file,), folders), records


def load_registry(paths: Iterable[Path] | None = None) -> tuple[dict[str, Claim], dict[str, Family]]:
    """Parse and validate claim files; return ``(claims by id, families by name)``.

    Raises :class:`ClaimRegistryError` naming the file and record for: invalid TOML, unknown keys, unknown status or
    tier, missing source, a missing erratum on a corrected/refuted claim, duplicate ids, and ``uses`` that name
    unknown claims.
    """
    paths = claim_files() if paths is None else [Path(p) for p in paths]
    claims: dict[str, Claim] = {}
    fams: dict[str, Family] = {}
    for path in paths:
        fam, records = _parse_file(path)
        if fam.name in fams:
            old = fams[fam.name]
            fam = Family(
                fam.name, old.title, old.docs or fam.docs, old.files + fam.files, old.checks + fam.checks
            )
        fams[fam.name] = fam
        for claim in records:
            if claim.id in claims:
                raise _fail(
                    claim.file, claim.id, f"duplicate id (already defined in {claims[claim.id].file})"
                )
            claims[claim.id] = claim
    for claim in claims.values():
        for used in claim.uses:
            if used not in claims:
                raise _fail(claim.file, claim.id, f"'uses' names unknown claim {used!r}")
        clash = [a for a in claim.aliases if a in claims]
        if clash:
            raise _fail(claim.file, claim.id, f"aliases {clash} are ids of other claims")
    return claims, fams


def claim_files() -> list[Path]:
    """The registry's TOML files: ``theorylab/claims/data/*.toml``, or the directories and files listed in
    ``$THEORYLAB_CLAIMS_PATH`` (``os.pathsep``-separated) when it is set, e.g. for a project's own claims."""
    override = os.environ.get("THEORYLAB_CLAIMS_PATH")
    if not override:
        return sorted(DATA_DIR.glob("*.toml"))
    files: list[Path] = []
    for entry in filter(None, override.split(os.pathsep)):
        path = Path(entry)
        if not path.exists():
            raise ClaimRegistryError(f"THEORYLAB_CLAIMS_PATH names {entry!r}, which does not exist")
        files += sorted(path.glob("*.toml")) if path.is_dir() else [path]
    return files


@cache
def _load_cached(files: tuple[tuple[Path, int], ...]) -> tuple[dict[str, Claim], dict[str, Family]]:
    return load_registry([path for path, _ in files])


def _default() -> tuple[dict[str, Claim], dict[str, Family]]:
    """The registry, reloaded when a file is added, removed or edited (the cache key holds the mtimes)."""
    return _load_cached(tuple((path, path.stat().st_mtime_ns) for path in claim_files()))


def did_you_mean(word: str, choices: Iterable[str], n: int = 3) -> str:
    """`` (did you mean a, b?)`` with the choices closest to ``word`` (close spellings, then extensions of
    ``word``), or ``""``."""
    import difflib

    choices = list(choices)
    close = difflib.get_close_matches(word, choices, n=n)
    close += [c for c in sorted(choices) if c.startswith(word) and c not in close]
    return f" (did you mean {', '.join(close[:n])}?)" if close else ""


def aliases() -> dict[str, tuple[str, ...]]:
    """Every alias -> the ids it names: the records' ``aliases`` fields and, for the shipped registry, the table
    of :mod:`theorylab.claims.aliases` (restricted to ids that are registered)."""
    from theorylab.claims.aliases import ALIASES

    claims = _default()[0]
    out: dict[str, tuple[str, ...]] = {}
    if not os.environ.get("THEORYLAB_CLAIMS_PATH"):
        for name, ids in ALIASES.items():
            known = tuple(i for i in ids if i in claims)
            if known and name not in claims:
                out[name] = known
    for claim in claims.values():
        for name in claim.aliases:
            out[name] = out.get(name, ()) + ((claim.id,) if claim.id not in out.get(name, ()) else ())
    return out


def resolve(name: str) -> list[Claim]:
    """The records named by ``name``: the claim with that id, or every claim of that alias."""
    claims = _default()[0]
    if name in claims:
        return [claims[name]]
    ids = aliases().get(name)
    if not ids:
        raise KeyError(f"unknown claim {name!r}{did_you_mean(name, list(claims) + list(aliases()))}")
    return [claims[i] for i in ids]


def get(claim_id: str) -> Claim:
    """The record of ``claim_id`` (an id or an alias: the first record it names); ``KeyError`` with close matches
    if it is unknown."""
    return resolve(claim_id)[0]


def natural_key(claim_id: str) -> tuple:
    """Sort key that puts ``thm7`` before ``thm10``."""
    return tuple(int(p) if p.isdigit() else p for p in re.split(r"(\d+)", claim_id))


def all() -> list[Claim]:  # noqa: A001 - part of the public API: theorylab.claims.all()
    """Every registered claim, in natural id order."""
    return sorted(_default()[0].values(), key=lambda c: natural_key(c.id))


def families() -> dict[str, Family]:
    """The claim families by name."""
    return dict(_default()[1])
