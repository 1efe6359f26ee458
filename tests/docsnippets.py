"""Extracting and running the code blocks of README.md and docs/*.md (used by tests/test_docs.py).

A ``python`` block runs in one namespace per page, in order. A statement whose line ends in
``# raises NameOfError`` must raise that exception (a documented failure is checked, not skipped). A block
preceded by ``<!-- file: PATH -->`` is a file of a tutorial, written rather than run; ``bash`` blocks of the
tutorial are run in its folder. Blocks after a line ``<!-- snippets below: run by their own test -->`` are left
to the dedicated test that sets up what they need (a user registry, files on disk).
"""

from __future__ import annotations

import re
from pathlib import Path

_BLOCK = re.compile(r"(<!-- file: (?P<file>[^ ]+) -->\n)?```(?P<lang>\w+)\n(?P<code>.*?)```", re.DOTALL)
OWN_TEST_MARKER = "<!-- snippets below: run by their own test -->"
_RAISES = re.compile(r"^(?P<indent>\s*)(?P<stmt>\S.*?)\s+# raises (?P<exc>\w+(?:Error|Exception))\b.*$")


def blocks(path: Path) -> list[tuple[int, str, str | None, str]]:
    """``(line, language, file or None, code)`` for every fenced block of ``path``."""
    text = path.read_text(encoding="utf-8").split(OWN_TEST_MARKER, 1)[0]
    return [
        (text[: m.start()].count("\n") + 1, m.group("lang"), m.group("file"), m.group("code"))
        for m in _BLOCK.finditer(text)
    ]


def python_blocks(path: Path) -> list[tuple[int, str]]:
    return [(line, code) for line, lang, file, code in blocks(path) if lang == "python" and file is None]


def _expect_raises(code: str) -> str:
    out = []
    for line in code.splitlines():
        m = _RAISES.match(line)
        if not m:
            out.append(line)
            continue
        ind, stmt, exc = m.group("indent"), m.group("stmt"), m.group("exc")
        out += [
            f"{ind}try:",
            f"{ind}    {stmt}",
            f"{ind}except Exception as _exc:",
            f"{ind}    assert {exc!r} in [c.__name__ for c in type(_exc).__mro__], _exc",
            f"{ind}else:",
            f"{ind}    raise AssertionError({(stmt + ' did not raise ' + exc)!r})",
        ]
    return "\n".join(out) + "\n"


def run_block(code: str, where: str, namespace: dict) -> None:
    exec(compile(_expect_raises(code), where, "exec"), namespace)
