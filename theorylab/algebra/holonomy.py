"""Krohn-Rhodes holonomy decomposition (Thm 15, after Zeiger / Eilenberg / Maler-Pnueli / Egri-Nagy-Nehaniv).

Notation: $P \\cdot s = \\{s(q) : q \\in P\\}$. The *skeleton* is $X = \\{Q\\} \\cup \\{\\mathrm{im}\\, s : s
\\in \\mathcal T(\\mathcal A)\\} \\cup \\{\\{q\\} : q \\in Q\\}$, closed under the action. Subduction: $P \\le
R$ iff $P \\subseteq R \\cdot s$ for some $s \\in \\mathcal T^1$; $P \\sim R$ iff both ways. Heights:
$h(\\{q\\}) = 0$, $h(P) = 1 + \\max\\{h(R) : R < P\\}$. The *tiles* of $P$ are the maximal elements of $X$
strictly inside $P$. Level $\\ell = 1..H$ ($H = h(Q)$, top level first) handles height $H - \\ell + 1$: it has
one permutation-reset component per $\\sim$-class of that height, whose states are the tiles of the class
representative $\\hat P$ and whose permutation group is the holonomy group of $\\hat P$ (a group divisor of
$\\mathcal T(\\mathcal A)$, so solvable whenever $\\mathcal A$ is).

A cascade state $x$ (one coordinate per component) encodes a chain $Q = P_0 \\supsetneq \\cdots$ of tiles: at
level $\\ell$, if $h(P_{\\ell-1}) = H - \\ell + 1$, the coordinate of its class's component picks the tile
$P_\\ell = \\hat T_{x} \\cdot u$ (where $\\hat P \\cdot u = P_{\\ell-1}$), otherwise $P_\\ell = P_{\\ell-1}$;
the chain ends in a singleton $\\{q\\}$ and ``decode(x) = q``. Inactive components sit at state 0.

**Cascade convention (Def 6, previous states).** Component $c$ at level $\\ell$ reads the symbol and the
*previous* states of all components at levels $< \\ell$: $x^{(c)}_t = \\delta_c\\big(x^{(c)}_{t-1},
\\phi_c(x^{(<\\ell)}_{t-1}, \\sigma_t)\\big)$. It cannot read the current states $x^{(<\\ell)}_t$ instead:
after a reset they have forgotten which tile the old chain went through.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from theorylab.algebra.cascade import Cascade, CascadeComponent, HolonomyCascade, reachable_states
from theorylab.algebra.semiautomaton import Semiautomaton
from theorylab.algebra.semigroup import _require_aut, transformation_semigroup
from theorylab.caching import MemoCache

__all__ = ["CascadeComponent", "HolonomyCascade", "holonomy_decomposition"]


def _mask(states) -> int:
    m = 0
    for q in states:
        m |= 1 << int(q)
    return m


def _members(mask: int) -> tuple[int, ...]:
    out = []
    while mask:
        low = mask & -mask
        out.append(low.bit_length() - 1)
        mask ^= low
    return tuple(out)


def _act(mask: int, f) -> int:
    """$P \\cdot f$ for a set given as a bit mask and a map given as a sequence."""
    m = 0
    for q in _members(mask):
        m |= 1 << int(f[q])
    return m


def _memo_act(f):
    """``P -> P . f`` on bit masks, memoised (the cascade's transitions act on few distinct sets)."""
    memo: dict[int, int] = {}

    def act(mask: int) -> int:
        out = memo.get(mask)
        if out is None:
            out = memo[mask] = _act(mask, f)
        return out

    return act


def _image_masks(elements: np.ndarray) -> list[int]:
    """The distinct images $\\mathrm{im}\\, s$ of the rows as bit masks, in one vectorised step."""
    n = elements.shape[1]
    if n < 63:
        masks = np.bitwise_or.reduce(np.left_shift(np.int64(1), elements), axis=1)
        return np.unique(masks).tolist()
    return sorted({_mask(np.unique(e)) for e in elements})  # wider than an int64 mask


class _Skeleton:
    """Images, subduction, heights, classes, tiles of a transformation semigroup."""

    def __init__(self, aut: Semiautomaton):
        self.aut = aut
        n = aut.n_states
        S = transformation_semigroup(aut)
        full = (1 << n) - 1
        sets = {full} | {1 << q for q in range(n)} | set(_image_masks(S.elements))
        self.X = sorted(sets, key=lambda m: (-bin(m).count("1"), m))
        self.inX = set(self.X)
        self.gens = [aut.delta[s] for s in range(aut.n_symbols)]
        self.acts = [_memo_act(g) for g in self.gens]  # P -> P . g, memoised per symbol
        # orbits: for each P, the sets P.s (s in T^1) with a transformation realising them
        self.orbit: dict[int, dict[int, np.ndarray]] = {}
        ident = np.arange(n, dtype=np.int64)
        for P in self.X:
            orb = {P: ident}
            frontier = [P]
            while frontier:
                new = []
                for R in frontier:
                    for g, act in zip(self.gens, self.acts, strict=True):
                        Rg = act(R)
                        if Rg not in orb:
                            orb[Rg] = g[orb[R]]  # word of R, then g
                            new.append(Rg)
                frontier = new
            self.orbit[P] = orb
        # equivalence classes, representatives (smallest mask)
        self.rep: dict[int, int] = {}
        for P in self.X:
            if P in self.rep:
                continue
            cls = [R for R in self.orbit[P] if P in self.orbit[R]]
            r = min(cls)
            for R in cls:
                self.rep[R] = r
        # heights, by memoised recursion over the strict subduction order (a strict order on classes)
        self.height: dict[int, int] = {}
        below = {P: self._below(P) for P in self.X}

        def height(P: int) -> int:
            if P not in self.height:
                self.height[P] = 0 if P & (P - 1) == 0 else 1 + max(height(R) for R in below[P])
            return self.height[P]

        for P in sorted(self.X, key=lambda m: bin(m).count("1")):
            height(P)
        # tiles of every non-singleton set; for P ~ rep, tiles(P) = tiles(rep) . u_P in rep's order
        self.tiles: dict[int, list[int]] = {}
        for P in self.X:
            if P & (P - 1) == 0:
                continue
            inside = [R for R in self.X if R != P and R & ~P == 0]
            self.tiles[P] = sorted(R for R in inside if not any(R != U and R & ~U == 0 for U in inside))
        self.tiles_rel: dict[int, list[int]] = {}
        for P in self.tiles:
            r = self.rep[P]
            u = self.orbit[r][P]
            mapped = [_act(T, u) for T in self.tiles[r]]
            assert sorted(mapped) == self.tiles[P], "tiles of equivalent sets must correspond"
            self.tiles_rel[P] = mapped

    def _below(self, P: int) -> list[int]:
        """The sets strictly below ``P`` in subduction: inside some ``P . s`` and not equivalent to ``P``."""
        if self.aut.n_states >= 63:
            return [
                R for R in self.X if self.rep[R] != self.rep[P] and any(R & ~B == 0 for B in self.orbit[P])
            ]
        X = self._X_array
        images = np.fromiter(self.orbit[P], dtype=np.int64)
        inside = ((X[:, None] & ~images[None, :]) == 0).any(axis=1)
        return [R for R, ok in zip(self.X, inside.tolist(), strict=True) if ok and self.rep[R] != self.rep[P]]

    @property
    def _X_array(self) -> np.ndarray:
        if "_X_np" not in self.__dict__:
            self._X_np = np.array(self.X, dtype=np.int64)
        return self._X_np


_CACHE: MemoCache[Cascade] = MemoCache("algebra.holonomy_decomposition", 128)


def holonomy_decomposition(aut: Semiautomaton) -> Cascade:
    """Krohn-Rhodes cascade of permutation-reset components emulating ``aut`` (Thm 15), built by holonomy.

    Exact and exhaustive: the reachable cascade state space is enumerated and every transition is checked to
    commute with ``decode``. Levels $\\le |Q| - 1$; components $\\le 2^{|Q|}$ (one per $\\sim$-class).
    Results are cached per transition table (arrays read-only), so repeated calls on the same automaton are free.
    """
    aut = _require_aut(aut)
    key = (aut.delta.shape, aut.delta.tobytes())
    hit = _CACHE.get(key)
    if hit is None:
        hit = _holonomy(aut)
        for a in (hit.states, hit.decode_table, hit.transition, hit.inputs, hit.initial_index):
            a.setflags(write=False)
        _CACHE.put(key, hit)
    return hit if hit.automaton is aut else dataclasses.replace(hit, automaton=aut)


def _holonomy(aut: Semiautomaton) -> Cascade:
    sk = _Skeleton(aut)
    full = (1 << aut.n_states) - 1
    H = sk.height[full]
    # components: (level, class rep), top level first, reps in mask order
    comp_keys = []
    for lv in range(1, H + 1):
        h = H - lv + 1
        reps = sorted({sk.rep[P] for P in sk.X if sk.height[P] == h and sk.rep[P] == P})
        comp_keys += [(lv, r) for r in reps]
    comp_of = {r: i for i, (_, r) in enumerate(comp_keys)}
    C = len(comp_keys)

    def chain(x) -> list[int]:
        sets, P = [full], full
        for lv in range(1, H + 1):
            if sk.height[P] == H - lv + 1:
                P = sk.tiles_rel[P][x[comp_of[sk.rep[P]]]]
            sets.append(P)
        return sets

    def encode(q: int) -> tuple:
        x, P = [0] * C, full
        for lv in range(1, H + 1):
            if sk.height[P] == H - lv + 1:
                c = comp_of[sk.rep[P]]
                x[c] = next(i for i, T in enumerate(sk.tiles_rel[P]) if T >> q & 1)
                P = sk.tiles_rel[P][x[c]]
        return tuple(x)

    idle = tuple((0,) * len(sk.tiles[r]) for _, r in comp_keys)  # inputs of the components not acting
    moves: dict[tuple, tuple] = {}

    def move(A: int, B: int, s: int, h: int) -> tuple:
        """Input of the component at ``B`` when the chain passes through ``A`` and reads ``s``: a permutation
        of the tiles (with the component whose coordinate it permutes) or a reset (``None``)."""
        key = (A, B, s)
        if key not in moves:
            act, tilesB = sk.acts[s], sk.tiles_rel[B]
            As = act(A)
            if sk.height[A] == h and As == B:  # permutation of tiles
                moves[key] = (tuple(tilesB.index(act(T)) for T in sk.tiles_rel[A]), comp_of[sk.rep[A]])
            else:  # reset to the first tile containing A.s
                assert As != B and As & ~B == 0
                y = next(i for i, T in enumerate(tilesB) if As & ~T == 0)
                moves[key] = ((y,) * len(tilesB), None)
        return moves[key]

    def step(x: tuple, s: int):
        """Successor coordinates and, per component, its input transformation (a tuple over its states)."""
        old = chain(x)
        new_x, trans = [0] * C, list(idle)
        B = full
        for lv in range(1, H + 1):
            h = H - lv + 1
            if sk.height[B] == h:
                active = comp_of[sk.rep[B]]
                t, src = move(old[lv - 1], B, s, h)
                trans[active] = t
                new_x[active] = t[0] if src is None else t[x[src]]
                B = sk.tiles_rel[B][new_x[active]]
        return tuple(new_x), trans

    # BFS over reachable cascade states
    starts = [encode(q) for q in range(aut.n_states)]
    order, transition, trans_all = reachable_states(starts, aut.n_symbols, step)
    R = len(order)
    states = np.array(order, dtype=np.int64).reshape(R, C)
    decode_table = np.array([_members(chain(x)[-1])[0] for x in order], dtype=np.int64)
    # exhaustive commutation check: decode(step(x, s)) == delta(decode(x), s)
    if not np.array_equal(decode_table[transition], aut.delta.T[decode_table]):
        raise AssertionError("holonomy cascade does not commute with the automaton (construction bug)")
    # component alphabets: distinct input transformations, in order of first use
    alphabets = [dict() for _ in range(C)]
    inputs = np.empty((R, aut.n_symbols, C), dtype=np.int64)
    for r in range(R):
        for s in range(aut.n_symbols):
            for c in range(C):
                inputs[r, s, c] = alphabets[c].setdefault(trans_all[r][s][c], len(alphabets[c]))
    components = []
    for c, (lv, rep) in enumerate(comp_keys):
        delta = np.array(list(alphabets[c]), dtype=np.int64).reshape(-1, len(sk.tiles[rep]))
        tiles = tuple(frozenset(_members(T)) for T in sk.tiles[rep])
        sa = _semiautomaton(delta, tiles, f"{aut.name or 'A'}[level {lv}, {sorted(_members(rep))}]")
        components.append(
            CascadeComponent(
                level=lv, semiautomaton=sa, height=H - lv + 1, rep=frozenset(_members(rep)), tiles=tiles
            )
        )
    index = {x: r for r, x in enumerate(order)}
    initial = np.array([index[x] for x in starts], dtype=np.int64)
    return Cascade(aut, tuple(components), states, decode_table, transition, inputs, initial)


def _semiautomaton(delta, labels, name):
    return Semiautomaton(delta, state_labels=labels, name=name)
