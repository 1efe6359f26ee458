"""Finite permutation groups: the one permutation-group type of theorylab.

**Convention (the whole library).** A permutation of ``range(n)`` is an int array ``p`` with ``p[q]`` the image
of ``q``. The product ``a * b`` means "apply ``a``, then ``b``" ($= b \\circ a$), the order in which a word is
read left to right (and sympy's convention). ``table[a, b]`` (element indices) is that product; code written in
function notation spells $a \\circ b$ as ``table[b, a]`` (:meth:`PermutationGroup.compose`).

**Scaling.** Order, membership, derived series, solvability and composition factors come from a base and
strong generating set (deterministic incremental Schreier-Sims of ``sympy.combinatorics``) and deterministic
normal closures (close under conjugation by the generators, test membership by sifting); their memory grows
with the degree times the base length, never with the order. The element list and the Cayley table
(``elements``, ``table``, ``inverse`` and every method taking or returning element-index arrays) exist only for
groups of order at most :data:`CAYLEY_LIMIT` and raise :class:`GroupTooLargeError` above it.

**Composition factors** (sympy's ``composition_series`` covers solvable groups only). The derived series gives
the abelian sections (a section of order $m$ contributes $C_p$ for every prime power $p^k \\| m$, $k$ times)
down to the perfect core $P$. $P$ is split by its action: on an orbit (image, and kernel = pointwise
stabiliser) and, when transitive, on a minimal block system (image and kernel, sympy's homomorphisms), until
the pieces are primitive. Shortcuts: a perfect group whose order is that of a simple group of order < 3000 and
divisible by no smaller non-abelian simple order is simple (a non-simple perfect group has a simple quotient of
smaller order dividing its own; e.g. 168 = PSL(2,7)); a primitive group of degree $m \\ge 5$ and order $m!/2$ is
$A_m$. Any other primitive perfect group is split exactly through its Cayley table (maximal normal subgroups from
conjugacy classes), which needs its order $\\le$ :data:`CAYLEY_LIMIT`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from math import factorial

import numpy as np

__all__ = [
    "CAYLEY_LIMIT",
    "CompositionFactor",
    "GroupTooLargeError",
    "PermutationGroup",
    "SIMPLE_GROUP_NAMES",
    "permutation_group",
]

#: Largest group order for which an element list and a Cayley table are built (a table of 2520^2 int64 is 51 MB).
CAYLEY_LIMIT = 2520

#: Names of the non-abelian simple groups of order < 3000 (they are determined by their order in this range).
SIMPLE_GROUP_NAMES = {
    60: "A5",
    168: "PSL(2,7)",
    360: "A6",
    504: "PSL(2,8)",
    660: "PSL(2,11)",
    1092: "PSL(2,13)",
    2448: "PSL(2,17)",
    2520: "A7",
}


class GroupTooLargeError(ValueError):
    """An operation that enumerates the group (element list, Cayley table) was asked of a group of order above
    its size limit."""


@dataclass(frozen=True)
class CompositionFactor:
    """A composition factor $H_{i+1}/H_i$: its order, whether it is abelian (then cyclic of prime order), a
    name (``label`` when the algorithm identified it, e.g. ``"A9"``; else looked up by order)."""

    order: int
    abelian: bool
    label: str = field(default="", compare=False)

    @property
    def name(self) -> str:
        if self.abelian:
            return f"C{self.order}"
        if self.label:
            return self.label
        return SIMPLE_GROUP_NAMES.get(self.order, f"simple group of order {self.order}")


def _as_generators(generators) -> np.ndarray:
    """Validate generators: a non-empty ``[k, n]`` integer array whose rows are permutations of ``range(n)``."""
    if isinstance(generators, (list, tuple)):
        if len(generators) == 0:
            raise ValueError("empty generator list: pass at least one permutation (the identity for {e})")
        lengths = {len(g) if hasattr(g, "__len__") else -1 for g in generators}
        if -1 in lengths:
            raise ValueError("generators must be a list of permutations (sequences), not of scalars")
        if len(lengths) > 1:
            raise ValueError(
                f"generators have mixed degrees {sorted(lengths)}; all must permute the same range(n)"
            )
    g = np.asarray(generators)
    if g.dtype == bool or not np.issubdtype(g.dtype, np.integer):
        raise TypeError(f"generators must be an integer array, got dtype {g.dtype}")
    if g.ndim != 2 or g.shape[1] == 0:
        raise ValueError(f"generators must have shape [k, n] with n >= 1, got {g.shape}")
    if g.shape[0] == 0:
        raise ValueError("empty generator list: pass at least one permutation (the identity for {e})")
    bad = np.flatnonzero(~(np.sort(g, axis=1) == np.arange(g.shape[1])).all(axis=1))
    if len(bad):
        raise ValueError(
            f"generators must be permutations of range({g.shape[1]}); generator {int(bad[0])} = "
            f"{g[bad[0]].tolist()} is not a permutation"
        )
    return g.astype(np.int64)


def _closure_rows(generators: np.ndarray) -> np.ndarray:
    """All products of ``generators`` (rows) including the identity, breadth first (identity first; the
    successors of one element, generator by generator, before those of the next)."""
    n = generators.shape[1]
    ident = np.arange(n, dtype=np.int64)
    seen = {ident.tobytes()}
    rows = [ident]
    frontier = ident[None, :]
    while len(frontier):
        prods = np.swapaxes(generators[:, frontier], 0, 1).reshape(-1, n)  # element f, then generator g: g[f]
        new = []
        for p in prods:
            key = p.tobytes()
            if key not in seen:
                seen.add(key)
                rows.append(p)
                new.append(p)
        frontier = np.array(new, dtype=np.int64).reshape(-1, n)
    return np.array(rows, dtype=np.int64)


# ------------------------------------------------------------------ BSGS layer (sympy groups, no tables)


def _sympy_group(perms: list):
    from sympy.combinatorics import PermutationGroup as SymPyGroup

    return SymPyGroup(perms)


def _identity_group(degree: int):
    from sympy.combinatorics import Permutation

    return _sympy_group([Permutation(degree - 1)])


def _normal_closure(G, gens: list):
    """Smallest normal subgroup of ``G`` (sympy group) containing ``gens``: deterministic, by closing under
    conjugation by ``G``'s generators with BSGS membership tests."""
    gens = [g for g in gens if not g.is_Identity]
    if not gens:
        return _identity_group(G.degree)
    H = _sympy_group(gens)
    queue = list(gens)
    while queue:
        h = queue.pop()
        for g in G.generators:
            c = h ^ g  # g^-1 h g
            if not H.contains(c):
                H = _sympy_group(list(H.generators) + [c])
                queue.append(c)
    return H


