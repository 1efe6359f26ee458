"""Numbers quoted in the docs: references are parsed, filled from the measured file, and compared with a run
(exactly for exact/property measures, within TRAINED_RTOL for trained ones); every reference in docs/ is listed
in docs/measured.json."""

import json
from pathlib import Path

import pytest

from theorylab.claims.quoted import TRAINED_RTOL, Quote, compare, extract, fill, quotes

ROOT = Path(__file__).resolve().parents[1]

ARTIFACT = {
    "claims": {
        "a.thm1": {"measures": {"gap": 0.125, "n": 7}, "measure_tiers": {"gap": "exact", "n": "property"}},
        "a.thm2": {
            "measures": {"acc": 0.9, "accs": [0.5, 0.75]},
            "measure_tiers": {"acc": "trained", "accs": "trained"},
        },
    }
}
TEXT = (
    'gap {{ run("a.thm1", "gap", ".2e") }}, n = {{run("a.thm1","n")}}, acc {{ run("a.thm2", "acc", ".0%") }}'
)


def test_references_are_parsed_and_filled() -> None:
    assert quotes(TEXT) == [
        Quote("a.thm1", "gap", ".2e"),
        Quote("a.thm1", "n", ""),
        Quote("a.thm2", "acc", ".0%"),
    ]
    values = extract(ARTIFACT, quotes(TEXT))
    assert fill(TEXT, values) == "gap 1.25e-01, n = 7, acc 90%"


def test_list_items_are_quoted_by_index() -> None:
    text = '{{ run("a.thm2", "accs[1]", ".2f") }}'
    assert quotes(text)[0].measure == "accs"
    assert fill(text, extract(ARTIFACT, quotes(text))) == "0.75"
    with pytest.raises(ValueError, match="no measured value 'accs\\[2\\]'"):
        fill('{{ run("a.thm2", "accs[2]") }}', extract(ARTIFACT, quotes(text)))


def test_missing_values_and_bad_formats_are_named() -> None:
    with pytest.raises(ValueError, match="a.thm1/nope"):
        extract(ARTIFACT, [Quote("a.thm1", "nope")])
    with pytest.raises(ValueError, match="no measured value 'gap' of claim 'b.x'"):
        fill('{{ run("b.x", "gap") }}', {}, where="p.md")
    with pytest.raises(ValueError, match="format '.2e' does not apply"):
        fill('{{ run("a", "s", ".2e") }}', {"a": {"s": {"value": "text", "tier": "exact"}}})


def test_compare_is_exact_for_exact_measures_and_tolerant_for_trained_ones() -> None:
    quoted = extract(ARTIFACT, quotes(TEXT))
    assert compare(quoted, ARTIFACT) == []
    moved = json.loads(json.dumps(ARTIFACT))
    moved["claims"]["a.thm1"]["measures"]["gap"] = 0.125 + 1e-12  # an exact measure may not move at all
    moved["claims"]["a.thm2"]["measures"]["acc"] = 0.9 * (
        1 + TRAINED_RTOL / 2
    )  # a trained one within tolerance
    assert compare(quoted, moved) == ["a.thm1/gap: quoted 0.125, this run measured 0.125000000001"]
    moved["claims"]["a.thm2"]["measures"]["acc"] = 0.9 * (1 + 2 * TRAINED_RTOL)
    assert len(compare(quoted, moved)) == 2
    del moved["claims"]["a.thm2"]
    assert "a.thm2: not run" in compare(quoted, moved)


def test_every_docs_reference_is_in_the_measured_file() -> None:
    measured = json.loads((ROOT / "docs" / "measured.json").read_text())
    refs = [q for page in sorted((ROOT / "docs").glob("*.md")) for q in quotes(page.read_text())]
    assert refs, "the docs quote no measured number"
    for q in refs:
        assert q.measure in measured.get(q.claim, {}), (
            f"{q.claim}/{q.name}: quoted in docs/, not in measured.json"
        )
