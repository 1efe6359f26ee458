"""The theorylab pytest plugin: claim markers, tier and claim selection, seeds, and the claim table.

The plugin is opt-in: it is not a ``pytest11`` entry point, so a project that does not use it sees no option,
fixture, hypothesis setting, environment variable or header line of theorylab. A project turns it on with
``pytest_plugins = ["theorylab.pytest_plugin"]`` in its top-level ``conftest.py`` (theorylab's own ``checks/``
do so) or with ``-p theorylab.pytest_plugin``.

Checks are tagged ``@pytest.mark.claim("hmm.thm7", tier="exact")``; a negative control adds ``control=True``.
Options, all namespaced: ``--theorylab-tier exact,property``, ``--theorylab-claim 'hmm.*'``,
``--theorylab-device cpu|cuda``, ``--theorylab-scale small|full``, ``--theorylab-claims-json PATH``,
``--theorylab-seed N``, ``--theorylab-artifacts-dir DIR``, ``--theorylab-claims-path PATHS`` (the project's own
registry; also the ini key ``theorylab_claims`` or ``$THEORYLAB_CLAIMS_PATH``). theorylab's own checks also accept
the short spellings ``--tier``, ``--claim``, ``--device``, ``--scale``, ``--claims-json``, ``--artifacts-dir`` (see
:func:`add_short_options`). The tier and claim filters select among claim checks only (unmarked tests run as
usual); a test file all of whose checks fail the filters is skipped before it is imported. A check's seed derives
from the base seed, its claim ids, function name and parametrisation id (:func:`seed_key`), never from paths.
Trained checks record their training environment next to their numbers and, on an interactive terminal without
``-q``, show the harness's progress. Hypothesis settings are applied per claim check (profile ``theorylab``: 25
derandomized examples; ``--hypothesis-profile theorylab-thorough``: 20 times as many, random), never globally.
At the end of a run that executed claim checks, one table is printed: claim id, registry status, tiers run,
passed / failed / skipped, controls, time, then a one-line count of the measured numbers (``-v`` lists them, ``-q``
leaves the line out). Works under pytest-xdist: per-item claim data travels in
``report.user_properties``.
"""

from __future__ import annotations

import contextlib
import fnmatch
import functools
import json
import os
import re
import sys
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
_ENV_KEY = "theorylab.environment"
_ERROR_ATTR = "_theorylab_error"


#: Hypothesis example counts: ``theorylab`` (default for claim checks) and ``theorylab-thorough``.
PROFILES = {"theorylab": 25, "theorylab-thorough": 500}


#: third-party packages that pytest assertion-rewrites because they ship pytest plugins: rewriting their modules
#: helps no check (their asserts are not ours) and, where bytecode is not cached, re-parses and re-compiles them
#: on every run (hypothesis alone: ~140 modules, several seconds of CPU per run)
NOT_REWRITTEN = ("hypothesis", "xdist", "platformdirs")


def pytest_addoption(parser: pytest.Parser, pluginmanager: pytest.PytestPluginManager) -> None:
    add_options(parser)
    marked = getattr(getattr(pluginmanager, "rewrite_hook", None), "_must_rewrite", None)
    if isinstance(marked, set):
        marked.difference_update(NOT_REWRITTEN)


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
    _use_claims_path(config)
    try:
        _registry()
    except ValueError as exc:  # ClaimRegistryError: one line, not an INTERNALERROR traceback
        raise pytest.UsageError(f"theorylab claim registry: {exc}") from None
    _register_hypothesis_profiles()
    config._theorylab = _Results(config)  # type: ignore[attr-defined]
    config.pluginmanager.register(config._theorylab, "theorylab-results")


_CLAIMS_ENV = "THEORYLAB_CLAIMS_PATH"
#: How a project names its own claim registry, for error messages.
CLAIMS_PATH_HINT = (
    "a project registers its own claims with the ini key `theorylab_claims = PATH`, the option "
    "--theorylab-claims-path PATH or $THEORYLAB_CLAIMS_PATH"
)


