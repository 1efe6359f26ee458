"""An embedded SQLite store of trained runs (stdlib ``sqlite3``: no server, one file, safe for one writer at a
time per transaction and any number of readers; WAL journal so readers never block the writer).

Schema (table ``runs``, one row per run):

    key TEXT PRIMARY KEY       run_key(kind, name, config, seed, code_version)
    kind TEXT                  "check" (a trained claim check) or "sweep" (a run of a sweep)
    name TEXT                  the check's id or the sweep's name
    config_hash TEXT, config TEXT (JSON), seed INTEGER (NULL when the run has none)
    code_version TEXT          theorylab's version and a hash of its source files
    status TEXT                "running", "done" or "failed"
    verdict TEXT               "passed"/"failed"/"skipped" for checks, NULL for sweep runs
    metrics TEXT (JSON)        numbers measured right after training (never models)
    device TEXT, seconds REAL, step_ms REAL, mfu REAL
    started REAL, finished REAL (Unix time), worker TEXT

A row in status "running" whose worker died is not a result: ``pending`` lists it again, and the next ``finish``
of that key replaces it. A finished row is never overwritten by a second finish (exactly one row per run).
"""

from __future__ import annotations

import hashlib
import json
import math
import sqlite3
import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

STATUSES = ("running", "done", "failed")

_COLUMNS = (
    "key",
    "kind",
    "name",
    "config_hash",
    "config",
    "seed",
    "code_version",
    "status",
    "verdict",
    "metrics",
    "device",
    "seconds",
    "step_ms",
    "mfu",
    "started",
    "finished",
    "worker",
)

_SCHEMA = f"""
CREATE TABLE IF NOT EXISTS runs (
    key TEXT PRIMARY KEY, kind TEXT NOT NULL, name TEXT NOT NULL, config_hash TEXT NOT NULL,
    config TEXT NOT NULL, seed INTEGER, code_version TEXT NOT NULL,
    status TEXT NOT NULL CHECK (status IN {STATUSES!r}), verdict TEXT, metrics TEXT NOT NULL,
    device TEXT, seconds REAL, step_ms REAL, mfu REAL, started REAL, finished REAL, worker TEXT
);
CREATE INDEX IF NOT EXISTS runs_by_name ON runs (kind, name, code_version, status);
"""


def _canonical(obj: Any) -> Any:
    """JSON-ready form of a config: mappings sorted, tuples as lists, numpy scalars as Python numbers."""
    if isinstance(obj, Mapping):
        return {str(k): _canonical(v) for k, v in sorted(obj.items(), key=lambda kv: str(kv[0]))}
    if isinstance(obj, list | tuple):
        return [_canonical(v) for v in obj]
    if hasattr(obj, "item") and callable(obj.item) and getattr(obj, "shape", None) == ():
        return obj.item()
    if hasattr(obj, "tolist"):
        return obj.tolist()
    if hasattr(obj, "__dataclass_fields__"):
        return _canonical(asdict(obj))
    if isinstance(obj, float) and not math.isfinite(obj):
        return repr(obj)
    if obj is None or isinstance(obj, bool | int | float | str):
        return obj
    raise TypeError(f"config value {obj!r} of type {type(obj).__name__} is not JSON-serialisable")


def _dumps(obj: Any) -> str:
    return json.dumps(_canonical(obj), sort_keys=True, separators=(",", ":"))


def config_hash(config: Mapping[str, Any]) -> str:
    """SHA-256 (16 hex digits) of the canonical JSON of ``config`` (key order and tuple/list do not matter)."""
    if not isinstance(config, Mapping):
        raise TypeError(f"config must be a mapping, got {type(config).__name__}")
    return hashlib.sha256(_dumps(config).encode()).hexdigest()[:16]


@cache
def code_version() -> str:
    """``<version>+<hash>``: theorylab's version and a hash of the text of its ``.py`` files, so that any change
    of the library's code gives another version (results of other code are read, never mixed in silently)."""
    import theorylab

    root = Path(theorylab.__file__).parent
    h = hashlib.sha256()
    for path in sorted(root.rglob("*.py")):
        h.update(str(path.relative_to(root)).encode())
        h.update(path.read_bytes())
    return f"{theorylab.__version__}+{h.hexdigest()[:12]}"


def run_key(
    kind: str, name: str, config: Mapping[str, Any], seed: int | None, version: str | None = None
) -> str:
    """The identity of a run: hash of kind, name, config, seed and code version (``code_version()`` by default)."""
    if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int)):
        raise TypeError(f"seed must be an int or None, got {type(seed).__name__}")
    payload = _dumps([kind, name, config_hash(config), seed, version or code_version()])
    return hashlib.sha256(payload.encode()).hexdigest()[:24]


