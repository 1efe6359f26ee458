"""The theorylab pytest plugin: claim markers, tier and claim selection, seeds, and the claim table.

Checks are tagged ``@pytest.mark.claim("hmm.thm7", tier="exact")``; a negative control adds ``control=True``.
Options: ``--tier exact,property``, ``--claim 'hmm.*'``, ``--device cpu|cuda``, ``--scale small|full``,
``--claims-json PATH``, ``--theorylab-seed N``, ``--artifacts-dir DIR``. At the end of a run that executed claim
checks, one table is printed: claim id, registry status, tiers run, passed / failed / skipped, controls, time.
Works under pytest-xdist: per-item claim data travels in ``report.user_properties``.
"""

from __future__ import annotations

import fnmatch
import json
import os
import time
import zlib
from collections import defaultdict
from pathlib import Path

import pytest

from theorylab.claims.registry import TIERS

DEFAULT_SEED = 20240601
_CLAIMS_KEY = "theorylab.claims"
_MEASURE_KEY = "theorylab.measure"
_ERROR_ATTR = "_theorylab_error"


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("theorylab", "theorylab claim checks")
    group.addoption("--tier", default=None, help="comma-separated tiers to run: exact,property,trained")
    group.addoption(
        "--claim", default=None, help="comma-separated claim id patterns (fnmatch) or family names"
    )
    group.addoption("--device", default="cpu", choices=("cpu", "cuda"), help="device for the trained tier")
    group.addoption("--scale", default="small", choices=("small", "full"), help="size of the trained tier")
    group.addoption("--claims-json", default=None, metavar="PATH", help="write per-claim results as JSON")
    group.addoption(
        "--theorylab-seed",
        type=int,
        default=None,
        help=f"base seed of the rng fixture (default: $THEORYLAB_SEED or {DEFAULT_SEED})",
    )
    group.addoption("--artifacts-dir", default=None, help="where checks save figures (default: a temp dir)")


def _csv(value: str | None) -> list[str]:
    return [v.strip() for v in value.split(",") if v.strip()] if value else []


def _base_seed(config: pytest.Config) -> int:
    seed = config.getoption("theorylab_seed")
    if seed is None:
        seed = int(os.environ.get("THEORYLAB_SEED", DEFAULT_SEED))
    return seed


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "claim(id, tier='exact', control=False): the check backs claim `id` in `tier`; "
        "control=True marks a negative control (a mutant the check must reject)",
    )
    tiers = _csv(config.getoption("tier"))
    unknown = [t for t in tiers if t not in TIERS]
    if unknown:
        raise pytest.UsageError(f"--tier: unknown tiers {unknown} (choose from {', '.join(TIERS)})")
    if hasattr(config, "workerinput"):  # xdist worker: one thread per worker on small machines
        os.environ.setdefault("OMP_NUM_THREADS", "1")
    _load_hypothesis_profile(config)
    config._theorylab = _Results(config)  # type: ignore[attr-defined]
    config.pluginmanager.register(config._theorylab, "theorylab-results")


def _load_hypothesis_profile(config: pytest.Config) -> None:
    """Deterministic hypothesis runs: derandomized, no deadline, no example database."""
    try:
        from hypothesis import HealthCheck, settings
    except ImportError:  # pragma: no cover - hypothesis is a dependency
        return
    common = dict(deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow], print_blob=True)
    settings.register_profile("theorylab", derandomize=True, max_examples=25, **common)
    settings.register_profile("theorylab-thorough", derandomize=False, max_examples=500, **common)
    if not config.getoption("hypothesis_profile", default=None):
        settings.load_profile("theorylab")


def pytest_report_header(config: pytest.Config) -> list[str]:
    return [
        f"theorylab: seed={_base_seed(config)} (override: --theorylab-seed / THEORYLAB_SEED), "
        f"device={config.getoption('device')}, scale={config.getoption('scale')}, "
        f"tiers={config.getoption('tier') or 'all'}, claims={config.getoption('claim') or 'all'}"
    ]


def _claim_marks(item: pytest.Item) -> list[tuple[str, str, bool]]:
    marks = []
    for mark in item.iter_markers("claim"):
        if not mark.args:
            marks.append(("", "", False))
            continue
        tier = mark.kwargs.get("tier", mark.args[1] if len(mark.args) > 1 else "exact")
        marks.append((str(mark.args[0]), str(tier), bool(mark.kwargs.get("control", False))))
    return marks