def _claims_path(config: pytest.Config) -> str | None:
    """The project's claim registry: ``--theorylab-claims-path`` (relative to the working directory), else
    ``$THEORYLAB_CLAIMS_PATH``, else the ini key ``theorylab_claims`` (relative to the ini file); ``None`` when
    none is given (theorylab's own registry)."""
    option = config.getoption("theorylab_claims_path")
    if option:
        here = Path(config.invocation_params.dir)
        return os.pathsep.join(str(here / p) for p in option.split(os.pathsep) if p)
    if os.environ.get(_CLAIMS_ENV):
        return None
    ini = config.getini("theorylab_claims")
    return os.pathsep.join(str(p) for p in ini) if ini else None


def _use_claims_path(config: pytest.Config) -> None:
    """Point the registry at the project's claims for this run (restored by :func:`pytest_unconfigure`)."""
    path = _claims_path(config)
    if path is None:
        return
    source = (
        "--theorylab-claims-path" if config.getoption("theorylab_claims_path") else "ini key theorylab_claims"
    )
    missing = [p for p in path.split(os.pathsep) if not Path(p).exists()]
    if missing:
        raise pytest.UsageError(f"theorylab: {source} names {missing[0]!r}, which does not exist")
    config._theorylab_saved_env = os.environ.get(_CLAIMS_ENV)  # type: ignore[attr-defined]
    os.environ[_CLAIMS_ENV] = path


def pytest_unconfigure(config: pytest.Config) -> None:
    if not hasattr(config, "_theorylab_saved_env"):
        return
    saved = config._theorylab_saved_env
    if saved is None:
        os.environ.pop(_CLAIMS_ENV, None)
    else:
        os.environ[_CLAIMS_ENV] = saved


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


def _validate(marks: list[tuple[str, str, bool]], claims: dict) -> str | None:
    """Why the claim marks of a check are invalid against the registry ``claims``, or ``None``."""
    for cid, tier, _ in marks:
        if not cid:
            return "claim marker without a claim id"
        if cid not in claims:
            return (
                f"check names unknown claim {cid!r}{_did_you_mean(cid, claims)}: not in the claim registry "
                f"({_registry_source()}); {CLAIMS_PATH_HINT}"
            )
        if tier not in TIERS:
            return f"claim {cid!r}: unknown tier {tier!r} (choose from {', '.join(TIERS)})"
        if tier not in claims[cid].tiers:
            return (
                f"claim {cid!r}: a {tier} check exists but the record lists tiers {list(claims[cid].tiers)}"
            )
    return None


def _registry_source() -> str:
    """Where the registry was read from, for error messages."""
    path = os.environ.get(_CLAIMS_ENV)
    return f"read from {path}" if path else "theorylab's own claims"


def _did_you_mean(word: str, choices) -> str:
    from theorylab.claims.registry import did_you_mean

    return did_you_mean(word, choices)


def _matches(cid: str, patterns: list[str]) -> bool:
    return any(fnmatch.fnmatchcase(cid, p) or cid.startswith(p + ".") for p in patterns)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    tiers, patterns = _csv(_opt(config, "tier")), _csv(_opt(config, "claim"))
    selected, deselected = [], []
    claims = _registry()  # once per collection: reading it stats every registry file
    for item in items:
        marks = _claim_marks(item)
        if marks:
            error = _validate(marks, claims)
            if error:
                setattr(item, _ERROR_ATTR, error)
            item.user_properties.append((_CLAIMS_KEY, marks))
            _apply_hypothesis_settings(item)
        keep = not marks or _selected(marks, tiers, patterns)  # the filters select among claim checks only
        (selected if keep or getattr(item, _ERROR_ATTR, None) else deselected).append(item)
    if patterns:
        _check_patterns(config, patterns, items)
    if deselected:
        config.hook.pytest_deselected(items=deselected)
        items[:] = selected
    budget = _opt(config, "trained_budget")
    if budget is not None:
        from theorylab.trained.budget import apply_budget

        config._theorylab_budget_lines = apply_budget(
            items, budget, _opt(config, "scale"), _opt(config, "device")
        )


