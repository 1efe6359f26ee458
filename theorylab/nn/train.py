"""The training harness: many seeds of a small model trained together, deterministically.

``train(task, model_config, budget, seeds, device)`` builds one model per seed (``model_config.build(seed)``),
stacks their parameters and trains all seeds at once with ``torch.func.functional_call`` + ``torch.func.vmap``; a
group of one seed trains its module directly, parameters bound once (the same arithmetic, no per-step rebinding).
The optimiser (AdamW or SGD, both elementwise) runs on the stacked leaves, which is the same as one optimiser per
seed; gradient clipping is per seed. Seed ``s`` draws its training batches from ``np.random.default_rng([s, 1])``
(and its fixed dataset, if any, from ``np.random.default_rng([s, 2])``), so a seed's run does not depend on which
other seeds share its stack. Held-out evaluation uses fixed sets shared by all seeds and all runs.

Determinism: on the same device, thread count and library versions, a rerun gives identical metrics and weights
(deterministic torch algorithms are switched on during training unless ``deterministic=False``; dropout under
``vmap`` draws from the global torch generator, seeded from the seeds, so with dropout a seed's run does depend on
the stack it was trained in).
"""

from __future__ import annotations

import copy
import dataclasses
import json
import math
import os
import sys
import time
import zlib
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from theorylab._extras import needs
from theorylab._fmt import plain

with needs("trained"):
    import torch
    from torch import nn
    from torch.func import functional_call, vmap

from theorylab.nn.graphs import WARMUP_STEPS, StaticStep, eager_warmup, graphs_enabled
from theorylab.nn.tasks import Batch, Task, check_batch, check_task, sample_fixed_dataset
from theorylab.nn.threads import num_threads  # noqa: F401  (re-exported)
from theorylab.testing import note_training, progress_sink

OPTIMIZERS = ("adamw", "sgd")
SCHEDULES = ("constant", "cosine", "warmup_cosine", "linear", "warmup_linear")
EVAL_SEED = 0x5EED_E7A1  # the root of every held-out evaluation set
#: Dense bf16 peak FLOP/s by device-name substring (longest match wins): an H100 PCIe is 756, the SXM/NVL 989.
PEAK_BF16_FLOPS = {
    "H100 PCIe": 756e12,
    "H100": 989e12,
    "H200": 989e12,
    "GH200": 989e12,
    "A100": 312e12,
    "L40": 181e12,
    "L4": 121e12,
}
#: one seed trains its module directly (parameters bound once); False: through ``functional_call`` on ``[1, ...]``
#: stacked leaves, the earlier path (the same arithmetic: ``tests/test_nn_train.py`` checks both give identical runs)
BIND_SINGLE_SEED = True
VALIDATED_STEPS = 2  # training batches checked by check_batch (per seed) before the harness trusts the task


