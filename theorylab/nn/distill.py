"""Progressive distillation on sparse parity (Liu §4.2 of ``001_6a230b9a9faf2198.txt``).

Two parts:

* **The theory's two-layer teacher, exactly** (numpy, over all 2^d inputs): the symmetric Barak-style
  initialisation of Algorithm 2, the population first-layer gradient (Claim 7), the idealised one-step weights
  of Lemma 63 (``w^(1) = -eta_1 g`` with ``eta_1 = m / (k |zeta_{k-1}|)``, i.e. the weight decay that cancels the
  init) and the teacher's correlations ``E[f^(1)(x) x_j]`` (Lemma 64).
* **Trained teachers and students** (torch, imported lazily): one-hidden-layer ReLU MLPs on +-1 inputs, many
  seeds and schedules trained together as one batched stack (every weight has a leading "run" axis, so R runs
  cost one batched matmul per layer: the seeds are vmapped by construction). Teacher checkpoints are saved every
  ``checkpoint_every`` steps; a student's supervision is a :class:`ProgressiveSchedule` of teacher checkpoints
  (Defs 21-22) queried in the loop with temperature ``tau`` (soft cross-entropy, Eq. 4.91), or the labels.

The harness :func:`theorylab.nn.train` samples batches through a ``Task`` that does not know the step, so a
schedule whose teacher changes with the step does not fit it; :class:`DistillTask` is the harness ``Task`` for a
fixed teacher (one-shot distillation) and shows how the targets are formed.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

from theorylab._extras import require
from theorylab.boolean.fourier import hypercube, majority_coefficient
from theorylab.boolean.tasks import SparseParity

__all__ = [
    "DistillRun",
    "DistillTask",
    "MLPStack",
    "ProgressiveSchedule",
    "TwoLayerReLU",
    "claim7_gradient",
    "degree_one_correlations",
    "distill_targets",
    "held_out",
    "idealized_one_step_weights",
    "locate_transition",
    "population_first_layer_gradient",
    "sign_corrected_pair_correlations",
    "symmetric_init",
    "train_mlps",
]


# --------------------------------------------------------------------------------------- the theory's teacher
def _check_width(name: str, m: int) -> int:
    if isinstance(m, bool) or not isinstance(m, int | np.integer):
        raise TypeError(f"{name} must be an int, got {type(m).__name__}")
    if m < 1:
        raise ValueError(f"{name} must be a positive int, got {m}")
    return int(m)


@dataclass(frozen=True)
class TwoLayerReLU:
    """``f(x) = sum_i a_i relu(<w_i, x> + b_i)`` with ``W [m, d]``, ``b [m]``, ``a [m]``."""

    W: np.ndarray
    b: np.ndarray
    a: np.ndarray

    def __call__(self, x: np.ndarray) -> np.ndarray:
        x = np.asarray(x, dtype=np.float64)
        out = np.zeros(x.shape[0])
        chunk = max(1, 2**22 // max(len(x), 1))  # [n, chunk] activations of at most 32 MiB, few BLAS calls
        for s in range(0, len(self.a), chunk):
            out += (
                np.maximum(x @ self.W[s : s + chunk].T + self.b[s : s + chunk], 0.0) @ self.a[s : s + chunk]
            )
        return out

    def pair_outputs(self, x: np.ndarray, pairs: slice | None = None) -> np.ndarray:
        """Per mirrored pair (i, i + m/2): ``h_i(x) = relu(z + b_i) - relu(-z + b_i)`` with ``z = <w_i, x>``,
        which is what the pair computes up to the factor ``a_i`` when ``w_{i+m/2} = -w_i`` (``[n, m/2]``)."""
        pairs = slice(0, len(self.a) // 2) if pairs is None else pairs
        z = np.asarray(x, dtype=np.float64) @ self.W[pairs].T
        return np.maximum(z + self.b[pairs], 0.0) - np.maximum(-z + self.b[pairs], 0.0)


def symmetric_init(d: int, m: int, k: int, rng: np.random.Generator) -> TwoLayerReLU:
    """Algorithm 2's initialisation: for i < m/2, ``w_i ~ Unif{+-1}^d``, ``b_i`` uniform on the grid
    ``{-1 + 1/k, ..., 1 - 1/k}``, ``a_i ~ Unif{+-1/m}``; mirrored ``w_{i+m/2} = w_i``, ``b_{i+m/2} = b_i``,
    ``a_{i+m/2} = -a_i``, so ``f = 0`` at initialisation."""
    d, m, k = _check_width("d", d), _check_width("width m", m), _check_width("k", k)
    if m % 2:
        raise ValueError(f"the symmetric initialisation needs an even width m, got {m}")
    if k > d:
        raise ValueError(f"sparsity k = {k} exceeds the dimension d = {d}")
    h = m // 2
    W = (1 - 2 * rng.integers(0, 2, size=(h, d))).astype(np.float64)
    grid = -1 + np.arange(1, 2 * k) / k
    b = rng.choice(grid, size=h)
    a = (1 - 2 * rng.integers(0, 2, size=h)) / m
    return TwoLayerReLU(np.vstack([W, W]), np.concatenate([b, b]), np.concatenate([a, -a]))


def population_first_layer_gradient(net: TwoLayerReLU, S: Sequence[int], chunk: int = 512) -> np.ndarray:
    """Exact population gradient of the hinge loss ``max(0, 1 - f(x) chi_S(x))`` in the first-layer weights at a
    network with ``f = 0`` on the cube: ``g_ij = -a_i E[chi_S(x) 1[<w_i,x> + b_i >= 0] x_j]`` (``[m, d]``)."""
    d = net.W.shape[1]
    task = SparseParity(d, len(S), tuple(S))
    x, y = task.all_inputs()
    x = x.astype(np.float64)
    yx = (y[:, None] * x).T  # [d, 2^d]
    out = np.empty_like(net.W)
    for s in range(0, len(net.a), chunk):
        ind = (x @ net.W[s : s + chunk].T + net.b[s : s + chunk] >= 0).astype(np.float64)
        out[s : s + chunk] = -(yx @ ind).T * net.a[s : s + chunk, None] / 2**d
    return out


def claim7_gradient(net: TwoLayerReLU, S: Sequence[int]) -> np.ndarray:
    """Claim 7 (sign as derived here): ``g_ij = -1/2 a_i zeta_{|S xor {j}|} chi_{S xor {j}}(w_i)`` (d odd,
    ``w_i`` in {+-1}^d, ``|b_i| < 1``)."""
    m, d = net.W.shape
    if d % 2 == 0:
        raise ValueError(f"Claim 7 needs odd d (no ties in <w, x>), got d = {d}")
    S = set(S)
    g = np.empty((m, d))
    chiS = np.prod(net.W[:, sorted(S)], axis=1)
    for j in range(d):
        size = len(S ^ {j})
        zeta = float(majority_coefficient(d, size))
        chi = chiS * net.W[:, j]  # chi_{S xor {j}}(w) = chi_S(w) w_j for w in {+-1}^d
        g[:, j] = -0.5 * net.a * zeta * chi
    return g


def idealized_one_step_weights(net: TwoLayerReLU, S: Sequence[int]) -> TwoLayerReLU:
    """Lemma 63 with the population gradient (tau_g = 0): ``w^(1) = -eta_1 g``, ``eta_1 = m / (k |zeta_{k-1}|)``.

    Then ``w^(1)_ij = sign(a_i zeta_{k-1}) chi_{S \\ j}(w^(0)_i) / (2k)`` on S. (The printed weight decay
    ``lambda_1 = 1`` does not cancel the initialisation; the cancelling choice is ``lambda_1 = 1/(2 eta_1)``.)
    """
    m, d = net.W.shape
    k = len(S)
    zeta = float(majority_coefficient(d, k - 1))
    if zeta == 0:
        raise ValueError(f"Lemma 63 needs zeta_(k-1) != 0, i.e. even k; got k = {k}")
    eta = m / (k * abs(zeta))
    return TwoLayerReLU(-eta * claim7_gradient(net, S), net.b, net.a)


def degree_one_correlations(net: TwoLayerReLU) -> np.ndarray:
    """``E[f(x) x_j]`` for every coordinate j, exactly over the cube."""
    d = net.W.shape[1]
    x = hypercube(d).astype(np.float64)
    return x.T @ net(x) / 2**d


def sign_corrected_pair_correlations(net0: TwoLayerReLU, net1: TwoLayerReLU, S: Sequence[int]) -> np.ndarray:
    """Per mirrored pair i and j in S: ``s_ij E[h_i(x) x_j]`` with ``s_ij = sign(zeta_{k-1}) chi_S(w^(0)_i)
    w^(0)_ij sign(a_i)`` (the sign Lemma 63 gives ``w^(1)_ij``), ``[m/2, k]``. The proof of Lemma 64 bounds this
    per pair before summing; the sum over pairs is where the signs cancel."""
    d = net0.W.shape[1]
    k = len(S)
    half = len(net0.a) // 2
    x = hypercube(d).astype(np.float64)
    xs = x[:, list(S)]
    step = max(1, 2**22 // len(x))
    corr = (
        np.vstack(
            [(xs.T @ net1.pair_outputs(x, slice(s, min(s + step, half)))).T for s in range(0, half, step)]
        )
        / 2**d
    )  # [m/2, k]
    zeta = float(majority_coefficient(d, k - 1))
    s = np.sign(zeta) * np.prod(net0.W[:half][:, list(S)], axis=1)[:, None] * net0.W[:half][:, list(S)]
    return s * np.sign(net0.a[:half])[:, None] * corr


# --------------------------------------------------------------------------------------- schedules (Defs 21-22)
@dataclass(frozen=True)
class ProgressiveSchedule:
    """(C_T, D)-progressive distillation (Def 21): teacher checkpoint ``checkpoints[i]`` supervises the student for
    ``durations[i]`` steps, in order; after the last duration the last checkpoint is used until the end.
    One-shot distillation is the one-checkpoint schedule; ``checkpoints`` are teacher step numbers."""

    checkpoints: tuple[int, ...]
    durations: tuple[int, ...] = ()

    def __post_init__(self) -> None:
        c = tuple(int(s) for s in self.checkpoints)
        dur = tuple(int(s) for s in self.durations) or (0,) * (len(c) - 1)
        if not c:
            raise ValueError("a schedule needs at least one teacher checkpoint")
        if any(s < 0 for s in c) or list(c) != sorted(c):
            raise ValueError(f"checkpoints must be non-negative teacher steps in increasing order, got {c}")
        if len(dur) not in (len(c) - 1, len(c)) or any(s < 0 for s in dur):
            raise ValueError(
                f"need one non-negative duration per checkpoint (the last may be omitted), got {dur}"
            )
        object.__setattr__(self, "checkpoints", c)
        object.__setattr__(self, "durations", dur)

    @classmethod
    def one_shot(cls, final: int) -> ProgressiveSchedule:
        return cls((final,))

    @classmethod
    def two_stage(cls, intermediate: int, final: int, T: int) -> ProgressiveSchedule:
        """(2, T)-progressive: one intermediate checkpoint for T steps, then the final one."""
        return cls((intermediate, final), (T,))

    @classmethod
    def equal_split(cls, checkpoints: Sequence[int], budget: int) -> ProgressiveSchedule:
        """N-shot Equal-split: the student's budget cut into N equal intervals, one per checkpoint."""
        n = len(checkpoints)
        if n < 1 or budget < n:
            raise ValueError(f"need 1 <= N <= budget, got N = {n}, budget = {budget}")
        base, extra = divmod(budget, n)
        return cls(tuple(checkpoints), tuple(base + (i < extra) for i in range(n)))

    def teacher_at(self, step: int) -> int:
        """The teacher checkpoint that supervises student step ``step`` (0-based)."""
        if step < 0:
            raise ValueError(f"step must be >= 0, got {step}")
        t = 0
        for ckpt, dur in zip(self.checkpoints, self.durations, strict=False):
            t += dur
            if step < t:
                return ckpt
        return self.checkpoints[-1]


