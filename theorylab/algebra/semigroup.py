"""The transformation semigroup $\\mathcal T(\\mathcal A)$ of a semiautomaton, its maximal subgroups and
solvability.

$\\mathcal T(\\mathcal A) = \\{\\delta(\\cdot, \\sigma_{1:t}) : t \\ge 1\\}$ with $\\delta(\\cdot,
\\sigma_{1:t}) = \\delta(\\cdot, \\sigma_t) \\circ \\cdots \\circ \\delta(\\cdot, \\sigma_1)$; the identity is
an element only if some non-empty word realises it (thesis, l.1401). Solvability (Def 8) is decided without a
decomposition: $\\mathcal A$ is solvable iff every maximal subgroup ($\\mathcal H$-class of an idempotent) of
$\\mathcal T(\\mathcal A)$ is a solvable group, because the simple group divisors of a finite semigroup are
exactly those of its maximal subgroups (Krohn-Rhodes).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING

import numpy as np

from theorylab.algebra.groups import CompositionFactor, PermutationGroup
from theorylab.caching import MemoCache

if TYPE_CHECKING:
    from theorylab.automata.semiautomaton import Semiautomaton

__all__ = [
    "TransformationSemigroup",
    "MaximalSubgroup",
    "NotSolvableError",
    "transformation_semigroup",
    "semigroup_size",
    "maximal_subgroups",
    "is_solvable",
    "check_solvable",
    "is_group",
    "is_aperiodic",
    "is_permutation_reset",
]

MAX_SIZE = 1_000_000


class NotSolvableError(ValueError):
    """A semiautomaton whose transformation semigroup contains a non-solvable group (no constant-depth
    shortcut unless TC0 = NC1, Thm 13). ``.subgroup`` is the offending :class:`MaximalSubgroup`."""

    def __init__(self, message: str, subgroup: MaximalSubgroup | None = None):
        super().__init__(message)
        self.subgroup = subgroup


def _semiautomaton_class():
    # imported lazily: theorylab.automata imports theorylab.algebra (holonomy) for its constructions
    from theorylab.automata.semiautomaton import Semiautomaton

    return Semiautomaton


def _require_aut(aut) -> Semiautomaton:
    if not isinstance(aut, _semiautomaton_class()):
        raise TypeError(f"expected a theorylab.automata.Semiautomaton, got {type(aut).__name__}")
    return aut


@dataclass(frozen=True, eq=False)
class TransformationSemigroup:
    """Exact enumeration of $\\mathcal T(\\mathcal A)$.

    ``elements[i]`` is a transformation of the states (``elements[i][q]`` = image of ``q``); ``words[i]`` a
    shortest word realising it; ``right[i, s]`` the index of ``elements[i]`` followed by symbol ``s``.
    """

    automaton: Semiautomaton
    elements: np.ndarray
    right: np.ndarray
    words: tuple

    @property
    def size(self) -> int:
        return int(self.elements.shape[0])

    def __len__(self) -> int:
        return self.size

    @cached_property
    def _index(self) -> dict:
        return {row.tobytes(): i for i, row in enumerate(self.elements)}

    def index(self, transformation) -> int:
        """Index of a transformation; ``KeyError`` if it is not in the semigroup."""
        return self._index[np.asarray(transformation, dtype=np.int64).tobytes()]

    def __contains__(self, transformation) -> bool:
        return np.asarray(transformation, dtype=np.int64).tobytes() in self._index

    @cached_property
    def ranks(self) -> np.ndarray:
        """$|\\mathrm{im}\\, s|$ for every element."""
        srt = np.sort(self.elements, axis=1)
        return 1 + (np.diff(srt, axis=1) != 0).sum(axis=1)

    @cached_property
    def idempotents(self) -> np.ndarray:
        e = self.elements
        return np.flatnonzero((np.take_along_axis(e, e, axis=1) == e).all(axis=1))

    @cached_property
    def contains_identity(self) -> bool:
        return np.arange(self.automaton.n_states, dtype=np.int64).tobytes() in self._index


@dataclass(frozen=True, eq=False)
class MaximalSubgroup:
    """The maximal subgroup $G_e$ ($\\mathcal H$-class) of an idempotent ``e``: the elements with the same
    image and kernel as ``e``. ``group`` is its faithful action on ``image`` (relabelled ``0..len(image)-1``);
    ``members`` are indices into the semigroup's elements."""

    idempotent: int
    image: tuple
    members: np.ndarray
    group: PermutationGroup

    @property
    def order(self) -> int:
        return self.group.order

    @cached_property
    def solvable(self) -> bool:
        return self.group.is_solvable()

    @cached_property
    def composition_factors(self) -> list[CompositionFactor]:
        return self.group.composition_factors()


