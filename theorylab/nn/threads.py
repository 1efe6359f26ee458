"""Torch CPU thread counts set for a block or a function and given back afterwards (torch imported lazily).

``torch.set_num_threads`` is process-wide: a function that sets it for its own small steps and does not restore
it slows down everything that runs after it in the same process. Use :func:`num_threads` or :func:`with_threads`.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from contextlib import contextmanager


@contextmanager
def num_threads(threads: int):
    """Run the block with ``threads`` torch CPU threads and give the caller's count back afterwards (also on error)."""
    from theorylab._extras import require

    torch = require("torch", extra="trained")
    if not isinstance(threads, int) or isinstance(threads, bool) or threads < 1:
        raise ValueError(f"threads must be a positive int, got {threads!r}")
    prev = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        yield
    finally:
        torch.set_num_threads(prev)


def with_threads(threads: int) -> Callable:
    """Decorator: the function runs under :func:`num_threads` (``threads``)."""

    def wrap(fn: Callable) -> Callable:
        @functools.wraps(fn)
        def run(*args, **kwargs):
            with num_threads(threads):
                return fn(*args, **kwargs)

        return run

    return wrap
