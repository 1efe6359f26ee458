"""Helpers for claim checks written with hypothesis.

:func:`trivial` records whether the example a property check just drew is a *trivial instance*: one on which the
claim holds for a reason that says nothing about the claim (the identity relabeling, a zero perturbation, a
one-element semigroup, a model paired with itself). Under the theorylab pytest plugin, a property check whose share
of trivial draws exceeds :data:`MAX_TRIVIAL_SHARE` fails, and the share is written to the claim table's JSON
artifact; outside a check (or without the plugin) the call only returns its argument.
"""

from __future__ import annotations

from contextvars import ContextVar

__all__ = ["MAX_TRIVIAL_SHARE", "DrawCounter", "note_training", "rejects", "trivial"]

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


_trainings: ContextVar[list[dict] | None] = ContextVar("theorylab_trainings", default=None)


def note_training(threads: int, stack_size: int, seeds: int, device: str) -> None:
    """Record the environment of one training run (called by :func:`theorylab.nn.train`): the CPU threads, how
    many seeds were trained in one vmapped stack (1: one after another) and the device. Inside a trained claim check
    the plugin writes it next to the check's measured numbers; elsewhere the call does nothing."""
    log = _trainings.get()
    if log is not None:
        log.append(
            {"threads": int(threads), "stack_size": int(stack_size), "seeds": int(seeds), "device": device}
        )


def start_training_log() -> tuple[list[dict], object]:
    """Begin collecting the trainings of one check (used by the pytest plugin); returns the log and a reset token."""
    log: list[dict] = []
    return log, _trainings.set(log)


def stop_training_log(token) -> None:
    """End the log begun by :func:`start_training_log`."""
    _trainings.reset(token)


def training_environment(log: list[dict]) -> dict:
    """The environment of a trained check's numbers: torch's version, the CPU threads and the stacking of the
    trainings it ran (``"stacked"``: seeds trained together under vmap, ``"sequential"``: one after another), as
    recorded by :func:`note_training`. A check that trained nothing itself (its models came from an earlier check
    of the same run, or from outside the harness) records torch's current thread count and ``"not recorded"``."""
    import sys

    torch = sys.modules.get("torch")
    env: dict = {"torch": str(torch.__version__) if torch is not None else None}
    if log:
        env["threads"] = sorted({t["threads"] for t in log})
        kinds = sorted({"stacked" if t["stack_size"] > 1 else "sequential" for t in log})
        env["training"] = kinds[0] if len(kinds) == 1 else "+".join(kinds)
        env["stack_sizes"] = sorted({t["stack_size"] for t in log})
    else:
        env["threads"] = [torch.get_num_threads()] if torch is not None else []
        env["training"] = "not recorded"
    return env


_progress_sink: ContextVar[object | None] = ContextVar("theorylab_progress_sink", default=None)


def progress_sink():
    """The callable ``sink(label, step, total)`` that receives the training harness's progress during a trained
    claim check (set by the pytest plugin on an interactive terminal, without ``-q``), or ``None``."""
    return _progress_sink.get()


def set_progress_sink(sink) -> object:
    """Install ``sink`` (see :func:`progress_sink`); returns a reset token for :func:`reset_progress_sink`."""
    return _progress_sink.set(sink)


def reset_progress_sink(token) -> None:
    _progress_sink.reset(token)
