"""Theorem 12 / Algorithm 1: the $(S+1)$-state gridworld is simulated by a Transformer with 2 attention layers.

**Algorithm 1** (corrected). Map L, $\\bot$, R to $-1, 0, +1$, prepend $S+1$ L moves, let $z_t$ be the prefix sums and
$t_{\\rm uniq}=\\max\\{t: |\\{z_t,\\dots,z_T\\}|=S+1\\}$. Then the state is $y_T=z_T-\\min_{\\tau\\ge t_{\\rm uniq}}z_\\tau$
(the boundary type is not needed). With only $S$ pads (as printed) $t_{\\rm uniq}$ can be undefined.

**Network.** Rows: a padding row $\\bot$ ($z_0=0$), $S+1$ L pads and $q_0$ R pads, then the input; $u$ = number of rows
after $\\bot$.
Layer 1 (Lemma 15): $x_t=z_t/(2u)$; MLP 1 (Lemma 10): $(\\cos\\pi x_t,\\sin\\pi x_t)$.
Layer 2: one head per offset $o\\in\\{-S..S\\}$ with score
$\\beta[\\cos(\\pi(x_j-x_t)-\\tfrac{\\pi o}{2u})-c\\log(2u-j)]$: the most recent row with $z_j=z_t+o$ when there is one; it
copies $\\log(2u-j)$ (recency) and $x_j$. The padding row's recency key is $\\log(2u)$ (printed: 0, which makes it win
every tie on $z=0$). A head is *matched* iff its copied $x_j$ equals $x_t+o/(2u)$ (printed: iff it did not attend to
$t$; unmatched heads do not fall back to $t$). MLP 2 (depth $O(\\log S)$): window $a\\in\\{-S..0\\}$ covers the values
$z_t+a..z_t+a+S$; its last full visit is the oldest of its heads (unmatched = never); the most recently covered window
$a^*$ gives $q_t=-a^*$.

**MLP 2, $O(1)$-depth version** (``mlp2="constant"``, variant (ii)). Along a walk with steps in $\\{-1,0,1\\}$ the last
visits are ordered: $j_{-S}<\\dots<j_{-1}<j_0=t$ and $j_S<\\dots<j_1<j_0$ (unmatched offsets lie beyond the matched
ones on each side). Giving an unmatched head of offset $o$ the key $r_o+\\mathrm{big}\\cdot(1+2|o|+[o>0])$ keeps every
key distinct and both chains increasing, so the keys' order is one of the $\\binom{2S}{S}$ interleavings of the two
chains; it is read off by the $S^2$ Lemma-12 indicators $\\mathbb 1[e_{-i}>e_j]$ ($\\Delta=1/(4u)$) and a Lemma-11
lookup over the occurring patterns returns $q_t$: 4 ReLU layers for every $S$, width $O(S)+8S^2+\\binom{2S}{S}$.
"""

from __future__ import annotations

import itertools

import numpy as np

from theorylab._fmt import plain
from theorylab.automata.constructions.base import CompiledTransformer, check_length
from theorylab.automata.constructions.gadgets import interp_mlp, interp_mlp_1d, threshold_mlp
from theorylab.nn.theory import MLP, Block, Head, TheoryTransformer

__all__ = ["compile_gridworld", "algorithm1", "gridworld_moves"]


def gridworld_moves(n: int, stay: bool) -> np.ndarray:
    """Move of each symbol of ``theorylab.automata.zoo.gridworld(n, stay)``: (L, R) or (L, ⊥, R)."""
    return np.array([-1, 0, 1]) if stay else np.array([-1, 1])


