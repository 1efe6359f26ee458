"""The theorylab pytest plugin: claim markers, tier and claim selection, seeds, and the claim table.

The plugin is opt-in: it is not a ``pytest11`` entry point, so a project that does not use it sees no option,
fixture, hypothesis setting, environment variable or header line of theorylab. A project turns it on with
``pytest_plugins = ["theorylab.pytest_plugin"]`` in its top-level ``conftest.py`` (theorylab's own ``checks/``
do so) or with ``-p theorylab.pytest_plugin``.

Checks are tagged ``@pytest.mark.claim("hmm.thm7", tier="exact")``; a negative control adds ``control=True``.
Options, all namespaced: ``--theorylab-tier exact,property``, ``--theorylab-claim 'hmm.*'``,
``--theorylab-device cpu|cuda``, ``--theorylab-scale small|full``, ``--theorylab-claims-json PATH``,
``--theorylab-seed N``, ``--theorylab-artifacts-dir DIR``. theorylab's own checks also accept the short spellings
``--tier``, ``--claim``, ``--device``, ``--scale``, ``--claims-json``, ``--artifacts-dir`` (see
:func:`add_short_options`). Hypothesis settings are applied per claim check (profile ``theorylab``: 25
derandomized examples; ``--hypothesis-profile theorylab-thorough``: 20 times as many, random), never globally.
At the end of a run that executed claim checks, one table is printed: claim id, registry status, tiers run,
passed / failed / skipped, controls, time. Works under pytest-xdist: per-item claim data travels in
``report.user_properties``.
"""

from __future__ import annotations

import contextlib
import fnmatch
import functools
import json
import os
import time
import zlib
from collections import defaultdict
from pathlib import Path

import pytest

from theorylab.claims.registry import TIERS
from theorylab.pytest_options import (
    DEFAULT_SEED,
    OPTIONS,
    SHORT_OPTIONS,
    _dest,
    add_options,
    add_short_options,
)

__all__ = ["OPTIONS", "SHORT_OPTIONS", "add_short_options", "machine_info"]


_CLAIMS_KEY = "theorylab.claims"
_MEASURE_KEY = "theorylab.measure"
_TRIVIAL_KEY = "theorylab.trivial"
_ERROR_ATTR = "_theorylab_error"


#: Hypothesis example counts: ``theorylab`` (default for claim checks) and ``theorylab-thorough``.
PROFILES = {"theorylab": 25, "theorylab-thorough": 500}


def pytest_addoption(parser: pytest.Parser) -> None:
    add_options(parser)


def _opt(config: pytest.Config, name: str):
    return config.getoption(_dest(name))


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
        "claim(id, tier='exact', control=False, examples=None): the check backs claim `id` in `tier`; "
        "control=True marks a negative control (a mutant the check must reject); examples=N sets a property "
        "check's hypothesis examples under the default profile (scaled up by theorylab-thorough)",
    )
    tiers = _csv(_opt(config, "tier"))
    unknown = [t for t in tiers if t not in TIERS]
    if unknown:
        raise pytest.UsageError(f"--theorylab-tier: unknown tiers {unknown} (choose from {', '.join(TIERS)})")
    try:
        _registry()
    except ValueError as exc:  # ClaimRegistryError: one line, not an INTERNALERROR traceback
        raise pytest.UsageError(f"theorylab claim registry: {exc}") from None
    _register_hypothesis_profiles()
    config._theorylab = _Results(config)  # type: ignore[attr-defined]
    config.pluginmanager.register(config._theorylab, "theorylab-results")


def _registry():
    from theorylab.claims.registry import _default

    return _default()[0]


def _register_hypothesis_profiles() -> None:
    """Register the profiles (registering changes nothing; they are applied per claim check only)."""
    from hypothesis import HealthCheck, settings

    common = dict(deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow], print_blob=True)
    settings.register_profile("theorylab", derandomize=True, max_examples=PROFILES["theorylab"], **common)
    settings.register_profile(
        "theorylab-thorough", derandomize=False, max_examples=PROFILES["theorylab-thorough"], **common
    )


