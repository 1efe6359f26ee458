"""Searches registered for claims whose printed statements theorylab refutes: each states the printed (and the
corrected) statement as a predicate on an instance, searches for a failure from scratch, and re-checks a file.

* ``hmm.lemma7`` (Lemma 7, G-HMM posteriors): instances are unit-norm means ``M`` (d x k, drawn from a seed) and a
  start point ``v0``; scipy solves the premise (equal posteriors with unit-norm means means ``M~ = M - v 1^T`` with
  ``M^T v = |v|^2/2 1``) from ``v0``; the printed conclusion ``M~ in {M, HM}`` is then tested.
* ``dyck.thm1_balance_sufficiency`` (Thm 1's decoder): instances are ``(k, D, seed, moves)``: a random exactly
  balanced attention and a Dyck prefix; the printed decoder (no residual subtraction) must output the exact
  next-token distribution at every position.
* ``topic.thm2.1.2`` (the range ``c1 in (0, 1)``): continuous masking rates ``(p_m, p_c, p_r)`` and small ``T, v``.
* ``automata.prop2_circular_embeddings`` and ``dyck.lemmas_mlp``: small discrete searches.
"""

from __future__ import annotations

import importlib
from dataclasses import replace
from functools import lru_cache

import numpy as np

from theorylab._extras import require
from theorylab.instruments.budget import Budget
from theorylab.instruments.refutations import Refutation, register_refutation
from theorylab.instruments.search import search_counterexample

__all__ = [
    "lemma7_printed",
    "lemma7_corrected",
    "lemma7_strategy",
    "decoder_printed",
    "decoder_corrected",
    "decoder_strategy",
    "c1_printed",
    "c1_corrected",
    "C1_SPACE",
    "prop2_printed",
    "prop2_corrected",
    "prop2_strategy",
    "DEFAULT_BUDGET",
    "search_claim",
]

#: The budget of ``theorylab search`` and of the checks: both the printed and the corrected statements get it.
DEFAULT_BUDGET = Budget(max_examples=150, seconds=20.0)


def _attention(name: str, *modules: str):
    """``name`` from the public ``theorylab.attention`` namespace, else from the first module that has it."""
    ns = importlib.import_module("theorylab.attention")
    if hasattr(ns, name):
        return getattr(ns, name)
    for mod in modules:
        try:
            m = importlib.import_module(mod)
        except ImportError:
            continue
        if hasattr(m, name):
            return getattr(m, name)
    raise ImportError(f"theorylab.attention does not provide {name!r}")


# --------------------------------------------------------------------------- hmm.lemma7

LEMMA7_PRINTED = "For d >= k >= 2, phi_M = phi_M~ (unit-norm means) implies M~ = M or M~ = HM"
LEMMA7_CORRECTED = "For d = k, or d > k with col(M~) = col(M), phi_M = phi_M~ implies M~ in {M, HM}"
#: premise tolerances: the solver reaches |residual| ~ 1e-15; posteriors are compared at 8 probe points.
_PREMISE_TOL = 1e-9
#: conclusion tolerance: M~ counts as M or HM within 1e-6 (solutions on the continuum are O(1) away).
_CONCLUSION_TOL = 1e-6


def lemma7_strategy():
    st = require("hypothesis.strategies", extra="checks")

    return {
        "d": st.integers(2, 5),
        "k": st.integers(2, 5),
        "seed": st.integers(0, 2**16),
        "v0": st.lists(st.integers(-3, 3), min_size=5, max_size=5),
    }


@lru_cache(maxsize=512)
def _unit_means(d: int, k: int, seed: int) -> np.ndarray:
    from theorylab.hmm.constructions import random_unit_means

    return random_unit_means(d, k, np.random.default_rng(seed))


