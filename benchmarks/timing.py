"""Timing helpers shared by the benchmark scripts (run as ``python benchmarks/bench_x.py``, so this folder is on
``sys.path``). The only clock of the benchmarks: every timed call starts with the library's caches emptied
(:func:`theorylab.caching.clear_caches`), so no measurement is a cache hit (``tests/test_benchmarks.py`` checks
that no script reads a clock of its own)."""

from __future__ import annotations

import time

from theorylab.caching import clear_caches


def best_of(fn, repeat: int) -> tuple[float, object]:
    """The smallest wall time of ``repeat`` cold calls of ``fn()`` (caches emptied before each; the least
    disturbed run) and the last result."""
    best, out = float("inf"), None
    for _ in range(repeat):
        clear_caches()
        t = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - t)
    return best, out


def timed(fn, *args, **kwargs) -> tuple[float, object]:
    """Wall time and result of one cold call ``fn(*args, **kwargs)``."""
    return best_of(lambda: fn(*args, **kwargs), 1)


class Stopwatch:
    """A clock for measurements that are not one call (time to the first event of a loop): caches are emptied
    when it starts; ``elapsed()`` reads the seconds since."""

    def __init__(self) -> None:
        clear_caches()
        self._start = time.perf_counter()

    def elapsed(self) -> float:
        return time.perf_counter() - self._start
