"""Self-describing counterexample files and the refutations that can re-check them.

A counterexample ``.npz`` (format version ``FORMAT_VERSION``) holds its arrays plus four metadata entries:
``_claim`` (claim id), ``_statement`` (the statement it refutes, as printed), ``_parameters`` (JSON: the instance's
scalar parameters) and ``_format_version``; files written by ``theorylab counterexample`` also keep ``_generator``.

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

FORMAT_VERSION = 1
META_KEYS = ("_claim", "_statement", "_parameters", "_format_version", "_generator")


def _jsonable(v: Any) -> Any:
    if isinstance(v, np.generic):
        return v.item()
    if isinstance(v, np.ndarray) and v.ndim == 0:
        return v.item()
    if isinstance(v, bool | int | float | str) or v is None:
        return v
    return None


def metadata_arrays(claim: str, statement: str, parameters: Mapping[str, Any]) -> dict[str, np.ndarray]:
    """The metadata entries of a counterexample file (scalar parameters only go to ``_parameters``)."""
    params = {k: _jsonable(v) for k, v in parameters.items()}
    params = {k: v for k, v in params.items() if v is not None}
    return {
        "_claim": np.asarray(claim),
        "_statement": np.asarray(statement),
        "_parameters": np.asarray(json.dumps(params, sort_keys=True)),
        "_format_version": np.asarray(FORMAT_VERSION),
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
    return meta, arrays


@dataclass(frozen=True)
class Verification:
    claim: str
    statement: str
    fails: bool
    detail: str

    def __str__(self) -> str:
        verdict = "FAILS" if self.fails else "HOLDS"
        return f"{self.claim}: the printed statement {verdict} on this instance\n  statement: {self.statement}\n  {self.detail}"


def verify_file(path: str | Path) -> Verification:
    """Re-check a counterexample file from its arrays alone with the refutation registered for its claim."""
    meta, arrays = read_counterexample(path)
    r = refutation(meta["claim"])
    fails, detail = r.fails(arrays)
    return Verification(r.claim, r.statement, bool(fails), detail)


def generator_metadata(
    generator_id: str, description: str, arrays: Mapping[str, Any]
) -> dict[str, np.ndarray]:
    """Metadata for a file written by ``theorylab counterexample``: the claim (the generator id, or the claim whose
    record names this generator), the printed statement it refutes (the erratum's, else the claim's statement, else
    the generator's description) and the scalar arrays as parameters."""
    from theorylab import claims as registry

    claim, statement = generator_id, description
    try:
        records = {c.id: c for c in registry.all()}
    except ValueError:  # a broken user registry must not stop writing the file
        records = {}
    record = records.get(generator_id) or next(
        (c for c in records.values() if c.counterexample == generator_id), None
    )
    if record is not None:
        claim = record.id
        statement = record.erratum.printed if record.erratum else record.statement
    scalars = {k: v for k, v in arrays.items() if not k.startswith("_") and np.ndim(v) == 0}
    return metadata_arrays(claim, statement, scalars)