def _claim_settings(own, applied: bool, examples: int | None):
    """The hypothesis settings of one claim check: the active theorylab profile (``theorylab`` unless
    ``--hypothesis-profile theorylab-thorough`` was given), on top of the check's own ``@settings``; the number of
    examples is the check's ``examples`` (or a pinned ``max_examples``, read the same way) under the default
    profile, multiplied by the active profile's factor (thorough: 500 / 25 = 20)."""
    from hypothesis import settings

    name = settings.get_current_profile_name()
    profile = settings.get_profile(name if name in PROFILES else "theorylab")
    pinned = own.max_examples if applied and own is not None else None
    base = examples if examples is not None else pinned
    factor = profile.max_examples / PROFILES["theorylab"]
    count = profile.max_examples if base is None else max(1, round(base * factor))
    parent = own if pinned is not None else profile
    health = {*profile.suppress_health_check, *parent.suppress_health_check}
    return settings(
        parent,
        max_examples=count,
        derandomize=profile.derandomize,
        database=profile.database,
        deadline=profile.deadline,
        print_blob=profile.print_blob,
        suppress_health_check=sorted(health, key=lambda h: h.value),
    )


def _apply_hypothesis_settings(item: pytest.Item) -> None:
    function = getattr(item, "function", None)
    if function is None or not hasattr(function, "hypothesis"):
        return
    if not hasattr(function, "_theorylab_original_settings"):
        function._theorylab_original_settings = (
            getattr(function, "_hypothesis_internal_use_settings", None),
            getattr(function, "_hypothesis_internal_settings_applied", False),
        )
    own, applied = function._theorylab_original_settings
    examples = next(
        (m.kwargs["examples"] for m in item.iter_markers("claim") if "examples" in m.kwargs), None
    )
    function._hypothesis_internal_use_settings = _claim_settings(own, applied, examples)


