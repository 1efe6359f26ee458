"""Render the built docs in headless chromium, offline, and fail if raw TeX is visible.

Usage: python scripts/check_docs_render.py [SITE_DIR] [OUT_DIR]   (defaults: site, artifacts/screenshots)
       python scripts/check_docs_render.py REPORT.html [OUT_DIR]  (one page: a ``theorylab report`` HTML file)

Screenshots the index, a family page (hmm) and the errata page with Debian's chromium (``apt-get install -y
chromium``), with no network use (fresh profile, background networking, sync and component updates off), dumps
the rendered DOM and fails (exit status 1) if visible text outside code still holds TeX delimiters or commands
(``\\(``, ``\\[``, ``$$``, ``\\frac``, ...): the math must have been rendered (to MathML at build time).
"""

from __future__ import annotations

import html
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

PAGES = {"index": "index.html", "family-hmm": "hmm/index.html", "errata": "errata/index.html"}
FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--hide-scrollbars",
]
_HIDDEN = re.compile(r"<(script|style|code|pre|math|head)\b.*?</\1>", re.DOTALL | re.IGNORECASE)
_TAG = re.compile(r"<[^>]+>")
RAW_TEX = re.compile(
    r"\\\(|\\\)|\\\[|\\\]|\$\$|\\(?:frac|mathrm|mathbb|mathcal|le|ge|sum|alpha|beta|sigma)\b"
)


def chromium() -> str:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        path = shutil.which(name)
        if path:
            return path
    raise SystemExit("chromium not found: apt-get install -y chromium")


def visible_text(dom: str) -> str:
    return html.unescape(_TAG.sub(" ", _HIDDEN.sub(" ", dom)))


def check(site: Path, out: Path, pages: dict[str, str] = PAGES) -> list[str]:
    browser, problems = chromium(), []
    out.mkdir(parents=True, exist_ok=True)
    for name, rel in pages.items():
        page = (site / rel).resolve()
        if not page.is_file():
            problems.append(f"{rel}: missing (build the docs first: make docs)")
            continue
        with tempfile.TemporaryDirectory() as profile:
            base = [browser, *FLAGS, f"--user-data-dir={profile}"]
            shot = out / f"{name}.png"
            subprocess.run(
                [*base, f"--screenshot={shot}", "--window-size=1280,2400", page.as_uri()],
                capture_output=True,
                timeout=120,
                check=False,
            )
            dom = subprocess.run(
                [*base, "--dump-dom", "--virtual-time-budget=5000", page.as_uri()],
                capture_output=True,
                text=True,
                timeout=120,
                check=False,
            ).stdout
        if not shot.is_file():
            problems.append(f"{rel}: no screenshot written")
        if "<body" not in dom:
            problems.append(f"{rel}: chromium returned no DOM")
            continue
        text = visible_text(dom)
        for m in list(RAW_TEX.finditer(text))[:5]:
            problems.append(f"{rel}: raw TeX visible: ...{text[max(0, m.start() - 40) : m.end() + 40]!r}...")
        print(f"{rel}: screenshot {shot}, {dom.count('<math')} formulas rendered as MathML")
    return problems


def main(argv: list[str]) -> int:
    site = Path(argv[0]) if argv else Path("site")
    out = Path(argv[1]) if len(argv) > 1 else Path("artifacts/screenshots")
    if site.suffix == ".html":  # one page, e.g. theorylab's HTML report
        problems = check(site.parent, out, {site.stem: site.name})
    else:
        problems = check(site, out)
    for p in problems:
        print(p, file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
