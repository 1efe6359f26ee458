"""Sweep specifications: a task, a base model and budget, a grid over their fields, seeds and metrics.

A spec expands to configurations (the Cartesian product of the grid, in the order the grid lists its fields) and
runs (configuration x seed). Every field name, grid value, seed and metric is checked before anything runs.

TOML form (``SweepSpec.from_toml``)::

    name = "flipflop-small"
    seeds = [0, 1, 2, 3]            # or a count: seeds = 4 -> 0..3
    metrics = ["final", "glitches"]
    device = "cpu"                  # optional; "cuda" on a GPU
    max_stack = 8                   # optional: at most this many seeds per vmapped stack (one executor task)
    [task]
    name = "flipflop"
    p_ignore = 0.8
    [model]
    kind = "transformer"            # transformer | lstm | mlp
    d_model = 32
    [budget]
    steps = 300
    batch_size = 16
    seq_len = 32
    lr = 3e-3
    [grid]
    "model.n_layers" = [1, 2]       # or [grid.model] n_layers = [1, 2]
    [metric_args.glitches]
    n_sparse = 128
    [resources]                     # what each stack asks of a Ray cluster
    num_cpus = 1
    num_gpus = 0
"""

from __future__ import annotations

import dataclasses
import itertools
import tomllib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from theorylab.sweeps.registry import METRICS, TASKS, model_classes, task_fields

SECTIONS = ("task", "model", "budget")
_TOP = (
    "name",
    "seeds",
    "metrics",
    "device",
    "max_stack",
    "task",
    "model",
    "budget",
    "grid",
    "metric_args",
    "resources",
)
_RESOURCES = ("num_cpus", "num_gpus", "memory")
_BUDGET_REQUIRED = ("steps", "batch_size", "seq_len", "lr")


class SpecError(ValueError):
    """A malformed sweep spec (raised before anything runs)."""


def _did_you_mean(word: str, choices) -> str:
    import difflib

    close = difflib.get_close_matches(word, list(choices), n=1)
    return f" (did you mean {close[0]!r}?)" if close else ""


def _budget_fields() -> dict[str, Any]:
    from theorylab.nn.train import Budget

    return {f.name: f for f in dataclasses.fields(Budget)}


def _section_fields(section: str, task: str, model_kind: str) -> set[str]:
    if section == "task":
        return set(task_fields(task))
    if section == "model":
        return {f.name for f in dataclasses.fields(model_classes()[model_kind])}
    return set(_budget_fields())


def _flatten_grid(grid: Mapping[str, Any]) -> dict[str, list]:
    flat: dict[str, list] = {}
    for key, value in grid.items():
        if isinstance(value, Mapping):
            for sub, v in value.items():
                flat[f"{key}.{sub}"] = v
        else:
            flat[key] = value
    return flat


def _seeds(seeds: Any) -> tuple[int, ...]:
    if isinstance(seeds, int) and not isinstance(seeds, bool):
        if seeds < 1:
            raise SpecError(f"seeds: a count of seeds must be >= 1, got {seeds}")
        return tuple(range(seeds))
    if not isinstance(seeds, Sequence) or isinstance(seeds, str) or not seeds:
        raise SpecError(f"seeds must be a non-empty list of ints or a count, got {seeds!r}")
    for s in seeds:
        if isinstance(s, bool) or not isinstance(s, int) or s < 0:
            raise SpecError(f"seeds must be non-negative ints, got {s!r}")
    dup = sorted({s for s in seeds if list(seeds).count(s) > 1})
    if dup:
        raise SpecError(
            f"seeds: duplicate seeds {dup} (each run would be stored once, the sweep would be smaller)"
        )
    return tuple(seeds)