def transformation_semigroup(aut: Semiautomaton, max_size: int = MAX_SIZE) -> TransformationSemigroup:
    """Enumerate $\\mathcal T(\\mathcal A)$ breadth first over words (Froidure-Pin style right Cayley graph).

    Cost O(|T| |Σ| |Q|); raises ``ValueError`` past ``max_size`` elements. Cached per transition table (arrays
    read-only).
    """
    aut = _require_aut(aut)
    key = (aut.delta.shape, aut.delta.tobytes())
    hit = _CACHE.get(key)
    if hit is None or hit.size > max_size:
        hit = _enumerate(aut, max_size)
        hit.elements.setflags(write=False)
        hit.right.setflags(write=False)
        _CACHE.put(key, hit)
    return hit if hit.automaton is aut else dataclasses.replace(hit, automaton=aut)


_CACHE: MemoCache[TransformationSemigroup] = MemoCache("algebra.transformation_semigroup", 128)


def _enumerate(aut: Semiautomaton, max_size: int) -> TransformationSemigroup:
    n, k = aut.n_states, aut.n_symbols
    gens = [tuple(int(x) for x in row) for row in aut.delta]
    index: dict[tuple, int] = {}
    rows: list[tuple] = []
    words: list[tuple] = []
    right: list[list[int]] = []
    for s, g in enumerate(gens):
        if g not in index:
            index[g] = len(rows)
            rows.append(g)
            words.append((s,))
    i = 0
    while i < len(rows):  # plain tuples: per-element numpy calls would dominate for small |Q|
        f = rows[i]
        r = []
        for s, g in enumerate(gens):
            h = tuple([g[x] for x in f])  # g o f: the word of f, then s
            j = index.get(h)
            if j is None:
                j = index[h] = len(rows)
                rows.append(h)
                words.append(words[i] + (s,))
                if len(rows) > max_size:
                    raise ValueError(f"transformation semigroup has more than {max_size} elements")
            r.append(j)
        right.append(r)
        i += 1
    elements = np.array(rows, dtype=np.int64).reshape(-1, n)
    return TransformationSemigroup(
        aut, elements, np.array(right, dtype=np.int64).reshape(-1, k), tuple(words)
    )


def semigroup_size(aut: Semiautomaton, backend: str = "auto") -> int:
    """$|\\mathcal T(\\mathcal A)|$. ``backend``: ``"theorylab"`` (:func:`transformation_semigroup`),
    ``"libsemigroups"`` (Froidure-Pin in C++, optional package ``libsemigroups_pybind11``; about 7-40x faster
    on size alone, see ``benchmarks/bench_algebra.py``) or ``"auto"`` (libsemigroups when installed)."""
    aut = _require_aut(aut)
    if backend not in ("auto", "theorylab", "libsemigroups"):
        raise ValueError(f"backend must be 'auto', 'theorylab' or 'libsemigroups', got {backend!r}")
    if backend != "theorylab":
        try:
            import libsemigroups_pybind11 as ls
        except ImportError:
            if backend == "libsemigroups":
                raise
        else:
            guard = ls.ReportGuard(False)  # silences progress reports while alive
            size = int(ls.FroidurePin([ls.Transf([int(x) for x in row]) for row in aut.delta]).size())
            del guard
            return size
    return transformation_semigroup(aut).size


def _image_masks(rows: np.ndarray) -> np.ndarray:
    """``out[i, q]``: whether ``q`` is in the image of transformation ``i`` (the image as a set)."""
    out = np.zeros(rows.shape, dtype=bool)
    np.put_along_axis(out, rows, True, axis=1)
    return out


def _kernel_labels(rows: np.ndarray) -> np.ndarray:
    """Canonical kernel of each transformation: states labelled by the first state with the same image."""
    n = rows.shape[1]
    eq = rows[:, :, None] == rows[:, None, :]  # [N, n, n]
    return np.argmax(eq, axis=2) if n else rows


