"""Claim aliases: the shipped table names registered claims, lookups by alias find them, and a record's own
``aliases`` field is validated and looked up."""

from pathlib import Path

import pytest

from theorylab.claims import ClaimRegistryError, load_registry, registry
from theorylab.claims.aliases import ALIASES

RECORD = """
family = "demo"
title = "Demo"

[[claim]]
id = "demo.thm1"
title = "t"
source = { document = "001_6a230b9a9faf2198.txt", numbering = "Theorem 1", section = "1" }
statement = "s"
tiers = ["exact"]
status = "holds"
aliases = ALIASES
"""


def test_shipped_aliases_name_registered_claims_and_are_not_ids() -> None:
    ids = {c.id for c in registry.all()}
    for name, targets in ALIASES.items():
        assert name not in ids, name
        assert targets and all(t in ids for t in targets), (name, targets)


def test_lookup_by_alias_finds_the_other_thesis_record() -> None:
    assert registry.get("cfg.thm2.2.1").id == "dyck.thm1_balance_sufficiency"
    assert [c.id for c in registry.resolve("cfg.thm2.2.1")] == [
        "dyck.thm1_balance_sufficiency",
        "dyck.thm1_balance_necessity",
    ]
    assert registry.get("tf.prop4.3.5").id == "gibbs.tf_prop4.1.3"
    assert registry.get("dyck.thm3_lottery").id == "dyck.thm3_lottery"  # ids still work
    with pytest.raises(KeyError, match=r"unknown claim 'cfg.thm9' \(did you mean"):
        registry.get("cfg.thm9")


def test_record_aliases_are_validated_and_looked_up(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "demo.toml"
    path.write_text(RECORD.replace("ALIASES", '["other.thm1.1"]'))
    monkeypatch.setenv("THEORYLAB_CLAIMS_PATH", str(tmp_path))
    assert registry.get("other.thm1.1").id == "demo.thm1"
    assert registry.aliases() == {"other.thm1.1": ("demo.thm1",)}  # the shipped table is not applied
    for bad, message in (
        ('["demo.thm1"]', r"aliases must look like 'family.name' and differ from the id"),
        ('["no dots"]', r"aliases must look like"),
        ('"other.thm1"', r"'aliases' must be a list of strings"),
    ):
        path.write_text(RECORD.replace("ALIASES", bad))
        with pytest.raises(ClaimRegistryError, match=message):
            load_registry([path])
