"""The semiautomata of the thesis's examples and experiments (Liu, Ch. 3.3-3.4), with explicit generator sets.

Group tasks follow the thesis's canonical group semiautomaton (Def 9): states are the group elements (state 0
is the identity), symbols are generators, and $\\delta(g, h) = h \\cdot g$ (left multiplication), so the state
after $\\sigma_{1:t}$ is $\\sigma_t \\cdots \\sigma_1$. Permutations are int arrays ``p`` with ``p[i]`` the
image of ``i``; $h \\circ g$ is ``h[g]``. ``side="right"`` ($\\delta(g, h) = g \\cdot h$, state $\\sigma_1
\\cdots \\sigma_t$) gives the convention of the authors' HF dataset script (:mod:`theorylab.automata.hf`).
Where the thesis leaves the generators unspecified the choice is stated in the docstring.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence

import numpy as np

from theorylab.automata.semiautomaton import Semiautomaton

__all__ = [
    "parity",
    "cyclic",
    "dihedral",
    "quaternion",
    "symmetric",
    "alternating",
    "flipflop",
    "memory",
    "gridworld",
    "dyck",
    "random",
    "group_semiautomaton",
    "check_side",
    "sample_valid",
    "standard",
]


def _check_int(v, what: str, lo: int) -> int:
    if isinstance(v, bool) or not isinstance(v, (int, np.integer)):
        raise TypeError(f"{what} must be an int, got {type(v).__name__}")
    if v < lo:
        raise ValueError(f"{what} must be >= {lo}, got {v}")
    return int(v)


def check_side(side) -> str:
    """``side`` as ``"left"`` (Def 9: $\\delta(g, h) = h g$) or ``"right"`` ($\\delta(g, h) = g h$), else
    ``ValueError``."""
    if side not in ("left", "right"):
        raise ValueError(f'side must be "left" (Def 9, state sigma_t...sigma_1) or "right", got {side!r}')
    return side


def group_semiautomaton(
    generators: Sequence[Sequence[int]], name: str = "", gen_labels=None, side: str = "left"
) -> Semiautomaton:
    """Canonical semiautomaton of the permutation group $G = \\langle$ ``generators`` $\\rangle$ (Def 9).

    States are the elements of $G$ as permutations, sorted lexicographically (so the identity is state 0);
    symbol $i$ maps state $g$ to ``generators[i] ∘ g`` (``side="left"``, Def 9: the state after $\\sigma_{1:t}$
    is $\\sigma_t \\cdots \\sigma_1$) or to ``g ∘ generators[i]`` (``side="right"``: $\\sigma_1 \\cdots
    \\sigma_t$, the convention of the HF automata dataset script, see :mod:`theorylab.automata.hf`).
    ``state_labels`` are the permutations as tuples.
    """
    side = check_side(side)
    gens = [tuple(int(x) for x in g) for g in generators]
    if not gens:
        raise ValueError("a group semiautomaton needs at least one generator")
    n = len(gens[0])
    for g in gens:
        if len(g) != n or sorted(g) != list(range(n)):
            raise ValueError(f"generator {g} is not a permutation of range({n})")
    ident = tuple(range(n))
    seen, frontier = {ident}, [ident]
    while frontier:
        new = []
        for g in frontier:
            for h in gens:
                hg = tuple(h[x] for x in g)
                if hg not in seen:
                    seen.add(hg)
                    new.append(hg)
        frontier = new
    elements = sorted(seen)
    index = {g: i for i, g in enumerate(elements)}
    if side == "left":
        delta = [[index[tuple(h[x] for x in g)] for g in elements] for h in gens]
    else:
        delta = [[index[tuple(g[x] for x in h)] for g in elements] for h in gens]
    delta = np.array(delta, dtype=np.int64)
    return Semiautomaton(delta, state_labels=elements, symbol_labels=gen_labels or tuple(gens), name=name)


def cyclic(n: int) -> Semiautomaton:
    """$C_n$ as the mod-$n$ counter (Def 4, experiment "C_n"): $Q = \\Sigma = \\mathbb Z_n$, $\\delta(q,
    \\sigma) = q + \\sigma \\bmod n$ (all of $\\mathbb Z_n$ as symbols, as in the experiments)."""
    n = _check_int(n, "n", 1)
    q = np.arange(n)
    delta = (q[:, None] + q[None, :]) % n
    return Semiautomaton(delta, state_labels=tuple(range(n)), symbol_labels=tuple(range(n)), name=f"C{n}")


def parity() -> Semiautomaton:
    """Example 1: $Q = \\Sigma = \\{0, 1\\}$, symbol 1 flips the state, 0 keeps it ($= C_2$)."""
    return Semiautomaton(cyclic(2).delta, state_labels=(0, 1), symbol_labels=(0, 1), name="parity")


def dihedral(n: int) -> Semiautomaton:
    """$D_{2n}$ (order $2n$), Example 6 "reversible car": $Q = \\mathbb Z_n \\times \\{0, 1\\}$ (state ``s +
    n*b``), $\\Sigma$ = {advance, reverse}; advance: $(s, b) \\mapsto (s + (-1)^b \\bmod n, b)$, reverse: $(s,
    b) \\mapsto (s, 1 - b)$. The action is regular, so $\\mathcal T = D_{2n}$; the experiments' D6, D8 are
    ``dihedral(3)``, ``dihedral(4)``."""
    n = _check_int(n, "n", 2)
    s, b = np.arange(2 * n) % n, np.arange(2 * n) // n
    advance = (s + np.where(b == 0, 1, -1)) % n + n * b
    reverse = s + n * (1 - b)
    labels = tuple((int(x), int(y)) for x, y in zip(s, b, strict=True))
    return Semiautomaton(
        np.stack([advance, reverse]),
        state_labels=labels,
        symbol_labels=("advance", "reverse"),
        name=f"D{2 * n}",
    )


_QUAT_LABELS = ("1", "i", "j", "k", "-1", "-i", "-j", "-k")


def _quat_mul(a: int, b: int) -> int:
    """Product of unit quaternions indexed as ``_QUAT_LABELS``."""
    # Hamilton products of the basis 1, i, j, k: (unit index, sign).
    table = [
        [(0, 1), (1, 1), (2, 1), (3, 1)],
        [(1, 1), (0, -1), (3, 1), (2, -1)],
        [(2, 1), (3, -1), (0, -1), (1, 1)],
        [(3, 1), (2, 1), (1, -1), (0, -1)],
    ]
    u, sign = table[a % 4][b % 4]
    sign *= (-1) ** (a // 4 + b // 4)
    return u + (4 if sign < 0 else 0)


def quaternion(generators: Sequence[str] = ("i", "j"), side: str = "left") -> Semiautomaton:
    """The quaternion group $Q_8 = \\{\\pm1, \\pm i, \\pm j, \\pm k\\}$ as its canonical semiautomaton (Def
    9).

    The thesis does not say which symbols the Q8 task uses; the default is the two generators $\\{i, j\\}$
    (pass all eight labels ``("1", "i", ..., "-k")`` for the full group as symbols). States are indexed as
    ``1, i, j, k, -1, -i, -j, -k``; $\\delta(g, h) = h g$ (``side="left"``, Def 9) or $g h$ (``"right"``).
    """
    side = check_side(side)
    gens = [_QUAT_LABELS.index(g) if g in _QUAT_LABELS else -1 for g in generators]
    if not gens or min(gens) < 0:
        raise ValueError(f"quaternion generators must be among {_QUAT_LABELS}, got {tuple(generators)}")
    if side == "left":
        delta = np.array([[_quat_mul(h, g) for g in range(8)] for h in gens], dtype=np.int64)
    else:
        delta = np.array([[_quat_mul(g, h) for g in range(8)] for h in gens], dtype=np.int64)
    return Semiautomaton(delta, state_labels=_QUAT_LABELS, symbol_labels=tuple(generators), name="Q8")


def _perm_points_or_regular(gens, regular: bool, name: str, side: str = "left") -> Semiautomaton:
    side = check_side(side)
    if regular:
        return group_semiautomaton(gens, name=name, side=side)
    if side != "left":
        raise ValueError('side="right" needs regular=True (the action on points is a left action)')
    return Semiautomaton(
        np.array(gens, dtype=np.int64), symbol_labels=tuple(map(tuple, gens)), name=f"{name}@points"
    )


def symmetric(n: int, regular: bool = True, side: str = "left") -> Semiautomaton:
    """$S_n$ with 8 generators, as in the thesis's experiments (a transposition, an $n$-cycle and "6 other
    permutations following sympy's ordering", footnote 28, which is not reproducible): here the transposition
    $(0\\,1)$, the cycle $i \\mapsto i + 1 \\bmod n$, then the first 6 other non-identity permutations in
    lexicographic order (fewer when $n! < 9$).

    ``regular=True``: the canonical semiautomaton on the $n!$ elements; ``False``: the action on $n$ points.
    ``side``: as in :func:`group_semiautomaton` (``regular=True`` only).
    """
    n = _check_int(n, "n", 2)
    gens = [tuple([1, 0] + list(range(2, n))), tuple((i + 1) % n for i in range(n))]
    gens = list(dict.fromkeys(gens))
    for p in itertools.permutations(range(n)):
        if len(gens) >= 8:
            break
        if p != tuple(range(n)) and p not in gens:
            gens.append(p)
    return _perm_points_or_regular(gens, regular, f"S{n}", side)


def alternating(n: int, regular: bool = True, side: str = "left") -> Semiautomaton:
    """$A_n$ generated by the 3-cycles $(0\\,1\\,i)$, $i = 2..n-1$ (the thesis's $(1\\,2\\,i)$, 0-indexed).

    ``regular=True``: the canonical semiautomaton on the $n!/2$ even permutations (A5: 60 states);
    ``regular=False``: the action on $n$ points (A5: 5 states, the smallest non-solvable example).
    ``side``: as in :func:`group_semiautomaton` (``regular=True`` only).
    """
    n = _check_int(n, "n", 3)
    gens = []
    for i in range(2, n):
        p = list(range(n))
        p[0], p[1], p[i] = 1, i, 0  # 0 -> 1 -> i -> 0
        gens.append(tuple(p))
    return _perm_points_or_regular(gens, regular, f"A{n}", side)


def memory(n: int) -> Semiautomaton:
    """Memory semiautomaton (Def 5): $Q = \\{0..n-1\\}$, symbol 0 is $\\bot$ (keep), symbol $1 + q$ sets state
    $q$."""
    n = _check_int(n, "n", 1)
    keep = np.arange(n)[None, :]
    writes = np.repeat(np.arange(n)[:, None], n, axis=1)
    return Semiautomaton(
        np.concatenate([keep, writes]),
        state_labels=tuple(range(n)),
        symbol_labels=("⊥",) + tuple(f"write {q}" for q in range(n)),
        name=f"memory{n}",
    )


def flipflop() -> Semiautomaton:
    """Example 2, in the thesis's $\\{\\bot, 1, 2\\}$ convention: symbol 0 = $\\bot$ (ignore/read, keeps the
    state), symbol 1 writes state 0 (the thesis's "1"), symbol 2 writes state 1 (the thesis's "2")."""
    return Semiautomaton(
        memory(2).delta, state_labels=("1", "2"), symbol_labels=("⊥", "1", "2"), name="flipflop"
    )


def gridworld(n: int, stay: bool = False) -> Semiautomaton:
    """1-D gridworld on $Q = \\{0..n-1\\}$ ($S = n - 1$): L moves left, R right, both saturating at the walls.

    ``stay=False`` (the experiments' Grid_n, footnote 30): symbols (L, R), i.e. moves $2\\sigma - 1 \\in
    \\{-1,+1\\}$. ``stay=True`` (Example 3 / Thm 12): symbols (L, ⊥, R), i.e. moves $\\sigma - 1 \\in \\{-1,
    0, +1\\}$.
    """
    n = _check_int(n, "n", 1)
    q = np.arange(n)
    left, right = np.maximum(q - 1, 0), np.minimum(q + 1, n - 1)
    rows, labels = ([left, q, right], ("L", "⊥", "R")) if stay else ([left, right], ("L", "R"))
    return Semiautomaton(np.stack(rows), state_labels=tuple(range(n)), symbol_labels=labels, name=f"Grid{n}")


def dyck(k: int, m: int) -> Semiautomaton:
    """Bounded Dyck stack automaton $\\mathrm{Dyck}_{m,k}$ of the experiments: $k$ bracket types, depth at
    most $m$.

    Symbols $0..k-1$ open a bracket of that type, $k..2k-1$ close one. States are the stacks (tuples of types,
    bottom first; state 0 is the empty stack), enumerated breadth-first, plus a final absorbing sink state for
    invalid moves (overflow, wrong or unmatched close), which makes $\\delta$ total. The experiments draw
    symbols uniformly among valid ones: use ``sample_valid(aut, rng, B, T, dead=[aut.n_states - 1])``.
    """
    k, m = _check_int(k, "k", 1), _check_int(m, "m", 1)
    stacks = [()]
    for depth in range(m):
        stacks += [s + (b,) for s in stacks if len(s) == depth for b in range(k)]
    index = {s: i for i, s in enumerate(stacks)}
    sink = len(stacks)
    delta = np.full((2 * k, sink + 1), sink, dtype=np.int64)
    for s, i in index.items():
        for b in range(k):
            if len(s) < m:
                delta[b, i] = index[s + (b,)]
            if s and s[-1] == b:
                delta[k + b, i] = index[s[:-1]]
    labels = tuple(stacks) + ("sink",)
    syms = tuple(f"open{b}" for b in range(k)) + tuple(f"close{b}" for b in range(k))
    return Semiautomaton(delta, state_labels=labels, symbol_labels=syms, name=f"Dyck{m},{k}")


def random(n_states: int, n_symbols: int, seed: int = 0) -> Semiautomaton:
    """A semiautomaton with i.i.d. uniform transition table entries (``numpy.random.default_rng(seed)``)."""
    n_states, n_symbols = _check_int(n_states, "n_states", 1), _check_int(n_symbols, "n_symbols", 1)
    seed = _check_int(seed, "seed", 0)
    delta = np.random.default_rng(seed).integers(0, n_states, size=(n_symbols, n_states))
    return Semiautomaton(delta, name=f"random({n_states},{n_symbols},{seed})")


def sample_valid(
    aut: Semiautomaton, rng: np.random.Generator, batch: int, T: int, q0: int = 0, dead=()
) -> np.ndarray:
    """Words whose symbol at each step is uniform among those not entering a ``dead`` state from the current
    one (the Dyck experiments' "uniform over valid tokens"). Raises if some reachable live state has no valid
    symbol."""
    words = aut.sample(rng, batch, T)  # validates rng, batch, T
    dead = [aut._check_state(s, "dead state") for s in dead]
    dead_mask = np.zeros(aut.n_states, dtype=bool)
    dead_mask[dead] = True
    valid = ~dead_mask[aut.delta]  # [n_symbols, n_states]
    q = np.full(batch, aut._check_state(q0), dtype=np.int64)
    if dead_mask[q0]:
        raise ValueError(f"the start state {q0} is one of the dead states")
    cum = np.cumsum(valid.T, axis=1)  # [n_states, n_symbols]
    if (cum[:, -1] == 0)[~dead_mask].any():
        raise ValueError("some live state has no symbol that avoids the dead states")
    for t in range(T):
        counts = cum[q, -1]
        r = rng.integers(0, np.maximum(counts, 1))
        words[:, t] = (cum[q] <= r[:, None]).sum(axis=1)
        q = aut.delta[words[:, t], q]
    return words


def standard() -> dict[str, Semiautomaton]:
    """The experiments' zoo at the thesis's sizes (Fig 3.15 rows, with Grid and Dyck variants)."""
    out = {"parity": parity(), "flipflop": flipflop()}
    out |= {f"C{n}": cyclic(n) for n in range(2, 9)}
    out |= {"D6": dihedral(3), "D8": dihedral(4), "Q8": quaternion()}
    out |= {"A4": alternating(4), "S4": symmetric(4), "A5": alternating(5), "S5": symmetric(5)}
    out |= {"Grid4": gridworld(4), "Grid9": gridworld(9), "Dyck4,2": dyck(2, 4)}
    return out
