"""theorylab's claim checks. Turns on the theorylab pytest plugin (fixtures rng, seed, device, scale, measure,
figure; the claim marker and table) for these checks only, and accepts the short option spellings ``--tier``,
``--claim``, ``--device``, ``--scale``, ``--claims-json`` and ``--artifacts-dir``."""

import os

pytest_plugins = ["theorylab.pytest_plugin"]


def pytest_addoption(parser):
    from theorylab.pytest_options import add_short_options

    add_short_options(parser)


def pytest_configure(config):
    # used by the trained checks with `--dist loadgroup`; registered so that runs without xdist do not warn
    config.addinivalue_line("markers", "xdist_group(name): run in the same xdist worker as the group")
    if hasattr(config, "workerinput"):  # an xdist worker of this suite: one BLAS thread per worker
        os.environ.setdefault("OMP_NUM_THREADS", "1")
