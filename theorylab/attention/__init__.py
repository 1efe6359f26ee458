"""theorylab.attention: one subpackage per attention family (:mod:`.dyck`, :mod:`.topic`).

The modules' former flat names keep working, as attributes (``from theorylab.attention import dyck_balance``)
and as module paths (``from theorylab.attention.dyck_balance import balance_ratio``): both resolve lazily to the
modules listed in ``MOVED`` (the same module objects, nothing is imported twice).
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.util
import sys

#: former flat module name -> module it moved to
MOVED = {
    "dyck_balance": "theorylab.attention.dyck.balance",
    "dyck_bounds": "theorylab.attention.dyck.bounds",
    "dyck_counterexamples": "theorylab.attention.dyck.counterexamples",
    "dyck_exact": "theorylab.attention.dyck.exact",
    "dyck_trained": "theorylab.attention.dyck.trained",
    "topic_counterexamples": "theorylab.attention.topic.counterexamples",
    "topic_model": "theorylab.attention.topic.model",
    "topic_plots": "theorylab.attention.topic.plots",
    "topic_stage2": "theorylab.attention.topic.stage2",
    "topic_symbolic": "theorylab.attention.topic.symbolic",
}


def __getattr__(name: str):
    if name in MOVED:
        return importlib.import_module(MOVED[name])
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


class _Alias(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Imports ``theorylab.attention.<former name>`` as the module it moved to."""

    def find_spec(self, fullname, path=None, target=None):
        package, _, leaf = fullname.rpartition(".")
        if package == __name__ and leaf in MOVED:
            return importlib.util.spec_from_loader(fullname, self)
        return None

    def create_module(self, spec):
        return importlib.import_module(MOVED[spec.name.rpartition(".")[2]])

    def exec_module(self, module) -> None:
        pass


if not any(isinstance(f, _Alias) for f in sys.meta_path):
    sys.meta_path.append(_Alias())
