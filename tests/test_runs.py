"""The run store: one row per run, idempotent finishes, retries of dead 'running' rows, exports."""

import json

import pytest

from theorylab.runs import Run, RunStore, config_hash, run_key


def _run(i: int, **kw) -> Run:
    return Run("sweep", "demo", {"lr": 0.1, "width": i}, seed=i, metrics={"err": i / 10}, **kw)


def test_config_hash_ignores_key_order_and_tuple_vs_list():
    assert config_hash({"a": 1, "b": (1, 2)}) == config_hash({"b": [1, 2], "a": 1})
    assert config_hash({"a": 1}) != config_hash({"a": 2})
    assert run_key("sweep", "x", {"a": 1}, 0, "v1") != run_key("sweep", "x", {"a": 1}, 0, "v2")
    assert run_key("sweep", "x", {"a": 1}, 0, "v1") != run_key("sweep", "x", {"a": 1}, 1, "v1")


def test_a_run_is_stored_once_and_a_dead_running_row_is_retried(tmp_path):
    store = RunStore(tmp_path / "runs.sqlite")
    r = _run(1)
    assert store.start(r) and not store.is_done(r.key)
    assert store.start(r)  # a worker died: starting again is allowed
    assert store.finish(r) and store.is_done(r.key)
    assert not store.finish(r)  # a second finish writes nothing
    assert not store.start(r)  # done runs are not restarted
    assert len(store) == 1
    got = store.get(r.key)
    assert got is not None and got.metrics == {"err": 0.1} and got.config == {"lr": 0.1, "width": 1}
    store.close()
    assert RunStore(tmp_path / "runs.sqlite").is_done(r.key)  # persisted


def test_failed_runs_are_replaced_by_a_later_success():
    store = RunStore(":memory:")
    assert store.finish(_run(2, status="failed"))
    assert not store.is_done(_run(2).key)
    assert store.finish(_run(2))
    assert [r.status for r in store.query(status=None)] == ["done"]


def test_query_versions_and_export(tmp_path):
    store = RunStore(":memory:")
    assert store.finish_many([_run(i) for i in range(5)]) == 5
    other = Run("sweep", "demo", {"lr": 0.1, "width": 0}, seed=0, code_version="0.0.1+old")
    store.finish(other)
    assert len(store.query(name="demo")) == 6
    assert sorted(store.versions(name="demo").values()) == [1, 5]
    assert store.done_keys([_run(0).key, "nope"]) == {_run(0).key}
    assert store.export(tmp_path / "runs.json", name="demo") == 6
    rows = json.loads((tmp_path / "runs.json").read_text())
    assert rows[0]["metrics"] == {"err": 0.0} and rows[0]["seed"] == 0
    assert store.export(tmp_path / "runs.csv") == 6
    assert (tmp_path / "runs.csv").read_text().count("\n") == 7


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"status": "ok"}, ValueError, "status must be one of"),
        ({"kind": ""}, ValueError, "kind must be"),
        ({"config": [1]}, TypeError, "config must be a mapping"),
    ],
)
def test_bad_runs_are_rejected(kwargs, error, match):
    base = {"kind": "sweep", "name": "demo", "config": {}}
    with pytest.raises(error, match=match):
        Run(**{**base, **kwargs})


def test_bad_store_paths_and_configs_are_rejected(tmp_path):
    with pytest.raises(ValueError, match="only a file path"):
        RunStore("postgres://host/db")
    with pytest.raises(TypeError, match="not JSON-serialisable"):
        config_hash({"f": object()})
    with pytest.raises(ValueError, match="must end in .json or .csv"):
        RunStore(":memory:").export(tmp_path / "runs.txt")
    with pytest.raises(ValueError, match="still has status 'running'"):
        RunStore(":memory:").finish(_run(0, status="running"))
