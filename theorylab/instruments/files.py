"""Self-describing counterexample files and the refutations that can re-check them.

A counterexample ``.npz`` (format version ``FORMAT_VERSION``) holds its arrays plus metadata entries: ``_claim``
(claim id), ``_statement`` (the statement it refutes, as printed, or for a witness the property the instance has),
``_parameters`` (JSON: the instance's scalar parameters), ``_format_version``, ``_theorylab_version``, ``_kind``
(``refutation`` or ``witness``) and ``_conventions`` (matrix orientation, indexing); files written by ``theorylab
counterexample`` also keep ``_generator``.

A :class:`Refutation` registered for a claim id knows how to decide, from the arrays of a file alone, whether the
printed statement fails on that instance (``fails``), and optionally how to search for such an instance from scratch
(``search``, used by ``theorylab search ID``).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from theorylab.instruments.refutations import Refutation, refutation, refutations, register_refutation

__all__ = [
    "FORMAT_VERSION",
    "META_KEYS",
    "Refutation",
    "register_refutation",
    "refutations",
    "refutation",
    "metadata_arrays",
    "write_counterexample",
    "read_counterexample",
    "verify_file",
    "Verification",
    "generator_metadata",
]

FORMAT_VERSION = 2
META_KEYS = (
    "_claim",
    "_statement",
    "_parameters",
    "_format_version",
    "_generator",
    "_theorylab_version",
    "_kind",
    "_conventions",
)


def _jsonable(v: Any) -> Any:
    if isinstance(v, np.generic):
        return v.item()
    if isinstance(v, np.ndarray) and v.ndim == 0:
        return v.item()
    if isinstance(v, bool | int | float | str) or v is None:
        return v
    return None


def theorylab_version() -> str:
    from importlib import metadata

    try:
        return metadata.version("theorylab")
    except metadata.PackageNotFoundError:  # a source tree that is not installed
        import theorylab

        return theorylab.__version__


def metadata_arrays(
    claim: str,
    statement: str,
    parameters: Mapping[str, Any],
    *,
    kind: str = "refutation",
    conventions: str = "",
) -> dict[str, np.ndarray]:
    """The metadata entries of a counterexample file (scalar parameters only go to ``_parameters``)."""
    params = {k: _jsonable(v) for k, v in parameters.items()}
    params = {k: v for k, v in params.items() if v is not None}
    return {
        "_claim": np.asarray(claim),
        "_statement": np.asarray(statement),
        "_parameters": np.asarray(json.dumps(params, sort_keys=True)),
        "_format_version": np.asarray(FORMAT_VERSION),
        "_theorylab_version": np.asarray(theorylab_version()),
        "_kind": np.asarray(kind),
        "_conventions": np.asarray(conventions),
    }


def write_counterexample(
    path: str | Path,
    arrays: Mapping[str, Any],
    *,
    claim: str,
    statement: str,
    parameters: Mapping[str, Any] | None = None,
) -> Path:
    """Write ``arrays`` and the metadata to ``path`` (``.npz`` appended if missing); returns the path written."""
    clash = [k for k in arrays if k in META_KEYS]
    if clash:
        raise ValueError(f"array names {clash} are reserved for metadata")
    path = Path(path)
    if path.suffix != ".npz":
        path = path.with_name(path.name + ".npz")
    np.savez(
        path,
        **{k: np.asarray(v) for k, v in arrays.items()},
        **metadata_arrays(claim, statement, parameters or {}),
    )
    return path


def read_counterexample(path: str | Path) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
    """(metadata, arrays) of a counterexample file. Files without ``_format_version`` (version 0) are accepted if
    they name a generator; metadata then has only ``claim`` (the generator id) and ``format_version`` 0."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"no such counterexample file: {path}")
    try:
        with np.load(path, allow_pickle=False) as data:
            arrays = {k: data[k] for k in data.files}
    except (ValueError, OSError) as exc:
        raise ValueError(f"{path} is not a readable .npz file ({exc})") from None
    meta: dict[str, Any] = {}
    version = int(arrays.pop("_format_version", np.asarray(0)))
    if version > FORMAT_VERSION:
        raise ValueError(f"{path}: format version {version} is newer than this theorylab ({FORMAT_VERSION})")
    meta["format_version"] = version
    generator = arrays.pop("_generator", None)
    claim = arrays.pop("_claim", None)
    if claim is None and generator is None:
        raise ValueError(f"{path}: not a theorylab counterexample (no _claim or _generator entry)")
    meta["claim"] = str(claim if claim is not None else generator)
    meta["generator"] = None if generator is None else str(generator)
    meta["statement"] = str(arrays.pop("_statement", ""))
    meta["parameters"] = json.loads(str(arrays.pop("_parameters", "{}")))
    meta["theorylab_version"] = str(arrays.pop("_theorylab_version", "unknown"))
    meta["kind"] = str(arrays.pop("_kind", "refutation"))
    meta["conventions"] = str(arrays.pop("_conventions", ""))
    return meta, arrays


