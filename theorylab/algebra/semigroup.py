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
import functools
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property

import numpy as np

from theorylab.algebra.groups import CompositionFactor, PermutationGroup
from theorylab.algebra.semiautomaton import Semiautomaton
from theorylab.caching import MemoCache

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


def _require_aut(aut) -> Semiautomaton:
    """A :class:`Semiautomaton`, or a transition table ``delta[symbol, state]`` (a 2-D integer array, or
    nested lists) made into one."""
    if isinstance(aut, Semiautomaton):
        return aut
    if isinstance(aut, np.ndarray) or (
        isinstance(aut, (list, tuple)) and len(aut) and hasattr(aut[0], "__len__")
    ):
        return Semiautomaton(np.asarray(aut))
    raise TypeError(
        f"expected a Semiautomaton or a transition table delta[symbol, state], got {type(aut).__name__}"
    )


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


def transformation_semigroup(
    aut: Semiautomaton, max_size: int = MAX_SIZE, backend: str = "theorylab"
) -> TransformationSemigroup:
    """Enumerate $\\mathcal T(\\mathcal A)$ breadth first over words (Froidure-Pin style right Cayley graph).

    Cost O(|T| |Σ| |Q|); raises ``ValueError`` past ``max_size`` elements. Cached per transition table (arrays
    read-only). ``backend="libsemigroups"`` lets libsemigroups' FroidurePin enumerate (optional extra
    ``semigroups``; the same object, element for element) -- slower end to end, because reading its Cayley
    graph and factorisations back into Python costs more than the whole numpy enumeration (see
    ``benchmarks/README.md``), so the default is theorylab's own.
    """
    aut = _require_aut(aut)
    if backend not in ("theorylab", "libsemigroups"):
        raise ValueError(f"backend must be 'theorylab' or 'libsemigroups', got {backend!r}")
    key = (aut.delta.shape, aut.delta.tobytes(), backend)
    hit = _CACHE.get(key)
    if hit is None or hit.size > max_size:
        hit = (_enumerate if backend == "theorylab" else _enumerate_libsemigroups)(aut, max_size)
        hit.elements.setflags(write=False)
        hit.right.setflags(write=False)
        _CACHE.put(key, hit)
    return hit if hit.automaton is aut else dataclasses.replace(hit, automaton=aut)


_CACHE: MemoCache[TransformationSemigroup] = MemoCache("algebra.transformation_semigroup", 128)