def maximal_subgroups(S: TransformationSemigroup | Semiautomaton) -> list[MaximalSubgroup]:
    """All maximal subgroups of $\\mathcal T(\\mathcal A)$, one per idempotent (isomorphic ones for $\\mathcal
    D$-related idempotents are all listed)."""
    if isinstance(S, _semiautomaton_class()):
        S = transformation_semigroup(S)
    if not isinstance(S, TransformationSemigroup):
        raise TypeError(f"expected a TransformationSemigroup or Semiautomaton, got {type(S).__name__}")
    e = S.elements
    keys = np.concatenate([_image_masks(e).astype(np.int64), _kernel_labels(e)], axis=1)
    classes: dict[bytes, list[int]] = {}
    for i, k in enumerate(keys):  # H-classes: same image set and same kernel
        classes.setdefault(k.tobytes(), []).append(i)
    out = []
    for idem in S.idempotents:
        members = np.array(classes[keys[idem].tobytes()], dtype=np.int64)
        image = np.unique(e[idem])
        pos = np.full(S.automaton.n_states, -1)
        pos[image] = np.arange(len(image))
        perms = pos[e[members][:, image]]
        order = np.argsort([0 if m == idem else 1 for m in members], kind="stable")  # identity first
        out.append(
            MaximalSubgroup(
                int(idem), tuple(int(q) for q in image), members, PermutationGroup.from_elements(perms[order])
            )
        )
    return out


def _distinct_groups(S: TransformationSemigroup) -> list[MaximalSubgroup]:
    """One maximal subgroup per distinct (image size, order) and membership pattern, to avoid redundant work."""
    seen, out = set(), []
    for G in maximal_subgroups(S):
        key = (len(G.image), G.order, G.group.elements.tobytes())
        if key not in seen:
            seen.add(key)
            out.append(G)
    return out


def check_solvable(aut: Semiautomaton) -> None:
    """Raise :class:`NotSolvableError` naming a non-solvable maximal subgroup (and its composition factors)."""
    S = transformation_semigroup(aut)
    for G in sorted(_distinct_groups(S), key=lambda g: -g.order):
        if not G.solvable:
            factors = ", ".join(f.name for f in G.composition_factors)
            word = S.words[G.idempotent]
            raise NotSolvableError(
                f"{aut!r} is not solvable: the maximal subgroup at idempotent word {list(word)} "
                f"(acting on states {list(G.image)}) has order {G.order}, composition factors [{factors}]; "
                "a non-abelian simple factor admits no constant-depth construction (Thm 13)",
                subgroup=G,
            )


def is_solvable(aut: Semiautomaton) -> bool:
    """Def 8, decomposition-free: every maximal subgroup of $\\mathcal T(\\mathcal A)$ is solvable."""
    try:
        check_solvable(aut)
    except NotSolvableError:
        return False
    return True


def is_group(aut: Semiautomaton | TransformationSemigroup) -> bool:
    """Whether $\\mathcal T(\\mathcal A)$ is a group: all elements have the same image (as a set) and the same
    kernel, i.e. $\\mathcal T(\\mathcal A)$ lies in one $\\mathcal H$-class of the full transformation monoid
    (a finite subsemigroup of an $\\mathcal H$-class is a group). True for every permutation semiautomaton, for
    one constant map, and for non-permutations such as ``[[2, 2, 0]]`` ($\\{f, f^2\\} \\cong C_2$, $f^3 = f$)."""
    S = aut if isinstance(aut, TransformationSemigroup) else transformation_semigroup(aut)
    e = S.elements
    images = _image_masks(e)
    return bool((images == images[:1]).all() and (_kernel_labels(e) == _kernel_labels(e[:1])).all())


def is_aperiodic(aut: Semiautomaton | TransformationSemigroup) -> bool:
    """Whether every maximal subgroup of $\\mathcal T(\\mathcal A)$ is trivial (no group structure at all)."""
    S = aut if isinstance(aut, TransformationSemigroup) else transformation_semigroup(aut)
    return all(G.order == 1 for G in maximal_subgroups(S))


def is_permutation_reset(aut) -> bool:
    """Def 7: every symbol acts as a permutation or as a constant map. ``aut``: a :class:`Semiautomaton` or
    its transition table ``delta[symbol, state]``."""
    if isinstance(aut, _semiautomaton_class()):
        d = aut.delta
    else:
        d = np.asarray(aut)
        if d.dtype == bool or not np.issubdtype(d.dtype, np.integer) or d.ndim != 2 or d.shape[1] == 0:
            raise TypeError(
                "expected a Semiautomaton or an integer transition table delta[symbol, state], got "
                f"{type(aut).__name__} of dtype {d.dtype}, shape {d.shape}"
            )
    n = d.shape[1]
    perm = (np.sort(d, axis=1) == np.arange(n)).all(axis=1)
    const = (d == d[:, :1]).all(axis=1)
    return bool((perm | const).all())