def lemma7_solve(M: np.ndarray, v0: np.ndarray) -> np.ndarray | None:
    """A solution ``v`` of ``r(v) = M^T v - |v|^2/2 1 = 0`` near ``v0``, or None if it does not converge: Gauss-Newton
    with minimum-norm steps (Jacobian ``M^T - 1 v^T``, so for d > k it moves along the solution manifold as little
    as possible). Then ``M~ = M - v 1^T`` has unit-norm columns and the same posterior as ``M``."""
    k = M.shape[1]
    v = np.asarray(v0, dtype=float).copy()
    for _ in range(60):
        r = M.T @ v - (v @ v) / 2 * np.ones(k)
        if np.abs(r).max() < 1e-14:
            return v
        J = M.T - np.outer(np.ones(k), v)
        v = v - np.linalg.lstsq(J, r, rcond=None)[0]
        if not np.all(np.isfinite(v)):
            return None
    return v if np.abs(M.T @ v - (v @ v) / 2).max() < 1e-12 else None


def _posterior(M: np.ndarray, X: np.ndarray) -> np.ndarray:
    from theorylab.hmm.models import GHMM

    k = M.shape[1]
    T = 0.5 * np.eye(k) + 0.5 / k
    return GHMM(M, T, validate=False).posterior(X)


def lemma7_fails(M: np.ndarray, M_tilde: np.ndarray, corrected: bool = False) -> tuple[bool | None, dict]:
    """(does the statement fail on (M, M~)?, values); None when the premise does not hold (not an instance)."""
    from theorylab.hmm.constructions import householder

    d, k = M.shape
    X = np.random.default_rng(0).normal(size=(8, d)) * 2
    norms = np.linalg.norm(M_tilde, axis=0)
    gap = float(np.abs(_posterior(M, X) - _posterior(M_tilde, X)).max())
    values = {"posterior_gap": gap, "norm_error": float(np.abs(norms - 1).max())}
    if values["norm_error"] > _PREMISE_TOL or gap > _PREMISE_TOL or k > d or k < 2:
        return None, values
    if corrected and d > k:
        P = M @ np.linalg.pinv(M)
        values["col_space_gap"] = float(np.abs(P @ M_tilde - M_tilde).max())
        if values["col_space_gap"] > _CONCLUSION_TOL:
            return None, values
    dist = min(np.abs(M_tilde - M).max(), np.abs(M_tilde - householder(M) @ M).max())
    values["distance_to_M_or_HM"] = float(dist)
    return bool(dist > _CONCLUSION_TOL), values


def _lemma7_predicate(corrected: bool):
    def statement(d, k, seed, v0):
        if k > d:
            return None
        M = _unit_means(d, k, seed)
        v = lemma7_solve(M, np.asarray(v0[:d], dtype=float))
        if v is None:
            return None
        fails, values = lemma7_fails(M, M - np.outer(v, np.ones(k)), corrected)
        return (None if fails is None else not fails), values

    return statement


lemma7_printed = _lemma7_predicate(False)
lemma7_corrected = _lemma7_predicate(True)


def _lemma7_arrays(cx) -> dict[str, np.ndarray]:
    p = cx.parameters
    M = _unit_means(p["d"], p["k"], p["seed"])
    v = lemma7_solve(M, np.asarray(p["v0"][: p["d"]], dtype=float))
    return {"M": M, "M_tilde": M - np.outer(v, np.ones(p["k"])), "v0": np.asarray(p["v0"])}


def _lemma7_file(arrays) -> tuple[bool, str]:
    _need(arrays, "M", "M_tilde")
    M, Mt = np.asarray(arrays["M"], float), np.asarray(arrays["M_tilde"], float)
    fails, values = lemma7_fails(M, Mt)
    detail = ", ".join(f"{k} = {v:.3g}" for k, v in values.items())
    return bool(fails), ("premise fails (not an instance): " if fails is None else "") + detail


# --------------------------------------------------------------------------- dyck.thm1_balance_sufficiency

