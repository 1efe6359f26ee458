"""pytest's rootdir stays the clone's root whatever paths a command names: an output folder outside the clone,
given as a separate argument (``--theorylab-artifacts-dir /tmp/out``), must not turn ``checks/`` into the rootdir
(which would drop the project's pytest settings and make ``tests/conftest.py``'s fixtures global)."""

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_no_pytest_config_file_below_the_root() -> None:
    names = {"pytest.ini", ".pytest.ini", "tox.ini", "setup.cfg", "pyproject.toml"}
    assert not [p for p in (ROOT / "checks").iterdir() if p.name in names]


def test_an_output_folder_outside_the_clone_keeps_the_rootdir(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_XDIST")}
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "checks/test_anchor.py",
            "--collect-only",
            "-q",
            "-p",
            "no:cacheprovider",
        ]
        + ["--theorylab-artifacts-dir", str(tmp_path)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert out.returncode == 0, out.stdout + out.stderr
    ids = [line for line in out.stdout.splitlines() if "::" in line]
    assert ids and all(line.startswith("checks/test_anchor.py::") for line in ids), ids[:3]
