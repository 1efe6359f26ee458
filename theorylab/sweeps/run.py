"""Running a sweep: expand to runs, skip the runs the store holds as done, pack the rest into seed stacks, run the
stacks on an executor and store each run's numbers as its stack completes (the driver is the only writer).

Exactly one row per run: a run's key is (sweep name, configuration, seed, code version); the store keeps the first
finished row of a key, so a retried stack or a rerun never stores a run twice, and a rerun trains only what is
missing. A stack that raises is stored as "failed" rows (a rerun tries them again).
"""

from __future__ import annotations

import os
import socket
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from theorylab.runs import Run, RunStore, code_version, config_hash, run_key
from theorylab.sweeps.executors import make_executor
from theorylab.sweeps.registry import METRICS, Context
from theorylab.sweeps.spec import SweepSpec, build

KIND = "sweep"


def _number(x) -> float | int:
    v = np.asarray(x).item()
    return int(v) if isinstance(v, bool | int | np.integer) else float(v)


def train_stack(cfg: Mapping[str, Any], seeds: Sequence[int], device: str = "cpu") -> list[dict[str, Any]]:
    """Train the seeds of one configuration as one vmapped stack, evaluate the configuration's metrics right away
    and return one plain dict per seed (``seed``, ``metrics``, ``seconds``, ``step_ms``, ``mfu``, ``device``,
    ``worker``). Models are dropped: only numbers leave this function (it is what a Ray task runs)."""
    from theorylab.nn.train import train

    task, model_config, budget = build(cfg)
    started = time.time()
    result = train(
        task, model_config, budget, seeds=tuple(seeds), device=device, progress=False, max_stack=len(seeds)
    )
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(result.throughput.get("threads") or threads)  # evaluate as the harness trained
    try:
        metrics = _evaluate(cfg, task, result, budget.seq_len, device, len(seeds))
    finally:
        torch.set_num_threads(threads)
    finished = time.time()
    step_ms = 1000 * result.throughput["train_seconds"] / max(budget.steps, 1)
    worker = f"{socket.gethostname()}:{os.getpid()}"
    return [
        {
            "seed": int(s),
            "metrics": {k: _number(v[i]) for k, v in metrics.items()},
            "seconds": (finished - started) / len(seeds),
            "step_ms": step_ms,
            "mfu": result.throughput.get("mfu"),
            "device": result.throughput.get("device_name", device),
            "started": started,
            "finished": finished,
            "worker": worker,
        }
        for i, s in enumerate(seeds)
    ]


def _evaluate(cfg, task, result, seq_len: int, device: str, n: int) -> dict[str, np.ndarray]:
    metrics: dict[str, np.ndarray] = {}
    for name, args in cfg["metrics"].items():
        ctx = Context(task, result.models, result, seq_len, device, args)
        for k, v in METRICS[name].fn(ctx).items():
            arr = np.asarray(v).reshape(-1)
            if arr.shape != (n,):
                raise ValueError(f"metric {name!r} returned {k!r} with {arr.size} values for {n} seeds")
            metrics[k] = arr
    return metrics


@dataclass(frozen=True)
class Stack:
    """The seeds of one configuration trained together (one executor task)."""

    config: dict
    seeds: tuple[int, ...]


def plan(
    spec: SweepSpec, store: RunStore | None = None, version: str | None = None
) -> tuple[list[Stack], int]:
    """(stacks still to run, number of runs skipped because ``store`` holds them as done)."""
    version = version or code_version()
    configs = spec.configs()
    todo: list[tuple[dict, list[int]]] = []
    keys = {
        (i, s): run_key(KIND, spec.name, c, s, version) for i, c in enumerate(configs) for s in spec.seeds
    }
    done = store.done_keys(list(keys.values())) if store is not None else set()
    for i, cfg in enumerate(configs):
        seeds = [s for s in spec.seeds if keys[(i, s)] not in done]
        if seeds:
            todo.append((cfg, seeds))
    stacks = []
    for cfg, seeds in todo:
        k = spec.max_stack or _auto_stack(cfg, len(seeds), spec.device)
        stacks += [Stack(cfg, tuple(seeds[j : j + k])) for j in range(0, len(seeds), k)]
    return stacks, len(done)


