"""Sweeps of trained models: a task, a grid over config and budget fields, seeds and metrics, expanded to runs,
packed into vmapped seed stacks and run on an executor (``local`` in-process, or ``ray``), with one row per run
in the run store (:mod:`theorylab.runs`). See ``docs/sweeps.md``."""

from theorylab.sweeps.executors import EXECUTORS, LocalExecutor, RayExecutor, make_executor
from theorylab.sweeps.registry import METRICS, TASKS, Context, register_metric, register_task
from theorylab.sweeps.run import (
    SweepReport,
    SweepResults,
    SweepStatus,
    plan,
    run_sweep,
    sweep_results,
    sweep_status,
    train_stack,
)
from theorylab.sweeps.spec import SpecError, SweepSpec

__all__ = [
    "EXECUTORS",
    "METRICS",
    "TASKS",
    "Context",
    "LocalExecutor",
    "RayExecutor",
    "SpecError",
    "SweepReport",
    "SweepResults",
    "SweepSpec",
    "SweepStatus",
    "make_executor",
    "plan",
    "register_metric",
    "register_task",
    "run_sweep",
    "sweep_results",
    "sweep_status",
    "train_stack",
]