def algorithm1(S: int, moves, n_pads: int | None = None, q0: int = 0) -> np.ndarray:
    """Algorithm 1 on one move sequence (values in {-1, 0, 1}): the state after each prefix, computed from prefix
    sums only. ``n_pads`` L pads are prepended (default ``S + 1``; the printed count ``S`` can fail, giving -1 where
    $t_{\\rm uniq}$ is undefined)."""
    n_pads = S + 1 if n_pads is None else int(n_pads)
    pre = [-1] * n_pads + [1] * int(q0)
    z = list(itertools.accumulate(pre + [int(m) for m in moves]))
    last: dict[int, int] = {}  # value -> its latest position so far
    out = []
    for t, v in enumerate(z):
        last[v] = t
        if t < len(pre):
            continue
        # |{z_s..z_t}| counts the values last seen at or after s, so t_uniq is the (S+1)-th latest last visit
        latest = sorted(last.values(), reverse=True)
        if len(latest) <= S:
            out.append(-1)
            continue
        tu = latest[S]
        out.append(v - min(z[tu : t + 1]))
    return np.array(out, dtype=np.int64)


class _ReluProgram:
    """Builds a deep ReLU MLP from affine 'forms' (dicts unit -> coefficient, plus a bias) over the last layer."""

    def __init__(self, n_inputs: int):
        self.width = n_inputs
        self.weights: list[np.ndarray] = []
        self.biases: list[np.ndarray] = []

    def layer(self, forms: list) -> list:
        """A hidden layer of units relu(form); returns each unit as a form over the new layer."""
        W = np.zeros((self.width, len(forms)))
        b = np.zeros(len(forms))
        for j, (coef, bias) in enumerate(forms):
            for i, c in coef.items():
                W[i, j] += c
            b[j] = bias
        self.weights.append(W)
        self.biases.append(b)
        self.width = len(forms)
        return [({j: 1.0}, 0.0) for j in range(len(forms))]

    def finish(self, outputs: list) -> MLP:
        W = np.zeros((self.width, len(outputs)))
        b = np.zeros(len(outputs))
        for j, (coef, bias) in enumerate(outputs):
            for i, c in coef.items():
                W[i, j] += c
            b[j] = bias
        return MLP((*self.weights, W), (*self.biases, b))


def _add(f, g, a=1.0, b=1.0, const=0.0):
    coef = {k: a * v for k, v in f[0].items()}
    for k, v in g[0].items():
        coef[k] = coef.get(k, 0.0) + b * v
    return coef, a * f[1] + b * g[1] + const


def _reduce(prog: _ReluProgram, groups: list, keep: list, op: str) -> tuple[list, list]:
    """Pairwise max (``op='max'``) or min over each list of non-negative forms in ``groups``, passing the
    non-negative forms ``keep`` through; one ReLU layer per halving. Returns (results, kept forms)."""
    while any(len(g) > 1 for g in groups) or not groups:
        forms, plan = [], []
        for g in groups:
            new = []
            for i in range(0, len(g) - 1, 2):
                x, y = g[i], g[i + 1]
                # max(x,y) = y + relu(x-y); min(x,y) = y - relu(y-x); y >= 0 passes through relu unchanged
                diff = _add(x, y, 1.0, -1.0) if op == "max" else _add(y, x, 1.0, -1.0)
                new.append((len(forms), len(forms) + 1))
                forms += [diff, y]
            if len(g) % 2:
                new.append((len(forms),))
                forms.append(g[-1])
            plan.append(new)
        kept_idx = list(range(len(forms), len(forms) + len(keep)))
        forms += keep
        units = prog.layer(forms)
        groups = []
        for new in plan:
            g = []
            for item in new:
                if len(item) == 1:
                    g.append(units[item[0]])
                else:
                    d, y = units[item[0]], units[item[1]]
                    g.append(_add(y, d, 1.0, 1.0 if op == "max" else -1.0))
            groups.append(g)
        keep = [units[i] for i in kept_idx]
        if not groups:
            break
    return [g[0] for g in groups], keep


