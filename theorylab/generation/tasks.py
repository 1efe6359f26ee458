r"""The constrained generation task (Li Def 3.1.2) and the prompt completion accuracy (Li Def 3.2.2),
`003_69b23422e33c905a.txt`.

* Def 3.1.2: given $(\Sigma, A, \mathcal O)$, output some $s\in A$ with $p_{\mathcal O}(s)>0$, or FAIL (``None``) if
  there is none. :func:`generation_solutions` is that set, :func:`is_valid_output` judges an output.
* Def 3.2.2: $\mathrm{Acc}(\mathcal O,X)=\frac1{|X|}\sum_{x\in X,\,y\sim p_{\mathcal O}(\cdot\mid x)}
  \mathbf 1_{x\circ y\in A}$: one completion $y$ per prompt $x$, drawn token by token until $|x\circ y|=D$.
  :func:`completion_accuracy` draws it; :func:`expected_completion_accuracy` is its expectation
  $\frac1{|X|}\sum_x p_{\mathcal O}(\{y: x\circ y\in A\}\mid x)$ (exact for Fraction oracles).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from fractions import Fraction
from numbers import Real

import numpy as np

from theorylab.generation.exact import _membership, sequence_law
from theorylab.generation.oracles import Oracle, as_prefix
from theorylab.generation.verifiers import _check_D

__all__ = [
    "generation_solutions",
    "is_valid_output",
    "completion_accuracy",
    "expected_completion_accuracy",
]

Prefix = tuple[int, ...]


def generation_solutions(oracle: Oracle, D: int, A) -> frozenset[Prefix]:
    """Def 3.1.2's admissible outputs $\\{s\\in A\\cap\\Sigma^D: p_{\\mathcal O}(s)>0\\}$ (``A``: strings or a predicate)."""
    member = _membership(A)
    return frozenset(s for s in sequence_law(oracle, D) if member(s))


def is_valid_output(oracle: Oracle, D: int, A, output: Sequence[int] | None) -> bool:
    """Whether ``output`` solves the task: an admissible string, or ``None`` (FAIL) exactly when none exists."""
    solutions = generation_solutions(oracle, D, A)
    if output is None:
        return not solutions
    return as_prefix(output, oracle.vocab_size, "output") in solutions


def _prompts(prompts: Iterable[Sequence[int]], oracle: Oracle, D: int) -> list[Prefix]:
    out = [as_prefix(x, oracle.vocab_size, "prompt") for x in prompts]
    if not out:
        raise ValueError("the prompt set X is empty: Acc(O, X) divides by |X|")
    long = [x for x in out if len(x) > D]
    if long:
        raise ValueError(f"prompt {long[0]} is longer than the completion length D={D}")
    return out


def completion_accuracy(
    oracle: Oracle, prompts: Iterable[Sequence[int]], D: int, A, rng: np.random.Generator
) -> Fraction:
    """Def 3.2.2 on one draw: complete every prompt with the oracle to length ``D`` (counted queries) and return
    the fraction of completions $x\\circ y$ in ``A``."""
    D = _check_D(D)
    if not isinstance(rng, np.random.Generator):
        raise TypeError(f"rng must be a numpy Generator, got {type(rng).__name__}")
    member, xs = _membership(A), _prompts(prompts, oracle, D)
    hits = 0
    for x in xs:
        s = x
        while len(s) < D:
            s = s + (oracle.sample(s, rng),)
        hits += bool(member(s))
    return Fraction(hits, len(xs))


def expected_completion_accuracy(oracle: Oracle, prompts: Iterable[Sequence[int]], D: int, A) -> Real:
    """$\\mathbb E\\,\\mathrm{Acc}(\\mathcal O,X)=\\frac1{|X|}\\sum_{x\\in X}\\sum_{y:\\,x\\circ y\\in A}
    p_{\\mathcal O}(y\\mid x)$, by depth-first enumeration of the completions (no queries counted)."""
    D = _check_D(D)
    member, xs = _membership(A), _prompts(prompts, oracle, D)
    exact = all(isinstance(p, int | Fraction) for p in oracle.probs(()))
    total = Fraction(0) if exact else 0.0

    def walk(s: Prefix, mass: Real) -> Real:
        if len(s) == D:
            return mass if member(s) else 0 * mass
        return sum(walk(s + (t,), mass * p) for t, p in enumerate(oracle.probs(s)) if p > 0)

    for x in xs:
        total += walk(x, Fraction(1) if exact else 1.0)
    return total / len(xs)
