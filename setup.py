"""The package list: every ``theorylab*`` package, plus the claim checks in ``checks/`` shipped as the importable
package ``theorylab_checks`` so that an installed wheel can run them (``theorylab check``). Everything else is in
pyproject.toml."""

from setuptools import find_namespace_packages, setup

setup(
    packages=[*find_namespace_packages(include=["theorylab", "theorylab.*"]), "theorylab_checks"],
    package_dir={"theorylab_checks": "checks"},
)