def _log_mlp2(prog: _ReluProgram, e_forms: list, S: int, u: int):
    """Variant (i): window coverage times by pairwise max, their argmin by pairwise min (depth O(log S))."""
    e_units = prog.layer(e_forms)
    windows = [[e_units[S + a_ + i] for i in range(S + 1)] for a_ in range(-S, 1)]
    Wa, _ = _reduce(prog, windows, [], "max")
    (M,), Wa = _reduce(prog, [list(Wa)], list(Wa), "min")
    tdel = 1.0 / (4 * u)  # Lemma 12 (corrected) on M - W_a + 1/(4u): +1/(4u) for the argmin, <= -1/(4u) else
    forms = []
    for w_ in Wa:
        arg = _add(M, w_, 1.0, -1.0, tdel)
        forms.append(_add(arg, arg, 1 / (1.5 * tdel), 0.0, 0.5))
        forms.append(_add(arg, arg, 1 / (1.5 * tdel), 0.0, -0.5))
    th_units = prog.layer(forms)
    out = ({}, 0.0)
    for i, a_ in enumerate(range(-S, 1)):
        out = _add(out, _add(th_units[2 * i], th_units[2 * i + 1], 1.0, -1.0), 1.0, float(-a_))
    return out


def _constant_mlp2(prog: _ReluProgram, e_forms: list, S: int, delta: float):
    """Variant (ii): $S^2$ Lemma-12 indicators $\\mathbb 1[e_{-i}>e_j]$, then a Lemma-11 lookup over the
    $\\binom{2S}{S}$ interleavings of the chains $e_0<e_{-1}<\\dots<e_{-S}$ and $e_0<e_1<\\dots<e_S$ (depth 4)."""
    th = threshold_mlp(delta)
    (w1, w2), (b1, _) = th.weights, th.biases
    pairs = [(i, j) for i in range(1, S + 1) for j in range(1, S + 1)]
    forms = []
    for i, j in pairs:
        diff = _add(e_forms[S - i], e_forms[S + j], 1.0, -1.0)
        forms += [_add(diff, diff, float(w1[0, k]), 0.0, float(b1[k])) for k in range(2)]
    th_units = prog.layer(forms)
    feats = [
        _add(th_units[2 * k], th_units[2 * k + 1], float(w2[0, 0]), float(w2[1, 0]))
        for k in range(len(pairs))
    ]
    points, values = [], []
    for pos_side in itertools.combinations(range(2 * S), S):  # ranks (after e_0) held by e_1..e_S
        rank = np.empty(2 * S + 1)
        rank[S] = 0
        neg = [r for r in range(2 * S) if r not in pos_side]
        rank[S + 1 :] = np.array(pos_side) + 1
        rank[:S] = (np.array(neg) + 1)[::-1]  # e_{-S} .. e_{-1}
        windows = [rank[a : a + S + 1].max() for a in range(S + 1)]
        points.append([float(rank[S - i] > rank[S + j]) for i, j in pairs])
        values.append(S - int(np.argmin(windows)))  # window a = k - S covers offsets k-S..k; q = -a
    lk = interp_mlp(np.array(points), np.array(values, dtype=np.float64))
    (L1, L2, L3), (c1, c2, c3) = lk.weights, lk.biases
    units = prog.layer([_lin(feats, L1[:, k], c1[k]) for k in range(L1.shape[1])])
    units = prog.layer([_lin(units, L2[:, k], c2[k]) for k in range(L2.shape[1])])
    return _lin(units, L3[:, 0], c3[0])


def _lin(forms: list, coefs, bias: float):
    out = ({}, float(bias))
    for f, c in zip(forms, coefs, strict=True):
        if c:
            out = _add(out, f, 1.0, float(c))
    return out