@dataclass(frozen=True)
class Budget:
    """How long and how to train.

    ``steps`` updates of ``batch_size`` sequences of length ``seq_len`` per seed. ``schedule`` multiplies ``lr``:
    ``constant``; ``cosine`` (to 0); ``linear`` (to 0); ``warmup_cosine`` / ``warmup_linear`` (linear warm-up over
    ``warmup`` steps first; ``warmup`` also applies to the other schedules when > 0). ``fixed_dataset=N`` trains on
    N sequences sampled once per seed (minibatches drawn from them) instead of fresh batches. ``grad_clip`` clips each
    seed's global gradient norm. ``eval_every`` evaluates on ``eval_batches`` fixed held-out batches; ``log_every``
    records windowed training metrics (0: about 50 records per run). ``checkpoint_every`` saves a resumable state
    when ``train(..., checkpoint_dir=...)`` is given.
    """

    steps: int
    batch_size: int
    seq_len: int
    lr: float
    optimizer: str = "adamw"
    weight_decay: float = 0.0
    schedule: str = "constant"
    warmup: int = 0
    eval_every: int = 0
    eval_batches: int = 4
    fixed_dataset: int | None = None
    grad_clip: float | None = None
    betas: tuple[float, float] = (0.9, 0.999)
    eps: float = 1e-8
    momentum: float = 0.0
    log_every: int = 0
    checkpoint_every: int = 0

    def __post_init__(self) -> None:
        for name in ("steps", "batch_size", "seq_len"):
            value = getattr(self, name)
            if not isinstance(value, int) or value < (0 if name == "steps" else 1):
                raise ValueError(f"Budget.{name} must be a positive int, got {plain(value)}")
        if not math.isfinite(self.lr) or self.lr < 0:
            raise ValueError(f"Budget.lr must be finite and >= 0, got {self.lr}")
        if self.optimizer not in OPTIMIZERS:
            raise ValueError(f"Budget.optimizer must be one of {OPTIMIZERS}, got {self.optimizer!r}")
        if self.schedule not in SCHEDULES:
            raise ValueError(f"Budget.schedule must be one of {SCHEDULES}, got {self.schedule!r}")
        if self.schedule.startswith("warmup_") and self.warmup < 1:
            raise ValueError(f"schedule {self.schedule!r} needs warmup >= 1")
        for name in ("warmup", "eval_every", "eval_batches", "log_every", "checkpoint_every"):
            if getattr(self, name) < 0:
                raise ValueError(f"Budget.{name} must be >= 0")
        if self.fixed_dataset is not None and self.fixed_dataset < 1:
            raise ValueError(f"Budget.fixed_dataset must be None or >= 1, got {self.fixed_dataset}")
        if self.grad_clip is not None and not self.grad_clip > 0:
            raise ValueError(f"Budget.grad_clip must be None or > 0, got {self.grad_clip}")

    def lr_at(self, step: int) -> float:
        """Learning rate of update ``step`` (0-based)."""
        w = self.warmup
        if w and step < w:
            return self.lr * (step + 1) / w
        span = max(1, self.steps - w)
        frac = min(1.0, (step - w) / span)
        if self.schedule in ("cosine", "warmup_cosine"):
            return self.lr * 0.5 * (1.0 + math.cos(math.pi * frac))
        if self.schedule in ("linear", "warmup_linear"):
            return self.lr * (1.0 - frac)
        return self.lr

    @property
    def log_interval(self) -> int:
        return self.log_every or max(1, self.steps // 50)


@dataclass
class TrainResult:
    """What :func:`train` returns. ``final[metric]`` is an array over seeds (in the order of ``seeds``).

    ``final`` holds ``loss``/``acc`` (held-out, on the fixed evaluation set; the last training window when
    ``eval_batches == 0``), ``train_loss``/``train_acc`` (last logging window), ``<name>_loss``/``<name>_acc`` for
    each extra evaluation task and whatever ``eval_fn`` returns. ``history`` is a list of plain dicts, one per
    (logged step, seed). ``throughput`` holds ``tokens_per_s`` (all seeds), ``flops_per_token`` and ``mfu``.
    """

    models: list[nn.Module]
    history: list[dict]
    final: dict[str, np.ndarray]
    seconds: float
    seeds: tuple[int, ...]
    task: str
    config: object
    budget: Budget
    device: str
    throughput: dict = field(default_factory=dict)

    def curve(self, key: str) -> tuple[np.ndarray, np.ndarray]:
        """(steps, values ``[n_seeds, n_steps]``) of a history metric, over the steps where it was recorded."""
        rows = [r for r in self.history if key in r]
        steps = np.array(sorted({r["step"] for r in rows}))
        values = np.full((len(self.seeds), len(steps)), np.nan)
        pos = {s: i for i, s in enumerate(steps)}
        idx = {s: i for i, s in enumerate(self.seeds)}
        for r in rows:
            values[idx[r["seed"]], pos[r["step"]]] = r[key]
        return steps, values

    def to_dict(self) -> dict:
        cfg = dataclasses.asdict(self.config) if dataclasses.is_dataclass(self.config) else repr(self.config)
        return {
            "task": self.task,
            "config": {"type": type(self.config).__name__, **cfg} if isinstance(cfg, dict) else cfg,
            "budget": dataclasses.asdict(self.budget),
            "seeds": list(self.seeds),
            "device": self.device,
            "seconds": self.seconds,
            "throughput": self.throughput,
            "final": {k: np.asarray(v).tolist() for k, v in self.final.items()},
            "history": self.history,
            "versions": {"torch": torch.__version__, "numpy": np.__version__},
        }

    def to_json(self, path: str | Path) -> None:
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        Path(path).write_text(json.dumps(self.to_dict(), indent=1, default=_jsonable))


def _jsonable(x):
    if isinstance(x, np.generic):
        return x.item()
    if isinstance(x, np.ndarray):
        return x.tolist()
    return repr(x)


# ------------------------------------------------------------------------------------------------ losses


def loss_terms(out: torch.Tensor, y: torch.Tensor, m: torch.Tensor, kind: str):
    """(mean loss over masked positions, number correct, number of masked positions) for one seed's batch."""
    out = out.float()
    mf = m.to(out.dtype)
    n = m.sum()
    denom = mf.sum().clamp_min(1.0)
    if kind == "ce":
        logp = torch.log_softmax(out, dim=-1)
        nll = -logp.gather(-1, y.clamp(0, out.shape[-1] - 1).unsqueeze(-1)).squeeze(-1)
        loss = (nll * mf).sum() / denom
        hit = out.argmax(-1) == y
    elif kind == "soft_ce":
        y = y.float()
        loss = ((-(y * torch.log_softmax(out, dim=-1)).sum(-1)) * mf).sum() / denom
        hit = out.argmax(-1) == y.argmax(-1)
    elif kind == "mse":
        y = y.float()
        if y.dim() == out.dim() - 1:
            y = y.unsqueeze(-1)
        diff = out - y
        loss = ((diff * diff).sum(-1) * mf).sum() / denom
        hit = out.argmax(-1) == y.argmax(-1) if out.shape[-1] > 1 else diff.abs().squeeze(-1) < 0.5
    else:
        raise ValueError(f"unknown loss {kind!r}")
    return loss, (hit & m).sum(), n


def _to_tensors(batch: Batch, device) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    x = torch.from_numpy(np.ascontiguousarray(batch.inputs, dtype=np.int64))
    y = torch.from_numpy(np.ascontiguousarray(batch.targets))
    if y.dtype == torch.float64:
        y = y.float()
    m = torch.from_numpy(np.ascontiguousarray(batch.mask))
    return x.to(device), y.to(device), m.to(device)


# ------------------------------------------------------------------------------------------------ environment


SMALL_STEP_FLOPS = 2e10  # below this much work per step, one CPU thread beats several (thread sync dominates)


def cpu_threads(step_flops: float) -> int:
    """Threads for CPU training: 1 for small steps, else torch's default divided among pytest-xdist workers.

    ``THEORYLAB_THREADS`` overrides. On a loaded 2-core machine, a small model with 2 threads ran 15-80x slower
    than with 1 (each op waits for the other thread), so small steps use one thread.
    """
    if os.environ.get("THEORYLAB_THREADS"):
        return max(1, int(os.environ["THEORYLAB_THREADS"]))
    if step_flops < SMALL_STEP_FLOPS:
        return 1
    workers = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "0") or 0)
    return max(1, torch.get_num_threads() // max(workers, 1))


CPU_STACK_BYTES = 8 * 2**20  # on CPU, keep the largest stacked activation near the cache size
#: on CPU, a seed whose largest activation reaches this size trains alone: measured on a loaded 2-core machine
#: (Transformers on flip-flop strings, against one seed at a time with bound parameters), stacks of seeds of
#: <= 0.5 MiB won 1.27-1.9x, stacks of 1-2 MiB seeds (the automata checks' config) lost, 0.65-0.94x
CPU_SEED_BYTES_ALONE = 2**20


#: on CUDA, a seed whose largest activation reaches this size trains alone (fused attention): measured on one H100
#: 80GB HBM3 (torch 2.11, bf16 autocast, CUDA graphs) with the 19M flip-flop baseline (6 layers, d = 512, T = 512,
#: batch 16: 128 MiB of activations per seed), a stack of 8 seeds took 152.8-180.8 ms per step against 12.2-16.3 ms
#: for one seed and 15.7 ms per seed for 8 seeds one after another (126 ms for 8), and stacks of 2 took 47.6 ms
#: (23.8 per seed): stacking lost 1.4-1.6x. Smaller seeds were not measured and keep stacking.
CUDA_SEED_BYTES_ALONE = 128 * 2**20


def _explicit_attention(model_config) -> bool:
    """Whether a Transformer config trains through the explicit attention path (it needs the weights, or its
    attention has no fused kernel): on the same H100, 8 stacked 19M seeds with explicit attention took 131.9 ms per
    step against 26.8 ms for one (stacking won 1.6x), so those keep stacking on CUDA."""
    from theorylab.nn.models import _BACKEND, TransformerConfig, fused_attention_applies
    from theorylab.nn.regularizers import AttentionSharpening, SharpenedTransformerConfig

    if _BACKEND["mode"] == "explicit" or isinstance(
        model_config, (AttentionSharpening, SharpenedTransformerConfig)
    ):
        return True  # a sharpening penalty reads the attention weights
    return isinstance(model_config, TransformerConfig) and not fused_attention_applies(model_config)


def _seed_bytes(model_config, budget: Budget) -> int:
    """Bytes of a seed's largest activation: batch x T x the config's largest per-token width, float32."""
    T = budget.seq_len
    per_token = getattr(model_config, "activation_floats_per_token", None)
    floats = per_token(T) if callable(per_token) else 1024
    return budget.batch_size * T * floats * 4


def auto_stack_size(model_config, budget: Budget, n_seeds: int, device: torch.device) -> int:
    """How many seeds to train in one vmapped stack. A fixed rule, not a timed probe: the grouping changes a seed's
    numbers at float rounding, so it must not depend on the load.

    CUDA: an LSTM trains one seed at a time (unstacked, its recurrence takes ``torch.lstm``, i.e. cuDNN; under
    ``vmap`` it is a Python loop over positions: 16 stacked LSTMs at T = 512 took 266.7 ms per step on an H100),
    unless :func:`~theorylab.nn.models.lstm_backend` is ``"loop"``; a seed whose largest activation reaches
    ``CUDA_SEED_BYTES_ALONE`` trains alone when its attention is fused (the 19M baseline: stacking lost 1.4-1.6x on
    an H100) and keeps stacking on the explicit path (stacking won 1.6x there); every other config stacks all seeds.
    CPU: one at a time when a seed's largest activation reaches ``CPU_SEED_BYTES_ALONE`` (stacking loses there), else
    as many as keep the largest activation tensor of the stack under ``CPU_STACK_BYTES`` (on a loaded machine, one
    stack of 32 small Transformers ran 3x slower than 32 sequential runs, stacks of 8 ran 1.7-2.8x faster)."""
    per_seed = _seed_bytes(model_config, budget)
    if device.type == "cuda":
        from theorylab.nn.models import _LSTM_BACKEND, LSTMConfig

        if isinstance(model_config, LSTMConfig) and _LSTM_BACKEND["mode"] != "loop":
            return 1
        if per_seed >= CUDA_SEED_BYTES_ALONE and not _explicit_attention(model_config):
            return 1
        return n_seeds
    if per_seed >= CPU_SEED_BYTES_ALONE:
        return 1
    return max(1, min(n_seeds, CPU_STACK_BYTES // max(per_seed, 1)))


@contextmanager
def _training_environment(device: str, threads: int, deterministic: bool = True):
    """``threads`` CPU threads during training and, if ``deterministic``, deterministic torch algorithms (with
    ``CUBLAS_WORKSPACE_CONFIG=:4096:8`` on CUDA, which cuBLAS needs for them); restored afterwards (the cuBLAS
    variable stays: cuBLAS reads it once per process)."""
    prev_det = torch.are_deterministic_algorithms_enabled()
    prev_warn = torch.is_deterministic_algorithms_warn_only_enabled()
    prev_threads = torch.get_num_threads()
    torch.set_num_threads(threads)
    if deterministic:
        if str(device).startswith("cuda"):
            os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
        torch.use_deterministic_algorithms(True, warn_only=True)
    else:
        torch.use_deterministic_algorithms(False)
    try:
        yield
    finally:
        torch.use_deterministic_algorithms(prev_det, warn_only=prev_warn)
        torch.set_num_threads(prev_threads)


def _resolve_device(device: str | torch.device) -> torch.device:
    dev = torch.device(device)
    if dev.type == "cuda" and not torch.cuda.is_available():
        raise ValueError("device 'cuda' was requested but torch.cuda.is_available() is False")
    if dev.type not in ("cpu", "cuda"):
        raise ValueError(f"device must be 'cpu' or 'cuda', got {device!r}")
    return dev


def peak_flops(device: torch.device | str) -> float | None:
    """Dense bf16 peak FLOP/s of a known GPU (for MFU); None on CPU or unknown GPUs. ``device`` may also be a device
    name (``"NVIDIA H100 PCIe"``), as a plan for a device that is not attached needs."""
    if isinstance(device, str) and device not in ("cpu", "cuda") and not device.startswith("cuda:"):
        name = device
    else:
        device = torch.device(device)
        if device.type != "cuda":
            return None
        name = torch.cuda.get_device_name(device)
    for key in sorted(PEAK_BF16_FLOPS, key=len, reverse=True):
        if key in name:
            return PEAK_BF16_FLOPS[key]
    return None


class _Progress:
    """A one-line progress report on stderr, shown once a run has lasted more than a few seconds."""

    def __init__(self, label: str, total: int, enabled: bool | None):
        self.label, self.total = label, total
        self.enabled = sys.stderr.isatty() if enabled is None else enabled
        self.sink = progress_sink()  # a trained claim check's progress display (see theorylab.testing)
        self.start = self.last = time.perf_counter()
        self.shown = False

    def due(self) -> bool:
        now = time.perf_counter()
        return (self.enabled or self.sink is not None) and now - self.start > 3.0 and now - self.last > 0.5

    def update(self, step: int, loss: float, acc: float) -> None:
        self.last = time.perf_counter()
        if self.sink is not None:
            self.sink(self.label, step, self.total)
        if not self.enabled:
            return
        rate = step / max(self.last - self.start, 1e-9)
        eta = (self.total - step) / max(rate, 1e-9)
        msg = f"\r[{self.label}] step {step}/{self.total} loss {loss:.4f} acc {acc:.4f} {rate:.1f} it/s eta {eta:.0f}s"
        sys.stderr.write(msg)
        sys.stderr.flush()
        self.shown = True

    def close(self) -> None:
        if self.shown:
            sys.stderr.write("\n")
            sys.stderr.flush()


# ------------------------------------------------------------------------------------------------ the stack


class _Stack:
    """S models of one config as stacked tensors; ``vectorized=False`` means S == 1 and no vmap (the reference):
    then the module itself trains, its parameters bound once (``BIND_SINGLE_SEED``)."""

    def __init__(
        self,
        config,
        seeds: Sequence[int],
        device: torch.device,
        vectorized: bool,
        amp: bool,
        compile: bool = False,
    ):
        models = [config.build(int(s)) for s in seeds]
        if not all(isinstance(m, nn.Module) for m in models):
            raise TypeError("model_config.build(seed) must return a torch.nn.Module")
        self.S = len(models)
        self.vectorized = vectorized
        self.device = device
        self.amp = amp
        self.cpu_template = copy.deepcopy(models[0]).eval()
        self.trainable: dict[str, torch.Tensor] = {}
        self.frozen: dict[str, torch.Tensor] = {}
        # one seed without vmap: the module itself, its parameters bound once (no functional_call per step); its
        # leaves have no seed axis, state() adds it as a view
        self.bound = not vectorized and self.S == 1 and BIND_SINGLE_SEED
        if self.bound:
            self.template = models[0].to(device)
            for name, p in self.template.named_parameters():
                (self.trainable if p.requires_grad else self.frozen)[name] = p
            self.buffers = dict(self.template.named_buffers())
        else:
            self.template = copy.deepcopy(models[0]).to("meta")
            named = [dict(m.named_parameters()) for m in models]
            for name, p in models[0].named_parameters():
                stacked = torch.stack([d[name].detach() for d in named]).to(device)
                if p.requires_grad:
                    self.trainable[name] = stacked.requires_grad_(True)
                else:
                    self.frozen[name] = stacked
            self.buffers = {
                name: torch.stack([dict(m.named_buffers())[name] for m in models]).to(device)
                for name, _ in models[0].named_buffers()
            }
        uses_dropout = any(isinstance(m, nn.Dropout) and m.p > 0 for m in models[0].modules())
        self.randomness = "different" if uses_dropout or getattr(config, "has_dropout", False) else "error"
        self.compile = compile
        self.autocast_cache = True
        self._fns: dict[tuple[str, bool], Callable] = {}

    def state(self) -> dict[str, torch.Tensor]:
        """Every parameter and buffer with its leading seed axis ``[S, ...]``."""
        state = {**self.trainable, **self.frozen, **self.buffers}
        return {k: v.unsqueeze(0) for k, v in state.items()} if self.bound else state

    def _one(self, state, x, y, m, kind):
        # a captured step needs autocast's weight-cast cache off (PyTorch's CUDA-graph rule); the casts are the same
        with torch.autocast(
            "cuda", dtype=torch.bfloat16, enabled=self.amp, cache_enabled=self.autocast_cache
        ):
            out = self.template(x) if state is None else functional_call(self.template, state, (x,))
        aux = None
        if isinstance(out, tuple):  # a model may return (outputs, auxiliary loss to add)
            out, aux = out
        loss, correct, count = loss_terms(out, y, m, kind)
        total = loss if aux is None else loss + aux.float()
        return total, loss, correct, count

    def losses(self, x, y, m, kind: str, shared_data: bool = False):
        """Per-seed (objective, loss, correct, count), each ``[S]``. Data is ``[S, B, T]`` or shared ``[B, T]``."""
        key = (kind, shared_data)
        if key not in self._fns:
            self._fns[key] = self._make_fn(kind, shared_data)
        return self._fns[key](None if self.bound else self.state(), x, y, m)

    def _make_fn(self, kind: str, shared_data: bool) -> Callable:
        if self.bound:

            def fn(state, x, y, m):
                xs, ys, ms = (x, y, m) if shared_data else (x[0], y[0], m[0])
                return tuple(t.unsqueeze(0) for t in self._one(None, xs, ys, ms, kind))

        elif not self.vectorized:

            def fn(state, x, y, m):
                one = {k: v[0] for k, v in state.items()}
                xs, ys, ms = (x, y, m) if shared_data else (x[0], y[0], m[0])
                return tuple(t.unsqueeze(0) for t in self._one(one, xs, ys, ms, kind))

        else:
            dims = None if shared_data else 0
            fn = vmap(
                lambda st, a, b, c: self._one(st, a, b, c, kind),
                in_dims=(0, dims, dims, dims),
                randomness=self.randomness,
            )
        return torch.compile(fn) if self.compile else fn

    def clip_(self, max_norm: float, fast: bool | None = None) -> None:
        """Clip each seed's global gradient norm to ``max_norm`` (coefficient ``max_norm / (norm + 1e-6)``, at most
        1). ``fast`` (default: on CUDA) computes the norms with one multi-tensor kernel over the per-seed slices
        instead of one kernel per tensor; the arithmetic is the same up to float summation order."""
        grads = [p.grad for p in self.trainable.values() if p.grad is not None]
        if not grads:
            return
        fast = self.device.type == "cuda" if fast is None else fast
        if not self.vectorized:
            torch.nn.utils.clip_grad_norm_(
                [p for p in self.trainable.values()], max_norm, foreach=fast or None
            )
            return
        if fast:
            slices = [s for g in grads for s in g.unbind(0)]  # tensor-major: [g0 s0, g0 s1, ..., g1 s0, ...]
            per = torch.stack(torch._foreach_norm(slices)).reshape(len(grads), self.S)
            norms = torch.linalg.vector_norm(per, dim=0)
        else:
            norms = torch.linalg.vector_norm(
                torch.stack([torch.linalg.vector_norm(g.reshape(self.S, -1), dim=1) for g in grads]), dim=0
            )
        coef = (max_norm / (norms + 1e-6)).clamp(max=1.0)
        for g in grads:
            g.mul_(coef.reshape(self.S, *([1] * (g.dim() - 1))))

    def modules(self) -> list[nn.Module]:
        out = []
        for s in range(self.S):
            module = copy.deepcopy(self.cpu_template)
            sd = {k: v[s].detach().to("cpu") for k, v in self.state().items()}
            module.load_state_dict(sd, strict=True)
            for name, p in module.named_parameters():
                p.requires_grad_(name in self.trainable)
            out.append(module.eval())
        return out


def _rate_tensor(lr: float, device: torch.device) -> torch.Tensor:
    """The learning rate as a 0-dim tensor on ``device``: float32 on CUDA (what the fused kernel reads), float64 on
    the CPU (what the fused CPU kernel computes with from a float rate, so the update is bit-identical)."""
    return torch.tensor(
        float(lr), dtype=torch.float32 if device.type == "cuda" else torch.float64, device=device
    )


def _make_optimizer(
    params: list[torch.Tensor], budget: Budget, fast: bool | None = None, graph: bool = False
) -> torch.optim.Optimizer:
    """AdamW or SGD over the stacked leaves (elementwise, so one optimiser per seed in effect). ``fast`` (default:
    on CUDA) uses the fused AdamW / multi-tensor SGD kernels (one launch for all tensors instead of ~8 per tensor):
    the same update up to float rounding. The CPU default keeps the per-tensor loop, bit-identical to earlier runs.
    ``graph`` (AdamW only): fused and capturable, the learning rate a 0-dim tensor on the parameters' device (a
    captured step reads it; see :mod:`theorylab.nn.graphs`): on the CPU (float64 rate) the same update as the fused
    one with a float rate, bit for bit; on CUDA the rate is float32 (relative rounding <= 6e-8 of the rate)."""
    if not params:
        return torch.optim.SGD([torch.zeros(1, requires_grad=True)], lr=0.0)  # nothing to train
    fast = params[0].device.type == "cuda" if fast is None else fast
    if graph:
        if budget.optimizer != "adamw":
            raise ValueError(f"a captured training step needs optimizer 'adamw', got {budget.optimizer!r}")
        lr = _rate_tensor(budget.lr, params[0].device)
        return torch.optim.AdamW(params, lr=lr, betas=budget.betas, eps=budget.eps,
                                 weight_decay=budget.weight_decay, fused=True, capturable=True)  # fmt: skip
    if budget.optimizer == "adamw":
        kind = dict(fused=True) if fast else dict(foreach=False)
        return torch.optim.AdamW(
            params, lr=budget.lr, betas=budget.betas, eps=budget.eps, weight_decay=budget.weight_decay, **kind
        )
    return torch.optim.SGD(
        params, lr=budget.lr, momentum=budget.momentum, weight_decay=budget.weight_decay, foreach=fast
    )


def _eval_sets(task: Task, budget: Budget, T: int, extra: Mapping[str, Task]) -> dict[str, tuple[Task, list]]:
    """Fixed held-out sets: ``eval_batches`` batches per task, identical for every seed and every run."""
    sets = {}
    for name, t in {"eval": task, **extra}.items():
        rng = np.random.default_rng([EVAL_SEED, zlib.crc32(name.encode())])
        batches = [
            check_batch(t.sample_batch(rng, budget.batch_size, T), t) for _ in range(budget.eval_batches)
        ]
        sets[name] = (t, batches)
    return sets


def _evaluate_stack(stack: _Stack, sets, device) -> dict[str, np.ndarray]:
    """Held-out loss and accuracy of every seed of the stack (autocast as in training); the evaluation tensors are
    moved to the device once per run and the results come back in one transfer."""
    stack.template.eval()
    cache = stack.__dict__.setdefault("_eval_tensors", {})
    sums = []
    with torch.no_grad():
        for name, (t, batches) in sets.items():
            if name not in cache:
                cache[name] = [_to_tensors(b, device) for b in batches]
            tot = torch.zeros(3, stack.S, device=device, dtype=torch.float64)  # loss*count, correct, count
            for x, y, m in cache[name]:
                _, loss, correct, count = stack.losses(x, y, m, t.loss, shared_data=True)
                tot += torch.stack((loss.double() * count, correct.double(), count.double()))
            sums.append(tot)
    stack.template.train()
    host = torch.stack(sums).cpu().numpy() if sums else np.zeros((0, 3, stack.S))  # the one sync
    out = {}
    for (name, _), (loss, correct, count) in zip(sets.items(), host, strict=True):
        n = np.maximum(count, 1)
        out[f"{name}_loss"], out[f"{name}_acc"] = loss / n, correct / n
    return out


def _chunks(items: list, n: int) -> list[list]:
    """``items`` in at most ``n`` contiguous, nearly equal, non-empty chunks (order kept)."""
    n = max(1, min(n, len(items)))
    bounds = np.linspace(0, len(items), n + 1).round().astype(int)
    return [items[a:b] for a, b in zip(bounds[:-1], bounds[1:], strict=True) if b > a]


class _Batches:
    """Seed-stacked training batches ``[S, B, T]`` in the order of the per-seed streams.

    ``prefetch`` (CUDA) samples the next batch on a background thread into pinned host memory while the device
    works, and copies it without blocking; the streams are consumed in the same order, so the batches are the same
    as without prefetching. ``check_batch`` validates the first ``VALIDATED_STEPS`` steps only."""

    def __init__(
        self, task: Task, budget: Budget, rngs, datasets, device: torch.device, prefetch: bool, states
    ):
        self.task, self.budget, self.rngs, self.datasets = task, budget, rngs, datasets
        self.device, self.prefetch, self.states = device, prefetch, states
        self.step = 0
        self._pool = ThreadPoolExecutor(max_workers=1) if prefetch else None
        # with prefetching, the seeds' samplers also run in parallel threads (each seed keeps its own generator,
        # so every stream is the one a serial loop draws; numpy releases the GIL in its array kernels)
        self._workers = min(len(rngs), os.cpu_count() or 1) if prefetch else 1
        self._seed_pool = ThreadPoolExecutor(max_workers=self._workers) if self._workers > 1 else None
        self._next = None

    def _sample(self, validate: bool):
        task, B, T = self.task, self.budget.batch_size, self.budget.seq_len
        if self.datasets is None:
            if hasattr(
                task, "sample_batches"
            ):  # a multi-seed sampler (each seed's stream unchanged), per thread
                chunks = _chunks(self.rngs, self._workers)
                if self._seed_pool is not None and len(chunks) > 1:
                    parts = self._seed_pool.map(lambda rs: task.sample_batches(rs, B, T), chunks)
                else:
                    parts = [task.sample_batches(rs, B, T) for rs in chunks]
                batches = [b for part in parts for b in part]
            elif self._seed_pool is not None:
                batches = list(self._seed_pool.map(lambda r: task.sample_batch(r, B, T), self.rngs))
            else:
                batches = [task.sample_batch(r, B, T) for r in self.rngs]
            if validate:
                batches = [check_batch(b, task, B, T) for b in batches]
        else:
            batches = []
            for r, d in zip(self.rngs, self.datasets, strict=True):
                n = len(d.inputs)
                idx = r.choice(n, size=B, replace=n < B)
                batches.append(Batch(d.inputs[idx], d.targets[idx], d.mask[idx]))
        x, y, m = (
            torch.from_numpy(np.stack([getattr(b, f) for b in batches]))
            for f in ("inputs", "targets", "mask")
        )
        if y.dtype == torch.float64:
            y = y.float()
        if self.prefetch and self.device.type == "cuda":
            x, y, m = x.pin_memory(), y.pin_memory(), m.pin_memory()
        states = [r.bit_generator.state for r in self.rngs] if self.states else None
        return (x, y, m), states

    def next(self):
        """The next batch on the device and the generator states right after it was drawn (for checkpoints)."""
        validate = self.step < VALIDATED_STEPS
        if self._next is not None:
            host, states = self._next.result()
        else:
            host, states = self._sample(validate)
        self.step += 1
        if self._pool is not None and self.step < self.budget.steps:
            self._next = self._pool.submit(self._sample, self.step < VALIDATED_STEPS)
        else:
            self._next = None
        pinned = self.prefetch and self.device.type == "cuda"
        return tuple(t.to(self.device, non_blocking=pinned) for t in host), states

    def close(self) -> None:
        for pool in (self._pool, self._seed_pool):
            if pool is not None:
                pool.shutdown(wait=True)


def _checkpoint_file(checkpoint_dir: str | Path, seeds: Sequence[int]) -> Path:
    return Path(checkpoint_dir) / f"checkpoint_seeds_{'-'.join(str(s) for s in seeds)}.pt"


def _run_stack(
    task: Task,
    config,
    budget: Budget,
    seeds: tuple[int, ...],
    device: torch.device,
    vectorized: bool,
    amp: bool,
    eval_sets,
    eval_fn,
    progress: _Progress,
    checkpoint_dir,
    resume: bool,
    compile: bool = False,
    fast: bool | None = None,
    timing: dict | None = None,
    graph: bool = False,
    stop: Callable[[int, dict[str, np.ndarray]], bool] | None = None,
) -> tuple[_Stack, list[dict], dict[str, np.ndarray], float]:
    S, T = len(seeds), budget.seq_len
    stack = _Stack(config, seeds, device, vectorized, amp, compile)
    stack.template.train()
    graph = graph and bool(stack.trainable)
    stack.autocast_cache = not graph
    opt = _make_optimizer(list(stack.trainable.values()), budget, fast, graph=graph)
    rngs = [np.random.default_rng([s, 1]) for s in seeds]
    datasets = None
    if budget.fixed_dataset is not None:
        datasets = [
            sample_fixed_dataset(task, np.random.default_rng([s, 2]), budget.fixed_dataset, T) for s in seeds
        ]
    records: list[tuple[int, dict[str, np.ndarray]]] = []
    start_step = 0
    ckpt = _checkpoint_file(checkpoint_dir, seeds) if checkpoint_dir is not None else None
    if resume and ckpt is not None and ckpt.exists():
        saved = torch.load(ckpt, map_location=device, weights_only=False)
        with torch.no_grad():
            for k, v in saved["trainable"].items():
                stack.trainable[k].copy_(v.reshape(stack.trainable[k].shape))  # with or without the seed axis
        opt.load_state_dict(saved["optimizer"])
        for (
            p,
            st,
        ) in opt.state.items():  # a checkpoint of the other single-seed layout: same numbers, other shape
            for name, v in st.items():
                if torch.is_tensor(v) and v.dim() and v.shape != p.shape and v.numel() == p.numel():
                    st[name] = v.reshape(p.shape)
        for r, st in zip(rngs, saved["rngs"], strict=True):
            r.bit_generator.state = st
        records = saved["records"]
        start_step = saved["step"]
        win_saved = [w.to(device) for w in saved["window"]]
        if graph:  # a captured step reads the rate from one device tensor, whatever the checkpoint held
            rate = _rate_tensor(float(opt.param_groups[0]["lr"]), device)
            for g in opt.param_groups:
                g["lr"] = rate
    if stack.randomness == "different":
        torch.manual_seed(int(np.random.default_rng([*seeds, start_step]).integers(2**62)))

    win = [torch.zeros(S, device=device, dtype=torch.float64) for _ in range(3)]  # loss*count, correct, count
    if start_step:
        win = win_saved
    train_seconds = 0.0
    fast = device.type == "cuda" if fast is None else fast
    saving = ckpt is not None and budget.checkpoint_every > 0
    feed = _Batches(task, budget, rngs, datasets, device, prefetch=fast, states=saving)
    feed.step = start_step
    # marginal step time: from the end of the warm-up steps (compilation, allocator, first batches) to the end
    warm = start_step + min(max(1, (budget.steps - start_step) // 10), 10)
    t_warm, eval_after_warm = None, 0.0
    t0 = time.perf_counter()

    def body(x, y, m, zero_grad: bool = True) -> None:  # one step; no host sync (a CUDA graph may capture it)
        objective, loss, correct, count = stack.losses(x, y, m, task.loss)
        if stack.trainable:
            objective.sum().backward()  # seed s's loss depends only on slice s of each stacked parameter
            if budget.grad_clip is not None:
                stack.clip_(budget.grad_clip, fast)
            opt.step()
            if zero_grad:
                opt.zero_grad(set_to_none=True)
        with torch.no_grad():
            win[0] += loss.detach().double() * count
            win[1] += correct
            win[2] += count

    captured, eager_steps = None, WARMUP_STEPS["cuda" if device.type == "cuda" else "cpu"]
    stopped_at = None
    for step in range(start_step, budget.steps):
        (x, y, m), rng_states = feed.next()
        lr = budget.lr_at(step)
        if captured is None and graph and step - start_step >= eager_steps:
            captured = StaticStep(body, opt.param_groups[0]["lr"], (x, y, m), opt, device)
            if timing is not None:
                timing["graph"] = captured.status
        if captured is not None:
            captured.step(x, y, m, lr)
        else:
            for g in opt.param_groups:
                if graph:
                    g["lr"].fill_(lr)
                else:
                    g["lr"] = lr
            if graph:
                eager_warmup(body, device, x, y, m)
            else:
                body(x, y, m)
        done = step + 1
        is_eval = budget.eval_every and done % budget.eval_every == 0 and (budget.eval_batches or eval_fn)
        if done % budget.log_interval == 0 or is_eval or done == budget.steps:
            n = win[2].clamp_min(1)
            rec = {
                "lr": np.full(S, lr),
                "loss": (win[0] / n).cpu().numpy(),
                "acc": (win[1] / n).cpu().numpy(),
            }
            for w in win:  # in place: a captured step accumulates into these buffers
                w.zero_()
            if is_eval:
                t_eval = time.perf_counter()
                train_seconds += t_eval - t0
                rec.update(_evaluate_stack(stack, eval_sets, device))
                if eval_fn is not None:
                    rec.update(
                        {k: np.asarray(v, dtype=float) for k, v in eval_fn(done, stack.modules()).items()}
                    )
                t0 = time.perf_counter()
                if t_warm is not None:
                    eval_after_warm += t0 - t_eval
            records.append((done, rec))
            if progress.due():
                progress.update(done, float(rec["loss"].mean()), float(rec["acc"].mean()))
            if is_eval and stop is not None and stop(done, rec):
                stopped_at = done
        if ckpt is not None and budget.checkpoint_every and done % budget.checkpoint_every == 0:
            ckpt.parent.mkdir(parents=True, exist_ok=True)
            tmp = ckpt.with_suffix(".tmp")
            state = {
                "step": done,
                "trainable": {k: v.detach() for k, v in stack.trainable.items()},
                "optimizer": opt.state_dict(),
                "rngs": rng_states,
                "records": records,
                "window": [w.cpu() for w in win],
            }
            torch.save(state, tmp)
            os.replace(tmp, ckpt)
        if done == warm and done < budget.steps:
            if device.type == "cuda":
                torch.cuda.synchronize(device)
            t_warm = time.perf_counter()
        if stopped_at is not None:
            break
    feed.close()
    if timing is not None:
        timing.setdefault("steps_run", []).append(done - start_step if budget.steps > start_step else 0)
    if device.type == "cuda":
        torch.cuda.synchronize(device)
    t_end = time.perf_counter()
    train_seconds += t_end - t0
    if timing is not None and t_warm is not None:
        timing["marginal_steps"] = (
            timing.get("marginal_steps", 0) + start_step + timing["steps_run"][-1] - warm
        )
        timing["marginal_seconds"] = timing.get("marginal_seconds", 0.0) + (t_end - t_warm - eval_after_warm)

    final: dict[str, np.ndarray] = {}
    last = records[-1][1] if records else {"loss": np.full(S, np.nan), "acc": np.full(S, np.nan)}
    final["train_loss"], final["train_acc"] = last["loss"], last["acc"]
    if budget.eval_batches:
        final.update(_evaluate_stack(stack, eval_sets, device))
        final["loss"], final["acc"] = final.pop("eval_loss"), final.pop("eval_acc")
    else:
        final["loss"], final["acc"] = final["train_loss"], final["train_acc"]
    if eval_fn is not None:
        final.update(
            {k: np.asarray(v, dtype=float) for k, v in eval_fn(budget.steps, stack.modules()).items()}
        )
    history = [
        {"step": step, "seed": int(seed), **{k: float(v[i]) for k, v in rec.items()}}
        for step, rec in records
        for i, seed in enumerate(seeds)
    ]
    return stack, history, final, train_seconds


def _flops_per_token(model_config, T: int, seed: int) -> float:
    """The config's ``flops_per_token(T)``, else 6 x (number of parameters): the usual dense estimate."""
    if hasattr(model_config, "flops_per_token"):
        return float(model_config.flops_per_token(T))
    return 6.0 * sum(p.numel() for p in model_config.build(seed).parameters())


def train(
    task: Task,
    model_config,
    budget: Budget,
    seeds: Sequence[int] = (0,),
    device: str = "cpu",
    log_path: str | Path | None = None,
    progress: bool | None = None,
    *,
    vectorize: bool = True,
    eval_tasks: Mapping[str, Task] | None = None,
    eval_fn: Callable[[int, list[nn.Module]], Mapping[str, Sequence[float]]] | None = None,
    checkpoint_dir: str | Path | None = None,
    resume: bool = False,
    amp: bool | None = None,
    threads: int | None = None,
    compile: bool = False,
    max_stack: int | None = None,
    fast: bool | None = None,
    graph: bool | None = None,
    stop: Callable[[int, dict[str, np.ndarray]], bool] | None = None,
    deterministic: bool | None = None,
) -> TrainResult:
    """Train one model per seed on ``task`` and return the trained models, a metrics history and final metrics.

    ``vectorize=True`` trains all seeds in one vmapped stack; ``False`` trains them one after another (the
    reference path; same per-seed data and optimiser, so the results agree to float tolerance). ``eval_tasks``
    adds held-out sets from other distributions (``final["<name>_acc"]``); ``eval_fn(step, models)`` returns
    extra per-seed metrics at each evaluation. ``amp`` (default: on for CUDA) runs the forward in bf16 autocast.
    ``log_path`` receives the JSON of the result; ``progress`` forces the progress line on or off (default: on
    for an interactive terminal, once the run lasts more than 3 seconds). With ``checkpoint_dir`` and
    ``budget.checkpoint_every``, a resumable state is saved; ``resume=True`` continues from it. ``threads``: CPU
    threads during training (default: :func:`cpu_threads`). ``compile=True`` wraps the per-step loss (vmap included)
    in ``torch.compile``: it pays on CUDA for larger models, costs compile time for small ones. ``max_stack``: at
    most this many seeds per vmapped stack (default :func:`auto_stack_size`: a fixed rule per device, measured);
    a seed's result does not depend on how the seeds are grouped. ``fast`` (default: on CUDA only) switches on the
    fused AdamW / multi-tensor SGD, multi-tensor clipping and the prefetching batch feed; the CPU default keeps
    the per-tensor paths, bit-identical to earlier versions. ``graph`` (default: on CUDA with ``fast``, AdamW and
    no ``compile``; ``THEORYLAB_CUDA_GRAPHS=0`` turns the default off) captures the whole step as a CUDA graph after
    a few eager steps and replays it (:mod:`theorylab.nn.graphs`); on the CPU ``graph=True`` runs the same
    static-buffer step eagerly (the rehearsal). ``stop(step, record)`` is asked after each evaluation (``record``:
    per-seed arrays, ``eval_acc`` among them); when it returns True the stack stops there
    (``throughput["steps_run"]``), e.g. at a document's stopping rule. ``deterministic`` (default True on every
    device) switches torch's deterministic algorithms on during training (and, on CUDA, the restricted cuBLAS
    workspace ``CUBLAS_WORKSPACE_CONFIG=:4096:8``); False leaves the library's fastest kernels (e.g. the atomic
    embedding backward), so reruns on CUDA may differ at float rounding. The CUDA default stays True until a GPU
    measures what it costs (``benchmarks/bench_full_baseline.py --diagnose`` times both); the CPU default is
    unchanged. ``throughput`` reports the marginal step time (after the warm-up steps, evaluations
    excluded) and the MFU computed from it with the device's bf16 peak.
    """
    check_task(task)
    if not isinstance(budget, Budget):
        raise TypeError(f"budget must be a Budget, got {type(budget).__name__}")
    if not hasattr(model_config, "build"):
        raise TypeError("model_config must have a .build(seed) -> torch.nn.Module method")
    seeds = tuple(int(s) for s in seeds)
    if not seeds or len(set(seeds)) != len(seeds) or min(seeds) < 0:
        raise ValueError(f"seeds must be distinct non-negative ints, got {seeds}")
    for attr in ("vocab_size", "n_outputs"):
        want, have = getattr(task, attr), getattr(model_config, attr, None)
        if have is not None and have != want:
            raise ValueError(f"model_config.{attr}={have} does not match task.{attr}={want}")
    dev = _resolve_device(device)
    amp = (dev.type == "cuda") if amp is None else bool(amp)
    if amp and dev.type != "cuda":
        raise ValueError("amp (bf16 autocast) is only used on CUDA")
    T = budget.seq_len
    start = time.perf_counter()
    fpt = _flops_per_token(model_config, T, seeds[0])
    if max_stack is not None and (not isinstance(max_stack, int) or max_stack < 1):
        raise ValueError(f"max_stack must be None or a positive int, got {plain(max_stack)}")
    k_guess = (max_stack or auto_stack_size(model_config, budget, len(seeds), dev)) if vectorize else 1
    fast_on = dev.type == "cuda" if fast is None else fast
    if graph is None:
        graph = (
            dev.type == "cuda"
            and fast_on
            and budget.optimizer == "adamw"
            and not compile
            and graphs_enabled()
        )
    elif graph and budget.optimizer != "adamw":
        raise ValueError(f"graph=True needs Budget.optimizer 'adamw', got {budget.optimizer!r}")
    if deterministic is not None and not isinstance(deterministic, bool):
        raise TypeError(f"deterministic must be None or a bool, got {type(deterministic).__name__}")
    deterministic = True if deterministic is None else deterministic
    if stop is not None and not callable(stop):
        raise TypeError("stop must be a callable (step, record) -> bool or None")
    if stop is not None and not (budget.eval_every and budget.eval_batches):
        raise ValueError("stop is asked at evaluations: it needs Budget.eval_every > 0 and eval_batches > 0")
    step_tokens = k_guess * budget.batch_size * T
    n_threads = threads or cpu_threads(fpt * step_tokens)
    note_training(n_threads, k_guess, len(seeds), str(dev))  # the environment of a trained check's numbers
    rng_devices = [dev.index or 0] if dev.type == "cuda" else []
    with (
        torch.random.fork_rng(devices=rng_devices),
        _training_environment(str(dev), n_threads, deterministic),
    ):
        eval_sets = _eval_sets(task, budget, T, dict(eval_tasks or {}))
        groups = [seeds[i : i + k_guess] for i in range(0, len(seeds), k_guess)]
        models, parts, finals, train_seconds, timing = [], [], [], 0.0, {}
        for group in groups:
            bar = _Progress(f"{task.name} seeds {group[0]}..{group[-1]}", budget.steps, progress)
            stack, hist, fin, secs = _run_stack(
                task,
                model_config,
                budget,
                group,
                dev,
                vectorize and len(group) > 1,  # a single seed needs no vmap
                amp,
                eval_sets,
                eval_fn,
                bar,
                checkpoint_dir,
                resume,
                compile,
                fast,
                timing,
                bool(graph),
                stop,
            )
            bar.close()
            models += stack.modules()
            parts += hist
            finals.append(fin)
            train_seconds += secs
    final = {k: np.concatenate([np.asarray(f[k]).reshape(-1) for f in finals]) for k in finals[0]}
    history = sorted(parts, key=lambda r: (r["step"], seeds.index(r["seed"])))
    steps_run = timing.get("steps_run", [budget.steps])
    tokens = sum(len(g) * n for g, n in zip(groups, steps_run, strict=True)) * budget.batch_size * T
    tps = tokens / max(train_seconds, 1e-9)
    peak = peak_flops(dev)
    m_steps = timing.get("marginal_steps", 0)
    step_s = timing["marginal_seconds"] / m_steps if m_steps else train_seconds / max(sum(steps_run), 1)
    step_tokens = len(seeds) * budget.batch_size * T / len(groups)  # tokens of one step of one stack
    throughput = {
        "tokens_per_s": tps,
        "train_seconds": train_seconds,
        "flops_per_token": fpt,
        "marginal_step_ms": 1e3 * step_s,
        "marginal_tokens_per_s": step_tokens / max(step_s, 1e-12),
        "mfu": (step_tokens / max(step_s, 1e-12) * fpt / peak) if (fpt and peak) else None,
        "peak_flops": peak,
        "device_name": torch.cuda.get_device_name(dev) if dev.type == "cuda" else "cpu",
        "threads": n_threads,
        "stack_size": k_guess,
        "steps_run": steps_run,
        "cuda_graph": timing.get("graph", "off") if graph else "off",
        "deterministic": deterministic,
    }
    if not sum(steps_run):  # everything came from a checkpoint: no step was timed
        throughput.update(marginal_step_ms=None, marginal_tokens_per_s=None, mfu=None)
    result = TrainResult(
        models=models,
        history=history,
        final=final,
        seconds=time.perf_counter() - start,
        seeds=seeds,
        task=task.name,
        config=model_config,
        budget=budget,
        device=str(dev),
        throughput=throughput,
    )
    if log_path is not None:
        result.to_json(log_path)
    return result


def evaluate(
    task: Task,
    model: nn.Module,
    rng: np.random.Generator,
    batches: int,
    T: int,
    device: str = "cpu",
    batch_size: int = 64,
    amp: bool | None = None,
) -> dict:
    """Masked loss and accuracy of one model on ``batches`` fresh batches drawn from ``rng``.

    Returns ``loss``, ``acc``, ``correct`` and ``count`` (the number of masked positions); ``1 - acc`` is the
    error rate, e.g. the read error of a flip-flop model. ``amp`` (default: on for CUDA, as in training) runs the
    forward in bf16 autocast; the totals come back in one transfer; the model is left on the device and in the mode
    it came in.
    """
    check_task(task)
    dev = _resolve_device(device)
    was_training = model.training
    params = list(model.parameters())
    home = params[0].device if params else None
    model.eval().to(dev)
    totals = []
    cfg = getattr(model, "cfg", None)
    if hasattr(cfg, "flops_per_token"):
        fpt = cfg.flops_per_token(T) / 3  # forward only
    else:
        fpt = 2.0 * sum(p.numel() for p in model.parameters())
    threads = cpu_threads(fpt * batch_size * T)
    amp = (dev.type == "cuda") if amp is None else bool(amp)
    if amp and dev.type != "cuda":
        raise ValueError("amp (bf16 autocast) is only used on CUDA")
    try:
        with torch.no_grad(), _training_environment(str(dev), threads):
            for _ in range(batches):
                x, y, m = _to_tensors(check_batch(task.sample_batch(rng, batch_size, T), task), dev)
                with torch.autocast("cuda", dtype=torch.bfloat16, enabled=amp):
                    out = model(x)
                if isinstance(out, tuple):
                    out = out[0]
                loss, c, n = loss_terms(out, y, m, task.loss)
                totals.append(torch.stack((loss.double() * n, c.double(), n.double())))
    finally:
        model.train(was_training)
        if home is not None:
            model.to(home)
    host = torch.stack(totals).cpu().numpy() if totals else np.zeros((0, 3))  # the one sync
    # per-batch float64 products summed in order: the same totals as accumulating float(loss) * n batch by batch
    tot_loss = float(sum(float(v) for v in host[:, 0]))
    correct, count = int(host[:, 1].sum()), int(host[:, 2].sum())
    return {
        "loss": tot_loss / max(count, 1),
        "acc": correct / max(count, 1),
        "correct": correct,
        "count": count,
    }
