"""Process-wide memo caches that a benchmark can clear: every cache of the library is either a
:class:`MemoCache` or a module-level ``functools`` cache, and :func:`clear_caches` empties them all, so a timed
call never measures a cache hit (``benchmarks/timing.py`` calls it before every timed call)."""

from __future__ import annotations

import sys
import weakref
from collections.abc import Callable, Hashable
from typing import Generic, TypeVar

__all__ = ["MemoCache", "clear_caches", "cache_sizes"]

V = TypeVar("V")
_REGISTRY: weakref.WeakSet[MemoCache] = weakref.WeakSet()


class MemoCache(Generic[V]):
    """A bounded first-in-first-out memo (``maxsize`` entries), registered for :func:`clear_caches`."""

    def __init__(self, name: str, maxsize: int = 128):
        if maxsize < 1:
            raise ValueError(f"maxsize must be >= 1, got {maxsize}")
        self.name, self.maxsize = name, maxsize
        self._data: dict[Hashable, V] = {}
        _REGISTRY.add(self)

    def get(self, key: Hashable) -> V | None:
        return self._data.get(key)

    def put(self, key: Hashable, value: V) -> V:
        if key not in self._data and len(self._data) >= self.maxsize:
            self._data.pop(next(iter(self._data)))
        self._data[key] = value
        return value

    def get_or_compute(self, key: Hashable, compute: Callable[[], V]) -> V:
        hit = self._data.get(key)
        return self.put(key, compute()) if hit is None else hit

    def clear(self) -> None:
        self._data.clear()

    def __len__(self) -> int:
        return len(self._data)

    def __repr__(self) -> str:
        return f"MemoCache({self.name!r}, {len(self)}/{self.maxsize})"


def _functools_caches():
    """Module-level ``functools.cache``/``lru_cache`` functions of the loaded ``theorylab`` modules."""
    for name, module in list(sys.modules.items()):
        if module is None or not (name == "theorylab" or name.startswith("theorylab.")):
            continue
        for obj in list(vars(module).values()):
            if callable(obj) and hasattr(obj, "cache_clear") and hasattr(obj, "cache_info"):
                yield f"{name}.{getattr(obj, '__name__', '?')}", obj


def clear_caches() -> None:
    """Empty every :class:`MemoCache` and every module-level functools cache of the library."""
    for cache in list(_REGISTRY):
        cache.clear()
    for _, fn in _functools_caches():
        fn.cache_clear()


def cache_sizes() -> dict[str, int]:
    """Entries held now, per cache (for tests and audits)."""
    out = {c.name: len(c) for c in list(_REGISTRY)}
    out |= {name: fn.cache_info().currsize for name, fn in _functools_caches()}
    return out
