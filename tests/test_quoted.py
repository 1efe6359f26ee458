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
    claim1, claim2 = moved["claims"]["a.thm1"]["measures"], moved["claims"]["a.thm2"]["measures"]
    claim1["gap"] = 0.125 * (1 + 1e-3)  # an exact-tier float may move by its last bits only
    claim2["acc"] = 0.9 * (1 + TRAINED_RTOL / 2)  # a trained one within the tolerance
    assert compare(quoted, moved) == ["a.thm1/gap: quoted 0.125, this run measured 0.125125"]
    claim1["gap"], claim1["n"] = 0.125 * (1 + 1e-9), 8  # integers are compared exactly
    assert compare(quoted, moved) == ["a.thm1/n: quoted 7, this run measured 8"]
    claim1["n"], claim2["acc"] = 7, 0.9 * (1 + 2 * TRAINED_RTOL)
    assert [p.split(":")[0] for p in compare(quoted, moved)] == ["a.thm2/acc"]
    assert compare(quoted, moved, trained=False) == [] and len(compare(quoted, moved, trained=True)) == 1
    del moved["claims"]["a.thm2"]
    assert "a.thm2/acc: claim not run" in compare(quoted, moved)


def test_round_off_errors_are_compared_by_their_order_of_magnitude() -> None:
    artifact = {"claims": {"a": {"measures": {"err": 3e-11}, "measure_tiers": {"err": "exact"}}}}
    quoted = extract(artifact, [Quote("a", "err")])
    artifact["claims"]["a"]["measures"]["err"] = 9e-11  # another CPU's round-off
    assert compare(quoted, artifact) == []
    artifact["claims"]["a"]["measures"]["err"] = 5e-8  # a thousand times larger: a different computation
    assert compare(quoted, artifact) == ["a/err: quoted 3e-11, this run measured 5e-08"]


def test_every_docs_reference_is_in_the_measured_file() -> None:
    measured = json.loads((ROOT / "docs" / "measured.json").read_text())
    refs = [q for page in sorted((ROOT / "docs").glob("*.md")) for q in quotes(page.read_text())]
    assert refs, "the docs quote no measured number"
    for q in refs:
        assert q.measure in measured.get(q.claim, {}), (
            f"{q.claim}/{q.name}: quoted in docs/, not in measured.json"
        )


