r"""Bounded Dyck languages $\mathsf{Dyck}_{k,D}$ and the generator distribution $\mathcal D_{q,k,D,N}$.

Token convention (0-based; the documents use 1-based ids $2t-1$ / $2t$): bracket type $t\in\{0..k-1\}$ has
open token ``2t`` and close token ``2t + 1``. The depth of the token at position $i$ is the stack depth
*after* reading it, so opens live at depths $1..D$ and closes at depths $0..D-1$; a matched pair at level $d$
is (open at $d$, close at $d-1$).

The distribution (Liu Def 12 = Li Def 2.2.1; Liu's Eq 3.20 is cut off in the text copy, so it is reconstructed
from the prose, and Li's complete Eq 2.39 agrees): a Markov chain on the stack that, at depth 0, opens a
uniformly random type; at depth $D$, closes the top; otherwise opens each type with probability $q/k$ or closes
the top with probability $1-q$. Equivalently

$$p(w_{1:N}) = (1/k)^{\#\{\text{opens to depth }1\}}\,(q/k)^{\#\{\text{opens to depth}>1\}}
\,(1-q)^{\#\{\text{closes from depth}<D\}},$$

which is already normalised (the printed "$\propto$" is an equality).
"""

from __future__ import annotations

import functools
import itertools
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from theorylab._fmt import plain

__all__ = ["Dyck", "PopulationLoss"]


@dataclass(frozen=True)
class PopulationLoss:
    r"""Exact population squared loss (3.21)-(3.22) of a predictor at length ``length``.

    ``loss = optimal + excess``; ``optimal`` is the Bayes loss $\mathbb E\frac1N\sum_i(1-\|p_i\|^2)$ and
    ``excess`` is $\mathbb E\frac1N\sum_i\|f_i-p_i\|^2$.
    """

    length: int
    loss: float
    optimal: float
    excess: float
    max_error: float  # max over all prefixes of ||f - p||_inf


