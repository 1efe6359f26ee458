"""The registry of refutations: for a claim id, how to decide from a counterexample file's arrays alone whether
the printed statement fails on that instance (``fails``), and optionally how to search for such an instance
(``search``, used by ``theorylab search ID``).

A leaf module: the providers (``theorylab.instruments.rediscoveries``) import it to register, and it imports them
by name (:data:`BUILTIN_PROVIDERS`) when the registry is first read, so there is no import circle.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

__all__ = ["BUILTIN_PROVIDERS", "Refutation", "register_refutation", "refutations", "refutation"]

#: Modules whose import registers the built-in refutations.
BUILTIN_PROVIDERS = ("theorylab.instruments.rediscoveries",)


@dataclass(frozen=True)
class Refutation:
    """``fails(arrays) -> (fails?, detail)``; ``search(seed, budget) -> Counterexample | NoCounterexample``;
    ``to_arrays(counterexample) -> arrays`` (what ``theorylab search`` writes, readable by ``fails``)."""

    claim: str
    statement: str
    fails: Callable[[Mapping[str, np.ndarray]], tuple[bool, str]]
    search: Callable[..., Any] | None = None
    to_arrays: Callable[[Any], dict[str, np.ndarray]] | None = None
    aliases: tuple[str, ...] = ()


_REFUTATIONS: dict[str, Refutation] = {}


def register_refutation(r: Refutation) -> Refutation:
    for key in (r.claim, *r.aliases):
        old = _REFUTATIONS.get(key)
        if old is not None and old.claim != r.claim:
            raise ValueError(f"refutation {key!r} registered twice ({old.claim} and {r.claim})")
        _REFUTATIONS[key] = r
    return r


def refutations() -> dict[str, Refutation]:
    """Registered refutations by claim id (aliases excluded); the built-in providers are imported first."""
    for name in BUILTIN_PROVIDERS:
        importlib.import_module(name)
    return {k: v for k, v in sorted(_REFUTATIONS.items()) if k == v.claim}


def refutation(claim: str) -> Refutation:
    refutations()
    if claim not in _REFUTATIONS:
        import difflib

        close = difflib.get_close_matches(claim, list(_REFUTATIONS), n=3)
        hint = f" (did you mean {', '.join(close)}?)" if close else ""
        raise KeyError(
            f"no refutation registered for claim {claim!r}{hint}; registered: {', '.join(refutations())}"
        )
    return _REFUTATIONS[claim]
