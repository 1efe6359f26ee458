r"""Probabilistic context-free grammars in Chomsky-normal-like form, with exact log-space inference.

A :class:`PCFG` has nonterminals $0..N-1$, terminals $0..V-1$, a start distribution $\pi$ over nonterminals, binary
rules $A\to BC$ with probabilities $P(A\to BC) > 0$ and emissions $E_{Aw} = P(A\to w)$; for every nonterminal
$\sum_{BC}P(A\to BC) + \sum_wE_{Aw} = 1$. Rules with three or more symbols, or with terminals inside a longer
right-hand side, are compiled into this form by :mod:`theorylab.languages.pcfg_grammars` (auxiliary nonterminals and
preterminals; their ``labels`` are ``-1``, so they never count as a span's label).

Inference works on *evidence*: an ``(n, V)`` 0/1 matrix whose row $i$ is the one-hot token at an observed position
and all ones at a masked one (length known, identity unknown). The inside score is
$\alpha_{ij}(A) = \log P(A\Rightarrow^* x_{i:j}\text{ consistent with the evidence})$ (half-open spans), the outside score
$\beta_{ij}(A) = \log P(S\Rightarrow^* x_{0:i}\,A\,x_{j:n})$, and the posterior that $A$ spans $[i,j)$ is
$\exp(\alpha_{ij}(A)+\beta_{ij}(A)-\log Z)$.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

__all__ = ["PCFG", "Samples", "enumerate_parses", "logsumexp"]

#: Probabilities of one nonterminal's rules must sum to one within this tolerance (float64 sums of <= 1e4 terms).
NORMALISATION_TOL = 1e-9


def logsumexp(a: np.ndarray, axis: int) -> np.ndarray:
    """log(sum(exp(a))) along ``axis``; -inf where every entry is -inf."""
    m = np.max(a, axis=axis, keepdims=True)
    m = np.where(np.isfinite(m), m, 0.0)
    with np.errstate(divide="ignore"):
        return np.squeeze(m, axis=axis) + np.log(np.sum(np.exp(a - m), axis=axis))


def _scatter_logsumexp(values: np.ndarray, index: np.ndarray, size: int) -> np.ndarray:
    """out[..., k] = logsumexp of values[..., r] over r with index[r] == k, with a max shift per target (no
    underflow of a target whose terms are all far below another target's), -inf for targets without terms."""
    order = np.argsort(index, kind="stable")
    idx = index[order]
    heads = np.r_[0, np.flatnonzero(np.diff(idx)) + 1]
    vals = values[..., order]
    m = np.maximum.reduceat(vals, heads, axis=-1)
    shift = np.where(np.isfinite(m), m, 0.0)
    seg = np.repeat(np.arange(len(heads)), np.diff(np.r_[heads, len(idx)]))
    with np.errstate(divide="ignore"):
        summed = np.log(np.add.reduceat(np.exp(vals - shift[..., seg]), heads, axis=-1)) + shift
    out = np.full(values.shape[:-1] + (size,), -np.inf)
    out[..., idx[heads]] = summed
    return out


@dataclass(frozen=True)
class Samples:
    """Sentences and their parse trees, flat: sentence ``s`` is ``tokens[offsets[s]:offsets[s+1]]``; node ``k`` of the
    trees has nonterminal ``node_nt[k]``, sentence ``node_sentence[k]``, span ``[node_start[k], node_end[k])`` (positions
    within its sentence), parent ``node_parent[k]`` (-1 at a root) and level ``node_level[k]``: the number of labelled
    (non-auxiliary) proper ancestors, so the root has level 0 (Def 26's "distance from the root")."""

    tokens: np.ndarray
    offsets: np.ndarray
    node_nt: np.ndarray
    node_sentence: np.ndarray
    node_start: np.ndarray
    node_end: np.ndarray
    node_parent: np.ndarray
    node_level: np.ndarray

    def __len__(self) -> int:
        return len(self.offsets) - 1

    def sentence(self, s: int) -> np.ndarray:
        return self.tokens[self.offsets[s] : self.offsets[s + 1]]

    @property
    def lengths(self) -> np.ndarray:
        return np.diff(self.offsets)

    def constituents(self, s: int) -> set[tuple[int, int, int]]:
        """The (nonterminal, start, end) triples of sentence ``s``'s tree."""
        k = np.flatnonzero(self.node_sentence == s)
        return set(
            zip(self.node_nt[k].tolist(), self.node_start[k].tolist(), self.node_end[k].tolist(), strict=True)
        )


def _array(value, name: str, ndim: int, dtype) -> np.ndarray:
    arr = np.asarray(value)
    if arr.ndim != ndim:
        raise ValueError(f"{name} must be a {ndim}-D array, got shape {arr.shape}")
    if dtype is int:
        if arr.size and not np.issubdtype(arr.dtype, np.integer):
            raise TypeError(f"{name} must hold integers, got dtype {arr.dtype}")
        return arr.astype(np.int64)
    if arr.size and not (np.issubdtype(arr.dtype, np.floating) or np.issubdtype(arr.dtype, np.integer)):
        raise TypeError(f"{name} must hold real numbers, got dtype {arr.dtype}")
    arr = arr.astype(np.float64)
    if not np.all(np.isfinite(arr)) or np.any(arr < 0):
        raise ValueError(f"{name} must be finite and non-negative")
    return arr


@dataclass(frozen=True, eq=False)
class PCFG:
    """A PCFG in Chomsky-normal-like form (see the module docstring); validated on construction.

    ``rules`` is an ``(R, 3)`` integer array of (parent, left, right) and ``rule_probs`` their probabilities;
    ``emissions`` is ``(N, V)``; ``labels`` maps each nonterminal to its class (``-1``: auxiliary, never a label).
    """

    start: np.ndarray
    rules: np.ndarray
    rule_probs: np.ndarray
    emissions: np.ndarray
    labels: np.ndarray | None = None
    _cache: dict = field(default_factory=dict, repr=False, compare=False)

    def __post_init__(self) -> None:
        emissions = _array(self.emissions, "emissions", 2, float)
        n, v = emissions.shape
        if n < 1 or v < 1:
            raise ValueError(
                f"emissions must have at least one nonterminal and one terminal, got shape {(n, v)}"
            )
        start = _array(self.start, "start", 1, float)
        if start.shape != (n,):
            raise ValueError(
                f"start must have one probability per nonterminal ({n}), got shape {start.shape}"
            )
        if abs(start.sum() - 1.0) > NORMALISATION_TOL:
            raise ValueError(f"start probabilities must sum to 1, got {start.sum():.12g}")
        rules = _array(self.rules, "rules", 2, int) if np.size(self.rules) else np.zeros((0, 3), np.int64)
        if rules.shape[1:] != (3,):
            raise ValueError(
                f"rules must be an (R, 3) array of (parent, left, right), got shape {rules.shape}"
            )
        if rules.size and (rules.min() < 0 or rules.max() >= n):
            raise ValueError(
                f"rules must name nonterminals in [0, {n}), got values in [{rules.min()}, {rules.max()}]"
            )
        probs = _array(self.rule_probs, "rule_probs", 1, float)
        if probs.shape != (len(rules),):
            raise ValueError(
                f"rule_probs must have one probability per rule ({len(rules)}), got shape {probs.shape}"
            )
        if np.any(probs <= 0):
            raise ValueError(
                f"rule probabilities must be positive (drop zero rules), rule {int(np.argmin(probs))}"
            )
        if len(np.unique(rules, axis=0)) != len(rules):
            raise ValueError("rules must be distinct: some (parent, left, right) appears twice")
        totals = emissions.sum(axis=1) + np.bincount(rules[:, 0], weights=probs, minlength=n)
        bad = np.flatnonzero(np.abs(totals - 1.0) > NORMALISATION_TOL)
        if bad.size:
            raise ValueError(
                f"rules of nonterminal {int(bad[0])} are not normalised: their probabilities sum to {totals[bad[0]]:.12g}"
            )
        labels = np.arange(n) if self.labels is None else _array(self.labels, "labels", 1, int)
        if labels.shape != (n,) or labels.min() < -1:
            raise ValueError(
                f"labels must give one class >= -1 per nonterminal ({n}), got shape {labels.shape}"
            )
        for name, value in (
            ("start", start),
            ("rules", rules),
            ("rule_probs", probs),
            ("emissions", emissions),
        ):
            object.__setattr__(self, name, value)
        object.__setattr__(self, "labels", labels)
        self._check_structure()

    # ------------------------------------------------------------------------------------------------ structure
    @property
    def n_nonterminals(self) -> int:
        return self.emissions.shape[0]

    @property
    def n_vocab(self) -> int:
        return self.emissions.shape[1]

    @property
    def n_labels(self) -> int:
        return int(self.labels.max()) + 1

    def mean_matrix(self) -> np.ndarray:
        """$M_{AB}$ = expected number of $B$ children of an $A$ node (the branching process of derivations)."""
        n = self.n_nonterminals
        m = np.zeros((n, n))
        np.add.at(m, (self.rules[:, 0], self.rules[:, 1]), self.rule_probs)
        np.add.at(m, (self.rules[:, 0], self.rules[:, 2]), self.rule_probs)
        return m

    def expected_length(self) -> float:
        r"""$\mathbb E|x| = \pi^\top(I-M)^{-1}e$ with $e_A = P(A\to\text{terminal})$: each node emits its expected
        number of terminals."""
        n = self.n_nonterminals
        return float(self.start @ np.linalg.solve(np.eye(n) - self.mean_matrix(), self.emissions.sum(axis=1)))

    def _check_structure(self) -> None:
        n = self.n_nonterminals
        productive = self.emissions.sum(axis=1) > 0
        while True:
            new = productive.copy()
            ok = productive[self.rules[:, 1]] & productive[self.rules[:, 2]]
            new[self.rules[ok, 0]] = True
            if np.array_equal(new, productive):
                break
            productive = new
        reachable = self.start > 0
        while True:
            new = reachable.copy()
            src = reachable[self.rules[:, 0]]
            new[self.rules[src, 1]] = True
            new[self.rules[src, 2]] = True
            if np.array_equal(new, reachable):
                break
            reachable = new
        if not productive.all():
            raise ValueError(
                f"nonterminal {int(np.argmin(productive))} is non-terminating: it derives no string"
            )
        if not reachable.all():
            raise ValueError(
                f"nonterminal {int(np.argmin(reachable))} is unreachable from the start distribution"
            )
        rho = max(abs(np.linalg.eigvals(self.mean_matrix()))) if n else 0.0
        if rho >= 1 - 1e-12:
            raise ValueError(
                f"the grammar is not subcritical (spectral radius of the mean matrix {rho:.6g} >= 1): derivations "
                "are infinite with positive probability or have infinite expected length"
            )

    # ------------------------------------------------------------------------------------------------ evidence
    def evidence(self, tokens, masked=None) -> np.ndarray:
        """The ``(n, V)`` evidence of a sentence: one-hot rows at observed positions, all-ones rows at ``masked``
        positions (a boolean array or a list of positions)."""
        x = np.asarray(tokens)
        if x.ndim != 1 or len(x) == 0:
            raise ValueError(f"tokens must be a non-empty 1-D sequence, got shape {x.shape}")
        if not np.issubdtype(x.dtype, np.integer):
            raise TypeError(f"tokens must be integers, got dtype {x.dtype}")
        if x.min() < 0 or x.max() >= self.n_vocab:
            raise ValueError(f"tokens must lie in [0, {self.n_vocab}), got values in [{x.min()}, {x.max()}]")
        ev = np.zeros((len(x), self.n_vocab))
        ev[np.arange(len(x)), x] = 1.0
        if masked is not None:
            m = np.asarray(masked)
            if m.dtype == bool:
                if m.shape != x.shape:
                    raise ValueError(
                        f"a boolean mask must have the sentence's shape {x.shape}, got {m.shape}"
                    )
                ev[m] = 1.0
            elif m.size:
                if m.min() < 0 or m.max() >= len(x):
                    raise ValueError(f"masked positions must lie in [0, {len(x)}), got {sorted(m.tolist())}")
                ev[m] = 1.0
        return ev

    # ------------------------------------------------------------------------------------------------ inside / outside
    def _logs(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        if "logs" not in self._cache:
            with np.errstate(divide="ignore"):
                self._cache["logs"] = (np.log(self.start), np.log(self.rule_probs), np.log(self.emissions))
        return self._cache["logs"]

    def inside(self, evidence: np.ndarray) -> np.ndarray:
        """Log inside scores ``alpha[i, j, A]`` for $0\\le i<j\\le n$ (``-inf`` elsewhere)."""
        ev = np.asarray(evidence, dtype=np.float64)
        if ev.ndim != 2 or ev.shape[1] != self.n_vocab or len(ev) == 0:
            raise ValueError(
                f"evidence must be an (n, {self.n_vocab}) array with n >= 1, got shape {ev.shape}"
            )
        n, (_, log_rule, _) = len(ev), self._logs()
        par, left, right = self.rules.T
        alpha = np.full((n + 1, n + 1, self.n_nonterminals), -np.inf)
        with np.errstate(divide="ignore"):
            alpha[np.arange(n), np.arange(1, n + 1)] = np.log(ev @ self.emissions.T)
        for length in range(2, n + 1):
            starts = np.arange(n - length + 1)
            # (starts, splits, rules): left child [i, i+k), right child [i+k, i+length)
            k = np.arange(1, length)
            score = (
                alpha[starts[:, None], (starts[:, None] + k[None, :])][:, :, left]
                + alpha[(starts[:, None] + k[None, :]), (starts[:, None] + length)][:, :, right]
                + log_rule
            )
            alpha[starts, starts + length] = _scatter_logsumexp(
                logsumexp(score, axis=1), par, self.n_nonterminals
            )
        return alpha

    def outside(self, alpha: np.ndarray) -> np.ndarray:
        """Log outside scores ``beta[i, j, A]`` from the inside scores ``alpha`` of the same evidence."""
        n = alpha.shape[0] - 1
        log_start, log_rule, _ = self._logs()
        par, left, right = self.rules.T
        beta = np.full_like(alpha, -np.inf)
        beta[0, n] = log_start
        for length in range(n - 1, 0, -1):
            i = np.arange(n - length + 1)[:, None]
            off = np.arange(1, n - length + 1)[None, :]
            # as a left child [i, i+l) of parent [i, i+l+off) with right sibling [i+l, i+l+off)
            ok = i + length + off <= n
            e = np.minimum(i + length + off, n)
            t = beta[i, e][:, :, par] + log_rule + alpha[i + length, e][:, :, right]
            as_left = _scatter_logsumexp(
                logsumexp(np.where(ok[:, :, None], t, -np.inf), axis=1), left, len(log_start)
            )
            # as a right child [i, i+l) of parent [i-off, i+l) with left sibling [i-off, i)
            ok = i - off >= 0
            b = np.maximum(i - off, 0)
            t = beta[b, i + length][:, :, par] + log_rule + alpha[b, i][:, :, left]
            as_right = _scatter_logsumexp(
                logsumexp(np.where(ok[:, :, None], t, -np.inf), axis=1), right, len(log_start)
            )
            beta[i[:, 0], i[:, 0] + length] = np.logaddexp(as_left, as_right)
        return beta

    def outside_of_prefixes(self, alpha: np.ndarray) -> np.ndarray:
        """``beta[0, j, A]`` for every ``j``: the outside scores of the spans that start the sentence, the first row
        of :meth:`outside` by the same operations. Such a span is only ever a left child, of a longer span that
        also starts the sentence, so this row needs no other: O(n^2) rule terms instead of O(n^3)."""
        n = alpha.shape[0] - 1
        log_start, log_rule, _ = self._logs()
        par, left, right = self.rules.T
        beta = np.full(alpha.shape[1:], -np.inf)
        beta[n] = log_start
        i = np.zeros((1, 1), np.int64)
        for length in range(n - 1, 0, -1):
            off = np.arange(1, n - length + 1)[None, :]
            e = i + length + off  # <= n for the first row: every parent exists
            t = beta[e][:, :, par] + log_rule + alpha[i + length, e][:, :, right]
            as_left = _scatter_logsumexp(logsumexp(t, axis=1), left, len(log_start))
            beta[length] = as_left[0]  # no parent has the span as its right child (outside adds -inf: exact)
        return beta

    def prefix_span_label(self, tokens, length: int) -> int:
        """:meth:`span_label` of the span ``[0, length)`` (the same number), from :meth:`outside_of_prefixes`."""
        x = np.asarray(tokens)
        if not (0 < length <= len(x)):
            raise ValueError(f"the prefix length must satisfy 1 <= length <= {len(x)}, got {length}")
        ev = self.evidence(x)
        alpha = self.inside(ev)
        log_z = self.log_partition(ev, alpha)
        if not np.isfinite(log_z):
            raise ValueError("the evidence has probability zero under the grammar")
        post = np.exp(alpha[0, length] + self.outside_of_prefixes(alpha)[length] - log_z)
        keep = self.labels >= 0
        out = np.zeros(self.n_labels)
        np.add.at(out, self.labels[keep], post[keep])
        return int(np.argmax(out)) if out.max() > 0 else -1

    def log_partition(self, evidence: np.ndarray, alpha: np.ndarray | None = None) -> float:
        """$\\log P(\\text{evidence})$: the log-probability of the sentence (summed over masked positions)."""
        alpha = self.inside(evidence) if alpha is None else alpha
        n = alpha.shape[0] - 1
        return float(logsumexp(alpha[0, n] + self._logs()[0], axis=0))

    def log_prob(self, tokens) -> float:
        """$\\log P(x)$ by the inside algorithm."""
        return self.log_partition(self.evidence(tokens))

    def span_posteriors(self, evidence: np.ndarray) -> np.ndarray:
        """``post[i, j, A]`` = $P(A$ spans $[i,j)\\mid$ evidence$)$."""
        alpha = self.inside(evidence)
        log_z = self.log_partition(evidence, alpha)
        if not np.isfinite(log_z):
            raise ValueError("the evidence has probability zero under the grammar")
        return np.exp(alpha + self.outside(alpha) - log_z)

    def label_posteriors(self, evidence: np.ndarray) -> np.ndarray:
        """``post[i, j, c]`` = $P$(a nonterminal of class ``c`` spans $[i,j)\\mid$ evidence); a span holds at most
        one node (no unary rules), so the classes' posteriors add."""
        post = self.span_posteriors(evidence)
        keep = self.labels >= 0
        out = np.zeros(post.shape[:2] + (self.n_labels,))
        np.add.at(out, (slice(None), slice(None), self.labels[keep]), post[:, :, keep])
        return np.moveaxis(out, -1, -1)

    def span_label(self, tokens, i: int, j: int) -> int:
        """The most likely class of the nonterminal spanning $[i,j)$ of ``tokens`` (-1 if no node can span it).
        The label posteriors of the last sentence asked about are kept, so labelling its spans one by one runs
        inside-outside once."""
        x = np.asarray(tokens)
        if not (0 <= i < j <= len(x)):
            raise ValueError(f"span must satisfy 0 <= i < j <= {len(x)}, got [{i}, {j})")
        key = (x.dtype.str, x.shape, x.tobytes())
        last = self._cache.get("span_labels")
        if last is None or last[0] != key:
            last = self._cache["span_labels"] = (key, self.label_posteriors(self.evidence(x)))
        post = last[1][i, j]
        return int(np.argmax(post)) if post.max() > 0 else -1

    def masked_conditional(self, tokens, observed, i: int) -> np.ndarray:
        """$P(x_i = \\cdot\\mid x_O)$ for the observed positions $O$ (a boolean array; position ``i`` is treated as
        masked): $\\propto\\sum_A \\exp\\beta_{i,i+1}(A)E_{A\\cdot}$, the true masked-LM conditional."""
        x = np.asarray(tokens)
        obs = np.asarray(observed, dtype=bool)
        if obs.shape != x.shape:
            raise ValueError(
                f"observed must be a boolean array of the sentence's shape {x.shape}, got {obs.shape}"
            )
        if not 0 <= i < len(x):
            raise ValueError(f"position i must lie in [0, {len(x)}), got {i}")
        obs = obs.copy()
        obs[i] = False
        alpha = self.inside(self.evidence(x, ~obs))
        beta = self.outside(alpha)
        joint = np.exp(beta[i, i + 1] - np.max(beta[i, i + 1])) @ self.emissions
        if joint.sum() <= 0:
            raise ValueError("the observed tokens have probability zero under the grammar")
        return joint / joint.sum()

    # ------------------------------------------------------------------------------------------------ sampling
    def _sampling_table(self) -> tuple[np.ndarray, np.ndarray]:
        """Per nonterminal A, its outcomes (rule r >= 0, or terminal w encoded as -1 - w) and a global cdf with A's
        outcomes in [A, A + 1]: one searchsorted draws every node of a batch."""
        if "table" not in self._cache:
            n = self.n_nonterminals
            owners, outcomes, probs = [], [], []
            for a in range(n):
                r = np.flatnonzero(self.rules[:, 0] == a)
                w = np.flatnonzero(self.emissions[a] > 0)
                owners.append(np.full(len(r) + len(w), a))
                outcomes.append(np.concatenate([r, -1 - w]))
                p = np.concatenate([self.rule_probs[r], self.emissions[a, w]])
                probs.append(np.cumsum(p) / p.sum())
            owner = np.concatenate(owners)
            cdf = owner + np.concatenate(probs)
            last = np.r_[np.flatnonzero(np.diff(owner)), len(owner) - 1]
            cdf[last] = owner[last] + 1.0  # each block ends exactly at A + 1
            self._cache["table"] = (cdf, np.concatenate(outcomes))
        return self._cache["table"]

    def _draw(self, rng: np.random.Generator, nts: np.ndarray) -> np.ndarray:
        cdf, outcomes = self._sampling_table()
        u = nts + rng.random(len(nts))
        return outcomes[np.minimum(np.searchsorted(cdf, u, side="right"), len(cdf) - 1)]

    def sample(self, rng: np.random.Generator, size: int, max_steps: int = 10_000) -> Samples:
        """``size`` sentences with their trees, vectorised: the whole batch is one string of nodes and every
        unexpanded node in it is rewritten at once per step (the thesis' parallel generation, §4.2.8.1)."""
        if isinstance(size, bool) or not isinstance(size, (int, np.integer)) or size < 1:
            raise ValueError(f"size must be a positive int, got {size!r}")
        n = self.n_nonterminals
        roots = np.searchsorted(np.cumsum(self.start), rng.random(size) * self.start.sum(), side="right")
        nt, parent = roots.clip(0, n - 1), np.full(size, -1)
        level, sentence, token = np.zeros(size, np.int64), np.arange(size), np.full(size, -1)
        string = np.arange(size)  # node ids, left to right, sentence after sentence
        is_open = np.ones(size, bool)
        generations = [0, size]
        for _ in range(max_steps):
            where = np.flatnonzero(is_open)
            if not where.size:
                break
            nodes = string[where]
            out = self._draw(rng, nt[nodes])
            binary = out >= 0
            token[nodes[~binary]] = -1 - out[~binary]
            parents, r = nodes[binary], out[binary]
            first = len(nt)
            child_nt = np.stack([self.rules[r, 1], self.rules[r, 2]], axis=1).ravel()
            child_parent = np.repeat(parents, 2)
            nt = np.concatenate([nt, child_nt])
            parent = np.concatenate([parent, child_parent])
            level = np.concatenate([level, level[child_parent] + (self.labels[nt[child_parent]] >= 0)])
            sentence = np.concatenate([sentence, sentence[child_parent]])
            token = np.concatenate([token, np.full(len(child_nt), -1)])
            generations.append(len(nt))
            widths = np.ones(len(string), np.int64)
            widths[where[binary]] = 2
            pos = np.cumsum(widths) - widths
            new = np.repeat(string, widths)
            new_open = np.zeros(len(new), bool)
            slots = pos[where[binary]]
            new[slots] = first + 2 * np.arange(len(r))
            new[slots + 1] = first + 2 * np.arange(len(r)) + 1
            new_open[slots] = new_open[slots + 1] = True
            string, is_open = new, new_open
        else:
            raise RuntimeError(f"sampling did not finish within max_steps = {max_steps} rewriting steps")
        counts = np.bincount(sentence[string], minlength=size)
        offsets = np.r_[0, np.cumsum(counts)]
        start = np.full(len(nt), np.iinfo(np.int64).max)
        end = np.full(len(nt), -1)
        start[string] = np.arange(len(string)) - offsets[sentence[string]]
        end[string] = start[string] + 1
        for g in range(len(generations) - 2, 0, -1):  # children are younger than parents: push spans upward
            ids = np.arange(generations[g], generations[g + 1])
            np.minimum.at(start, parent[ids], start[ids])
            np.maximum.at(end, parent[ids], end[ids])
        return Samples(token[string], offsets, nt, sentence, start, end, parent, level)

    def sample_recursive(self, rng: np.random.Generator, max_depth: int = 10_000) -> tuple[list[int], list]:
        """One sentence by plain depth-first recursion (the reference sampler): returns ``(tokens, constituents)``
        with constituents the (nonterminal, start, end) triples."""
        cdf, outcomes = self._sampling_table()
        tokens: list[int] = []
        spans: list[tuple[int, int, int]] = []

        def expand(a: int, depth: int) -> None:
            if depth > max_depth:
                raise RuntimeError(f"a derivation exceeded max_depth = {max_depth}")
            begin = len(tokens)
            o = outcomes[min(int(np.searchsorted(cdf, a + rng.random(), side="right")), len(cdf) - 1)]
            if o < 0:
                tokens.append(int(-1 - o))
            else:
                expand(int(self.rules[o, 1]), depth + 1)
                expand(int(self.rules[o, 2]), depth + 1)
            spans.append((a, begin, len(tokens)))

        root = int(np.searchsorted(np.cumsum(self.start), rng.random() * self.start.sum(), side="right"))
        expand(min(root, self.n_nonterminals - 1), 0)
        return tokens, spans


def enumerate_parses(grammar: PCFG, evidence: np.ndarray) -> list[tuple[float, frozenset]]:
    """Every parse of the evidence by brute force (for tiny grammars and sentences; the reference for inside-outside):
    ``(probability, constituents)`` with constituents the (nonterminal, start, end) triples, the probability
    including the root's start probability and the evidence weights of the leaves."""
    ev = np.asarray(evidence, dtype=np.float64)
    n = len(ev)
    if n > 8:
        raise ValueError(f"brute-force enumeration is limited to sentences of <= 8 tokens, got {n}")
    memo: dict[tuple[int, int, int], list] = {}
    # each nonterminal's rules once: (probability as the numpy scalar it was, left child, right child)
    by_parent: dict[int, list] = {}
    for r, (a, b, c) in enumerate(grammar.rules.tolist()):
        by_parent.setdefault(a, []).append((grammar.rule_probs[r], b, c))

    def parses(a: int, i: int, j: int) -> list:
        key = (a, i, j)
        if key not in memo:
            out = []
            if j - i == 1:
                p = float(grammar.emissions[a] @ ev[i])
                if p > 0:
                    out.append((p, frozenset({(a, i, j)})))
            else:
                node = {(a, i, j)}
                for prob, b, c in by_parent.get(a, ()):
                    for k in range(i + 1, j):
                        right = parses(c, k, j)
                        for pl, tl in parses(b, i, k):
                            left = prob * pl  # (prob * pl) * pr: the product in the same order
                            tl_node = tl | node
                            out.extend((left * pr, tl_node | tr) for pr, tr in right)
            memo[key] = out
        return memo[key]

    return [
        (float(grammar.start[a]) * p, t)
        for a in np.flatnonzero(grammar.start > 0)
        for p, t in parses(int(a), 0, n)
    ]
