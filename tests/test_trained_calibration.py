"""The plan calibrated by measurements of the same device: the packaged H100 measurements agree with the raw
outputs of that window, a row is "measured" only from its own shape, stack size and device, and the 19M throughput
probe calibrates the 19M trainings and nothing else."""

from __future__ import annotations

import json
import statistics
from pathlib import Path

import pytest

pytest.importorskip("torch")

from theorylab.trained.calibration import SEEDS, Calibration, device_key, load, training_shape  # noqa: E402
from theorylab.trained.catalog import CATALOG, trainings_of  # noqa: E402
from theorylab.trained.runner import plan  # noqa: E402

RAW = Path(__file__).resolve().parents[1] / "docs" / "gpu" / "2026-11-27-h100"
H100 = "NVIDIA H100 80GB HBM3"
ONLY = [
    "flipflop.R1",
    "flipflop.R4",
    "verifier.dyck",
    "hmm.thm7",
    "flipflop.lstm",
    "automata.E3",
    "distill.R6",
]


def _rows(cal, device="h100-sxm"):
    return {r["check"]: r for r in plan(device, None, only=ONLY, measured=cal)}


def _shape(name: str, i: int = 0):
    check = next(c for c in CATALOG if c.name == name)
    return training_shape(trainings_of(check)[i])


def test_the_packaged_measurements_are_the_raw_outputs_of_the_window():
    seed = json.loads(SEEDS[0].read_text())
    assert seed["device_name"] == H100 and device_key(seed["device_name"]) == "h100-sxm"
    raw = {r["name"]: r for r in json.loads((RAW / "run2_runs.json").read_text())}
    checks = {r["name"]: r for r in seed["runs"] if r["kind"] == "check"}
    assert set(checks) == set(raw) == {"verifier.dyck", "hmm.thm7", "flipflop.lstm"}
    for name, r in checks.items():
        assert r["verdict"] == raw[name]["verdict"] and r["seconds"] == round(raw[name]["seconds"], 3)
        got = [t["marginal_step_ms"] for t in r["metrics"]["trainings"]]
        assert got == [t["marginal_step_ms"] for t in raw[name]["metrics"]["trainings"]]
    bench = json.loads((RAW / "run2_baseline.json").read_text())["rows"]
    ms = {
        (t["seeds"], t["stack_size"], t.get("harness", "default")): t["marginal_step_ms"]
        for r in seed["runs"]
        if r["source"] == "run2_baseline.json"
        for t in r["metrics"]["trainings"]
    }
    assert ms[(1, 1, "default")] == round(bench[2]["marginal_step_ms"], 3) == 12.175
    assert ms[(8, 8, "before the fast paths")] == round(bench[1]["marginal_step_ms"], 3)
    throughput = [
        r["metrics"]["trainings"][0]["marginal_step_ms"] for r in seed["runs"] if r["kind"] == "throughput"
    ]
    assert throughput == [180.8, 179.3]


def test_the_calibrated_plan_uses_each_checks_own_measurements():
    """19M rows take the median single-seed step of the window (12.175, 16.289, 15.707 ms: the CUDA rule trains
    its seeds one after another); the verifier takes its passed run's seconds; hmm.thm7 (failed: no check seconds)
    its trainings' median step; the LSTM's only measurement is of 16 stacked seeds, which the rule no longer
    trains together, and E3 and distill R6 were not measured: model."""
    cal = load("h100-sxm")
    rows, model = _rows(cal), _rows(None)
    assert rows["flipflop.R1"]["source"] == rows["flipflop.R4"]["source"] == "measured"
    assert (
        rows["flipflop.R1"]["step_ms"] == [round(statistics.median([12.175, 16.289, 15.707]), 3)] == [15.707]
    )
    r1 = trainings_of(next(c for c in CATALOG if c.name == "flipflop.R1"))[0]
    steps = r1.budget.steps * r1.n_seeds  # 8 seeds in turn, 10,000 steps each
    assert rows["flipflop.R1"]["seconds"] > steps * 15.707e-3
    # the calibrated model agrees with the measurement to 20%
    assert 0.8 < model["flipflop.R1"]["seconds"] / rows["flipflop.R1"]["seconds"] < 1.2
    assert rows["verifier.dyck"]["source"] == "measured" and rows["verifier.dyck"]["seconds"] == 66.653
    assert rows["hmm.thm7"]["source"] == "measured" and rows["hmm.thm7"]["step_ms"][0] == 1.431
    for name in ("flipflop.lstm", "automata.E3", "distill.R6"):
        assert rows[name]["source"] == "model" and rows[name]["seconds"] == model[name]["seconds"], name
    # another device's plan takes none of them: an H100 PCIe is not this H100
    assert all(r["source"] == "model" for r in _rows(load("h100-pcie"), "h100-pcie").values())