def _selected(marks, tiers: list[str], patterns: list[str]) -> bool:
    """Whether a claim check with ``marks`` (claim id, tier, control) passes the tier and claim filters."""
    return (not tiers or any(t in tiers for _, t, _ in marks)) and (
        not patterns or any(_matches(c, patterns) for c, _, _ in marks)
    )


def _claim_flag(config: pytest.Config) -> str:
    """The spelling of the claim filter this run was given: ``--claim`` (theorylab's own checks accept it) or
    ``--theorylab-claim``."""
    short = SHORT_OPTIONS["claim"]
    if getattr(config._parser, "_opt2dest", {}).get(short) != _dest(
        "claim"
    ):  # a project's own --claim, or none
        return OPTIONS["claim"]
    args = [str(a) for a in config.invocation_params.args]
    return short if any(a == short or a.startswith(short + "=") for a in args) else OPTIONS["claim"]


def _check_patterns(config: pytest.Config, patterns: list[str], items: list[pytest.Item]) -> None:
    """Say so when a claim pattern matches no registered claim, with close matches."""
    registry = _registry()
    marked = {c for item in items for c, _, _ in _claim_marks(item)}
    for pattern in patterns:
        if any(_matches(cid, [pattern]) for cid in {*registry, *marked}):
            continue
        hint = _did_you_mean(pattern, [*registry, *{c.split(".")[0] for c in registry}])
        raise pytest.UsageError(
            f"{_claim_flag(config)} {pattern!r} matches no registered claim{hint} ({_registry_source()}; "
            f"{CLAIMS_PATH_HINT})"
        )


def _named_like(name: str, patterns: list[str]) -> bool:
    """pytest's ``python_functions`` / ``python_classes`` matching: a prefix, or a glob."""
    return any(
        name.startswith(p) or (any(c in p for c in "*?[") and fnmatch.fnmatch(name, p)) for p in patterns
    )


def _static_checks(
    path: Path, functions: tuple[str, ...] = ("test",), classes: tuple[str, ...] = ("Test",)
) -> list[list[tuple[str, str, bool]]] | None:
    """The claim marks of every test function of a test file, read without importing it; ``None`` when some test
    has no claim marker that can be read statically (or the file cannot be parsed), so the file must be
    imported. Cached per version of the file (its modification time and size): pytest asks about every file of a
    folder once per path it was given, so ``pytest a.py b.py ...`` would otherwise parse each file once per
    argument."""
    try:
        stat = Path(path).stat()
    except OSError:
        return None
    key = (str(path), stat.st_mtime_ns, stat.st_size, functions, classes)
    if key not in _STATIC:
        _STATIC[key] = _read_static_checks(path, functions, classes)
    marks = _STATIC[key]
    return None if marks is None else [list(m) for m in marks]


_STATIC: dict[tuple, list[list[tuple[str, str, bool]]] | None] = {}


def _read_static_checks(
    path: Path, functions: tuple[str, ...], classes: tuple[str, ...]
) -> list[list[tuple[str, str, bool]]] | None:
    """:func:`_static_checks`, uncached."""
    import ast

    from theorylab.claims.checks import parse_file, scan_file

    try:
        tree = parse_file(path)
        refs = scan_file(path, tree)
    except (OSError, SyntaxError, UnicodeDecodeError, ValueError):
        return None
    targets = [t for n in tree.body if isinstance(n, ast.Assign) for t in n.targets]
    targets += [n.target for n in tree.body if isinstance(n, ast.AnnAssign)]
    if any(isinstance(t, ast.Name) and t.id == "pytestmark" for t in targets):  # module-wide marks
        return None
    functions, classes = list(functions), list(classes)
    names = [n.name for n in tree.body if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)]
    names = [n for n in names if _named_like(n, functions)]
    for node in tree.body:
        if isinstance(node, ast.ClassDef) and _named_like(node.name, classes):
            methods = [f.name for f in node.body if isinstance(f, ast.FunctionDef | ast.AsyncFunctionDef)]
            if node.bases or any(not m.startswith("test") for m in methods if _named_like(m, functions)):
                return None  # inherited tests, or a test method that the static index does not read
            names += [f"{node.name}.{m}" for m in methods if _named_like(m, functions)]
    marks: dict[str, list] = {}
    for ref in refs:
        marks.setdefault(ref.name, []).append((ref.claim, ref.tier, ref.control))
    if any(name not in marks for name in names):
        return None
    return list(marks.values())