@dataclass(frozen=True)
class Run:
    """One row of the store."""

    kind: str
    name: str
    config: dict[str, Any]
    seed: int | None = None
    code_version: str = field(default_factory=code_version)
    status: str = "done"
    verdict: str | None = None
    metrics: dict[str, Any] = field(default_factory=dict)
    device: str | None = None
    seconds: float | None = None
    step_ms: float | None = None
    mfu: float | None = None
    started: float | None = None
    finished: float | None = None
    worker: str | None = None

    def __post_init__(self) -> None:
        if self.status not in STATUSES:
            raise ValueError(f"status must be one of {STATUSES}, got {self.status!r}")
        if not isinstance(self.kind, str) or not self.kind:
            raise ValueError("kind must be a non-empty string")
        if not isinstance(self.name, str) or not self.name:
            raise ValueError("name must be a non-empty string")
        if not isinstance(self.config, Mapping):
            raise TypeError(f"config must be a mapping, got {type(self.config).__name__}")

    @property
    def key(self) -> str:
        return run_key(self.kind, self.name, self.config, self.seed, self.code_version)

    @property
    def config_hash(self) -> str:
        return config_hash(self.config)

    def _row(self) -> tuple:
        return (
            self.key,
            self.kind,
            self.name,
            self.config_hash,
            _dumps(self.config),
            self.seed,
            self.code_version,
            self.status,
            self.verdict,
            _dumps(self.metrics),
            self.device,
            self.seconds,
            self.step_ms,
            self.mfu,
            self.started,
            self.finished if self.finished is not None or self.status == "running" else time.time(),
            self.worker,
        )

    @classmethod
    def _from_row(cls, row: sqlite3.Row) -> Run:
        d = dict(row)
        d.pop("key")
        d.pop("config_hash")
        d["config"] = json.loads(d["config"])
        d["metrics"] = json.loads(d["metrics"])
        return cls(**d)

    def to_dict(self) -> dict[str, Any]:
        return {"key": self.key, "config_hash": self.config_hash, **_canonical(asdict(self))}


_PLAIN = (int, str, bool, type(None))


def _dumps_flat(d: Mapping[str, Any]) -> str:
    """``_dumps(d)`` for a flat mapping of str keys to plain finite numbers/strings (a run's metrics), without the
    recursive canonicalisation; anything else goes through ``_dumps``."""
    if type(d) is dict and all(
        type(k) is str and (type(v) in _PLAIN or (type(v) is float and math.isfinite(v)))
        for k, v in d.items()
    ):
        return json.dumps(d, sort_keys=True, separators=(",", ":"))
    return _dumps(d)


def _fast_row(run: Run, cache: dict[int, tuple]) -> tuple:
    """``run._row()``, with the canonical JSON and hash of each config computed once per config object (runs of a
    sweep share their configs: canonicalising and hashing them per row was most of a bulk write's time)."""
    hit = cache.get(id(run.config))
    if hit is None or hit[0] is not run.config:
        text = _dumps(run.config)
        hit = (run.config, text, hashlib.sha256(text.encode()).hexdigest()[:16])
        cache[id(run.config)] = hit
    _, config_text, chash = hit
    if run.seed is not None and (isinstance(run.seed, bool) or not isinstance(run.seed, int)):
        raise TypeError(f"seed must be an int or None, got {type(run.seed).__name__}")
    payload = json.dumps([run.kind, run.name, chash, run.seed, run.code_version], separators=(",", ":"))
    return (
        hashlib.sha256(payload.encode()).hexdigest()[:24],
        run.kind,
        run.name,
        chash,
        config_text,
        run.seed,
        run.code_version,
        run.status,
        run.verdict,
        _dumps_flat(run.metrics),
        run.device,
        run.seconds,
        run.step_ms,
        run.mfu,
        run.started,
        run.finished if run.finished is not None or run.status == "running" else time.time(),
        run.worker,
    )


def _connect(path: str | Path) -> sqlite3.Connection:
    text = str(path)
    if text.startswith("sqlite:///"):
        text = text[len("sqlite:///") :]
    elif "://" in text:
        raise ValueError(f"run store {text!r}: only a file path, ':memory:' or a sqlite:/// URL is supported")
    if text != ":memory:":
        Path(text).parent.mkdir(parents=True, exist_ok=True)
    con = sqlite3.connect(text, timeout=60.0, isolation_level=None)
    con.row_factory = sqlite3.Row
    if text != ":memory:":
        con.execute("PRAGMA journal_mode=WAL")
    con.execute("PRAGMA synchronous=NORMAL")
    con.executescript(_SCHEMA)
    return con


