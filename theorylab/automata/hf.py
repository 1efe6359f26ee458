"""The conventions of the authors' HuggingFace automata dataset script (synthseq/automata, ported by
ClaraBing/shortcut), reimplemented from their description, and converters for its records.

Differences from the thesis (Liu, Def 9 and the experiments' zoo in :mod:`theorylab.automata.zoo`):

* group tasks are labelled by the right product $\\sigma_1 \\sigma_2 \\cdots \\sigma_t$ (state vector times
  permutation matrix; the Q8 table is ``state * action``), Def 9 by the left product $\\sigma_t \\cdots
  \\sigma_1$. The presets use ``side="right"``; the two agree after inverting: $\\mathrm{HF}(w) =
  (\\text{Def 9 on the inverse generators})^{-1}$;
* action sets: Q8 acts by all of $\\{1, i, j, k\\}$; $S_n$ by identity, shift $p = (1, 2, \\dots, n-1, 0)$ and
  swap $(1, 0, 2, \\dots)$ (with ``n_actions > 3`` the slot of the swap is overwritten by the
  lexicographically first permutations other than identity and shift, as that script does); $A_n$ by the
  identity and the 3-cycles $(0\\,1\\,i)$; $C_n$ by the shifts $0..{}$``n_actions``$-1$ (2 by default);
  $D_{2n}$ has symbol 0 = toggle, 1 = drive (theorylab's ``dihedral`` has advance, reverse);
* the flip-flop has an extra start state 0 before the first write (states $0..n$, symbol 0 = read), and
  its labels are float32;
* tasks theorylab's zoo lacks: :func:`abab`, :func:`adder`, :func:`permutation_reset`.

:class:`HFTask` samples words as that script does (binary tasks i.i.d. Bernoulli(``prob1``), the flip-flop
writes with probability 1/2, ABAB positive samples, the padded adder, resets at power-of-two lags) and, with
``random_length=True``, one uniform length in $1..T$ per sequence, returned as a padded batch with a mask.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field

import numpy as np

from theorylab.automata import zoo
from theorylab.automata.semiautomaton import Semiautomaton

__all__ = [
    "HF_TASKS",
    "HFTask",
    "abab",
    "adder",
    "from_hf_records",
    "hf_alternating",
    "hf_cyclic",
    "hf_dihedral",
    "hf_flipflop",
    "hf_quaternion",
    "hf_symmetric",
    "permutation_reset",
    "to_hf_records",
    "variable_length_mask",
]


def _int(v, what: str, lo: int) -> int:
    return zoo._check_int(v, what, lo)


def hf_quaternion(side: str = "right") -> Semiautomaton:
    """Q8 with the four actions $\\{1, i, j, k\\}$, states ``1, i, j, k, -1, -i, -j, -k``; ``side="right"``:
    the script's ``state * action`` (Def 9 is ``side="left"``)."""
    aut = zoo.quaternion(("1", "i", "j", "k"), side=side)
    return Semiautomaton(aut.delta, aut.state_labels, aut.symbol_labels, name="Q8@hf")


def _symmetric_actions(n: int, n_actions: int) -> list[tuple[int, ...]]:
    ident = tuple(range(n))
    actions = [ident, tuple(range(1, n)) + (0,), (1, 0) + tuple(range(2, n))]
    if n_actions > 3:  # slot 2 (the swap) onwards: lexicographic order without identity and shift
        rest = [p for p in itertools.permutations(range(n)) if p not in actions[:2]]
        if len(rest) < n_actions - 2:
            raise ValueError(
                f"S{n} has only {len(rest) + 2} distinct actions, asked for n_actions={n_actions}"
            )
        actions = actions[:2] + rest[: n_actions - 2]
    return actions[: max(n_actions, 3)]


