"""Numbers quoted in documentation, taken from a run instead of copied by hand.

A page writes ``{{ run(CLAIM, NAME, FORMAT) }}`` with the arguments in double quotes (FORMAT optional), e.g. claim
``"hmm.thm7"``, name ``"max_error"``, format ``".2e"``: the value that the checks of claim ``hmm.thm7`` recorded under
``max_error`` (with the ``measure`` fixture), formatted with ``.2e``; ``"name[i]"`` picks item ``i`` of a list. The values live in a small JSON file next to
the docs (``docs/measured.json``), extracted from a run's ``--claims-json`` artifact by :func:`extract`;
:func:`compare` tells whether a later run still measures the same numbers: for exact and property checks (seeded
and deterministic) integers exactly and floats to :data:`FLOAT_RTOL` (their last bits depend on the CPU), and within :data:`TRAINED_RTOL` for numbers recorded by trained checks
(floating-point reductions differ across CPUs, and training amplifies the difference). A trained number is quoted
with its environment (torch version, CPU threads, seeds trained stacked under vmap or one after another: see
:func:`theorylab.testing.training_environment`), so a drift says whether the environment changed.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass
from pathlib import Path

from theorylab._fmt import plain

__all__ = ["Quote", "compare", "extract", "fill", "load", "quotes"]

PATTERN = re.compile(r"""\{\{\s*run\(\s*"([^"]+)"\s*,\s*"([^"]+)"\s*(?:,\s*"([^"]*)"\s*)?\)\s*\}\}""")

#: relative tolerance for numbers recorded by trained checks when a run is compared with the quoted file
TRAINED_RTOL = 0.05
#: tolerances for floats recorded by exact and property checks: their last bits depend on the CPU's BLAS kernels
#: (well below the at most 5 significant digits a page shows); integers and strings must be equal
FLOAT_RTOL, FLOAT_ATOL = 1e-6, 1e-12
#: below this magnitude an exact-tier float is a round-off error (a residual, a recovery error): its value depends on
#: the CPU's kernels entirely, so two runs agree when they are within a factor of :data:`ROUNDOFF_FACTOR`
ROUNDOFF, ROUNDOFF_FACTOR = 1e-6, 100.0


@dataclass(frozen=True)
class Quote:
    """One ``{{ run(claim, name, format) }}`` reference."""

    claim: str
    name: str
    format: str = ""

    @property
    def measure(self) -> str:
        """The measure's name (without an ``[i]`` item index)."""
        return _split(self.name)[0]


def _split(name: str) -> tuple[str, int | None]:
    """``"gap[2]"`` -> ``("gap", 2)``; ``"gap"`` -> ``("gap", None)``."""
    match = re.fullmatch(r"(.*)\[(\d+)\]", name)
    return (match.group(1), int(match.group(2))) if match else (name, None)


def quotes(text: str) -> list[Quote]:
    """The references in ``text``, in order."""
    return [Quote(m.group(1), m.group(2), m.group(3) or "") for m in PATTERN.finditer(text)]


def _format(value, spec: str) -> str:
    if not spec:
        return str(value)
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValueError(f"not a number: {plain(value)}")
    return format(value, spec)


def fill(text: str, values: dict[str, dict[str, object]], where: str = "page") -> str:
    """Replace every reference in ``text`` by its value from ``values`` (claim -> name -> {value, tier})."""

    def one(match: re.Match) -> str:
        claim, name, spec = match.group(1), match.group(2), match.group(3) or ""
        base, index = _split(name)
        try:
            value = values[claim][base]["value"]
            value = value if index is None else value[index]
        except (KeyError, IndexError, TypeError):
            raise ValueError(
                f"{where}: no measured value {name!r} of claim {claim!r} in the quoted numbers "
                "(regenerate them: python scripts/quoted_numbers.py update artifacts/claims.json)"
            ) from None
        try:
            return _format(value, spec)
        except ValueError as error:
            raise ValueError(
                f"{where}: format {spec!r} does not apply to {claim}/{name} = {plain(value)}"
            ) from error

    return PATTERN.sub(one, text)


def extract(artifact: dict, wanted: list[Quote]) -> dict[str, dict[str, object]]:
    """The values of ``wanted`` from a ``--claims-json`` artifact (claim -> name -> {value, tier}), with the tier
    of the check that recorded each."""
    out: dict[str, dict[str, object]] = {}
    missing = []
    for quote in wanted:
        record = artifact.get("claims", {}).get(quote.claim)
        if record is None or quote.measure not in record.get("measures", {}):
            missing.append(f"{quote.claim}/{quote.measure}")
            continue
        tier = record.get("measure_tiers", {}).get(quote.measure, "exact")
        out.setdefault(quote.claim, {})[quote.measure] = {
            "value": record["measures"][quote.measure],
            "tier": tier,
        }
        env = record.get("measure_env", {}).get(quote.measure)
        if tier == "trained" and env is not None:  # a trained number holds in its environment
            out[quote.claim][quote.measure]["env"] = env
    if missing:
        raise ValueError(f"the run recorded no value for: {', '.join(sorted(set(missing)))}")
    return out


def _same(a, b, trained: bool) -> bool:
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_same(x, y, trained) for x, y in zip(a, b, strict=True))
    if (
        isinstance(a, float)
        or isinstance(b, float)
        or (trained and isinstance(a, int) and isinstance(b, int))
    ):
        if not isinstance(a, int | float) or not isinstance(b, int | float) or isinstance(a, bool):
            return False
        if math.isnan(a) and math.isnan(b):
            return True
        if trained:
            return math.isclose(a, b, rel_tol=TRAINED_RTOL)
        if abs(a) < ROUNDOFF and abs(b) < ROUNDOFF:
            small, large = sorted((abs(a), abs(b)))
            return large <= FLOAT_ATOL or large <= ROUNDOFF_FACTOR * small
        return math.isclose(a, b, rel_tol=FLOAT_RTOL, abs_tol=FLOAT_ATOL)
    return a == b


