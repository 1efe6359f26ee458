"""Finite semiautomata: a transition table ``delta[symbol, state] -> state`` and its runs.

A semiautomaton $\\mathcal A = (Q, \\Sigma, \\delta)$ has no start or accepting states; a run from $q_0$ on a
word $\\sigma_1\\cdots\\sigma_T$ is the state sequence $q_t = \\delta(q_{t-1}, \\sigma_t)$, $t = 1..T$ (the
state AFTER reading each symbol, as in the thesis's sequence-to-sequence task).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["Semiautomaton", "check_automaton", "check_q0"]


def _as_int_array(x, what: str) -> np.ndarray:
    a = np.asarray(x)
    if a.dtype == bool or not (np.issubdtype(a.dtype, np.integer) or a.size == 0):
        raise TypeError(f"{what} must be an integer array, got dtype {a.dtype} (cast with .astype(int))")
    return a.astype(np.int64, copy=False)


@dataclass(frozen=True, eq=False)
class Semiautomaton:
    """A deterministic semiautomaton with transition table ``delta`` of shape ``(n_symbols, n_states)``.

    ``delta[s, q]`` is the state reached from state ``q`` on symbol ``s``. Each symbol therefore acts as a
    transformation of ``range(n_states)``; ``theorylab.algebra.transformation_semigroup`` enumerates the
    semigroup they generate.
    """

    delta: np.ndarray
    state_labels: tuple | None = None
    symbol_labels: tuple | None = None
    name: str = ""

    def __post_init__(self) -> None:
        d = _as_int_array(self.delta, "delta")
        if d.ndim != 2:
            raise ValueError(f"delta must have shape (n_symbols, n_states), got shape {d.shape}")
        if d.shape[0] == 0:
            raise ValueError("a semiautomaton needs a non-empty alphabet (delta has 0 rows)")
        if d.shape[1] == 0:
            raise ValueError("a semiautomaton needs at least one state (delta has 0 columns)")
        bad = (d < 0) | (d >= d.shape[1])
        if bad.any():
            s, q = np.argwhere(bad)[0]
            raise ValueError(
                f"delta[{s}, {q}] = {d[s, q]} is not a state: entries must lie in range({d.shape[1]})"
            )
        d = np.array(d, dtype=np.int64, copy=True)
        d.setflags(write=False)
        object.__setattr__(self, "delta", d)
        for attr, n, what in (
            ("state_labels", d.shape[1], "n_states"),
            ("symbol_labels", d.shape[0], "n_symbols"),
        ):
            labels = getattr(self, attr)
            if labels is not None:
                labels = tuple(labels)
                if len(labels) != n:
                    raise ValueError(f"{attr} has {len(labels)} entries, expected {what} = {n}")
                object.__setattr__(self, attr, labels)

    @property
    def n_states(self) -> int:
        return int(self.delta.shape[1])

    @property
    def n_symbols(self) -> int:
        return int(self.delta.shape[0])

    def __repr__(self) -> str:
        name = f"{self.name!r}, " if self.name else ""
        return f"Semiautomaton({name}n_states={self.n_states}, n_symbols={self.n_symbols})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Semiautomaton) and np.array_equal(self.delta, other.delta)

    def __hash__(self) -> int:
        return hash((self.delta.shape, self.delta.tobytes()))

    def _check_state(self, q, what: str = "q0") -> int:
        if isinstance(q, bool) or not isinstance(q, (int, np.integer)):
            raise TypeError(f"{what} must be an int, got {type(q).__name__}")
        if not 0 <= q < self.n_states:
            raise ValueError(f"{what} = {q} is out of range: states are range({self.n_states})")
        return int(q)

    def _check_words(self, words) -> np.ndarray:
        w = _as_int_array(words, "words")
        if w.ndim not in (1, 2):
            raise ValueError(f"words must have shape [T] or [B, T], got shape {w.shape}")
        if w.size and (w.min() < 0 or w.max() >= self.n_symbols):
            raise ValueError(f"words contain symbols outside range({self.n_symbols})")
        return w

    def step(self, state, symbol):
        """One transition ``delta(state, symbol)``; vectorised over numpy arrays of broadcastable shape."""
        if np.ndim(state) == 0 and np.ndim(symbol) == 0:
            q = self._check_state(state, "state")
            s = self._check_words(np.array([symbol]))[0]
            return int(self.delta[s, q])
        q = _as_int_array(state, "state")
        s = _as_int_array(symbol, "symbol")
        if q.size and (q.min() < 0 or q.max() >= self.n_states):
            raise ValueError(f"states outside range({self.n_states})")
        if s.size and (s.min() < 0 or s.max() >= self.n_symbols):
            raise ValueError(f"symbols outside range({self.n_symbols})")
        return self.delta[s, q]

    def run(self, words, q0=0) -> np.ndarray:
        """States after reading each symbol: ``out[b, t] = delta(out[b, t-1], words[b, t])``, with ``out[b,
        -1] := q0``.

        ``words`` is ``[B, T]`` or ``[T]`` (then ``[1, T]`` is returned). ``q0``: int or int array ``[B]``.
        Vectorised over the batch: O(B T) work in T numpy steps.
        """
        w = self._check_words(words)
        if w.ndim == 1:
            w = w[None, :]
        B, T = w.shape
        if np.ndim(q0) == 0:
            q = np.full(B, self._check_state(q0), dtype=np.int64)
        else:
            q = _as_int_array(q0, "q0")
            if q.shape != (B,):
                raise ValueError(f"q0 must be an int or have shape [B] = [{B}], got {q.shape}")
            if q.size and (q.min() < 0 or q.max() >= self.n_states):
                raise ValueError(f"q0 has states outside range({self.n_states})")
            q = q.copy()
        out = np.empty((B, T), dtype=np.int64)
        d = self.delta
        for t in range(T):
            q = d[w[:, t], q]
            out[:, t] = q
        return out

    def sample(self, rng: np.random.Generator, batch: int, T: int) -> np.ndarray:
        """``batch`` words of length ``T`` with i.i.d. uniform symbols, int64 ``[batch, T]``."""
        if not isinstance(rng, np.random.Generator):
            raise TypeError(f"rng must be a numpy.random.Generator, got {type(rng).__name__}")
        for v, what in ((batch, "batch"), (T, "T")):
            if isinstance(v, bool) or not isinstance(v, (int, np.integer)):
                raise TypeError(f"{what} must be an int, got {type(v).__name__}")
            if v < 1:
                raise ValueError(f"{what} must be >= 1, got {v}")
        return rng.integers(0, self.n_symbols, size=(int(batch), int(T)), dtype=np.int64)

    def transformation(self, word) -> np.ndarray:
        """The map $q \\mapsto \\delta(q, w)$ of a word, as an array over states (identity for ``[]``)."""
        w = self._check_words(np.asarray(word, dtype=np.int64).reshape(-1))
        f = np.arange(self.n_states, dtype=np.int64)
        for s in w:
            f = self.delta[s][f]
        return f


def check_automaton(aut) -> Semiautomaton:
    """``aut`` itself if it is a :class:`Semiautomaton`, else ``TypeError`` (the compilers' input check)."""
    if not isinstance(aut, Semiautomaton):
        raise TypeError(f"expected a theorylab.automata.Semiautomaton, got {type(aut).__name__}")
    return aut


def check_q0(aut: Semiautomaton, q0) -> int:
    """A start state of ``aut`` as an ``int`` (``TypeError`` for a non-integer, ``ValueError`` out of range)."""
    if isinstance(q0, bool) or not isinstance(q0, (int, np.integer)):
        raise TypeError(f"q0 must be an int, got {type(q0).__name__}")
    if not 0 <= q0 < aut.n_states:
        raise ValueError(f"q0 = {q0} is out of range: states are range({aut.n_states})")
    return int(q0)