def hf_symmetric(n: int, n_actions: int = 3, side: str = "right") -> Semiautomaton:
    """$S_n$ on its $n!$ elements (lexicographic order, the script's state ids) with the script's actions:
    identity, shift ``(1, .., n-1, 0)``, swap ``(1, 0, 2, ..)`` (``n_actions=3``); see the module docstring for
    ``n_actions > 3``. The thesis (footnote 28) uses 8 generators instead (:func:`theorylab.automata.zoo.symmetric`).
    """
    n, n_actions = _int(n, "n", 2), _int(n_actions, "n_actions", 1)
    actions = _symmetric_actions(n, n_actions)
    aut = zoo.group_semiautomaton(actions, name=f"S{n}@hf", side=side)
    if aut.n_states != np.prod(range(1, n + 1)):
        raise ValueError(f"the first {n_actions} actions do not generate S{n}")
    return aut


def hf_alternating(n: int, side: str = "right") -> Semiautomaton:
    """$A_n$ on its $n!/2$ even permutations (lexicographic) with actions: identity, then the 3-cycles
    $(0\\,1\\,i)$, $i = 2..n-1$ (theorylab's ``alternating`` has no identity symbol)."""
    n = _int(n, "n", 3)
    gens = [tuple(range(n))] + list(zoo.alternating(n).symbol_labels)
    return zoo.group_semiautomaton(gens, name=f"A{n}@hf", side=side)


def hf_cyclic(n: int, n_actions: int = 2) -> Semiautomaton:
    """$C_n$ with the shifts $0..$ ``n_actions``$-1$ as symbols (theorylab's ``cyclic`` uses all $n$);
    abelian, so both sides agree."""
    n, n_actions = _int(n, "n", 1), _int(n_actions, "n_actions", 1)
    if n_actions > n:
        raise ValueError(f"n_actions={n_actions} exceeds n={n}")
    aut = zoo.cyclic(n)
    return Semiautomaton(aut.delta[:n_actions], aut.state_labels, tuple(range(n_actions)), name=f"C{n}@hf")


def hf_dihedral(n: int) -> Semiautomaton:
    """$D_{2n}$ with symbol 0 = toggle, 1 = drive and state ``position + n * toggle``: theorylab's ``dihedral``
    with its two symbols swapped."""
    aut = zoo.dihedral(n)
    return Semiautomaton(aut.delta[::-1], aut.state_labels, ("toggle", "drive"), name=f"D{2 * n}@hf")


def hf_flipflop(n: int = 2) -> Semiautomaton:
    """Flip-flop with $n$ write states plus the start state 0: symbol 0 reads (keeps the state), symbol
    $a \\ge 1$ writes state $a$. Start from state 0. (The thesis's Example 2 has no start state:
    :func:`theorylab.automata.zoo.flipflop`; its state ``q`` is this one's ``q + 1``.)"""
    n = _int(n, "n", 1)
    keep = np.arange(n + 1)[None, :]
    writes = np.repeat(np.arange(1, n + 1)[:, None], n + 1, axis=1)
    return Semiautomaton(
        np.concatenate([keep, writes]),
        state_labels=("start",) + tuple(range(1, n + 1)),
        symbol_labels=("read",) + tuple(f"write {a}" for a in range(1, n + 1)),
        name=f"flipflop{n}@hf",
    )


def abab() -> Semiautomaton:
    """The ABAB automaton: states 0..3 track the pattern $0101\\cdots$, state 4 absorbs any deviation. From
    state 3 (the start), 0 goes to 0, then 1 to 1, 0 to 2, 1 to 3; every other move goes to 4."""
    delta = np.full((2, 5), 4, dtype=np.int64)
    delta[0, 3], delta[1, 0], delta[0, 1], delta[1, 2] = 0, 1, 2, 3
    return Semiautomaton(delta, state_labels=tuple(range(5)), symbol_labels=(0, 1), name="abab")


