r"""VGB: value-guided sampling with stochastic backtracking (Li Algorithm 2, §3.3, `003_69b23422e33c905a.txt`).

A lazy nearest-neighbour walk on the prefix tree $\bigcup_{h\le H}\Sigma^h$. From $u=y_{1:h}$ the unnormalised move
weights are $\widehat V(u)$ to the parent ($h>0$) and $\pi_{\rm ref}(a\mid u)\widehat V(u\circ a)$ to each child
($h<H$); with probability 1/2 the walk stays. Multiplying by $\pi_{\rm ref}(u)$ shows the walk is the random walk
on the tree with edge weights $w(\mathrm{parent}(c),c)=\pi_{\rm ref}(c)\widehat V(c)$, hence reversible with
stationary law $\tilde\pi(u)\propto W(u)=\sum_{e\ni u}w(e)$ (derived). Consequences encoded here:

* leaf conditional $\tilde\pi(y\mid\text{leaf})\propto\pi_{\rm ref}(y)\tau(y)=\pi^*(y)$ for *any* positive internal
  $\widehat V$ once leaf values equal the reward $\tau$;
* with exact values $V^*$ every level carries edge weight $Z=\mathbb E_{\pi_{\rm ref}}\tau$, so the leaf mass is
  exactly $1/(2H)$, and the lazy chain's spectral gap is $(1-\cos\frac{\pi}{2H})/2$;
* the first leaf reached has the law of the unit current flow from the root to the grounded leaves: at each node
  the flow splits in proportion to the branch conductance ``series(w, C(child))`` (exact in Fractions).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable
from fractions import Fraction
from numbers import Real

import numpy as np

from theorylab._fmt import plain
from theorylab.generation.oracles import Oracle

__all__ = ["VGB", "vgb", "vgb_gap_formula"]

Prefix = tuple[int, ...]


def vgb_gap_formula(H: int) -> float:
    """$(1-\\cos(\\pi/(2H)))/2$: the lazy VGB chain's spectral gap with exact values (derived)."""
    return (1 - math.cos(math.pi / (2 * H))) / 2


