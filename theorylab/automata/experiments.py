"""Tasks, trivial baselines and attention read-outs for the experiments E3, E4, E5, E7, E8 of Liu Ch. 3.4
(``001_6a230b9a9faf2198.txt``, §3.4.3 and §3.4.5).

* :class:`ObservedTask` (E4, indirect supervision): targets are observations $\\varphi(q_t)$ of the states.
* :class:`RevealedTask` (E5, incomplete supervision): each label $q_t$ counts in the loss with probability
  ``p_reveal`` (independently per position).
* :class:`ScratchpadTask` (E8): the input interleaves symbols and states $(\\sigma_1, q_1, \\sigma_2, q_2, \\dots)$;
  the model predicts $q_t$ at the position of $\\sigma_t$ (loss only there); :func:`scratchpad_decode` runs the
  iterative inference, feeding back the model's own $\\hat q_{t-1}$.
* :func:`window_accuracy`: the best predictor that sees only the last ``w`` symbols (a lookup table fitted on a
  training sample; ties and unseen contexts go to the majority label), the trivial baseline of every task.
* :func:`boundary_attention` (E3): attention mass on the most recent boundary state ($q \\in \\{0, S\\}$) and before
  it, the read-out of the Theorem-12 mechanism in a trained gridworld model.

This module does not import torch at import time.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from theorylab._extras import require
from theorylab.automata.baselines import fitted_window_accuracy as window_accuracy
from theorylab.automata.semiautomaton import Semiautomaton, check_automaton, check_q0
from theorylab.automata.tasks import AutomatonTask

__all__ = [
    "ObservedTask",
    "RevealedTask",
    "ScratchpadTask",
    "boundary_attention",
    "majority_accuracy",
    "most_recent",
    "scratchpad_decode",
    "window_accuracy",
]


@dataclass(frozen=True, eq=False)
class ObservedTask:
    """Predict $\\varphi(q_t)$ from $\\sigma_{1:t}$; ``observe[q]`` is the observation (a class in
    ``range(max(observe) + 1)``) of state ``q`` (E4: e.g. $\\mathbf 1[q \\in \\{0, S\\}]$ for the gridworld)."""

    automaton: Semiautomaton
    observe: tuple
    q0: int = 0
    probs: tuple | None = None
    name: str = ""
    loss: str = field(default="ce", init=False)
    # the plain state-prediction task: validates probs, samples the words and runs them
    _source: AutomatonTask = field(init=False, repr=False)

    def __post_init__(self) -> None:
        aut = check_automaton(self.automaton)
        check_q0(aut, self.q0)
        obs = np.asarray(self.observe)
        if obs.shape != (aut.n_states,) or not np.issubdtype(obs.dtype, np.integer) or obs.min() < 0:
            raise ValueError(
                f"observe must give a non-negative int class for each of the {aut.n_states} states"
            )
        object.__setattr__(self, "observe", tuple(int(x) for x in obs))
        object.__setattr__(self, "_source", AutomatonTask(aut, self.q0, self.probs))
        object.__setattr__(self, "probs", self._source.probs)
        if not self.name:
            object.__setattr__(self, "name", f"{aut.name or 'automaton'}-observed")

    @property
    def vocab_size(self) -> int:
        return self.automaton.n_symbols

    @property
    def n_outputs(self) -> int:
        return max(self.observe) + 1

    def sample_batch(self, rng: np.random.Generator, batch: int, T: int):
        from theorylab.nn.tasks import Batch

        b = self._source.sample_batch(rng, batch, T)
        return Batch(inputs=b.inputs, targets=np.asarray(self.observe)[b.targets], mask=b.mask)


@dataclass(frozen=True, eq=False)
class RevealedTask:
    """State prediction where each label counts with probability ``p_reveal`` (E5). ``p_reveal = 1`` is the
    fully supervised task."""

    automaton: Semiautomaton
    p_reveal: float
    q0: int = 0
    name: str = ""
    loss: str = field(default="ce", init=False)
    _source: AutomatonTask = field(init=False, repr=False)

    def __post_init__(self) -> None:
        aut = check_automaton(self.automaton)
        check_q0(aut, self.q0)
        if not 0.0 < float(self.p_reveal) <= 1.0:
            raise ValueError(f"p_reveal must lie in (0, 1], got {self.p_reveal}")
        object.__setattr__(self, "_source", AutomatonTask(aut, self.q0))
        if not self.name:
            object.__setattr__(self, "name", f"{aut.name or 'automaton'}-reveal{self.p_reveal:g}")

    @property
    def vocab_size(self) -> int:
        return self.automaton.n_symbols

    @property
    def n_outputs(self) -> int:
        return self.automaton.n_states

    def sample_batch(self, rng: np.random.Generator, batch: int, T: int):
        from theorylab.nn.tasks import Batch

        b = self._source.sample_batch(rng, batch, T)
        return Batch(inputs=b.inputs, targets=b.targets, mask=rng.random(b.inputs.shape) < self.p_reveal)


@dataclass(frozen=True, eq=False)
class ScratchpadTask:
    """E8's scratchpad: tokens $(\\sigma_1, q_1, \\dots, \\sigma_n, q_n)$ (symbol ``s`` is token ``s``, state ``q`` is
    token ``n_symbols + q``), target $q_t$ at the position of $\\sigma_t$, loss only there. ``T`` passed to
    ``sample_batch`` is the number of tokens ($2n$; must be even)."""

    automaton: Semiautomaton
    q0: int = 0
    probs: tuple | None = None
    name: str = ""
    loss: str = field(default="ce", init=False)
    _source: AutomatonTask = field(init=False, repr=False)

    def __post_init__(self) -> None:
        aut = check_automaton(self.automaton)
        check_q0(aut, self.q0)
        object.__setattr__(self, "_source", AutomatonTask(aut, self.q0, self.probs))
        object.__setattr__(self, "probs", self._source.probs)
        if not self.name:
            object.__setattr__(self, "name", f"{aut.name or 'automaton'}-scratchpad")

    @property
    def vocab_size(self) -> int:
        return self.automaton.n_symbols + self.automaton.n_states

    @property
    def n_outputs(self) -> int:
        return self.automaton.n_states

    def interleave(self, words: np.ndarray, states: np.ndarray) -> np.ndarray:
        """Tokens ``[B, 2n]``: even positions the symbols, odd positions the state tokens."""
        tokens = np.empty((words.shape[0], 2 * words.shape[1]), dtype=np.int64)
        tokens[:, 0::2] = words
        tokens[:, 1::2] = self.automaton.n_symbols + states
        return tokens

    def sample_batch(self, rng: np.random.Generator, batch: int, T: int):
        from theorylab.nn.tasks import Batch

        if T % 2:
            raise ValueError(f"a scratchpad sequence has an even number of tokens, got T={T}")
        b = self._source.sample_batch(rng, batch, T // 2)
        words, states = b.inputs, b.targets
        targets = np.zeros((batch, T), dtype=np.int64)
        targets[:, 0::2] = states
        mask = np.zeros((batch, T), dtype=bool)
        mask[:, 0::2] = True
        return Batch(inputs=self.interleave(words, states), targets=targets, mask=mask)


def scratchpad_decode(task: ScratchpadTask, model, words: np.ndarray, device: str = "cpu") -> np.ndarray:
    r"""Iterative inference: at step $t$ feed $(\sigma_1, \hat q_1, \dots, \sigma_t)$ and take $\hat q_t$ = the argmax
    at the position of $\sigma_t$. Returns the predicted states ``[B, n]``. All prompts are decoded together on
    ``device`` (predictions stay there until one transfer at the end); the model's device and mode are restored."""
    torch = require("torch", extra="trained")
    from theorylab.nn.threads import num_threads

    words = np.asarray(words, dtype=np.int64)
    B, n = words.shape
    tokens = torch.zeros((B, 2 * n), dtype=torch.int64, device=device)
    tokens[:, 0::2] = torch.from_numpy(words).to(device)
    params = list(model.parameters())
    home = params[0].device if params else None
    was_training = model.training
    model.eval().to(device)
    # small forwards on the CPU: one thread (several threads contend on a loaded CPU); the count is given back
    threads = 1 if torch.device(device).type == "cpu" else torch.get_num_threads()
    try:
        with num_threads(threads):
            preds = _decode_loop(task, model, tokens, n)
    finally:
        model.train(was_training)
        if home is not None:
            model.to(home)
    return preds


