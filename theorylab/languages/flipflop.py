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
import math
from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from theorylab._extras import require
from theorylab._fmt import plain
from theorylab.nn.tasks import Batch

W, R, I, ZERO, ONE = 0, 1, 2, 3, 4
TOKENS = ("w", "r", "i", "0", "1")
MODES = ("clean", "noisy")


def _check_length(T: int) -> None:
    if not isinstance(T, int | np.integer) or T < 4 or T % 2:
        raise ValueError(f"flip-flop strings have even length T >= 4, got T={plain(T)}")


def _check_probs(p_write: float, p_read: float, p_ignore: float) -> None:
    probs = np.array([p_write, p_read, p_ignore], dtype=float)
    if not np.all(np.isfinite(probs)) or probs.min() < 0 or abs(probs.sum() - 1.0) > 1e-9:
        raise ValueError(f"(p_write, p_read, p_ignore) must be a probability vector, got {tuple(probs)}")


def _check_tokens(x, name: str = "x") -> np.ndarray:
    """``[n, T]`` (or ``[T]``) integer token ids in 0..4 (w, r, i, 0, 1), as an int64 2-d array."""
    arr = np.asarray(x)
    if arr.ndim not in (1, 2) or arr.size == 0:
        raise ValueError(f"{name} must be a [T] or [n, T] array of token ids, got shape {arr.shape}")
    if not np.issubdtype(arr.dtype, np.integer):
        raise TypeError(f"{name} must hold integer token ids, got dtype {arr.dtype}")
    if arr.min() < 0 or arr.max() >= len(TOKENS):
        raise ValueError(
            f"{name} token ids must lie in 0..{len(TOKENS) - 1} {TOKENS}, got {arr.min()}..{arr.max()}"
        )
    return np.atleast_2d(arr).astype(np.int64)


