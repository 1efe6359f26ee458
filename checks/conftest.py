"""Claim checks. Options, fixtures (rng, seed, device, scale, measure, figure) and the claim table come from the
theorylab pytest plugin (``theorylab.pytest_plugin``), which is installed with the package."""
