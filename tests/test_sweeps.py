"""Sweeps on the local executor: spec validation, expansion and stacking, resume after an interruption, one row
per run, code versions read but not mixed."""

import copy

import pytest

from theorylab.runs import Run, RunStore
from theorylab.sweeps import SweepSpec, plan, run_sweep, sweep_results, sweep_status
from theorylab.testing import rejects

TINY = {
    "name": "tiny",
    "seeds": [0, 1, 2],
    "metrics": ["final", "glitches"],
    "task": {"name": "flipflop", "p_ignore": 0.8},
    "model": {"d_model": 8, "n_layers": 1, "n_heads": 1},
    "budget": {"steps": 8, "batch_size": 4, "seq_len": 8, "lr": 3e-3, "eval_batches": 1},
    "grid": {"model.n_layers": [1, 2]},
    "metric_args": {"glitches": {"n_sparse": 8, "n_dense": 8}},
    "max_stack": 2,
}


def _spec(**changes) -> SweepSpec:
    data = copy.deepcopy(TINY)
    data.update(changes)
    return SweepSpec.from_dict(data)


def test_bad_specs_are_rejected_before_anything_runs():
    rejects(
        lambda: _spec(budget={**TINY["budget"], "stepz": 3}),
        r"unknown budget field 'stepz' \(did you mean 'steps'",
    )
    rejects(lambda: _spec(grid={"model.widht": [1]}), "grid: unknown model field 'widht'")
    rejects(lambda: _spec(grid={"model.n_layers": []}), "grid 'model.n_layers': an empty grid")
    rejects(lambda: _spec(grid={"model.n_layers": [1, 1]}), "grid 'model.n_layers': duplicate values")
    rejects(lambda: _spec(grid={"optimizer.lr": [1]}), "grid key 'optimizer.lr' must be")
    rejects(lambda: _spec(seeds=[0, 1, 1]), r"seeds: duplicate seeds \[1\]")
    rejects(lambda: _spec(seeds=[]), "seeds must be a non-empty list")
    rejects(lambda: _spec(metrics=["final", "glitchez"]), "metric 'glitchez' is not registered")
    rejects(lambda: _spec(metrics=[]), "metrics must be a non-empty list")
    rejects(lambda: _spec(task={"name": "flipflopp"}), "unknown task 'flipflopp'")
    rejects(lambda: _spec(model={"kind": "rnn"}), "unknown model kind 'rnn'")
    rejects(lambda: _spec(colour="red"), "unknown spec field 'colour'")
    rejects(lambda: _spec(metric_args={"curve": {"acc": 0.9}}), "metric_args.curve: 'curve' is not one of")
    rejects(lambda: _spec(metric_args={"glitches": {"n": 3}}), "metric_args.glitches: unknown argument 'n'")
    rejects(lambda: _spec(budget={"steps": 3}), r"budget needs \['batch_size', 'seq_len', 'lr'\]")
    rejects(lambda: _spec(resources={"gpus": 1}), "unknown resource 'gpus'")
    # a value the model rejects (d_model not divisible by n_heads) is caught by validation, before training
    bad = _spec(grid={"model.n_heads": [1, 3]})
    store = RunStore(":memory:")
    rejects(
        lambda: run_sweep(bad, store), r"configuration \{'model.n_heads': 3\}: d_model=8 must be divisible"
    )
    assert len(store) == 0


def test_spec_from_toml_expands_the_grid_and_packs_seeds_into_stacks(tmp_path):
    path = tmp_path / "s.toml"
    path.write_text(
        'name = "t"\nseeds = 5\nmetrics = ["final"]\nmax_stack = 2\n[task]\nname = "flipflop"\n'
        "[budget]\nsteps = 3\nbatch_size = 2\nseq_len = 8\nlr = 0.01\n"
        "[grid.model]\nn_layers = [1, 2]\n[grid.budget]\nlr = [0.01, 0.1, 1.0]\n"
    )
    spec = SweepSpec.from_toml(path)
    assert spec.seeds == (0, 1, 2, 3, 4) and spec.n_runs == 30
    cfgs = spec.configs()
    assert [(c["model"]["n_layers"], c["budget"]["lr"]) for c in cfgs] == [
        (n, lr) for n in (1, 2) for lr in (0.01, 0.1, 1.0)
    ]
    stacks, skipped = plan(spec)
    assert skipped == 0 and len(stacks) == 6 * 3  # 5 seeds -> stacks of 2, 2, 1
    assert [s.seeds for s in stacks[:3]] == [(0, 1), (2, 3), (4,)]
    path.write_text("name = [")
    rejects(lambda: SweepSpec.from_toml(path), ".*not valid TOML")