def test_the_19m_throughput_probe_calibrates_the_19m_trainings_only():
    """The runner's first measurement (the 19M baseline's step) replaces the window's 19M numbers and leaves every
    other check as it was (the previous runner scaled every check by the 19M ratio)."""
    before, cal = _rows(load("h100-sxm")), load("h100-sxm")
    cal.add_step(_shape("flipflop.R1"), 1, 31.414)
    after = _rows(cal)
    assert after["flipflop.R1"]["step_ms"] == after["flipflop.R4"]["step_ms"] == [31.414]
    assert after["flipflop.R1"]["seconds"] > 1.9 * before["flipflop.R1"]["seconds"]
    for name in ("verifier.dyck", "hmm.thm7", "flipflop.lstm", "automata.E3", "distill.R6"):
        assert after[name]["seconds"] == before[name]["seconds"], name
    # a measurement of another stack size does not stand for the rule's
    other = load("h100-sxm")
    other.add_step(_shape("flipflop.R1"), 8, 31.414)
    assert _rows(other)["flipflop.R1"]["step_ms"] == [15.707]


def test_partly_measured_checks_and_check_seconds_of_other_stacks():
    """distill R6 trains two shapes (1 and 8 heads): one measured makes the row "partly measured". A passed LSTM
    run of 16 stacked seeds is not this harness's LSTM check (one seed at a time): its seconds are not used; one of
    unstacked seeds is."""
    cal = Calibration("h100-sxm")
    one_head = next(c for c in CATALOG if c.name == "distill.R6")
    t = trainings_of(one_head)[0]
    from theorylab.trained.cost import stack_size

    cal.add_step(training_shape(t), stack_size(t), 2.5)
    assert _rows(cal)["distill.R6"]["source"] == "partly measured"
    lstm = trainings_of(next(c for c in CATALOG if c.name == "flipflop.lstm"))[0]
    shape = training_shape(lstm)
    rec = dict(zip(("config", "flops_per_token", "batch_size", "seq_len"), shape, strict=True))

    def run(stack, seconds):
        return {"kind": "check", "name": "flipflop.lstm", "verdict": "passed", "seconds": seconds,
                "config": {"scale": "full"},
                "metrics": {"trainings": [{**rec, "stack_size": stack, "device_name": H100}]}}  # fmt: skip

    cal.add_runs([run(16, 151.8)])
    assert _rows(cal)["flipflop.lstm"]["source"] == "model"
    cal.add_runs([run(1, 40.0), {**run(1, 999.0), "verdict": "failed"}])
    assert _rows(cal)["flipflop.lstm"]["seconds"] == 40.0
    assert Calibration("a100").add_runs([run(1, 40.0)]) == 0  # another device's run


def test_the_run_store_calibrates_the_plan_of_its_device(tmp_path):
    from theorylab.runs import Run, RunStore

    lstm = trainings_of(next(c for c in CATALOG if c.name == "flipflop.lstm"))[0]
    shape = training_shape(lstm)
    rec = dict(zip(("config", "flops_per_token", "batch_size", "seq_len"), shape, strict=True))
    path = tmp_path / "runs.sqlite"
    with RunStore(path) as store:
        for name, ms in ((H100, 4.0), ("NVIDIA A100-SXM4-80GB", 9.0)):
            store.finish(Run("check", "flipflop.lstm", {"scale": "full", "device": "cuda", "n": name}, verdict="failed",
                             device="cuda", seconds=50.0,
                             metrics={"device_name": name,
                                      "trainings": [{**rec, "stack_size": 1, "marginal_step_ms": ms}]}))  # fmt: skip
    row = _rows(load("h100-sxm", path))["flipflop.lstm"]
    assert row["source"] == "measured" and row["step_ms"] == [4.0]
    assert _rows(load("a100", path), "a100")["flipflop.lstm"]["step_ms"] == [9.0]
    assert not (tmp_path / "absent.sqlite").exists() and load("h100-sxm", tmp_path / "absent.sqlite")
    assert not (tmp_path / "absent.sqlite").exists()  # a plan never creates a store


def test_dry_run_marks_measured_and_model_rows(capsys):
    from theorylab.cli import main

    args = ["trained", "--dry-run", "--device-name", "h100-sxm", "--only", "verifier.dyck", "automata.E3"]
    assert main([*args, "--store", "no/such/store.sqlite"]) == 0
    text = capsys.readouterr().out
    assert "measured on this device: h100_2026-11-27.json" in text
    lines = {line.split()[0]: line for line in text.splitlines() if line.startswith(("verifier", "automata"))}
    assert " measured " in lines["verifier.dyck"] and " model " in lines["automata.E3"]
    assert main([*args, "--model-only"]) == 0
    assert " measured " not in capsys.readouterr().out
