"""Registry of counterexample generators.

A claim family registers zero-argument generators in a module named ``counterexamples`` (or ``*_counterexamples``)
of any theorylab subpackage::

    @register("hmm.thm4", "two HMMs with equal x_t | x_1 predictors")
    def thm4_pair() -> dict[str, np.ndarray]: ...

``generate(id)`` returns the arrays; ``save(id, path)`` writes them to an ``.npz`` file. Modules are discovered
lazily, the first time the registry is consulted.
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

Generator = Callable[[], dict[str, np.ndarray]]


@dataclass(frozen=True)
class CounterexampleGenerator:
    id: str
    description: str
    function: Generator
    module: str


_REGISTRY: dict[str, CounterexampleGenerator] = {}
_DISCOVERED = False


def register(generator_id: str, description: str) -> Callable[[Generator], Generator]:
    """Decorator registering ``function`` as the generator ``generator_id`` (usually a claim id)."""

    def decorator(function: Generator) -> Generator:
        old = _REGISTRY.get(generator_id)
        if old is not None and (old.module, old.function.__qualname__) != (
            function.__module__,
            function.__qualname__,
        ):
            raise ValueError(
                f"counterexample {generator_id!r} registered twice ({old.module} and {function.__module__})"
            )
        _REGISTRY[generator_id] = CounterexampleGenerator(
            generator_id, description, function, function.__module__
        )
        return function

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


def generate(generator_id: str) -> dict[str, np.ndarray]:
    """Run the generator ``generator_id`` and return its arrays (validated to be numpy arrays)."""
    # a generator whose module is already imported needs no package walk (that walk imports every subpackage)
    gens = _REGISTRY if generator_id in _REGISTRY else available()
    if generator_id not in gens:
        raise KeyError(
            f"no counterexample generator {generator_id!r}; available: {', '.join(gens) or 'none'}"
        )
    arrays = gens[generator_id].function()
    if not isinstance(arrays, dict) or not arrays:
        raise TypeError(f"generator {generator_id!r} must return a non-empty dict of arrays")
    return {str(k): np.asarray(v) for k, v in arrays.items()}


def save(generator_id: str, path: str | Path) -> Path:
    """Generate ``generator_id`` and write it to ``path`` (``.npz``) with its metadata (claim id, refuted statement,
    scalar parameters, format version: see ``theorylab.instruments.files``); returns the path written."""
    from theorylab.instruments.files import generator_metadata

    path = Path(path)
    arrays = generate(generator_id)
    arrays.update(generator_metadata(generator_id, available()[generator_id].description, arrays))
    arrays["_generator"] = np.asarray(generator_id)
    np.savez(path, **arrays)
    return path if path.suffix == ".npz" else path.with_name(path.name + ".npz")
