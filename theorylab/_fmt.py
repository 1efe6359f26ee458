"""Values in error messages: numbers plainly (``1.1``, not ``np.float64(1.1)``), everything else as ``repr``."""

from __future__ import annotations

import numpy as np

__all__ = ["plain"]


def plain(value) -> str:
    """``repr`` of ``value`` with numpy scalars and 0-d arrays shown as Python numbers (``1.1``, ``3``, ``True``)
    and arrays without their ``array(...)`` wrapper; strings keep their quotes (so ``'3'`` and ``3`` differ)."""
    if isinstance(value, np.generic) or (isinstance(value, np.ndarray) and value.ndim == 0):
        value = value.item()
    if isinstance(value, np.ndarray):
        return np.array2string(value, threshold=8, separator=", ")
    return repr(value)