def distill_targets(teacher_logits: np.ndarray, tau: float) -> np.ndarray:
    """``p_T(x; tau) = softmax(f_T(x) / tau)`` (Eq. 4.91's target), computed stably; ``tau -> 0`` gives the one-hot
    argmax (ties split evenly)."""
    if not tau > 0:
        raise ValueError(f"temperature tau must be > 0, got {tau}")
    z = np.asarray(teacher_logits, dtype=np.float64) / tau
    z = z - z.max(axis=-1, keepdims=True)
    e = np.exp(z)
    return e / e.sum(axis=-1, keepdims=True)


@dataclass(frozen=True)
class DistillTask:
    """Harness ``Task`` whose targets are a fixed teacher's tempered probabilities (``loss = "soft_ce"``).
    ``teacher(x)`` maps +-1 points ``[B, d]`` to 2-class logits ``[B, 2]``."""

    base: SparseParity
    teacher: Callable[[np.ndarray], np.ndarray]
    tau: float = 1e-4
    name: str = "distill_sparse_parity"
    vocab_size: int = 2
    n_outputs: int = 2
    loss: str = "soft_ce"

    def sample_batch(self, rng: np.random.Generator, batch: int, T: int):
        from theorylab.nn.tasks import Batch

        b = self.base.sample_batch(rng, batch, T)
        x = (1 - 2 * b.inputs).astype(np.float32)
        targets = np.zeros((batch, T, 2), dtype=np.float32)
        targets[:, -1] = distill_targets(self.teacher(x), self.tau)
        return Batch(b.inputs, targets, b.mask)