def _auto_stack(cfg: Mapping[str, Any], n: int, device: str) -> int:
    import torch

    from theorylab.nn.train import auto_stack_size

    _, model_config, budget = build(cfg)
    return auto_stack_size(model_config, budget, n, torch.device(device))


class Progress:
    """``[sweep NAME] 12/32 runs, 2 failed, 41 s, eta 70 s`` on stderr (runs still to train when it started);
    off when stderr is not a terminal or ``CI`` is set (unless forced with ``enabled=True``)."""

    def __init__(self, name: str, total: int, enabled: bool | None = None) -> None:
        if enabled is None:
            enabled = sys.stderr.isatty() and not os.environ.get("CI")
        self.name, self.total, self.enabled = name, total, enabled
        self.start = time.perf_counter()
        self.done = self.failed = 0

    def update(self, done: int, failed: int) -> None:
        self.done += done
        self.failed += failed
        if not self.enabled:
            return
        elapsed = time.perf_counter() - self.start
        finished = self.done + self.failed
        eta = elapsed / finished * (self.total - finished) if finished else float("nan")
        sys.stderr.write(
            f"\r[sweep {self.name}] {finished}/{self.total} runs, {self.failed} failed, {elapsed:.0f} s, "
            f"eta {eta:.0f} s "
        )
        sys.stderr.flush()

    def close(self) -> None:
        if self.enabled:
            sys.stderr.write("\n")


@dataclass
class SweepReport:
    """What :func:`run_sweep` did: runs in the sweep, skipped (already done), stored now, failed now."""

    name: str
    version: str
    total: int
    skipped: int
    stored: int = 0
    failed: int = 0
    stacks: int = 0
    seconds: float = 0.0
    errors: list[str] = field(default_factory=list)

    def __str__(self) -> str:
        return (
            f"sweep {self.name}: {self.total} runs, {self.skipped} already done, {self.stored} stored now, "
            f"{self.failed} failed ({self.stacks} stacks, {self.seconds:.1f} s, code version {self.version})"
        )


def run_sweep(
    spec: SweepSpec,
    store: RunStore,
    executor: str | Any = "local",
    address: str | None = None,
    progress: bool | None = None,
    on_stack: Callable[[SweepReport], None] | None = None,
    **executor_options,
) -> SweepReport:
    """Run the missing runs of ``spec`` on ``executor`` (``"local"``, ``"ray"`` or an executor object) and store
    them in ``store`` as their stacks complete; returns a :class:`SweepReport`. ``on_stack(report)`` is called after
    each stored stack (an exception raised there, e.g. ``KeyboardInterrupt``, stops the sweep; a rerun resumes)."""
    if not isinstance(spec, SweepSpec):
        raise TypeError(f"spec must be a SweepSpec, got {type(spec).__name__}")
    if not isinstance(store, RunStore):
        raise TypeError(f"store must be a RunStore, got {type(store).__name__}")
    spec.validate_values()
    version = code_version()
    t0 = time.perf_counter()
    stacks, skipped = plan(spec, store, version)
    report = SweepReport(spec.name, version, spec.n_runs, skipped, stacks=len(stacks))
    if not stacks:
        return report
    owned = isinstance(executor, str)
    ex = make_executor(executor, address, **executor_options) if owned else executor
    bar = Progress(spec.name, spec.n_runs - skipped, progress)
    jobs = [(st.config, st.seeds, spec.device) for st in stacks]
    resources = dict(spec.resources)
    if spec.device.startswith("cuda"):
        resources.setdefault("num_gpus", 1)  # a CUDA stack needs a GPU of the cluster
    results_iter = ex.map_unordered(train_stack, jobs, resources)
    try:
        for i, results, error in results_iter:
            st = stacks[i]
            if error is None:
                runs = [
                    Run(
                        KIND,
                        spec.name,
                        st.config,
                        r["seed"],
                        version,
                        "done",
                        None,
                        r["metrics"],
                        r["device"],
                        r["seconds"],
                        r["step_ms"],
                        r["mfu"],
                        r["started"],
                        r["finished"],
                        r["worker"],
                    )
                    for r in results
                ]
                n = store.finish_many(runs)
                report.stored += n
                bar.update(n, 0)
            else:
                msg = f"{type(error).__name__}: {error}"
                report.errors.append(f"config {config_hash(st.config)} seeds {list(st.seeds)}: {msg}")
                runs = [
                    Run(
                        KIND,
                        spec.name,
                        st.config,
                        s,
                        version,
                        "failed",
                        None,
                        {"error": msg[:2000]},
                        spec.device,
                    )
                    for s in st.seeds
                ]
                report.failed += store.finish_many(runs)
                bar.update(0, len(st.seeds))
            report.seconds = time.perf_counter() - t0
            if on_stack is not None:
                on_stack(report)
    finally:
        results_iter.close()  # an interrupted sweep cancels what is still queued
        bar.close()
        if owned:
            ex.close()
    report.seconds = time.perf_counter() - t0
    return report