def _decode_loop(task: ScratchpadTask, model, tokens, n: int) -> np.ndarray:
    torch = require("torch", extra="trained")

    preds = torch.zeros((tokens.shape[0], n), dtype=torch.int64, device=tokens.device)
    with torch.no_grad():
        for t in range(n):
            out = model(tokens[:, : 2 * t + 1])
            out = out[0] if isinstance(out, tuple) else out
            q = out[:, 2 * t].argmax(-1)
            preds[:, t] = q
            tokens[:, 2 * t + 1] = task.automaton.n_symbols + q
    return preds.cpu().numpy()


def majority_accuracy(labels: np.ndarray, mask: np.ndarray | None = None) -> float:
    """Accuracy of the constant predictor of the most frequent label (among masked positions)."""
    y = np.asarray(labels)[np.ones_like(labels, dtype=bool) if mask is None else np.asarray(mask)]
    return float(np.bincount(y).max() / max(len(y), 1))


def most_recent(flags: np.ndarray) -> np.ndarray:
    """``out[b, t]`` = the largest ``i <= t`` with ``flags[b, i]``, or -1 if there is none."""
    flags = np.asarray(flags, dtype=bool)
    idx = np.where(flags, np.arange(flags.shape[-1]), -1)
    return np.maximum.accumulate(idx, axis=-1)