def pytest_ignore_collect(collection_path: Path, config: pytest.Config) -> bool | None:
    """With a tier or claim filter, skip (without importing) a test file whose tests are all claim checks none of
    which passes the filters: selecting one claim does not import every checks file. A file with an unmarked test,
    or a marker that cannot be read statically, is collected as usual."""
    tiers, patterns = _csv(_opt(config, "tier")), _csv(_opt(config, "claim"))
    if not (tiers or patterns) or collection_path.suffix != ".py":
        return None
    if not any(fnmatch.fnmatch(collection_path.name, glob) for glob in config.getini("python_files")):
        return None
    # a check of this file passes the filters: it is imported anyway, no need to parse it (a named id, read as "",
    # passes a claim pattern only if the pattern matches every id)
    if any(
        _selected([(cid or "", tier, False)], tiers, patterns) for cid, tier in _marker_lines(collection_path)
    ):
        return None
    checks = _static_checks(
        collection_path, tuple(config.getini("python_functions")), tuple(config.getini("python_classes"))
    )
    if checks and not any(_selected(marks, tiers, patterns) for marks in checks):
        return True
    return None


#: a claim marker whose id (a string literal or a name) and tier keyword are on one line:
#: ``@pytest.mark.claim("id", tier="exact", ...)``, ``@pytest.mark.claim(CLAIM, tier="exact", ...)``
_MARKER_LINE = re.compile(
    r"""^[ \t]*@(?:pytest\.)?mark\.claim\([ \t]*(?:(["'])([^"'\\\n]+)\1|[A-Za-z_]\w*)"""
    r"""[ \t]*,[ \t]*tier[ \t]*=[ \t]*(["'])(\w+)\3""",
    re.MULTILINE,
)


def _marker_lines(path: Path) -> tuple[tuple[str | None, str], ...]:
    """The (claim id, tier) of every one-line claim marker of a test file (id ``None`` when it is a name), found by
    a regular expression on its text (no parse): cheap evidence that the file has a check which passes the
    filters, so that :func:`pytest_ignore_collect` needs no syntax tree for the files it will import anyway
    (parsing is ~20-40 ms a file). A marker with a named id is evidence for a tier filter only (the static scan
    imports such a file too, whatever the name holds). A marker-like line inside a multi-line string only makes a
    file be imported, as without filters; a marker split over lines, or with its tier positional, is left to the
    full static scan. Cached per version."""
    try:
        stat = Path(path).stat()
    except OSError:
        return ()
    key = (str(path), stat.st_mtime_ns, stat.st_size)
    if key not in _MARKERS:
        try:
            text = Path(path).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            text = ""
        _MARKERS[key] = tuple((m[2] or None, m[4]) for m in _MARKER_LINE.finditer(text))
    return _MARKERS[key]


_MARKERS: dict[tuple, tuple[tuple[str | None, str], ...]] = {}


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
    """A context in which BLAS (and torch, :func:`_serial_torch`) runs on one thread, for exact and property checks
    (trained checks keep their threads).

    Their matrices are small: with two OpenBLAS threads the exact tier took 61 s of CPU for 45 s of wall time, with
    one thread 45 s of CPU for the same wall time (the second thread only spun). Without ``threadpoolctl`` (an
    optional speed-up) the context does nothing."""
    if not marks or any(tier == "trained" for _, tier, _ in marks):
        return contextlib.nullcontext()
    stack = contextlib.ExitStack()
    if _blas_controller() is not None:
        stack.enter_context(_blas_controller().limit(limits=1, user_api="blas"))
    stack.enter_context(_serial_torch())
    return stack