def _enumerate(aut, max_size: int) -> TransformationSemigroup:
    """Breadth first in short-lex order (the order of a queue): level by level in plain Python
    (:func:`_enumerate_small`, exact keys: the transformations as byte strings) until a level has
    :data:`_VECTOR_FROM` products or more, from then on a whole level per numpy step
    (:func:`_enumerate_levels`). Semiautomata of more than :data:`_MAX_CODE_STATES` states stay in plain
    Python (no exact integer code; measured no slower there, ``benchmarks/README.md``)."""
    d = np.ascontiguousarray(aut.delta, dtype=np.int64)
    k, n = d.shape
    switch = _VECTOR_FROM if n <= _MAX_CODE_STATES else None
    rows, parents, symbols, right = _enumerate_small(d, max_size, switch)
    elements = _rows_array(rows, n)
    right, parents, symbols = (np.array(x, dtype=np.int64) for x in (right, parents, symbols))
    if len(right) < len(elements) * k:
        head = (right, parents, symbols)
        elements, right, parents, symbols = _enumerate_levels(d, elements, len(right) // k, max_size, head)
    return TransformationSemigroup(aut, elements, right.reshape(-1, k), Words(parents, symbols))


def _enumerate_levels(d: np.ndarray, elements: np.ndarray, done: int, max_size: int, head: tuple) -> tuple:
    """The queue continued one whole level per numpy step from ``elements`` (the first ``done`` multiplied,
    the rest the last level; ``head``: their flat right Cayley graph, parents and symbols), on mixed-radix
    integer codes (injective up to :data:`_MAX_CODE_STATES` states): the products ``g_s o f`` of every
    frontier element ``f`` and symbol ``s`` (in the order ``(f, s)``) are table look-ups (:class:`_Codes`);
    unseen codes become new elements in order of first occurrence. A level sorts, looks up, numbers and writes
    its Cayley graph rows; the elements (decoded), parents and symbols of the whole semigroup, ``head``
    included, are built in one pass at the end."""
    k, n = d.shape
    coder = _Codes(d)
    free_bits = 62 - (n**n).bit_length()  # below every code: room for this many bits in an int64
    index = _DirectIndex(n**n) if n**n <= _DIRECT_LIMIT else _SortedIndex()
    codes = elements @ coder.radix
    order = np.argsort(codes)
    index.insert(codes[order], order)
    chunks = coder.split(codes)
    size, frontier = len(elements), [c[done:] for c in chunks]
    # per level: its right Cayley graph rows; parent * k + symbol and chunks of its new elements (generator:
    # -k + s)
    rights, fresh_, chunks_ = [head[0]], [head[1] * k + head[2]], [chunks]
    positions = np.arange(len(frontier[0]) * k)  # 0, 1, ... at least as long as any level so far
    while len(frontier[0]):
        base = size - len(frontier[0])  # the frontier is the last level: elements base..size-1
        prods = coder.products(frontier)
        codes = coder.code(prods)  # position f*k + s
        mk = len(codes)
        if len(positions) < mk:
            positions = np.arange(2 * mk)
        bits = mk.bit_length()
        if bits <= free_bits:  # one plain sort of (code, position) pairs packed in one int64
            key = codes << bits
            key |= positions[:mk]
            key.sort()
            srt, order = key >> bits, key & ((1 << bits) - 1)
        else:
            order = np.argsort(codes, kind="stable")  # equal codes: first occurrence first
            srt = codes[order]
        starts = np.empty(mk, dtype=bool)  # the first of each run of equal codes
        starts[0] = True
        np.not_equal(srt[1:], srt[:-1], out=starts[1:])
        heads = starts.nonzero()[0]
        uniq = srt.take(heads)
        idx_u = index.lookup(uniq)
        new = (idx_u < 0).nonzero()[0]
        if len(new):
            if size + len(new) > max_size:
                raise ValueError(f"transformation semigroup has more than {max_size} elements")
            first_new = order.take(heads.take(new))  # the first position of each unseen code
            by_first = first_new.argsort()
            idx_u[new.take(by_first)] = np.arange(size, size + len(new))  # numbered by first occurrence
            index.insert(uniq.take(new), idx_u.take(new))  # keys ascending
            fresh = first_new.take(by_first)
            fresh_.append(fresh + base * k)  # = parent * k + symbol
            frontier = [p.take(fresh) for p in prods]
            chunks_.append(frontier)
            size += len(new)
        else:
            frontier = [c[:0] for c in frontier]
        run = starts.cumsum()
        run -= 1
        idx = np.empty(mk, dtype=np.int64)
        idx[order] = idx_u.take(run)
        rights.append(idx)
    parents, symbols = np.divmod(np.concatenate(fresh_), k)
    chunks = [np.concatenate(c) for c in zip(*chunks_, strict=True)]
    return coder.decode(chunks), np.concatenate(rights), parents, symbols


_MAX_CODE_STATES = 15  # n**n < 2**63: a transformation of up to 15 points is one int64 code
_DIRECT_LIMIT = 1 << 20  # up to 7 points (7**7 codes) the index is a direct-address array
_VECTOR_FROM = 256  # products per level from which a whole level is one numpy step
_TABLE_ENTRIES = 1 << 15  # product table entries (rows x symbols) per chunk of a code, at most


class _Codes:
    """Transformations of ``n`` points as base-``n`` integer codes (``f(0)`` the most significant digit), cut
    into chunks of ``c`` digits or fewer (:func:`_chunk_sizes`, high to low). A symbol acts digit by digit, so
    a product is a sum of look-ups, one per chunk of ``f``: $\\mathrm{code}(g_s \\circ f) = \\sum_j n^{e_j}
    T^{(c_j)}[\\mathrm{chunk}_j(f), s]$, with $T^{(c)}[x, s]$ the code of $g_s$ applied to the digits of the
    $c$-digit $x$ and $e_j$ the chunk's lowest place."""

    def __init__(self, d: np.ndarray):
        k, n = d.shape
        self.n, sizes = n, _chunk_sizes(n, k)
        ends = np.cumsum((0,) + sizes).tolist()
        self.spans = list(zip(ends[:-1], ends[1:], strict=True))  # digit columns of each chunk
        self.places = [n ** (n - b) for _, b in self.spans]
        by_symbol = {1: d}  # T^(c) transposed, [s, x]: T^(1)[s, q] = g_s(q)
        tables = {c: np.stack(list(_product_table(by_symbol, c, n)), axis=1) for c in set(sizes)}
        self.tables = [tables[c] for c in sizes]  # C order [x, s]: rows gathered whole (stacking transposes)
        self.radix = n ** np.arange(n - 1, -1, -1, dtype=np.int64)

    def products(self, chunks: list[np.ndarray]) -> list[np.ndarray]:
        """The chunks of ``g_s o f`` for every ``f`` of ``chunks`` and symbol ``s``, flat at ``f*k + s``."""
        return [
            table.take(chunk, axis=0).reshape(-1) for table, chunk in zip(self.tables, chunks, strict=True)
        ]

    def code(self, chunks: list[np.ndarray]) -> np.ndarray:
        """The whole codes of chunks."""
        out = chunks[-1]
        for chunk, place in zip(chunks[:-1], self.places[:-1], strict=True):
            out = chunk * place + out
        return out

    def split(self, codes: np.ndarray) -> list[np.ndarray]:
        """The chunks of ``codes`` (high to low)."""
        out = []
        for a, b in self.spans[:0:-1]:  # peeled off from the low end
            high = codes // self.n ** (b - a)
            out.append(codes - high * self.n ** (b - a))
            codes = high
        return [codes, *out[::-1]]

    def decode(self, chunks: list[np.ndarray]) -> np.ndarray:
        """The transformations ``[len, n]`` (int64) of ``chunks``: one row look-up per chunk (bytes: a state
        of at most 15 points fits one; small temporaries), widened once."""
        out = _placed_digits(self.n, *self.spans[0]).take(chunks[0], axis=0)
        for (a, b), chunk in zip(self.spans[1:], chunks[1:], strict=True):
            out += _placed_digits(self.n, a, b).take(chunk, axis=0)
        return out.astype(np.int64)


def _product_table(by_symbol: dict, c: int, n: int) -> np.ndarray:
    """$T^{(c)}$ transposed (``[s, x]``) into ``by_symbol`` (which holds $T^{(1)}$), by halving:
    $T^{(a+b)}[x n^b + y] = T^{(a)}[x] n^b + T^{(b)}[y]$."""
    if c not in by_symbol:
        a, b = c - c // 2, c // 2
        high, low = _product_table(by_symbol, a, n), _product_table(by_symbol, b, n)
        by_symbol[c] = (high[:, :, None] * n**b + low[:, None, :]).reshape(len(high), -1)
    return by_symbol[c]


@functools.lru_cache(maxsize=32)
def _placed_digits(n: int, a: int, b: int) -> np.ndarray:
    """``out[x]``: a row of ``n`` states, zero but for the ``b - a`` base-``n`` digits of ``x`` (most
    significant first) in columns ``a..b-1``; ``x < n**(b-a)``."""
    c = b - a
    out = np.zeros((n**c, n), dtype=np.uint8)
    out[:, a:b] = np.indices((n,) * c, dtype=np.uint8).reshape(c, -1).T
    out.setflags(write=False)
    return out


def _chunk_sizes(n: int, k: int) -> tuple[int, ...]:
    """Digits per chunk of a code (high to low, as equal as possible): the fewest chunks whose product tables
    have at most :data:`_TABLE_ENTRIES` entries each (``k * n**c``)."""
    c = n
    while c > 1 and k * n**c > _TABLE_ENTRIES:
        c -= 1
    parts = -(-n // c)
    q, r = divmod(n, parts)
    return (q + 1,) * r + (q,) * (parts - r)


class _DirectIndex:
    """Code -> element index as a direct-address array (``-1``: unseen)."""

    def __init__(self, n_codes: int):
        self.table = np.full(n_codes, -1, dtype=np.int64)

    def lookup(self, codes: np.ndarray) -> np.ndarray:
        return self.table[codes]

    def insert(self, codes: np.ndarray, idx: np.ndarray) -> None:
        self.table[codes] = idx


class _SortedIndex:
    """Code -> element index as sorted code arrays searched by ``np.searchsorted``: a large tier and a small
    one that takes the inserts and is merged into the large one when it reaches a quarter of its size (so
    each code is moved O(log N) times)."""

    def __init__(self):
        self.tiers: list[tuple] = []  # (ascending codes, their indices): the large tier, then the small one

    def lookup(self, codes: np.ndarray) -> np.ndarray:
        """``codes`` ascending (fast searches); ``-1`` where unseen."""
        out = -1
        for keys, vals in self.tiers:
            pos = keys.searchsorted(codes)  # past the end: clipped to the last key, a miss
            out = np.where(keys.take(pos, mode="clip") == codes, vals.take(pos, mode="clip"), out)
        return out if isinstance(out, np.ndarray) else np.full(len(codes), -1, dtype=np.int64)

    def insert(self, codes: np.ndarray, idx: np.ndarray) -> None:
        """``codes`` ascending and unseen."""
        tier = (codes, idx)
        if len(self.tiers) == 2:
            tier = _merge(self.tiers.pop(), tier)
        if self.tiers and 4 * len(tier[0]) >= len(self.tiers[0][0]):
            tier = _merge(self.tiers.pop(), tier)
        self.tiers.append(tier)


def _merge(a: tuple, b: tuple) -> tuple:
    """Two (ascending keys, values) pairs merged into one (a stable sort of two sorted runs: linear)."""
    keys = np.concatenate([a[0], b[0]])
    order = np.argsort(keys, kind="stable")
    return keys[order], np.concatenate([a[1], b[1]])[order]


def _enumerate_libsemigroups(aut, max_size: int) -> TransformationSemigroup:
    """The same enumeration by libsemigroups' FroidurePin (short-lex order too; its product ``x * y`` applies
    ``x`` first, as ``right`` does): the right Cayley graph and each element's prefix and final letter are read
    back, the elements rebuilt from them level by level."""
    import libsemigroups_pybind11 as ls

    d = np.ascontiguousarray(aut.delta, dtype=np.int64)
    guard = ls.ReportGuard(False)  # silences progress reports while alive
    fp = ls.FroidurePin([ls.Transf(row) for row in d.tolist()])
    fp.run_until(lambda: fp.current_size() > max_size)
    if fp.current_size() > max_size:
        raise ValueError(f"transformation semigroup has more than {max_size} elements")
    size = fp.size()
    del guard
    graph = fp.right_cayley_graph()
    right = np.array([list(graph.targets(i)) for i in range(size)], dtype=np.int64).reshape(size, -1)
    parent = np.array([fp.prefix(i) for i in range(size)], dtype=np.int64)
    symbol = np.array([fp.final_letter(i) for i in range(size)], dtype=np.int64)
    parent[(parent < 0) | (parent >= size)] = -1  # generators: prefix UNDEFINED
    elements = np.empty((size, d.shape[1]), dtype=np.int64)
    done = parent < 0
    elements[done] = d[symbol[done]]
    while not done.all():  # parents precede children: one word length per pass
        ready = ~done & done[np.maximum(parent, 0)]
        elements[ready] = np.take_along_axis(d[symbol[ready]], elements[parent[ready]], axis=1)
        done |= ready
    return TransformationSemigroup(aut, elements, right, Words(parent, symbol))


def _byte_dtype(n: int) -> np.dtype:
    """The unsigned integer type of one state of ``n`` (one byte up to 256 states)."""
    return np.dtype(np.uint8 if n <= 1 << 8 else np.uint16 if n <= 1 << 16 else np.uint32)


def _rows_array(rows: list[bytes], n: int) -> np.ndarray:
    """Transformations stored as byte strings (:func:`_enumerate_small`) as an ``int64`` array ``[len, n]``."""
    return np.frombuffer(b"".join(rows), dtype=_byte_dtype(n)).reshape(len(rows), n).astype(np.int64)


def _level_products(d: np.ndarray, tables: list, level: list[bytes], s: int) -> list[bytes]:
    """``g_s o f`` for every ``f`` of ``level`` (byte strings): one ``bytes.translate`` each up to 256 states
    (``tables[s]`` maps byte ``q`` to ``g_s(q)``), beyond one numpy gather for the whole level."""
    if tables:
        t = tables[s]
        return [f.translate(t) for f in level]
    dt = _byte_dtype(d.shape[1])
    w = dt.itemsize * d.shape[1]
    flat = d[s].astype(dt)[np.frombuffer(b"".join(level), dtype=dt)].tobytes()
    return [flat[i : i + w] for i in range(0, len(flat), w)]


def _enumerate_small(d: np.ndarray, max_size: int, switch: int | None = None) -> tuple[list, ...]:
    """The queue in plain Python, one breadth-first level at a time: ``(rows, parents, symbols, right)`` with
    transformations as byte strings (``rows``; keys of one dict from transformation to index) and ``right`` the
    flat right Cayley graph (position ``f*k + s``) of the processed elements. A level's products, in the
    queue's order ``(f, s)``, go through dicts in C (the first position of each distinct product, then the
    index); Python visits only the distinct products, numbering the unseen ones by first position. With
    ``switch``, stops before the first level of ``>= switch`` products (the rest of ``rows`` is that level)."""
    k, n = d.shape
    dt = _byte_dtype(n)
    tables = [bytes(row) + bytes(256 - n) for row in d.tolist()] if dt.itemsize == 1 else []
    index: dict[bytes, int] = {}
    rows: list[bytes] = []
    parents: list[int] = []
    symbols: list[int] = []
    right: list[int] = []
    for s, g in enumerate(d.astype(dt)):
        g = g.tobytes()
        if g not in index:
            index[g] = len(rows)
            rows.append(g)
            parents.append(-1)
            symbols.append(s)
    start = 0
    while start < len(rows):
        if len(rows) > max_size:
            raise ValueError(f"transformation semigroup has more than {max_size} elements")
        level = rows[start:]  # the last level: every element not yet multiplied
        m = len(level)
        if switch is not None and m * k >= switch:
            break
        prods: list = [None] * (m * k)
        for s in range(k):
            prods[s::k] = _level_products(d, tables, level, s)
        first = dict(zip(reversed(prods), range(m * k - 1, -1, -1), strict=True))  # product -> first position
        fresh = sorted([p for h, p in first.items() if h not in index])  # unseen, in the queue's order (f, s)
        if fresh:
            new = [prods[p] for p in fresh]
            index.update(zip(new, range(len(rows), len(rows) + len(new)), strict=True))
            rows += new
            parents += [start + p // k for p in fresh]
            symbols += [p % k for p in fresh]
        out = list(map(index.__getitem__, prods))
        right += out
        start += m
    return rows, parents, symbols, right


class Words(Sequence):
    """The shortest (short-lex least) words of the elements, built on demand from the breadth-first tree:
    element ``i`` is element ``parent[i]`` followed by symbol ``symbol[i]`` (``parent[i] = -1``: a generator)."""

    def __init__(self, parent: np.ndarray, symbol: np.ndarray):
        self.parent, self.symbol = parent, symbol

    def __len__(self) -> int:
        return len(self.parent)

    def __getitem__(self, i):
        if isinstance(i, slice):
            return self._all[i]
        if "_all" in self.__dict__:
            return self._all[i]
        i = range(len(self))[i]  # bounds and negative indices
        out = []
        while i >= 0:
            out.append(int(self.symbol[i]))
            i = int(self.parent[i])
        return tuple(reversed(out))

    @cached_property
    def _all(self) -> tuple:
        out: list[tuple] = []
        for p, s in zip(self.parent.tolist(), self.symbol.tolist(), strict=True):  # parents come first
            out.append((s,) if p < 0 else out[p] + (s,))
        return tuple(out)

    def __iter__(self):
        return iter(self._all)

    def __eq__(self, other) -> bool:
        return isinstance(other, Sequence) and len(other) == len(self) and tuple(self) == tuple(other)

    def __repr__(self) -> str:
        return f"Words({len(self)} words)"


def semigroup_size(aut: Semiautomaton, backend: str = "auto") -> int:
    """$|\\mathcal T(\\mathcal A)|$. ``backend``: ``"theorylab"`` (:func:`transformation_semigroup`),
    ``"libsemigroups"`` (Froidure-Pin in C++, optional package ``libsemigroups_pybind11``; the size alone needs
    nothing read back; see ``benchmarks/README.md``) or ``"auto"`` (libsemigroups when installed)."""
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
    if not isinstance(S, TransformationSemigroup):
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
    if isinstance(aut, Semiautomaton):
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
