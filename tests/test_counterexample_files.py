"""Every registered counterexample generator writes a file that ``theorylab verify`` re-decides from the arrays
alone: a refutation as "the printed statement fails on this instance", a witness as "this instance has the stated
property". Tampered files are rejected by the same checks."""

from __future__ import annotations

import numpy as np
import pytest

from theorylab import claims, counterexamples
from theorylab.cli import main
from theorylab.instruments.files import read_counterexample, refutations, verify_file, write_counterexample

# generators whose default instance is slow to build, with a cheaper instance of the same kind and the reason
CHEAP = {
    # decodes every Dyck prefix up to length 10 (3,673 of them, ~3 s); length 6 keeps the same failure
    "dyck.thm1_balance_sufficiency": {"length": 6},
}


def test_every_generator_has_a_check():
    refuted = set(refutations())
    missing = [g for g, gen in counterexamples.available().items() if gen.check is None and g not in refuted]
    assert not missing, f"generators without a check or a registered refutation: {missing}"


FAMILIES = sorted(claims.families())


def test_every_generator_belongs_to_a_family():
    assert all(gid.split(".", 1)[0] in FAMILIES for gid in counterexamples.available())


@pytest.mark.parametrize("family", FAMILIES)  # one test per family, so that parallel runs share the work
def test_every_generator_file_verifies(family, tmp_path):
    """60 generators in all; the slowest is flat.lemF.4 (a torch.func Hessian trace: its first call loads
    torch.func, seconds)."""
    failures = []
    gens = {g: gen for g, gen in counterexamples.available().items() if g.split(".", 1)[0] == family}
    for gid, gen in gens.items():
        path = counterexamples.save(gid, tmp_path / f"{gid}.npz", **CHEAP.get(gid, {}))
        meta, _ = read_counterexample(path)
        assert meta["kind"] == gen.kind and meta["theorylab_version"] != "unknown", gid
        assert meta["conventions"], f"{gid}: its module has no CONVENTIONS"
        result = verify_file(path)
        if not result.ok:
            failures.append(f"{gid}: {result}")
    assert not failures, "\n".join(failures)


def _tampered(tmp_path, gid: str, **changes) -> str:
    path = counterexamples.save(gid, tmp_path / f"{gid}.npz")
    meta, arrays = read_counterexample(path)
    arrays.update({k: np.asarray(v) for k, v in changes.items()})
    out = tmp_path / f"{gid}.tampered.npz"
    np.savez(out, **arrays, _claim=meta["claim"], _generator=gid, _kind=meta["kind"], _format_version=2)
    return str(out)


def test_tampered_files_do_not_verify(tmp_path, capsys):
    T = counterexamples.generate("hmm.thm4")["T"]
    same = _tampered(tmp_path, "hmm.thm4", T_tilde=T)  # identical models: no witness of non-identifiability
    assert main(["verify", same]) == 1
    assert "does NOT have the stated property" in capsys.readouterr().out
    flat = _tampered(tmp_path, "anchor.B1", s=0.0)  # no shift: the margin cannot drop
    assert main(["verify", flat]) == 1 and "HOLDS" in capsys.readouterr().out
    table = counterexamples.generate("topic.table2.1")["std_same_word_same_topic_diff_topic"]
    wide = _tampered(tmp_path, "topic.table2.1", std_same_word_same_topic_diff_topic=10 * table)
    assert not verify_file(wide).ok


def test_readme_example_and_parameters_from_the_cli(tmp_path, capsys):
    out = tmp_path / "thm4.npz"
    assert main(["counterexample", "hmm.thm4", "--param", "t=4", "--out", str(out)]) == 0
    meta, arrays = read_counterexample(out)
    assert int(arrays["t"]) == 4 and meta["parameters"]["t"] == 4 and meta["kind"] == "witness"
    assert "column-stochastic" in meta["conventions"]
    capsys.readouterr()
    assert main(["verify", str(out)]) == 0
    text = capsys.readouterr().out
    assert "HAS the stated property" in text and "x4|x1" in text
    assert main(["counterexample", "hmm.thm4", "--param", "q=4", "--out", str(out)]) == 2
    assert "no parameter q (parameters: t=3)" in capsys.readouterr().err
    assert main(["counterexample", "hmm.thm4", "--param", "t", "--out", str(out)]) == 2
    assert "NAME=VALUE" in capsys.readouterr().err
    assert main(["counterexample"]) == 0 and "[--param t=3]" in capsys.readouterr().out


def test_register_rejects_unknown_kind_and_orphan_verifier():
    with pytest.raises(ValueError, match="kind must be one of"):
        counterexamples.register("demo.x", "d", kind="example")
    with pytest.raises(KeyError, match="unregistered"):
        counterexamples.verifier("demo.unregistered")(lambda a: (True, ""))


def test_old_files_without_kind_still_verify(tmp_path):
    arrays = counterexamples.generate("hmm.claim1")
    path = write_counterexample(tmp_path / "old", arrays, claim="hmm.claim1", statement="T^5 = T~^5")
    assert verify_file(path).ok
