"""Training tasks for the experiments of Liu Ch. 3.4.2-3.4.3: predict the state sequence of a semiautomaton.

A :class:`AutomatonTask` satisfies :class:`theorylab.nn.Task`: inputs are words $\\sigma_{1:T}$, targets the
states $q_{1:T}$ (per-token cross-entropy, every position counted), as in the thesis's non-autoregressive
causal setup. This module does not import torch.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from theorylab._fmt import plain
from theorylab.automata.semiautomaton import Semiautomaton
from theorylab.automata.zoo import sample_valid

__all__ = ["AutomatonTask"]


@dataclass(frozen=True, eq=False)
class AutomatonTask:
    """State-sequence prediction for ``automaton`` from ``q0``.

    Symbols are i.i.d. with probabilities ``probs`` (uniform if ``None``; parity OOD tests vary $P[\\sigma =
    1]$), or, with ``dead`` states given, uniform among the symbols that avoid them (the Dyck experiments).
    ``score_from``: positions ``t < score_from`` (0-based) are masked out (e.g. to score only the positions
    beyond the training length).
    """

    automaton: Semiautomaton
    q0: int = 0
    probs: tuple | None = None
    dead: tuple = ()
    score_from: int = 0
    name: str = ""
    loss: str = field(default="ce", init=False)

    def __post_init__(self) -> None:
        if not isinstance(self.automaton, Semiautomaton):
            raise TypeError(f"automaton must be a Semiautomaton, got {type(self.automaton).__name__}")
        self.automaton._check_state(self.q0)
        if isinstance(self.score_from, bool) or not isinstance(self.score_from, int) or self.score_from < 0:
            raise ValueError(f"score_from must be a non-negative int, got {self.score_from!r}")
        if self.probs is not None:
            p = np.asarray(self.probs, dtype=float)
            if p.shape != (self.automaton.n_symbols,) or not np.all(np.isfinite(p)) or (p < 0).any():
                raise ValueError(f"probs must be {self.automaton.n_symbols} non-negative finite numbers")
            if not np.isclose(p.sum(), 1.0):
                raise ValueError(f"probs must sum to 1, got {p.sum()}")
            if self.dead:
                raise ValueError("give either probs or dead states, not both")
            object.__setattr__(self, "probs", tuple(float(x) for x in p))
        if not self.name:
            object.__setattr__(self, "name", self.automaton.name or "automaton")

    @property
    def vocab_size(self) -> int:
        return self.automaton.n_symbols

    @property
    def n_outputs(self) -> int:
        return self.automaton.n_states

    def sample_words(self, rng: np.random.Generator, batch: int, T: int) -> np.ndarray:
        aut = self.automaton
        if self.dead:
            return sample_valid(aut, rng, batch, T, q0=self.q0, dead=self.dead)
        if self.probs is None:
            return aut.sample(rng, batch, T)
        for v, what in ((batch, "batch"), (T, "T")):
            if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 1:
                raise ValueError(f"{what} must be a positive int, got {plain(v)}")
        return rng.choice(aut.n_symbols, size=(batch, T), p=np.asarray(self.probs)).astype(np.int64)

    def sample_batch(self, rng: np.random.Generator, batch: int, T: int):
        return self.sample_batches([rng], batch, T)[0]

    def sample_batches(self, rngs, batch: int, T: int) -> list:
        """One batch per generator, each the batch ``sample_batch(rng, batch, T)`` draws from it (every seed's stream
        is its own and unchanged): the words are drawn per generator, the states of all of them are computed in one
        run of the automaton (its loop over $T$ once for all seeds instead of once per seed)."""
        from theorylab.nn.tasks import Batch

        words = [self.sample_words(rng, batch, T) for rng in rngs]
        states = self.automaton.run(np.concatenate(words), self.q0).reshape(len(rngs), batch, T)
        mask = np.ones((batch, T), dtype=bool)
        mask[:, : self.score_from] = False
        return [Batch(inputs=w, targets=q, mask=mask.copy()) for w, q in zip(words, states, strict=True)]
