"""Sweeps on a real local Ray cluster (2 CPUs, one ``ray.init`` for the module, one xdist group): the same sweep on
``local`` and ``ray`` stores identical metrics; a Ray worker killed mid-sweep is retried and every run is stored
exactly once; an interrupted sweep resumes."""

import os
import signal
import threading
import time
from pathlib import Path

import pytest

from theorylab.runs import RunStore
from theorylab.sweeps import SweepSpec, run_sweep

ray = pytest.importorskip("ray")
pytestmark = pytest.mark.xdist_group("ray")

SPEC = {
    "name": "tiny-ray",
    "seeds": [0, 1, 2, 3],
    "metrics": ["final", "glitches"],
    "task": {"name": "flipflop", "p_ignore": 0.8},
    "model": {"d_model": 8, "n_layers": 1, "n_heads": 1},
    "budget": {"steps": 8, "batch_size": 4, "seq_len": 8, "lr": 3e-3, "eval_batches": 1},
    "metric_args": {"glitches": {"n_sparse": 8, "n_dense": 8}},
    "max_stack": 2,
}


@pytest.fixture(scope="module")
def cluster():
    started = not ray.is_initialized()
    if started:
        ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    yield ray
    if started:
        ray.shutdown()


def _rows(store: RunStore) -> dict:
    return {(r.config_hash, r.seed): r.metrics for r in store.query(kind="sweep")}


def test_local_and_ray_store_identical_metrics(cluster, tmp_path):
    spec = SweepSpec.from_dict(SPEC)
    local, remote = RunStore(tmp_path / "local.sqlite"), RunStore(tmp_path / "ray.sqlite")
    assert run_sweep(spec, local).stored == 4
    rep = run_sweep(spec, remote, executor="ray")
    assert (rep.stored, rep.failed) == (4, 0)
    assert len(remote) == 4 and _rows(local) == _rows(remote)
    workers = {r.worker.rsplit(":", 1)[1] for r in remote.query()}
    assert str(os.getpid()) not in workers  # trained in Ray workers, not in the driver


def _descends_from_us(pid: int) -> bool:
    """Whether ``pid`` is a descendant of this process (the cluster this module started, not another one)."""
    me = os.getpid()
    while pid > 1:
        if pid == me:
            return True
        stat = Path(f"/proc/{pid}/stat").read_text()
        pid = int(stat.rsplit(")", 1)[1].split()[1])
    return False


def _task_pids() -> list[int]:
    """Our cluster's processes whose title says they are executing a sweep stack (``ray::train_stack``)."""
    pids = []
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                if (d / "cmdline").read_bytes().startswith(b"ray::train_stack") and _descends_from_us(
                    int(d.name)
                ):
                    pids.append(int(d.name))
            except (OSError, ValueError, IndexError):
                pass
    return pids


@pytest.mark.skipif(not Path("/proc").is_dir(), reason="finds the worker process through /proc (Linux)")
def test_a_killed_worker_is_retried_and_each_run_is_stored_once(cluster, tmp_path):
    spec = SweepSpec.from_dict({**SPEC, "name": "tiny-kill", "budget": {**SPEC["budget"], "steps": 40}})
    store = RunStore(tmp_path / "runs.sqlite")
    killed: list[int] = []
    stop = threading.Event()

    def kill_one():
        deadline = time.monotonic() + 60
        while not stop.is_set() and time.monotonic() < deadline:
            pids = _task_pids()
            if pids:
                os.kill(pids[0], signal.SIGKILL)
                killed.append(pids[0])
                return
            time.sleep(0.02)

    killer = threading.Thread(target=kill_one, daemon=True)
    killer.start()
    try:
        rep = run_sweep(spec, store, executor="ray")
    finally:
        stop.set()
        killer.join()
    assert killed, "no Ray worker was seen executing a stack"
    print(f"killed Ray worker pid {killed[0]} mid-sweep")
    assert (rep.stored, rep.failed) == (4, 0)
    assert len(store) == 4 and len(_rows(store)) == 4
    assert all(r.status == "done" for r in store.query(status=None))


def test_an_interrupted_ray_sweep_resumes(cluster, tmp_path):
    spec = SweepSpec.from_dict({**SPEC, "name": "tiny-resume"})
    store = RunStore(tmp_path / "runs.sqlite")

    def interrupt(report):
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        run_sweep(spec, store, executor="ray", on_stack=interrupt)
    first = len(store)
    assert first == 2  # the first finished stack (two seeds); the queued stacks were cancelled
    rep = run_sweep(spec, store, executor="ray")
    assert (rep.skipped, rep.stored, rep.failed) == (first, 4 - first, 0)
    assert len(store) == 4
