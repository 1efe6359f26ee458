r"""Converters and convention checks for the flip-flop and Dyck data of the authors' and third-party code.

* FFL records: one string per sequence in the text form ``"w0i1...r0"`` (field ``"text"``), theorylab's token
  ids ``w=0, r=1, i=2, "0"=3, "1"=4`` (the map of the authors' public data). :func:`in_ffl_support` checks the
  whole support of FFL(T, p): alternation, first instruction ``w``, **last instruction** ``r``, every read
  correct (:func:`theorylab.languages.flipflop.is_valid` omits the last-read condition).
* :func:`sample_unforced_ffl`: a generator that forces the first write but not the final read (as one
  third-party generator does); a fraction $1 - p_r$ of its strings lies outside the FFL support.
* Dyck training files: one string per line, ``<bos>`` + brackets + ``<eos>`` (``"B[()]E"``, the
  LM_Query_Complexity layout), read into theorylab's ids ``[=0, ]=1, (=2, )=3`` with a length mask.
* LDA training files: one document per line, its words as space-separated 0-based word ids (the topic
  repository's vocabulary puts ``PAD=0, MASK=1, START=2, END=3`` before the words, word ``w`` at id ``w + 4``);
  theorylab's words are ``1..Tv`` with ``MASK = 0``. Documents may differ in length (a length mask is returned);
  :func:`sample_variable_length_documents` draws such corpora.
* :func:`depth_exceedance`: the exact probability that a string of Li's $\mathrm{Dyck}_D$ (Remark 3.2.1)
  exceeds a depth cap (the backtracking repository caps the depth at 12).
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np

from theorylab._fmt import plain
from theorylab.languages.flipflop import TOKENS, R, W, _check_length, _check_probs, _check_tokens, is_valid

__all__ = [
    "DYCK_CHARS",
    "LDA_SPECIALS",
    "from_lda_lines",
    "sample_variable_length_documents",
    "special_replacement_fraction",
    "to_lda_lines",
    "depth_exceedance",
    "from_dyck_lines",
    "from_ffl_records",
    "in_ffl_support",
    "sample_unforced_ffl",
    "to_dyck_lines",
    "to_ffl_records",
]

DYCK_CHARS = "[]()"


def to_ffl_records(x) -> list[dict[str, str]]:
    """``[n, T]`` flip-flop token ids -> ``[{"text": "w0i1...r0"}, ...]``."""
    x = _check_tokens(x)
    return [{"text": "".join(TOKENS[t] for t in row)} for row in x]


def from_ffl_records(records, field: str = "text") -> np.ndarray:
    """FFL records (dicts with a text ``field``, or plain strings) of one length -> int64 ``[n, T]`` ids."""
    texts = [r if isinstance(r, str) else r[field] for r in records]
    if not texts:
        raise ValueError("no records")
    lengths = {len(t) for t in texts}
    if len(lengths) != 1:
        raise ValueError(f"FFL records of one dataset have one length, got lengths {sorted(lengths)}")
    out = np.empty((len(texts), lengths.pop()), dtype=np.int64)
    for b, text in enumerate(texts):
        try:
            out[b] = [TOKENS.index(c) for c in text]
        except ValueError as err:
            raise ValueError(f"record {b}: flip-flop text uses the symbols {TOKENS}, got {text!r}") from err
    return out


def in_ffl_support(x) -> np.ndarray:
    """Bool per string: in the support of FFL(T, p) for p with full support (first ``w``, last ``r``, reads
    correct, instructions and bits alternate)."""
    x = np.atleast_2d(np.asarray(x))
    ok = is_valid(x)
    return ok & (x[:, -2] == R) if x.shape[1] >= 2 else ok


def sample_unforced_ffl(
    rng: np.random.Generator, n: int, T: int, p_write: float, p_read: float, p_ignore: float
) -> np.ndarray:
    """Flip-flop strings whose first instruction is ``w`` and the others i.i.d. ~ p, **including the last**
    (FFL forces it to be ``r``); bits after ``w``/``i`` uniform, reads correct."""
    _check_length(T)
    _check_probs(p_write, p_read, p_ignore)
    K = T // 2
    instr = rng.choice(3, size=(n, K), p=[p_write, p_read, p_ignore]).astype(np.int64)
    instr[:, 0] = W
    bits = rng.integers(0, 2, size=(n, K), dtype=np.int64)
    last_write = np.maximum.accumulate(np.where(instr == W, np.arange(K), -1), axis=1)
    bits = np.where(instr == R, np.take_along_axis(bits, last_write, axis=1), bits)
    x = np.empty((n, T), dtype=np.int64)
    x[:, 0::2], x[:, 1::2] = instr, bits + 3
    return x


def to_dyck_lines(tokens, lengths=None, bos: str = "B", eos: str = "E") -> list[str]:
    """Dyck token ids ``[n, T]`` (``[=0, ]=1, (=2, )=3``; row ``b`` uses its first ``lengths[b]`` tokens) ->
    lines ``bos + brackets + eos``."""
    x = np.atleast_2d(np.asarray(tokens))
    if not np.issubdtype(x.dtype, np.integer) or (x.size and (x.min() < 0 or x.max() > 3)):
        raise ValueError("Dyck tokens must be integer ids in 0..3 ([, ], (, ))")
    lengths = np.full(len(x), x.shape[1]) if lengths is None else np.asarray(lengths)
    return [bos + "".join(DYCK_CHARS[t] for t in row[:n]) + eos for row, n in zip(x, lengths, strict=True)]


def from_dyck_lines(lines, bos: str = "B", eos: str = "E") -> tuple[np.ndarray, np.ndarray]:
    """Lines ``bos + brackets + eos`` -> (int64 ids ``[n, T_max]`` padded with 0, bool length mask)."""
    rows = []
    for b, line in enumerate(lines):
        line = line.strip()
        if not (line.startswith(bos) and line.endswith(eos)) or len(line) < len(bos) + len(eos):
            raise ValueError(f"line {b} must be {bos!r} + brackets + {eos!r}, got {line!r}")
        body = line[len(bos) : len(line) - len(eos)]
        if any(c not in DYCK_CHARS for c in body):
            raise ValueError(f"line {b} has characters outside {DYCK_CHARS!r}: {body!r}")
        rows.append([DYCK_CHARS.index(c) for c in body])
    if not rows:
        raise ValueError("no lines")
    T = max(len(r) for r in rows)
    ids = np.zeros((len(rows), T), dtype=np.int64)
    mask = np.zeros((len(rows), T), dtype=bool)
    for b, r in enumerate(rows):
        ids[b, : len(r)], mask[b, : len(r)] = r, True
    return ids, mask


def depth_exceedance(D: int, cap: int, q: Fraction | float = Fraction(1, 2)) -> Fraction | float:
    r"""$P(\max_i \mathrm{depth}(w_{1:i}) > \mathrm{cap})$ for $w\sim\mathrm{Dyck}_D$ of Remark 3.2.1 (open
    at depth 0, close when the depth equals the remaining length, else open w.p. ``q``); exact for a Fraction
    ``q``, by a forward pass over depths ($O(D^2)$)."""
    for name, v in (("D", D), ("cap", cap)):
        if isinstance(v, bool) or not isinstance(v, int | np.integer) or v < 0:
            raise ValueError(f"{name} must be a non-negative int, got {plain(v)}")
    if D % 2 or D < 2:
        raise ValueError(f"D must be an even length >= 2, got {D}")
    one = Fraction(1) if isinstance(q, Fraction) else 1.0
    dist, over = {0: one}, 0 * one
    for i in range(1, D + 1):
        new: dict[int, Fraction | float] = {}
        for d, p in dist.items():
            moves = [(1, one)] if d == 0 else [(-1, one)] if d == D - i + 1 else [(1, q), (-1, 1 - q)]
            for step, pp in moves:
                if d + step > cap:
                    over += p * pp
                else:
                    new[d + step] = new.get(d + step, 0) + p * pp
        dist = new
    return over


LDA_SPECIALS = ("PAD", "MASK", "START", "END")


def to_lda_lines(docs, mask=None) -> list[str]:
    """theorylab documents (word ids ``1..Tv``, ``[n, N]``; row ``b`` uses the positions where ``mask[b]``) ->
    lines of space-separated 0-based word ids."""
    x = np.atleast_2d(np.asarray(docs))
    if not np.issubdtype(x.dtype, np.integer):
        raise TypeError(f"documents must hold integer word ids, got dtype {x.dtype}")
    mask = np.ones(x.shape, dtype=bool) if mask is None else np.asarray(mask, dtype=bool)
    if mask.shape != x.shape:
        raise ValueError(f"mask has shape {mask.shape}, documents {x.shape}")
    if (x[mask] < 1).any():
        raise ValueError("documents must hold words 1..Tv (MASK = 0 is not a word)")
    return [" ".join(str(int(w) - 1) for w in row[m]) for row, m in zip(x, mask, strict=True)]


def from_lda_lines(lines, n_words: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Lines of 0-based word ids -> (theorylab word ids ``1..Tv`` ``[n, N_max]`` padded with 0, length mask).
    ``n_words`` (= Tv): raise if a word id is out of range."""
    rows = []
    for b, line in enumerate(lines):
        try:
            words = [int(t) for t in line.split()]
        except ValueError as err:
            raise ValueError(f"line {b}: words must be integer ids, got {line!r}") from err
        if any(w < 0 or (n_words is not None and w >= n_words) for w in words):
            raise ValueError(
                f"line {b}: word ids must lie in 0..{'Tv-1' if n_words is None else n_words - 1}"
            )
        rows.append(words)
    if not rows:
        raise ValueError("no lines")
    N = max(len(r) for r in rows)
    docs = np.zeros((len(rows), N), dtype=np.int64)
    mask = np.zeros((len(rows), N), dtype=bool)
    for b, r in enumerate(rows):
        docs[b, : len(r)], mask[b, : len(r)] = np.asarray(r, dtype=np.int64) + 1, True
    return docs, mask


def sample_variable_length_documents(model, rng: np.random.Generator, n: int, N_min: int, N_max: int):
    """``n`` documents of ``model`` (a :class:`theorylab.languages.topic.TopicModel`) with lengths uniform in
    ``N_min..N_max``: (word ids ``[n, N_max]`` padded with 0, length mask)."""
    if not 1 <= N_min <= N_max:
        raise ValueError(f"need 1 <= N_min <= N_max, got {N_min}, {N_max}")
    docs = model.sample_documents(rng, n, N_max)
    mask = np.arange(N_max)[None, :] < rng.integers(N_min, N_max + 1, size=n)[:, None]
    return np.where(mask, docs, 0), mask


def special_replacement_fraction(p_m, p_r, n_special: int, n_words: int):
    """Fraction of all tokens replaced by a special token when the random replacement (probability ``p_r``
    of a masked position, masked w.p. ``p_m``) draws uniformly from all ``n_special + n_words`` ids instead of
    the words only: $p_m p_r \\, n_s / (n_s + n_w)$."""
    return p_m * p_r * n_special / (n_special + n_words)
