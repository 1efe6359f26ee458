"""Tasks for the training harness: a batch format, the :class:`Task` protocol and generic helpers.

A task is any object with ``name``, ``vocab_size``, ``n_outputs``, ``loss`` and ``sample_batch(rng, batch, T)``;
optionally ``sample_batches(rngs, batch, T)``, a vectorised sampler of one batch per seed that must return exactly
``[sample_batch(r, batch, T) for r in rngs]`` (the training feed uses it when present).
Losses: ``"ce"`` (integer class targets ``[B, T]``), ``"soft_ce"`` (target distributions ``[B, T, C]``) and
``"mse"`` (regression targets ``[B, T, C]``, or ``[B, T]`` when ``n_outputs == 1``). ``mask[b, t]`` says whether
position ``t`` of sequence ``b`` counts in the loss and the accuracy. This module does not import torch.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

import numpy as np

from theorylab._fmt import plain

LOSSES = ("ce", "soft_ce", "mse")


@dataclass(frozen=True)
class Batch:
    """One batch: ``inputs`` int64 ``[B, T]``, ``targets`` (see the module docstring), ``mask`` bool ``[B, T]``."""

    inputs: np.ndarray
    targets: np.ndarray
    mask: np.ndarray

    @property
    def shape(self) -> tuple[int, int]:
        return tuple(self.inputs.shape)  # type: ignore[return-value]


@runtime_checkable
class Task(Protocol):
    """What :func:`theorylab.nn.train` needs from a task."""

    name: str
    vocab_size: int
    n_outputs: int
    loss: str

    def sample_batch(self, rng: np.random.Generator, batch: int, T: int) -> Batch: ...


def check_task(task: object) -> None:
    """Raise ``TypeError``/``ValueError`` unless ``task`` satisfies the :class:`Task` protocol."""
    for attr in ("name", "vocab_size", "n_outputs", "loss", "sample_batch"):
        if not hasattr(task, attr):
            raise TypeError(f"task {task!r} lacks attribute {attr!r} of the Task protocol")
    if task.loss not in LOSSES:  # type: ignore[attr-defined]
        raise ValueError(f"task.loss must be one of {LOSSES}, got {task.loss!r}")  # type: ignore[attr-defined]
    for attr in ("vocab_size", "n_outputs"):
        value = getattr(task, attr)
        if not isinstance(value, int | np.integer) or value < 1:
            raise ValueError(f"task.{attr} must be a positive int, got {plain(value)}")


def check_batch(batch: Batch, task: Task, batch_size: int | None = None, T: int | None = None) -> Batch:
    """Validate shapes, dtypes and value ranges of ``batch`` against ``task``; return it unchanged."""
    if not isinstance(batch, Batch):
        raise TypeError(f"sample_batch of task {task.name!r} must return a Batch, got {type(batch).__name__}")
    x, y, m = batch.inputs, batch.targets, batch.mask
    if x.ndim != 2 or not np.issubdtype(x.dtype, np.integer):
        raise ValueError(f"inputs must be an integer array [B, T], got {x.dtype} {x.shape}")
    if batch_size is not None and T is not None and x.shape != (batch_size, T):
        raise ValueError(f"inputs have shape {x.shape}, expected {(batch_size, T)}")
    if x.size and (x.min() < 0 or x.max() >= task.vocab_size):
        raise ValueError(f"input token ids must lie in [0, {task.vocab_size}), got [{x.min()}, {x.max()}]")
    if m.shape != x.shape or m.dtype != np.bool_:
        raise ValueError(f"mask must be a bool array of shape {x.shape}, got {m.dtype} {m.shape}")
    if task.loss == "ce":
        if y.shape != x.shape or not np.issubdtype(y.dtype, np.integer):
            raise ValueError(f"'ce' targets must be integer [B, T] = {x.shape}, got {y.dtype} {y.shape}")
        if m.any() and (y[m].min() < 0 or y[m].max() >= task.n_outputs):
            raise ValueError(f"'ce' targets at masked positions must lie in [0, {task.n_outputs})")
    else:
        expected = x.shape + (task.n_outputs,)
        if y.shape != expected and not (task.loss == "mse" and task.n_outputs == 1 and y.shape == x.shape):
            raise ValueError(f"{task.loss!r} targets must have shape {expected}, got {y.shape}")
        if not np.all(np.isfinite(y[m])):
            raise ValueError("targets contain NaN or infinity at masked positions")
    return batch


def stack_batches(batches: list[Batch]) -> Batch:
    """Stack equally shaped batches along a new leading axis (e.g. one batch per seed)."""
    return Batch(
        inputs=np.stack([b.inputs for b in batches]),
        targets=np.stack([b.targets for b in batches]),
        mask=np.stack([b.mask for b in batches]),
    )


@dataclass(frozen=True)
class FunctionTask:
    """A task made from a function ``sampler(rng, batch, T) -> Batch``: the quickest way to write a new task."""

    name: str
    vocab_size: int
    n_outputs: int
    loss: str
    sampler: Callable[[np.random.Generator, int, int], Batch]

    def __post_init__(self) -> None:
        check_task(self)

    def sample_batch(self, rng: np.random.Generator, batch: int, T: int) -> Batch:
        return self.sampler(rng, batch, T)


@dataclass(frozen=True)
class CopyTask:
    """Predict the current token (``shift=0``) or the token ``shift`` positions back: a minimal smoke-test task."""

    vocab_size: int = 8
    shift: int = 0
    name: str = "copy"
    loss: str = "ce"

    @property
    def n_outputs(self) -> int:
        return self.vocab_size

    def sample_batch(self, rng: np.random.Generator, batch: int, T: int) -> Batch:
        x = rng.integers(0, self.vocab_size, size=(batch, T), dtype=np.int64)
        y = np.zeros_like(x)
        y[:, self.shift :] = x[:, : T - self.shift]
        mask = np.zeros((batch, T), dtype=bool)
        mask[:, self.shift :] = True
        return Batch(x, y, mask)


def sample_fixed_dataset(task: Task, rng: np.random.Generator, n: int, T: int, chunk: int = 4096) -> Batch:
    """Draw ``n`` sequences once (in chunks, so sampling memory stays bounded); used for ``Budget.fixed_dataset``."""
    if n < 1:
        raise ValueError(f"fixed dataset size must be >= 1, got {n}")
    parts = [check_batch(task.sample_batch(rng, min(chunk, n - i), T), task) for i in range(0, n, chunk)]
    return Batch(*(np.concatenate([getattr(p, f) for p in parts]) for f in ("inputs", "targets", "mask")))


def take(batch: Batch, index: np.ndarray) -> Batch:
    """Rows ``index`` of a batch."""
    return Batch(batch.inputs[index], batch.targets[index], batch.mask[index])
