"""The claim registry: loading, validation errors that name the file and record, and the shipped data."""

from pathlib import Path

import pytest

import theorylab.claims as claims
from theorylab.claims import ClaimRegistryError, load_registry
from theorylab.claims.checks import scan_checks

GOOD = """
family = "demo"
title = "Demo"

[[claim]]
id = "demo.thm1"
title = "t"
source = { document = "001_6a230b9a9faf2198.txt", numbering = "Theorem 1", section = "1" }
statement = "s"
tiers = ["exact"]
status = "holds"
"""


def write(tmp_path: Path, text: str, name: str = "demo.toml") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def test_good_record_loads(tmp_path: Path) -> None:
    registry, families = load_registry([write(tmp_path, GOOD)])
    claim = registry["demo.thm1"]
    assert claim.status == "holds" and claim.tiers == ("exact",) and claim.file == "demo.toml"
    assert claim.provenance == "printed"  # the default
    reconstructed, _ = load_registry([write(tmp_path, GOOD + 'provenance = "reconstructed"\n', "r.toml")])
    assert reconstructed["demo.thm1"].provenance == "reconstructed"
    assert families["demo"].files == ("demo.toml",)
    with pytest.raises(AttributeError):
        claim.status = "refuted"  # frozen


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (('status = "holds"', 'status = "proven"'), r"demo.toml: claim 'demo.thm1': unknown status 'proven'"),
        (('tiers = ["exact"]', 'tiers = ["exact", "gpu"]'), r"unknown tiers \['gpu'\]"),
        (
            (
                'source = { document = "001_6a230b9a9faf2198.txt", numbering = "Theorem 1", section = "1" }\n',
                "",
            ),
            r"claim 'demo.thm1': missing required keys \['source'\]",
        ),
        (('numbering = "Theorem 1", ', ""), r"'source.numbering' must be a non-empty string"),
        (('"001_6a230b9a9faf2198.txt"', '"paper.pdf"'), r"unknown source document 'paper.pdf'"),
        (('status = "holds"', 'status = "refuted"'), r"status 'refuted' requires an 'erratum'"),
        (('id = "demo.thm1"', 'id = "hmm.thm1"'), r"id prefix must be the file's family 'demo'"),
        (('id = "demo.thm1"', 'id = "thm1"'), r"'id' must look like 'family.name'"),
        (('status = "holds"', 'status = "holds"\nstatsu = "x"'), r"unknown keys \['statsu'\]"),
        (
            ('status = "holds"', 'status = "holds"\nuses = ["demo.zzz"]'),
            r"'uses' names unknown claim 'demo.zzz'",
        ),
        (('tiers = ["exact"]', "tiers = []"), r"status 'holds' needs at least one checked tier"),
        (
            ('status = "holds"', 'status = "holds"\nerratum = { printed = "a", counterexample = "b" }'),
            r"only allowed with status holds-corrected or refuted",
        ),
        (('title = "t"', "title = "), r"invalid TOML"),
        (
            ('status = "holds"', 'status = "holds"\nprovenance = "guessed"'),
            r"claim 'demo.thm1': unknown provenance 'guessed'",
        ),
    ],
)
def test_malformed_record_is_rejected(tmp_path: Path, edit: tuple[str, str], message: str) -> None:
    text = GOOD.replace(*edit)
    assert text != GOOD
    with pytest.raises(ClaimRegistryError, match=message):
        load_registry([write(tmp_path, text)])


def test_duplicate_id_names_both_files(tmp_path: Path) -> None:
    a, b = write(tmp_path, GOOD, "a.toml"), write(tmp_path, GOOD, "b.toml")
    with pytest.raises(
        ClaimRegistryError, match=r"b.toml: claim 'demo.thm1': duplicate id \(already defined in a.toml\)"
    ):
        load_registry([a, b])


def test_corrected_claim_needs_the_corrected_statement(tmp_path: Path) -> None:
    text = GOOD.replace(
        'status = "holds"', 'status = "holds-corrected"\nerratum = { printed = "a", counterexample = "b" }'
    )
    with pytest.raises(ClaimRegistryError, match=r"'erratum.corrected' must be a non-empty string"):
        load_registry([write(tmp_path, text)])


def test_erratum_kind_is_statement_or_proof_and_a_proof_erratum_is_holds_corrected(tmp_path: Path) -> None:
    corrected = (
        'status = "holds-corrected"\nerratum = { %s printed = "a", corrected = "c", counterexample = "b" }'
    )
    ok, _ = load_registry([write(tmp_path, GOOD.replace('status = "holds"', corrected % 'kind = "proof",'))])
    assert [c.erratum.kind for c in ok.values()] == ["proof"]
    default, _ = load_registry([write(tmp_path, GOOD.replace('status = "holds"', corrected % ""), "d.toml")])
    assert [c.erratum.kind for c in default.values()] == ["statement"]
    bad = GOOD.replace('status = "holds"', corrected % 'kind = "typo",')
    with pytest.raises(
        ClaimRegistryError, match=r"unknown erratum kind 'typo' \(allowed: statement, proof\)"
    ):
        load_registry([write(tmp_path, bad, "e.toml")])
    refuted = GOOD.replace(
        'status = "holds"',
        'status = "refuted"\nerratum = { kind = "proof", printed = "a", counterexample = "b" }',
    )
    with pytest.raises(ClaimRegistryError, match=r"a proof erratum leaves the statement unrefuted"):
        load_registry([write(tmp_path, refuted, "f.toml")])


def test_claims_path_override(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write(tmp_path, GOOD)
    monkeypatch.setenv("THEORYLAB_CLAIMS_PATH", str(tmp_path))
    assert [c.id for c in claims.all()] == ["demo.thm1"]
    with pytest.raises(KeyError, match=r"unknown claim 'demo.thm2' \(did you mean demo.thm1\?\)"):
        claims.get("demo.thm2")
    monkeypatch.setenv("THEORYLAB_CLAIMS_PATH", str(tmp_path / "missing"))
    with pytest.raises(ClaimRegistryError, match="does not exist"):
        claims.all()


def test_shipped_registry_is_valid_and_checked() -> None:
    """Every shipped claim loads; every non-open claim has a check for each tier its record lists."""
    records = claims.all()
    assert records, "the registry ships no claims"
    refs = scan_checks(Path(__file__).parents[1] / "checks")
    have = {(r.claim, r.tier) for r in refs}
    missing = [(c.id, t) for c in records if c.status != "open" for t in c.tiers if (c.id, t) not in have]
    assert not missing, f"claims whose record lists a tier without a check: {missing}"
    controls = {r.claim for r in refs if r.control}
    uncontrolled = [c.id for c in records if c.status != "open" and c.id not in controls]
    assert not uncontrolled, f"claims without a negative control: {uncontrolled}"
    for c in records:
        assert c.family in claims.families()
