"""Keep the numbers quoted in the docs equal to what the checks measure.

    python scripts/quoted_numbers.py update artifacts/claims.json   # write docs/measured.json from a run
    python scripts/quoted_numbers.py check artifacts/claims.json    # fail if a run measures other numbers

Several files may be given: they are merged in order (a later file's value of a measure wins). A file may also be a
quoted-numbers file such as ``docs/measured.json`` itself, so ``update docs/measured.json artifacts/part.json``
refreshes the values a partial run recorded and keeps the others.

Pages quote ``{{ run(CLAIM, NAME, FORMAT) }}`` (see ``theorylab.claims.quoted``); the mkdocs hook fills them
from ``docs/measured.json``. ``update`` takes the values from a ``--claims-json`` artifact of a run of the checks
(``make checks`` writes one to ``artifacts/claims.json``); ``check`` is run by CI after the test suite, on the
artifact of that same run.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from theorylab.claims.quoted import TRAINED_RTOL, compare, extract, load, quotes  # noqa: E402

QUOTED = ROOT / "docs" / "measured.json"


def pages() -> list[Path]:
    return sorted((ROOT / "docs").glob("*.md"))


def wanted() -> list:
    return [q for page in pages() for q in quotes(page.read_text(encoding="utf-8"))]


META_KEYS = ("seed", "scale", "tiers", "theorylab", "git_commit", "torch", "date")


def as_artifact(data: dict) -> dict:
    """A ``--claims-json`` artifact unchanged; a quoted-numbers file (``docs/measured.json``) as the artifact of the
    run it was taken from (its ``__meta__`` as ``meta``, each value with its tier)."""
    if "claims" in data:
        return data
    claims = {
        claim: {
            "measures": {name: q["value"] for name, q in values.items()},
            "measure_tiers": {name: q["tier"] for name, q in values.items()},
            "measure_env": {name: q["env"] for name, q in values.items() if "env" in q},
        }
        for claim, values in data.items()
        if claim != "__meta__"
    }
    return {"meta": data.get("__meta__", {}), "claims": claims}


def merge(artifacts: list[dict]) -> dict:
    """One artifact from several, in order: per claim, the union of the measures, a later value winning. A meta key
    on which the inputs agree keeps its value; one on which they differ lists the distinct values in order."""
    claims: dict[str, dict] = {}
    for artifact in map(as_artifact, artifacts):
        for claim, record in artifact.get("claims", {}).items():
            into = claims.setdefault(claim, {"measures": {}, "measure_tiers": {}, "measure_env": {}})
            into["measures"].update(record.get("measures", {}))
            tiers, envs = record.get("measure_tiers", {}), record.get("measure_env", {})
            into["measure_tiers"].update({n: tiers.get(n, "exact") for n in record.get("measures", {})})
            for n in record.get("measures", {}):  # a later value comes with its own environment (or none)
                if n in envs:
                    into["measure_env"][n] = envs[n]
                else:
                    into["measure_env"].pop(n, None)
    meta = {}
    for key in META_KEYS:
        seen = []
        for artifact in map(as_artifact, artifacts):
            value = artifact.get("meta", {}).get(key)
            if value not in seen:
                seen.append(value)
        meta[key] = seen[0] if len(seen) == 1 else seen
    return {"meta": meta, "claims": claims}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("action", choices=("update", "check"))
    parser.add_argument(
        "artifact",
        type=Path,
        nargs="+",
        help="--claims-json artifacts of runs of the checks (or quoted-numbers files), merged in order",
    )
    args = parser.parse_args(argv)
    for path in args.artifact:
        if not path.is_file():
            print(f"error: no claims JSON at {path} (run the checks with --claims-json first)")
            return 2
    artifact = merge([load(path) for path in args.artifact])
    if args.action == "update":
        try:
            values = extract(artifact, wanted())
        except ValueError as error:
            print(f"error: {error}")
            return 1
        meta = {k: artifact["meta"].get(k) for k in META_KEYS}
        payload = {"__meta__": meta, **dict(sorted(values.items()))}
        QUOTED.write_text(json.dumps(payload, indent=2, sort_keys=True) + "\n", encoding="utf-8")
        print(f"wrote {sum(len(v) for v in values.values())} quoted numbers to {QUOTED.relative_to(ROOT)}")
        return 0
    quoted = load(QUOTED)
    listed = {(c, n) for c, v in quoted.items() if c != "__meta__" for n in v}
    unlisted = sorted({f"{q.claim}/{q.measure}" for q in wanted() if (q.claim, q.measure) not in listed})
    problems = compare(quoted, artifact, trained=False) + [
        f"{u}: quoted in the docs, absent from docs/measured.json" for u in unlisted
    ]
    # trained numbers are reproducible in one environment (torch, threads, stacking, CPU); another environment may
    # move them: report them apart from the exact drift, with what changed, and do not fail
    trained = compare(quoted, artifact, trained=True)
    if trained:
        same = sum("same environment" in line for line in trained)
        print(
            f"trained drift (warning): {len(trained)} trained numbers moved beyond {TRAINED_RTOL:.0%}, "
            f"{same} of them in the same environment"
        )
        for line in trained:
            print(f"  {line}")
    if problems:
        print(f"exact drift (error): {len(problems)} quoted numbers of exact and property checks differ:")
        for line in problems:
            print(f"  {line}")
        print("update docs/measured.json from a run (python scripts/quoted_numbers.py update ...)")
        return 1
    print(f"all {len(listed)} quoted numbers of exact and property checks reproduced by this run")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
