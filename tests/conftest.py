"""Fixtures of theorylab's library tests (the claim-check plugin is not active here)."""

import numpy as np
import pytest


@pytest.fixture
def rng() -> np.random.Generator:
    """A seeded generator: reruns are identical."""
    return np.random.default_rng(20240601)
