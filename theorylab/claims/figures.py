"""The figures a claim's checks draw and the artifacts a run left for it, found without running anything.

Figures: calls ``figure(fig, "name")`` (the plugin's ``figure`` fixture) in the body of a check tagged with the
claim. Artifacts: the files of a run's artifacts folder under the claim's id (``--artifacts-dir DIR`` writes
``DIR/<claim id>/<name>.png``).
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

from theorylab.claims.checks import CheckRef

__all__ = ["FigureRef", "claim_figures", "claim_artifacts"]


@dataclass(frozen=True)
class FigureRef:
    name: str
    file: str
    check: str
    line: int


def _functions(tree: ast.Module) -> dict[str, ast.AST]:
    found: dict[str, ast.AST] = {}
    for node in tree.body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            found[node.name] = node
        elif isinstance(node, ast.ClassDef):
            for sub in node.body:
                if isinstance(sub, ast.FunctionDef | ast.AsyncFunctionDef):
                    found[f"{node.name}.{sub.name}"] = sub
    return found


def claim_figures(refs: list[CheckRef]) -> list[FigureRef]:
    """The ``figure(fig, "name")`` calls in the checks ``refs`` (names given as string literals)."""
    out: list[FigureRef] = []
    trees: dict[str, dict[str, ast.AST]] = {}
    for ref in refs:
        if ref.file not in trees:
            trees[ref.file] = _functions(ast.parse(Path(ref.file).read_text(encoding="utf-8")))
        fn = trees[ref.file].get(ref.name)
        for node in ast.walk(fn) if fn is not None else ():
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Name)
                and node.func.id == "figure"
                and len(node.args) >= 2
                and isinstance(node.args[1], ast.Constant)
                and isinstance(node.args[1].value, str)
            ):
                out.append(FigureRef(node.args[1].value, Path(ref.file).name, ref.name, node.lineno))
    return out


def claim_artifacts(claim_id: str, artifacts_dir: str | Path) -> list[Path]:
    """Files a run wrote for the claim under ``artifacts_dir/<claim id>/`` (empty if there are none)."""
    folder = Path(artifacts_dir) / claim_id
    return sorted(p for p in folder.rglob("*") if p.is_file()) if folder.is_dir() else []
