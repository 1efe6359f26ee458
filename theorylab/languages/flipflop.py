"""Flip-flop languages FFL(T, p) and the flip-flop language-modelling task (Liu, thesis §3.5.1.2).

A flip-flop string of even length T alternates instructions (positions 1, 3, ..., T-1; 1-based) and data bits.
Instructions are write ``w``, read ``r``, ignore ``i``; the bit after a read equals the bit after the most recent
write, and the string begins with ``w``. FFL(T, p) with p = (p_w, p_r, p_i): the first instruction is ``w``, the
last is ``r``, the others are i.i.d. ~ p; bits after ``w`` and ``i`` are uniform. ``FFL(p_i)`` is shorthand for
p_w = p_r = (1 - p_i) / 2. Token ids: w=0, r=1, i=2, "0"=3, "1"=4 (the map of the authors' public data).

The language-modelling task predicts x_{t+1} from x_{1:t}. "clean" (deterministic) mode scores only the positions t
with x_t = r, so the masked accuracy is the read accuracy (argmax over the full vocabulary, the stricter rule);
"noisy" (generative) mode scores every t = 1..T-1.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from theorylab.nn.tasks import Batch

W, R, I, ZERO, ONE = 0, 1, 2, 3, 4
TOKENS = ("w", "r", "i", "0", "1")
MODES = ("clean", "noisy")


def _check_length(T: int) -> None:
    if not isinstance(T, int | np.integer) or T < 4 or T % 2:
        raise ValueError(f"flip-flop strings have even length T >= 4, got T={T!r}")


def _check_probs(p_write: float, p_read: float, p_ignore: float) -> None:
    probs = np.array([p_write, p_read, p_ignore], dtype=float)
    if not np.all(np.isfinite(probs)) or probs.min() < 0 or abs(probs.sum() - 1.0) > 1e-9:
        raise ValueError(f"(p_write, p_read, p_ignore) must be a probability vector, got {tuple(probs)}")


def sample_ffl(
    rng: np.random.Generator, n: int, T: int, p_write: float, p_read: float, p_ignore: float | None = None
) -> np.ndarray:
    """``n`` i.i.d. strings from FFL(T, p) as int64 ``[n, T]`` token ids (vectorised)."""
    _check_length(T)
    p_ignore = 1.0 - p_write - p_read if p_ignore is None else p_ignore
    _check_probs(p_write, p_read, p_ignore)
    K = T // 2
    instr = rng.choice(3, size=(n, K), p=[p_write, p_read, p_ignore]).astype(np.int64)
    instr[:, 0], instr[:, -1] = W, R
    bits = rng.integers(0, 2, size=(n, K), dtype=np.int64)
    last_write = np.maximum.accumulate(np.where(instr == W, np.arange(K), -1), axis=1)
    bits = np.where(instr == R, np.take_along_axis(bits, last_write, axis=1), bits)
    x = np.empty((n, T), dtype=np.int64)
    x[:, 0::2], x[:, 1::2] = instr, bits + ZERO
    return x


def is_valid(x: np.ndarray) -> np.ndarray:
    """Bool per string (``[n, T]`` or ``[T]``): alternation, first instruction ``w``, every read correct."""
    x = np.atleast_2d(np.asarray(x))
    if x.shape[1] < 2 or x.shape[1] % 2:
        return np.zeros(len(x), dtype=bool)
    instr, data = x[:, 0::2], x[:, 1::2]
    ok = np.isin(instr, (W, R, I)).all(1) & np.isin(data, (ZERO, ONE)).all(1) & (instr[:, 0] == W)
    K = instr.shape[1]
    last_write = np.maximum.accumulate(np.where(instr == W, np.arange(K), -1), axis=1)
    memory = np.take_along_axis(data, np.maximum(last_write, 0), axis=1)
    return ok & np.all((instr != R) | (data == memory), axis=1)


def read_positions(x: np.ndarray) -> np.ndarray:
    """Bool mask of the 0-based positions t with x_t = r (the deterministic predictions)."""
    x = np.asarray(x)
    mask = np.zeros(x.shape, dtype=bool)
    mask[..., 0::2] = x[..., 0::2] == R
    return mask


def expected_reads(T: int, p_read: float) -> float:
    """E[#reads per string] = 1 + (T/2 - 2) p_r (the last instruction is always a read)."""
    _check_length(T)
    return 1.0 + (T // 2 - 2) * p_read


def support_size(T: int) -> int:
    """Number of strings in the support of FFL(T, p) for p > 0: 2 * 5^(T/2 - 2)."""
    _check_length(T)
    return 2 * 5 ** (T // 2 - 2)


def enumerate_ffl(T: int, p: tuple[Fraction, Fraction, Fraction]) -> tuple[np.ndarray, list[Fraction]]:
    """All strings with positive FFL(T, p) probability and their exact probabilities (small T only)."""
    _check_length(T)
    if T > 14:
        raise ValueError(f"exhaustive enumeration is limited to T <= 14 (got {T}: {support_size(T)} strings)")
    pw, pr, pi = (Fraction(v) for v in p)
    if pw + pr + pi != 1 or min(pw, pr, pi) < 0:
        raise ValueError(f"p must be an exact probability vector, got {p}")
    half = Fraction(1, 2)
    strings, probs = [], []
    for middle in itertools.product((W, R, I), repeat=T // 2 - 2):
        instr = (W, *middle, R)
        free = [k for k, a in enumerate(instr) if a != R]
        prob_instr = Fraction(1)
        for a in middle:
            prob_instr *= (pw, pr, pi)[a]
        if prob_instr == 0:
            continue
        for bits in itertools.product((0, 1), repeat=len(free)):
            data = dict(zip(free, bits, strict=True))
            memory, row = 0, []
            for k, a in enumerate(instr):
                if a == W:
                    memory = data[k]
                row += [a, ZERO + (memory if a == R else data[k])]
            strings.append(row)
            probs.append(prob_instr * half ** len(free))
    return np.array(strings, dtype=np.int64), probs


def to_text(x: np.ndarray) -> str:
    """``[T]`` token ids -> e.g. ``"w0i1r0"``."""
    return "".join(TOKENS[int(t)] for t in np.asarray(x))


def from_text(s: str) -> np.ndarray:
    """``"w0i1r0"`` (spaces ignored) -> int64 token ids."""
    try:
        return np.array([TOKENS.index(c) for c in s.replace(" ", "")], dtype=np.int64)
    except ValueError as err:
        raise ValueError(f"flip-flop strings use the symbols {TOKENS}, got {s!r}") from err


@dataclass(frozen=True)
class FlipFlopTask:
    """Flip-flop language modelling on FFL(T, (p_write, p_read, p_ignore)); see the module docstring.

    ``FlipFlopTask.ffl(0.8)`` is the training distribution of the thesis (p_w = p_r = 0.1), ``ffl(0.98)`` the sparse
    and ``ffl(0.1)`` the dense test distribution.
    """

    p_write: float = 0.1
    p_read: float = 0.1
    p_ignore: float = 0.8
    mode: str = "clean"
    name: str = "flipflop"
    vocab_size: int = 5
    n_outputs: int = 5
    loss: str = "ce"

    def __post_init__(self) -> None:
        _check_probs(self.p_write, self.p_read, self.p_ignore)
        if self.mode not in MODES:
            raise ValueError(f"mode must be one of {MODES}, got {self.mode!r}")

    @classmethod
    def ffl(cls, p_ignore: float, mode: str = "clean") -> FlipFlopTask:
        """FFL(p_i): p_w = p_r = (1 - p_i) / 2."""
        q = (1.0 - p_ignore) / 2.0
        return cls(q, q, p_ignore, mode=mode, name=f"flipflop_p{p_ignore:g}")

    def sample_batch(self, rng: np.random.Generator, batch: int, T: int) -> Batch:
        x = sample_ffl(rng, batch, T, self.p_write, self.p_read, self.p_ignore)
        y = np.zeros_like(x)
        y[:, :-1] = x[:, 1:]
        if self.mode == "clean":
            mask = read_positions(x)
        else:
            mask = np.ones(x.shape, dtype=bool)
            mask[:, -1] = False
        return Batch(x, y, mask)
