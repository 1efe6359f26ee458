"""Static index of the checks that back each claim.

Scans test files for ``@pytest.mark.claim("id", tier=..., control=...)`` decorators (on functions and classes)
without importing them, so that the CLI and the pytest plugin can list checks per claim cheaply.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class CheckRef:
    claim: str
    tier: str
    control: bool
    file: str
    name: str
    line: int


def _marker_call(node: ast.expr) -> ast.Call | None:
    """The call node if ``node`` is ``pytest.mark.claim(...)`` / ``mark.claim(...)``."""
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "claim":
        value = node.func.value
        if isinstance(value, ast.Attribute) and value.attr == "mark" or isinstance(value, ast.Name):
            return node
    return None


def _literal(node: ast.expr | None, default, consts: dict | None = None):
    if node is None:
        return default
    if isinstance(node, ast.Name) and consts and node.id in consts:
        return consts[node.id]
    try:
        return ast.literal_eval(node)
    except ValueError:
        return default


def _refs_from_decorators(
    decorators: list[ast.expr], file: str, name: str, line: int, consts: dict
) -> list[CheckRef]:
    refs = []
    for dec in decorators:
        call = _marker_call(dec)
        if call is None or not call.args:
            continue
        claim = _literal(call.args[0], None, consts)
        kwargs = {k.arg: k.value for k in call.keywords}
        tier = _literal(kwargs.get("tier"), None, consts)
        if tier is None and len(call.args) > 1:
            tier = _literal(call.args[1], None, consts)
        if isinstance(claim, str):
            refs.append(
                CheckRef(claim, str(tier), bool(_literal(kwargs.get("control"), False)), file, name, line)
            )
    return refs


def _string_constants(tree: ast.Module) -> dict[str, str]:
    """Module-level ``NAME = "..."`` and ``A, B = "...", "..."`` assignments."""
    consts: dict[str, str] = {}
    for node in tree.body:
        if not isinstance(node, ast.Assign) or len(node.targets) != 1:
            continue
        target, value = node.targets[0], node.value
        pairs = (
            zip(target.elts, value.elts, strict=False)
            if isinstance(target, ast.Tuple) and isinstance(value, ast.Tuple)
            else [(target, value)]
        )
        for name, const in pairs:
            if (
                isinstance(name, ast.Name)
                and isinstance(const, ast.Constant)
                and isinstance(const.value, str)
            ):
                consts[name.id] = const.value
    return consts


def parse_file(path: str | Path) -> ast.Module:
    """The syntax tree of ``path``."""
    return ast.parse(Path(path).read_text(encoding="utf-8"), filename=str(path))


def scan_file(path: Path, tree: ast.Module | None = None) -> list[CheckRef]:
    """Every claim marker in ``path`` (whose syntax tree may be given); a class's markers apply to each of its test
    methods. Claim ids may be string literals or module-level string constants. Cached per version of the file
    (its modification time), so the pytest plugin and the claim table read each file once."""
    key = (str(path), Path(path).stat().st_mtime_ns)
    if key not in _SCANNED:
        _SCANNED[key] = tuple(_scan_tree(str(path), tree if tree is not None else parse_file(path)))
    return list(_SCANNED[key])


_SCANNED: dict[tuple[str, int], tuple[CheckRef, ...]] = {}


def _scan_tree(path: str, tree: ast.Module) -> list[CheckRef]:
    consts = _string_constants(tree)
    refs: list[CheckRef] = []
    for node in tree.body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            refs += _refs_from_decorators(node.decorator_list, str(path), node.name, node.lineno, consts)
        elif isinstance(node, ast.ClassDef):
            outer = node.decorator_list
            for sub in node.body:
                if isinstance(sub, ast.FunctionDef) and sub.name.startswith("test"):
                    refs += _refs_from_decorators(
                        outer + sub.decorator_list, str(path), f"{node.name}.{sub.name}", sub.lineno, consts
                    )
    return refs


def check_files(directory: str | Path = "checks") -> list[Path]:
    """The check files ``directory/test_*.py``, sorted (empty if the directory does not exist)."""
    directory = Path(directory)
    return sorted(directory.glob("test_*.py")) if directory.is_dir() else []


def scan_checks(directory: str | Path = "checks") -> list[CheckRef]:
    """Every claim marker in ``directory/test_*.py`` (empty if the directory does not exist)."""
    return [ref for path in check_files(directory) for ref in scan_file(path)]


def check_dirs() -> list[Path]:
    """Where the checks of the registered claims live: the folders declared by the registry's files
    (``checks = ...``) and the installed claim checks of theorylab (the ``theorylab_checks`` package, which is the
    repository's ``checks/`` in a clone)."""
    from theorylab.claims.registry import _default

    folders = [Path(d) for fam in _default()[1].values() for d in fam.checks]
    installed = installed_checks_dir()
    if installed is not None:
        folders.append(installed)
    return list(dict.fromkeys(folders))


def installed_checks_dir() -> Path | None:
    """The folder of the installed ``theorylab_checks`` package (theorylab's claim checks), if installed."""
    import importlib.util

    try:
        spec = importlib.util.find_spec("theorylab_checks")
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(next(iter(spec.submodule_search_locations)))
