"""Theorem 11: solvable semiautomata are simulated by Transformers whose depth does not grow with T.

Pipeline (thesis Lemma 15-21, Thm 16, over a Krohn-Rhodes cascade of permutation-reset components):

* **Groups (Lemma 15, 17, 18 + Thm 16, as a cyclic series).** For a component's permutation group $G$ take a
  series $G=G_1\\rhd\\cdots\\rhd G_{n+1}=N$ with cyclic factors $G_i/G_{i+1}=\\langle x_iG_{i+1}\\rangle$ of order $m_i$
  and $N$ abelian (:func:`~theorylab.algebra.polycyclic.cyclic_series`). With $b^{(1)}_t=g_t$,
  $\\ell_t$ the $x_i$-exponent of $b^{(i)}_t$, $k^{(i)}_t=\\sum_{s\\le t}\\ell_s \\bmod m_i$ (one Lemma-15 counter) and
  $b^{(i+1)}_t=x_i^{-k_t}b^{(i)}_tx_i^{(k_t-\\ell_t)\\bmod m_i}\\in G_{i+1}$ (a position-wise lookup), the prefix product
  is $g_t\\circ\\cdots\\circ g_1=x_1^{k^{(1)}_t}\\circ\\cdots\\circ x_n^{k^{(n)}_t}\\circ(b^{(n+1)}_t\\circ\\cdots\\circ b^{(n+1)}_1)$, and the
  last factor lives in the abelian $N=\\langle y_1\\rangle\\times\\cdots$: one counter per $y_j$, all in one layer
  (Lemma 17). This replaces the thesis's wreath products (Lemma 19) by the group extension itself; depth
  $2n+2$, or $2n+1$ for a lone group component, whose counters the decoder reads directly ($D_{2n}$, $Q_8$, $A_4$: 3,
  below Lemma 18's $L_N+L_H+2=4$; $S_4$: 5; abelian groups: 1).
* **Resets (Lemma 16 + Lemma 20).** Resets act as $e$ in the group prefix. At a reset to $r$ the lookup stores
  $z=P_t^{-1}(r)$; a memory head copies $z$ from the most recent reset (a padding row at position 0 is a reset to the
  initial state: the fix of Lemma 20's no-reset case), and $q_t=P_t(z)$.
* **Cascade (Lemma 21, Def 6).** Levels run one after another, components of one level in parallel. A wiring
  layer before each level $\\ge 2$ copies the lower levels' states **at $t-1$** (a previous-position head: the fix of
  Lemma 21, which printed the states at $t$) and a lookup computes each component's input
  $\\phi^{(i)}(q^{(<i)}_{t-1},\\sigma_t)$.

Every position-wise map is an exact Lemma-10/11 lookup on the finite set of values that can occur.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np

from theorylab.algebra.cascade import Cascade, permutation_reset_cascade
from theorylab.algebra.groups import CAYLEY_LIMIT, GroupTooLargeError, PermutationGroup
from theorylab.algebra.polycyclic import NotSolvableGroup, cyclic_series, exponent_vectors
from theorylab.algebra.semigroup import is_permutation_reset
from theorylab.automata.constructions.base import CompiledTransformer, NotSolvableError, check_length
from theorylab.automata.constructions.circuit import Circuit
from theorylab.automata.semiautomaton import check_automaton, check_q0

__all__ = [
    "Cascade",
    "compile_constant_depth",
    "compile_cascade",
    "permutation_reset_cascade",
    "is_permutation_reset",
]

_MAX_DECODE_TABLE = 1 << 22


def compile_constant_depth(
    aut, T: int, q0: int = 0, *, printed_lemma20: bool = False, printed_lemma21: bool = False
) -> CompiledTransformer:
    """Theorem 11: a Transformer of T-independent depth simulating the solvable semiautomaton ``aut`` from ``q0``.

    A permutation-reset semiautomaton is compiled directly (one component, Lemma 20); any other one through its
    holonomy decomposition (``theorylab.algebra.holonomy_decomposition``). Raises :class:`NotSolvableError`
    naming the component whose permutation group is not solvable. The ``printed_*`` flags rebuild the printed
    (uncorrected) Lemma 20 / Lemma 21 wiring, for the erratum checks."""
    aut = check_automaton(aut)
    T = check_length(T)
    q0 = check_q0(aut, q0)
    if is_permutation_reset(aut):
        cascade = permutation_reset_cascade(aut)
        source = "permutation-reset"
    else:
        from theorylab.algebra.holonomy import holonomy_decomposition

        cascade = holonomy_decomposition(aut)
        source = "holonomy"
    c = compile_cascade(
        cascade, T, name=f"thm11[{aut.name or 'aut'}]", q0=q0,
        printed_lemma20=printed_lemma20, printed_lemma21=printed_lemma21,
    )  # fmt: skip
    c.info["cascade"] = source
    n = aut.n_states
    c.info["bounds"]["depth"] = 3 * n * n * max(np.log2(n), 1.0) + 7 * n
    return c


@dataclass(frozen=True, eq=False)
class _GroupPlan:
    """How one component's permutation group is simulated: sequential cyclic levels ``top`` (one counter and one
    lookup each), then an abelian bottom ``N`` = direct product of ``bottom`` (all counters in one layer)."""

    G: PermutationGroup
    top: list
    bottom: list
    bexp: np.ndarray  # exponent vectors of the elements of N w.r.t. ``bottom``
    index: dict  # permutation action -> element index
    resets: list  # constant actions

    @property
    def n_counters(self) -> int:
        return len(self.top) + len(self.bottom)

    def input_exponents(self, g: int) -> tuple:
        """The exponents read by the first counter layer for input element ``g``."""
        if self.top:
            return (float(self.top[0].exponent[g]),)
        if self.bottom:
            return tuple(float(e) for e in self.bexp[g])
        return (0.0,)

    @property
    def n_inputs(self) -> int:
        return len(self.bottom) if not self.top and self.bottom else 1


def _component_groups(cascade: Cascade) -> list[_GroupPlan]:
    out = []
    for i, comp in enumerate(cascade.components):
        acts = np.asarray(comp.semiautomaton.delta)
        n = acts.shape[1]
        perms, resets = [], []
        for a, row in enumerate(acts.tolist()):
            if len(set(row)) == n:
                perms.append(a)
            elif len(set(row)) == 1:
                resets.append(a)
            else:
                raise ValueError(f"component {i}: action {a} = {row} is neither a permutation nor a reset")
        G = PermutationGroup([acts[a] for a in perms] or [np.arange(n)])
        if G.order > CAYLEY_LIMIT:  # decided by Schreier-Sims, before anything is enumerated
            if not G.is_solvable():
                raise NotSolvableError(
                    f"component {i} (level {comp.level}, {n} states) has a non-solvable permutation group of "
                    f"order {G.order}. No constant-depth construction exists unless TC0 = NC1 (Thm 13); use "
                    "compile_log_depth."
                )
            raise GroupTooLargeError(
                f"component {i} (level {comp.level}, {n} states) has a solvable permutation group of order "
                f"{G.order}; compile_constant_depth tabulates the group (cyclic series and lookups over its "
                f"elements) and is limited to order CAYLEY_LIMIT = {CAYLEY_LIMIT}. compile_log_depth has no "
                "such limit."
            )
        try:
            top, bottom = cyclic_series(G)
        except NotSolvableGroup as err:
            raise NotSolvableError(
                f"component {i} (level {comp.level}, {n} states) has a non-solvable permutation group: {err}. "
                "No constant-depth construction exists unless TC0 = NC1 (Thm 13); use compile_log_depth."
            ) from None
        bexp = exponent_vectors(G, bottom)
        out.append(_GroupPlan(G, top, bottom, bexp, {a: G.index(acts[a]) for a in perms}, resets))
    return out


def compile_cascade(
    cascade: Cascade,
    T: int,
    name: str = "cascade",
    q0: int = 0,
    *,
    printed_lemma20: bool = False,
    printed_lemma21: bool = False,
) -> CompiledTransformer:
    """Lemma 21 over permutation-reset components (Lemma 20, Thm 16): see the module docstring.

    ``printed_lemma20``: no reset row at position 0; a non-reset symbol carries the initial state as its memory value
    (Lemma 16's trick), so with no reset before $t$ the memory head attends to $t$ itself and the component outputs
    its initial state. ``printed_lemma21``: the wiring reads the lower levels' states at $t$, not $t-1$.
    ``cascade``: a :class:`~theorylab.algebra.Cascade`, started at ``cascade.encode(q0)``."""
    if not isinstance(cascade, Cascade):
        raise TypeError(f"expected a theorylab.algebra.Cascade, got {type(cascade).__name__}")
    T = check_length(T)
    q0 = check_q0(cascade.automaton, q0)
    groups = _component_groups(cascade)
    actions = tuple(c.semiautomaton.delta for c in cascade.components)
    levels = tuple(c.level for c in cascade.components)
    initial = tuple(int(v) for v in cascade.encode(q0))
    reach = [tuple(int(v) for v in cascade.states[r]) for r in cascade.reachable_from(q0)]

    def dependency(i: int, s: tuple, a: int) -> int:
        return int(cascade.inputs[cascade.index_of(s), a, i])

    def decode(s: tuple) -> int:
        return int(cascade.decode_table[cascade.index_of(s)])

    circ = Circuit(T, cascade.n_symbols)
    ncomp = len(actions)
    q_ch: dict[int, int] = {}
    direct: dict = {}
    next_layer = 0
    for li, lvl in enumerate(sorted(set(levels))):
        comps = [i for i in range(ncomp) if levels[i] == lvl]
        fields = {
            i: [circ.channel(f"c{i}.g")]
            + [circ.channel(f"c{i}.l{j}") for j in range(groups[i].n_inputs)]
            + [circ.channel(f"c{i}.reset"), circ.channel(f"c{i}.target")]
            for i in comps
        }

        @functools.cache
        def action_inputs(i, act):
            plan = groups[i]
            zeros = (0.0,) * plan.n_inputs
            if act in plan.resets:
                return (0.0,) + zeros + (1.0, float(actions[i][act][0]))
            g = plan.index[act]
            tgt = float(initial[i]) if printed_lemma20 else 0.0
            return (float(g),) + plan.input_exponents(g) + (0.0, tgt)

        def inputs(i, s, a):
            return action_inputs(i, dependency(i, s, a))

        def at_bos(i):
            plan = groups[i]
            reset = 0.0 if printed_lemma20 else 1.0
            return (0.0,) + (0.0,) * plan.n_inputs + (reset, float(initial[i]))

        if li == 0:
            s0 = tuple(initial)
            for i in comps:
                vals = np.array([inputs(i, s0, a) for a in range(cascade.n_symbols)])
                for f, ch in enumerate(fields[i]):
                    circ.set_input(ch, vals[:, f], at_bos(i)[f])
            start = next_layer
        else:
            lower = [j for j in range(ncomp) if levels[j] < lvl]
            if printed_lemma21:
                prev = [q_ch[j] for j in lower]
            else:
                prev = [circ.channel(f"prev.c{j}") for j in lower]
                vmax = max(np.asarray(actions[j]).shape[1] for j in lower)
                circ.previous_copy(next_layer, [q_ch[j] for j in lower], prev, vmax)
            table: dict = {}
            for s in reach:
                acts = cascade.inputs[cascade.index_of(s)]  # [symbol, component]: the action each one gets
                lower_key = tuple(float(s[j]) for j in lower)
                for a in range(cascade.n_symbols):
                    key = lower_key + (float(a),)
                    val = tuple(v for i in comps for v in action_inputs(i, int(acts[a, i])))
                    if table.setdefault(key, val) != val:
                        raise ValueError(f"level {lvl}: the dependency reads components of level >= {lvl}")
            key = tuple(float(initial[j]) for j in lower) + (float(cascade.n_symbols),)
            table[key] = tuple(v for i in comps for v in at_bos(i))
            outs = [ch for i in comps for ch in fields[i]]
            circ.lookup(next_layer, prev + [circ.sym], outs, table)
            start = next_layer + 1
        end = start - 1
        for i in comps:
            q_ch[i], e = _component(
                circ,
                start,
                i,
                groups[i],
                fields[i],
                actions[i],
                initial[i],
                printed_lemma20,
                direct if ncomp == 1 else None,
            )
            end = max(end, e)
        next_layer = end + 1
    readout = [q_ch[i] for i in range(ncomp)]
    radices = [np.asarray(a).shape[1] for a in actions]
    if direct:  # one group component: W maps the counters (mixed radix) to the state
        readout, radices = direct["channels"], direct["radices"]
        table = np.array([decode((q,)) for q in direct["states"]], dtype=np.int64)
    elif int(np.prod(radices, dtype=float)) <= _MAX_DECODE_TABLE:
        table = np.full(int(np.prod(radices)), -1, dtype=np.int64)
        for s in reach:
            table[np.ravel_multi_index(s, radices)] = decode(s)
    else:  # a final lookup layer maps reachable tuples to the state
        out = circ.channel("out")
        circ.lookup(next_layer, readout, [out], {tuple(map(float, s)): (float(decode(s)),) for s in reach})
        n_out = 1 + max(int(decode(s)) for s in reach)
        readout, radices, table = [out], [n_out], np.arange(n_out)
    net, emb, prefix, positions = circ.build()
    orders = [g.G.order for g in groups]
    n_states = max(np.asarray(a).shape[1] for a in actions)
    bounds = {"component_depth": [3 * np.log2(max(o, 2)) + 2 for o in orders]}
    info = {
        "claim": "automata.thm11",
        "bounds": bounds,
        "components": [
            {"level": levels[i], "n_states": np.asarray(actions[i]).shape[1],
             "group_order": orders[i], "n_counters": groups[i].n_counters,
             "sequential_levels": len(groups[i].top), "n_resets": len(groups[i].resets)}
            for i in range(ncomp)
        ],
        "n_levels": len(set(levels)),
        "max_component_states": n_states,
        "channels": list(circ.names),
    }  # fmt: skip
    return CompiledTransformer(
        net, emb, prefix, positions, tuple(readout), tuple(radices), table, T, name, q0, info
    )


def _counter(circ: Circuit, layer: int, src: int, p: int, name: str, fn=None) -> int:
    """Lemma 15 in one block: prefix sum of ``src`` and the MLP $s\\mapsto$ ``fn(2Ts mod p)`` (default: the count)."""
    T = circ.T
    s_ch, out = circ.channel(f"{name}.s"), circ.channel(name)
    circ.prefix_sum(layer, src, s_ch)
    fn = fn or float
    circ.lookup(layer, [s_ch], [out], {(j / (2.0 * T),): (fn(j % p),) for j in range(T * (p - 1) + 1)})
    return out


def _component(
    circ: Circuit,
    start: int,
    i: int,
    plan: _GroupPlan,
    fields,
    actions: np.ndarray,
    init: int,
    printed_lemma20: bool,
    direct: dict | None = None,
) -> tuple[int, int]:
    """Lay out component ``i`` from layer ``start``; returns (state channel, last layer used). With ``direct`` (a
    dict), a reset-free group component with several counters is not mapped to a state channel: the counter
    channels, their moduli and the state of each counter tuple are put into ``direct`` for the decoder."""
    G, top, bottom, resets = plan.G, plan.top, plan.bottom, plan.resets
    g_ch, l_chs, r_ch, tgt_ch = fields[0], fields[1:-2], fields[-2], fields[-1]
    n_states = np.asarray(actions).shape[1]
    targets = sorted({int(actions[a][0]) for a in resets} | {init})
    gens = [(pc.x, pc.p) for pc in top] + [(f.x, f.p) for f in bottom]
    if not gens and not resets:  # trivial group, no resets: the state never changes
        q = circ.channel(f"c{i}.q")
        circ.set_input(q, np.full(circ.n_symbols, init), init)
        return q, start - 1
    if not gens:  # resets only (Lemma 16): the memory head copies the target of the last reset
        q, zc = circ.channel(f"c{i}.q"), circ.channel(f"c{i}.zc")
        circ.last_reset_copy(start, r_ch, [tgt_ch], [zc], n_states)
        circ.lookup(start, [zc], [q], {(float(z),): (float(z),) for z in targets})
        return q, start
    if len(gens) == 1 and not resets:  # Lemma 15: the counter's MLP outputs the state directly
        x, p = gens[0]
        q = _counter(circ, start, l_chs[0], p, f"c{i}.q", lambda k: float(G.elements[G.power(x, k)][init]))
        return q, start
    k_chs = []
    b_ch, l_ch, layer = g_ch, l_chs[0], start
    for lev, pc in enumerate(top):  # sequential levels: counter, then b -> x^-k b x^((k - l) mod p)
        layer = start + 2 * lev
        k = _counter(circ, layer, l_ch, pc.p, f"c{i}.k{lev}")
        k_chs.append(k)
        last_top = lev == len(top) - 1
        if last_top and not bottom:
            break
        xinv = int(G.inverse[pc.x])  # below, G.compose(a, b) is a o b (apply b first)
        table = {}
        for kk in range(pc.p):
            for b in pc.members:
                ell = int(pc.exponent[b])
                nxt = G.compose(G.compose(G.power(xinv, kk), b), G.power(pc.x, (kk - ell) % pc.p))
                if last_top:  # into the abelian bottom: its exponent vector
                    table[(float(kk), float(b))] = tuple(float(e) for e in plan.bexp[nxt])
                else:
                    table[(float(kk), float(b))] = (float(nxt), float(top[lev + 1].exponent[nxt]))
        if last_top:
            l_chs = [circ.channel(f"c{i}.l.bottom{j}") for j in range(len(bottom))]
            circ.lookup(layer + 1, [k, b_ch], l_chs, table)
        else:
            nb, nl = circ.channel(f"c{i}.b{lev + 1}"), circ.channel(f"c{i}.l{lev + 1}")
            circ.lookup(layer + 1, [k, b_ch], [nb, nl], table)
            b_ch, l_ch = nb, nl
        layer += 2
    for j, f in enumerate(bottom):  # abelian bottom (Lemma 17): all counters in one layer
        k_chs.append(_counter(circ, layer, l_chs[j], f.p, f"c{i}.c{j}"))
    last = layer  # the layer of the last counter block
    q = circ.channel(f"c{i}.q")
    prods = {}
    for kvec in np.ndindex(*[p for _, p in gens]):
        P = 0  # the identity
        for (x, _), kk in zip(gens, kvec, strict=True):
            P = G.compose(P, G.power(x, kk))
        prods[tuple(float(v) for v in kvec)] = G.elements[P]
    if not resets and direct is not None:  # the decoder W reads the counters themselves (no lookup layer)
        direct.update(
            channels=k_chs, radices=[p for _, p in gens], states=[int(P[init]) for P in prods.values()]
        )
        return q, last
    if not resets:
        circ.lookup(last + 1, k_chs, [q], {kv: (float(P[init]),) for kv, P in prods.items()})
        return q, last + 1
    z = circ.channel(f"c{i}.z")
    table = {}
    for kv, P in prods.items():
        Pinv = np.argsort(P)
        if printed_lemma20:
            table[kv + (0.0, float(init))] = (float(Pinv[init]),)
        else:
            table[kv + (0.0, 0.0)] = (0.0,)
        for r in targets:
            table[kv + (1.0, float(r))] = (float(Pinv[r]),)
    circ.lookup(last + 1, k_chs + [r_ch, tgt_ch], [z], table)
    zc = circ.channel(f"c{i}.zc")
    circ.last_reset_copy(last + 2, r_ch, [z], [zc], n_states)
    table = {kv + (float(zz),): (float(P[zz]),) for kv, P in prods.items() for zz in range(n_states)}
    circ.lookup(last + 2, k_chs + [zc], [q], table)
    return q, last + 2
