"""Executors: where the stacks of a sweep run.

``LocalExecutor`` runs them one after another in this process. ``RayExecutor`` submits each stack as a Ray task that
asks for its CPUs/GPUs (``num_cpus``, ``num_gpus``, ``memory``), connects to a running cluster with ``address``
(``"auto"``, ``"HOST:6379"`` or ``"ray://HOST:10001"``) or starts a local one, and yields results as tasks complete.
A task whose worker process dies is resubmitted by Ray (``max_retries``); an exception raised by the task itself is
not retried and comes back as that stack's error.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Sequence
from typing import Any

EXECUTORS = ("local", "ray")


class LocalExecutor:
    """In-process, sequential (the default)."""

    name = "local"

    def map_unordered(
        self, fn: Callable, jobs: Sequence[tuple], resources: dict | None = None
    ) -> Iterator[tuple[int, Any, BaseException | None]]:
        """Yield ``(job index, result, error)`` for each job ``fn(*job)``; an exception is returned, not raised."""
        for i, job in enumerate(jobs):
            try:
                yield i, fn(*job), None
            except Exception as exc:  # a failed stack is recorded; the sweep goes on
                yield i, None, exc

    def close(self) -> None:
        pass


class RayExecutor:
    """Ray tasks: one per stack, retried ``max_retries`` times when their worker dies."""

    name = "ray"

    def __init__(self, address: str | None = None, max_retries: int = 3, **init_kwargs) -> None:
        from theorylab._extras import require

        ray = require("ray", extra="distributed")
        if isinstance(max_retries, bool) or not isinstance(max_retries, int) or max_retries < 0:
            raise ValueError(f"max_retries must be an int >= 0, got {max_retries!r}")
        self.ray = ray
        self.max_retries = max_retries
        self.started = False
        if not ray.is_initialized():
            init_kwargs.setdefault("include_dashboard", False)
            init_kwargs.setdefault("log_to_driver", False)
            ray.init(address=address or os.environ.get("RAY_ADDRESS"), **init_kwargs)
            self.started = True

    def map_unordered(
        self, fn: Callable, jobs: Sequence[tuple], resources: dict | None = None
    ) -> Iterator[tuple[int, Any, BaseException | None]]:
        ray = self.ray
        opts = {
            "num_cpus": 1,
            **(resources or {}),
            "max_retries": self.max_retries,
            "retry_exceptions": False,
        }
        remote = ray.remote(fn).options(**opts)
        refs = {remote.remote(*job): i for i, job in enumerate(jobs)}
        pending = list(refs)
        try:
            while pending:
                ready, pending = ray.wait(pending, num_returns=1)
                for ref in ready:
                    try:
                        yield refs[ref], ray.get(ref), None
                    except ray.exceptions.RayTaskError as exc:
                        yield refs[ref], None, exc.as_instanceof_cause()
                    except ray.exceptions.RayError as exc:  # retries exhausted, node lost, ...
                        yield refs[ref], None, exc
        finally:
            for ref in pending:  # interrupted: do not leave the cluster busy with results nobody stores
                ray.cancel(ref)  # queued tasks are dropped, running ones interrupted; their workers stay

    def close(self) -> None:
        if self.started:
            self.ray.shutdown()
            self.started = False


def make_executor(name: str = "local", address: str | None = None, **kwargs):
    """``"local"`` or ``"ray"`` (``address``, ``max_retries`` and ``ray.init`` options go to Ray)."""
    if name == "local":
        if address is not None:
            raise ValueError("address= is only used with executor='ray'")
        return LocalExecutor()
    if name == "ray":
        return RayExecutor(address=address, **kwargs)
    raise ValueError(f"unknown executor {name!r}; executors: {EXECUTORS}")