def compile_gridworld(
    n: int,
    T: int,
    q0: int = 0,
    *,
    stay: bool = False,
    printed_unmatched: bool = False,
    printed_bos: bool = False,
    mlp2: str = "log",
) -> CompiledTransformer:
    """Theorem 12 (corrected): a Transformer with 2 attention layers ($2S+1$ heads in layer 2) simulating
    ``theorylab.automata.zoo.gridworld(n, stay)`` ($S=n-1$) from ``q0`` on words of length ``<= T``.
    MLP 1 has width $4(2u+1)$; MLP 2 has depth $O(\\log S)$ and width $O(S)$ (``mlp2="log"``, variant (i)) or
    a constant depth and width $2^{O(S)}$ (``mlp2="constant"``, variant (ii)); weights are poly(T)."""
    if mlp2 not in ("log", "constant"):
        raise ValueError(f"mlp2 must be 'log' or 'constant', got {mlp2!r}")
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 1:
        raise ValueError(f"n (number of states) must be an int >= 1, got {plain(n)}")
    T = check_length(T)
    S = int(n) - 1
    if isinstance(q0, bool) or not isinstance(q0, (int, np.integer)) or not 0 <= q0 <= S:
        raise ValueError(f"q0 = {plain(q0)} is out of range: states are range({n})")
    moves = gridworld_moves(n, stay)
    pads = [-1] * (S + 1) + [1] * int(q0)
    m = len(pads)
    u = m + T
    offsets = np.arange(-S, S + 1)
    names = ["v", "bos", "gamma1", "gamma2", "one", "x", "cos", "sin", "out"]
    names += [f"r{o}" for o in offsets] + [f"xm{o}" for o in offsets]
    ch = {nm: i for i, nm in enumerate(names)}
    d = len(names)
    # ---- layer 1: prefix sum (Lemma 15) and MLP 1: x -> (cos pi x, sin pi x)
    e = np.eye(d)
    head1 = Head(e[:, [ch["gamma1"]]], e[:, [ch["bos"]]], e[:, [ch["v"]]], e[[ch["x"]]])
    xs = np.arange(-u, u + 1) / (2.0 * u)
    mlp1 = interp_mlp_1d(xs, np.stack([np.cos(np.pi * xs), np.sin(np.pi * xs)], 1))
    W1 = np.zeros((d, mlp1.weights[0].shape[1]))
    W1[ch["x"]] = mlp1.weights[0]
    W2 = np.zeros((mlp1.weights[1].shape[0], d))
    W2[:, [ch["cos"], ch["sin"]]] = mlp1.weights[1]
    block1 = Block((head1,), MLP((W1, W2), (mlp1.biases[0], np.zeros(d))))
    # ---- layer 2: one most-recent-match head per offset
    a = np.pi / (2 * u)
    c = (1 - np.cos(a)) / (2 * np.log(2))  # recency spread c log 2 is half the smallest value gap
    gap = c / (2 * u)  # smallest score gap / beta (between two rows in the same value class)
    beta = np.log(1024.0 * u * (u + 1)) / gap  # copy error <= 1/(64u) (Lemma 13)
    heads2 = []
    for o in offsets:
        th = o * a
        W_Q = np.zeros((d, 3))
        W_Q[ch["cos"], :2] = beta * np.array([np.cos(th), np.sin(th)])
        W_Q[ch["sin"], :2] = beta * np.array([-np.sin(th), np.cos(th)])
        W_Q[ch["one"], 2] = -beta * c
        W_K = np.zeros((d, 3))
        W_K[ch["cos"], 0] = W_K[ch["sin"], 1] = W_K[ch["gamma2"], 2] = 1.0
        W_V = e[:, [ch["gamma2"], ch["x"]]]
        W_C = e[[ch[f"r{o}"], ch[f"xm{o}"]]]
        heads2.append(Head(W_Q, W_K, W_V, W_C))
    # ---- MLP 2: matched flags, window coverage times, argmin
    inputs = [ch["x"], ch["gamma2"]] + [ch[f"r{o}"] for o in offsets] + [ch[f"xm{o}"] for o in offsets]
    pos = {c_: i for i, c_ in enumerate(inputs)}
    prog = _ReluProgram(len(inputs))
    dp = (1.0 / (2 * u)) / 4  # Lemma 10 bump with Delta = 1/(2u)
    first, bump_units, r_units = [], [], []
    for o in offsets:
        if printed_unmatched:  # flag unmatched iff the head attended to t itself (recency == gamma_t)
            lin = {pos[ch[f"r{o}"]]: 1.0, pos[ch["gamma2"]]: -1.0}
            dpr = 1.0 / (16 * u)
            bias0 = 0.0
        else:  # matched iff x_j - x_t == o/(2u)
            lin = {pos[ch[f"xm{o}"]]: 1.0, pos[ch["x"]]: -1.0}
            dpr = dp
            bias0 = -o / (2.0 * u)
        units = []
        for off in (2.0, 1.0, -1.0, -2.0):
            units.append(len(first))
            first.append(({k: v / dpr for k, v in lin.items()}, bias0 / dpr + off))
        bump_units.append((units, printed_unmatched and o != 0))
        r_units.append(len(first))
        first.append(({pos[ch[f"r{o}"]]: 1.0}, 0.0))
    units = prog.layer(first)
    big = 2 * np.log(2.0 * u) + 2
    e_forms = []
    for (bu, invert), ru, o in zip(bump_units, r_units, offsets, strict=True):
        ind = ({bu[0]: 1.0, bu[1]: -1.0, bu[2]: -1.0, bu[3]: 1.0}, 0.0)  # 1 on the plateau
        matched = _add(ind, ind, -1.0, 0.0, 1.0) if invert else ind  # printed: matched = not "attended to t"
        # constant: distinct bigs, increasing away from o = 0 on each side (keeps the chain order)
        bg = big if mlp2 == "log" else big * (1 + 2 * abs(int(o)) + int(o > 0))
        e_forms.append(_add(units[ru], matched, 1.0, -bg, bg))  # recency if matched, else >= big
    if mlp2 == "constant":
        out = _constant_mlp2(prog, e_forms, S, 1.0 / (4 * u))
    else:
        out = _log_mlp2(prog, e_forms, S, u)
    mlp2_kind, mlp2 = mlp2, prog.finish([out])
    mlp_layers = 5 if mlp2_kind == "constant" else 4 + 2 * int(np.ceil(np.log2(S + 1)))
    Wf = np.zeros((d, mlp2.weights[0].shape[1]))
    Wf[inputs] = mlp2.weights[0]
    WL = np.zeros((mlp2.weights[-1].shape[0], d))
    WL[:, ch["out"]] = mlp2.weights[-1][:, 0]
    bL = np.zeros(d)
    bL[ch["out"]] = mlp2.biases[-1][0]
    block2 = Block(tuple(heads2), MLP((Wf, *mlp2.weights[1:-1], WL), (*mlp2.biases[:-1], bL)))
    net = TheoryTransformer((block1, block2))
    # ---- encoder: padding row, pad moves (part of the fixed prefix), symbols
    emb = np.zeros((len(moves), d))
    emb[:, ch["v"]] = moves
    emb[:, ch["one"]] = 1.0
    prefix = np.zeros((1 + m, d))
    prefix[0, ch["bos"]] = 1.0
    prefix[:, ch["one"]] = 1.0
    prefix[1:, ch["v"]] = pads
    t = np.arange(m + T + 1)
    positions = np.zeros((m + T + 1, d))
    positions[1:, ch["gamma1"]] = np.log(2.0 * u - t[1:])
    positions[1:, ch["gamma2"]] = np.log(2.0 * u - t[1:])
    positions[0, ch["gamma2"]] = 0.0 if printed_bos else np.log(2.0 * u)
    bounds = {"depth": 2, "n_heads": 2 * S + 1, "mlp_layers": mlp_layers}
    return CompiledTransformer(
        net, emb, prefix, positions, (ch["out"],), (n,), np.arange(n), T, f"thm12[Grid{n}]", int(q0),
        {"claim": "automata.thm12", "bounds": bounds, "beta": beta, "c": c, "pads": m,
         "mlp2": mlp2_kind},
    )  # fmt: skip
