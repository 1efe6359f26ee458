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


def best_cpu_of(fns: dict, budget: float = 0.3, repeat: int = 3) -> dict[str, float]:
    """The smallest CPU time (``time.process_time``: this process only, so less at the mercy of a loaded
    machine than the wall clock) of cold calls of each ``fns[name]()``, interleaved (one call of each per
    round, the order rotated every round so that none always runs first) for at least ``repeat`` rounds and
    until ``budget`` seconds of CPU have passed (at most 200 rounds)."""
    best = dict.fromkeys(fns, float("inf"))
    names = list(fns)
    start, rounds = time.process_time(), 0
    while rounds < repeat or (rounds < 200 and time.process_time() - start < budget):
        for name in names[rounds % len(names) :] + names[: rounds % len(names)]:
            fn = fns[name]
            clear_caches()
            t = time.process_time()
            fn()
            best[name] = min(best[name], time.process_time() - t)
        rounds += 1
    return best


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
