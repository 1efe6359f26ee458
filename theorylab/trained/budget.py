"""``--theorylab-trained-budget SECONDS``: the pytest mirror of ``theorylab trained --budget``.

At ``--theorylab-scale full`` the full-size trained checks of the catalog (:data:`theorylab.trained.CATALOG`) run
in order of value while their estimated cost (:func:`theorylab.trained.runner.plan`, for the attached GPU or an
H100 SXM, calibrated by the packaged measurements of that device) fits the budget; the others are skipped with the reason, and the catalog's checks move to the end of the
session in that order. Other tests are untouched. Nothing is measured first (``theorylab trained`` does that and
records results in the run store); this option only chooses.
"""

from __future__ import annotations


def _plan_device(device: str) -> str:
    if device.startswith("cuda"):
        from theorylab.trained.runner import _device_name

        return _device_name(device)
    return "h100-sxm"


def apply_budget(items: list, budget_s: float, scale: str, device: str) -> list[str]:
    """Skip (in place, with a mark) the catalog items whose check does not fit ``budget_s``; returns one line per
    catalog check for the terminal."""
    import pytest

    from theorylab.trained.catalog import CATALOG
    from theorylab.trained.runner import plan

    if not budget_s > 0:
        raise pytest.UsageError(f"--theorylab-trained-budget must be > 0 seconds, got {budget_s}")
    if scale != "full":
        raise pytest.UsageError(
            "--theorylab-trained-budget plans full-size checks: use --theorylab-scale full"
        )
    by_node = {node: c.name for c in CATALOG for node in c.nodes}
    present = {by_node[i.nodeid] for i in items if i.nodeid in by_node}
    if not present:
        return []
    from theorylab.trained.calibration import load

    dev = _plan_device(device)
    rows = {r["check"]: r for r in plan(dev, budget_s, only=sorted(present), measured=load(dev))}
    lines = []
    for name, r in rows.items():
        lines.append(f"{'run ' if r['fits'] else 'skip'} {name:26s} ~{r['seconds']:.0f} s")
    order = {c.name: c.value for c in CATALOG}
    ours = sorted((i for i in items if i.nodeid in by_node), key=lambda i: order[by_node[i.nodeid]])
    for item in ours:
        r = rows[by_node[item.nodeid]]
        if not r["fits"]:
            reason = f"does not fit --theorylab-trained-budget {budget_s:g} s (needs ~{r['seconds']:.0f} s)"
            item.add_marker(pytest.mark.skip(reason=reason))
    items[:] = [i for i in items if i.nodeid not in by_node] + ours
    return lines