@dataclass(frozen=True)
class Verification:
    """``fails``: the printed statement fails on the instance (refutation), or the stated property fails on it
    (witness); ``ok``: the file is what it says it is (a refutation that refutes, a witness that has the
    property)."""

    claim: str
    statement: str
    fails: bool
    detail: str
    kind: str = "refutation"

    @property
    def ok(self) -> bool:
        return self.fails if self.kind == "refutation" else not self.fails

    def __str__(self) -> str:
        if self.kind == "witness":
            verdict = "HAS" if self.ok else "does NOT have"
            head, label = f"this instance {verdict} the stated property", "property"
        else:
            head, label = (
                f"the printed statement {'FAILS' if self.fails else 'HOLDS'} on this instance",
                "statement",
            )
        return f"{self.claim}: {head}\n  {label}: {self.statement}\n  {self.detail}"


def _generator_of(meta: Mapping[str, Any]):
    """The registered generator that wrote the file (``_generator``, else one with the claim's id), if it has a
    check."""
    from theorylab import counterexamples

    for gid in (meta.get("generator"), meta["claim"]):
        if not gid:
            continue
        try:
            gen = counterexamples.get(gid)
        except KeyError:
            continue
        if gen.check is not None:
            return gen
    return None


def _require_arrays(arrays: Mapping[str, np.ndarray], names) -> None:
    missing = [n for n in names if n not in arrays]
    if missing:
        raise ValueError(f"the file lacks the arrays {missing}")


def verify_file(path: str | Path) -> Verification:
    """Re-check a counterexample file from its arrays alone: with the check of the generator that wrote it, else
    with the refutation registered for its claim."""
    meta, arrays = read_counterexample(path)
    gen = _generator_of(meta)
    if gen is not None:
        try:
            ok, detail = gen.check(arrays)
        except KeyError as exc:  # a check reading an array the file does not have
            raise ValueError(f"{path}: the file lacks the arrays [{exc.args[0]!r}]") from None
        statement = meta["statement"] or gen.description
        return Verification(
            meta["claim"], statement, bool(ok) == (gen.kind == "refutation"), detail, gen.kind
        )
    r = refutation(meta["claim"])
    fails, detail = r.fails(arrays)
    return Verification(r.claim, r.statement, bool(fails), detail)


def generator_metadata(gen, arrays: Mapping[str, Any]) -> dict[str, np.ndarray]:
    """Metadata for a file written by ``theorylab counterexample`` from the generator ``gen``: the claim (the
    generator id, or the claim whose record names this generator); for a refutation the printed statement it
    refutes (the erratum's printed statement, else the generator's description), for a witness the generator's
    description (the property the instance has); the scalar arrays as parameters; the kind and the
    conventions of the generator's module."""
    from theorylab import claims as registry

    claim, statement = gen.id, gen.description
    try:
        records = {c.id: c for c in registry.all()}
    except ValueError:  # a broken user registry must not stop writing the file
        records = {}
    record = records.get(gen.id) or next((c for c in records.values() if c.counterexample == gen.id), None)
    if record is not None:
        claim = record.id
        if gen.kind == "refutation" and record.erratum:
            statement = record.erratum.printed
    scalars = {k: v for k, v in arrays.items() if not k.startswith("_") and np.ndim(v) == 0}
    return metadata_arrays(claim, statement, scalars, kind=gen.kind, conventions=gen.conventions)
