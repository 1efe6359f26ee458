"""theorylab.attention: one subpackage per attention family (:mod:`.dyck`, :mod:`.topic`).

The modules' former flat names stay importable as attributes (``from theorylab.attention import dyck_balance``)
and resolve lazily to the subpackage modules listed in ``MOVED``.
"""

from __future__ import annotations

import importlib

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