def test_interrupted_sweep_resumes_and_stores_each_run_once(tmp_path):
    spec = _spec()
    store = RunStore(tmp_path / "runs.sqlite")

    def stop_after_first(report):
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        run_sweep(spec, store, on_stack=stop_after_first)
    assert len(store) == 2  # one stack of two seeds was stored before the interruption
    rep = run_sweep(spec, store)
    assert (rep.total, rep.skipped, rep.stored, rep.failed) == (6, 2, 4, 0)
    assert len(store) == 6
    again = run_sweep(spec, store)
    assert (again.skipped, again.stored, again.stacks) == (6, 0, 0)
    status = sweep_status(spec, store)
    assert status.done == 6 and status.pending == 0
    res = sweep_results(spec, store)
    assert sorted((r.config_hash, r.seed) for r in res.runs) == sorted(
        {(r.config_hash, r.seed) for r in res.runs}
    )
    for values in res.metric("ood_error"):
        assert values.shape == (3,) and ((0 <= values) & (values <= 1)).all()
    # the metrics are evaluations of trained models: the glitch counts agree with the rates
    r = res.runs[0].metrics
    assert r["sparse_error"] == r["sparse_errors"] / r["sparse_reads"]


def test_runs_of_another_code_version_are_read_not_mixed(tmp_path):
    spec = _spec(grid={"model.n_layers": [1]}, seeds=[0])
    store = RunStore(tmp_path / "runs.sqlite")
    cfg = spec.configs()[0]
    store.finish(Run("sweep", "tiny", cfg, 0, "0.0.1+old", metrics={"ood_error": 0.5}))
    status = sweep_status(spec, store)
    assert status.pending == 1 and status.versions == {"0.0.1+old": 1}
    assert sweep_results(spec, store).runs == []  # this code's version only, by default
    old = sweep_results(spec, store, versions="all")
    assert old.versions == ("0.0.1+old",) and old.metric("ood_error")[0].tolist() == [0.5]


def test_a_failing_stack_is_stored_as_failed_and_retried_by_a_rerun(tmp_path, monkeypatch):
    import theorylab.sweeps.run as run_mod

    spec = _spec(grid={"model.n_layers": [1]}, seeds=[0])
    store = RunStore(tmp_path / "runs.sqlite")
    real = run_mod.train_stack

    def broken(*a):
        raise RuntimeError("out of memory")

    monkeypatch.setattr(run_mod, "train_stack", broken)
    rep = run_sweep(spec, store)
    assert rep.failed == 1 and "RuntimeError: out of memory" in rep.errors[0]
    assert sweep_status(spec, store).pending == 1
    monkeypatch.setattr(run_mod, "train_stack", real)
    assert run_sweep(spec, store).stored == 1 and len(store) == 1


def test_executor_names_are_checked():
    rejects(lambda: run_sweep(_spec(), RunStore(":memory:"), executor="dask"), "unknown executor 'dask'")
    rejects(lambda: run_sweep(_spec(), RunStore(":memory:"), address="x:1"), "address= is only used")
    rejects(lambda: run_sweep(dict(TINY), RunStore(":memory:")), "spec must be a SweepSpec", TypeError)


def test_bulk_write_rows_equal_the_per_row_path():
    import math

    from theorylab.runs.store import _fast_row

    shared = {"b": (1, 2), "a": {"z": 1.5, "y": None}}
    runs = [
        Run("sweep", "n", shared, 3, "v", metrics={"x": 1.0, "n": 3, "s": "t"}, finished=5.0),
        Run("sweep", "n", shared, 4, "v", metrics={"x": 2.0}, finished=5.0),
        Run("check", "c", {"a": 1}, None, "v", metrics={"bad": math.nan, "inf": math.inf}, finished=1.0),
        Run("sweep", "n", {"a": [1, {"q": 2}]}, 0, "v", metrics={"nested": {"b": 1, "a": 2}}, finished=2.0),
    ]
    cache: dict = {}
    assert [_fast_row(r, cache) for r in runs] == [r._row() for r in runs]
    assert len(cache) == 3  # the shared config was canonicalised once


