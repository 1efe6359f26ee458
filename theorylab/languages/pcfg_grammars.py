r"""Random PCFGs of the two documents, compiled to :class:`~theorylab.languages.pcfg.PCFG`'s normal form.

- :func:`layered_grammar`: layered grammars in the style of Allen-Zhu & Li's cfg3 family used by Liu §4.2.3 / §4.2.8.3
  (levels of nonterminals, each rule rewriting a level-$\ell$ symbol into 2 or 3 symbols of level $\ell+1$, the last
  level rewriting into terminals, so every leaf lies at the same depth). The exact cfg3b/f/g/h/i rule tables
  (Fig. 4.23) are not in the text: these grammars are a reconstruction with the stated degrees
  ($|\mathcal R(A)|$ = 2 for cfg3b/i, {2,3} for cfg3h, 3 for cfg3g, {3,4} for cfg3f; distinct consecutive symbols for
  cfg3b), vocabulary {1,2,3} (tokens 0..2 here) and depth-7 trees.
- :func:`flat_grammar`: the random PCFG of paper 000 (App. A.1: vocabulary 200, 50 nonterminals, every rule with two
  symbols on the right, sentences of at most 32 tokens, "depth limited to 6"). The generation procedure is not printed;
  reconstruction: every nonterminal has ``n_rules`` rules $A\to XY$ whose symbols are nonterminals with probability
  ``p_nonterminal`` and terminals otherwise, Dirichlet(1) rule probabilities, and a depth cap enforced in the grammar
  itself (nonterminals are annotated with their level 1..5, and level-5 nonterminals use only their two-terminal
  rules, renormalised), so leaves lie at levels <= 6 and sentences have at most $2^5 = 32$ tokens.

Compilation: a right-hand side of three symbols $A\to BCD$ becomes $A\to B\,X$, $X\to CD$ with a fresh auxiliary $X$;
a terminal $w$ inside a right-hand side becomes a preterminal $T_w\to w$. Auxiliary nonterminals and preterminals have
label -1.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence

import numpy as np

from theorylab.languages.pcfg import PCFG

__all__ = ["CFG3_DEGREES", "compile_grammar", "flat_grammar", "layered_grammar"]

#: Rule counts per nonterminal of the cfg3 family as the thesis describes them (§4.2.8.3); ``distinct``: no two
#: consecutive equal symbols in a right-hand side (cfg3b).
CFG3_DEGREES = {
    "cfg3b": ((2,), True),
    "cfg3i": ((2,), False),
    "cfg3h": ((2, 3), False),
    "cfg3g": ((3,), False),
    "cfg3f": ((3, 4), False),
}


def compile_grammar(
    n_labelled: int,
    n_vocab: int,
    start: np.ndarray,
    productions: Sequence[tuple[int, tuple[tuple[str, int], ...], float]],
    labels: np.ndarray | None = None,
) -> PCFG:
    """Compile productions ``(A, ((kind, id), ...), p)`` with ``kind`` in {"N", "T"} and right-hand sides of 1 to 3
    symbols (length 1 only for a single terminal) into the normal form. Nonterminals ``0..n_labelled-1`` keep their
    ids (and ``labels``, default their own id); auxiliaries and preterminals follow."""
    rules: list[tuple[int, int, int]] = []
    probs: list[float] = []
    emissions: dict[tuple[int, int], float] = {}
    preterminal: dict[int, int] = {}
    aux: dict[tuple[int, int], int] = {}
    count = n_labelled

    def symbol(kind: str, ident: int) -> int:
        nonlocal count
        if kind == "N":
            return ident
        if ident not in preterminal:
            preterminal[ident] = count
            count += 1
        return preterminal[ident]

    for a, rhs, p in productions:
        if len(rhs) == 1:
            if rhs[0][0] != "T":
                raise ValueError(f"a unary rule must emit a terminal, got {rhs}")
            emissions[(a, rhs[0][1])] = emissions.get((a, rhs[0][1]), 0.0) + p
            continue
        if len(rhs) not in (2, 3):
            raise ValueError(f"right-hand sides must have 1 to 3 symbols, got {len(rhs)}")
        syms = [symbol(*s) for s in rhs]
        if len(syms) == 3:
            key = (syms[1], syms[2])
            if key not in aux:  # one shared auxiliary per pair: a single rule X -> C D with probability 1
                aux[key] = count
                count += 1
            syms = [syms[0], aux[key]]
        rules.append((a, syms[0], syms[1]))
        probs.append(p)
    n = count
    emis = np.zeros((n, n_vocab))
    for (a, w), p in emissions.items():
        emis[a, w] = p
    for w, t in preterminal.items():
        emis[t, w] = 1.0
    for (b, c), x in aux.items():
        rules.append((x, b, c))
        probs.append(1.0)
    merged: dict[tuple[int, int, int], float] = {}
    for r, p in zip(rules, probs, strict=True):
        merged[r] = merged.get(r, 0.0) + p
    lab = np.full(n, -1)
    lab[:n_labelled] = np.arange(n_labelled) if labels is None else labels
    full_start = np.zeros(n)
    full_start[:n_labelled] = start
    rules_arr = np.array(list(merged), dtype=np.int64).reshape(-1, 3)
    probs_arr = np.array(list(merged.values()))
    keep = _reachable(full_start, rules_arr, n)  # a random grammar may never use some nonterminals
    index = np.full(n, -1)
    index[keep] = np.arange(len(keep))
    used = np.isin(rules_arr[:, 0], keep)
    return PCFG(full_start[keep], index[rules_arr[used]], probs_arr[used], emis[keep], lab[keep])


def _reachable(start: np.ndarray, rules: np.ndarray, n: int) -> np.ndarray:
    reach = start > 0
    while True:
        src = reach[rules[:, 0]]
        new = reach.copy()
        new[rules[src, 1]] = True
        new[rules[src, 2]] = True
        if np.array_equal(new, reach):
            return np.flatnonzero(reach)
        reach = new


def _int(value, name: str, low: int) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"{name} must be an int, got {type(value).__name__}")
    if value < low:
        raise ValueError(f"{name} must be >= {low}, got {value}")
    return int(value)


def layered_grammar(
    rng: np.random.Generator,
    level_sizes: Sequence[int] = (1, 3, 3, 3, 3, 3),
    n_vocab: int = 3,
    degrees: Sequence[int] = (2, 3),
    rhs_lengths: Sequence[int] = (2, 3),
    distinct: bool = False,
) -> PCFG:
    """A random layered grammar: ``level_sizes[l]`` nonterminals at level l (the root level has one), each with a
    number of rules drawn from ``degrees``, uniform rule probabilities, right-hand sides of lengths drawn from
    ``rhs_lengths`` over the next level (terminals after the last), all distinct; ``distinct`` forbids equal
    consecutive symbols. Labels are the nonterminals' ids (level by level); levels are ``len(level_sizes)`` plus the
    terminal level (depth-7 trees for the default)."""
    sizes = [_int(s, "level size", 1) for s in level_sizes]
    if not sizes or sizes[0] != 1:
        raise ValueError(f"level_sizes must start with the single root, got {list(level_sizes)}")
    _int(n_vocab, "n_vocab", 1)
    degrees = [_int(d, "degree", 1) for d in degrees]
    lengths = [_int(length, "rhs length", 2) for length in rhs_lengths]
    if not degrees or not lengths or max(lengths) > 3:
        raise ValueError(f"need degrees and rhs lengths in {{2, 3}}, got {degrees}, {lengths}")
    first = np.cumsum([0] + sizes)
    productions = []
    for lvl, size in enumerate(sizes):
        last = lvl == len(sizes) - 1
        k_next = n_vocab if last else sizes[lvl + 1]
        kind = "T" if last else "N"
        for a in range(first[lvl], first[lvl] + size):
            d = int(rng.choice(degrees))
            seen: set[tuple[int, ...]] = set()
            for _ in range(1000 * d):
                if len(seen) == d:
                    break
                rhs = tuple(int(v) for v in rng.integers(0, k_next, int(rng.choice(lengths))))
                if distinct and any(u == v for u, v in zip(rhs, rhs[1:], strict=False)):
                    continue
                seen.add(rhs)
            if len(seen) < d:
                raise ValueError(f"cannot draw {d} distinct right-hand sides over {k_next} symbols")
            offset = 0 if last else first[lvl + 1]
            for rhs in sorted(seen):
                productions.append((a, tuple((kind, offset + v) for v in rhs), 1.0 / d))
    return compile_grammar(int(first[-1]), n_vocab, np.eye(int(first[-1]))[0], productions)


def cfg3_style(name: str, rng: np.random.Generator) -> PCFG:
    """A reconstructed grammar in the style of ``name`` (cfg3b/i/h/g/f; see the module docstring)."""
    if name not in CFG3_DEGREES:
        raise ValueError(f"unknown cfg3 grammar {name!r} (known: {', '.join(CFG3_DEGREES)})")
    degrees, distinct = CFG3_DEGREES[name]
    return layered_grammar(rng, degrees=degrees, distinct=distinct)


def flat_grammar(
    rng: np.random.Generator,
    n_nonterminals: int = 50,
    n_vocab: int = 200,
    n_rules: int = 8,
    max_level: int = 5,
    p_nonterminal: float = 0.9,
) -> PCFG:
    """Paper 000's PCFG (reconstructed, see the module docstring). Labels are the base nonterminal 0..N-1 of the
    level-annotated nonterminals (A, level); the start distribution is uniform over level-1 nonterminals."""
    n = _int(n_nonterminals, "n_nonterminals", 1)
    v = _int(n_vocab, "n_vocab", 1)
    k = _int(n_rules, "n_rules", 2)
    depth = _int(max_level, "max_level", 1)
    if not 0 <= p_nonterminal < 1:
        raise ValueError(f"p_nonterminal must lie in [0, 1), got {p_nonterminal}")
    base = []  # per A: list of (rhs kinds/ids, prob); at least one two-terminal rule
    for _ in range(n):
        rules: dict[tuple, float] = {}
        while len(rules) < k:
            forced_terminal = not rules  # the first rule emits two terminals (so level-5 nodes can stop)
            rhs = tuple(
                ("N", int(rng.integers(n)))
                if (not forced_terminal and rng.random() < p_nonterminal)
                else ("T", int(rng.integers(v)))
                for _ in range(2)
            )
            rules.setdefault(rhs, 0.0)
        base.append(list(zip(rules, rng.dirichlet(np.ones(k)), strict=True)))
    productions = []
    labels = np.tile(np.arange(n), depth)

    def nid(a: int, level: int) -> int:
        return (level - 1) * n + a

    for level in range(1, depth + 1):
        for a in range(n):
            rules = base[a] if level < depth else [(r, p) for r, p in base[a] if all(s[0] == "T" for s in r)]
            total = sum(p for _, p in rules)
            for rhs, p in rules:
                sym = tuple((s[0], nid(s[1], level + 1) if s[0] == "N" else s[1]) for s in rhs)
                productions.append((nid(a, level), sym, p / total))
    start = np.zeros(n * depth)
    start[:n] = 1.0 / n
    return compile_grammar(n * depth, v, start, productions, labels)


def dense_grammar(
    rng: np.random.Generator,
    n_nonterminals: int = 2,
    n_vocab: int = 2,
    stop: float = 0.55,
    concentration: float = 1.0,
) -> PCFG:
    """A small test grammar in Chomsky normal form: all n³ binary rules A -> BC present with total mass 1 - ``stop``
    per A (mean offspring 2(1 - stop), subcritical for stop > 1/2), emissions of total mass ``stop``; start, rule
    and emission weights Dirichlet (emissions with ``concentration``: small values make them peaked)."""
    n = _int(n_nonterminals, "n_nonterminals", 1)
    v = _int(n_vocab, "n_vocab", 1)
    if not 0.5 < stop <= 1:
        raise ValueError(f"stop must lie in (1/2, 1] for a subcritical grammar, got {stop}")
    if not concentration > 0:
        raise ValueError(f"concentration must be positive, got {concentration}")
    rules = np.array(list(itertools.product(range(n), repeat=3)))
    probs = np.concatenate([rng.dirichlet(np.ones(n * n)) * (1 - stop) for _ in range(n)])
    emissions = rng.dirichlet(np.full(v, float(concentration)), size=n) * stop
    return PCFG(rng.dirichlet(np.ones(n)), rules, probs, emissions)