# --------------------------------------------------------------------------------------- batched MLP training
@dataclass
class MLPStack:
    """R one-hidden-layer ReLU MLPs ``x -> W2 relu(W1 x + b1) + b2`` (2 logits) with a leading run axis."""

    W1: object  # torch tensors [R, h, d], [R, h], [R, 2, h], [R, 2]
    b1: object
    W2: object
    b2: object

    @classmethod
    def init(cls, d: int, width: int, seeds: Sequence[int]) -> MLPStack:
        """PyTorch's default ``nn.Linear`` initialisation, one generator per seed."""
        torch = require("torch", extra="trained")

        d, width = _check_width("d", d), _check_width("width", width)
        parts = []
        for s in seeds:
            g = torch.Generator().manual_seed(int(s))

            def u(*shape, fan, g=g):
                return (torch.rand(*shape, generator=g) * 2 - 1) / fan**0.5

            parts.append((u(width, d, fan=d), u(width, fan=d), u(2, width, fan=width), u(2, fan=width)))
        return cls(*(torch.stack([p[i] for p in parts]) for i in range(4)))

    def params(self) -> list:
        return [self.W1, self.b1, self.W2, self.b2]

    def logits(self, x):
        """``x [R, n, d]`` -> logits ``[R, n, 2]``."""
        torch = require("torch", extra="trained")

        h = torch.relu(torch.baddbmm(self.b1[:, None, :], x, self.W1.transpose(1, 2)))
        return torch.baddbmm(self.b2[:, None, :], h, self.W2.transpose(1, 2))

    def snapshot(self) -> tuple:
        return tuple(p.detach().clone() for p in self.params())