def _write_spec(path, **changes):
    import json

    data = {**copy.deepcopy(TINY), **changes}
    lines = [f"{k} = {json.dumps(v)}" for k, v in data.items() if not isinstance(v, dict)]
    for section in ("task", "model", "budget"):
        lines.append(f"[{section}]")
        lines += [f"{k} = {json.dumps(v)}" for k, v in data[section].items()]
    lines.append("[grid]")
    lines += [f'"{k}" = {json.dumps(v)}' for k, v in data["grid"].items()]
    lines.append("[metric_args.glitches]")
    lines += [f"{k} = {json.dumps(v)}" for k, v in data["metric_args"]["glitches"].items()]
    path.write_text("\n".join(lines) + "\n")
    return path


def test_cli_status_and_plot_from_a_store_and_a_bad_spec_exits_2(tmp_path, capsys):
    import numpy as np

    from theorylab.cli import main

    spec_path = _write_spec(tmp_path / "tiny.toml")
    spec = SweepSpec.from_toml(spec_path)
    store_path = tmp_path / "runs.sqlite"
    rng = np.random.default_rng(0)
    with RunStore(store_path) as store:
        for cfg in spec.configs():
            for s in spec.seeds:
                sp, de = (int(v) for v in rng.integers(0, 5, 2))
                m = {"sparse_error": sp / 40, "dense_error": de / 60, "ood_error": (sp + de) / 100}
                store.finish(
                    Run("sweep", "tiny", cfg, s, metrics={**m, "sparse_reads": 40, "dense_reads": 60})
                )
    assert main(["sweep", "status", str(spec_path), "--store", str(store_path)]) == 0
    out = capsys.readouterr().out
    assert "6 runs, 6 done, 0 to run" in out and "n_layers=2" in out
    assert (
        main(["sweep", "plot", str(spec_path), "--store", str(store_path), "--out", str(tmp_path / "f")]) == 0
    )
    assert sorted(p.name for p in (tmp_path / "f").iterdir()) == ["tiny_dense_sparse.png", "tiny_violins.png"]
    bad = _write_spec(tmp_path / "bad.toml", seeds=[0, 0])
    assert main(["sweep", "run", str(bad), "--store", str(store_path)]) == 2
    assert "seeds: duplicate seeds [0]" in capsys.readouterr().err


def test_population_statistics_and_a_verdict_that_refuses_untrained_runs():
    import numpy as np

    from theorylab.sweeps.stats import bootstrap_ci, rank_test, share_verdict, zero_share

    # R4's numbers: 6 of 25 runs without error; the exact Clopper-Pearson interval (scipy's beta quantiles)
    errors = np.array([0] * 6 + [3] * 19)
    k, n, lo, hi = zero_share(errors)
    assert (k, n) == (6, 25) and 0.09 < lo < 0.094 and 0.45 < hi < 0.46
    assert zero_share([0, 0])[3] == 1.0 and zero_share([1, 2])[2] == 0.0
    med, lo, hi = bootstrap_ci([1.0, 2.0, 3.0, 4.0, 100.0], seed=1)
    assert med == 3.0 and lo <= 3.0 <= hi and hi <= 100.0
    assert bootstrap_ci([5.0] * 4) == (5.0, 5.0, 5.0)
    assert rank_test([0, 1, 2, 3, 4, 5], [10, 11, 12, 13, 14, 15]) < 0.01
    assert rank_test([10, 11, 12, 13, 14, 15], [0, 1, 2, 3, 4, 5]) > 0.99
    trained = np.full(25, 0.999)
    assert share_verdict(errors, trained, bar=0.99, claim_low=0.05).status == "passed"
    assert share_verdict(np.full(25, 3), trained, bar=0.99, claim_low=0.2).status == "failed"  # [0, 0.137]
    assert share_verdict(errors, trained, bar=0.99, claim_low=0.2).status == "open"  # [0.094, 0.451]
    assert (
        share_verdict(errors[-5:], trained[:5], bar=0.99, claim_low=0.05).status == "open"
    )  # 0/5: [0, 0.52]
    # negative control: the same errors from untrained models (a constant predictor has no error on trivial
    # sets) never pass
    untrained = share_verdict(np.zeros(25), np.full(25, 0.5), bar=0.99, claim_low=0.05)
    assert untrained.status == "open" and "under-trained" in untrained.reason
    rejects(lambda: zero_share([]), "errors: no runs to summarise")
    rejects(lambda: bootstrap_ci([1.0, float("nan")]), "values: non-finite values")


def test_the_example_specs_are_valid():
    from pathlib import Path

    paths = sorted((Path(__file__).parents[1] / "examples" / "sweeps").glob("*.toml"))
    assert len(paths) >= 3
    for path in paths:
        spec = SweepSpec.from_toml(path)
        spec.validate_values()
        assert spec.n_runs >= 16, path.name
