"""Conversion to and from hmmlearn's row-stochastic parameters.

hmmlearn stores ``startprob_[i] = P(h_1 = i)``, ``transmat_[i, j] = P(h_{t+1} = j | h_t = i)`` and (for
``CategoricalHMM``) ``emissionprob_[i, x] = P(x_t = x | h_t = i)`` or (for ``GaussianHMM``) ``means_[i]``.
theorylab's ``HMM(O, T)`` / ``GHMM(M, T)`` are column-stochastic: ``O = emissionprob_.T``, ``T = transmat_.T``,
``M = means_.T``, with a uniform (stationary) initial state (Assumption 5). hmmlearn itself is not needed: the
converters read and write plain arrays or any object with these attributes.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from theorylab.hmm.models import GHMM, HMM, SUM_TOL, AssumptionError

__all__ = ["from_hmmlearn", "to_hmmlearn"]


def to_hmmlearn(model: HMM | GHMM, target: Any | None = None) -> dict[str, np.ndarray]:
    """hmmlearn's parameters of ``model``: ``startprob_`` (uniform), ``transmat_ = T.T`` and ``emissionprob_ =
    O.T`` (``HMM``) or ``means_ = M.T`` (``GHMM``, unit covariances: ``covars_`` = ones, covariance type
    "diag"). If ``target`` (e.g. an ``hmmlearn.hmm.CategoricalHMM(n_components=k)``) is given, the attributes are
    also set on it."""
    if not isinstance(model, HMM | GHMM):
        raise TypeError(f"model must be a theorylab HMM or GHMM, got {type(model).__name__}")
    params = {"startprob_": np.full(model.k, 1.0 / model.k), "transmat_": np.array(model.T.T)}
    if isinstance(model, HMM):
        params["emissionprob_"] = np.array(model.O.T)
    else:
        params["means_"] = np.array(model.M.T)
        params["covars_"] = np.ones((model.k, model.d))
    if target is not None:
        for name, value in params.items():
            setattr(target, name, value)
    return params


def from_hmmlearn(
    source: Any = None,
    *,
    startprob: np.ndarray | None = None,
    transmat: np.ndarray | None = None,
    emissionprob: np.ndarray | None = None,
    means: np.ndarray | None = None,
    tol: float = SUM_TOL,
    **kwargs,
) -> HMM | GHMM:
    """A theorylab model from hmmlearn's row-stochastic parameters: either a fitted hmmlearn model ``source``
    (its ``startprob_``, ``transmat_``, ``emissionprob_`` or ``means_``) or the arrays as keywords. ``HMM`` if an
    emission matrix is given, ``GHMM`` if means are (``kwargs`` go to the constructor, e.g. ``norm=None``).

    Raises ``AssumptionError`` naming the assumption if the model is outside theorylab's setting: a non-uniform
    ``startprob_`` (Assumption 5: stationary, uniform start), a ``transmat_`` that is not row-stochastic (a
    column-stochastic matrix was probably passed: transpose it) or not doubly stochastic."""
    if source is not None:
        startprob = getattr(source, "startprob_", startprob)
        transmat = getattr(source, "transmat_", transmat)
        emissionprob = getattr(source, "emissionprob_", emissionprob)
        means = getattr(source, "means_", means)
    if transmat is None or (emissionprob is None) == (means is None):
        raise ValueError(
            "need transmat and exactly one of emissionprob (CategoricalHMM) or means (GaussianHMM)"
        )
    A = np.asarray(transmat, dtype=float)
    if A.ndim != 2 or A.shape[0] != A.shape[1]:
        raise ValueError(f"transmat_ must be square, got shape {A.shape}")
    if np.max(np.abs(A.sum(axis=1) - 1)) > tol:
        hint = (
            " (its columns do: it looks column-stochastic, i.e. already theorylab's T)"
            if np.max(np.abs(A.sum(axis=0) - 1)) <= tol
            else ""
        )
        raise AssumptionError("Assumption 5", f"transmat_ rows must sum to 1{hint}")
    k = A.shape[0]
    if startprob is not None:
        p = np.asarray(startprob, dtype=float)
        if p.shape != (k,) or np.max(np.abs(p - 1.0 / k)) > tol:
            raise AssumptionError(
                "Assumption 5",
                f"startprob_ must be uniform (the stationary start of a doubly stochastic chain), got {p}",
            )
    if emissionprob is not None:
        B = np.asarray(emissionprob, dtype=float)
        if B.ndim != 2 or B.shape[0] != k:
            raise ValueError(f"emissionprob_ must be k x d with k = {k} states, got shape {B.shape}")
        if np.max(np.abs(B.sum(axis=1) - 1)) > tol:
            raise AssumptionError("HMM definition", "emissionprob_ rows must sum to 1 (row-stochastic)")
        return HMM(B.T, A.T, tol=tol, **kwargs)
    M = np.asarray(means, dtype=float)
    if M.ndim != 2 or M.shape[0] != k:
        raise ValueError(f"means_ must be k x d with k = {k} states, got shape {M.shape}")
    return GHMM(M.T, A.T, tol=tol, **kwargs)