DECODER_PRINTED = (
    "Thm 1 (sufficiency), printed decoder: reading the value slots U'(LN(a) + X) directly gives the exact "
    "next-token distribution on every prefix"
)
DECODER_CORRECTED = "Thm 1 (sufficiency), decoder subtracting the residual e(query): exact on every prefix"


def decoder_strategy():
    st = require("hypothesis.strategies", extra="checks")

    return {
        "k": st.integers(1, 3),
        "depth": st.integers(2, 4),  # D = 1 is trivial (the residual alone determines the next token)
        "seed": st.integers(0, 2**16),
        "moves": st.lists(st.integers(0, 5), min_size=3, max_size=14),
    }


def dyck_prefix(k: int, depth: int, moves) -> np.ndarray:
    """The Dyck prefix read off ``moves``: open (type m//2 mod k) on an even move, close on an odd one, forced at
    depth 0 (open) and depth D (close). Tokens: open t = 2t, close t = 2t + 1."""
    stack: list[int] = []
    out = []
    for m in moves:
        if not stack or (m % 2 == 0 and len(stack) < depth):
            t = (m // 2) % k
            stack.append(t)
            out.append(2 * t)
        else:
            out.append(2 * stack.pop() + 1)
    return np.array(out, dtype=np.int64)


@lru_cache(maxsize=256)
def _balanced_solution(k: int, depth: int, seed: int):
    construct = _attention("construct_solution", "theorylab.attention.dyck_balance")
    random_balanced = _attention("random_balanced_attention", "theorylab.attention.dyck_balance")
    return construct(k, depth, random_balanced(k, depth, np.random.default_rng(seed), scale=1.0))


def decoder_errors(sol, prefix: np.ndarray, printed: bool) -> int:
    """Positions of ``prefix`` (start included) where the decoder's output differs from the exact distribution."""
    model = replace(sol, subtract_residual=False) if printed else sol
    lang = sol.language
    truth = lang.next_token_distributions(prefix[None])[0]
    return int(np.any(model.predict(prefix[None])[0] != truth, axis=-1).sum())


def _decoder_predicate(printed: bool):
    def statement(k, depth, seed, moves):
        prefix = dyck_prefix(k, depth, moves)
        wrong = decoder_errors(_balanced_solution(k, depth, seed), prefix, printed)
        return wrong == 0, {"wrong_positions": wrong, "prefix": prefix.tolist()}

    return statement


decoder_printed = _decoder_predicate(True)
decoder_corrected = _decoder_predicate(False)


def _decoder_arrays(cx) -> dict[str, np.ndarray]:
    p = cx.parameters
    sol = _balanced_solution(p["k"], p["depth"], p["seed"])
    return {
        "k": np.asarray(p["k"]),
        "depth": np.asarray(p["depth"]),
        "M": sol.weights.M,
        "prefix": dyck_prefix(p["k"], p["depth"], p["moves"]),
    }


def _need(arrays, *names) -> None:
    missing = [n for n in names if n not in arrays]
    if missing:
        raise ValueError(f"the file lacks the arrays {missing} (has {sorted(arrays)})")


def _decoder_file(arrays) -> tuple[bool, str]:
    """Arrays k, depth, M (the attention; one-hot embeddings) and prefix (one) or failing_prefixes (a batch)."""
    _need(arrays, "k", "depth", "M")
    construct = _attention("construct_solution", "theorylab.attention.dyck_balance")
    k, depth = int(arrays["k"]), int(arrays["depth"])
    sol = construct(k, depth, np.asarray(arrays["M"], float))
    if "prefix" in arrays:
        prefixes = [np.asarray(arrays["prefix"], dtype=np.int64)]
    else:
        _need(arrays, "failing_prefixes")
        prefixes = list(np.asarray(arrays["failing_prefixes"], dtype=np.int64))
    wrong = fixed = 0
    for prefix in prefixes:
        if not sol.language.is_prefix(prefix):
            return False, f"not a Dyck_({k},{depth}) prefix: {prefix.tolist()}"
        wrong += decoder_errors(sol, prefix, printed=True) > 0
        fixed += decoder_errors(sol, prefix, printed=False) > 0
    return wrong > 0, (
        f"printed decoder wrong on {wrong} of {len(prefixes)} prefixes; corrected decoder on {fixed}"
    )


# --------------------------------------------------------------------------- topic.thm2.1.2 (range of c1)

C1_PRINTED = "c1 = p_r / ((1 - p_c - p_r)(1 - (1 - p_c) p_m) T v) lies in (0, 1) for admissible rates"
C1_CORRECTED = "c1 > 0 for admissible rates"
C1_SPACE = {
    "p_m": (0.01, 0.99),
    "p_c": (0.01, 0.99),
    "p_r": (0.01, 0.99),
    "T": [2, 3, 4, 5],
    "v": [1, 2, 3, 4],
}


def c1_value(T: int, v: int, p_m: float, p_c: float, p_r: float) -> float | None:
    """c1 of Thm 2.1.2 through the topic family's constants; None for inadmissible rates (p_c + p_r >= 1)."""
    TopicModel = importlib.import_module("theorylab.languages.topic").TopicModel
    constants = _attention("constants", "theorylab.attention.topic")
    try:
        params = TopicModel(int(T), int(v), 1, p_m, p_c, p_r)
    except ValueError:
        return None
    return float(constants(params).c1)


def c1_printed(T, v, p_m, p_c, p_r):
    c1 = c1_value(T, v, p_m, p_c, p_r)
    return None if c1 is None else (min(c1, 1 - c1), {"c1": c1})


def c1_corrected(T, v, p_m, p_c, p_r):
    c1 = c1_value(T, v, p_m, p_c, p_r)
    return None if c1 is None else (c1, {"c1": c1})


def _c1_file(arrays) -> tuple[bool, str]:
    _need(arrays, "T", "v", "p_m", "p_c", "p_r")
    args = {n: float(arrays[n]) for n in ("T", "v", "p_m", "p_c", "p_r")}
    c1 = c1_value(**args)
    if c1 is None:
        return False, f"inadmissible rates {args}"
    return not 0 < c1 < 1, f"c1 = {c1:.10g} at {args}"


# --------------------------------------------------------------------------- automata.prop2 (and its proof)

PROP2_PRINTED = "|<p_t, p_t'>| <= 1 - 2 pi^2 / T^2 for t != t' (mod T)"
PROP2_CORRECTED = "<p_t, p_t'> <= cos(2 pi / T) for t != t' (mod T)"


def prop2_strategy():
    st = require("hypothesis.strategies", extra="checks")

    return {"T": st.integers(2, 400), "t": st.integers(0, 399), "s": st.integers(1, 399)}


def inner(T: int, t: int, s: int) -> float:
    """<p_t, p_{t+s}> = cos(2 pi s / T)."""
    a, b = 2 * np.pi * t / T, 2 * np.pi * (t + s) / T
    return float(np.cos(a) * np.cos(b) + np.sin(a) * np.sin(b))


#: float64 evaluation of the inner product and bound: a few ulps (the printed bound fails by >= 6e-7 where it fails).
_PROP2_TOL = 1e-12


def prop2_printed(T, t, s):
    if s % T == 0:
        return None
    ip, bound = inner(T, t % T, s % T), 1 - 2 * np.pi**2 / T**2
    return abs(ip) <= bound + _PROP2_TOL, {"inner": ip, "bound": bound}


def prop2_corrected(T, t, s):
    if s % T == 0:
        return None
    ip, bound = inner(T, t % T, s % T), float(np.cos(2 * np.pi / T))
    return ip <= bound + _PROP2_TOL, {"inner": ip, "bound": bound}


def _prop2_arrays(cx) -> dict[str, np.ndarray]:
    return {k: np.asarray(v) for k, v in cx.parameters.items()}


def _prop2_file(arrays) -> tuple[bool, str]:
    """Arrays T, t, s (one pair of points), or T alone (a vector of T: every pair t != t' is enumerated)."""
    _need(arrays, "T")
    if "t" in arrays and "s" in arrays:
        T, t, s = (int(arrays[n]) for n in ("T", "t", "s"))
        out = prop2_printed(T, t, s)
        if out is None:
            return False, "t = t' (mod T): outside the statement"
        holds, vals = out
        return not holds, f"T = {T}: |<p_t, p_t'>| = {abs(vals['inner']):.10g} vs bound {vals['bound']:.10g}"
    details, fails = [], False
    for T in np.atleast_1d(arrays["T"]).astype(int):
        worst = max(range(1, T), key=lambda s: abs(inner(T, 0, s)))  # <p_t, p_t+s> does not depend on t
        holds, vals = prop2_printed(int(T), 0, worst)
        fails |= not holds
        details.append(
            f"T = {T}: max |<p_t, p_t'>| = {abs(vals['inner']):.10g} vs bound {vals['bound']:.10g}"
        )
    return fails, "; ".join(details)


# --------------------------------------------------------------------------- registry of searches


def _searcher(predicate, strategy_or_space, claim, statement, continuous=False):
    def search(seed: int = 0, budget: Budget = DEFAULT_BUDGET):
        kw = {"space": strategy_or_space} if continuous else {"strategy": strategy_or_space()}
        return search_counterexample(
            predicate, claim=claim, statement=statement, seed=seed, budget=budget, **kw
        )

    return search


SEARCHES = {
    # claim: (printed predicate, corrected predicate, strategy factory or space, continuous?)
    "hmm.lemma7": (lemma7_printed, lemma7_corrected, lemma7_strategy, False),
    "dyck.thm1_balance_sufficiency": (decoder_printed, decoder_corrected, decoder_strategy, False),
    "topic.thm2.1.2": (c1_printed, c1_corrected, C1_SPACE, True),
    "automata.prop2_circular_embeddings": (prop2_printed, prop2_corrected, prop2_strategy, False),
}
STATEMENTS = {
    "hmm.lemma7": (LEMMA7_PRINTED, LEMMA7_CORRECTED),
    "dyck.thm1_balance_sufficiency": (DECODER_PRINTED, DECODER_CORRECTED),
    "topic.thm2.1.2": (C1_PRINTED, C1_CORRECTED),
    "automata.prop2_circular_embeddings": (PROP2_PRINTED, PROP2_CORRECTED),
}


def search_claim(claim: str, corrected: bool = False, seed: int = 0, budget: Budget = DEFAULT_BUDGET):
    """Run the search registered for ``claim`` on its printed (default) or corrected statement."""
    printed_p, corrected_p, where, continuous = SEARCHES[claim]
    statement = STATEMENTS[claim][1 if corrected else 0]
    pred = corrected_p if corrected else printed_p
    return _searcher(pred, where, claim, statement, continuous)(seed=seed, budget=budget)


def _c1_arrays(cx) -> dict[str, np.ndarray]:
    return {k: np.asarray(v) for k, v in cx.parameters.items()}


for _claim, _fails, _arrays, _aliases in (
    ("hmm.lemma7", _lemma7_file, _lemma7_arrays, ()),
    ("dyck.thm1_balance_sufficiency", _decoder_file, _decoder_arrays, ("dyck.thm1_decoder",)),
    ("topic.thm2.1.2", _c1_file, _c1_arrays, ()),
    ("automata.prop2_circular_embeddings", _prop2_file, _prop2_arrays, ()),
):
    register_refutation(
        Refutation(
            claim=_claim,
            statement=STATEMENTS[_claim][0],
            fails=_fails,
            search=lambda seed=0, budget=DEFAULT_BUDGET, _c=_claim: search_claim(
                _c, seed=seed, budget=budget
            ),
            to_arrays=_arrays,
            aliases=_aliases,
        )
    )
