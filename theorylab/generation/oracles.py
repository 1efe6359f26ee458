r"""Autoregressive oracles (Li Def 3.1.1, `003_69b23422e33c905a.txt`).

An oracle $\mathcal O$ returns one sample from a next-token law $\mathcal O(\cdot\mid s)$ on $\Sigma=\{0,\dots,k-1\}$.
It induces $p_{\mathcal O}(s)=\prod_i\mathcal O(s_i\mid s_{<i})$. ``probs(prefix)`` is the law itself (used by the
exact calculators, not counted); ``sample`` and ``argmax`` are the algorithm's queries and are counted in
``calls`` (Def 3.1.6 counts oracle calls only; verifier calls are counted by the verifier).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from fractions import Fraction
from numbers import Real

import numpy as np

__all__ = ["Oracle", "TabularOracle", "UniformOracle", "ParitySecretOracle", "as_prefix"]

Prefix = tuple[int, ...]
_IMMUTABLE_NUMBERS = frozenset({int, float, Fraction, np.float64})


def as_prefix(prefix: Sequence[int], vocab_size: int, name: str = "prefix") -> Prefix:
    """Validate a token sequence over $\\{0..k-1\\}$ and return it as a tuple of ints."""
    if isinstance(prefix, str | bytes):
        raise TypeError(f"{name} must be a sequence of token ids, got {type(prefix).__name__}")
    out = tuple(int(t) for t in prefix)
    if any(t < 0 or t >= vocab_size for t in out):
        raise ValueError(f"{name} {out} has tokens outside 0..{vocab_size - 1}")
    return out


def check_vocab_size(vocab_size: int) -> int:
    if isinstance(vocab_size, bool) or not isinstance(vocab_size, int | np.integer):
        raise TypeError(f"vocab_size must be an int, got {type(vocab_size).__name__}")
    if vocab_size < 1:
        raise ValueError(f"the vocabulary is empty (vocab_size={vocab_size}); it needs at least one token")
    return int(vocab_size)


class Oracle:
    """Base class: subclasses implement ``_law(prefix)`` returning ``vocab_size`` probabilities."""

    def __init__(self, vocab_size: int) -> None:
        self.vocab_size = check_vocab_size(vocab_size)
        self.calls = 0

    def _law(self, prefix: Prefix) -> Sequence[Real]:  # pragma: no cover - abstract
        raise NotImplementedError

    def probs(self, prefix: Sequence[int]) -> tuple:
        """$\\mathcal O(\\cdot\\mid s)$ as a tuple (Fractions stay exact); validated; not counted as a query.
        A law that is the very tuple object validated before (laws cached by value, as the Dyck process's) is not
        validated again: its entries are immutable numbers, so the check would give the same answer."""
        law = tuple(self._law(as_prefix(prefix, self.vocab_size)))
        seen = self.__dict__.setdefault("_validated_laws", {})  # id -> law, kept alive: its id stays its own
        if seen.get(id(law)) is law:  # (a pickled copy of the oracle carries the ids of another process)
            return law
        if len(law) != self.vocab_size:
            raise ValueError(
                f"oracle law at {tuple(prefix)} has {len(law)} entries, expected {self.vocab_size}"
            )
        if any(p < 0 for p in law):
            raise ValueError(f"oracle law at {tuple(prefix)} has a negative entry: {law}")
        total = sum(law)
        exact = all(isinstance(p, int | Fraction) for p in law)
        if (total != 1) if exact else abs(float(total) - 1.0) > 1e-9:
            raise ValueError(f"oracle law at {tuple(prefix)} sums to {total}, not 1")
        if len(seen) < 1024 and all(type(p) in _IMMUTABLE_NUMBERS for p in law):
            seen[id(law)] = law
        return law

    def sample(self, prefix: Sequence[int], rng: np.random.Generator) -> int:
        """One oracle query: a token drawn from $\\mathcal O(\\cdot\\mid s)$."""
        self.calls += 1
        cdf = np.cumsum(np.array([float(p) for p in self.probs(prefix)]))
        return int(min(np.searchsorted(cdf, rng.random() * cdf[-1], side="right"), self.vocab_size - 1))

    def argmax(self, prefix: Sequence[int]) -> int:
        """One oracle query answered greedily (ties broken towards the smallest token id)."""
        self.calls += 1
        return argmax_token(self.probs(prefix))


def argmax_token(law: Sequence[Real]) -> int:
    """Smallest index of a maximal entry (the deterministic tie-break used everywhere)."""
    best = max(law)
    return next(i for i, p in enumerate(law) if p == best)


class TabularOracle(Oracle):
    """An oracle given by a function ``law(prefix) -> probabilities`` (a table, a closure, a model)."""

    def __init__(self, vocab_size: int, law: Callable[[Prefix], Sequence[Real]]) -> None:
        super().__init__(vocab_size)
        if not callable(law):
            raise TypeError("law must be callable: prefix -> sequence of vocab_size probabilities")
        self._fn = law

    def _law(self, prefix: Prefix) -> Sequence[Real]:
        return self._fn(prefix)


class UniformOracle(Oracle):
    """$\\mathcal O(\\cdot\\mid s)$ uniform on $\\Sigma$ for every prefix (exact Fractions)."""

    def _law(self, prefix: Prefix) -> Sequence[Real]:
        return (Fraction(1, self.vocab_size),) * self.vocab_size


class ParitySecretOracle(Oracle):
    r"""The oracle $\mathcal O_{\hat s}$ of Thm 3.1.1 (Eqs 3.1-3.2): uniform bits before position $D$; at
    $|s|=D-1$ it emits the bit making the parity odd, except at $s=\hat s$ where it makes the parity even."""

    def __init__(self, secret: Sequence[int]) -> None:
        super().__init__(2)
        self.secret = as_prefix(secret, 2, "secret")
        if not self.secret:
            raise ValueError("the secret must have length D - 1 >= 1")
        self.D = len(self.secret) + 1

    def _law(self, prefix: Prefix) -> Sequence[Real]:
        if len(prefix) < self.D - 1:
            return (Fraction(1, 2), Fraction(1, 2))
        if len(prefix) > self.D - 1:
            raise ValueError(f"prefix of length {len(prefix)} is past the horizon D={self.D}")
        want_odd = prefix != self.secret
        bit = (sum(prefix) + int(want_odd)) % 2  # the bit making sum(prefix) + bit odd (resp. even)
        return (Fraction(1 - bit), Fraction(bit))
