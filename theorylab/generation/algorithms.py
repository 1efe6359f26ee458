r"""Samplers for constrained generation (Li Ch. 3, `003_69b23422e33c905a.txt`): rejection sampling (Def 3.1.4),
tokenwise rejection sampling (Def 3.1.5) and tokenwise rejection sampling with backtracking (Algorithm 1).

Each returns a :class:`Generation` with the output and the oracle / verifier calls it spent; the exact laws of the
same algorithms are in :mod:`theorylab.generation.exact`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from theorylab.generation.exact import check_backtrack, check_budget
from theorylab.generation.oracles import Oracle
from theorylab.generation.verifiers import ProcessVerifier, _check_D

__all__ = [
    "Generation",
    "rejection_sampling",
    "tokenwise_rejection_sampling",
    "backtracking_generation",
    "authors_backtracking_generation",
    "verifier_only_generation",
]

Prefix = tuple[int, ...]


@dataclass(frozen=True)
class Generation:
    """One run: ``tokens`` (None for FAIL), oracle ``queries``, ``verifier_calls`` and ``backtracks``."""

    tokens: Prefix | None
    queries: int
    verifier_calls: int
    backtracks: int = 0


def _check_rng(rng) -> np.random.Generator:
    if not isinstance(rng, np.random.Generator):
        raise TypeError(f"rng must be a numpy Generator, got {type(rng).__name__}")
    return rng


def rejection_sampling(
    oracle: Oracle,
    D: int,
    accept: Callable[[Prefix], bool],
    rng: np.random.Generator,
    max_queries: int = 10**6,
) -> Generation:
    """Def 3.1.4: draw whole strings ($D$ calls each) until ``accept``; FAIL (tokens None) past ``max_queries``."""
    D, rng = _check_D(D), _check_rng(rng)
    check_budget("max_queries", max_queries, 1)
    start = oracle.calls
    while oracle.calls - start + D <= max_queries:
        s: Prefix = ()
        for _ in range(D):
            s = s + (oracle.sample(s, rng),)
        if accept(s):
            return Generation(s, oracle.calls - start, 0)
    return Generation(None, oracle.calls - start, 0)


def tokenwise_rejection_sampling(
    oracle: Oracle, D: int, verifier: ProcessVerifier, rng: np.random.Generator, max_queries: int = 10**6
) -> Generation:
    """Def 3.1.5: at each position repeat $t\\sim\\mathcal O(s)$ until $V(s\\circ t)=1$ (FAIL past the budget)."""
    D, rng = _check_D(D), _check_rng(rng)
    check_budget("max_queries", max_queries, 1)
    q0, v0 = oracle.calls, verifier.calls
    s: Prefix = ()
    while len(s) < D:
        if oracle.calls - q0 >= max_queries:
            return Generation(None, oracle.calls - q0, verifier.calls - v0)
        t = oracle.sample(s, rng)
        if verifier(s + (t,)):
            s = s + (t,)
    return Generation(s, oracle.calls - q0, verifier.calls - v0)


def backtracking_generation(
    oracle: Oracle,
    D: int,
    verifier: ProcessVerifier,
    Q: int,
    B: int,
    rng: np.random.Generator,
    *,
    prompt: Sequence[int] = (),
    argmax: bool = True,
    eos: int | None = None,
    variant: str = "printed",
) -> Generation:
    """Algorithm 1 literally (l.2772-2799): sample a token; while quota remains, if $V(x\\circ s)=0$ erase the last
    $B$ tokens, spend one unit of quota and re-generate $B$ tokens greedily (``argmax=False``: the thesis's
    ablation, no re-generation). Stops at length $D$ or after ``eos``. Queries $\\le D+QB$ without ``eos``.

    ``variant="authors"``: the authors' implementation (LM_Query_Complexity), see
    :func:`authors_backtracking_generation`."""
    if variant == "authors":
        return authors_backtracking_generation(
            oracle, D, verifier, Q, B, rng, prompt=prompt, argmax=argmax, eos=eos
        )
    if variant != "printed":
        raise ValueError(f'variant must be "printed" (Algorithm 1) or "authors", got {variant!r}')
    D, rng = _check_D(D), _check_rng(rng)
    D, Q, B = check_backtrack(D, Q, B)
    x = tuple(int(t) for t in prompt)
    q0, v0, backtracks = oracle.calls, verifier.calls, 0
    s: Prefix = ()
    while len(s) < D and (not s or s[-1] != eos):
        s = s + (oracle.sample(x + s, rng),)
        if Q > 0 and not verifier(x + s):
            s = s[: max(len(s) - B, 0)]
            Q -= 1
            backtracks += 1
            if argmax:
                for _ in range(B):
                    s = s + (oracle.argmax(x + s),)
    return Generation(s, oracle.calls - q0, verifier.calls - v0, backtracks)


def authors_backtracking_generation(
    oracle: Oracle,
    D: int,
    verifier: ProcessVerifier,
    Q: int,
    B: int,
    rng: np.random.Generator,
    *,
    prompt: Sequence[int] = (),
    argmax: bool = True,
    eos: int | None = None,
    top_p=1,
) -> Generation:
    """The authors' implementation of Algorithm 1 (``conditional_nn_generate`` of LM_Query_Complexity, rewritten
    from its description): before each step, while quota remains, if $V(x\\circ s)=0$ erase the last
    $\\min(B, |s|)$ tokens and add them to a running total $E$ of erased tokens; then emit one token, the greedy
    one while $|s| < E$ (``argmax=True``) and a sample otherwise. The check also runs on the full-length $s$
    (before ``<eos>``), so a rejected last token is backtracked too. Unlike Algorithm 1, the greedy re-generation
    covers only positions below $E$ (none once $|s| \\ge E$ after erasing, e.g. a first backtrack at
    $|s| \\ge 2B$) and the re-generated tokens are checked as well. ``top_p < 1``: the sampled tokens come from
    the nucleus (:func:`theorylab.generation.decoding.nucleus`), as in the thesis's experiments."""
    D, rng = _check_D(D), _check_rng(rng)
    check_top_p(top_p)
    D, Q, B = check_backtrack(D, Q, B)
    x = tuple(int(t) for t in prompt)
    q0, v0, backtracks, erased = oracle.calls, verifier.calls, 0, 0
    s: Prefix = ()
    while True:
        if Q > 0 and s and not verifier(x + s):
            k = min(B, len(s))
            s, erased, Q, backtracks = s[:-k], erased + k, Q - 1, backtracks + 1
        if len(s) >= D:
            break
        if argmax and len(s) < erased:
            t = oracle.argmax(x + s)
        elif top_p >= 1:
            t = oracle.sample(x + s, rng)
        else:
            t = sample_nucleus(oracle, x + s, top_p, rng)
        s = s + (t,)
        if s[-1] == eos:  # stops right after <eos>, unchecked
            break
    return Generation(s, oracle.calls - q0, verifier.calls - v0, backtracks)


