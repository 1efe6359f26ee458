"""Command-line options of the theorylab pytest plugin, in a module of their own so that a ``conftest.py`` can add
the short spellings without importing the plugin before pytest registers it."""

DEFAULT_SEED = 20240601

#: Options of the plugin; every one is namespaced so it cannot collide with a project's own options.
OPTIONS = {
    "tier": "--theorylab-tier",
    "claim": "--theorylab-claim",
    "device": "--theorylab-device",
    "scale": "--theorylab-scale",
    "claims_json": "--theorylab-claims-json",
    "artifacts_dir": "--theorylab-artifacts-dir",
    "trained_budget": "--theorylab-trained-budget",
}
#: Short spellings that theorylab's own checks accept (``pytest checks/ --tier exact``); see :func:`add_short_options`.
SHORT_OPTIONS = {
    "tier": "--tier",
    "claim": "--claim",
    "device": "--device",
    "scale": "--scale",
    "claims_json": "--claims-json",
    "artifacts_dir": "--artifacts-dir",
}
_OPTION_ATTRS = {
    "tier": dict(default=None, metavar="TIERS", help="comma-separated tiers to run: exact,property,trained"),
    "claim": dict(
        default=None, metavar="PATTERNS", help="comma-separated claim id patterns (fnmatch) or families"
    ),
    "device": dict(default="cpu", choices=("cpu", "cuda"), help="device of the trained tier (default: cpu)"),
    "scale": dict(
        default="small", choices=("small", "full"), help="size of the trained tier (default: small)"
    ),
    "claims_json": dict(default=None, metavar="PATH", help="write per-claim results as JSON"),
    "artifacts_dir": dict(
        default=None, metavar="DIR", help="where checks save figures (default: a temp dir)"
    ),
    "trained_budget": dict(
        default=None,
        type=float,
        metavar="SECONDS",
        help="with --theorylab-scale full: run the full-size trained checks of `theorylab trained`'s catalog that "
        "fit this many seconds in order of value (estimated for the device), skip the others",
    ),
}


def _dest(name: str) -> str:
    return f"theorylab_{name}"


def add_options(parser) -> None:
    """Register the ``--theorylab-*`` options (the plugin's ``pytest_addoption``)."""
    group = parser.getgroup("theorylab", "theorylab claim checks")
    for name, flag in OPTIONS.items():
        group.addoption(flag, dest=_dest(name), **_OPTION_ATTRS[name])
    group.addoption(
        "--theorylab-claims-path",
        default=None,
        dest="theorylab_claims_path",
        metavar="PATHS",
        help="the project's own claim registry: TOML files or folders of them, os.pathsep-separated (default: "
        "$THEORYLAB_CLAIMS_PATH, then the ini key theorylab_claims, then theorylab's registry)",
    )
    parser.addini(
        "theorylab_claims",
        type="paths",
        default=[],
        help="the project's own claim registry: TOML files or folders of them, relative to the ini file",
    )
    group.addoption(
        "--theorylab-seed",
        type=int,
        default=None,
        dest="theorylab_seed",
        help=f"base seed of the rng fixture (default: $THEORYLAB_SEED or {DEFAULT_SEED})",
    )


def add_short_options(parser, names=tuple(SHORT_OPTIONS)) -> None:
    """Register the short spellings (``--tier``, ``--claim``, ``--device``, ``--scale``, ``--claims-json``,
    ``--artifacts-dir``) as aliases of the ``--theorylab-*`` options. Called from the ``conftest.py`` of theorylab's
    own checks; a project whose conftest already defines one of these names simply leaves it out of ``names``."""
    group = parser.getgroup("theorylab", "theorylab claim checks")
    for name in names:
        attrs = {k: v for k, v in _OPTION_ATTRS[name].items() if k != "help"}
        group.addoption(SHORT_OPTIONS[name], dest=_dest(name), help=f"short for {OPTIONS[name]}", **attrs)
