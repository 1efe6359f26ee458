"""``--theorylab-trained-budget``: the pytest mirror of ``theorylab trained --budget`` chooses, in order of value,
the catalog's full-size checks that fit and skips the others; other tests are untouched. The option exists only
where the plugin is on (``tests/test_plugin.py`` checks that a project without it sees nothing of theorylab)."""

from __future__ import annotations

import pytest

pytest.importorskip("torch")

pytest_plugins = ["pytester"]

from theorylab.trained import CATALOG  # noqa: E402
from theorylab.trained.budget import apply_budget  # noqa: E402


class _Item:
    def __init__(self, nodeid: str):
        self.nodeid, self.marks = nodeid, []

    def add_marker(self, mark):
        self.marks.append(mark)


def _nodes(name: str) -> tuple[str, ...]:
    return next(c for c in CATALOG if c.name == name).nodes


def test_the_budget_runs_what_fits_in_order_of_value_and_skips_the_rest():
    # R1 and R6 (value 1 and 2) plan from the recipes alone: no check module is loaded, so this stays cheap
    r6, r1, other = _nodes("flipflop.R6"), _nodes("flipflop.R1"), "tests/test_x.py::test_other"
    items = [_Item(n) for n in (*r6, other, *r1)]
    # R1 (~1,320 s, measured on an H100: 8 seeds in turn at 15.7 ms per step) fits, then R6 (as much) does not
    lines = apply_budget(items, 2000.0, "full", "cpu")
    assert [i.nodeid for i in items] == [other, *r1, *r6]  # catalog checks last, in order of value
    assert not items[1].marks and all(
        i.marks and "does not fit" in i.marks[0].kwargs["reason"] for i in items[2:]
    )
    assert lines[0].startswith("run  flipflop.R1") and lines[1].startswith("skip flipflop.R6")
    items = [_Item(n) for n in (*r6, *r1)]
    apply_budget(items, 1e6, "full", "cpu")  # everything fits: nothing is skipped
    assert not any(i.marks for i in items)
    assert apply_budget([_Item(other)], 10.0, "full", "cpu") == []  # no catalog check: nothing to plan


def test_the_budget_needs_full_scale_and_a_positive_budget():
    with pytest.raises(pytest.UsageError, match="scale full"):
        apply_budget([_Item(_nodes("flipflop.R1")[0])], 100.0, "small", "cpu")
    with pytest.raises(pytest.UsageError, match="> 0"):
        apply_budget([], 0.0, "full", "cpu")


def test_the_option_comes_with_the_plugin(pytester: pytest.Pytester) -> None:
    pytester.makeconftest('pytest_plugins = ["theorylab.pytest_plugin"]\n')
    assert "--theorylab-trained-budget" in pytester.runpytest_subprocess("--help").stdout.str()
