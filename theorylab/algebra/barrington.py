"""Barrington's commutator trick, the algebraic core of Liu Thm 13 (simulating a non-solvable semiautomaton is
NC$^1$-hard).

Permutations are int tuples; the product ``mul(a, b)`` is $a\\circ b$ (apply ``b``, then ``a``) and the commutator
is $[a,b]=aba^{-1}b^{-1}$. A *witness* in a group $G$ is $(g,\\alpha,\\beta)$ with $g\\ne e$, $\\alpha,\\beta$
conjugates of $g$ and $[\\alpha,\\beta]=g$. It exists iff $G$ is not solvable (the normal closure $N$ of such a $g$
satisfies $N\\subseteq[N,N]$, so $N$ is a non-trivial perfect subgroup; conversely a non-solvable $G$ has a
non-trivial perfect subgroup, and in $A_5$ two 5-cycles have a 5-cycle as commutator). With a witness,
:func:`and_program` builds a width-$|\\Omega|$ permutation branching program of length $4^d$ whose product is $g$
if the AND of its $2^d$ input bits is 1 and $e$ otherwise.
"""

from __future__ import annotations

import itertools

__all__ = ["mul", "inverse", "commutator", "barrington_witness", "and_program", "evaluate"]

Perm = tuple[int, ...]


def _perm(p, what: str = "permutation") -> Perm:
    t = tuple(int(v) for v in p)
    if sorted(t) != list(range(len(t))):
        raise ValueError(f"{what} {t} is not a permutation of range({len(t)})")
    return t


def mul(a: Perm, b: Perm) -> Perm:
    """$a\\circ b$: apply ``b``, then ``a``."""
    return tuple(a[x] for x in b)


def inverse(a: Perm) -> Perm:
    out = [0] * len(a)
    for i, v in enumerate(a):
        out[v] = i
    return tuple(out)


def commutator(a: Perm, b: Perm) -> Perm:
    """$[a,b]=aba^{-1}b^{-1}$."""
    return mul(mul(a, b), mul(inverse(a), inverse(b)))


def barrington_witness(elements) -> tuple[Perm, Perm, Perm, Perm, Perm] | None:
    """An exhaustive search over the group ``elements`` (all of them, as permutations) for $(g,\\alpha,\\beta,x,y)$
    with $g\\ne e$, $\\alpha=xgx^{-1}$, $\\beta=ygy^{-1}$ and $[\\alpha,\\beta]=g$; ``None`` if there is none (iff the
    group is solvable)."""
    G = [_perm(p, "element") for p in elements]
    if not G:
        raise ValueError("elements must be a non-empty list of permutations")
    n = len(G[0])
    if any(len(p) != n for p in G):
        raise ValueError("elements must all have the same degree")
    members = set(G)
    if len(members) != len(G) or any(mul(a, b) not in members for a in G for b in G):
        raise ValueError("elements must be distinct and closed under composition")
    e = tuple(range(n))
    for g in G:
        if g == e:
            continue
        conj = {}
        for x in G:
            conj.setdefault(mul(mul(x, g), inverse(x)), x)
        for (a, x), (b, y) in itertools.product(conj.items(), repeat=2):
            if commutator(a, b) == g:
                return g, a, b, x, y
    return None


def _invert(program: list) -> list:
    """The program whose product is the inverse: reversed order, inverted contributions."""
    return [(i, inverse(p0), inverse(p1)) for i, p0, p1 in reversed(program)]


def _conjugate(program: list, c: Perm) -> list:
    ci = inverse(c)
    return [(i, mul(mul(c, p0), ci), mul(mul(c, p1), ci)) for i, p0, p1 in program]


def and_program(depth: int, witness) -> list[tuple[int, Perm, Perm]]:
    """Barrington's program for $x_0\\wedge\\dots\\wedge x_{2^d-1}$: instructions ``(i, p0, p1)`` (read bit $i$,
    contribute ``p0`` or ``p1``); the product of the contributions, in order, is $g$ if all bits are 1, else $e$.
    Length $4^d$. ``witness``: $(g,\\alpha,\\beta,x,y)$ from :func:`barrington_witness`."""
    if isinstance(depth, bool) or not isinstance(depth, int) or depth < 0:
        raise ValueError(f"depth must be an int >= 0, got {depth!r}")
    g, a, b, x, y = (_perm(p) for p in witness)
    if commutator(a, b) != g or mul(mul(x, g), inverse(x)) != a or mul(mul(y, g), inverse(y)) != b:
        raise ValueError("witness must satisfy alpha = x g x^-1, beta = y g y^-1 and [alpha, beta] = g")
    e = tuple(range(len(g)))

    def build(lo: int, d: int) -> list:  # program for the bits lo .. lo + 2^d - 1, output g or e
        if d == 0:
            return [(lo, e, g)]
        half = 2 ** (d - 1)
        left, right = build(lo, d - 1), build(lo + half, d - 1)
        pa, pb = _conjugate(left, x), _conjugate(right, y)  # outputs alpha, beta (or e)
        return pa + pb + _invert(pa) + _invert(pb)

    return build(0, depth)


def evaluate(program, bits) -> Perm:
    """The product $p_1\\circ\\dots\\circ p_L$ of the contributions of ``program`` on ``bits``."""
    out = None
    for i, p0, p1 in program:
        p = p1 if bits[i] else p0
        out = p if out is None else mul(out, p)
    if out is None:
        raise ValueError("program is empty")
    return out