def _derived_subgroup(G):
    """$[G, G]$ = normal closure of the commutators of the generators."""
    gens = G.generators
    return _normal_closure(G, [a.commutator(b) for i, a in enumerate(gens) for b in gens[i + 1 :]])


def _derived_series(G) -> list:
    series = [G]
    while series[-1].order() > 1:
        D = _derived_subgroup(series[-1])
        if D.order() == series[-1].order():
            break
        series.append(D)
    return series


def _prime_factors(m: int) -> list[int]:
    out, p = [], 2
    while p * p <= m:
        while m % p == 0:
            out.append(p)
            m //= p
        p += 1
    return out + ([m] if m > 1 else [])


def _restrict(G, points: list):
    """The action of ``G`` on the invariant set ``points``, relabelled ``0..len(points)-1``."""
    from sympy.combinatorics import Permutation

    pos = {q: i for i, q in enumerate(points)}
    gens = [Permutation([pos[g.array_form[q]] for q in points]) for g in G.generators]
    return _sympy_group(gens)


def _factors(G) -> list[CompositionFactor]:
    """Composition factors of a sympy permutation group, top first."""
    if G.order() == 1:
        return []
    series = _derived_series(G)
    out = []
    for big, small in zip(series[:-1], series[1:], strict=True):
        out += [CompositionFactor(p, True) for p in _prime_factors(int(big.order() // small.order()))]
    if series[-1].order() > 1:
        out += _perfect_factors(series[-1])
    return out


def _perfect_factors(P) -> list[CompositionFactor]:
    """Composition factors of a perfect group (every one non-abelian simple)."""
    from sympy.combinatorics.homomorphisms import block_homomorphism

    order = int(P.order())
    if order in SIMPLE_GROUP_NAMES and not any(order % k == 0 for k in SIMPLE_GROUP_NAMES if k < order):
        # a non-simple perfect group has a non-abelian simple quotient of order properly dividing its own
        return [CompositionFactor(order, False, SIMPLE_GROUP_NAMES[order])]
    orbits = [sorted(o) for o in P.orbits() if len(o) > 1]
    if len(orbits) > 1:  # intransitive: image on the first orbit, kernel = its pointwise stabiliser
        return _factors(_restrict(P, orbits[0])) + _factors(P.pointwise_stabilizer(orbits[0]))
    Q = _restrict(P, orbits[0])  # faithful on its only non-trivial orbit
    m = Q.degree
    for k in range(1, m):
        blocks = Q.minimal_block([0, k])
        if len(set(blocks)) > 1:  # imprimitive: action on the blocks, and its kernel
            hom = block_homomorphism(Q, blocks)
            return _factors(hom.image()) + _factors(hom.kernel())
    order = int(Q.order())
    if m >= 5 and order == factorial(m) // 2:
        return [CompositionFactor(order, False, f"A{m}")]
    if order > CAYLEY_LIMIT:
        raise GroupTooLargeError(
            f"composition factors of a primitive perfect group of degree {m} and order {order} (not A{m}) need "
            f"its Cayley table, limited to order CAYLEY_LIMIT = {CAYLEY_LIMIT}"
        )
    small = PermutationGroup(np.array([g.array_form for g in Q.generators], dtype=np.int64))
    return small._table_composition_factors(np.arange(small.order))


# ------------------------------------------------------------------ the group type


class PermutationGroup:
    """A finite permutation group given by generators (rows of a ``[k, n]`` int array), product ``a * b`` =
    apply ``a``, then ``b``.

    Table-free: :attr:`order`, :meth:`contains`, :meth:`derived_subgroups`, :meth:`is_solvable`,
    :meth:`is_abelian`, :meth:`composition_factors` (all without an argument). Table-based, for order
    $\\le$ :data:`CAYLEY_LIMIT`: :attr:`elements` (row 0 the identity), :attr:`table`, :attr:`inverse` and the
    methods on subgroups given as sorted element-index arrays ``H``."""

    def __init__(self, generators, *, _elements: np.ndarray | None = None):
        self.generators = _as_generators(generators)
        self.degree = int(self.generators.shape[1])
        if _elements is not None:
            self.__dict__["elements"] = _elements

    @classmethod
    def from_elements(cls, elements) -> PermutationGroup:
        """The group whose elements are the rows of ``elements`` (row 0 the identity), kept in that order;
        raises ``ValueError`` if they are not a group."""
        e = np.asarray(elements, dtype=np.int64)
        if e.ndim != 2 or e.shape[0] == 0:
            raise ValueError(
                f"elements must be a non-empty [N, n] array of permutations, got shape {e.shape}"
            )
        if not np.array_equal(np.sort(e, axis=1), np.broadcast_to(np.arange(e.shape[1]), e.shape)):
            raise ValueError("every element must be a permutation of range(n)")
        index = {row.tobytes(): i for i, row in enumerate(e)}
        if len(index) != len(e):
            raise ValueError("elements contain duplicates")
        if not np.array_equal(e[0], np.arange(e.shape[1])):
            raise ValueError("row 0 must be the identity permutation")
        # a few generators: each row not in the group of the previous ones; that group is grown breadth-first
        # inside the given elements (a product outside them: not closed, so not a group)
        gens = [e[0]]
        reached = np.zeros(len(e), dtype=bool)
        reached[0] = True
        for i in range(1, len(e)):
            if reached[i]:
                continue
            gens.append(e[i])
            reached[i] = True
            frontier = np.flatnonzero(reached)  # the old group: its products with the new generator are new
            while frontier.size:
                found = []
                for g in gens:
                    for row in g[e[frontier]]:  # x * g = apply x, then g
                        j = index.get(row.tobytes())
                        if j is None:
                            raise ValueError("elements are not closed under composition (not a group)")
                        if not reached[j]:
                            reached[j] = True
                            found.append(j)
                frontier = np.array(found, dtype=np.int64)
        out = cls(np.array(gens), _elements=e)
        out.__dict__["order"] = len(e)  # the group they generate is exactly the elements (closed, above)
        return out

    # -------------------------------------------------------------- table-free (BSGS)

    @cached_property
    def sympy(self):
        """The same group as a ``sympy.combinatorics.PermutationGroup`` (same product convention)."""
        from sympy.combinatorics import Permutation

        return _sympy_group([Permutation(row.tolist()) for row in self.generators])

    @cached_property
    def order(self) -> int:
        return int(self.sympy.order())

    def contains(self, perm) -> bool:
        """Membership by sifting through the stabiliser chain (the probe is checked in plain Python, then
        handed to sympy without a second validation)."""
        from sympy.combinatorics import Permutation

        p = perm.tolist() if isinstance(perm, np.ndarray) else list(perm)
        if len(p) != self.degree or sorted(p) != self._points:
            raise ValueError(f"expected a permutation of range({self.degree}), got {p}")
        return bool(self.sympy.contains(Permutation._af_new([int(x) for x in p])))

    @cached_property
    def _points(self) -> list[int]:
        return list(range(self.degree))

    def __contains__(self, perm) -> bool:
        return self.contains(perm)

    def derived_subgroups(self) -> list[PermutationGroup]:
        """The derived series $G \\ge G' \\ge G'' \\ge \\cdots$ until it stabilises, as groups (no table)."""
        return [_from_sympy(D, self.degree) for D in self._derived_series]

    @cached_property
    def _derived_series(self) -> list:
        return _derived_series(self.sympy)

    def is_abelian(self, H=None) -> bool:
        if H is None:
            g = self.generators
            return bool(all(np.array_equal(a[b], b[a]) for a in g for b in g))
        sub = self.table[np.ix_(np.asarray(H), np.asarray(H))]
        return bool(np.array_equal(sub, sub.T))

    def is_solvable(self, H=None) -> bool:
        if H is None:
            return int(self._derived_series[-1].order()) == 1
        return len(self.derived_series(H)[-1]) == 1

    def composition_factors(self, H=None) -> list[CompositionFactor]:
        """Composition factors, top first (Jordan-Hölder invariant). Without ``H``: from the BSGS (see the
        module docstring), any order; with ``H`` (element indices): from :meth:`composition_series`."""
        if H is None:
            return _factors(self.sympy)
        return self._table_composition_factors(np.asarray(H))

    # -------------------------------------------------------------- table-based (small groups)

    def _require_small(self, what: str) -> None:
        if self.order > CAYLEY_LIMIT:
            raise GroupTooLargeError(
                f"{what} of a group of order {self.order} is not built: the element list and Cayley table are "
                f"limited to order CAYLEY_LIMIT = {CAYLEY_LIMIT}. Use the table-free methods (order, contains, "
                "is_solvable(), composition_factors())."
            )

    @cached_property
    def elements(self) -> np.ndarray:
        """All elements, row 0 the identity (breadth first over the generators)."""
        self._require_small("the element list")
        return _closure_rows(self.generators)

    @cached_property
    def _index(self) -> dict:
        return {row.tobytes(): i for i, row in enumerate(self.elements)}

    def index(self, perm) -> int:
        """Index of a permutation in :attr:`elements`; ``KeyError`` if it is not in the group."""
        return self._index[np.asarray(perm, dtype=np.int64).tobytes()]

    def _codes(self, perms: np.ndarray) -> np.ndarray:
        """Injective integer codes of permutations (mixed radix when it fits in int64, else row bytes)."""
        n = self.degree
        if n <= 15:
            return perms @ (n ** np.arange(n, dtype=np.int64))
        return np.array([p.tobytes() for p in perms.reshape(-1, n)]).reshape(perms.shape[:-1])

    @cached_property
    def table(self) -> np.ndarray:
        """``table[a, b]`` = index of ``a * b`` (apply a, then b); checks closure."""
        self._require_small("the Cayley table")
        e = self.elements
        N = len(e)
        codes = self._codes(e)
        order = np.argsort(codes)
        tab = np.empty((N, N), dtype=np.int64)
        for a in range(N):
            c = self._codes(e[:, e[a]])  # row b: e[b][e[a]] = b o a
            pos = np.minimum(np.searchsorted(codes, c, sorter=order), N - 1)
            idx = order[pos]
            if not np.array_equal(codes[idx], c):
                raise ValueError("elements are not closed under composition (not a group)")
            tab[a] = idx
        return tab

    def compose(self, a: int, b: int) -> int:
        """Function composition $a \\circ b$ (apply ``b`` first) of element indices: ``table[b, a]``."""
        return int(self.table[b, a])

    def power(self, a: int, k: int) -> int:
        """Index of ``a`` to the power ``k >= 0``."""
        r = 0
        for _ in range(k):
            r = int(self.table[r, a])
        return r

    def element_order(self, a: int) -> int:
        k, r = 1, int(a)
        while r != 0:
            r = int(self.table[r, a])
            k += 1
        return k

    @cached_property
    def inverse(self) -> np.ndarray:
        return np.argmax(self.table == 0, axis=1)

    def closure(self, gens) -> np.ndarray:
        """The subgroup generated by element indices ``gens`` (sorted index array; ``[0]`` for no generators)."""
        gens = np.unique(np.asarray(gens, dtype=np.int64).reshape(-1))
        mask = np.zeros(self.order, dtype=bool)
        mask[0] = True
        frontier = np.array([0])
        while len(frontier):
            new = np.unique(self.table[np.ix_(frontier, gens)].reshape(-1)) if len(gens) else frontier[:0]
            new = new[~mask[new]]
            mask[new] = True
            frontier = new
        return np.flatnonzero(mask)

    def commutator_subgroup(self, H=None) -> np.ndarray:
        """$[H, H]$, generated by all commutators $a^{-1} b^{-1} a b$."""
        H = np.arange(self.order) if H is None else np.asarray(H)
        t, inv = self.table, self.inverse
        comm = t[t[inv[H][:, None], inv[H][None, :]], t[H[:, None], H[None, :]]]
        return self.closure(np.unique(comm))

    def derived_series(self, H=None) -> list[np.ndarray]:
        """$H \\ge H' \\ge H'' \\ge \\cdots$ as index arrays, until it stabilises (at $\\{e\\}$ iff $H$ is
        solvable). See :meth:`derived_subgroups` for groups too large for a table."""
        H = np.arange(self.order) if H is None else np.asarray(H)
        series = [H]
        while True:
            D = self.commutator_subgroup(series[-1])
            if len(D) == len(series[-1]):
                return series
            series.append(D)

    def normal_closure(self, X, H) -> np.ndarray:
        """Smallest normal subgroup of $H$ containing the elements ``X``."""
        H, X = np.asarray(H), np.asarray(X).reshape(-1)
        t, inv = self.table, self.inverse
        conj = t[t[inv[H][:, None], X[None, :]], H[:, None]]
        return self.closure(np.unique(conj))

    def conjugacy_classes(self, H=None) -> list[np.ndarray]:
        """Conjugacy classes of $H$ (under conjugation by $H$)."""
        H = np.arange(self.order) if H is None else np.asarray(H)
        t, inv = self.table, self.inverse
        conj = t[t[inv[H][:, None], H[None, :]], H[:, None]]  # conj[h, x] = h^-1 x h
        seen = np.zeros(self.order, dtype=bool)
        out = []
        for j, x in enumerate(H):
            if not seen[x]:
                cls = np.unique(conj[:, j])
                seen[cls] = True
                out.append(cls)
        return out

    def maximal_normal_subgroup(self, H=None) -> np.ndarray:
        """A maximal proper normal subgroup $M \\lhd H$ ($H/M$ simple), by greedy joins of normal closures.

        Greedy is enough: if $M \\vee \\langle x^H\\rangle \\in \\{M, H\\}$ for every $x \\in H$, any normal
        $K \\supsetneq M$ contains some $x \\notin M$, hence $K \\supseteq M \\vee \\langle x^H\\rangle = H$.
        The normal closure of $x$ is the subgroup generated by its conjugacy class.
        """
        H = np.arange(self.order) if H is None else np.asarray(H)
        if len(H) == 1:
            raise ValueError("the trivial group has no proper normal subgroup")
        classes = sorted(self.conjugacy_classes(H), key=len)
        M = np.array([0])
        changed = True
        while changed:
            changed = False
            for cls in classes:
                if np.isin(cls, M).all():
                    continue
                J = self.closure(np.concatenate([M, cls]))
                if len(J) < len(H):
                    M, changed = J, True
        return M

    def composition_series(self, H=None) -> list[np.ndarray]:
        """$H = H_n \\rhd H_{n-1} \\rhd \\cdots \\rhd H_0 = 1$ as index arrays, largest first; works for
        non-solvable groups (table-based: order $\\le$ :data:`CAYLEY_LIMIT`)."""
        H = np.arange(self.order) if H is None else np.asarray(H)
        series = [H]
        while len(series[-1]) > 1:
            series.append(self.maximal_normal_subgroup(series[-1]))
        return series

    def _table_composition_factors(self, H) -> list[CompositionFactor]:
        series = self.composition_series(H)
        out = []
        for big, small in zip(series[:-1], series[1:], strict=True):
            q = len(big) // len(small)
            # H_{i+1}/H_i is abelian iff [H_{i+1}, H_{i+1}] <= H_i
            abelian = bool(np.isin(self.commutator_subgroup(big), small).all())
            out.append(CompositionFactor(order=q, abelian=abelian))
        return out

    def subgroup_elements(self, H) -> np.ndarray:
        return self.elements[np.asarray(H)]

    def __repr__(self) -> str:
        return (
            f"PermutationGroup(degree={self.degree}, {len(self.generators)} generators, order={self.order})"
        )


def _from_sympy(G, degree: int) -> PermutationGroup:
    gens = [g.array_form + list(range(len(g.array_form), degree)) for g in G.generators]
    return PermutationGroup(np.array(gens, dtype=np.int64).reshape(-1, degree))


def permutation_group(generators, max_order: int | None = None) -> PermutationGroup:
    """The group generated by permutations ``generators`` (rows of an int array ``[k, n]``, or a list of
    equally long sequences). ``max_order``: raise ``ValueError`` if the order (computed without enumerating
    the group) exceeds it."""
    G = PermutationGroup(generators)
    if max_order is not None and G.order > max_order:
        raise ValueError(f"group order {G.order} exceeds max_order = {max_order}")
    return G