@contextlib.contextmanager
def _serial_torch():
    """torch's intra-op threads limited to one while a check runs, once torch is loaded (its OpenMP threads are
    outside threadpoolctl's "blas"): the tensors of exact and property checks are small, a second thread only
    spins, and one thread is what an xdist worker of ``make test`` uses (``OMP_NUM_THREADS=1``)."""
    torch = sys.modules.get("torch")
    if torch is None or not hasattr(torch, "get_num_threads"):
        yield
        return
    n = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(n)


class _TerminalProgress:
    """The progress of a long trained check, appended to the current terminal line and erased again (by
    backspaces): ``[parity seeds 0..2: step 120/600, 35 s]``. Only on an interactive terminal, without ``-q`` and
    outside xdist workers, so a CI log or a quiet run shows nothing."""

    def __init__(self, config: pytest.Config, writer) -> None:
        self.config, self.writer, self.shown, self.start = config, writer, "", time.perf_counter()

    def _write(self, text: str) -> None:
        capture = self.config.pluginmanager.getplugin("capturemanager")
        with capture.global_and_fixture_disabled() if capture else contextlib.nullcontext():
            n = len(self.shown)  # written past the writer's line bookkeeping, which stays pytest's own
            self.writer._file.write("\b" * n + " " * n + "\b" * n + text)
            self.writer._file.flush()
        self.shown = text

    def __call__(self, label: str, step: int, total: int) -> None:
        text = f" [{label}: step {step}/{total}, {time.perf_counter() - self.start:.0f} s]"
        room = self.writer.fullwidth - self.writer.width_of_current_line - 1
        self._write(text if len(text) <= room else "")

    def close(self) -> None:
        if self.shown:
            self._write("")


@contextlib.contextmanager
def _progress(item: pytest.Item, trained: bool):
    """Show the training harness's progress during a trained check (see :class:`_TerminalProgress`)."""
    from theorylab import testing

    reporter = item.config.pluginmanager.getplugin("terminalreporter")
    writer = getattr(reporter, "_tw", None)
    if (
        not trained
        or writer is None
        or not reporter.isatty()
        or item.config.getoption("verbose") < 0
        or hasattr(item.config, "workerinput")
    ):
        yield
        return
    sink = _TerminalProgress(item.config, writer)
    token = testing.set_progress_sink(sink)
    try:
        yield
    finally:
        testing.reset_progress_sink(token)
        sink.close()


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item):
    """Count the trivial draws of a claim check (see :func:`theorylab.testing.trivial`); a check that drew more
    than ``MAX_TRIVIAL_SHARE`` trivial instances fails, since it mostly checked nothing. Exact and property claim
    checks run with single-threaded BLAS (:func:`_serial_blas`); other tests are left as they are."""
    from theorylab import testing

    marks = _claim_marks(item)
    if not marks:
        return (yield)
    trained = any(tier == "trained" for _, tier, _ in marks)
    counter, token = testing.start_counting()
    log, log_token = testing.start_training_log()
    try:
        with _serial_blas(marks), _progress(item, trained):
            result = yield
    finally:
        testing.stop_training_log(log_token)
        testing.stop_counting(token)
        if trained:
            item.user_properties.append((_ENV_KEY, testing.training_environment(log)))
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


def seed_key(item: pytest.Item) -> str:
    """What a check's seed derives from: its claim ids, its function's name (with its class) and its
    parametrisation id, e.g. ``"anchor.thm2|test_flipped_share|k=3"``. Not the node id: that depends on the rootdir
    and on the paths pytest was given, so ``pytest checks/``, ``pytest checks/ tests/``, ``theorylab check`` and
    ``pytest checks/test_x.py`` would draw different instances."""
    claims = ",".join(sorted({cid for cid, _, _ in _claim_marks(item)}))
    name = getattr(item, "originalname", None) or item.name.split("[")[0]
    cls = getattr(item, "cls", None)
    if cls is not None:
        name = f"{cls.__name__}.{name}"
    callspec = getattr(item, "callspec", None)
    return f"{claims}|{name}|{callspec.id if callspec is not None else ''}"


