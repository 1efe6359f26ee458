"""Keep the numbers quoted in the docs equal to what the checks measure.

    python scripts/quoted_numbers.py update artifacts/claims.json   # write docs/measured.json from a run
    python scripts/quoted_numbers.py check artifacts/claims.json    # fail if a run measures other numbers

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

from theorylab.claims.quoted import compare, extract, load, quotes  # noqa: E402

QUOTED = ROOT / "docs" / "measured.json"


def pages() -> list[Path]:
    return sorted((ROOT / "docs").glob("*.md"))


def wanted() -> list:
    return [q for page in pages() for q in quotes(page.read_text(encoding="utf-8"))]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("action", choices=("update", "check"))
    parser.add_argument("artifact", type=Path, help="a --claims-json artifact of a run of the checks")
    args = parser.parse_args(argv)
    if not args.artifact.is_file():
        print(f"error: no claims JSON at {args.artifact} (run the checks with --claims-json first)")
        return 2
    artifact = load(args.artifact)
    if args.action == "update":
        try:
            values = extract(artifact, wanted())
        except ValueError as error:
            print(f"error: {error}")
            return 1
        meta = {
            k: artifact["meta"].get(k)
            for k in ("seed", "scale", "tiers", "theorylab", "git_commit", "torch", "date")
        }
        payload = {"__meta__": meta, **dict(sorted(values.items()))}
        QUOTED.write_text(json.dumps(payload, indent=2, sort_keys=True) + "\n", encoding="utf-8")
        print(f"wrote {sum(len(v) for v in values.values())} quoted numbers to {QUOTED.relative_to(ROOT)}")
        return 0
    quoted = load(QUOTED)
    listed = {(c, n) for c, v in quoted.items() if c != "__meta__" for n in v}
    unlisted = sorted({f"{q.claim}/{q.measure}" for q in wanted() if (q.claim, q.measure) not in listed})
    problems = compare(quoted, artifact) + [
        f"{u}: quoted in the docs, absent from docs/measured.json" for u in unlisted
    ]
    for line in problems:
        print(line)
    if problems:
        print(f"{len(problems)} quoted numbers differ from this run: update docs/measured.json from a run")
        return 1
    print(f"all {len(listed)} quoted numbers reproduced by this run")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
