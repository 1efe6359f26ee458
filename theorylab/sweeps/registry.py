"""Names a sweep spec may use: tasks, model kinds and metrics.

A task factory takes keyword arguments (the spec's ``[task]`` table) and returns a harness task. A model kind maps to
a config class whose fields the spec's ``[model]`` table sets (``vocab_size``/``n_outputs`` default to the task's,
``max_len`` to the budget's ``seq_len``). A metric is evaluated right after training on the stack's models and
returns numbers per seed (a sweep stores numbers, never models).
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

TASKS: dict[str, Callable[..., Any]] = {}
METRICS: dict[str, Metric] = {}


@dataclass(frozen=True)
class Context:
    """What a metric sees: the task, the trained models (one per seed, in seed order), the harness result and the
    metric's own arguments (the spec's ``[metric_args.NAME]`` table)."""

    task: Any
    models: list
    result: Any
    seq_len: int
    device: str
    args: Mapping[str, Any]


@dataclass(frozen=True)
class Metric:
    """``fn(ctx) -> {name: per-seed values}``; ``defaults`` are the allowed arguments and their default values."""

    name: str
    fn: Callable[[Context], Mapping[str, Any]]
    defaults: Mapping[str, Any]
    doc: str


def register_task(name: str):
    """Decorator: register a task factory under ``name`` (its keyword arguments are the spec's task fields)."""

    def deco(factory):
        TASKS[name] = factory
        return factory

    return deco


def register_metric(name: str, **defaults):
    """Decorator: register ``fn(ctx) -> {metric: per-seed values}`` with its allowed arguments and defaults."""

    def deco(fn):
        METRICS[name] = Metric(name, fn, dict(defaults), (fn.__doc__ or "").strip().split("\n")[0])
        return fn

    return deco


def task_fields(name: str) -> dict[str, Any]:
    """The keyword arguments a registered task accepts, with their defaults (``inspect.Parameter.empty`` if none)."""
    sig = inspect.signature(TASKS[name])
    return {
        p.name: p.default
        for p in sig.parameters.values()
        if p.kind is p.KEYWORD_ONLY or p.kind is p.POSITIONAL_OR_KEYWORD
    }


def model_classes() -> dict[str, type]:
    from theorylab.nn.models import LSTMConfig, MLPConfig, TransformerConfig

    return {"transformer": TransformerConfig, "lstm": LSTMConfig, "mlp": MLPConfig}


# ------------------------------------------------------------------------------------------------ tasks


@register_task("flipflop")
def _flipflop(p_ignore: float = 0.8, mode: str = "clean"):
    """Flip-flop language modelling on FFL(p_ignore) (p_w = p_r = (1 - p_ignore) / 2)."""
    from theorylab.languages.flipflop import FlipFlopTask

    return FlipFlopTask.ffl(float(p_ignore), mode=mode)


@register_task("flipflop_mixture")
def _flipflop_mixture(p_ignores: tuple = (0.9, 0.98, 0.1)):
    """R4's training mixture: each string from FFL(p) with p uniform over ``p_ignores``."""
    from theorylab.languages.flipflop import FlipFlopMixture

    return FlipFlopMixture(tuple(float(p) for p in p_ignores))


@register_task("automaton")
def _automaton(automaton: str = "parity", q0: int = 0):
    """State-sequence prediction for an automaton of the standard zoo (``theorylab.automata.zoo.standard()``)."""
    from theorylab.automata.tasks import AutomatonTask
    from theorylab.automata.zoo import standard

    zoo = standard()
    if automaton not in zoo:
        raise ValueError(f"unknown automaton {automaton!r}; expected one of {sorted(zoo)}")
    return AutomatonTask(zoo[automaton], q0=q0)


# ------------------------------------------------------------------------------------------------ metrics


@register_metric("final")
def _final(ctx: Context) -> dict[str, np.ndarray]:
    """Held-out loss and accuracy (``loss``, ``acc``, ``error`` = 1 - acc) and the last training window's."""
    f = ctx.result.final
    return {
        "loss": f["loss"],
        "acc": f["acc"],
        "error": 1.0 - np.asarray(f["acc"]),
        "train_loss": f["train_loss"],
        "train_acc": f["train_acc"],
    }


@register_metric("glitches", n_sparse=256, n_dense=256, seed=0, T=None)
def _glitches(ctx: Context) -> dict[str, np.ndarray]:
    """Flip-flop read errors on the fixed sparse FFL(0.98) and dense FFL(0.1) sets (counts, rates, and
    ``ood_error``: all errors over all reads of both sets)."""
    from theorylab.languages.flipflop import glitch_report

    a = ctx.args
    T = int(a["T"] or ctx.seq_len)
    rep = glitch_report(
        ctx.models, T, int(a["n_sparse"]), int(a["n_dense"]), seed=int(a["seed"]), device=ctx.device
    )
    reads = rep.reads["sparse"] + rep.reads["dense"]
    return {
        "sparse_errors": rep.errors["sparse"],
        "dense_errors": rep.errors["dense"],
        "sparse_error": rep.error_rate("sparse"),
        "dense_error": rep.error_rate("dense"),
        "ood_error": (rep.errors["sparse"] + rep.errors["dense"]) / max(reads, 1),
        "sparse_reads": np.full(len(ctx.models), rep.reads["sparse"]),
        "dense_reads": np.full(len(ctx.models), rep.reads["dense"]),
    }


@register_metric("curve", acc=0.99)
def _curve(ctx: Context) -> dict[str, np.ndarray]:
    """A summary of the training curve: the lowest windowed training loss and the first logged step whose
    training accuracy reaches ``acc`` (-1 if none)."""
    steps, loss = ctx.result.curve("loss")
    _, acc = ctx.result.curve("acc")
    hit = acc >= float(ctx.args["acc"])
    first = np.where(hit.any(axis=1), steps[np.argmax(hit, axis=1)], -1)
    return {"train_loss_min": np.nanmin(loss, axis=1), "steps_to_acc": first}