def check_top_p(p) -> None:
    if isinstance(p, bool) or not isinstance(p, int | float | Fraction) or not 0 <= p <= 1:
        raise ValueError(f"top_p must be a number in [0, 1], got {p!r}")


def sample_nucleus(oracle: Oracle, prefix: Prefix, top_p, rng: np.random.Generator) -> int:
    """One counted oracle query answered from the top-``top_p`` nucleus of $\\mathcal O(\\cdot\\mid$ ``prefix``$)$."""
    from theorylab.generation.decoding import nucleus  # noqa: PLC0415 (decoding imports this module)

    oracle.calls += 1
    cdf = np.cumsum([float(q) for q in nucleus(oracle.probs(prefix), top_p)])
    return int(min(np.searchsorted(cdf, rng.random() * cdf[-1], side="right"), len(cdf) - 1))


def verifier_only_generation(oracle: Oracle, D: int, verifier: ProcessVerifier) -> Generation:
    """Claim after Prop 3.1.1 (l.2756): with a perfect process verifier, query $V(s\\circ t)$ for each $t$ (in order)
    and keep the first accepted token the oracle can emit; at most $|\\Sigma|D$ verifier calls and no oracle
    sampling (the oracle's support is read from its law). Returns tokens None if every extension is rejected."""
    D = _check_D(D)
    v0 = verifier.calls
    s: Prefix = ()
    while len(s) < D:
        support = oracle.probs(s)
        for t in range(oracle.vocab_size):
            if support[t] > 0 and verifier(s + (t,)):
                s = s + (t,)
                break
        else:
            return Generation(None, 0, verifier.calls - v0)
    return Generation(s, 0, verifier.calls - v0)
