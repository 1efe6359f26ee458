"""The CPU rehearsal of the full trained tier: every full-size configuration of the catalog, at full model size,
trains 2 steps on the CPU with the CUDA code paths forced on (fused attention, fused optimiser, multi-tensor
clipping, prefetching feed), and its meta-device memory estimate fits an H100. Nothing should crash on a GPU for a
reason the CPU could have shown. (About a minute: four 19M-parameter configurations dominate.)"""

from __future__ import annotations

import pytest

pytest.importorskip("torch")


def test_every_full_size_configuration_trains_two_steps_on_the_cpu():
    from theorylab.trained import CATALOG
    from theorylab.trained.runner import rehearse

    lines: list[str] = []
    rows = rehearse(device="h100-sxm", out=lines.append)
    bad = [r for r in rows if not r["ok"]]
    assert not bad, "\n".join(lines)
    assert {r["check"] for r in rows} == {c.name for c in CATALOG}  # every catalog check was rehearsed
    assert all(0 < r["memory_gb"] < 80 for r in rows)