def _script():
    import importlib.util

    spec = importlib.util.spec_from_file_location("quoted_numbers", ROOT / "scripts" / "quoted_numbers.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_script_updates_and_checks_from_several_artifacts(tmp_path, monkeypatch) -> None:
    """``update`` / ``check`` take several files, merged in order (a later value wins, measures of other claims are
    kept), and a quoted-numbers file counts as the artifact it was taken from."""
    script = _script()
    first = {"meta": {"seed": 1, "scale": "small", "git_commit": "aaa"}, **ARTIFACT}
    second = {
        "meta": {"seed": 1, "scale": "small", "git_commit": "bbb"},
        "claims": {"a.thm1": {"measures": {"gap": 0.25}, "measure_tiers": {"gap": "exact"}}},
    }
    merged = script.merge([first, second])
    assert merged["claims"]["a.thm1"]["measures"] == {"gap": 0.25, "n": 7}  # the later value wins, n is kept
    assert merged["claims"]["a.thm2"] == {**ARTIFACT["claims"]["a.thm2"], "measure_env": {}}
    assert merged["meta"]["seed"] == 1 and merged["meta"]["git_commit"] == ["aaa", "bbb"]

    paths = []
    for i, data in enumerate((first, second)):
        paths.append(tmp_path / f"run{i}.json")
        paths[-1].write_text(json.dumps(data))
    out = tmp_path / "measured.json"
    monkeypatch.setattr(script, "QUOTED", out)
    monkeypatch.setattr(script, "ROOT", tmp_path)
    monkeypatch.setattr(script, "wanted", lambda: quotes(TEXT))
    assert script.main(["update", *map(str, paths)]) == 0
    written = json.loads(out.read_text())
    assert written["a.thm1"]["gap"] == {"value": 0.25, "tier": "exact"}
    assert written["a.thm2"]["acc"] == {"value": 0.9, "tier": "trained"}
    assert script.main(["check", *map(str, paths)]) == 0
    assert script.main(["check", str(paths[0])]) == 1  # gap 0.125 != quoted 0.25
    # the quoted file itself as the first input: a partial run refreshes its values and keeps the others
    partial = tmp_path / "partial.json"
    partial.write_text(json.dumps({"meta": {}, "claims": {"a.thm2": {"measures": {"acc": 0.8}}}}))
    assert script.main(["update", str(out), str(partial)]) == 0
    written = json.loads(out.read_text())
    assert written["a.thm2"]["acc"]["value"] == 0.8 and written["a.thm1"]["gap"]["value"] == 0.25
    assert script.main(["update", str(tmp_path / "missing.json")]) == 2


def test_trained_numbers_are_quoted_with_their_environment_and_drift_says_what_changed() -> None:
    env = {"torch": "2.13.0+cpu", "threads": [1], "training": "stacked", "stack_sizes": [3]}
    artifact = json.loads(json.dumps(ARTIFACT))
    artifact["claims"]["a.thm2"]["measure_env"] = {"acc": env, "accs": env}
    quoted = extract(artifact, quotes(TEXT))
    assert quoted["a.thm2"]["acc"] == {"value": 0.9, "tier": "trained", "env": env}
    assert "env" not in quoted["a.thm1"]["gap"]  # exact numbers do not depend on it
    moved = json.loads(json.dumps(artifact))
    moved["claims"]["a.thm2"]["measures"]["acc"] = 0.5
    (same,) = compare(quoted, moved, trained=True)
    assert same.startswith("a.thm2/acc: quoted 0.9, this run measured 0.5 (trained; same environment")
    moved["claims"]["a.thm2"]["measure_env"]["acc"] = {**env, "threads": [2], "training": "sequential"}
    (other,) = compare(quoted, moved, trained=True)
    assert other.endswith("(trained; other environment: threads [1] -> [2], training stacked -> sequential)")
    del moved["claims"]["a.thm2"]["measure_env"]
    assert compare(quoted, moved, trained=True)[0].endswith(
        "(trained; environment not recorded on both sides)"
    )


def test_the_script_reports_trained_drift_apart_from_exact_drift(tmp_path, monkeypatch, capsys) -> None:
    script = _script()
    env = {"torch": "2.13.0+cpu", "threads": [1], "training": "stacked", "stack_sizes": [3]}
    run = json.loads(json.dumps({"meta": {}, **ARTIFACT}))
    run["claims"]["a.thm2"]["measure_env"] = {"acc": env, "accs": env}
    path = tmp_path / "run.json"
    path.write_text(json.dumps(run))
    out = tmp_path / "measured.json"
    monkeypatch.setattr(script, "QUOTED", out)
    monkeypatch.setattr(script, "ROOT", tmp_path)
    monkeypatch.setattr(script, "wanted", lambda: quotes(TEXT))
    assert script.main(["update", str(path)]) == 0
    assert json.loads(out.read_text())["a.thm2"]["acc"]["env"] == env
    run["claims"]["a.thm2"]["measures"]["acc"] = 0.5
    run["claims"]["a.thm2"]["measure_env"]["acc"] = {**env, "threads": [2]}
    path.write_text(json.dumps(run))
    capsys.readouterr()
    assert script.main(["check", str(path)]) == 0  # trained drift warns
    text = capsys.readouterr().out
    assert (
        "trained drift (warning): 1 trained numbers moved beyond 5%, 0 of them in the same environment"
        in text
    )
    assert "other environment: threads [1] -> [2]" in text
    run["claims"]["a.thm1"]["measures"]["n"] = 8
    path.write_text(json.dumps(run))
    assert script.main(["check", str(path)]) == 1  # exact drift fails
    assert (
        "exact drift (error): 1 quoted numbers of exact and property checks differ:"
        in capsys.readouterr().out
    )


def test_training_environment_of_a_trained_check() -> None:
    from theorylab import testing

    log, token = testing.start_training_log()
    try:
        testing.note_training(threads=2, stack_size=3, seeds=3, device="cpu")
        testing.note_training(threads=2, stack_size=1, seeds=1, device="cpu")
    finally:
        testing.stop_training_log(token)
    testing.note_training(threads=9, stack_size=9, seeds=9, device="cpu")  # outside a check: not recorded
    env = testing.training_environment(log)
    assert env["threads"] == [2] and env["training"] == "sequential+stacked" and env["stack_sizes"] == [1, 3]
    assert testing.training_environment([])["training"] == "not recorded"
