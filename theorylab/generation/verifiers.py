r"""Process verifiers (Li Def 3.1.3, `003_69b23422e33c905a.txt`) and the support-aware variant.

A process verifier for $A\subseteq\Sigma^*$ answers $V(s)=1\iff\exists s':s\circ s'\in A$. Def 3.1.3 ignores the
oracle's support; the lower bound of Thm 3.1.1 needs the support-aware $V_{\mathcal O}(s)=1\iff\exists s':
s\circ s'\in A,\ p_{\mathcal O}(s\circ s')>0$ (with the unaware one tokenwise rejection sampling never terminates
on that instance). Every verifier counts its ``calls``.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterable, Sequence

import numpy as np

from theorylab.generation.oracles import Oracle, as_prefix, check_vocab_size

__all__ = [
    "ProcessVerifier",
    "perfect_verifier",
    "support_aware_verifier",
    "SubsetSumVerifier",
    "check_prefix_closed",
    "language_from_predicate",
]

Prefix = tuple[int, ...]


class ProcessVerifier:
    """A 0/1 verifier ``accept(prefix) -> bool`` that counts its calls."""

    def __init__(self, accept: Callable[[Prefix], bool], name: str = "verifier") -> None:
        if not callable(accept):
            raise TypeError("accept must be callable: prefix -> bool")
        self._accept = accept
        self.name = name
        self.calls = 0

    def __call__(self, prefix: Sequence[int]) -> bool:
        self.calls += 1
        return bool(self._accept(tuple(int(t) for t in prefix)))

    def peek(self, prefix: Sequence[int]) -> bool:
        """The verdict without counting a call (for exact calculators)."""
        return bool(self._accept(tuple(int(t) for t in prefix)))


def _language(A: Iterable[Sequence[int]], vocab_size: int, D: int) -> frozenset[Prefix]:
    out = set()
    for s in A:
        s = as_prefix(s, vocab_size, "string of A")
        if len(s) != D:
            raise ValueError(f"string {s} of A has length {len(s)}, expected D={D}")
        out.add(s)
    return frozenset(out)


def _check_D(D: int) -> int:
    if isinstance(D, bool) or not isinstance(D, int | np.integer):
        raise TypeError(f"D must be an int, got {type(D).__name__}")
    if D < 1:
        raise ValueError(f"the length D must be >= 1, got {D}")
    return int(D)


def language_from_predicate(
    predicate: Callable[[Prefix], bool], vocab_size: int, D: int
) -> frozenset[Prefix]:
    """$A=\\{s\\in\\Sigma^D:\\ \\mathrm{predicate}(s)\\}$ by enumeration (small $|\\Sigma|^D$ only)."""
    k, D = check_vocab_size(vocab_size), _check_D(D)
    return frozenset(s for s in itertools.product(range(k), repeat=D) if predicate(s))


def perfect_verifier(A: Iterable[Sequence[int]], vocab_size: int, D: int) -> ProcessVerifier:
    """Def 3.1.3 for a fixed-length $A\\subseteq\\Sigma^D$: accept exactly the prefixes of members of $A$."""
    k, D = check_vocab_size(vocab_size), _check_D(D)
    lang = _language(A, k, D)
    prefixes = {s[:h] for s in lang for h in range(D + 1)}
    return ProcessVerifier(prefixes.__contains__, "perfect")


def support_aware_verifier(A: Iterable[Sequence[int]], oracle: Oracle, D: int) -> ProcessVerifier:
    """$V_{\\mathcal O}$: accept the prefixes of members $s\\in A$ with $p_{\\mathcal O}(s)>0$."""
    D = _check_D(D)
    lang = _language(A, oracle.vocab_size, D)
    prefixes = set()
    for s in lang:
        if all(oracle.probs(s[:h])[s[h]] > 0 for h in range(D)):
            prefixes.update(s[:h] for h in range(D + 1))
    return ProcessVerifier(prefixes.__contains__, "support-aware")


def check_prefix_closed(verifier: ProcessVerifier, vocab_size: int, D: int) -> None:
    """Raise ValueError if some accepted prefix has a rejected prefix (a process verifier must be prefix-closed:
    if $s\\circ t$ can be completed into $A$, so can $s$)."""
    k, D = check_vocab_size(vocab_size), _check_D(D)
    for h in range(1, D + 1):
        for s in itertools.product(range(k), repeat=h):
            if verifier.peek(s) and not verifier.peek(s[:-1]):
                raise ValueError(
                    f"verifier {verifier.name!r} is not prefix-closed: it accepts {s} but rejects its prefix {s[:-1]}"
                )


class SubsetSumVerifier(ProcessVerifier):
    r"""Exact process verifier for the knapsack language of Thm 3.1.2, $A=\{s\in\{0,1\}^D:\sum_i s_iX_i=c\}$:
    $V(s_{1:h})=1$ iff $c-\sum_{i\le h}s_iX_i$ is a subset sum of $X_{h+1:D}$ (pseudo-polynomial dynamic programme,
    $O(Dc)$ states)."""

    def __init__(self, weights: Sequence[int], c: int) -> None:
        w = [int(x) for x in weights]
        if not w:
            raise ValueError("weights must be non-empty")
        if any(x < 0 for x in w) or int(c) < 0:
            raise ValueError("knapsack weights and target must be non-negative integers")
        self.weights, self.c, self.D = tuple(w), int(c), len(w)
        # reach[h] = set of sums reachable by subsets of weights[h:]
        reach = [frozenset({0})]
        for x in reversed(w):
            prev = reach[-1]
            reach.append(prev | {r + x for r in prev if r + x <= self.c})
        self._suffix = list(reversed(reach))  # _suffix[h]: subset sums of weights[h:] (capped at c)
        super().__init__(self._accept_prefix, "subset-sum DP")

    def _accept_prefix(self, prefix: Prefix) -> bool:
        if len(prefix) > self.D or any(t not in (0, 1) for t in prefix):
            return False
        rest = self.c - sum(x for x, t in zip(self.weights, prefix, strict=False) if t)
        return rest >= 0 and rest in self._suffix[len(prefix)]