def pytest_report_header(config: pytest.Config) -> list[str]:
    return [
        f"theorylab: seed={_base_seed(config)} (override: --theorylab-seed / THEORYLAB_SEED), "
        f"device={_opt(config, 'device')}, scale={_opt(config, 'scale')}, "
        f"tiers={_opt(config, 'tier') or 'all'}, claims={_opt(config, 'claim') or 'all'}"
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
    claims = _registry()
    for cid, tier, _ in marks:
        if not cid:
            return "claim marker without a claim id"
        if cid not in claims:
            return (
                f"check names unknown claim {cid!r}{_did_you_mean(cid, claims)} (not in the claim registry)"
            )
        if tier not in TIERS:
            return f"claim {cid!r}: unknown tier {tier!r} (choose from {', '.join(TIERS)})"
        if tier not in claims[cid].tiers:
            return (
                f"claim {cid!r}: a {tier} check exists but the record lists tiers {list(claims[cid].tiers)}"
            )
    return None


def _did_you_mean(word: str, choices) -> str:
    from theorylab.claims.registry import did_you_mean

    return did_you_mean(word, choices)


def _matches(cid: str, patterns: list[str]) -> bool:
    return any(fnmatch.fnmatchcase(cid, p) or cid.startswith(p + ".") for p in patterns)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    tiers, patterns = _csv(_opt(config, "tier")), _csv(_opt(config, "claim"))
    selected, deselected = [], []
    for item in items:
        marks = _claim_marks(item)
        if marks:
            error = _validate(marks)
            if error:
                setattr(item, _ERROR_ATTR, error)
            item.user_properties.append((_CLAIMS_KEY, marks))
            _apply_hypothesis_settings(item)
        keep = (not tiers and not patterns) or (
            bool(marks)
            and (not tiers or any(t in tiers for _, t, _ in marks))
            and (not patterns or any(_matches(c, patterns) for c, _, _ in marks))
        )
        (selected if keep or getattr(item, _ERROR_ATTR, None) else deselected).append(item)
    if patterns:
        _check_patterns(config, patterns, items)
    if deselected:
        config.hook.pytest_deselected(items=deselected)
        items[:] = selected


def _check_patterns(config: pytest.Config, patterns: list[str], items: list[pytest.Item]) -> None:
    """Say so when a ``--claim`` pattern matches no registered claim, with close matches."""
    registry = _registry()
    marked = {c for item in items for c, _, _ in _claim_marks(item)}
    for pattern in patterns:
        if any(_matches(cid, [pattern]) for cid in {*registry, *marked}):
            continue
        hint = _did_you_mean(pattern, [*registry, *{c.split(".")[0] for c in registry}])
        raise pytest.UsageError(f"--claim {pattern!r} matches no registered claim{hint}")


def pytest_runtest_setup(item: pytest.Item) -> None:
    error = getattr(item, _ERROR_ATTR, None)
    if error:
        pytest.fail(f"theorylab: {error}", pytrace=False)
    marks = _claim_marks(item)
    if any(t == "trained" for _, t, _ in marks) and _opt(item.config, "device") == "cuda":
        import torch

        if not torch.cuda.is_available():
            pytest.skip("--device cuda requested but CUDA is not available")


@functools.cache
def _blas_controller():
    """threadpoolctl's controller of the loaded BLAS libraries (``None`` without threadpoolctl)."""
    try:
        from threadpoolctl import ThreadpoolController
    except ImportError:
        return None
    return ThreadpoolController()


def _serial_blas(marks: list[tuple[str, str, bool]]):
    """A context in which BLAS runs on one thread, for exact and property checks (trained checks keep their threads).

    Their matrices are small: with two OpenBLAS threads the exact tier took 61 s of CPU for 45 s of wall time, with
    one thread 45 s of CPU for the same wall time (the second thread only spun). Without ``threadpoolctl`` (an
    optional speed-up) the context does nothing."""
    if not marks or any(tier == "trained" for _, tier, _ in marks) or _blas_controller() is None:
        return contextlib.nullcontext()
    return _blas_controller().limit(limits=1, user_api="blas")


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item):
    """Count the trivial draws of a claim check (see :func:`theorylab.testing.trivial`); a check that drew more
    than ``MAX_TRIVIAL_SHARE`` trivial instances fails, since it mostly checked nothing. Exact and property claim
    checks run with single-threaded BLAS (:func:`_serial_blas`); other tests are left as they are."""
    from theorylab import testing

    marks = _claim_marks(item)
    if not marks:
        return (yield)
    counter, token = testing.start_counting()
    try:
        with _serial_blas(marks):
            result = yield
    finally:
        testing.stop_counting(token)
    if counter.draws:
        item.user_properties.append((_TRIVIAL_KEY, (counter.trivial, counter.draws)))
        if counter.share > testing.MAX_TRIVIAL_SHARE:
            pytest.fail(
                f"theorylab: {counter.trivial} of {counter.draws} drawn examples were trivial instances "
                f"(share {counter.share:.0%} > {testing.MAX_TRIVIAL_SHARE:.0%}): the strategy must draw "
                "instances that exercise the claim",
                pytrace=False,
            )
    return result


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
    return _opt(request.config, "device")


@pytest.fixture(scope="session")
def scale(request: pytest.FixtureRequest) -> str:
    """``"small"`` (CPU, CI budget) or ``"full"`` (the documents' sizes) (``--scale``)."""
    return _opt(request.config, "scale")


@pytest.fixture
def measure(request: pytest.FixtureRequest):
    """``measure(name, value)`` records a measured number for the claim table and the JSON report."""

    def record(name: str, value) -> None:
        request.node.user_properties.append((_MEASURE_KEY, (str(name), _plain(value))))

    return record