def _validate(marks: list[tuple[str, str, bool]]) -> str | None:
    from theorylab.claims.registry import _default

    claims = _default()[0]
    for cid, tier, _ in marks:
        if not cid:
            return "claim marker without a claim id"
        if cid not in claims:
            return f"check names unknown claim {cid!r} (not in theorylab/claims/data/*.toml)"
        if tier not in TIERS:
            return f"claim {cid!r}: unknown tier {tier!r} (choose from {', '.join(TIERS)})"
        if tier not in claims[cid].tiers:
            return (
                f"claim {cid!r}: a {tier} check exists but the record lists tiers {list(claims[cid].tiers)}"
            )
    return None


def _matches(cid: str, patterns: list[str]) -> bool:
    return any(fnmatch.fnmatchcase(cid, p) or cid.startswith(p + ".") for p in patterns)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    tiers, patterns = _csv(config.getoption("tier")), _csv(config.getoption("claim"))
    selected, deselected = [], []
    for item in items:
        marks = _claim_marks(item)
        if marks:
            error = _validate(marks)
            if error:
                setattr(item, _ERROR_ATTR, error)
            item.user_properties.append((_CLAIMS_KEY, marks))
        keep = (not tiers and not patterns) or (
            bool(marks)
            and (not tiers or any(t in tiers for _, t, _ in marks))
            and (not patterns or any(_matches(c, patterns) for c, _, _ in marks))
        )
        (selected if keep or getattr(item, _ERROR_ATTR, None) else deselected).append(item)
    if deselected:
        config.hook.pytest_deselected(items=deselected)
        items[:] = selected


def pytest_runtest_setup(item: pytest.Item) -> None:
    error = getattr(item, _ERROR_ATTR, None)
    if error:
        pytest.fail(f"theorylab: {error}", pytrace=False)
    marks = _claim_marks(item)
    if any(t == "trained" for _, t, _ in marks) and item.config.getoption("device") == "cuda":
        import torch

        if not torch.cuda.is_available():
            pytest.skip("--device cuda requested but CUDA is not available")


# ----------------------------------------------------------------------------------------------- fixtures


@pytest.fixture(scope="session")
def theorylab_seed(request: pytest.FixtureRequest) -> int:
    """The printed base seed of this run."""
    return _base_seed(request.config)


@pytest.fixture
def seed(request: pytest.FixtureRequest, theorylab_seed: int) -> int:
    """A per-test seed: a stable function of the base seed and the test id."""
    return (theorylab_seed * 1_000_003 + zlib.crc32(request.node.nodeid.encode())) % 2**32


@pytest.fixture
def rng(seed: int):
    """``numpy.random.default_rng(seed)`` with the per-test seed (reruns are identical)."""
    import numpy as np

    return np.random.default_rng(seed)


@pytest.fixture(scope="session")
def device(request: pytest.FixtureRequest) -> str:
    """The device of the trained tier (``--device``)."""
    return request.config.getoption("device")


@pytest.fixture(scope="session")
def scale(request: pytest.FixtureRequest) -> str:
    """``"small"`` (CPU, CI budget) or ``"full"`` (the documents' sizes) (``--scale``)."""
    return request.config.getoption("scale")


@pytest.fixture
def measure(request: pytest.FixtureRequest):
    """``measure(name, value)`` records a measured number for the claim table and the JSON report."""

    def record(name: str, value) -> None:
        request.node.user_properties.append((_MEASURE_KEY, (str(name), _plain(value))))

    return record


