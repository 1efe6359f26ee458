"""Research instruments: counterexample search and shrinking, tightness of bounds, asymptotic rates, proof ledgers.

* :func:`search_counterexample` (``predicate``, ``strategy`` | ``space``, ``budget``) -> :class:`Counterexample`
  (or a falsy :class:`NoCounterexample` saying which budget stopped the search);
* :func:`tightness` (``lhs``, ``rhs``, ``strategy`` | ``space``) -> :class:`Tightness`;
* :func:`fit_rate` (``xs``, ``ys``, ``form``, ``printed``) -> :class:`RateFit` with bootstrap intervals;
* :class:`Proof` ([:class:`Step`, ...]).check(...) -> :class:`ProofReport` (first failing step, shrunk instance);
* self-describing counterexample files: :func:`write_counterexample`, :func:`read_counterexample`,
  :func:`verify_file` and the :class:`Refutation` registry behind ``theorylab verify`` / ``theorylab search``.

hypothesis and scipy are imported when a search runs, not at import.
"""

from theorylab.instruments.budget import Budget
from theorylab.instruments.files import (
    FORMAT_VERSION,
    Refutation,
    Verification,
    read_counterexample,
    refutation,
    refutations,
    register_refutation,
    verify_file,
    write_counterexample,
)
from theorylab.instruments.proof import Proof, ProofReport, Step
from theorylab.instruments.rates import FORMS, Form, RateFit, fit_rate
from theorylab.instruments.search import (
    Counterexample,
    NoCounterexample,
    PredicateError,
    search_counterexample,
)
from theorylab.instruments.tightness import Tightness, tightness, tightness_verdict

__all__ = [
    "Budget",
    "Counterexample",
    "NoCounterexample",
    "PredicateError",
    "search_counterexample",
    "Tightness",
    "tightness",
    "tightness_verdict",
    "Form",
    "FORMS",
    "RateFit",
    "fit_rate",
    "Step",
    "Proof",
    "ProofReport",
    "FORMAT_VERSION",
    "Refutation",
    "Verification",
    "register_refutation",
    "refutation",
    "refutations",
    "write_counterexample",
    "read_counterexample",
    "verify_file",
]