def _classes(y: np.ndarray) -> np.ndarray:
    return ((1 - y.astype(np.int64)) // 2).astype(np.int64)  # +1 -> class 0, -1 -> class 1


@dataclass
class DistillRun:
    """Result of :func:`train_mlps`: held-out accuracy ``acc [R, n_evals]`` at ``eval_steps``, checkpoints (for a
    teacher) by step, the final stack, and the wall-clock seconds."""

    eval_steps: np.ndarray
    acc: np.ndarray
    checkpoints: dict[int, tuple] = field(default_factory=dict)
    stack: MLPStack | None = None
    seconds: float = 0.0

    def checkpoints_of(self, run: int = 0) -> dict[int, tuple]:
        """The saved checkpoints of one run, without the run axis (the ``teacher`` argument of
        :func:`train_mlps`)."""
        return {step: tuple(p[run] for p in params) for step, params in self.checkpoints.items()}

    def steps_to(self, level: float) -> np.ndarray:
        """First evaluated step with accuracy >= level, per run (``inf`` if never)."""
        hit = self.acc >= level
        first = np.where(hit.any(axis=1), self.eval_steps[np.argmax(hit, axis=1)], np.inf)
        return first.astype(float)


EVAL_SEED = 0x5EED_D157


def held_out(task: SparseParity, n: int = 4096) -> tuple[np.ndarray, np.ndarray]:
    """The fixed held-out set (shared by all runs)."""
    return task.sample(np.random.default_rng(EVAL_SEED), n)


def train_mlps(
    task: SparseParity,
    width: int,
    seeds: Sequence[int],
    steps: int,
    *,
    lr: float = 0.05,
    batch: int = 32,
    supervision: Sequence[ProgressiveSchedule | None] | None = None,
    teacher: dict[int, tuple] | None = None,
    tau: float = 1e-4,
    eval_every: int = 100,
    checkpoint_every: int = 0,
    stop_at: float | None = None,
    n_eval: int = 4096,
) -> DistillRun:
    """Train one MLP per entry of ``seeds`` with SGD (lr, batch) on (d, k)-sparse parity, all as one batched stack.

    Run r draws its inputs from ``np.random.default_rng([seeds[r], 1])`` and is supervised by the labels
    (``supervision[r] is None``) or by the teacher checkpoint ``teacher[schedule.teacher_at(step)]`` at
    temperature ``tau`` (soft cross-entropy). ``stop_at``: stop once every run reached that held-out accuracy.
    ``checkpoint_every``: keep a copy of the weights every so many steps (and at step 0).
    """
    import time

    torch = require("torch", extra="trained")

    width = _check_width("width", width)
    if steps < 0 or batch < 1 or not lr >= 0 or eval_every < 1:
        raise ValueError("need steps >= 0, batch >= 1, lr >= 0 and eval_every >= 1")
    R = len(seeds)
    supervision = list(supervision) if supervision is not None else [None] * R
    if len(supervision) != R:
        raise ValueError(f"need one supervision entry per run: {len(supervision)} for {R} runs")
    keys = sorted({c for s in supervision if s is not None for c in s.checkpoints})
    if keys and (teacher is None or any(c not in teacher for c in keys)):
        raise ValueError(f"the schedules need teacher checkpoints {keys} (single-model weights)")
    tstack = None
    if keys:
        tstack = [torch.stack([teacher[c][i] for c in keys]) for i in range(4)]  # [C, ...]
    pos = {c: i for i, c in enumerate(keys)}
    start = time.perf_counter()
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        net = MLPStack.init(task.d, width, seeds)
        for p in net.params():
            p.requires_grad_(True)
        rngs = [np.random.default_rng([int(s), 1]) for s in seeds]
        xe, ye = held_out(task, n_eval)
        xe_t = torch.from_numpy(xe)[None].expand(R, -1, -1)
        ye_t = torch.from_numpy(_classes(ye))
        eval_steps, accs, ckpts = [], [], {}

        def evaluate(step: int) -> np.ndarray:
            with torch.no_grad():
                acc = (net.logits(xe_t).argmax(-1) == ye_t[None]).double().mean(1).numpy()
            eval_steps.append(step)
            accs.append(acc)
            return acc

        if checkpoint_every:
            ckpts[0] = net.snapshot()
        evaluate(0)
        for step in range(steps):
            xb = np.stack([r.integers(0, 2, size=(batch, task.d)) for r in rngs])
            x = torch.from_numpy((1 - 2 * xb).astype(np.float32))
            logp = torch.log_softmax(net.logits(x), dim=-1)
            target = torch.zeros(R, batch, 2)
            lab = [r for r, s in enumerate(supervision) if s is None]
            if lab:
                y = np.prod(1 - 2 * xb[lab][:, :, list(task.S)], axis=-1)
                target[lab] = torch.nn.functional.one_hot(torch.from_numpy(_classes(y)), 2).float()
            dis = [r for r, s in enumerate(supervision) if s is not None]
            if dis:
                idx = torch.tensor([pos[supervision[r].teacher_at(step)] for r in dis])
                W1, b1, W2, b2 = (t[idx] for t in tstack)
                with torch.no_grad():
                    t_logits = MLPStack(W1, b1, W2, b2).logits(x[dis])
                    target[dis] = torch.softmax(t_logits.double() / tau, dim=-1).float()
            loss = -(target * logp).sum(-1).mean(-1).sum()
            grads = torch.autograd.grad(loss, net.params())
            with torch.no_grad():
                for p, g in zip(net.params(), grads, strict=True):
                    p -= lr * g
            done = step + 1
            if checkpoint_every and done % checkpoint_every == 0:
                ckpts[done] = net.snapshot()
            if done % eval_every == 0:
                evaluate(done)
                if stop_at is not None and (np.asarray(accs) >= stop_at).any(axis=0).all():
                    break
    finally:
        torch.set_num_threads(threads)
    for p in net.params():
        p.requires_grad_(False)
    return DistillRun(np.array(eval_steps), np.array(accs).T, ckpts, net, time.perf_counter() - start)


def locate_transition(
    steps: np.ndarray, acc: np.ndarray, low: float = 0.6, high: float = 0.95
) -> dict[str, int]:
    """Locate a teacher's phase transition on its held-out accuracy curve: ``start`` = last evaluated step before
    the accuracy first reaches ``low``, ``end`` = first step at ``high``, ``mid`` = the evaluated step nearest
    their midpoint, ``early`` = the evaluated step nearest ``start / 2`` (on the plateau)."""
    steps, acc = np.asarray(steps), np.asarray(acc)
    if not (acc >= high).any():
        raise ValueError(f"the teacher never reaches accuracy {high}: no transition to locate")
    i_low = int(np.argmax(acc >= low))
    i_high = int(np.argmax(acc >= high))
    start = int(steps[max(i_low - 1, 0)])
    end = int(steps[i_high])
    nearest = lambda t: int(steps[np.argmin(np.abs(steps - t))])  # noqa: E731
    return {"start": start, "end": end, "mid": nearest((start + end) / 2), "early": nearest(start / 2)}