@pytest.fixture(scope="session")
def artifacts_dir(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Path:
    option = _opt(request.config, "artifacts_dir")
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
        self.folders: set[str] = set()
        self.start = time.time()

    def pytest_collection_modifyitems(self, items: list[pytest.Item]) -> None:
        self.folders |= {str(Path(str(item.path)).parent) for item in items if _claim_marks(item)}

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
            elif key == _TRIVIAL_KEY:
                entry["trivial"] = list(value)
        if report.failed:
            entry["outcome"] = "failed"
        elif report.skipped and entry["outcome"] != "failed":
            entry["outcome"] = "skipped"
        if report.when == "call" or report.failed or report.skipped:
            entry["ran"] = True

    def per_claim(self) -> dict[str, dict]:
        registry = _registry()
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
                rec.setdefault("measure_tiers", {}).update(dict.fromkeys(entry["measures"], tier))
                check = {"nodeid": nodeid, "tier": tier, "control": control, "outcome": entry["outcome"]}
                if "trivial" in entry:
                    check["trivial_draws"] = entry["trivial"]
                rec["checks"].append(check)
        for rec in claims.values():
            rec["tiers"] = dict(rec["tiers"])
        return dict(sorted(claims.items()))

    def unchecked(self) -> list[str]:
        """Registered claims that are not ``open`` but have no check in the folders of the collected checks, the
        registry's declared check folders or ``<rootdir>/checks``."""
        from theorylab.claims.checks import check_dirs, scan_checks

        folders = (
            {Path(str(p)) for p in self.folders} | set(check_dirs()) | {Path(self.config.rootpath) / "checks"}
        )
        checked = {ref.claim for d in sorted(folders) for ref in scan_checks(d)}
        return sorted(c.id for c in _registry().values() if c.status != "open" and c.id not in checked)


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
        tr.write_line(f"claims not 'open' with no check found: {', '.join(unchecked)}")
    measured = [
        (c, k, v) for c, r in claims.items() for k, v in r["measures"].items() if not k.startswith("figure:")
    ]
    if measured and config.getoption("verbose") >= 0:
        tr.write_sep("-", "measured")
        for cid, name, value in measured:
            shown = f"{value:.4g}" if isinstance(value, float) else str(value)
            tr.write_line(f"{cid}: {name} = {shown}")


def _active_profile() -> str:
    from hypothesis import settings

    name = settings.get_current_profile_name()
    return name if name in PROFILES else "theorylab"


def machine_info(folder: Path | None = None) -> dict:
    """Provenance of a run (as pytest-benchmark's ``machine_info`` / ``commit_info``): theorylab's version, the
    git commit of ``folder`` (if it is in a git checkout), Python, numpy and torch versions, platform, UTC date."""
    import datetime
    import platform
    import subprocess
    from importlib import metadata

    def version(dist: str) -> str | None:
        try:
            return metadata.version(dist)
        except metadata.PackageNotFoundError:
            return None

    commit = None
    if folder is not None:
        try:
            out = subprocess.run(
                ["git", "-C", str(folder), "rev-parse", "HEAD"], capture_output=True, text=True, timeout=10
            )
            commit = out.stdout.strip() or None if out.returncode == 0 else None
            if commit:
                dirty = subprocess.run(
                    ["git", "-C", str(folder), "status", "--porcelain", "--untracked-files=no"],
                    capture_output=True,
                    text=True,
                    timeout=10,
                )
                commit += "+dirty" if dirty.stdout.strip() else ""
        except (OSError, subprocess.SubprocessError):
            commit = None
    return {
        "theorylab": version("theorylab"),
        "git_commit": commit,
        "python": platform.python_version(),
        "numpy": version("numpy"),
        "torch": version("torch"),
        "hypothesis": version("hypothesis"),
        "platform": platform.platform(),
        "date": datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
    }


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    config = session.config
    path = _opt(config, "claims_json")
    results: _Results | None = getattr(config, "_theorylab", None)
    if not path or results is None or hasattr(config, "workerinput"):
        return
    payload = {
        "meta": {
            "seed": _base_seed(config),
            "device": _opt(config, "device"),
            "scale": _opt(config, "scale"),
            "tiers": _csv(_opt(config, "tier")) or list(TIERS),
            "claims": _csv(_opt(config, "claim")),
            "seconds": round(time.time() - results.start, 3),
            "exitstatus": int(exitstatus),
            "hypothesis_profile": _active_profile(),
            **machine_info(Path(config.rootpath)),
        },
        "claims": results.per_claim(),
        "unchecked": results.unchecked(),
    }
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    Path(path).write_text(json.dumps(payload, indent=2, sort_keys=True), encoding="utf-8")
