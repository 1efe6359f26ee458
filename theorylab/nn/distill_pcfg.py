r"""Masked-LM training and (progressive) distillation on a PCFG: Liu §4.2.3's BERT experiments at any scale.

- :class:`MLMConfig` / :func:`masked_lm`: a pre-norm Transformer encoder over the vocabulary plus the mask token
  (learned positions), one logit per vocabulary token at every position (BERT-style, Def 24's objective).
- :func:`train_mlm`: Adam with linear warm-up and cosine decay on fresh PCFG samples each step (batch ``batch``,
  mask rate ``mask_rate``). Without a teacher the loss is Eq. 4.92 (cross-entropy at the masked positions); with
  teacher checkpoints and a :class:`~theorylab.nn.distill.ProgressiveSchedule` it is Eq. 4.93,
  $\mathrm{KL}(p_T^{(i)}(\cdot;\tau)\,\|\,p_S^{(i)})$ at the masked positions, the supervising checkpoint switching as
  the schedule says. Checkpoints are kept every ``checkpoint_every`` steps; the held-out masked top-1 accuracy and
  loss are recorded at each checkpoint.
- :func:`median_l_robust`, :func:`median_l_close`: Eqs. 4.94-4.95 for a trained model, the median over sentences
  and positions (a position's n-gram window masked with the mask token, or every position outside it masked).
- :func:`probe_accuracy`: Def 26's level-$\ell$ nonterminal probe, a linear (multinomial logistic) classifier on
  the last layer's embeddings of unmasked sentences at the right boundaries of level-$\ell$ spans.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np

from theorylab.languages.pcfg import PCFG
from theorylab.languages.pcfg_measures import boundary_labels, mask_tokens, ngram_context
from theorylab.nn.distill import ProgressiveSchedule
from theorylab.nn.threads import num_threads

__all__ = [
    "MLMConfig",
    "MLMRun",
    "PairedVerdict",
    "held_out_set",
    "masked_hits",
    "paired_verdict",
    "fixed_length_batch",
    "masked_lm",
    "median_l_close",
    "median_l_robust",
    "probe_accuracy",
    "train_mlm",
]


@dataclass(frozen=True)
class MLMConfig:
    """Encoder size: ``n_heads`` heads of width ``head_dim`` (model width ``n_heads * head_dim``, as the thesis
    scales width with heads), ``n_layers`` layers, sentences of ``seq_len`` tokens over ``n_vocab`` tokens."""

    n_vocab: int
    seq_len: int
    n_heads: int
    head_dim: int = 8
    n_layers: int = 2

    def __post_init__(self) -> None:
        for name in ("n_vocab", "seq_len", "n_heads", "head_dim", "n_layers"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, (int, np.integer)):
                raise TypeError(f"{name} must be an int, got {type(v).__name__}")
            if v < 1:
                raise ValueError(f"{name} must be >= 1, got {v}")

    @property
    def width(self) -> int:
        return self.n_heads * self.head_dim

    @property
    def mask_token(self) -> int:
        return self.n_vocab


def masked_lm(config: MLMConfig, seed: int):
    """A fresh encoder (torch ``nn.Module``) with parameters drawn from ``seed``; ``forward(x)`` returns logits
    ``(B, h, V)`` and ``features(x)`` the last layer's normalised embeddings ``(B, h, width)``."""
    import torch
    from torch import nn

    class MaskedLM(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            w = config.width
            self.embed = nn.Embedding(config.n_vocab + 1, w)
            self.pos = nn.Parameter(0.02 * torch.randn(config.seq_len, w))
            layer = nn.TransformerEncoderLayer(
                w, config.n_heads, 4 * w, dropout=0.0, batch_first=True, norm_first=True
            )
            self.encoder = nn.TransformerEncoder(layer, config.n_layers, enable_nested_tensor=False)
            self.norm = nn.LayerNorm(w)
            self.head = nn.Linear(w, config.n_vocab)

        def features(self, x):
            return self.norm(self.encoder(self.embed(x) + self.pos[: x.shape[1]]))

        def forward(self, x):
            return self.head(self.features(x))

    torch.manual_seed(seed)
    return MaskedLM()


def fixed_length_batch(grammar: PCFG, rng: np.random.Generator, size: int, seq_len: int) -> np.ndarray:
    """``size`` sentences of the grammar as a ``(size, seq_len)`` array; every sentence must have ``seq_len``
    tokens (layered grammars with binary rules only)."""
    s = grammar.sample(rng, size)
    if np.any(s.lengths != seq_len):
        raise ValueError(
            f"the grammar's sentences must all have {seq_len} tokens, got {sorted(set(s.lengths.tolist()))}"
        )
    return s.tokens.reshape(size, seq_len)


@dataclass
class MLMRun:
    """A training run: checkpoints (step -> state dict), the held-out masked accuracy / loss at each of them."""

    config: MLMConfig
    seed: int
    checkpoints: dict[int, dict] = field(default_factory=dict)
    steps: list[int] = field(default_factory=list)
    acc: list[float] = field(default_factory=list)
    loss: list[float] = field(default_factory=list)

    def model_at(self, step: int, device: str = "cpu"):
        """The eval-mode model at checkpoint ``step`` on ``device``."""
        if step not in self.checkpoints:
            raise ValueError(f"no checkpoint at step {step} (have {sorted(self.checkpoints)})")
        model = masked_lm(self.config, self.seed)
        model.load_state_dict(self.checkpoints[step])
        return model.to(device).eval()

    @property
    def final(self) -> int:
        return max(self.checkpoints)


def _lr_at(step: int, steps: int, lr: float, warmup: int) -> float:
    if step < warmup:
        return lr * (step + 1) / warmup
    return 0.5 * lr * (1 + math.cos(math.pi * (step - warmup) / max(1, steps - warmup)))


def _evaluate(model, held_out: tuple[np.ndarray, np.ndarray, np.ndarray]) -> tuple[float, float]:
    import torch

    dev = next(model.parameters()).device
    tokens, inputs, masked = (torch.as_tensor(a, device=dev) for a in held_out)
    with torch.no_grad():
        logits = model(inputs)[masked]
        target = tokens[masked]
        acc = (logits.argmax(-1) == target).float().mean().item()
        loss = torch.nn.functional.cross_entropy(logits, target).item()
    return acc, loss


def train_mlm(
    grammar: PCFG,
    config: MLMConfig,
    steps: int,
    seed: int,
    *,
    lr: float = 3e-3,
    batch: int = 128,
    mask_rate: float = 0.3,
    warmup: int | None = None,
    checkpoint_every: int = 50,
    held_out: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None,
    teacher: Mapping[int, object] | None = None,
    schedule: ProgressiveSchedule | None = None,
    tau: float = 1.0,
    threads: int = 1,
    device: str = "cpu",
) -> MLMRun:
    """Train one masked LM (see the module docstring); ``teacher`` maps teacher steps to eval-mode models and
    ``schedule`` says which supervises each student step. Data and masks come from ``seed``; torch uses
    ``threads`` CPU threads meanwhile (tiny models run fastest on one); the model (and the teachers, which must
    already live there) run on ``device``; checkpoints are kept on the CPU."""
    with num_threads(threads):
        return _train(grammar, config, steps, seed, lr, batch, mask_rate, warmup, checkpoint_every, held_out,
                      teacher, schedule, tau, device)  # fmt: skip


def _train(grammar, config, steps, seed, lr, batch, mask_rate, warmup, checkpoint_every, held_out, teacher,
           schedule, tau, device) -> MLMRun:  # fmt: skip
    import torch

    if steps < 1 or checkpoint_every < 1:
        raise ValueError(f"steps and checkpoint_every must be >= 1, got {steps}, {checkpoint_every}")
    if (teacher is None) != (schedule is None):
        raise ValueError("teacher checkpoints and a schedule go together (both or neither)")
    if schedule is not None and not set(schedule.checkpoints) <= set(teacher):
        raise ValueError(f"schedule needs teacher checkpoints {schedule.checkpoints}, have {sorted(teacher)}")
    if not tau > 0:
        raise ValueError(f"temperature tau must be positive, got {tau}")
    warmup = max(1, steps // 20) if warmup is None else warmup
    rng = np.random.default_rng(seed)
    model = masked_lm(config, seed).to(device)
    opt = torch.optim.Adam(model.parameters(), lr=lr)
    run = MLMRun(config, seed)

    def record(step: int) -> None:
        run.checkpoints[step] = {k: v.detach().to("cpu", copy=True) for k, v in model.state_dict().items()}
        if held_out is not None:
            model.eval()
            acc, loss = _evaluate(model, held_out)
            model.train()
            run.steps.append(step)
            run.acc.append(acc)
            run.loss.append(loss)

    record(0)
    for step in range(steps):
        tokens = fixed_length_batch(grammar, rng, batch, config.seq_len)
        inputs, masked = mask_tokens(rng, tokens, mask_rate, config.n_vocab, config.mask_token)
        x, m = torch.as_tensor(inputs, device=device), torch.as_tensor(masked, device=device)
        logp = torch.log_softmax(model(x)[m], -1)
        if schedule is None:
            loss = torch.nn.functional.nll_loss(logp, torch.as_tensor(tokens, device=device)[m])
        else:
            with torch.no_grad():
                target = torch.softmax(teacher[schedule.teacher_at(step)](x)[m] / tau, -1)
            loss = torch.nn.functional.kl_div(logp, target, reduction="batchmean")
        for group in opt.param_groups:
            group["lr"] = _lr_at(step, steps, lr, warmup)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        if (step + 1) % checkpoint_every == 0 or step + 1 == steps:
            record(step + 1)
    return run


def held_out_set(
    grammar: PCFG, config: MLMConfig, size: int, seed: int, mask_rate: float = 0.3
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """A fixed masked evaluation set ``(tokens, inputs, masked)`` of ``size`` sentences."""
    rng = np.random.default_rng(seed)
    tokens = fixed_length_batch(grammar, rng, size, config.seq_len)
    inputs, masked = mask_tokens(rng, tokens, mask_rate, config.n_vocab, config.mask_token)
    return tokens, inputs, masked


def masked_hits(model, held_out: tuple[np.ndarray, np.ndarray, np.ndarray]) -> np.ndarray:
    """Per masked token of the held-out set (row-major order), whether the model's top-1 prediction is right."""
    import torch

    dev = next(model.parameters()).device
    tokens, inputs, masked = held_out
    with torch.no_grad(), num_threads(1):
        pred = model(torch.as_tensor(inputs, device=dev)).argmax(-1).cpu().numpy()
    return pred[masked] == tokens[masked]


@dataclass(frozen=True)
class PairedVerdict:
    """``passed`` / ``failed`` / ``open`` with the mean accuracy difference, its standard error and why."""

    status: str
    diff: float
    se: float
    reason: str


#: One-sided normal quantile of the paired verdict (level 0.005): an evaluation-noise difference of the held-out
#: size used here (>= 1000 masked tokens) passes with probability < 0.5%.
Z_PAIRED = 2.576


def paired_verdict(better: np.ndarray, worse: np.ndarray, z: float = Z_PAIRED) -> PairedVerdict:
    r"""Is arm ``better`` more accurate than arm ``worse`` on the same held-out masked tokens? ``better``/``worse``
    are ``(seeds, tokens)`` 0/1 hits (seed j of one arm paired with seed j of the other). With $d_t$ the per-token
    difference averaged over seeds, $D=\bar d$ and $SE=s_d/\sqrt{N}$: passed when $D > z\,SE$ and every seed's
    own difference is positive, failed when $D < -z\,SE$ (significantly worse), open otherwise. The standard error
    is the held-out sampling error of the paired difference; seed-to-seed spread enters only through the sign
    condition."""
    a = np.atleast_2d(np.asarray(better, dtype=float))
    b = np.atleast_2d(np.asarray(worse, dtype=float))
    if a.shape != b.shape or a.shape[1] < 2:
        raise ValueError(f"need hits of equal shape (seeds, tokens >= 2), got {a.shape} and {b.shape}")
    d = (a - b).mean(0)
    diff, se = float(d.mean()), float(d.std(ddof=1) / np.sqrt(d.size))
    per_seed = (a - b).mean(1)
    if diff > z * se and np.all(per_seed > 0):
        return PairedVerdict("passed", diff, se, f"+{diff:.4f} > {z} x SE {se:.4f}, every seed positive")
    if diff < -z * se:
        return PairedVerdict("failed", diff, se, f"{diff:.4f} < -{z} x SE {se:.4f}: significantly worse")
    return PairedVerdict(
        "open", diff, se, f"difference {diff:+.4f} within {z} x SE {se:.4f} or seeds disagree"
    )


def _tv_at(model, a: np.ndarray, b: np.ndarray, pos: np.ndarray) -> np.ndarray:
    import torch

    dev = next(model.parameters()).device
    with torch.no_grad(), num_threads(1):
        rows = torch.arange(len(pos))
        pa = torch.softmax(model(torch.as_tensor(a, device=dev)), -1).cpu()[rows, torch.as_tensor(pos)]
        pb = torch.softmax(model(torch.as_tensor(b, device=dev)), -1).cpu()[rows, torch.as_tensor(pos)]
    return 0.5 * (pa - pb).abs().sum(-1).numpy()


def _pairs(tokens: np.ndarray, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """One random position per sentence."""
    return tokens, rng.integers(0, tokens.shape[1], len(tokens))


def median_l_robust(model, tokens: np.ndarray, n: int, mask_token: int, seed: int = 0) -> float:
    """Median over sentences (one random position each) of Eq. 4.94: TV between the prediction at i with only i
    masked and with i's whole n-gram window masked."""
    x, pos = _pairs(np.asarray(tokens), np.random.default_rng(seed))
    a, b = x.copy(), x.copy()
    rows = np.arange(len(x))
    a[rows, pos] = mask_token
    for r, i in enumerate(pos):
        b[r, ngram_context(int(i), n, x.shape[1])] = mask_token
    return float(np.median(_tv_at(model, a, b, pos)))


def median_l_close(model, tokens: np.ndarray, n: int, mask_token: int, seed: int = 0) -> float:
    """Median of Eq. 4.95: TV between the prediction at i with only i masked and with everything outside i's n-gram
    window (and i) masked."""
    x, pos = _pairs(np.asarray(tokens), np.random.default_rng(seed))
    a = x.copy()
    rows = np.arange(len(x))
    a[rows, pos] = mask_token
    b = np.full_like(x, mask_token)
    for r, i in enumerate(pos):
        w = ngram_context(int(i), n, x.shape[1])
        b[r, w] = x[r, w]
    b[rows, pos] = mask_token
    return float(np.median(_tv_at(model, a, b, pos)))


def probe_accuracy(
    model, grammar: PCFG, level: int, n_train: int, n_test: int, seed: int, steps: int = 300
) -> float:
    """Def 26's probe: a multinomial logistic regression (Adam, ``steps`` full-batch steps, weight decay 1e-3) on the
    model's last-layer embeddings at level-``level`` right boundaries, fitted on ``n_train`` fresh sentences and
    scored (top-1) on ``n_test`` others."""
    import torch

    rng = np.random.default_rng(seed)
    h = model.pos.shape[0]

    def data(size: int):
        s = grammar.sample(rng, size)
        x = s.tokens.reshape(size, h)
        y = np.stack([boundary_labels(s, grammar, k, level) for k in range(size)])
        with torch.no_grad():
            f = model.features(torch.as_tensor(x, device=next(model.parameters()).device)).cpu()
        keep = torch.as_tensor(y >= 0)
        return f[keep], torch.as_tensor(y)[keep]

    with num_threads(1):
        return _fit_probe(data(n_train), data(n_test), seed, steps)


def _fit_probe(train, test, seed: int, steps: int) -> float:
    import torch

    (ftr, ytr), (fte, yte) = train, test
    classes = int(max(ytr.max(), yte.max())) + 1
    torch.manual_seed(seed)
    lin = torch.nn.Linear(ftr.shape[1], classes)
    opt = torch.optim.Adam(lin.parameters(), lr=0.05, weight_decay=1e-3)
    for _ in range(steps):
        opt.zero_grad(set_to_none=True)
        torch.nn.functional.cross_entropy(lin(ftr), ytr).backward()
        opt.step()
    with torch.no_grad():
        return float((lin(fte).argmax(-1) == yte).float().mean())