@dataclass(frozen=True)
class Dyck:
    r"""$\mathsf{Dyck}_{k,D}$ with generator parameter ``q`` (probability of opening when both moves are
    legal)."""

    k: int
    depth: int
    q: float | Fraction = 0.5

    def __post_init__(self) -> None:
        for name in ("k", "depth"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int | np.integer):
                raise TypeError(f"{name} must be an int, got {type(value).__name__}")
        if self.k < 1:
            raise ValueError(f"k must be >= 1 (number of bracket types), got {self.k}")
        if self.depth < 1:
            raise ValueError(f"depth must be >= 1 (maximal stack depth D), got {self.depth}")
        if not isinstance(self.q, float | int | Fraction | np.floating) or not 0 < self.q < 1:
            raise ValueError(f"q must be a number in the open interval (0, 1), got {plain(self.q)}")

    # ------------------------------------------------------------------------------------------ basics
    @property
    def vocab_size(self) -> int:
        """Number of bracket tokens $2k$ (the start token of the model is id ``2k``)."""
        return 2 * self.k

    def _as_tokens(self, tokens: Sequence[int] | np.ndarray, *, batch: bool = False) -> np.ndarray:
        arr = np.asarray(tokens)
        if arr.size == 0:
            arr = arr.reshape((0,) if not batch else (arr.shape[0] if arr.ndim else 0, 0))
        if arr.dtype.kind == "f" and arr.size and not np.all(np.isfinite(arr)):
            raise ValueError("tokens contain NaN or inf")
        if arr.size and arr.dtype.kind not in "iu":
            if arr.dtype.kind == "f" and np.all(arr == np.round(arr)):
                arr = arr.astype(np.int64)
            else:
                raise TypeError(f"tokens must be integers, got dtype {arr.dtype}")
        arr = arr.astype(np.int64)
        if batch and arr.ndim != 2:
            raise ValueError(f"expected a batch of token sequences of shape [B, T], got shape {arr.shape}")
        if not batch and arr.ndim != 1:
            raise ValueError(f"expected a 1-d token sequence, got shape {arr.shape}")
        if arr.size and (arr.min() < 0 or arr.max() >= self.vocab_size):
            raise ValueError(
                f"tokens outside the alphabet {{0..{self.vocab_size - 1}}} of Dyck_{self.k}: "
                f"found {int(arr.min())}..{int(arr.max())}"
            )
        return arr

    def depths(self, tokens: Sequence[int] | np.ndarray) -> np.ndarray:
        """Grammar depth after each token (no validity check; opens +1, closes -1)."""
        arr = self._as_tokens(tokens, batch=np.ndim(tokens) == 2)
        return np.cumsum(1 - 2 * (arr % 2), axis=-1)

    def scan(self, tokens: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        r"""Run the stack automaton on a batch ``[B, T]``.

        Returns ``(valid, depth, top)`` of shape ``[B, T+1]`` each, for the prefixes of length ``0..T``:
        ``valid`` (the prefix is in $\mathsf{Dyck}_{k,D,n}$), ``depth`` and ``top`` (type of the top of the
        stack, ``-1`` when empty). After an invalid step ``depth`` / ``top`` are meaningless. Without a loop
        over positions up to a batch x depth of 2048 (the depths a cumulative sum, the top after a prefix the
        type of the latest open that reached its depth), token by token beyond.
        """
        arr = self._as_tokens(tokens, batch=True)
        B, T = arr.shape
        if B * T <= _SCAN_LOOP_UP_TO:  # a few tokens (one prefix): a plain loop beats ~25 array operations
            return self._scan_loop(arr)
        if B * self.depth > _SCAN_STEPWISE_FROM:  # wide batches: token by token (passes over B, not B x T)
            return self._scan_stepwise(arr)
        typ, is_close = arr // 2, arr % 2 == 1
        # the walk as if every step were allowed: depth after each prefix, and the top of the stack after prefix
        # p = the type of the latest open that raised the depth to depth[p] (a later pop and push would be later)
        dep = np.zeros((B, T + 1), dtype=np.int64)
        np.cumsum(np.where(is_close, -1, 1), axis=1, out=dep[:, 1:])
        top = _latest_open_types(dep, typ, ~is_close, self.depth)
        before, top_before = dep[:, :-1], top[:, :-1]  # depth and top before each token
        step_ok = np.where(is_close, (before > 0) & (top_before == typ), before < self.depth)
        valid = np.ones((B, T + 1), dtype=bool)
        np.logical_and.accumulate(step_ok, axis=1, out=valid[:, 1:])
        # a rejected token freezes the automaton: depth and top stay those before the first rejected token
        first_bad = np.where(valid[:, -1], T, np.argmin(valid, axis=1) - 1)
        upto = np.minimum(np.arange(T + 1), first_bad[:, None])
        depths = np.take_along_axis(dep, upto, axis=1)
        tops = np.take_along_axis(top, upto, axis=1)
        return valid, depths, tops

    def _scan_loop(self, arr: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """:meth:`scan` in plain Python, a list as the stack of each sequence (for a few tokens)."""
        B, T = arr.shape
        valid, depths, tops = [], [], []
        for row in arr.tolist():
            stack: list[int] = []
            ok, v, d, t = True, [True], [0], [-1]
            for tok in row:
                if ok:
                    typ, close = divmod(tok, 2)
                    if close and stack and stack[-1] == typ:
                        stack.pop()
                    elif not close and len(stack) < self.depth:
                        stack.append(typ)
                    else:  # a rejected token freezes the automaton
                        ok = False
                v.append(ok)
                d.append(len(stack))
                t.append(stack[-1] if stack else -1)
            valid.append(v)
            depths.append(d)
            tops.append(t)
        shape = (B, T + 1)
        return (
            np.array(valid, dtype=bool).reshape(shape),
            np.array(depths, dtype=np.int64).reshape(shape),
            np.array(tops, dtype=np.int64).reshape(shape),
        )

    def _scan_stepwise(self, arr: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """:meth:`scan` one token at a time: one lookup per token in the transition table of the stack automaton
        (states = stacks of depth <= D) while it is small, an explicit stack array per sequence beyond."""
        n_states = sum(self.k**d for d in range(self.depth + 1))
        if n_states > _STACK_TABLE_MAX:
            return self._scan_stepwise_arrays(arr)
        step, state_depth, state_top = _stack_automaton(self.k, self.depth)
        B, T = arr.shape
        flat, columns = step.ravel(), np.ascontiguousarray(arr.T)
        ok = np.ones(B, dtype=bool)
        valid = np.ones((T + 1, B), dtype=bool)
        states = np.zeros((T + 1, B), dtype=np.int64)  # state 0: the empty stack
        for i in range(T):
            nxt = flat[states[i] * step.shape[1] + columns[i]]
            ok &= nxt >= 0
            states[i + 1] = np.where(ok, nxt, states[i])  # a rejected token freezes the automaton
            valid[i + 1] = ok
        states = states.T
        return valid.T.copy(), state_depth[states], state_top[states]

    def _scan_stepwise_arrays(self, arr: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """:meth:`scan` one token at a time (an explicit stack array per sequence)."""
        B, T = arr.shape
        stack = np.zeros((B, self.depth + 1), dtype=np.int64)
        depth = np.zeros(B, dtype=np.int64)
        ok = np.ones(B, dtype=bool)
        valid = np.ones((B, T + 1), dtype=bool)
        depths = np.zeros((B, T + 1), dtype=np.int64)
        tops = np.full((B, T + 1), -1, dtype=np.int64)
        rows = np.arange(B)
        for i in range(T):
            tok = arr[:, i]
            typ, is_close = tok // 2, tok % 2 == 1
            top = np.where(depth > 0, stack[rows, np.clip(depth - 1, 0, None)], -1)
            ok &= np.where(is_close, (depth > 0) & (top == typ), depth < self.depth)
            push = ok & ~is_close
            stack[rows[push], depth[push]] = typ[push]
            depth = np.where(ok, depth + np.where(is_close, -1, 1), depth)
            valid[:, i + 1] = ok
            depths[:, i + 1] = depth
            tops[:, i + 1] = np.where(depth > 0, stack[rows, np.clip(depth - 1, 0, None)], -1)
        return valid, depths, tops

    def is_prefix(self, tokens: Sequence[int] | np.ndarray) -> bool:
        r"""Whether ``tokens`` is in $\mathsf{Dyck}_{k,D,N}$ (a valid prefix of a depth-$\le D$ Dyck word)."""
        arr = self._as_tokens(tokens)
        return bool(self.scan(arr[None, :])[0][0, -1])

    def is_word(self, tokens: Sequence[int] | np.ndarray) -> bool:
        r"""Whether ``tokens`` is a complete word of $\mathsf{Dyck}_{k,D}$ (valid prefix ending at depth
        0)."""
        arr = self._as_tokens(tokens)
        valid, depth, _ = self.scan(arr[None, :])
        return bool(valid[0, -1] and depth[0, -1] == 0)

    def _require_prefixes(self, arr: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        valid, depth, top = self.scan(arr)
        if not valid[:, -1].all():
            bad = int(np.flatnonzero(~valid[:, -1])[0])
            pos = int(np.flatnonzero(~valid[bad])[0]) - 1
            raise ValueError(
                f"sequence {bad} is not a prefix of Dyck_{{{self.k},{self.depth}}}: token "
                f"{int(arr[bad, pos])} at position {pos} (a close must match the top of the stack, "
                f"depth must stay in 0..{self.depth})"
            )
        return depth, top

    # ------------------------------------------------------------------------------------ distribution
    def _table(self, exact: bool) -> tuple:
        one = Fraction(1) if exact else 1.0
        q = Fraction(self.q) if exact else float(self.q)
        return one, q

    def next_token_distribution(self, prefix: Sequence[int] | np.ndarray, exact: bool = False):
        r"""Exact next-token distribution $p(\cdot\mid\text{prefix})$ over the $2k$ tokens.

        With ``exact=True`` a tuple of :class:`fractions.Fraction` (``q`` taken as an exact rational),
        otherwise a float64 array. Raises ``ValueError`` if ``prefix`` is not in $\mathsf{Dyck}_{k,D,N}$.
        """
        arr = self._as_tokens(prefix)
        depth, top = self._require_prefixes(arr[None, :])
        d, t = int(depth[0, -1]), int(top[0, -1])
        one, q = self._table(exact)
        zero = one * 0
        out = [zero] * self.vocab_size
        if d == 0:
            for s in range(self.k):
                out[2 * s] = one / self.k
        elif d == self.depth:
            out[2 * t + 1] = one
        else:
            for s in range(self.k):
                out[2 * s] = q / self.k
            out[2 * t + 1] = one - q
        return tuple(out) if exact else np.array(out, dtype=np.float64)

    def next_token_distributions(self, tokens: np.ndarray) -> np.ndarray:
        """Batched truth: ``[B, T+1, 2k]``, the next-token distribution after each prefix length ``0..T``."""
        arr = self._as_tokens(tokens, batch=True)
        depth, top = self._require_prefixes(arr)
        return self._distribution_from_state(depth, top)

    def _distribution_from_state(self, depth: np.ndarray, top: np.ndarray) -> np.ndarray:
        k, q = self.k, float(self.q)
        out = np.zeros((*depth.shape, 2 * k), dtype=np.float64)
        p_open = np.where(depth == 0, 1.0 / k, np.where(depth == self.depth, 0.0, q / k))
        out[..., 0::2] = p_open[..., None]
        p_close = np.where(depth == 0, 0.0, np.where(depth == self.depth, 1.0, 1.0 - q))
        idx = np.clip(2 * top + 1, 1, 2 * k - 1)
        np.put_along_axis(out, idx[..., None], np.where(depth > 0, p_close, 0.0)[..., None], axis=-1)
        return out

    def probability(self, tokens: Sequence[int] | np.ndarray, exact: bool = True):
        r"""$p(w_{1:N})$ under $\mathcal D_{q,k,D,N}$ (0 for strings outside $\mathsf{Dyck}_{k,D,N}$)."""
        arr = self._as_tokens(tokens)
        valid, depth, _ = self.scan(arr[None, :])
        one, q = self._table(exact)
        if not valid[0, -1]:
            return one * 0
        prob = one
        for i, tok in enumerate(arr):
            before = int(depth[0, i])
            if tok % 2 == 0:
                prob *= one / self.k if before == 0 else q / self.k
            elif before < self.depth:
                prob *= one - q
        return prob

    def factor_counts(self, tokens: np.ndarray) -> np.ndarray:
        r"""Exponents of Eq (3.20) per sequence, ``[B, 3]``: opens to depth 1 (factor $1/k$), opens to depth $>1$
        (factor $q/k$) and closes from depth $<D$ (factor $1-q$); forced closes from depth $D$ have factor 1.
        Raises on non-prefixes."""
        arr = self._as_tokens(tokens, batch=True)
        depth, _ = self._require_prefixes(arr)
        before, opening = depth[:, :-1], arr % 2 == 0
        return np.stack(
            [
                np.sum(opening & (before == 0), axis=1),
                np.sum(opening & (before > 0), axis=1),
                np.sum(~opening & (before < self.depth), axis=1),
            ],
            axis=1,
        )

    def probabilities(self, tokens: np.ndarray) -> list[Fraction]:
        r"""Exact $p(w_{1:N})$ for a batch ``[B, N]`` of prefixes (Fractions), one exact power product per distinct
        exponent triple of :meth:`factor_counts`. Raises on non-prefixes."""
        counts = self.factor_counts(tokens)
        q = Fraction(self.q)
        factors = (Fraction(1, self.k), q / self.k, 1 - q)
        triples, inverse = np.unique(counts, axis=0, return_inverse=True)
        values = [factors[0] ** int(a) * factors[1] ** int(b) * factors[2] ** int(c) for a, b, c in triples]
        return [values[i] for i in np.asarray(inverse).reshape(-1)]

    # ---------------------------------------------------------------------------------------- sampling
    def sample(self, rng: np.random.Generator, n: int, length: int) -> np.ndarray:
        r"""``n`` i.i.d. prefixes from $\mathcal D_{q,k,D,\text{length}}$ as an int64 array ``[n,
        length]``."""
        if not isinstance(rng, np.random.Generator):
            raise TypeError("rng must be a numpy.random.Generator")
        if n < 0 or length < 0:
            raise ValueError(f"n and length must be >= 0, got n={n}, length={length}")
        k, D, q = self.k, self.depth, float(self.q)
        out = np.empty((n, length), dtype=np.int64)
        if k**D < 2**62:  # the stack as base-k digits of one int64 (top = code % k): fewer array operations
            code = np.zeros(n, dtype=np.int64)
            depth = np.zeros(n, dtype=np.int64)
            for i in range(length):
                u = rng.random(n)
                typ = rng.integers(0, k, size=n)
                opening = (depth == 0) | ((depth < D) & (u < q))  # P(open) = 1 at depth 0, 0 at D, else q
                out[:, i] = np.where(opening, 2 * typ, 2 * (code % k) + 1)
                code = np.where(opening, code * k + typ, code // k)
                depth += np.where(opening, 1, -1)
            return out
        stack = np.zeros((n, D + 1), dtype=np.int64)
        depth = np.zeros(n, dtype=np.int64)
        rows = np.arange(n)
        for i in range(length):
            u = rng.random(n)
            typ = rng.integers(0, k, size=n)
            p_open = np.where(depth == 0, 1.0, np.where(depth == D, 0.0, q))
            opening = u < p_open
            top = stack[rows, np.clip(depth - 1, 0, None)]
            out[:, i] = np.where(opening, 2 * typ, 2 * top + 1)
            stack[rows[opening], depth[opening]] = typ[opening]
            depth = depth + np.where(opening, 1, -1)
        return out

    # ---------------------------------------------------------------------------------------- counting
    def count_prefixes(self, length: int) -> int:
        r"""$|\mathsf{Dyck}_{k,D,N}|$ by dynamic programming over the depth ($k$ choices per open), exact
        int."""
        if length < 0:
            raise ValueError(f"length must be >= 0, got {length}")
        counts = [1] + [0] * self.depth
        for _ in range(length):
            new = [0] * (self.depth + 1)
            for d, c in enumerate(counts):
                if c:
                    if d < self.depth:
                        new[d + 1] += c * self.k
                    if d > 0:
                        new[d - 1] += c
            counts = new
        return sum(counts)

    def count_prefixes_brute_force(self, length: int) -> int:
        r"""$|\mathsf{Dyck}_{k,D,N}|$ by testing all $(2k)^N$ strings (reference for small ``length``)."""
        if length == 0:
            return 1
        total = 0
        chunk = 2**16
        it = itertools.product(range(self.vocab_size), repeat=length)
        while batch := list(itertools.islice(it, chunk)):
            total += int(self.scan(np.array(batch, dtype=np.int64))[0][:, -1].sum())
        return total

    def all_prefixes(self, length: int) -> np.ndarray:
        r"""Every element of $\mathsf{Dyck}_{k,D,\text{length}}$, as ``[count, length]`` (lexicographic
        order)."""
        if length < 0:
            raise ValueError(f"length must be >= 0, got {length}")
        seqs = np.zeros((1, 0), dtype=np.int64)
        stack = np.zeros(1, dtype=np.int64)  # base-k digits, top = stack % k
        depth = np.zeros(1, dtype=np.int64)
        k = self.k
        for _ in range(length):
            parts_s, parts_st, parts_d = [], [], []
            for tok in range(2 * k):
                typ = tok // 2
                if tok % 2 == 0:
                    sel = depth < self.depth
                    parts_st.append(stack[sel] * k + typ)
                    parts_d.append(depth[sel] + 1)
                else:
                    sel = (depth > 0) & (stack % k == typ)
                    parts_st.append(stack[sel] // k)
                    parts_d.append(depth[sel] - 1)
                parts_s.append(np.concatenate([seqs[sel], np.full((int(sel.sum()), 1), tok)], axis=1))
            order = None
            seqs, stack, depth = (np.concatenate(p) for p in (parts_s, parts_st, parts_d))
            order = np.lexsort(seqs.T[::-1])
            seqs, stack, depth = seqs[order], stack[order], depth[order]
        return seqs

    # -------------------------------------------------------------------------------------------- loss
    def population_loss(self, predictor: Callable[[np.ndarray], np.ndarray], length: int) -> PopulationLoss:
        r"""Exact population loss (3.21) with the squared loss (3.22), by enumerating $\mathsf{Dyck}_{k,D,N}$.

        ``predictor`` maps a batch ``[B, N]`` of token sequences to predictions ``[B, N+1, 2k]`` at every
        prefix length ``0..N`` (causal models do this in one pass); only positions ``0..N-1`` enter the loss.
        """
        if length < 1:
            raise ValueError(f"length must be >= 1, got {length}")
        seqs = self.all_prefixes(length)
        depth, top = self._require_prefixes(seqs)
        truth = self._distribution_from_state(depth, top)  # [B, N+1, 2k]
        rows = np.arange(len(seqs))[:, None]
        steps = truth[rows, np.arange(length)[None, :], seqs]  # p(w_i | w_<i)
        weight = np.prod(steps, axis=1)
        pred = np.asarray(predictor(seqs), dtype=np.float64)
        if pred.shape != truth.shape:
            raise ValueError(f"predictor must return shape {truth.shape}, got {pred.shape}")
        pred, truth = pred[:, :length], truth[:, :length]
        excess = np.sum((pred - truth) ** 2, axis=-1).mean(axis=1)
        optimal = (1.0 - np.sum(truth**2, axis=-1)).mean(axis=1)
        return PopulationLoss(
            length=length,
            loss=float(weight @ (excess + optimal)),
            optimal=float(weight @ optimal),
            excess=float(weight @ excess),
            max_error=float(np.abs(pred - truth).max()),
        )


# ---------------------------------------------------------------------------------------------------------------
# Li's Dyck completion task (Def 3.2.1 + Remark 3.2.1, `003_69b23422e33c905a.txt`)


@functools.lru_cache(maxsize=1 << 16)
def _completion_stack(max_depth: int, prefix: tuple[int, ...]) -> tuple[bool, tuple[int, ...]]:
    """(valid, stack of bracket types) after ``prefix`` of plain ints, as :meth:`DyckCompletion._state` reads it:
    the parent's state plus the last token; after the first invalid token the state (and the stack at that point)
    stays as it was, the later tokens unread."""
    if not prefix:
        return True, ()
    ok, stack = _completion_stack(max_depth, prefix[:-1])
    if not ok:
        return ok, stack
    t = prefix[-1]
    if not 0 <= t < 4:
        raise ValueError(f"token {t} is not a bracket id in 0..3")
    if t % 2 == 0:
        return (False, stack) if len(stack) == max_depth else (True, (*stack, t // 2))
    if not stack or stack[-1] != t // 2:
        return False, stack
    return True, stack[:-1]


@functools.lru_cache(maxsize=1024)
def _completion_law(p, q, exact: bool, case: int, top: int) -> tuple:
    """Remark 3.2.1's next-token law in its three cases: 0 at depth 0, 1 when the depth equals the remaining
    length (close ``top``), 2 otherwise; Fractions when ``exact``. A function of the values only, so it is computed
    once per (p, q, case, top) instead of once per prefix."""
    p, q = (Fraction(p), Fraction(q)) if exact else (float(p), float(q))
    one, zero = p * 0 + 1, p * 0
    law = [zero] * 4
    if case == 0:
        law[0], law[2] = p, one - p
    elif case == 1:
        law[2 * top + 1] = one
    else:
        law[0], law[2], law[2 * top + 1] = q * p, q * (one - p), one - q
    return tuple(law)


@dataclass(frozen=True)
class DyckCompletion:
    r"""Li's $\mathrm{Dyck}_D$ distribution: balanced strings of exact (even) length $D$ over two bracket types,
    generated autoregressively (Remark 3.2.1). With depth $d$ before position $i$ (1-based): at $d=0$ open ``[``
    w.p. $p$ and ``(`` w.p. $1-p$; at $d=D-i+1$ close the top w.p. 1; otherwise open ``[`` w.p. $qp$, ``(`` w.p.
    $q(1-p)$ and close the top w.p. $1-q$.

    Unlike Liu's :class:`Dyck` (depth bounded by a constant, open probability ``q``, uniform type), the depth is
    bounded by the remaining length and ``p`` sets the type. Tokens follow :class:`Dyck` with $k=2$: ``[``=0,
    ``]``=1, ``(``=2, ``)``=3. Exact process verifier: a prefix $w_{1:i}$ can be completed iff every close matches
    the top of the stack and $d(w_{1:i})\le D-i$ (parity is automatic for even $D$).
    """

    D: int
    p: float | Fraction = Fraction(1, 5)
    q: float | Fraction = Fraction(1, 2)

    def __post_init__(self) -> None:
        if isinstance(self.D, bool) or not isinstance(self.D, int | np.integer):
            raise TypeError(f"D must be an int, got {type(self.D).__name__}")
        if self.D < 2 or self.D % 2:
            raise ValueError(f"D must be an even length >= 2, got {self.D}")
        for name in ("p", "q"):
            value = getattr(self, name)
            if not isinstance(value, float | int | Fraction | np.floating) or not 0 < value < 1:
                raise ValueError(f"{name} must be a number in the open interval (0, 1), got {plain(value)}")

    vocab_size = 4

    @property
    def grammar(self) -> Dyck:
        """The underlying bracket grammar: :class:`Dyck` with 2 types and depth $D/2$."""
        return Dyck(2, self.D // 2)

    def _state(self, prefix: Sequence[int]) -> tuple[bool, int, int]:
        """(valid, depth, top type) after ``prefix`` (valid: no mismatch, depth within 0..D/2); pure Python, since
        the exact calculators call it on every node of the prefix tree: :func:`_completion_stack`, cached per prefix and
        built from the state of the parent prefix."""
        if len(prefix) > self.D:
            raise ValueError(f"prefix of length {len(prefix)} is longer than D={self.D}")
        key = tuple(int(t) if isinstance(t, np.integer) else t for t in prefix)
        ints = (
            0  # the longest prefix of plain ints (a bool or float is not a bracket id, however it compares)
        )
        while ints < len(key) and type(key[ints]) is int:
            ints += 1
        ok, stack = _completion_stack(self.D // 2, key[:ints])
        if ok and ints < len(key):  # the automaton reads the next token: it is no bracket id
            raise ValueError(f"token {plain(key[ints])} is not a bracket id in 0..3")
        return ok, len(stack), stack[-1] if stack else -1

    def is_completable(self, prefix: Sequence[int]) -> bool:
        """Exact process verifier: some completion of ``prefix`` to length $D$ is a balanced string."""
        ok, depth, _ = self._state(prefix)
        return ok and depth <= self.D - len(prefix)

    def is_word(self, tokens: Sequence[int]) -> bool:
        return len(tokens) == self.D and self.is_completable(tokens)

    def prefix_verifier(self):
        """The exact process verifier as a :class:`theorylab.generation.ProcessVerifier`."""
        from theorylab.generation.verifiers import ProcessVerifier  # noqa: PLC0415

        return ProcessVerifier(self.is_completable, f"Dyck_{self.D} prefix")

    def next_token_distribution(self, prefix: Sequence[int], exact: bool = True) -> tuple:
        """Remark 3.2.1's law of the next token after a completable ``prefix`` (length < D)."""
        if len(prefix) >= self.D or not self.is_completable(prefix):
            raise ValueError(f"{tuple(prefix)} is not a completable prefix of length < D={self.D}")
        _, d, top = self._state(prefix)
        case = 0 if d == 0 else 1 if d == self.D - len(prefix) else 2
        return _completion_law(self.p, self.q, bool(exact), case, top)

    def probability(self, tokens: Sequence[int], exact: bool = True):
        """$P(w)$ under the autoregressive process (0 for strings it cannot produce)."""
        out = Fraction(1) if exact else 1.0
        for i in range(len(tokens)):
            if not self.is_completable(tokens[:i]):
                return out * 0
            out *= self.next_token_distribution(tokens[:i], exact)[int(tokens[i])]
        return out if self.is_completable(tokens) else out * 0

    def closed_form(self, tokens: Sequence[int], strict: bool = True):
        r"""Eq (3.4): $p^{n_{[,d=1}}(1-p)^{n_{(,d=1}}(pq)^{n_{[,d>1}}((1-p)q)^{n_{(,d>1}}(1-q)^{n_c}$, $n_c$ = closes
        with $d(w_{1:i})<D-i$ (``strict``, which equals the process) or $\le D-i$ (the printed version)."""
        if not self.is_word(tokens):
            raise ValueError(f"{tuple(tokens)} is not a balanced string of length D={self.D}")
        p, q = Fraction(self.p), Fraction(self.q)
        depth = self.grammar.depths(tokens)
        out = Fraction(1)
        for i, (t, d) in enumerate(zip(tokens, depth, strict=True), start=1):
            if t % 2 == 0:
                typ = p if t == 0 else 1 - p
                out *= typ if d == 1 else typ * q
            elif d < self.D - i or (not strict and d == self.D - i):
                out *= 1 - q
        return out

    def words(self) -> list[tuple[int, ...]]:
        """All balanced strings of length $D$ (there are $\\mathrm{Cat}(D/2)\\,2^{D/2}$)."""
        out: list[tuple[int, ...]] = [()]
        for _ in range(self.D):
            out = [w + (t,) for w in out for t in range(4) if self.is_completable(w + (t,))]
        return out

    def oracle(self, noise: float | Fraction = 0):
        """The process as a :class:`theorylab.generation.TabularOracle`, mixed with the uniform law on the 4
        brackets with weight ``noise`` (so it can err; prefixes that cannot be completed get the uniform law)."""
        from theorylab.generation.oracles import TabularOracle  # noqa: PLC0415

        if not 0 <= noise <= 1:
            raise ValueError(f"noise must lie in [0, 1], got {plain(noise)}")
        eta = Fraction(noise) if isinstance(noise, int | Fraction) else float(noise)
        exact = isinstance(eta, Fraction)

        # id of a (cached) law -> (the law, kept alive so that its id stays its own, its mixture): the mixture is
        # computed once per distinct law object, not once per prefix; the object is compared too, since a closure
        # pickled by value carries the ids of another process
        mixed: dict[int, tuple] = {}

        def law(prefix: tuple[int, ...]) -> tuple:
            if not self.is_completable(prefix):
                return (Fraction(1, 4) if exact else 0.25,) * 4
            base = self.next_token_distribution(prefix, exact)
            hit = mixed.get(id(base))
            if hit is None or hit[0] is not base:
                if len(mixed) >= 256:
                    mixed.clear()
                hit = mixed[id(base)] = (base, tuple((1 - eta) * b + eta / 4 for b in base))
            return hit[1]

        return TabularOracle(4, law)

    def sample(
        self, rng: np.random.Generator, n: int, p: float | None = None, length: int | None = None
    ) -> np.ndarray:
        """``n`` strings from the process (type probability ``p`` overrides ``self.p``: the thesis's OOD prompts use
        $p=0.8$), truncated to ``length`` tokens. Vectorised over the batch."""
        if not isinstance(rng, np.random.Generator):
            raise TypeError(f"rng must be a numpy Generator, got {type(rng).__name__}")
        length = self.D if length is None else int(length)
        if n < 1 or not 0 <= length <= self.D:
            raise ValueError(f"need n >= 1 and 0 <= length <= D, got n={n}, length={length}")
        pp = float(self.p if p is None else p)
        q = float(self.q)
        out = np.zeros((n, self.D), dtype=np.int64)
        stack = np.zeros((n, self.D // 2 + 1), dtype=np.int64)
        depth = np.zeros(n, dtype=np.int64)
        rows = np.arange(n)
        for i in range(1, self.D + 1):
            u, v = rng.random(n), rng.random(n)
            forced = depth == self.D - i + 1
            close = forced | ((depth > 0) & (u >= q))
            typ = np.where(v < pp, 0, 1)
            top = stack[rows, np.clip(depth - 1, 0, None)]
            tok = np.where(close, 2 * top + 1, 2 * typ)
            stack[rows, depth] = np.where(close, stack[rows, depth], typ)
            depth = depth + np.where(close, -1, 1)
            out[:, i - 1] = tok
        return out[:, :length]


@dataclass(frozen=True)
class DyckCompletionLM:
    """Next-token language modelling on :class:`DyckCompletion` for the training harness: inputs
    ``[BOS, w_1..w_{D-1}]`` (BOS = token 4), targets ``w_1..w_D``, every position scored; ``T`` must equal ``D``."""

    completion: DyckCompletion
    name: str = "dyck_completion"
    vocab_size: int = 5
    n_outputs: int = 4
    loss: str = "ce"

    BOS = 4

    def sample_batch(self, rng: np.random.Generator, batch: int, T: int):
        from theorylab.nn.tasks import Batch  # noqa: PLC0415

        if T != self.completion.D:
            raise ValueError(f"sequence length T={T} must equal the Dyck length D={self.completion.D}")
        w = self.completion.sample(rng, batch)
        x = np.concatenate([np.full((batch, 1), self.BOS, dtype=np.int64), w[:, :-1]], axis=1)
        return Batch(x, w, np.ones_like(w, dtype=bool))


_SCAN_LOOP_UP_TO = 256  # tokens (batch x length) up to which Dyck.scan runs a plain Python loop

_SCAN_STEPWISE_FROM = 2048  # batch x depth above which Dyck.scan goes token by token (measured crossover)

_STACK_TABLE_MAX = 1 << 16  # states of the stack automaton up to which Dyck.scan uses its transition table


@functools.cache
def _stack_automaton(k: int, depth: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(step, depth_of, top_of)``: the stack automaton of Dyck_{k,D}. A stack of depth ``d`` with types
    ``t_1..t_d`` (bottom first) is state ``sum_{j<d} k^j + (t_1 ... t_d in base k)``; ``step[s, token]`` is the
    next state or -1 (a close that does not match the top, an open at depth D)."""
    offset = np.concatenate([[0], np.cumsum([k**d for d in range(depth + 1)])])
    d = np.repeat(np.arange(depth + 1), [k**j for j in range(depth + 1)])
    code = np.arange(len(d)) - offset[d]
    top = np.where(d > 0, code % k, -1)
    step = np.full((len(d), 2 * k), -1, dtype=np.int64)
    for typ in range(k):
        can_open = d < depth
        step[can_open, 2 * typ] = offset[d[can_open] + 1] + code[can_open] * k + typ
        can_close = (d > 0) & (top == typ)
        step[can_close, 2 * typ + 1] = offset[d[can_close] - 1] + code[can_close] // k
    return step, d, top


def _latest_open_types(dep: np.ndarray, typ: np.ndarray, is_open: np.ndarray, max_depth: int) -> np.ndarray:
    """``top[b, p]``: the type of the latest open token ``j < p`` with ``dep[b, j + 1] == dep[b, p]`` for
    ``dep[b, p]`` in ``1..max_depth`` (``-1`` otherwise): per level, a running maximum of the positions the
    level was reached by an open."""
    B, n = dep.shape
    pos = np.arange(n)
    opened = np.zeros((B, n), dtype=bool)
    opened[:, 1:] = is_open  # prefix p ends with an open
    typ_at = np.zeros((B, n), dtype=np.int64)
    typ_at[:, 1:] = typ
    top = np.full((B, n), -1, dtype=np.int64)
    for d in range(1, max_depth + 1):
        at_d = dep == d
        last = np.maximum.accumulate(np.where(opened & at_d, pos, -1), axis=1)
        sel = at_d & (last >= 0)
        top[sel] = np.take_along_axis(typ_at, np.maximum(last, 0), axis=1)[sel]
    return top
