"""Every benchmark script runs in its --quick mode (a smoke test: the numbers themselves are not asserted), and
no benchmark can time a cached call: the scripts read no clock of their own (only ``benchmarks/timing.py``,
which empties the library's caches before every timed call), and every cache of the library is one that
:func:`theorylab.caching.clear_caches` reaches."""

import ast
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from theorylab.caching import MemoCache, cache_sizes, clear_caches

ROOT = Path(__file__).parents[1]
BENCH = ROOT / "benchmarks"
SCRIPTS = sorted(BENCH.glob("bench_*.py"))
CLOCKS = {"time", "timeit"}


@pytest.mark.parametrize("script", SCRIPTS, ids=lambda p: p.stem)
def test_benchmark_quick_mode_runs(script: Path) -> None:
    done = subprocess.run(
        [sys.executable, str(script), "--quick"], capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip(), "a benchmark must print its measurements"


def _clock_uses(source: str) -> list[str]:
    """Imports of a clock module (``time``, ``timeit``) or of a name from one."""
    out = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            out += [a.name for a in node.names if a.name.split(".")[0] in CLOCKS]
        elif isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] in CLOCKS:
            out.append(node.module)
    return out


@pytest.mark.parametrize("script", SCRIPTS, ids=lambda p: p.stem)
def test_benchmark_reads_no_clock_of_its_own(script: Path) -> None:
    assert _clock_uses(script.read_text()) == [], f"{script.name}: time through benchmarks/timing.py only"


def test_clock_detector_rejects_a_private_timer() -> None:
    assert _clock_uses("import time\nt = time.perf_counter()") == ["time"]
    assert _clock_uses("from time import perf_counter") == ["time"]
    assert _clock_uses("from timing import best_of") == []


def _module_level_dict_caches(source: str) -> list[str]:
    """Module-level names spelled like a cache and bound to anything but a :class:`MemoCache`."""
    out = []
    for node in ast.parse(source).body:
        targets = (
            node.targets
            if isinstance(node, ast.Assign)
            else [node.target]
            if isinstance(node, ast.AnnAssign)
            else []
        )
        value = getattr(node, "value", None)
        for t in targets:
            if isinstance(t, ast.Name) and "cache" in t.id.lower() and not t.id.lower().endswith("_size"):
                is_memo = isinstance(value, ast.Call) and getattr(value.func, "id", "") == "MemoCache"
                if not is_memo:
                    out.append(t.id)
    return out


def test_library_caches_are_all_clearable() -> None:
    found = {
        str(p.relative_to(ROOT)): bad
        for p in sorted((ROOT / "theorylab").rglob("*.py"))
        if (bad := _module_level_dict_caches(p.read_text()))
    }
    assert found == {}, "module-level caches must be theorylab.caching.MemoCache (clear_caches reaches them)"
    assert _module_level_dict_caches("_CACHE: dict = {}") == ["_CACHE"]
    assert _module_level_dict_caches("_CACHE = MemoCache('x')") == []


def test_clear_caches_empties_the_algebra_caches() -> None:
    from theorylab.algebra import holonomy_decomposition, transformation_semigroup
    from theorylab.automata import zoo

    aut = zoo.random(4, 2, seed=3)
    transformation_semigroup(aut)
    holonomy_decomposition(aut)
    assert sum(cache_sizes().values()) >= 2
    clear_caches()
    assert set(cache_sizes().values()) <= {0}


def test_memo_cache_is_bounded_first_in_first_out() -> None:
    c = MemoCache("test", maxsize=2)
    for k in "abc":
        c.put(k, k.upper())
    assert len(c) == 2 and c.get("a") is None and c.get("c") == "C"
    assert c.get_or_compute("d", lambda: "D") == "D" and c.get("b") is None
    with pytest.raises(ValueError, match="maxsize"):
        MemoCache("bad", maxsize=0)


def test_best_of_times_cold_calls(monkeypatch) -> None:
    """The bug this guards against: best-of-3 of ``transformation_semigroup`` timed two cache hits."""
    import theorylab.algebra.semigroup as sg
    from theorylab.automata import zoo

    monkeypatch.syspath_prepend(str(BENCH))
    from timing import best_of

    calls = []
    real = sg._enumerate
    monkeypatch.setattr(sg, "_enumerate", lambda *a, **k: calls.append(1) or real(*a, **k))
    aut = zoo.random(5, 2, seed=1)
    sg.transformation_semigroup(aut)  # warm the cache: best_of must not use it
    _, S = best_of(lambda: sg.transformation_semigroup(aut), 3)
    assert len(calls) == 4 and S.size == sg.transformation_semigroup(aut).size
    assert np.array_equal(S.elements, sg.transformation_semigroup(aut).elements)


def test_readme_lists_every_script() -> None:
    readme = (BENCH / "README.md").read_text()
    assert [s.name for s in SCRIPTS if f"`{s.name}`" not in readme] == []