#: the parts of a trained check's environment that its numbers depend on (besides the CPU's kernels)
ENV_KEYS = ("torch", "threads", "training", "stack_sizes")


def environment_change(quoted_env: dict | None, run_env: dict | None) -> str:
    """How the environment of a run's trained number differs from the quoted one's: ``"threads [1] -> [2]"``,
    ``""`` when torch, threads and stacking are the same, ``"unknown"`` when one side did not record it."""
    if not quoted_env or not run_env:
        return "unknown"
    return ", ".join(
        f"{key} {quoted_env.get(key)} -> {run_env.get(key)}"
        for key in ENV_KEYS
        if quoted_env.get(key) != run_env.get(key)
    )


def _drift(claim: str, name: str, quote: dict, record: dict, value) -> str:
    line = f"{claim}/{name}: quoted {quote['value']!r}, this run measured {value!r}"
    if quote["tier"] != "trained":
        return line
    change = environment_change(quote.get("env"), record.get("measure_env", {}).get(name))
    if change == "unknown":
        return f"{line} (trained; environment not recorded on both sides)"
    if change:
        return f"{line} (trained; other environment: {change})"
    return f"{line} (trained; same environment: torch, threads and stacking equal, so the CPU or the code differs)"


def compare(quoted: dict, artifact: dict, trained: bool | None = None) -> list[str]:
    """The quoted numbers that a run (its ``--claims-json`` artifact) does not reproduce, one line each: integers and
    strings exactly, floats to :data:`FLOAT_RTOL` (round-off-level floats to a factor :data:`ROUNDOFF_FACTOR`), and
    numbers recorded by trained checks to :data:`TRAINED_RTOL`. ``trained`` restricts the comparison to the numbers
    of trained checks (True) or to the others (False)."""
    problems = []
    for claim, values in quoted.items():
        if claim == "__meta__":
            continue
        record = artifact.get("claims", {}).get(claim)
        for name, quote in values.items():
            value, of_trained = quote["value"], quote["tier"] == "trained"
            if trained is not None and of_trained != trained:
                continue
            if record is None:
                problems.append(f"{claim}/{name}: claim not run")
            elif name not in record.get("measures", {}):
                problems.append(f"{claim}/{name}: not recorded by this run")
            elif not _same(value, record["measures"][name], of_trained):
                problems.append(_drift(claim, name, quote, record, record["measures"][name]))
    return problems


def load(path: str | Path) -> dict:
    """Read a quoted-numbers (or claims JSON) file."""
    return json.loads(Path(path).read_text(encoding="utf-8"))