@pytest.fixture(scope="session")
def artifacts_dir(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Path:
    option = request.config.getoption("artifacts_dir")
    path = Path(option) if option else tmp_path_factory.mktemp("theorylab-artifacts")
    path.mkdir(parents=True, exist_ok=True)
    return path


@pytest.fixture
def figure(request: pytest.FixtureRequest, artifacts_dir: Path, measure):
    """``figure(fig, name)`` saves a matplotlib figure as a PNG artifact of the test's claim."""

    def save(fig, name: str) -> Path:
        marks = _claim_marks(request.node)
        folder = artifacts_dir / (marks[0][0] if marks else "misc")
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / f"{name}.png"
        fig.savefig(path, dpi=110, bbox_inches="tight")
        measure(f"figure:{name}", str(path.resolve()))
        return path

    return save


def _plain(value):
    """JSON-friendly version of numbers, numpy scalars and small arrays."""
    if hasattr(value, "tolist"):
        value = value.tolist()
    if isinstance(value, float | int | str | bool) or value is None:
        return value
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    return str(value)


# ------------------------------------------------------------------------------------------ aggregation


class _Results:
    """Per-claim outcomes, gathered from reports (so it also works on the xdist controller)."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        self.items: dict[str, dict] = {}
        self.start = time.time()

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        props = dict(report.user_properties) if report.user_properties else {}
        marks = props.get(_CLAIMS_KEY)
        if not marks:
            return
        entry = self.items.setdefault(
            report.nodeid, {"marks": marks, "outcome": "passed", "seconds": 0.0, "measures": {}, "ran": False}
        )
        entry["seconds"] += report.duration
        for key, value in report.user_properties:
            if key == _MEASURE_KEY:
                entry["measures"][value[0]] = value[1]
        if report.failed:
            entry["outcome"] = "failed"
        elif report.skipped and entry["outcome"] != "failed":
            entry["outcome"] = "skipped"
        if report.when == "call" or report.failed or report.skipped:
            entry["ran"] = True

    def per_claim(self) -> dict[str, dict]:
        from theorylab.claims.registry import _default

        registry = _default()[0]
        claims: dict[str, dict] = {}
        for nodeid, entry in self.items.items():
            for cid, tier, control in entry["marks"]:
                rec = claims.setdefault(
                    cid,
                    {
                        "status": registry[cid].status if cid in registry else "unknown",
                        "family": registry[cid].family if cid in registry else "",
                        "tiers": defaultdict(lambda: {"passed": 0, "failed": 0, "skipped": 0, "controls": 0}),
                        "seconds": 0.0,
                        "measures": {},
                        "checks": [],
                    },
                )
                counts = rec["tiers"][tier]
                counts[entry["outcome"]] += 1
                counts["controls"] += int(control)
                rec["seconds"] += entry["seconds"]
                rec["measures"].update(entry["measures"])
                rec["checks"].append(
                    {"nodeid": nodeid, "tier": tier, "control": control, "outcome": entry["outcome"]}
                )
        for rec in claims.values():
            rec["tiers"] = dict(rec["tiers"])
        return dict(sorted(claims.items()))

    def unchecked(self) -> list[str]:
        """Registered claims that are not ``open`` but have no check in ``<rootdir>/checks``."""
        from theorylab.claims.checks import scan_checks
        from theorylab.claims.registry import _default

        checked = {ref.claim for ref in scan_checks(Path(self.config.rootpath) / "checks")}
        return sorted(c.id for c in _default()[0].values() if c.status != "open" and c.id not in checked)


def pytest_terminal_summary(terminalreporter, exitstatus: int, config: pytest.Config) -> None:
    results: _Results | None = getattr(config, "_theorylab", None)
    if results is None or not results.items or hasattr(config, "workerinput"):
        return
    claims = results.per_claim()
    tr = terminalreporter
    tr.write_sep("=", f"theorylab claim table ({len(claims)} claims)")
    from theorylab.report import RUN_HEADER, run_rows, to_text

    for line in to_text(RUN_HEADER, run_rows(claims)):
        tr.write_line(line)
    no_control = [c for c, r in claims.items() if not any(t["controls"] for t in r["tiers"].values())]
    if no_control:
        tr.write_line(f"claims run without a negative control: {', '.join(no_control)}")
    unchecked = results.unchecked()
    if unchecked:
        tr.write_line(f"claims not 'open' with no check in checks/: {', '.join(unchecked)}")
    measured = [
        (c, k, v) for c, r in claims.items() for k, v in r["measures"].items() if not k.startswith("figure:")
    ]
    if measured and config.getoption("verbose") >= 0:
        tr.write_sep("-", "measured")
        for cid, name, value in measured:
            shown = f"{value:.4g}" if isinstance(value, float) else str(value)
            tr.write_line(f"{cid}: {name} = {shown}")


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    config = session.config
    path = config.getoption("claims_json")
    results: _Results | None = getattr(config, "_theorylab", None)
    if not path or results is None or hasattr(config, "workerinput"):
        return
    payload = {
        "meta": {
            "seed": _base_seed(config),
            "device": config.getoption("device"),
            "scale": config.getoption("scale"),
            "tiers": _csv(config.getoption("tier")) or list(TIERS),
            "claims": _csv(config.getoption("claim")),
            "seconds": round(time.time() - results.start, 3),
            "exitstatus": int(exitstatus),
        },
        "claims": results.per_claim(),
        "unchecked": results.unchecked(),
    }
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    Path(path).write_text(json.dumps(payload, indent=2, sort_keys=True), encoding="utf-8")
