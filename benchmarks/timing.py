"""Timing helper shared by the benchmark scripts (run as ``python benchmarks/bench_x.py``, so this folder is on
``sys.path``)."""

from __future__ import annotations

import time


def best_of(fn, repeat: int) -> tuple[float, object]:
    """The smallest wall time of ``repeat`` calls of ``fn()`` (the least disturbed run) and the last result."""
    best, out = float("inf"), None
    for _ in range(repeat):
        t = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - t)
    return best, out