def boundary_attention(
    attn: np.ndarray, states: np.ndarray, boundary: tuple[int, ...]
) -> dict[str, np.ndarray]:
    """E3's read-out for one layer's attention ``attn[B, H, T, T]`` (query, key) on runs ``states[B, T]``.

    For each query $t$ with a boundary state ($q_i \\in$ ``boundary``) at some $i \\le t$, let $b(t)$ be the most
    recent one. Returns per head: ``on_boundary`` = mean attention on $b(t)$, ``before`` = mean attention on
    positions $< b(t)$, ``uniform`` = the same quantity $1/(t+1)$ for uniform causal attention (the baseline), and
    ``kl_uniform`` = mean KL(attention row || uniform causal row) over all queries."""
    a = np.asarray(attn, dtype=float)
    B, H, T, _ = a.shape
    b = most_recent(np.isin(states, boundary))  # [B, T]
    has = b >= 0
    rows = np.broadcast_to(b[:, None, :, None], (B, H, T, 1)).clip(0)
    on = np.take_along_axis(a, rows, axis=-1)[..., 0]  # [B, H, T]
    keys = np.arange(T)
    before = (a * (keys[None, None, None, :] < b[:, None, :, None])).sum(-1)
    t = np.arange(T)
    uniform = np.broadcast_to(1.0 / (t + 1), (B, T))
    causal = keys[None, :] <= t[:, None]
    with np.errstate(divide="ignore", invalid="ignore"):
        terms = np.where(causal, a * (np.log(np.clip(a, 1e-30, None)) + np.log(t + 1)[:, None]), 0.0)
    kl = terms.sum(-1).mean(axis=(0, 2))
    sel = has[:, None, :]
    return {
        "on_boundary": (on * sel).sum(axis=(0, 2)) / sel.sum(),
        "before": (before * sel).sum(axis=(0, 2)) / sel.sum(),
        "uniform": np.array((uniform * has).sum() / has.sum()),
        "kl_uniform": kl,
    }