def _check_p(p, name: str = "p_ignore") -> None:
    if not isinstance(p, int | float | Fraction | np.integer | np.floating) or not 0 <= p <= 1:
        raise ValueError(f"{name} must be a probability in [0, 1], got {plain(p)}")


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
    if x.ndim != 2:
        raise ValueError(f"expected a [T] or [n, T] array of token ids, got shape {x.shape}")
    if not np.issubdtype(x.dtype, np.integer):
        raise TypeError(f"token ids must be integers, got dtype {x.dtype}")
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
    _check_p(p_read, "p_read")
    return 1.0 + (T // 2 - 2) * p_read


def support_size(T: int) -> int:
    """Number of strings in the support of FFL(T, p) for p > 0: 2 * 5^(T/2 - 2)."""
    _check_length(T)
    return 2 * 5 ** (T // 2 - 2)


def enumerate_ffl(T: int, p: tuple[Fraction, Fraction, Fraction]) -> tuple[np.ndarray, list[Fraction]]:
    """All strings with positive FFL(T, p) probability and their exact probabilities (small T only).

    Rows are ordered by instruction sequence (lexicographic in w < r < i), then by the free bits (the bits after
    ``w`` and ``i``, lexicographic). Vectorised: every instruction sequence is paired with every assignment of its
    free bits; a read's bit is the bit of the most recent write."""
    _check_length(T)
    if T > 16:
        raise ValueError(f"exhaustive enumeration is limited to T <= 16 (got {T}: {support_size(T)} strings)")
    pw, pr, pi = (Fraction(str(v)) if isinstance(v, float) else Fraction(v) for v in p)  # 0.2 -> 1/5
    if pw + pr + pi != 1 or min(pw, pr, pi) < 0:
        raise ValueError(f"p must be an exact probability vector, got {p}")
    K = T // 2
    middle = np.array(list(itertools.product((W, R, I), repeat=K - 2)), dtype=np.int64).reshape(
        3 ** (K - 2), K - 2
    )
    counts = np.stack([(middle == a).sum(1) for a in (W, R, I)], axis=1)  # (#w, #r, #i) among the middle
    prob_of = {c: pw ** c[0] * pr ** c[1] * pi ** c[2] for c in set(map(tuple, counts.tolist()))}
    prob_instr = [prob_of[c] for c in map(tuple, counts.tolist())]
    keep = np.array([q != 0 for q in prob_instr], dtype=bool)
    instr = np.concatenate(
        [np.full((int(keep.sum()), 1), W), middle[keep], np.full((int(keep.sum()), 1), R)], axis=1
    )
    half = Fraction(1, 2)
    # each kept instruction sequence: its probability times 2^-(number of free bits), one value per sequence
    prob_seq = [
        q * half ** (K - 1 - int(c[1]))
        for q, c, k in zip(prob_instr, counts.tolist(), keep, strict=True)
        if k
    ]
    bits = np.array(list(itertools.product((0, 1), repeat=K)), dtype=np.int64)  # [2^K, K]
    # a pair (instruction sequence a, bit vector b) is kept iff b is 0 on the read slots of a: every string once
    on_reads = (instr == R).astype(np.int64) @ bits.T  # [n_instr, 2^K]
    rows, cols = np.nonzero(on_reads == 0)
    instr, bits = instr[rows], bits[cols]
    last_write = np.maximum.accumulate(np.where(instr == W, np.arange(K), -1), axis=1)
    data = np.where(instr == R, np.take_along_axis(bits, last_write, axis=1), bits)
    strings = np.empty((len(rows), T), dtype=np.int64)
    strings[:, 0::2], strings[:, 1::2] = instr, data + ZERO
    return strings, [prob_seq[r] for r in rows.tolist()]


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


# ------------------------------------------------------------------------------------------------ trained verdicts


@dataclass(frozen=True)
class ReadReport:
    """Read accuracy of trained models on one distribution: per-model accuracy, number of reads scored each."""

    distribution: str
    accuracy: np.ndarray
    reads: int
    threshold: float

    @property
    def ok(self) -> bool:
        """Every model reaches the threshold (and something was scored: no models or no reads is not ok)."""
        return bool(self.accuracy.size > 0 and self.reads > 0 and np.all(self.accuracy >= self.threshold))

    @property
    def worst_error(self) -> float:
        return float(1.0 - self.accuracy.min())


def verify_read_accuracy(
    models,
    task: FlipFlopTask,
    T: int,
    n_sequences: int,
    threshold: float,
    seed: int = 0,
    device: str = "cpu",
    amp: bool | None = None,
) -> ReadReport:
    """Score each model's argmax prediction after every read of ``n_sequences`` fixed strings from ``task``.

    The same strings (``np.random.default_rng([seed, T])``) are used for every model. ``ok`` iff every model's read
    accuracy is at least ``threshold``. ``amp``: bf16 autocast of the forward (default: on for CUDA).
    """
    from theorylab.nn.train import evaluate

    if task.mode != "clean":
        raise ValueError("read accuracy is defined on the clean (deterministic) mode")
    models = list(models)
    if not models:
        raise ValueError("verify_read_accuracy needs at least one model")
    if not isinstance(n_sequences, int | np.integer) or n_sequences < 1:
        raise ValueError(f"n_sequences must be a positive int, got {plain(n_sequences)}")
    if not 0 <= threshold <= 1:
        raise ValueError(f"threshold must be an accuracy in [0, 1], got {plain(threshold)}")
    batch = min(256, n_sequences)
    batches = -(-n_sequences // batch)
    accs, reads = [], 0
    for model in models:
        res = evaluate(
            task,
            model,
            np.random.default_rng([seed, T]),
            batches,
            T,
            device=device,
            batch_size=batch,
            amp=amp,
        )
        accs.append(res["acc"])
        reads = res["count"]
    return ReadReport(task.name, np.array(accs), reads, threshold)


# ------------------------------------------------------------------------------------------------ Prop 3 construction


@dataclass(frozen=True)
class Prop3Report:
    """Outcome of the 2-layer construction of Prop 3 on a set of strings."""

    strings: int
    reads: int
    errors: int
    mark_violations: int  # positions where layer 1 does not mark exactly {i : x_i = w or x_{i-1} = w}

    @property
    def ok(self) -> bool:
        return self.reads > 0 and self.errors == 0 and self.mark_violations == 0


def _hard_argmax(key_scores: np.ndarray) -> np.ndarray:
    """Causal hard attention with query-independent scores ``[n, T]`` (those of the construction): for each query
    i, the argmax over keys j <= i, the first index on ties. A prefix argmax: O(n T), not O(n T^2)."""
    T = key_scores.shape[-1]
    best = np.maximum.accumulate(key_scores, axis=-1)
    new_max = np.ones(key_scores.shape, dtype=bool)  # key j is a new strict maximum of keys 0..j
    new_max[..., 1:] = key_scores[..., 1:] > best[..., :-1]
    return np.maximum.accumulate(np.where(new_max, np.arange(T), 0), axis=-1)


def _soft_average(scores: np.ndarray, values: np.ndarray) -> np.ndarray:
    """Causal softmax attention (row max subtracted): sum_j alpha_ij values_j."""
    T = scores.shape[-1]
    s = np.where(np.tril(np.ones((T, T), dtype=bool)), scores, -np.inf)
    e = np.exp(s - s.max(-1, keepdims=True))
    return (e * values[:, None, :]).sum(-1) / e.sum(-1)


def prop3_predict(
    x: np.ndarray, c: float | None = None, C: int | None = None, bonus: Fraction = Fraction(3, 2)
) -> tuple[np.ndarray, np.ndarray]:
    """(predicted next tokens ``[n, T]``, layer-1 marks ``[n, T]``) of the Prop 3 construction (row-major, causal).

    Embedding: e_1 = [x_t = w], e_2 = [x_t in {r, i}], e_3/e_4 = bit 0/1, e_5 = 1, e_6 = t / C (t 1-based,
    C = T by default). Layer 1 score (i -> j): c (bonus/T [x_j = w] + j / C); its value [x_j = w] goes to e_7 and
    phi_1 rounds it at 1/2 (the residual keeps E). Layer 2 score: c ([e_7 of j] + j / C); its value [x_j = 1] is
    rounded at 1/2 by phi_2 and read as the predicted bit. ``c=None`` is hard attention with exact integer scores
    (the scores times T C q / c, bonus = p/q); otherwise softmax with inverse temperature ``c`` in float64.
    """
    x = _check_tokens(x)
    n, T = x.shape
    C = T if C is None else C
    if not isinstance(C, int | np.integer) or C < 1:
        raise ValueError(f"the position scale C must be a positive int, got {plain(C)}")
    if c is not None and not (np.isfinite(c) and c > 0):
        raise ValueError(f"the inverse temperature c must be positive and finite, got {plain(c)}")
    bonus = Fraction(bonus)
    j = np.arange(1, T + 1)
    is_w = (x == W).astype(np.int64)
    is_one = (x == ONE).astype(np.int64)
    if c is None:
        s1 = bonus.numerator * C * is_w + bonus.denominator * T * j  # = c(bonus/T [w] + j/C) * T C q / c
        marks = np.take_along_axis(is_w, _hard_argmax(s1), axis=1)
        s2 = C * marks + j  # = c([mark] + j/C) * C / c
        bit = np.take_along_axis(is_one, _hard_argmax(s2), axis=1)
    else:
        s1 = c * (float(bonus) / T * is_w + j / C)
        marks = (_soft_average(np.broadcast_to(s1[:, None, :], (n, T, T)), is_w) > 0.5).astype(np.int64)
        s2 = c * (marks + j / C)
        bit = (_soft_average(np.broadcast_to(s2[:, None, :], (n, T, T)), is_one) > 0.5).astype(np.int64)
    return ZERO + bit, marks


def verify_prop3(
    x: np.ndarray, c: float | None = None, C: int | None = None, bonus: Fraction = Fraction(3, 2)
) -> Prop3Report:
    """Check the construction at every read of every string, and layer 1's marks against the lemma of the proof.
    Prop 3 is about valid flip-flop strings: other input raises ValueError."""
    x = _check_tokens(x)
    if not is_valid(x).all():
        raise ValueError("Prop 3 is stated for valid flip-flop strings; some rows are not (see is_valid)")
    pred, marks = prop3_predict(x, c=c, C=C, bonus=bonus)
    reads = read_positions(x)
    reads[:, -1] = False
    target = np.zeros_like(x)
    target[:, :-1] = x[:, 1:]
    prev_w = np.zeros_like(marks, dtype=bool)
    prev_w[:, 1:] = x[:, :-1] == W
    lemma = (x == W) | prev_w
    return Prop3Report(
        strings=len(x),
        reads=int(reads.sum()),
        errors=int((reads & (pred != target)).sum()),
        mark_violations=int((marks.astype(bool) != lemma).sum()),
    )


def last_write_bit(x: np.ndarray) -> np.ndarray:
    """0-based position of the bit written by the most recent ``w`` at or before each position (-1 if none)."""
    x = np.atleast_2d(np.asarray(x))
    T = x.shape[1]
    pos = np.where(x == W, np.arange(T) + 1, -1)
    pos[:, 1::2] = -1  # only instruction slots hold w
    return np.maximum.accumulate(pos, axis=1)


def attention_on_written_bit(model, x: np.ndarray, layer: int = -1, or_read_bits: bool = False) -> np.ndarray:
    """Per head of ``layer``: the fraction of reads whose largest attention weight is on the bit of the last write
    (with ``or_read_bits``: or on the bit of a read since that write, which carries the same value).

    The layer-2 head of the Prop 3 construction scores 1 here; a trained model may solve the task otherwise (the
    thesis's remark: a dense head attending to all writes of the right type), so this is a measurement.
    """
    torch = require("torch", extra="trained")

    x = np.atleast_2d(np.asarray(x, dtype=np.int64))
    with torch.no_grad():
        _, weights = model.eval()(torch.from_numpy(x), return_attention=True)
    w = weights[layer].float().numpy()  # [B, H, T, T]
    reads = read_positions(x)
    reads[:, -1] = False
    b, t = np.nonzero(reads)
    target = last_write_bit(x)[b, t]
    attended = w[b, :, t, :].argmax(-1)  # [n_reads, H]
    hits = attended == target[:, None]
    if or_read_bits:
        after_read = np.zeros_like(x, dtype=bool)
        after_read[:, 1:] = x[:, :-1] == R
        rows = np.broadcast_to(b[:, None], attended.shape)
        hits |= after_read[rows, attended] & (attended > target[:, None]) & (attended < t[:, None])
    return hits.mean(0)


# ------------------------------------------------------------------------------------------------ n-gram models


def ngram_read_accuracy(n: int, p_ignore):
    """Bayes-optimal read accuracy of a predictor that sees only the n most recent tokens (away from the start):
    1 - p_i^floor(n/2) / 2 (exact for Fractions).

    The window before a read holds K = floor((n-1)/2) complete (instruction, bit) pairs; a ``w`` or ``r`` pair
    reveals the memory bit, ``i`` pairs carry nothing. For even n the window also holds one bit without its
    instruction: it equals the memory with probability 1 - p_i/2, one more factor p_i in the error.
    """
    if not isinstance(n, int | np.integer) or n < 1:
        raise ValueError(f"the window n must be a positive int, got {plain(n)}")
    _check_p(p_ignore)
    half = Fraction(1, 2) if isinstance(p_ignore, Fraction) else 0.5
    return 1 - half * p_ignore ** (n // 2)


def window_bayes_read_accuracy(
    T: int, p, n: int, t: int, support: tuple[np.ndarray, list[Fraction]] | None = None
) -> Fraction:
    """Exact accuracy of the best predictor of x_{t+1} from (x_{t-n+1}, ..., x_t) given x_t = r (1-based t, odd).

    Enumerates FFL(T, p) exactly: sum over windows of max_b Pr[window, x_{t+1} = b], divided by Pr[x_t = r].
    ``support`` is ``enumerate_ffl(T, p)`` when the caller already has it (many windows of one distribution)."""
    _check_length(T)
    if t % 2 == 0 or not 1 <= t < T:
        raise ValueError(f"reads sit at odd 1-based positions t < T, got t={t}")
    strings, probs = enumerate_ffl(T, p) if support is None else support
    if strings.shape[1] != T:
        raise ValueError(f"the support holds strings of length {strings.shape[1]}, not T={T}")
    at_read = np.flatnonzero(strings[:, t - 1] == R).tolist()
    if not at_read:
        raise ValueError(f"no read at position {t} has positive probability")
    # exact arithmetic on integers: every probability is num / den for one common denominator den
    den = math.lcm(*{probs[r].denominator for r in at_read})
    num = [probs[r].numerator * (den // probs[r].denominator) for r in at_read]
    tokens = strings[at_read, max(0, t - n) : t]
    code = tokens @ (len(TOKENS) ** np.arange(tokens.shape[1], dtype=np.int64))  # window -> base-5 integer
    _, window = np.unique(code, return_inverse=True)
    cell = 2 * window.ravel() + (strings[at_read, t] - ZERO)  # (window, next bit)
    joint = [0] * (2 * (int(window.max()) + 1))
    for c, q in zip(cell.tolist(), num, strict=True):
        joint[c] += q
    best = sum(max(joint[k], joint[k + 1]) for k in range(0, len(joint), 2))
    return Fraction(best, sum(joint))


def window_predictor(x: np.ndarray, n: int) -> np.ndarray:
    """The Bayes rule of an n-token window at every read: the bit of the latest ``w``/``r`` pair in the window,
    else the window's first token if it is a bit (even n), else "0". Returns predicted next tokens ``[B, T]``
    (meaningful at read positions)."""
    if not isinstance(n, int | np.integer) or n < 1:
        raise ValueError(f"the window n must be a positive int, got {plain(n)}")
    x = _check_tokens(x)
    B, T = x.shape
    pred = np.full((B, T), ZERO, dtype=np.int64)
    reveal = np.zeros((B, T), dtype=bool)
    reveal[:, 1::2] = np.isin(x[:, 0::2], (W, R))  # the bit positions of w and r pairs
    last = np.maximum.accumulate(
        np.where(reveal, np.arange(T), -1), axis=1
    )  # latest revealing bit <= position
    prev = np.full((B, T), -1)
    prev[:, 1:] = last[:, :-1]  # strictly before the read position
    t = np.arange(T)
    start = t - n + 1
    if n % 2 == 0:  # at a read (even 0-based t) the window starts with a bit whose instruction is cut off
        orphan = np.broadcast_to((start >= 0) & (t % 2 == 0), (B, T))
        rows, cols = np.nonzero(orphan)
        pred[rows, cols] = x[rows, start[cols]]
    visible = prev >= start
    pred[visible] = x[np.nonzero(visible)[0], prev[visible]]
    return pred


# ------------------------------------------------------------------------------------------------ Prop 4 (dilution)


def dilution_bound(sigma: float, T: int) -> float:
    """Prop 4: with latents of norm <= 1 and sigma = sigma_max(W_K^T W_Q), every softmax weight over T positions is
    at most e^sigma / (e^sigma + (T-1) e^-sigma) = 1 / (1 + (T-1) e^{-2 sigma})."""
    if T < 1 or not sigma >= 0 or not np.isfinite(sigma):
        raise ValueError(f"need T >= 1 and sigma >= 0, got T={T}, sigma={sigma}")
    return 1.0 / (1.0 + (T - 1) * np.exp(-2.0 * sigma))


def max_attention_weight(W_Q: np.ndarray, W_K: np.ndarray, keys: np.ndarray, query: np.ndarray) -> float:
    """max_t softmax_t(u_t^T W_K^T W_Q v) for keys u_t (rows of ``keys``) and query v; W_Q, W_K are k x d."""
    W_Q, W_K, keys, query = (np.asarray(a, dtype=float) for a in (W_Q, W_K, keys, query))
    if W_Q.ndim != 2 or W_Q.shape != W_K.shape or keys.ndim != 2 or query.shape != (W_Q.shape[1],):
        raise ValueError(
            "need W_Q, W_K of the same shape k x d, keys [T, d] and query [d]; got "
            f"{W_Q.shape}, {W_K.shape}, {keys.shape}, {query.shape}"
        )
    if keys.shape[1] != W_Q.shape[1] or len(keys) == 0:
        raise ValueError(f"keys must be a non-empty [T, d] array with d = {W_Q.shape[1]}, got {keys.shape}")
    if not all(np.all(np.isfinite(a)) for a in (W_Q, W_K, keys, query)):
        raise ValueError("inputs contain NaN or infinite entries")
    scores = keys @ (W_K.T @ (W_Q @ query))
    e = np.exp(scores - scores.max())
    return float(e.max() / e.sum())


def tight_dilution_instance(W_Q: np.ndarray, W_K: np.ndarray, T: int, norm: float = 1.0):
    """Keys and query of norm ``norm`` that attain Prop 4's bound (when norm = 1): the query is the top right
    singular vector r of W_K^T W_Q, key 1 is the top left singular vector l (score +sigma), the T-1 others -l."""
    U, S, Vt = np.linalg.svd(W_K.T @ W_Q)
    left, right = U[:, 0], Vt[0]
    keys = np.tile(-left, (T, 1))
    keys[0] = left
    return norm * keys, norm * right, float(S[0])


# ------------------------------------------------------------------------------------------------ Prop 5 (margin)

NOOP, WRITE1, WRITE2 = 0, 1, 2  # the automaton-simulation tokens of Prop 5: 0 = no-op, 1 and 2 = writes


@dataclass(frozen=True)
class LinearPEHead:
    """A 1-layer, 1-head hard-attention model with linear positions (Prop 5), in exact rational arithmetic.

    Token t at position j (1-based) has latent v_j = [E[t]; j / C]; the score of query i on key j is
    <W_Q v_i, W_K v_j> (W_Q, W_K are k x d; E is 3 x (d - 1)). Entries may be ints or Fractions.
    """

    W_Q: tuple
    W_K: tuple
    E: tuple
    C: int

    def __post_init__(self) -> None:
        if not isinstance(self.C, int | np.integer) or self.C < 1:
            raise ValueError(f"the position scale C must be a positive int, got {plain(self.C)}")

    def _M(self) -> list[list[Fraction]]:
        Q, K = (np.array(m, dtype=object) for m in (self.W_Q, self.W_K))
        return (Q.T @ K).tolist()

    def coefficients(self) -> dict:
        """A[q][k], recency r[q], key-position terms g[k] and beta = W_Qp^T W_Kp of the expanded score (Eq 3.9):
        s_{i->j} = A[x_i][x_j] + r[x_i] j / C + g[x_j] i / C + beta i j / C^2."""
        M = np.array(self._M(), dtype=object)
        E = np.array(self.E, dtype=object)
        Mee, Mep, Mpe, beta = M[:-1, :-1], M[:-1, -1], M[-1, :-1], M[-1, -1]
        return {
            "A": (E @ Mee @ E.T).tolist(),
            "r": (E @ Mep).tolist(),
            "g": (E @ Mpe).tolist(),
            "beta": Fraction(beta),
        }

    def scores(self, x, i: int) -> list[Fraction]:
        """Exact scores of query position i (1-based) on keys 1..i, from the matrices (not from Eq 3.9)."""
        Q, K = (np.array(m, dtype=object) for m in (self.W_Q, self.W_K))
        E = np.array(self.E, dtype=object)
        v_i = np.concatenate([E[x[i - 1]], [Fraction(i, self.C)]])
        q = Q @ v_i
        base = [q @ (K[:, :-1] @ E[t]) for t in range(3)]
        slope = (q @ K[:, -1]) / self.C
        return [base[x[j - 1]] + slope * j for j in range(1, i + 1)]

    def attended(self, x, i: int) -> int:
        """Hard attention of query i: the first key (1-based) with the largest score."""
        _check_prop5_query(x, i)
        s = self.scores(x, i)
        return 1 + max(range(len(s)), key=lambda j: (s[j], -j))


def _check_prop5_query(x, i: int) -> None:
    if not isinstance(i, int | np.integer) or not 1 <= i <= len(x):
        raise ValueError(f"query position i must be in 1..{len(x)}, got {plain(i)}")
    if any(t not in (NOOP, WRITE1, WRITE2) for t in x[:i]):
        raise ValueError("Prop 5 tokens are 0 (no-op), 1 and 2 (writes)")


def most_recent_write(x, i: int) -> int:
    """1-based position of the last write at or before position i (0 if none)."""
    _check_prop5_query(x, i)
    return max((j for j in range(1, i + 1) if x[j - 1] != NOOP), default=0)


def probe_case1(T: int) -> list[int]:
    """One write, then no-ops: (1, 0, ..., 0). The query at T must attend to position 1."""
    return [WRITE1] + [NOOP] * (T - 1)


def probe_case2(T: int) -> list[int]:
    """(1, 0, ..., 0, 2, 0): the query at T must attend to the second write at T - 1."""
    return [WRITE1] + [NOOP] * (T - 3) + [WRITE2, NOOP]


def failure_margin(head: LinearPEHead, case: int) -> tuple[Fraction, Fraction, Fraction]:
    """(a, b, c) with margin(T) = a T^2 + b T + c, from Eq 3.9. Case 1 (probe (1, 0, ..., 0)): the query's own
    score minus the write's, wrong when > 0. Case 2 (probe (1, 0, ..., 2, 0)): the new write's score minus the stale
    write's, wrong when <= 0 (a tie goes to the first index)."""
    k = head.coefficients()
    A, r, g, beta, C = k["A"], k["r"], k["g"], k["beta"], head.C
    if case == 1:
        return beta / C**2, (r[0] + g[0] - g[1]) / C - beta / C**2, (A[0][0] - A[0][1]) - Fraction(r[0]) / C
    if case == 2:
        return (
            beta / C**2,
            (r[0] + g[2] - g[1]) / C - 2 * beta / C**2,
            (A[0][2] - A[0][1]) - 2 * Fraction(r[0]) / C,
        )
    raise ValueError(f"case must be 1 or 2, got {case}")


def predicted_failure_length(head: LinearPEHead, case: int, T_max: int = 10**7) -> int | None:
    """Smallest T at which the probe of ``case`` is answered wrongly because of the competitor named in the proof
    (case 1: the query itself beats the write at 1; case 2: the stale write at 1 beats the write at T - 1), from the
    exact quadratic margin; None if none up to ``T_max``. Other no-op keys may fail earlier: compare with
    :meth:`LinearPEHead.attended`."""
    a, b, c = failure_margin(head, case)
    lo = 1 + case

    def wrong(T: int) -> bool:
        m = a * T * T + b * T + c
        return m > 0 if case == 1 else m <= 0

    roots = []
    if a != 0:
        disc = float(b) ** 2 - 4 * float(a) * float(c)
        if disc >= 0:
            roots = [(-float(b) + s * disc**0.5) / (2 * float(a)) for s in (-1, 1)]
    elif b != 0:
        roots = [float(-c / b)]
    for start in sorted({lo, *(max(lo, int(x) - 2) for x in roots if x < T_max)}):
        for T in range(start, min(start + 5, T_max + 1)):
            if wrong(T) and (T == lo or not wrong(T - 1)):
                return T
    return None


# ------------------------------------------------------------------------------------------------ glitches (§3.5)

#: The thesis's evaluation distributions (l.2976-2980): in-distribution FFL(0.8), sparse FFL(0.98), dense FFL(0.1).
GLITCH_SETS = {"in_distribution": 0.8, "sparse": 0.98, "dense": 0.1}


def glitch_eval_set(name: str, T: int, n: int, seed: int = 0) -> np.ndarray:
    """The fixed evaluation strings of ``name`` (a key of ``GLITCH_SETS``): ``n`` strings of FFL(T, p_i) drawn
    from ``np.random.default_rng([seed, T, round(1000 p_i)])``, identical for every model and every call."""
    if name not in GLITCH_SETS:
        raise ValueError(f"unknown evaluation set {name!r}; expected one of {sorted(GLITCH_SETS)}")
    _check_length(T)
    if isinstance(n, bool) or not isinstance(n, int | np.integer) or n < 1:
        raise ValueError(f"the number of strings must be a positive int, got {plain(n)}")
    p = GLITCH_SETS[name]
    q = (1 - p) / 2
    return sample_ffl(np.random.default_rng([seed, T, round(1000 * p)]), int(n), T, q, q, p)


@dataclass(frozen=True)
class GlitchReport:
    """Read errors of several models on the fixed sparse / dense (and optionally in-distribution) sets.

    ``errors[name]`` is an int array over models (wrong argmax predictions after reads), ``reads[name]`` the number
    of reads scored (the same for every model)."""

    T: int
    errors: dict
    reads: dict

    def error_rate(self, name: str) -> np.ndarray:
        return self.errors[name] / max(self.reads[name], 1)

    @property
    def glitching(self) -> np.ndarray:
        """Per model: some read error on the sparse or the dense set."""
        return (self.errors["sparse"] > 0) | (self.errors["dense"] > 0)


def _predictions(model, x: np.ndarray, device: str, chunk: int) -> np.ndarray:
    """Next-token predictions ``[n, T]``: a callable ``x -> [n, T]`` tokens, or a torch module (argmax of logits)."""
    import sys  # noqa: PLC0415

    torch = sys.modules.get(
        "torch"
    )  # a torch module cannot exist unless torch is imported: do not import it here
    if torch is not None and isinstance(model, torch.nn.Module):
        was_training = model.training
        model.eval().to(device)
        out = []
        with torch.no_grad():
            for i in range(0, len(x), chunk):
                logits = model(torch.from_numpy(x[i : i + chunk]).to(device))
                logits = logits[0] if isinstance(logits, tuple) else logits
                out.append(logits.argmax(-1).cpu().numpy())
        model.train(was_training)
        return np.concatenate(out)
    if callable(model):
        return np.concatenate([np.asarray(model(x[i : i + chunk])) for i in range(0, len(x), chunk)])
    raise TypeError(
        f"a model must be a torch module or a callable x -> predicted tokens, got {type(model).__name__}"
    )


def glitch_report(
    models,
    T: int,
    n_sparse: int,
    n_dense: int,
    n_in_distribution: int = 0,
    seed: int = 0,
    device: str = "cpu",
    chunk: int = 256,
) -> GlitchReport:
    """Count read errors (R1's glitches) of each model on the fixed sets of :func:`glitch_eval_set`.

    A model is a torch module returning logits ``[n, T, V]`` or a callable returning predicted next tokens
    ``[n, T]`` (e.g. ``lambda x: prop3_predict(x)[0]``). Every read whose next token (the bit) is scored; the final
    read of each string is scored too (its bit is the string's last token)."""
    models = list(models)
    if not models:
        raise ValueError("glitch_report needs at least one model")
    sets = {"sparse": n_sparse, "dense": n_dense}
    if n_in_distribution:
        sets["in_distribution"] = n_in_distribution
    errors, reads = {}, {}
    for name, n in sets.items():
        x = glitch_eval_set(name, T, n, seed)
        mask = read_positions(x)
        mask[:, -1] = (
            False  # the read instruction's position predicts the next token; the last token is a bit
        )
        target = np.zeros_like(x)
        target[:, :-1] = x[:, 1:]
        errs = []
        for model in models:
            pred = _predictions(model, x, device, chunk)
            if pred.shape != x.shape:
                raise ValueError(f"predictions have shape {pred.shape}, expected {x.shape}")
            errs.append(int((mask & (pred != target)).sum()))
        errors[name], reads[name] = np.array(errs), int(mask.sum())
    return GlitchReport(T, errors, reads)


@dataclass(frozen=True)
class FlipFlopMixture:
    """R4's training distribution: each sequence is drawn from FFL(p_i) with p_i uniform over ``p_ignores``
    (thesis: the uniform mixture of FFL(0.9), FFL(0.98) and FFL(0.1)). Clean mode (reads scored)."""

    p_ignores: tuple = (0.9, 0.98, 0.1)
    mode: str = "clean"
    name: str = "flipflop_mixture"
    vocab_size: int = 5
    n_outputs: int = 5
    loss: str = "ce"

    def __post_init__(self) -> None:
        if not self.p_ignores:
            raise ValueError("the mixture needs at least one component")
        for p in self.p_ignores:
            _check_p(p)
        if self.mode != "clean":
            raise ValueError("the mixture task is defined in clean mode")

    def sample_components(
        self, rng: np.random.Generator, batch: int, T: int
    ) -> tuple[np.ndarray, np.ndarray]:
        """(strings ``[batch, T]``, component index of each string)."""
        comp = rng.integers(len(self.p_ignores), size=batch)
        x = np.empty((batch, T), dtype=np.int64)
        for k, p in enumerate(self.p_ignores):
            rows = np.flatnonzero(comp == k)
            if rows.size:
                q = (1 - p) / 2
                x[rows] = sample_ffl(rng, rows.size, T, q, q, p)
        return x, comp

    def sample_batch(self, rng: np.random.Generator, batch: int, T: int) -> Batch:
        x, _ = self.sample_components(rng, batch, T)
        y = np.zeros_like(x)
        y[:, :-1] = x[:, 1:]
        return Batch(x, y, read_positions(x))


def distance_probe(T: int, k: int) -> np.ndarray:
    """Four strings of length ``T`` that isolate the write-read distance: filler writes of the opposite bit, then
    ``w b``, ``k`` ignores with bit ``z``, and ``r b``, for (b, z) in {0,1}^2. Requires 0 <= k <= T/2 - 2."""
    _check_length(T)
    if isinstance(k, bool) or not isinstance(k, int | np.integer) or not 0 <= k <= T // 2 - 2:
        raise ValueError(f"the distance k must be an int in 0..T/2-2 = {T // 2 - 2}, got {plain(k)}")
    rows = []
    for b, z in itertools.product((0, 1), repeat=2):
        instr = [W] * (T // 2 - 2 - k) + [W] + [I] * k + [R]
        bits = [1 - b] * (T // 2 - 2 - k) + [b] + [z] * k + [b]
        rows.append([v for pair in zip(instr, [ZERO + t for t in bits], strict=True) for v in pair])
    return np.array(rows, dtype=np.int64)
