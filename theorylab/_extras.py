"""Optional dependencies: which extra of ``pip install 'theorylab[EXTRA]'`` brings which package.

The core install (numpy, scipy, sympy, mpmath) runs the exact constructions; the heavy packages are imported lazily
through :func:`require`, which turns a missing one into a one-line :class:`MissingExtraError` naming the extra.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterator
from contextlib import contextmanager
from types import ModuleType

__all__ = ["EXTRAS", "MissingExtraError", "require", "needs"]

# top-level module -> (pip distribution, extra that installs it)
EXTRAS: dict[str, tuple[str, str]] = {
    "torch": ("torch", "trained"),
    "cvxpy": ("cvxpy", "convex"),
    "tensorly": ("tensorly", "tensors"),
    "matplotlib": ("matplotlib", "plots"),
    "pytest": ("pytest", "checks"),
    "hypothesis": ("hypothesis", "checks"),
    "xdist": ("pytest-xdist", "checks"),
    "threadpoolctl": ("threadpoolctl", "checks"),
    "latex2mathml": ("latex2mathml", "docs"),
    "ray": ("ray", "distributed"),
}


class MissingExtraError(ImportError):
    """An optional dependency is not installed; the message names the extra that installs it."""


def require(module: str, extra: str | None = None) -> ModuleType:
    """Import ``module`` (e.g. ``"torch"`` or ``"torch.nn"``) or raise :class:`MissingExtraError` naming the
    extra to install (``extra``, default: the one :data:`EXTRAS` lists for the top-level package)."""
    top = module.split(".", 1)[0]
    try:
        return importlib.import_module(module)
    except ModuleNotFoundError as exc:
        if exc.name is not None and exc.name.split(".", 1)[0] != top:
            raise  # the package is there but one of its own dependencies is broken: keep the real error
        raise MissingExtraError(_message(module, extra), name=top) from None


def _message(module: str, extra: str | None) -> str:
    top = module.split(".", 1)[0]
    dist, default_extra = EXTRAS.get(top, (top, None))
    extra = extra or default_extra
    how = f"pip install 'theorylab[{extra}]'" if extra else f"pip install {dist}"
    return f"{module} is not installed; this needs {dist}: {how}"


@contextmanager
def needs(extra: str) -> Iterator[None]:
    """Module-level form of :func:`require` for a module that cannot work without an optional package::

    with needs("trained"):
        torch = require("torch", extra="trained")
    """
    try:
        yield
    except ModuleNotFoundError as exc:
        top = (exc.name or "").split(".", 1)[0]
        if top not in EXTRAS:
            raise
        raise MissingExtraError(_message(top, extra), name=top) from None
