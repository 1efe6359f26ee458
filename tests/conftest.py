"""Fixtures of theorylab's library tests (the claim-check plugin is not active here)."""

import numpy as np
import pytest


@pytest.fixture
def rng() -> np.random.Generator:
    """A seeded generator: reruns are identical."""
    return np.random.default_rng(20240601)


def pytest_configure(config):
    # tests that share a process-wide resource (a local Ray cluster) run in one xdist worker (--dist loadgroup)
    config.addinivalue_line("markers", "xdist_group(name): run in the same xdist worker as the group")