@dataclass(frozen=True)
class SweepSpec:
    """A validated sweep; see the module docstring for the fields."""

    name: str
    task: Mapping[str, Any]
    model: Mapping[str, Any]
    budget: Mapping[str, Any]
    seeds: tuple[int, ...]
    metrics: tuple[str, ...]
    grid: Mapping[str, list] = field(default_factory=dict)
    metric_args: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    device: str = "cpu"
    max_stack: int | None = None
    resources: Mapping[str, float] = field(default_factory=dict)

    # -- construction -------------------------------------------------------------------------------------
    @classmethod
    def from_toml(cls, path: str | Path) -> SweepSpec:
        path = Path(path)
        try:
            data = tomllib.loads(path.read_text())
        except tomllib.TOMLDecodeError as exc:
            raise SpecError(f"{path}: not valid TOML: {exc}") from exc
        return cls.from_dict(data)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> SweepSpec:
        if not isinstance(data, Mapping):
            raise SpecError(f"a sweep spec is a table, got {type(data).__name__}")
        unknown = sorted(set(data) - set(_TOP))
        if unknown:
            raise SpecError(
                f"unknown spec field {unknown[0]!r}{_did_you_mean(unknown[0], _TOP)}; fields: {_TOP}"
            )
        for key in ("name", "task", "budget", "seeds", "metrics"):
            if key not in data:
                raise SpecError(f"the spec needs {key!r}")
        task = dict(data["task"]) if isinstance(data["task"], Mapping) else {"name": data["task"]}
        metrics = data["metrics"]
        if isinstance(metrics, str):
            metrics = [metrics]
        spec = cls(
            name=data["name"],
            task=task,
            model=dict(data.get("model", {})),
            budget=dict(data["budget"]),
            seeds=_seeds(data["seeds"]),
            metrics=tuple(metrics),
            grid=_flatten_grid(data.get("grid", {})),
            metric_args={k: dict(v) for k, v in data.get("metric_args", {}).items()},
            device=data.get("device", "cpu"),
            max_stack=data.get("max_stack"),
            resources=dict(data.get("resources", {})),
        )
        return spec

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name.strip():
            raise SpecError("name must be a non-empty string")
        object.__setattr__(self, "seeds", _seeds(self.seeds))
        tname = self.task.get("name")
        if tname not in TASKS:
            raise SpecError(
                f"unknown task {tname!r}{_did_you_mean(str(tname), TASKS)}; tasks: {sorted(TASKS)}"
            )
        kind = self.model.get("kind", "transformer")
        if kind not in model_classes():
            raise SpecError(f"unknown model kind {kind!r}; kinds: {sorted(model_classes())}")
        bases = {
            "task": {k: v for k, v in self.task.items() if k != "name"},
            "model": {k: v for k, v in self.model.items() if k != "kind"},
            "budget": dict(self.budget),
        }
        for section, values in bases.items():
            allowed = _section_fields(section, tname, kind)
            for key in values:
                if key not in allowed:
                    raise SpecError(
                        f"unknown {section} field {key!r}{_did_you_mean(key, allowed)}; {section} fields: "
                        f"{sorted(allowed)}"
                    )
        if not isinstance(self.grid, Mapping):
            raise SpecError("grid must be a table of 'section.field' = [values]")
        for key, values in self.grid.items():
            section, _, fname = key.partition(".")
            if section not in SECTIONS or not fname:
                raise SpecError(f"grid key {key!r} must be 'task.FIELD', 'model.FIELD' or 'budget.FIELD'")
            allowed = _section_fields(section, tname, kind)
            if fname not in allowed:
                raise SpecError(
                    f"grid: unknown {section} field {fname!r}{_did_you_mean(fname, allowed)}; {section} fields: "
                    f"{sorted(allowed)}"
                )
            if isinstance(values, str) or not isinstance(values, Sequence) or len(values) == 0:
                raise SpecError(
                    f"grid {key!r}: an empty grid (give a non-empty list of values), got {values!r}"
                )
            seen = [repr(v) for v in values]
            if len(set(seen)) != len(seen):
                raise SpecError(f"grid {key!r}: duplicate values {list(values)}")
        missing = [f for f in _BUDGET_REQUIRED if f not in self.budget and f"budget.{f}" not in self.grid]
        if missing:
            raise SpecError(f"budget needs {missing} (in [budget] or the grid)")
        if isinstance(self.metrics, str) or not self.metrics:
            raise SpecError("metrics must be a non-empty list of registered metric names")
        for m in self.metrics:
            if m not in METRICS:
                raise SpecError(
                    f"metric {m!r} is not registered{_did_you_mean(str(m), METRICS)}; "
                    f"registered: {sorted(METRICS)}"
                )
        if len(set(self.metrics)) != len(self.metrics):
            raise SpecError(f"metrics: duplicates in {list(self.metrics)}")
        for m, args in self.metric_args.items():
            if m not in self.metrics:
                raise SpecError(
                    f"metric_args.{m}: {m!r} is not one of the sweep's metrics {list(self.metrics)}"
                )
            for a in args:
                if a not in METRICS[m].defaults:
                    raise SpecError(
                        f"metric_args.{m}: unknown argument {a!r}; allowed: {sorted(METRICS[m].defaults)}"
                    )
        if self.device not in ("cpu", "cuda") and not str(self.device).startswith("cuda:"):
            raise SpecError(f"device must be 'cpu' or 'cuda', got {self.device!r}")
        if self.max_stack is not None and (
            isinstance(self.max_stack, bool) or not isinstance(self.max_stack, int) or self.max_stack < 1
        ):
            raise SpecError(f"max_stack must be a positive int, got {self.max_stack!r}")
        for r, v in self.resources.items():
            if r not in _RESOURCES:
                raise SpecError(f"unknown resource {r!r}; resources: {_RESOURCES}")
            if isinstance(v, bool) or not isinstance(v, int | float) or v < 0:
                raise SpecError(f"resource {r} must be a number >= 0, got {v!r}")

    # -- expansion ----------------------------------------------------------------------------------------
    def configs(self) -> list[dict[str, Any]]:
        """Every configuration of the grid (a plain dict: task, model, budget, metrics with their arguments)."""
        keys = list(self.grid)
        out = []
        for values in itertools.product(*(self.grid[k] for k in keys)):
            cfg = {
                "task": dict(self.task),
                "model": {"kind": self.model.get("kind", "transformer"), **self.model},
                "budget": dict(self.budget),
                "metrics": {m: {**METRICS[m].defaults, **self.metric_args.get(m, {})} for m in self.metrics},
            }
            for k, v in zip(keys, values, strict=True):
                section, _, fname = k.partition(".")
                cfg[section][fname] = v
            out.append(cfg)
        return out

    @property
    def n_runs(self) -> int:
        return len(self.configs()) * len(self.seeds)

    def validate_values(self) -> None:
        """Build the task, model config and budget of every configuration (bad values raise here, before
        anything is trained)."""
        for cfg in self.configs():
            try:
                build(cfg)
            except (TypeError, ValueError) as exc:
                grid = {k: cfg[k.partition(".")[0]][k.partition(".")[2]] for k in self.grid}
                raise SpecError(f"configuration {grid or '(base)'}: {exc}") from exc


def _tuples(d: Mapping[str, Any]) -> dict[str, Any]:
    return {k: tuple(v) if isinstance(v, list) else v for k, v in d.items()}


def build(cfg: Mapping[str, Any]):
    """(task, model config, budget) of one configuration dict of :meth:`SweepSpec.configs`."""
    from theorylab.nn.train import Budget

    task_args = {k: v for k, v in cfg["task"].items() if k != "name"}
    task = TASKS[cfg["task"]["name"]](**_tuples(task_args))
    budget = Budget(**_tuples(cfg["budget"]))
    model = {k: v for k, v in cfg["model"].items() if k != "kind"}
    cls = model_classes()[cfg["model"]["kind"]]
    names = {f.name for f in dataclasses.fields(cls)}
    model.setdefault("vocab_size", task.vocab_size)
    model.setdefault("n_outputs", task.n_outputs)
    if "max_len" in names:
        model.setdefault("max_len", budget.seq_len)
    return task, cls(**_tuples(model)), budget
