"""Registry of counterexample generators.

A claim family registers generators in a module named ``counterexamples`` (or ``*_counterexamples``) of any
theorylab subpackage, each with the check that re-decides its file from the arrays alone::

    @register("hmm.thm4", "two HMMs with equal x_t | x_1 predictors", kind="witness")
    def thm4_pair(t: int = 3) -> dict[str, np.ndarray]: ...

    @verifier("hmm.thm4")
    def _thm4(a) -> tuple[bool, str]: ...   # (the instance is what the file says it is, detail)

A generator is a *refutation* (its instance makes the printed statement fail) or a *witness* (its instance has the
stated property, e.g. two different models with the same predictors). Keyword parameters with defaults can be set
from the CLI (``theorylab counterexample hmm.thm4 --param t=4``). The module's ``CONVENTIONS`` string (matrix
orientation, indexing) is written into every file. ``generate(id)`` returns the arrays; ``save(id, path)`` writes
them to an ``.npz`` file. Modules are discovered lazily, the first time the registry is consulted.
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

Generator = Callable[..., dict[str, np.ndarray]]
Check = Callable[[Mapping[str, np.ndarray]], tuple[bool, str]]
KINDS = ("refutation", "witness")


@dataclass(frozen=True)
class CounterexampleGenerator:
    """``kind``: ``"refutation"`` (the instance makes the printed statement fail) or ``"witness"`` (the instance
    has the stated property); ``check(arrays) -> (is what the file claims, detail)``."""

    id: str
    description: str
    function: Generator
    module: str
    kind: str = "refutation"
    check: Check | None = None

    @property
    def parameters(self) -> dict[str, Any]:
        """The generator's settable parameters and their defaults."""
        sig = inspect.signature(self.function)
        return {n: p.default for n, p in sig.parameters.items() if p.default is not inspect.Parameter.empty}

    @property
    def conventions(self) -> str:
        return str(getattr(sys.modules.get(self.module), "CONVENTIONS", ""))


_REGISTRY: dict[str, CounterexampleGenerator] = {}
_DISCOVERED = False


def register(
    generator_id: str, description: str, *, kind: str = "refutation"
) -> Callable[[Generator], Generator]:
    """Decorator registering ``function`` as the generator ``generator_id`` (usually a claim id)."""
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {KINDS}, not {kind!r}")

    def decorator(function: Generator) -> Generator:
        old = _REGISTRY.get(generator_id)
        if old is not None and (old.module, old.function.__qualname__) != (
            function.__module__,
            function.__qualname__,
        ):
            raise ValueError(
                f"counterexample {generator_id!r} registered twice ({old.module} and {function.__module__})"
            )
        check = old.check if old is not None else None
        _REGISTRY[generator_id] = CounterexampleGenerator(
            generator_id, description, function, function.__module__, kind, check
        )
        return function

    return decorator


def verifier(generator_id: str) -> Callable[[Check], Check]:
    """Decorator attaching ``check(arrays) -> (ok, detail)`` to the registered generator ``generator_id``: ``ok``
    iff the printed statement fails on the arrays (refutation) or they have the stated property (witness)."""

    def decorator(check: Check) -> Check:
        if generator_id not in _REGISTRY:
            raise KeyError(f"verifier for unregistered counterexample generator {generator_id!r}")
        _REGISTRY[generator_id] = replace(_REGISTRY[generator_id], check=check)
        return check

    return decorator


def _discover() -> None:
    global _DISCOVERED
    if _DISCOVERED:
        return
    import theorylab

    for info in pkgutil.walk_packages(theorylab.__path__, prefix="theorylab."):
        leaf = info.name.rsplit(".", 1)[-1]
        if leaf == "counterexamples" and info.name != __name__ or leaf.endswith("_counterexamples"):
            importlib.import_module(info.name)
    _DISCOVERED = True


def available() -> dict[str, CounterexampleGenerator]:
    """All registered generators, by id."""
    _discover()
    return dict(sorted(_REGISTRY.items()))


def get(generator_id: str) -> CounterexampleGenerator:
    # a generator whose module is already imported needs no package walk (that walk imports every subpackage)
    gens = _REGISTRY if generator_id in _REGISTRY else available()
    if generator_id not in gens:
        raise KeyError(
            f"no counterexample generator {generator_id!r}; available: {', '.join(gens) or 'none'}"
        )
    return gens[generator_id]


def _check_params(gen: CounterexampleGenerator, params: Mapping[str, Any]) -> None:
    unknown = sorted(set(params) - set(gen.parameters))
    if unknown:
        have = ", ".join(f"{k}={v}" for k, v in gen.parameters.items()) or "none"
        raise ValueError(f"generator {gen.id!r} has no parameter {', '.join(unknown)} (parameters: {have})")


def generate(generator_id: str, **params: Any) -> dict[str, np.ndarray]:
    """Run the generator ``generator_id`` (with ``params`` for its keyword parameters) and return its arrays
    (validated to be numpy arrays)."""
    gen = get(generator_id)
    _check_params(gen, params)
    arrays = gen.function(**params)
    if not isinstance(arrays, dict) or not arrays:
        raise TypeError(f"generator {generator_id!r} must return a non-empty dict of arrays")
    return {str(k): np.asarray(v) for k, v in arrays.items()}


def save(generator_id: str, path: str | Path, **params: Any) -> Path:
    """Generate ``generator_id`` and write it to ``path`` (``.npz``) with its metadata (claim id, refuted statement
    or stated property, kind, scalar parameters, conventions, theorylab version, format version: see
    ``theorylab.instruments.files``); returns the path written."""
    from theorylab.instruments.files import generator_metadata

    path = Path(path)
    arrays = generate(generator_id, **params)
    arrays.update(generator_metadata(get(generator_id), arrays))
    arrays["_generator"] = np.asarray(generator_id)
    np.savez(path, **arrays)
    return path if path.suffix == ".npz" else path.with_name(path.name + ".npz")
