r"""Baseline decoders the thesis compares Algorithm 1 with (Li §3.2.2.6, Table 3.6): nucleus (top-p) sampling and
best-of-N, as samplers and as exact output laws on enumerable prefix trees.

* top-p (Holtzman et al., 2020): at each step keep the most probable tokens (ties towards the smaller id) until
  their mass reaches ``p``, renormalise, sample; ``p = 0`` is greedy argmax decoding (as in the authors' code).
* best-of-N: draw $N$ full strings, return one of maximal ``score`` (the first drawn among ties). Exact law:
  with $F(\sigma) = P(\mathrm{score} \le \sigma)$, $P(\text{out} = s) = [F(\sigma_s)^N - F(\sigma_s^-)^N]\,
  p(s) / P(\mathrm{score} = \sigma_s)$.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from fractions import Fraction
from numbers import Real

import numpy as np

from theorylab.generation.algorithms import Generation, _check_rng, check_top_p, sample_nucleus
from theorylab.generation.exact import _exact, check_budget, sequence_law
from theorylab.generation.oracles import Oracle
from theorylab.generation.verifiers import _check_D

__all__ = ["best_of_n_generation", "best_of_n_law", "nucleus", "top_p_generation", "top_p_law"]

Prefix = tuple[int, ...]


_check_p = check_top_p


def nucleus(law: Sequence[Real], p) -> tuple:
    """The top-``p`` truncation of a next-token law, renormalised (``p = 0``: the argmax token only)."""
    _check_p(p)
    order = sorted(range(len(law)), key=lambda t: (-law[t], t))
    kept, mass = [], 0 * law[0]
    for t in order:
        if law[t] == 0:
            break
        kept.append(t)
        mass += law[t]
        if mass >= p:
            break
    return tuple(law[t] / mass if t in kept else 0 * law[t] for t in range(len(law)))


def top_p_generation(oracle: Oracle, D: int, p, rng: np.random.Generator) -> Generation:
    """Nucleus sampling of $D$ tokens (one oracle query each)."""
    D, rng = _check_D(D), _check_rng(rng)
    _check_p(p)
    q0 = oracle.calls
    s: Prefix = ()
    for _ in range(D):
        s = s + (sample_nucleus(oracle, s, p, rng),)
    return Generation(s, oracle.calls - q0, 0)


def top_p_law(oracle: Oracle, D: int, p) -> dict[Prefix, Real]:
    """Exact output law of :func:`top_p_generation`."""
    D = _check_D(D)
    _check_p(p)
    out: dict[Prefix, Real] = {}

    def walk(s: Prefix, mass: Real) -> None:
        if len(s) == D:
            out[s] = mass
            return
        for t, q in enumerate(nucleus(oracle.probs(s), p)):
            if q > 0:
                walk(s + (t,), mass * q)

    walk((), Fraction(1) if _exact(oracle) else 1.0)
    return out


def best_of_n_generation(
    oracle: Oracle, D: int, n: int, score: Callable[[Prefix], Real], rng: np.random.Generator
) -> Generation:
    """Draw ``n`` strings of length $D$ ($nD$ queries) and return the first of maximal ``score``."""
    D, rng = _check_D(D), _check_rng(rng)
    n = check_budget("n", n, 1)
    q0, best, best_score = oracle.calls, None, None
    for _ in range(n):
        s: Prefix = ()
        for _ in range(D):
            s = s + (oracle.sample(s, rng),)
        value = score(s)
        if best is None or value > best_score:
            best, best_score = s, value
    return Generation(best, oracle.calls - q0, 0)


def best_of_n_law(oracle: Oracle, D: int, n: int, score: Callable[[Prefix], Real]) -> dict[Prefix, Real]:
    """Exact output law of :func:`best_of_n_generation` (formula in the module docstring)."""
    n = check_budget("n", n, 1)
    law = sequence_law(oracle, D)
    mass: dict = {}
    for s, q in law.items():
        mass[score(s)] = mass.get(score(s), 0) + q
    out, below = {}, 0 * next(iter(law.values()))
    cdf = {}
    for sigma in sorted(mass):
        cdf[sigma] = (below, below + mass[sigma])
        below += mass[sigma]
    for s, q in law.items():
        lo, hi = cdf[score(s)]
        out[s] = (hi**n - lo**n) * q / mass[score(s)]
    return out
