"""The minimum training-quality guard of trained verdicts: a verdict refuses models that did not learn the task.

A comparison between two trained models (a depth table, "regulariser A glitches less than B") can pass vacuously
when neither model learned anything (``inf <= inf``, ``0.5 <= 0.5``). Such a verdict first calls
:func:`require_trained`, which fails (never skips) with :class:`UnderTrainedError` when the models are below the
quality the claim presupposes.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np


class UnderTrainedError(AssertionError):
    """The models are below the training quality that the verdict presupposes: the verdict refuses them."""


def require_trained(values: float | Sequence[float], bound: float, what: str, *, above: bool = True) -> None:
    """Fail unless every value is ``>= bound`` (``above``) or ``<= bound`` (not ``above``); NaN fails.

    ``what`` names the quality and the models, e.g. ``"in-distribution read accuracy of the baseline seeds"``."""
    arr = np.atleast_1d(np.asarray(values, dtype=float))
    if arr.size == 0:
        raise ValueError(f"no values to check for {what}")
    if not np.isfinite(bound):
        raise ValueError(f"bound must be finite, got {bound}")
    ok = np.all(arr >= bound) if above else np.all(arr <= bound)
    if not ok or np.isnan(arr).any():
        side = ">=" if above else "<="
        raise UnderTrainedError(
            f"under-trained: {what} must be {side} {bound:g} for the verdict to mean anything, "
            f"measured {np.round(arr, 6).tolist()}"
        )