class VGB:
    """The VGB walk on the prefix tree of depth ``H`` with values ``value(prefix)``; leaves use ``reward`` when
    given (Algorithm 2, line 2). Nodes of value 0 (and their subtrees) are removed: the walk lives on the support,
    as in the Sinclair-Jerrum walk; every kept internal node must reach a kept leaf."""

    def __init__(
        self,
        oracle: Oracle,
        H: int,
        value: Callable[[Prefix], Real],
        reward: Callable[[Prefix], Real] | None = None,
    ) -> None:
        if isinstance(H, bool) or not isinstance(H, int):
            raise TypeError(f"horizon H must be an int, got {type(H).__name__}")
        if H < 1:
            raise ValueError(f"horizon H must be >= 1, got {H}")
        k = oracle.vocab_size
        # nodes of the complete k-ary tree of depth H (a path of H + 1 nodes for k = 1)
        if (H + 1 if k == 1 else (k ** (H + 1) - 1) // (k - 1)) > 200_000:
            raise ValueError(f"the prefix tree with |Sigma|={k}, H={H} is too large to enumerate")
        self.oracle, self.H, self.k = oracle, H, k
        self.values: dict[Prefix, Real] = {}
        self.nodes: list[Prefix] = []
        for h in range(H + 1):
            for u in itertools.product(range(k), repeat=h):
                if u and u[:-1] not in self.values:
                    continue  # below a zero-valued node: outside the walk's support
                v = reward(u) if (reward is not None and h == H) else value(u)
                if v < 0:
                    raise ValueError(f"value at {u} is {v}; VGB needs non-negative values")
                if v > 0:
                    self.values[u] = v
                    self.nodes.append(u)
        if not any(len(u) == H for u in self.nodes):
            raise ValueError(
                "every leaf has value 0 (or lies below a zero-valued node): the walk has no leaf"
            )
        self.index = {u: i for i, u in enumerate(self.nodes)}
        self.ref: dict[Prefix, Real] = {(): Fraction(1) if _exact(oracle) else 1.0}
        for u in self.nodes:
            if len(u) < H:
                for a, p in enumerate(oracle.probs(u)):
                    self.ref[u + (a,)] = self.ref[u] * p
        # edge weight on the edge (parent(c), c); nodes with value 0 are removed (Sinclair-Jerrum: restrict to support)
        self.weight = {c: self.ref[c] * self.values[c] for c in self.nodes if c}
        self.children = {u: [u + (a,) for a in range(k) if u + (a,) in self.values] for u in self.nodes}
        self.W = {u: self._W(u) for u in self.nodes}
        if any(w == 0 for w in self.W.values()):
            raise ValueError("a node has zero total edge weight (the base model puts 0 mass on its subtree)")

    def _W(self, u: Prefix) -> Real:
        return (self.weight[u] if u else 0) + sum(self.weight[c] for c in self.children[u])

    @property
    def leaves(self) -> list[Prefix]:
        return [u for u in self.nodes if len(u) == self.H]

    def transition_matrix(self, lazy: bool = True, exact: bool = False):
        """Rows = $P(u,\\cdot)$; Fractions (list of lists) when ``exact``, else a float64 array."""
        n = len(self.nodes)
        P = [[0] * n for _ in range(n)] if exact else np.zeros((n, n))
        for u, i in self.index.items():
            nbrs = ([(u[:-1], self.weight[u])] if u else []) + [(c, self.weight[c]) for c in self.children[u]]
            for v, w in nbrs:
                val = w / self.W[u]
                P[i][self.index[v]] = (val / 2 if lazy else val) if exact else float(val) / (2 if lazy else 1)
            if lazy:
                P[i][i] = Fraction(1, 2) if exact else 0.5
        return P

    def stationary(self) -> dict[Prefix, Real]:
        """$\\tilde\\pi(u)=W(u)/\\sum_vW(v)$ (exact when the inputs are)."""
        Z = sum(self.W.values())
        return {u: w / Z for u, w in self.W.items()}

    def leaf_mass(self) -> Real:
        pi = self.stationary()
        return sum(pi[y] for y in self.leaves)

    def leaf_law(self) -> dict[Prefix, Real]:
        """Stationary law conditioned on leaves."""
        pi = self.stationary()
        m = sum(pi[y] for y in self.leaves)
        return {y: pi[y] / m for y in self.leaves}

    def target(self) -> dict[Prefix, Real]:
        """$\\pi^*(y)\\propto\\pi_{\\rm ref}(y)\\,\\widehat V(y)$ on leaves (= $\\pi_{\\rm ref}\\tau$ when leaves carry the reward)."""
        Z = sum(self.weight[y] for y in self.leaves)
        return {y: self.weight[y] / Z for y in self.leaves}

    def spectral_gap(self, lazy: bool = True) -> float:
        """$1-\\lambda_2$ of the chain (float64 eigenvalues of $D^{1/2}PD^{-1/2}$, symmetric by reversibility)."""
        return 1.0 - float(self.eigenvalues(lazy)[-2])

    def eigenvalues(self, lazy: bool = True) -> np.ndarray:
        P = self.transition_matrix(lazy=lazy)
        pi = np.array([float(w) for w in self.W.values()])
        s = np.sqrt(pi)
        S = (s[:, None] * P) / s[None, :]
        return np.linalg.eigvalsh((S + S.T) / 2)

    def first_leaf_law(self) -> dict[Prefix, Real]:
        """Law of the first leaf the walk (started at the root) reaches: current splitting on the tree."""
        conductance: dict[Prefix, Real | None] = {}
        for u in reversed(self.nodes):  # leaves first
            if len(u) == self.H:
                conductance[u] = None  # grounded: infinite conductance to the boundary
            else:
                conductance[u] = sum(self._branch(c, conductance) for c in self.children[u])
        law: dict[Prefix, Real] = {}
        flow: dict[Prefix, Real] = {(): Fraction(1) if _exact(self.oracle) else 1.0}
        for u in self.nodes:
            if len(u) == self.H:
                law[u] = flow[u]
                continue
            branches = [self._branch(c, conductance) for c in self.children[u]]
            total = sum(branches)
            for c, b in zip(self.children[u], branches, strict=True):
                flow[c] = flow[u] * b / total
        return law

    def value_guided_law(self) -> dict[Prefix, Real]:
        r"""Value-guided tokenwise sampling without backtracking: descend from the root choosing child $u\circ a$
        with probability $\propto\pi_{\rm ref}(a\mid u)\widehat V(u\circ a)$."""
        law: dict[Prefix, Real] = {(): Fraction(1) if _exact(self.oracle) else 1.0}
        for u in self.nodes:
            if self.children[u]:
                total = sum(self.weight[c] for c in self.children[u])
                for c in self.children[u]:
                    law[c] = law[u] * self.weight[c] / total
        return {y: law[y] for y in self.leaves}

    def _branch(self, c: Prefix, conductance) -> Real:
        w, C = self.weight[c], conductance[c]
        return w if C is None else w * C / (w + C)

    def sample(self, rng: np.random.Generator, T: int, output: str = "final", start: Prefix = ()) -> Prefix:
        """Run the lazy walk ``T`` steps. ``output``: "final" ($y^{(T)}$), "uniform_time" ($y^{(i)}$, $i\\sim U[T]$),
        or "first_leaf" (the first leaf reached; T is then a cap, ValueError if none is reached)."""
        if output not in ("final", "uniform_time", "first_leaf"):
            raise ValueError(f"output must be 'final', 'uniform_time' or 'first_leaf', got {output!r}")
        if isinstance(T, bool) or not isinstance(T, int) or T < 1:
            raise ValueError(f"the number of steps T must be an int >= 1, got {plain(T)}")
        if not hasattr(self, "_cdf"):
            P = self.transition_matrix(lazy=True)
            self._cdf = np.cumsum(P, axis=1)
            # a float row may sum to 1 - 2^-53: a draw above its total goes to the row's last reachable node
            self._last = P.shape[1] - 1 - np.argmax(P[:, ::-1] > 0, axis=1)
        cdf, last = self._cdf, self._last
        i = self.index[tuple(start)]
        stop = rng.integers(1, T + 1) if output == "uniform_time" else T
        for step in range(1, T + 1):
            j = int(np.searchsorted(cdf[i], rng.random(), side="right"))
            i = j if j < len(self.nodes) else int(last[i])
            if output == "first_leaf" and len(self.nodes[i]) == self.H:
                return self.nodes[i]
            if output == "uniform_time" and step == stop:
                return self.nodes[i]
        if output == "first_leaf":
            raise ValueError(f"no leaf reached within T={T} steps")
        return self.nodes[i]

    def as_chain(self):
        """The lazy walk as a ``theorylab.markov.FiniteChain`` (imported lazily; needs that module)."""
        try:
            from theorylab.markov import FiniteChain  # noqa: PLC0415
        except ImportError as err:  # pragma: no cover - depends on the markov module being present
            raise ImportError("theorylab.markov.FiniteChain is not available in this installation") from err
        pi = self.stationary()
        return FiniteChain(self.transition_matrix(lazy=True), pi=np.array([float(pi[u]) for u in self.nodes]))


def vgb(oracle: Oracle, H: int, value: Callable[[Prefix], Real], reward=None) -> VGB:
    """Build the VGB walk (see :class:`VGB`)."""
    return VGB(oracle, H, value, reward)


def _exact(oracle: Oracle) -> bool:
    from fractions import Fraction as F  # noqa: PLC0415

    return all(isinstance(p, int | F) for p in oracle.probs(()))
