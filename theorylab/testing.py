"""Helpers for claim checks written with hypothesis.

:func:`trivial` records whether the example a property check just drew is a *trivial instance*: one on which the
claim holds for a reason that says nothing about the claim (the identity relabeling, a zero perturbation, a
one-element semigroup, a model paired with itself). Under the theorylab pytest plugin, a property check whose share
of trivial draws exceeds :data:`MAX_TRIVIAL_SHARE` fails, and the share is written to the claim table's JSON
artifact; outside a check (or without the plugin) the call only returns its argument.
"""

from __future__ import annotations

from contextvars import ContextVar

__all__ = ["MAX_TRIVIAL_SHARE", "DrawCounter", "rejects", "trivial"]

#: The largest share of trivial draws a property check may have: at most one example in five may be trivial, so
#: four in five exercise the claim.
MAX_TRIVIAL_SHARE = 0.2


class DrawCounter:
    """Counts the examples a property check drew and how many of them were trivial."""

    def __init__(self) -> None:
        self.draws = 0
        self.trivial = 0

    @property
    def share(self) -> float:
        """trivial / draws (0 when nothing was recorded)."""
        return self.trivial / self.draws if self.draws else 0.0


_current: ContextVar[DrawCounter | None] = ContextVar("theorylab_draw_counter", default=None)


def trivial(flag: bool) -> bool:
    """Record one drawn example; ``flag`` says whether it is a trivial instance. Returns ``flag``, so that a check
    can write ``if trivial(theta == 0): return``."""
    if type(flag).__name__ not in ("bool", "bool_"):  # Python's or numpy's bool
        raise TypeError(
            f"trivial() takes a bool (is this draw a trivial instance?), got {type(flag).__name__}"
        )
    counter = _current.get()
    if counter is not None:
        counter.draws += 1
        counter.trivial += int(bool(flag))
    return bool(flag)


def rejects(call, match: str, error: type[BaseException] = ValueError) -> BaseException:
    """Assert that ``call()`` raises ``error`` with a message that *begins* with ``match`` (a regular expression,
    case-sensitive): a definition's domain is checked by its boundary, and the message must name the problem.
    Returns the exception."""
    import re

    import pytest

    with pytest.raises(error) as info:
        call()
    message = str(info.value)
    assert re.match(match, message), f"{message!r} does not begin with {match!r}"
    return info.value


def start_counting() -> tuple[DrawCounter, object]:
    """Begin counting the draws of one check (used by the pytest plugin); returns the counter and a reset token."""
    counter = DrawCounter()
    return counter, _current.set(counter)


def stop_counting(token) -> None:
    """End the count begun by :func:`start_counting`."""
    _current.reset(token)