def derive_seed(base: int, key: str) -> int:
    """The per-check seed: ``(base * 1000003 + crc32(key)) mod 2**32``."""
    return (base * 1_000_003 + zlib.crc32(key.encode())) % 2**32


@pytest.fixture
def seed(request: pytest.FixtureRequest, theorylab_seed: int) -> int:
    """A per-test seed: a stable function of the base seed and :func:`seed_key` (claim ids, function name,
    parametrisation id), the same from every command that runs the check."""
    return derive_seed(theorylab_seed, seed_key(request.node))


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
        self.collected: dict[Path, set[str]] = {}  # test file imported in this run -> claims of its checks
        self.start = time.time()

    def pytest_collection_modifyitems(self, items: list[pytest.Item]) -> None:
        for item in items:  # all collected items, before the filters deselect some
            claims = {cid for cid, _, _ in _claim_marks(item)}
            self.collected.setdefault(Path(str(item.path)).resolve(), set()).update(claims)
            if claims:
                self.folders.add(str(Path(str(item.path)).parent))

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
            elif key == _ENV_KEY:
                entry["environment"] = value
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
                if tier == "trained" and "environment" in entry:  # trained numbers depend on it
                    rec.setdefault("measure_env", {}).update(
                        dict.fromkeys(entry["measures"], entry["environment"])
                    )
                check = {"nodeid": nodeid, "tier": tier, "control": control, "outcome": entry["outcome"]}
                if "trivial" in entry:
                    check["trivial_draws"] = entry["trivial"]
                rec["checks"].append(check)
        for rec in claims.values():
            rec["tiers"] = dict(rec["tiers"])
        return dict(sorted(claims.items()))

    def unchecked(self) -> list[str]:
        """Registered claims that are not ``open`` but have no check in the folders of the collected checks, the
        registry's declared check folders or ``<rootdir>/checks``: the claims of the checks collected in this run,
        then the claim markers of the other files of those folders, read statically while some claim is left."""
        from theorylab.claims.checks import check_dirs, check_files, scan_file

        # the folders of this run first: their files skipped by the filters were read at collection already
        folders = [
            *sorted(Path(str(p)) for p in self.folders),
            Path(self.config.rootpath) / "checks",
            *check_dirs(),
        ]
        # a file imported in this run counts with the claims of its collected checks (no second reading); the
        # others (not given, or skipped by the filters) are read statically until every claim is accounted for
        wanted = {c.id for c in _registry().values() if c.status != "open"}
        wanted -= {cid for claims in self.collected.values() for cid in claims}
        for path in dict.fromkeys(p for d in dict.fromkeys(folders) for p in check_files(d)):
            if not wanted:
                break
            if path.resolve() not in self.collected:
                wanted -= {ref.claim for ref in scan_file(path)}
        return sorted(wanted)


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
    for line in getattr(config, "_theorylab_budget_lines", ()):
        tr.write_line(f"trained budget: {line}")
    unchecked = results.unchecked()
    if unchecked:
        tr.write_line(f"claims not 'open' with no check found: {', '.join(unchecked)}")
    measured = [
        (c, k, v) for c, r in claims.items() for k, v in r["measures"].items() if not k.startswith("figure:")
    ]
    verbose = config.getoption("verbose")
    if measured and verbose >= 1:
        tr.write_sep("-", "measured")
        for cid, name, value in measured:
            shown = f"{value:.4g}" if isinstance(value, float) else str(value)
            tr.write_line(f"{cid}: {name} = {shown}")
    elif measured and verbose == 0:
        where = "in the --claims-json file; " if _opt(config, "claims_json") else ""
        tr.write_line(
            f"measured: {len(measured)} numbers of {len({c for c, _, _ in measured})} claims ({where}-v lists them)"
        )


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