# ------------------------------------------------------------------------------------------------ reading


@dataclass(frozen=True)
class ConfigStatus:
    config: dict
    config_hash: str
    done: int
    failed: int
    pending: int


@dataclass(frozen=True)
class SweepStatus:
    """Per configuration: runs done / failed / pending under ``version``; ``versions``: every code version the
    store holds done runs of this sweep under (with counts), so that older results are visible, never mixed."""

    name: str
    version: str
    configs: list[ConfigStatus]
    versions: dict[str, int]

    @property
    def done(self) -> int:
        return sum(c.done for c in self.configs)

    @property
    def pending(self) -> int:
        return sum(c.pending + c.failed for c in self.configs)


def sweep_status(spec: SweepSpec, store: RunStore, version: str | None = None) -> SweepStatus:
    version = version or code_version()
    rows = {r.key: r.status for r in store.iter(kind=KIND, name=spec.name, code_version=version, status=None)}
    out = []
    for cfg in spec.configs():
        states = [rows.get(run_key(KIND, spec.name, cfg, s, version)) for s in spec.seeds]
        done, failed = states.count("done"), states.count("failed")
        out.append(ConfigStatus(cfg, config_hash(cfg), done, failed, len(states) - done - failed))
    return SweepStatus(spec.name, version, out, store.versions(KIND, spec.name))


@dataclass(frozen=True)
class SweepResults:
    """The done runs of a sweep's configurations under the stated code ``versions`` (never silently mixed)."""

    spec: SweepSpec
    versions: tuple[str, ...]
    runs: list[Run]

    def by_config(self) -> list[tuple[dict, list[Run]]]:
        groups: dict[str, list[Run]] = {}
        for r in self.runs:
            groups.setdefault(r.config_hash, []).append(r)
        return [(cfg, groups.get(config_hash(cfg), [])) for cfg in self.spec.configs()]

    def metric(self, name: str) -> list[np.ndarray]:
        """Per configuration, the values of metric ``name`` over its runs (seed order)."""
        return [
            np.array([r.metrics[name] for r in sorted(rs, key=lambda r: r.seed)])
            for _, rs in self.by_config()
        ]


def sweep_results(
    spec: SweepSpec, store: RunStore, versions: Sequence[str] | str | None = None
) -> SweepResults:
    """Done runs of ``spec``'s configurations and seeds. ``versions``: the code versions to aggregate (default:
    this code's only; ``"all"``: every version the store holds, stated in the result)."""
    if versions is None:
        versions = (code_version(),)
    elif versions == "all":
        versions = tuple(store.versions(KIND, spec.name))
    elif isinstance(versions, str):
        versions = (versions,)
    hashes = {config_hash(c) for c in spec.configs()}
    seeds = set(spec.seeds)
    runs = [
        r
        for v in versions
        for r in store.iter(kind=KIND, name=spec.name, code_version=v)
        if r.config_hash in hashes and r.seed in seeds
    ]
    return SweepResults(spec, tuple(versions), runs)
