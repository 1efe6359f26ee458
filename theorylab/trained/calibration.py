"""Measured costs for the plan: step times and check seconds from the run store and from the packaged
measurements of earlier GPU windows, for one device.

A plan row is "measured" when the check finished and passed on the same device (its recorded seconds), or when
every training of the check has a measured marginal step time on that device (seconds = stacks x steps x step
time + the model's evaluations + the catalog's host work); "partly measured" when some trainings have one; else
"model" (:mod:`theorylab.trained.cost`). A measured training matches a catalog training by its shape: the config's
class, FLOPs per token, batch size and sequence length, and the number of seeds per stack, which must be what the
harness's rule gives now (:func:`theorylab.trained.cost.stack_size`: 16 stacked LSTMs measured at 266.7 ms per step
say nothing of one unstacked LSTM). Several measurements of one shape give their median, so that one slow or fast
window does not decide; a measurement taken in the current window (``theorylab trained`` times the 19M baseline
first) replaces the others for its shape only. Devices match through :func:`device_key` (``NVIDIA H100 80GB HBM3``
is an ``h100-sxm``). Only the current harness (``after``) is calibrated: the ``before`` and ``fused`` plans describe
other code.
"""

from __future__ import annotations

import json
import statistics
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from theorylab.trained.cost import DEVICES, profile_for

#: measurements of earlier GPU windows, shipped with the library (raw outputs under ``docs/gpu/``)
SEEDS = (Path(__file__).parent / "data" / "h100_2026-11-27.json",)


def device_key(name: str) -> str:
    """The :data:`~theorylab.trained.cost.DEVICES` key of a device name or key (``cuda`` is an ``h100-sxm``)."""
    prof = profile_for(name)
    return next(k for k, p in DEVICES.items() if p == prof)


def shape_of(config_name: str, flops_per_token: float, batch_size: int, seq_len: int) -> tuple:
    """What decides a training's step time besides its stack size (the task's sampling aside)."""
    return (str(config_name), round(float(flops_per_token)), int(batch_size), int(seq_len))


def training_shape(training) -> tuple:
    """:func:`shape_of` a catalog :class:`~theorylab.trained.catalog.Training`, as the harness records it."""
    from theorylab.nn.train import _flops_per_token

    b = training.budget
    fpt = _flops_per_token(training.config, b.seq_len, 0)
    return shape_of(type(training.config).__name__, fpt, b.batch_size, b.seq_len)


@dataclass
class Calibration:
    """Measured step times (by shape and stack size) and check seconds (passed full-size runs) on one device."""

    device: str
    steps: dict[tuple, list[float]] = field(default_factory=dict)
    checks: dict[str, list[tuple[float, dict[tuple, int]]]] = field(default_factory=dict)
    fresh: dict[tuple, float] = field(default_factory=dict)
    sources: set[str] = field(default_factory=set)

    def add_runs(self, runs: Iterable[Mapping], source: str = "") -> int:
        """Add run rows (a run store's rows as dicts, or a measurements file's ``runs``); returns how many were
        on this device."""
        used = 0
        for run in runs:
            metrics = run.get("metrics") or {}
            trainings = [t for t in metrics.get("trainings", []) if isinstance(t, Mapping)]
            names = {t.get("device_name") for t in trainings} | {metrics.get("device_name")}
            names.discard(None)
            names.discard("cpu")
            if len(names) != 1 or not _same_device(names.pop(), self.device):
                continue
            used += 1
            stacks = {}
            for t in trainings:
                ms, shape = t.get("marginal_step_ms"), _record_shape(t)
                if shape is None or t.get("stack_size") is None:
                    continue
                stacks[shape] = int(t["stack_size"])
                if ms and t.get("harness", "default") == "default":
                    self.steps.setdefault((shape, int(t["stack_size"])), []).append(float(ms))
            config = run.get("config") or {}
            if (
                run.get("kind") == "check"
                and run.get("verdict") == "passed"
                and run.get("status", "done") == "done"
                and config.get("scale", "full") == "full"
                and run.get("seconds")
            ):
                self.checks.setdefault(run["name"], []).append((float(run["seconds"]), stacks))
        if used and source:
            self.sources.add(source)
        return used

    def add_step(self, shape: tuple, stack: int, step_ms: float) -> None:
        """A step time measured in the current window: it replaces the others of its shape and stack size."""
        self.fresh[(shape, int(stack))] = float(step_ms)

    def step_ms(self, shape: tuple, stack: int) -> float | None:
        key = (shape, int(stack))
        if key in self.fresh:
            return self.fresh[key]
        values = self.steps.get(key)
        return statistics.median(values) if values else None

    def check_seconds(self, name: str, stacks: Mapping[tuple, int]) -> float | None:
        """Median seconds of the passed runs of check ``name`` whose trainings ran in the stacks the harness uses
        now (``stacks``: shape -> seeds per stack); None if there is none."""
        ok = [s for s, rec in self.checks.get(name, []) if all(stacks.get(k, v) == v for k, v in rec.items())]
        return statistics.median(ok) if ok else None

    def __bool__(self) -> bool:
        return bool(self.steps or self.checks or self.fresh)


def _same_device(name: str, key: str) -> bool:
    try:
        return device_key(name) == key
    except ValueError:
        return False


def _record_shape(t: Mapping) -> tuple | None:
    try:
        return shape_of(t["config"], t["flops_per_token"], t["batch_size"], t["seq_len"])
    except (KeyError, TypeError, ValueError):
        return None


def load(device: str, store: str | Path | None = None, seeds: Iterable[Path] = SEEDS) -> Calibration:
    """The calibration of ``device`` (a name or key) from the packaged measurements ``seeds`` and, if it exists,
    the run store ``store`` (never created here)."""
    cal = Calibration(device_key(device))
    for path in seeds:
        data = json.loads(Path(path).read_text())
        cal.add_runs(data["runs"], f"{Path(path).name}")
    if store is not None and str(store) != ":memory:" and Path(store).exists():
        from theorylab.runs import RunStore

        with RunStore(store) as s:
            cal.add_runs((r.to_dict() for r in s.iter(status="done")), str(store))
    return cal