def adder(n_addends: int = 2) -> Semiautomaton:
    """Column-wise addition of ``n_addends`` binary numbers, least significant bit first. Symbol $x \\in
    [0, 2^m)$ encodes the bits of the $m$ addends at one position (addend $i$ is bit $i$); state
    ``digit + m * carry``: with $s = \\mathrm{popcount}(x) + \\mathrm{carry}$, digit $= s \\bmod m$ and carry
    $= \\lfloor s / m \\rfloor \\in \\{0, 1\\}$ (as in the authors' script, the digit is base $m$)."""
    m = _int(n_addends, "n_addends", 2)
    pop = np.array([bin(x).count("1") for x in range(2**m)])
    carry = np.arange(2 * m) // m
    total = pop[:, None] + carry[None, :]
    delta = total % m + m * (total // m)
    return Semiautomaton(
        delta, state_labels=tuple((d, c) for c in (0, 1) for d in range(m)), name=f"adder{m}"
    )


def permutation_reset(n: int, generators) -> Semiautomaton:
    """Permutation-reset automaton on the $n!$ permutations (lexicographic): symbol $r < n!$ resets the state
    to permutation $r$, symbol $n! + g$ applies ``generators[g]`` on the left (state $p \\mapsto g \\circ p$,
    ``g[p]``), Def 9's side."""
    n = _int(n, "n", 1)
    perms = list(itertools.permutations(range(n)))
    index = {p: i for i, p in enumerate(perms)}
    gens = [tuple(int(x) for x in g) for g in generators]
    if not gens or any(sorted(g) != list(range(n)) for g in gens):
        raise ValueError(f"generators must be a non-empty list of permutations of range({n})")
    resets = np.repeat(np.arange(len(perms))[:, None], len(perms), axis=1)
    apply = np.array([[index[tuple(g[x] for x in p)] for p in perms] for g in gens], dtype=np.int64)
    return Semiautomaton(
        np.concatenate([resets, apply]), state_labels=tuple(perms), name=f"reset-S{n}({len(gens)} gens)"
    )


def variable_length_mask(rng: np.random.Generator, batch: int, T: int) -> np.ndarray:
    """Bool ``[batch, T]`` mask of per-sequence lengths drawn uniformly from $1..T$ (``random_length``)."""
    lengths = rng.integers(1, T + 1, size=batch)
    return np.arange(T)[None, :] < lengths[:, None]


HF_TASKS = (
    "abab",
    "adder",
    "alternating",
    "cyclic",
    "dihedral",
    "flipflop",
    "gridworld",
    "parity",
    "quaternion",
    "symmetric",
    "permutation_reset",
)

_LABEL_TYPES = {
    "gridworld": ("state", "parity", "boundary"),
    "abab": ("state", "boundary"),
    "symmetric": ("state", "first_chair"),
    "alternating": ("state", "first_chair"),
    "dihedral": ("state", "toggle", "positions"),
    "adder": ("state", "digit", "carry"),
}


@dataclass(frozen=True, eq=False)
class HFTask:
    """One task of the authors' automata dataset script as a theorylab task (:class:`theorylab.nn.Task`).

    ``dataset_type`` is one of :data:`HF_TASKS`; ``config`` holds that script's fields (``n``, ``n_actions``,
    ``prob1``, ``label_type``, ``prob_abab_pos_sample``, ``n_addends``, ``generators``, ``perm_probs``).
    ``side`` is the group convention (``"right"``: the script's; ``"left"``: Def 9).
    ``random_length``: per-sequence lengths uniform in $1..T$, padded with 0 and masked out."""

    dataset_type: str
    config: dict = field(default_factory=dict)
    side: str = "right"
    random_length: bool = False
    name: str = ""
    loss: str = field(default="ce", init=False)
    automaton: Semiautomaton = field(init=False, repr=False)
    q0: int = field(init=False)
    observe: np.ndarray = field(init=False, repr=False)

    def __post_init__(self) -> None:
        kind, c = self.dataset_type, dict(self.config)
        if kind not in HF_TASKS:
            raise ValueError(f"dataset_type must be one of {HF_TASKS}, got {kind!r}")
        zoo.check_side(self.side)
        label = c.get("label_type", "state")
        if label not in _LABEL_TYPES.get(kind, ("state",)):
            raise ValueError(f"label_type {label!r} is not one of {_LABEL_TYPES.get(kind, ('state',))}")
        q0 = 0
        if kind == "abab":
            aut, q0 = abab(), 3
        elif kind == "adder":
            aut = adder(c.get("n_addends", 2))
        elif kind == "alternating":
            aut = hf_alternating(c.get("n", 5), side=self.side)
        elif kind == "cyclic":
            aut = hf_cyclic(c.get("n", 2), c.get("n_actions", 2))
        elif kind == "dihedral":
            aut = hf_dihedral(c.get("n", 4))
        elif kind == "flipflop":
            aut = hf_flipflop(c.get("n", 2))
        elif kind == "gridworld":
            aut = zoo.gridworld(c.get("n", 9))
        elif kind == "parity":
            aut = zoo.parity()
        elif kind == "quaternion":
            aut = hf_quaternion(side=self.side)
        elif kind == "symmetric":
            aut = hf_symmetric(c.get("n", 5), c.get("n_actions", 3), side=self.side)
        else:
            aut = permutation_reset(c.get("n", 4), c.get("generators", [[1, 0, 2, 3], [3, 0, 1, 2]]))
        states = np.arange(aut.n_states)
        n = aut.n_states // 2  # dihedral: position + n * toggle
        m = c.get("n_addends", 2)
        observe = {
            "state": lambda: states,
            "parity": lambda: states % 2,
            "boundary": lambda: (states == 3) if kind == "abab" else (states == 0) | (states == states[-1]),
            "first_chair": lambda: np.array([p[0] for p in aut.state_labels]),
            "toggle": lambda: states // n,
            "positions": lambda: states % n,
            "digit": lambda: states % m,
            "carry": lambda: states // m,
        }[label]().astype(np.int64)
        object.__setattr__(self, "automaton", aut)
        object.__setattr__(self, "q0", q0)
        object.__setattr__(self, "observe", observe)
        object.__setattr__(self, "config", c)
        if not self.name:
            object.__setattr__(self, "name", f"hf-{kind}")

    @property
    def vocab_size(self) -> int:
        return self.automaton.n_symbols

    @property
    def n_outputs(self) -> int:
        return int(self.observe.max()) + 1

    def sample_words(self, rng: np.random.Generator, batch: int, T: int) -> np.ndarray:
        """Words of length ``T`` (``T + 1`` for the adder, whose last column is the 0 pad), sampled as the
        script samples them."""
        kind, c, aut = self.dataset_type, self.config, self.automaton
        batch, T = _int(batch, "batch", 1), _int(T, "T", 1)
        if kind in ("parity", "gridworld", "abab"):
            words = rng.binomial(1, c.get("prob1", 0.5), size=(batch, T)).astype(np.int64)
            if kind == "abab":
                pos = rng.random(batch) < c.get("prob_abab_pos_sample", 0.0)
                words[pos] = np.arange(T) % 2
            return words
        if kind == "adder":
            m = aut.n_states // 2
            bits = rng.binomial(1, c.get("prob1", 0.5), size=(batch, m, T))
            bits = np.concatenate([bits, np.zeros((batch, m, 1), dtype=bits.dtype)], axis=2)
            return (bits * (2 ** np.arange(m))[None, :, None]).sum(axis=1).astype(np.int64)
        if kind == "flipflop":
            n = aut.n_states - 1
            write = rng.uniform(size=(batch, T)) < 0.5
            return (rng.integers(1, n + 1, size=(batch, T)) * write).astype(np.int64)
        if kind == "permutation_reset":
            n_states, n_gen = aut.n_states, aut.n_symbols - aut.n_states
            probs = c.get("perm_probs")
            words = rng.choice(n_gen, p=probs, size=(batch, T)) + n_states
            lags = [1]
            while lags[-1] * 2 < T:
                lags.append(lags[-1] * 2)
            for b in range(batch):
                i = 0
                while i < T:
                    words[b, i] = rng.integers(n_states)
                    i += int(rng.choice(lags))
            return words.astype(np.int64)
        return rng.integers(0, aut.n_symbols, size=(batch, T), dtype=np.int64)

    def labels(self, words) -> np.ndarray:
        """The script's ``label_ids`` of ``words`` (run from the start state, then ``label_type``)."""
        return self.observe[self.automaton.run(words, self.q0)]

    def sample_batch(self, rng: np.random.Generator, batch: int, T: int):
        from theorylab.nn.tasks import Batch

        words = self.sample_words(rng, batch, T)
        mask = np.ones(words.shape, dtype=bool)
        if self.random_length:
            mask = variable_length_mask(rng, batch, T)
            if self.dataset_type == "adder":  # length L of bits, then the 0 pad column at position L
                mask = np.concatenate([np.ones((batch, 1), dtype=bool), mask], axis=1)
            words = np.where(mask, words, 0)
            if self.dataset_type == "adder":
                words[np.arange(batch), mask.sum(axis=1) - 1] = 0
        return Batch(inputs=words, targets=self.labels(words), mask=mask)


def to_hf_records(task: HFTask, batch) -> list[dict]:
    """The script's records ``{"input_ids": int32 [T_b], "label_ids": [T_b]}`` of a batch (masked positions
    dropped; label_ids are float32 for the flip-flop, as its sampler returns them, int32 otherwise)."""
    if not isinstance(task, HFTask):
        raise TypeError(f"task must be an HFTask, got {type(task).__name__}")
    dtype = np.float32 if task.dataset_type == "flipflop" else np.int32
    return [
        {"input_ids": x[m].astype(np.int32), "label_ids": y[m].astype(dtype)}
        for x, y, m in zip(batch.inputs, batch.targets, batch.mask, strict=True)
    ]


def from_hf_records(task: HFTask, records, check: bool = True, T: int | None = None):
    """A padded, masked :class:`theorylab.nn.tasks.Batch` from the script's records, read with ``task``'s
    convention, padded to width ``T`` (default: the longest record). ``check``: raise ``ValueError`` if a record's labels are not the task's labels of its inputs
    (e.g. right-product data read with ``side="left"``)."""
    from theorylab.nn.tasks import Batch

    if not isinstance(task, HFTask):
        raise TypeError(f"task must be an HFTask, got {type(task).__name__}")
    records = list(records)
    if not records:
        raise ValueError("no records")
    longest = max(len(r["input_ids"]) for r in records)
    T = longest if T is None else _int(T, "T", longest)
    inputs = np.zeros((len(records), T), dtype=np.int64)
    targets = np.zeros((len(records), T), dtype=np.int64)
    mask = np.zeros((len(records), T), dtype=bool)
    for b, r in enumerate(records):
        x, y = np.asarray(r["input_ids"]), np.asarray(r["label_ids"])
        if x.shape != y.shape or x.ndim != 1:
            raise ValueError(f"record {b}: input_ids and label_ids must be 1-D of one length")
        if y.size and not np.array_equal(y, np.round(y)):
            raise ValueError(f"record {b}: label_ids are not integers")
        inputs[b, : len(x)], targets[b, : len(x)], mask[b, : len(x)] = x, y.astype(np.int64), True
    if check:
        bad = np.flatnonzero(((task.labels(inputs) != targets) & mask).any(axis=1))
        if bad.size:
            raise ValueError(
                f"{bad.size} of {len(records)} records (first: {bad[0]}) disagree with {task.name} "
                f"(side={task.side!r}): wrong convention or task config"
            )
    return Batch(inputs=inputs, targets=targets, mask=mask)
