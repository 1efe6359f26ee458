r"""Liu §4.2.3's masking, n-gram contexts and progress measures, and the nonterminal tasks of Def 26 and paper 000.

- :func:`mask_tokens`: Def 24's masked prediction input (mask rate p; of the masked positions, 80% become the mask
  token C, 10% a uniformly random token of the vocabulary (which may equal the original), 10% stay unchanged).
- :func:`ngram_context`: Def 25's n-gram neighbouring context. Printed with $i\in[h]$ as
  $\{j:\max(i-\lceil(n-1)/2\rceil,0)\le j\le\min(i+\lfloor(n-1)/2\rfloor,h)\}$: read 1-based the clamp admits $j=0$,
  read 0-based it admits $j=h$, so neither reading stays inside the sentence at its edges. Pinned here: positions
  are 0-based and the window $[i-\lceil(n-1)/2\rceil,\ i+\lfloor(n-1)/2\rfloor]$ is intersected with $\{0..h-1\}$
  (n positions in the interior, the extra one on the left for even n), which reproduces Fig. 4.6's example.
- :func:`l_robust`, :func:`l_close`: Eqs. 4.94-4.95 for a predictor given as a function of the observed positions;
  :func:`pcfg_predictor` is the Bayes-optimal one (the true masked conditional by inside-outside).
- :func:`boundary_labels`: Def 26's level-$\ell$ targets (the level-$\ell$ nonterminal at the right boundary of its
  span; level = distance from the root).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from theorylab.languages.pcfg import PCFG, Samples

__all__ = [
    "boundary_labels",
    "l_close",
    "l_robust",
    "mask_tokens",
    "ngram_context",
    "pcfg_predictor",
    "span_task",
    "tv",
]

#: Def 24's split of the masked positions: mask token, random token, unchanged.
MASK_SPLIT = (0.8, 0.1, 0.1)


def mask_tokens(
    rng: np.random.Generator, tokens: np.ndarray, p: float, n_vocab: int, mask_token: int
) -> tuple[np.ndarray, np.ndarray]:
    """Def 24: each position is masked independently with probability ``p``; a masked position becomes
    ``mask_token`` (80%), a uniform token of ``0..n_vocab-1`` (10%) or stays (10%). Returns ``(inputs, masked)``."""
    x = np.asarray(tokens)
    if not np.issubdtype(x.dtype, np.integer):
        raise TypeError(f"tokens must be integers, got dtype {x.dtype}")
    if not 0 <= p <= 1:
        raise ValueError(f"mask rate p must lie in [0, 1], got {p}")
    if x.size and (x.min() < 0 or x.max() >= n_vocab):
        raise ValueError(f"tokens must lie in [0, {n_vocab}), got values in [{x.min()}, {x.max()}]")
    if 0 <= mask_token < n_vocab:
        raise ValueError(f"mask_token must not be a vocabulary token in [0, {n_vocab}), got {mask_token}")
    masked = rng.random(x.shape) < p
    kind = rng.random(x.shape)
    out = x.copy()
    out[masked & (kind < MASK_SPLIT[0])] = mask_token
    rand = masked & (kind >= MASK_SPLIT[0]) & (kind < MASK_SPLIT[0] + MASK_SPLIT[1])
    out[rand] = rng.integers(0, n_vocab, int(rand.sum()))
    return out, masked


def ngram_context(i: int, n: int, h: int) -> np.ndarray:
    """Def 25 (0-based, clipped to the sentence; see the module docstring): the positions within the n-gram
    window around ``i``, including ``i``."""
    for name, value in (("i", i), ("n", n), ("h", h)):
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
            raise TypeError(f"{name} must be an int, got {type(value).__name__}")
    if n < 1 or h < 1:
        raise ValueError(f"n and h must be >= 1, got n = {n}, h = {h}")
    if not 0 <= i < h:
        raise ValueError(f"position i must lie in [0, {h}) (0-based), got {i}")
    lo, hi = i - n // 2, i + (n - 1) // 2  # ceil((n-1)/2) = n // 2
    return np.arange(max(lo, 0), min(hi, h - 1) + 1)


def tv(p: np.ndarray, q: np.ndarray) -> float:
    """Total variation $\\frac12\\|p-q\\|_1$."""
    return 0.5 * float(np.abs(np.asarray(p) - np.asarray(q)).sum())


Predictor = Callable[[np.ndarray, np.ndarray, int], np.ndarray]


def pcfg_predictor(grammar: PCFG) -> Predictor:
    """The Bayes-optimal masked predictor $p^{(i)}(x_O) = P(x_i\\mid x_O)$ of a PCFG (masked positions are unknown
    tokens of a known-length sentence)."""
    return lambda x, observed, i: grammar.masked_conditional(x, observed, i)


def l_robust(predict: Predictor, x: np.ndarray, i: int, n: int) -> float:
    """Eq. 4.94: $\\mathrm{TV}(p^{(i)}(x_{\\setminus\\{i\\}}), p^{(i)}(x_{\\setminus n\\text{-gram}(i)}))$."""
    x = np.asarray(x)
    only_i = np.ones(len(x), bool)
    only_i[i] = False
    window = only_i.copy()
    window[ngram_context(i, n, len(x))] = False
    return tv(predict(x, only_i, i), predict(x, window, i))


def l_close(predict: Predictor, x: np.ndarray, i: int, n: int) -> float:
    """Eq. 4.95: $\\mathrm{TV}(p^{(i)}(x_{\\setminus\\{i\\}}), p^{(i)}(x_{n\\text{-gram}(i)\\setminus\\{i\\}}))$."""
    x = np.asarray(x)
    only_i = np.ones(len(x), bool)
    only_i[i] = False
    window = np.zeros(len(x), bool)
    window[ngram_context(i, n, len(x))] = True
    window[i] = False
    return tv(predict(x, only_i, i), predict(x, window, i))


def boundary_labels(samples: Samples, grammar: PCFG, s: int, level: int) -> np.ndarray:
    """Def 26 for sentence ``s``: an array over positions holding the label of the level-``level`` nonterminal whose
    span ends there (its right boundary), -1 elsewhere. Level 0 is the root."""
    if level < 0:
        raise ValueError(f"level must be >= 0, got {level}")
    k = np.flatnonzero(
        (samples.node_sentence == s) & (samples.node_level == level) & (grammar.labels[samples.node_nt] >= 0)
    )
    out = np.full(int(samples.lengths[s]), -1)
    out[samples.node_end[k] - 1] = grammar.labels[samples.node_nt[k]]
    return out


def span_task(
    grammar: PCFG, samples: Samples, length: int, max_items: int | None = None
) -> list[tuple[int, int]]:
    """Paper 000's downstream task at span length ``L`` (reconstructed: the span is the prefix ``[0, L)`` of each
    sentence with at least ``L`` tokens): ``(sentence, label)`` with label $\\arg\\max_s P(s$ spans $[0,L)\\mid x)$ by
    inside-outside; sentences whose prefix no nonterminal can span are skipped."""
    if length < 1:
        raise ValueError(f"span length L must be >= 1, got {length}")
    items = []
    for s in np.flatnonzero(samples.lengths >= length):
        label = grammar.prefix_span_label(samples.sentence(int(s)), length)
        if label >= 0:
            items.append((int(s), label))
        if max_items is not None and len(items) >= max_items:
            break
    return items
