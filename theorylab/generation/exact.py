r"""Exact output laws and expected oracle calls on enumerable prefix trees (Li Ch. 3, `003_69b23422e33c905a.txt`).

All calculators enumerate the prefix tree of a tabular oracle; with Fraction probabilities every result is an exact
rational. Formulas (derived; the thesis states special cases):

* rejection sampling (Def 3.1.4): law $p_A(s)\propto\mathbf 1[s\in A]p_{\mathcal O}(s)$, $\mathbb E[\mathcal C]=D/p_{\mathcal O}(A)$;
* tokenwise rejection sampling (Def 3.1.5): $q(s)=\prod_h\frac{\mathcal O(s_h\mid s_{<h})V(s_{\le h})}{P_h}$ with
  $P_h=\sum_t\mathcal O(t\mid s_{<h})V(s_{<h}t)$, $\mathbb E[\mathcal C]=\mathbb E_q\sum_h 1/P_h$ (geometric waits);
* Algorithm 1 (tokenwise rejection sampling with backtracking): a recursion over states (prefix, remaining quota).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from fractions import Fraction
from functools import cache
from numbers import Real

import numpy as np

from theorylab.generation.oracles import Oracle, argmax_token
from theorylab.generation.verifiers import ProcessVerifier, _check_D

__all__ = [
    "GenerationLaw",
    "sequence_law",
    "restricted_law",
    "exact_values",
    "rejection_sampling_law",
    "tokenwise_law",
    "backtracking_law",
    "authors_backtracking_law",
    "total_variation",
    "check_backtrack",
    "check_budget",
    "value_guided_law",
]

Prefix = tuple[int, ...]


@dataclass(frozen=True)
class GenerationLaw:
    """Exact law of an algorithm's output and its oracle-call statistics.

    ``law`` maps every output string with positive probability to it; ``success`` is the mass on $A$;
    ``expected_queries`` is $\\mathbb E[\\#\\text{oracle calls}]$ (``math.inf`` if the algorithm fails to
    terminate with positive probability; ``terminates`` is then False and ``law`` holds the terminating mass);
    ``max_queries`` is the worst case over paths (None when unbounded)."""

    law: dict[Prefix, Real]
    success: Real
    expected_queries: Real
    max_queries: int | None
    terminates: bool = True


def total_variation(p: dict[Prefix, Real], q: dict[Prefix, Real]) -> Real:
    """$\\frac12\\sum_s|p(s)-q(s)|$ (exact for Fractions)."""
    return sum(abs(p.get(s, 0) - q.get(s, 0)) for s in set(p) | set(q)) / 2


def check_budget(name: str, value: int, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int | np.integer):
        raise TypeError(f"{name} must be an int, got {type(value).__name__}")
    if value < minimum:
        raise ValueError(f"{name} must be >= {minimum}, got {value}")
    return int(value)


def check_backtrack(D: int, Q: int, B: int) -> tuple[int, int, int]:
    """Validated (D, Q, B) of Algorithm 1: length D >= 1, quota Q >= 0, stride 1 <= B <= D."""
    D = _check_D(D)
    Q = check_budget("backtrack quota Q", Q, 0)
    B = check_budget("backtrack stride B", B, 1)
    if B > D:
        raise ValueError(f"backtrack stride B={B} exceeds the length D={D}")
    return D, Q, B


def _membership(A: Iterable[Sequence[int]] | Callable[[Prefix], bool]) -> Callable[[Prefix], bool]:
    if callable(A):
        return lambda s: bool(A(s))
    members = frozenset(tuple(int(t) for t in s) for s in A)
    return members.__contains__


def sequence_law(oracle: Oracle, D: int) -> dict[Prefix, Real]:
    """$p_{\\mathcal O}$ on $\\Sigma^D$ restricted to its support (depth-first over the prefix tree)."""
    D = _check_D(D)
    out: dict[Prefix, Real] = {}

    def walk(s: Prefix, mass: Real) -> None:
        if len(s) == D:
            out[s] = mass
            return
        for t, p in enumerate(oracle.probs(s)):
            if p > 0:
                walk(s + (t,), mass * p)

    walk((), Fraction(1) if _exact(oracle) else 1.0)
    return out


def _exact(oracle: Oracle) -> bool:
    return all(isinstance(p, int | Fraction) for p in oracle.probs(()))


def restricted_law(oracle: Oracle, D: int, A) -> dict[Prefix, Real]:
    """$p_A(s)=\\mathbf 1[s\\in A]p_{\\mathcal O}(s)/p_{\\mathcal O}(A)$; ValueError if $p_{\\mathcal O}(A)=0$."""
    member = _membership(A)
    law = {s: p for s, p in sequence_law(oracle, D).items() if member(s)}
    Z = sum(law.values())
    if Z == 0:
        raise ValueError("A has zero probability under the oracle: the restricted law is undefined")
    return {s: p / Z for s, p in law.items()}


def exact_values(oracle: Oracle, D: int, reward: Callable[[Prefix], Real]) -> dict[Prefix, Real]:
    """$V^*(u)=\\mathbb E_{s\\sim p_{\\mathcal O}(\\cdot\\mid u)}[\\tau(s)]$ for every prefix $u$ of length $\\le D$
    (all prefixes, including those of probability 0 under the oracle)."""
    D = _check_D(D)
    values: dict[Prefix, Real] = {}

    def walk(u: Prefix) -> Real:
        if len(u) == D:
            values[u] = reward(u)
            return values[u]
        values[u] = sum(p * walk(u + (t,)) for t, p in enumerate(oracle.probs(u)))
        return values[u]

    walk(())
    return values


def rejection_sampling_law(oracle: Oracle, D: int, A) -> GenerationLaw:
    """Def 3.1.4: the output law is $p_A$; each try costs $D$ calls; tries are Geometric($p_{\\mathcal O}(A)$)."""
    D = _check_D(D)
    member = _membership(A)
    full = sequence_law(oracle, D)
    pA = sum(p for s, p in full.items() if member(s))
    if pA == 0:
        return GenerationLaw({}, 0, math.inf, None, terminates=False)
    return GenerationLaw({s: p / pA for s, p in full.items() if member(s)}, 1, D / pA, None)


def tokenwise_law(oracle: Oracle, D: int, verifier: ProcessVerifier, A=None) -> GenerationLaw:
    """Def 3.1.5 exactly. ``A`` (membership; default: the verifier at length D) defines ``success``."""
    D = _check_D(D)
    member = _membership(A) if A is not None else verifier.peek
    law: dict[Prefix, Real] = {}
    one = Fraction(1) if _exact(oracle) else 1.0
    stats = {"queries": 0 * one, "stuck": False}

    def walk(s: Prefix, mass: Real) -> None:
        if len(s) == D:
            law[s] = law.get(s, 0) + mass
            return
        probs = oracle.probs(s)
        ok = [(t, p) for t, p in enumerate(probs) if p > 0 and verifier.peek(s + (t,))]
        P = sum(p for _, p in ok)
        if P == 0:
            stats["stuck"] = True  # the loop "repeat t ~ O(s) until V(s t) = 1" never ends
            return
        stats["queries"] += mass / P
        for t, p in ok:
            walk(s + (t,), mass * p / P)

    walk((), one)
    success = sum(p for s, p in law.items() if member(s))
    if stats["stuck"]:
        return GenerationLaw(law, success, math.inf, None, terminates=False)
    return GenerationLaw(law, success, stats["queries"], None)


def backtracking_law(
    oracle: Oracle,
    D: int,
    verifier: ProcessVerifier,
    Q: int,
    B: int,
    *,
    A=None,
    argmax: bool = True,
    prompt: Sequence[int] = (),
    variant: str = "printed",
) -> GenerationLaw:
    """Algorithm 1 (l.2772-2799) exactly, by recursion over (prefix, remaining quota).

    ``argmax=False`` is the thesis's ablation (no greedy re-generation of the erased positions). No ``<eos>``;
    the verifier and the oracle see ``prompt + s``. ``A`` (membership of ``s``; default: ``verifier`` on
    ``prompt + s``) defines ``success``. ``variant="authors"``: the law of the authors' implementation
    (:func:`theorylab.generation.algorithms.authors_backtracking_generation`), by recursion over (prefix,
    remaining quota, tokens erased so far)."""
    if variant == "authors":
        return authors_backtracking_law(oracle, D, verifier, Q, B, A=A, argmax=argmax, prompt=prompt)
    if variant != "printed":
        raise ValueError(f'variant must be "printed" (Algorithm 1) or "authors", got {variant!r}')
    D, Q, B = check_backtrack(D, Q, B)
    x = tuple(int(t) for t in prompt)
    member = _membership(A) if A is not None else (lambda s: verifier.peek(x + s))
    one = Fraction(1) if _exact(oracle) else 1.0

    @cache
    def probs(s: Prefix) -> tuple:
        return oracle.probs(x + s)

    @cache
    def regenerate(s: Prefix) -> Prefix:
        for _ in range(B):
            s = s + (argmax_token(probs(s)),)
        return s

    @cache
    def state(s: Prefix, q: int) -> tuple[tuple[tuple[Prefix, Real], ...], Real, int]:
        """(law of the output, expected further queries, max further queries) from prefix s with quota q."""
        if len(s) >= D:
            return ((s, one),), 0 * one, 0
        law: dict[Prefix, Real] = {}
        expected, worst = 0 * one, 0
        for t, p in enumerate(probs(s)):
            if p == 0:
                continue
            nxt, cost, nq = s + (t,), 1, q
            if q > 0 and not verifier.peek(x + nxt):
                nxt, nq = nxt[: max(len(nxt) - B, 0)], q - 1
                if argmax:
                    nxt, cost = regenerate(nxt), 1 + B
            sub_law, sub_exp, sub_max = state(nxt, nq)
            for out, r in sub_law:
                law[out] = law.get(out, 0) + p * r
            expected += p * (cost + sub_exp)
            worst = max(worst, cost + sub_max)
        return tuple(law.items()), expected, worst

    law_items, expected, worst = state((), Q)
    law = dict(law_items)
    return GenerationLaw(law, sum(p for s, p in law.items() if member(s)), expected, worst)


def authors_backtracking_law(
    oracle: Oracle,
    D: int,
    verifier: ProcessVerifier,
    Q: int,
    B: int,
    *,
    A=None,
    argmax: bool = True,
    prompt: Sequence[int] = (),
    top_p=1,
) -> GenerationLaw:
    """Exact law of the authors' implementation of Algorithm 1 (check before each step and at full length, erase
    $\\min(B, |s|)$, greedy only while $|s|$ is below the total erased so far), by recursion over (prefix,
    remaining quota, total erased). Expected and worst-case oracle calls count greedy and sampled tokens.
    ``top_p < 1``: sampled tokens come from the nucleus."""
    D, Q, B = check_backtrack(D, Q, B)
    from theorylab.generation.algorithms import check_top_p  # noqa: PLC0415 (algorithms imports this module)
    from theorylab.generation.decoding import nucleus  # noqa: PLC0415 (decoding imports this module)

    check_top_p(top_p)

    x = tuple(int(t) for t in prompt)
    member = _membership(A) if A is not None else (lambda s: verifier.peek(x + s))
    one = Fraction(1) if _exact(oracle) else 1.0

    @cache
    def probs(s: Prefix) -> tuple:
        return oracle.probs(x + s)

    @cache
    def state(s: Prefix, q: int, erased: int) -> tuple[tuple[tuple[Prefix, Real], ...], Real, int]:
        """(law of the output, expected further queries, max further queries) at the top of the loop."""
        if q > 0 and s and not verifier.peek(x + s):
            k = min(B, len(s))
            s, q, erased = s[:-k], q - 1, erased + k
        if len(s) >= D:
            return ((s, one),), 0 * one, 0
        if argmax and len(s) < erased:
            steps = [(argmax_token(probs(s)), one)]
        else:
            law_s = probs(s) if top_p >= 1 else nucleus(probs(s), top_p)
            steps = [(t, p) for t, p in enumerate(law_s) if p != 0]
        law: dict[Prefix, Real] = {}
        expected, worst = 0 * one, 0
        for t, p in steps:
            sub_law, sub_exp, sub_max = state(s + (t,), q, erased)
            for out, r in sub_law:
                law[out] = law.get(out, 0) + p * r
            expected += p * (1 + sub_exp)
            worst = max(worst, 1 + sub_max)
        return tuple(law.items()), expected, worst

    law_items, expected, worst = state((), Q, 0)
    law = dict(law_items)
    return GenerationLaw(law, sum(p for s, p in law.items() if member(s)), expected, worst)


def all_strings(vocab_size: int, D: int) -> Iterable[Prefix]:
    return itertools.product(range(vocab_size), repeat=D)


def value_guided_law(oracle: Oracle, D: int, value: Callable[[Prefix], Real]) -> dict[Prefix, Real]:
    """Tokenwise sampling with a value instead of a 0/1 verifier: child $u\\circ a$ w.p.
    $\\propto\\mathcal O(a\\mid u)\\widehat V(u\\circ a)$. With $\\widehat V=V^*=p_{\\mathcal O}(A\\mid\\cdot)$ the output
    law is exactly $p_A$ (the telescoping product); ValueError if a reached node has no valued child."""
    D = _check_D(D)
    law: dict[Prefix, Real] = {}

    def walk(u: Prefix, mass: Real) -> None:
        if len(u) == D:
            law[u] = mass
            return
        weights = [(a, p * value(u + (a,))) for a, p in enumerate(oracle.probs(u))]
        total = sum(w for _, w in weights)
        if total == 0:
            raise ValueError(f"every child of the reached prefix {u} has value 0")
        for a, w in weights:
            if w:
                walk(u + (a,), mass * w / total)

    walk((), Fraction(1) if _exact(oracle) else 1.0)
    return law
