"""The run store: one embedded SQLite table of trained results, shared by the full-size trained tier
(``theorylab trained``) and sweeps (``theorylab.sweeps``).

A run is identified by its key, a hash of (kind, name, config, seed, code version): storing the same run twice
replaces nothing (the first finished row wins), and a rerun skips every key the store already holds as done.
"""

from theorylab.runs.store import Run, RunStore, code_version, config_hash, run_key

__all__ = ["Run", "RunStore", "code_version", "config_hash", "run_key"]