class RunStore:
    """``RunStore(path)``: the runs of one SQLite file (created on first use), or ``":memory:"``."""

    def __init__(self, path: str | Path = "artifacts/runs.sqlite") -> None:
        self.path = str(path)
        self._con = _connect(path)

    def close(self) -> None:
        self._con.close()

    def __enter__(self) -> RunStore:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __len__(self) -> int:
        return self._con.execute("SELECT COUNT(*) FROM runs").fetchone()[0]

    # -- writing ------------------------------------------------------------------------------------------
    def start(self, run: Run) -> bool:
        """Mark ``run`` as running; False (and nothing written) if the store already holds it as done."""
        row = Run(**{**asdict(run), "status": "running", "started": run.started or time.time()})._row()
        cur = self._con.execute(
            f"INSERT INTO runs VALUES ({','.join('?' * len(_COLUMNS))}) "
            "ON CONFLICT(key) DO UPDATE SET status='running', started=excluded.started, worker=excluded.worker "
            "WHERE runs.status != 'done'",
            row,
        )
        return cur.rowcount == 1

    def finish(self, run: Run) -> bool:
        """Store a finished run (status "done" or "failed"). A key already done is kept as it is and False is
        returned, so that a retried run is never stored twice."""
        return self.finish_many([run]) == 1

    def finish_many(self, runs: Iterable[Run]) -> int:
        """Store many finished runs in one transaction; returns how many rows were written."""
        rows = []
        cache: dict[int, tuple] = {}
        for run in runs:
            if run.status == "running":
                raise ValueError(f"finish: run {run.name!r} seed {run.seed} still has status 'running'")
            rows.append(_fast_row(run, cache))
        placeholders = ",".join("?" * len(_COLUMNS))
        updates = ",".join(f"{c}=excluded.{c}" for c in _COLUMNS[1:])
        with self._transaction():
            before = self._con.total_changes
            self._con.executemany(
                f"INSERT INTO runs VALUES ({placeholders}) ON CONFLICT(key) DO UPDATE SET {updates} "
                "WHERE runs.status != 'done'",
                rows,
            )
            return self._con.total_changes - before

    def _transaction(self):
        con = self._con

        class _Tx:
            def __enter__(self):
                con.execute("BEGIN IMMEDIATE")

            def __exit__(self, exc_type, *_):
                con.execute("ROLLBACK" if exc_type else "COMMIT")

        return _Tx()

    # -- reading ------------------------------------------------------------------------------------------
    def get(self, key: str) -> Run | None:
        row = self._con.execute("SELECT * FROM runs WHERE key = ?", (key,)).fetchone()
        return Run._from_row(row) if row else None

    def is_done(self, key: str) -> bool:
        row = self._con.execute("SELECT status FROM runs WHERE key = ?", (key,)).fetchone()
        return bool(row) and row[0] == "done"

    def done_keys(self, keys: Sequence[str] | None = None) -> set[str]:
        """The keys (of ``keys``, or all) that the store holds as done."""
        if keys is None:
            return {r[0] for r in self._con.execute("SELECT key FROM runs WHERE status = 'done'")}
        found: set[str] = set()
        keys = list(keys)
        for i in range(0, len(keys), 500):
            chunk = keys[i : i + 500]
            q = f"SELECT key FROM runs WHERE status = 'done' AND key IN ({','.join('?' * len(chunk))})"
            found.update(r[0] for r in self._con.execute(q, chunk))
        return found

    def query(
        self,
        kind: str | None = None,
        name: str | None = None,
        code_version: str | None = None,
        status: str | None = "done",
        config_hash: str | None = None,
    ) -> list[Run]:
        """Runs matching every given field (``None`` matches any), in insertion order."""
        return list(self.iter(kind, name, code_version, status, config_hash))

    def iter(self, kind=None, name=None, code_version=None, status="done", config_hash=None) -> Iterator[Run]:
        where, args = [], []
        for col, val in (
            ("kind", kind),
            ("name", name),
            ("code_version", code_version),
            ("status", status),
            ("config_hash", config_hash),
        ):
            if val is not None:
                where.append(f"{col} = ?")
                args.append(val)
        q = "SELECT * FROM runs" + (" WHERE " + " AND ".join(where) if where else "") + " ORDER BY rowid"
        for row in self._con.execute(q, args):
            yield Run._from_row(row)

    def versions(self, kind: str | None = None, name: str | None = None) -> dict[str, int]:
        """Code version -> number of done runs (for a sweep: which versions it would aggregate)."""
        q = "SELECT code_version, COUNT(*) FROM runs WHERE status = 'done'"
        args: list = []
        if kind is not None:
            q += " AND kind = ?"
            args.append(kind)
        if name is not None:
            q += " AND name = ?"
            args.append(name)
        return dict(self._con.execute(q + " GROUP BY code_version", args).fetchall())

    def export(self, path: str | Path, **filters) -> int:
        """Write the matching runs to ``.json`` (a list of rows) or ``.csv`` (metrics flattened as JSON text)."""
        runs = [r.to_dict() for r in self.iter(**filters)]
        path = Path(path)
        if path.suffix == ".json":
            path.write_text(json.dumps(runs, indent=1))
        elif path.suffix == ".csv":
            import csv

            with path.open("w", newline="") as f:
                writer = csv.DictWriter(f, fieldnames=list(_COLUMNS))
                writer.writeheader()
                for r in runs:
                    writer.writerow({k: _dumps(v) if isinstance(v, dict) else v for k, v in r.items()})
        else:
            raise ValueError(f"export: {path.name!r} must end in .json or .csv")
        return len(runs)
