"""Verdict functions for the algebraic claims: each returns a report whose ``ok`` is the verdict."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from theorylab.algebra.cascade import Cascade
from theorylab.algebra.groups import PermutationGroup
from theorylab.algebra.semigroup import is_permutation_reset, is_solvable

__all__ = ["CascadeReport", "verify_cascade", "verify_composition_series", "all_words", "solvability_routes"]


def all_words(n_symbols: int, length: int) -> np.ndarray:
    """Every word of the given length, ``[n_symbols**length, length]`` (their prefixes cover shorter words)."""
    if length < 1:
        raise ValueError(f"length must be >= 1, got {length}")
    powers = n_symbols ** np.arange(
        length - 1, -1, -1, dtype=np.int64
    )  # lexicographic: the last symbol fastest
    return np.arange(n_symbols**length, dtype=np.int64)[:, None] // powers % n_symbols


def exhaustive_length(n_symbols: int, budget: int = 50_000, cap: int = 12) -> int:
    """The largest word length $\\ell \\le$ ``cap`` with $|\\Sigma|^\\ell \\le$ ``budget`` (at least 1)."""
    ell = 1
    while ell < cap and n_symbols ** (ell + 1) <= budget:
        ell += 1
    return ell


@dataclass(frozen=True)
class CascadeReport:
    """Checks of a cascade against its automaton; ``failures`` names the ones that failed."""

    reachable_states: int
    word_length: int
    failures: tuple[str, ...] = field(default=())

    @property
    def ok(self) -> bool:
        return not self.failures


def verify_cascade(cascade: Cascade, word_length: int | None = None) -> CascadeReport:
    """Thm 15 for one cascade, exhaustively: (1) $\\mathcal W$ commutes with every reachable transition;
    (2) the transition is the componentwise product of the components' own transitions under $\\phi$;
    (3) $\\phi_c$ reads only higher levels; (4) components are permutation-reset; (5) ``encode(q0)`` decodes
    to ``q0``; (6) all words of length ``word_length`` (default: as long as ~5e4 words allow) from every
    $q_0$."""
    if not isinstance(cascade, Cascade):
        raise TypeError(
            "expected a HolonomyCascade (theorylab.algebra.Cascade, from holonomy_decomposition or "
            f"permutation_reset_cascade), got {type(cascade).__name__}"
        )
    aut = cascade.automaton
    fails = []
    dt, tr = cascade.decode_table, cascade.transition
    if not np.array_equal(dt[tr], aut.delta.T[dt]):
        fails.append("W does not commute with the transition")
    for c, comp in enumerate(cascade.components):
        if not np.array_equal(
            cascade.states[tr][:, :, c],
            comp.semiautomaton.delta[cascade.inputs[:, :, c], cascade.states[:, None, c]],
        ):
            fails.append(f"component {c} does not follow its own transition table")
        if not is_permutation_reset(comp.semiautomaton):
            fails.append(f"component {c} is not permutation-reset")
    try:
        cascade._dependency_tables  # noqa: B018  (builds phi; raises if it reads non-higher levels)
    except AssertionError:
        fails.append("a dependency function reads a component that is not on a higher level")
    for q0 in range(aut.n_states):
        if cascade.decode(cascade.encode(q0)[None, :])[0] != q0:
            fails.append(f"encode({q0}) does not decode to {q0}")
    ell = word_length or exhaustive_length(aut.n_symbols)
    bad = _first_unsimulated_start(cascade, ell)
    if bad is not None:
        fails.append(f"words of length {ell} from q0={bad} are not simulated")
    return CascadeReport(len(cascade.states), ell, tuple(fails))


def _first_unsimulated_start(cascade: Cascade, ell: int) -> int | None:
    """The first $q_0$ from which some word of length $\\le$ ``ell`` (the prefixes of all words of length
    ``ell``) is simulated wrongly, else ``None``: the word tree level by level, every start state at once (each
    level extends the last by every symbol: $O(|\\Sigma|^\\ell)$ lookups, not $\\ell |\\Sigma|^\\ell$)."""
    aut = cascade.automaton
    k, n = aut.n_symbols, aut.n_states
    r = cascade.initial_index[:, None]  # [q0, word]: cascade state index
    q = np.arange(n, dtype=np.int64)[:, None]  # [q0, word]: automaton state
    wrong = np.zeros(n, dtype=bool)
    for _ in range(ell):
        r = cascade.transition[r[:, :, None], np.arange(k)].reshape(n, -1)
        q = aut.delta[np.arange(k), q[:, :, None]].reshape(n, -1)
        wrong |= (cascade.decode_table[r] != q).any(axis=1)
    return int(np.argmax(wrong)) if wrong.any() else None


def verify_composition_series(G: PermutationGroup, series: list) -> bool:
    """Whether ``series`` (largest first, element-index arrays) is a composition series of ``G``: starts at
    $G$, ends at $1$, each term is normal in the previous one with a simple quotient (no normal subgroup
    strictly between them)."""
    if len(series) == 0 or len(series[0]) != G.order or len(series[-1]) != 1:
        return False
    for big, small in zip(series[:-1], series[1:], strict=True):
        big, small = np.asarray(big), np.asarray(small)
        if len(small) >= len(big) or not np.isin(small, big).all():
            return False
        if len(G.normal_closure(small, big)) != len(small):  # small is normal in big
            return False
        for x in big[~np.isin(big, small)]:  # maximality: the normal closure of small + x is all of big
            if len(G.closure(np.concatenate([small, G.normal_closure([x], big)]))) != len(big):
                return False
    return True


def solvability_routes(aut) -> dict[str, bool]:
    """Def 8 decided two ways: maximal subgroups of $\\mathcal T(\\mathcal A)$, and the holonomy components'
    groups."""
    from theorylab.algebra.holonomy import holonomy_decomposition

    cascade = holonomy_decomposition(aut)
    return {
        "maximal_subgroups": is_solvable(aut),
        "holonomy": all(c.group.is_solvable() for c in cascade.components),
    }


def _prime_factors(m: int) -> dict[int, int]:
    out: dict[int, int] = {}
    p = 2
    while p * p <= m:
        while m % p == 0:
            out[p] = out.get(p, 0) + 1
            m //= p
        p += 1
    if m > 1:
        out[m] = out.get(m, 0) + 1
    return out


def orders_certified_solvable(m: int) -> bool:
    """Whether every group of order ``m`` is solvable by one of two classical theorems: Burnside's $p^aq^b$
    theorem (at most two prime divisors) or Hölder's theorem for square-free orders (the group is metacyclic)."""
    f = _prime_factors(m)
    return len(f) <= 2 or all(e == 1 for e in f.values())


def nonsolvable_semigroup_size_bound(aut, bound: int = 60, solvable=None) -> bool:
    """Verdict of the corrected footnote 17 on one automaton: if it is not solvable (by ``solvable``, default
    :func:`is_solvable`) then $|\\mathcal T(\\mathcal A)|\\ge$ ``bound`` and some non-solvable maximal subgroup has
    order $\\ge$ ``bound``; solvable automata pass."""
    from theorylab.algebra.semigroup import maximal_subgroups, transformation_semigroup

    if (solvable or is_solvable)(aut):
        return True
    S = transformation_semigroup(aut)
    bad = [G.order for G in maximal_subgroups(S) if not G.group.is_solvable()]
    return S.size >= bound and bool(bad) and max(bad) >= bound
