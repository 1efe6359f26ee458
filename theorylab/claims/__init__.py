"""The claim registry: one record per theorem, lemma, construction or experiment of the source documents.

Records are data: ``theorylab/claims/data/<family>.toml``, one file (or several) per claim family, validated on
load. ``get(id)`` and ``all()`` return frozen :class:`Claim` records.
"""

from theorylab.claims.registry import (
    ERRATUM_KINDS,
    PROVENANCES,
    STATUSES,
    TIERS,
    Claim,
    ClaimRegistryError,
    Erratum,
    Family,
    Source,
    all,
    families,
    get,
    load_registry,
)

__all__ = [
    "ERRATUM_KINDS",
    "PROVENANCES",
    "STATUSES",
    "TIERS",
    "Claim",
    "ClaimRegistryError",
    "Erratum",
    "Family",
    "Source",
    "all",
    "families",
    "get",
    "load_registry",
]
