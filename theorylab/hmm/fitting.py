"""Gradient-trained parametric models of (G-)HMMs: the trained experiments E1 and E5 of the catalog.

Both fit the *parameters* of a model of the right form by gradient descent on a masked-prediction loss, several
seeds at once (a leading seed axis on every parameter), and report where each seed ends up.

* E1 (population level, discrete HMM): $\\hat O=\\mathrm{softmax}(L_O)$ column-wise and
  $\\hat T=\\sum_\\pi w_\\pi\\Pi_\\pi$, $w=\\mathrm{softmax}(L_T)$ over the $k!$ permutation matrices (exactly doubly
  stochastic, and every doubly stochastic matrix is such a mixture: Birkhoff-von Neumann); loss = mean squared error between the model's optimal predictor and
  the true one over all one-hot inputs (the infinite-data limit of the squared masked-prediction loss, up to a
  constant). Pairwise $x_2\\mid x_1$ has a manifold of exact minimizers (Theorem 4 / 6), the triple task
  $x_2\\otimes x_3\\mid x_1$ only the truth up to relabeling (Theorem 7).
* E5 (samples, G-HMM): $\\hat M$ with unit columns, $\\hat T$ as in E1, squared loss
  $\\|f(x_{given})-\\otimes x_{targets}\\|^2$ on fresh sampled triples. For $x_1\\otimes x_3\\mid x_2$ the model and
  its Theorem 8 case-2 twin have the same predictor, hence the same loss on every batch.

torch is imported inside the functions.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from theorylab._extras import require
from theorylab.hmm.compare import relabeling_distance
from theorylab.hmm.models import GHMM, HMM
from theorylab.hmm.predictors import parse_task
from theorylab.hmm.sampling import sample

__all__ = ["FitResult", "fit_hmm_population", "fit_ghmm_samples", "hmm_population_loss", "ghmm_sample_loss"]

_HMM_TASKS = ("x2|x1", "x3|x1", "x2x3|x1")
_GHMM_TASKS = ("x1x3|x2", "x2x3|x1")


@dataclass(frozen=True)
class FitResult:
    """Per seed: the fitted model (unvalidated), its final loss, and its distance to ``reference`` models after the
    best relabeling (``distances[name][s]``, max abs entry error of emission and transition)."""

    models: list
    losses: np.ndarray
    distances: dict[str, np.ndarray]
    seconds: float


def _permutation_matrices(torch, k: int):
    """All k! permutation matrices (p, k, k): the vertices of the Birkhoff polytope."""
    import itertools

    if k > 6:
        raise ValueError(
            f"the Birkhoff parametrization enumerates k! permutations; k = {k} is too large (<= 6)"
        )
    eye = np.eye(k)
    return torch.tensor(np.array([eye[list(p)] for p in itertools.permutations(range(k))]))


def _birkhoff(torch, logits, perms):
    """$\\sum_\\pi\\mathrm{softmax}(L)_\\pi\\Pi_\\pi$: doubly stochastic exactly (up to round-off)."""
    return torch.einsum("sp,pij->sij", torch.softmax(logits, dim=-1), perms)


def _init_logits(torch, seeds, shapes):
    """Initial logits N(0, 1), one ``torch.Generator`` per seed (reruns identical)."""
    out = [[] for _ in shapes]
    for s in seeds:
        g = torch.Generator().manual_seed(int(s))
        for i, shape in enumerate(shapes):
            out[i].append(torch.randn(*shape, generator=g, dtype=torch.float64))
    return [torch.stack(x).requires_grad_(True) for x in out]


def _torch_hmm_predictor(torch, O, T, task: str):
    """Batched optimal predictor (seeds, d, ...) of an HMM with column-stochastic O (s, d, k), T (s, k, k)."""
    Phi = O / O.sum(dim=-1, keepdim=True)  # (s, d, k): row j = phi(e_j) (uniform prior, Assumption 5)
    if task == "x2|x1":
        return Phi @ T.transpose(-1, -2) @ O.transpose(-1, -2)
    if task == "x3|x1":
        return Phi @ (T @ T).transpose(-1, -2) @ O.transpose(-1, -2)
    if task == "x2x3|x1":
        return torch.einsum("sji,sai,sbi->sjab", Phi @ T.transpose(-1, -2), O, O @ T)
    raise ValueError(f"task must be one of {_HMM_TASKS}, got {task!r}")


def _check_task(task: str, allowed) -> str:
    targets, given = parse_task(task)
    name = "x" + "x".join(map(str, targets)) + f"|x{given}"
    if name not in allowed:
        raise ValueError(f"task must be one of {allowed}, got {task!r}")
    return name


def hmm_population_loss(model: HMM, candidate: HMM, task: str) -> float:
    """Mean squared difference of the optimal ``task`` predictors of two HMMs over all one-hot inputs (the
    population excess loss of ``candidate``'s predictor on ``model``'s data, up to the input weights)."""
    torch = require("torch", extra="trained")

    task = _check_task(task, _HMM_TASKS)
    f = [
        _torch_hmm_predictor(
            torch,
            torch.tensor(m.O, dtype=torch.float64)[None],
            torch.tensor(m.T, dtype=torch.float64)[None],
            task,
        )
        for m in (model, candidate)
    ]
    return float(torch.mean((f[0] - f[1]) ** 2))


def fit_hmm_population(
    model: HMM,
    task: str,
    *,
    seeds=(0, 1, 2, 3),
    steps: int = 2000,
    lr: float = 0.05,
    references: dict | None = None,
) -> FitResult:
    """E1: fit $(\\hat O,\\hat T)$ to the exact ``task`` predictor of ``model`` (float64, full batch), all seeds at
    once (seed ``s`` draws its initial logits from N(0, 1) with ``torch.Generator`` seeded by ``s``; the seeds'
    losses are separable, so one run on their sum trains each seed independently): 3/4 of the ``steps`` with Adam
    (``lr``) to reach the basin, then 1/4 as L-BFGS iterations (strong-Wolfe line search) for the fast local
    convergence that a deterministic loss allows. ``steps=0`` returns the initialization (the untrained
    baseline)."""
    import time

    torch = require("torch", extra="trained")

    task = _check_task(task, _HMM_TASKS)
    if steps < 0:
        raise ValueError(f"steps must be >= 0, got {steps}")
    if not seeds:
        raise ValueError("need at least one seed")
    d, k = model.O.shape
    perms = _permutation_matrices(torch, k)
    L_O, L_T = _init_logits(torch, seeds, [(d, k), (len(perms),)])
    target = _torch_hmm_predictor(torch, torch.tensor(model.O)[None], torch.tensor(model.T)[None], task)

    def params():
        return torch.softmax(L_O, dim=1), _birkhoff(torch, L_T, perms)

    def losses():
        return ((_torch_hmm_predictor(torch, *params(), task) - target) ** 2).flatten(1).mean(dim=1)

    start = time.perf_counter()
    adam_steps = steps - steps // 4
    if adam_steps:
        opt = torch.optim.Adam([L_O, L_T], lr=lr)
        for _ in range(adam_steps):
            opt.zero_grad()
            losses().sum().backward()
            opt.step()
    if steps // 4:
        _polish(torch, [L_O, L_T], lambda: losses().sum(), steps // 4)
    seconds = time.perf_counter() - start
    with torch.no_grad():
        O, T = params()
        final = losses().numpy()
    fitted = [HMM(o, t, validate=False) for o, t in zip(O.numpy(), T.numpy(), strict=True)]
    return FitResult(fitted, final, _distances(fitted, model, references), seconds)


def _polish(torch, leaves, loss_fn, iters: int) -> None:
    """L-BFGS on a deterministic loss, started where Adam stopped; a step that produces a non-finite loss (the line
    search leaving the basin) is undone."""
    saved = [x.detach().clone() for x in leaves]
    opt = torch.optim.LBFGS(
        leaves,
        lr=1.0,
        max_iter=iters,
        history_size=50,
        line_search_fn="strong_wolfe",
        tolerance_grad=1e-14,
        tolerance_change=1e-20,
    )

    def closure():
        opt.zero_grad()
        loss = loss_fn()
        loss.backward()
        return loss

    try:
        opt.step(closure)
    except ZeroDivisionError:  # torch's cubic interpolation when the bracket collapses at the loss floor
        pass
    with torch.no_grad():
        loss = loss_fn()
        if not torch.isfinite(loss) or loss > closure_start(saved, leaves, loss_fn, torch):
            for x, y in zip(leaves, saved, strict=True):
                x.copy_(y)


def closure_start(saved, leaves, loss_fn, torch) -> float:
    """The loss at the saved parameters (restores the current ones afterwards)."""
    current = [x.detach().clone() for x in leaves]
    with torch.no_grad():
        for x, y in zip(leaves, saved, strict=True):
            x.copy_(y)
        value = loss_fn()
        for x, y in zip(leaves, current, strict=True):
            x.copy_(y)
    return value


def _distances(fitted, model, references) -> dict[str, np.ndarray]:
    refs = {"model": model, **(references or {})}
    return {name: np.array([relabeling_distance(ref, m).error for m in fitted]) for name, ref in refs.items()}


def _torch_ghmm_predictor(torch, M, T, X, task: str):
    """Batched G-HMM predictor: M (s, d, k) unit columns, T (s, k, k), points X (n, d) -> (s, n, d, d)."""
    logits = torch.einsum("nd,sdk->snk", X, M) - 0.5 * (M**2).sum(dim=1)[:, None, :]
    phi = torch.softmax(logits, dim=-1)
    if task == "x1x3|x2":
        A, C, w = M @ T.transpose(-1, -2), M @ T, phi  # E[x1 | h2], E[x3 | h2], P(h2 | x2)
    elif task == "x2x3|x1":
        A, C, w = M, M @ T, phi @ T.transpose(-1, -2)  # E[x2 | h2], E[x3 | h2], P(h2 | x1) = T phi
    else:
        raise ValueError(f"task must be one of {_GHMM_TASKS}, got {task!r}")
    return torch.einsum("sai,sni,sci->snac", A, w, C)


def _ghmm_batch(model: GHMM, rng: np.random.Generator, n: int, task: str):
    """(given points, target outer products) of ``n`` sampled stationary triples."""
    x = sample(model, rng, n, 3)  # (n, 3, d)
    targets, given = parse_task(task)
    y = np.einsum("na,nc->nac", x[:, targets[0] - 1], x[:, targets[1] - 1])
    return x[:, given - 1], y


def ghmm_sample_loss(model: GHMM, candidates, task: str, n: int = 200_000, seed: int = 12345) -> np.ndarray:
    """Empirical squared masked-prediction loss of each candidate G-HMM's optimal ``task`` predictor on ``n``
    held-out triples of ``model`` (the same triples for every candidate)."""
    torch = require("torch", extra="trained")

    task = _check_task(task, _GHMM_TASKS)
    X, Y = (torch.tensor(a) for a in _ghmm_batch(model, np.random.default_rng(seed), n, task))
    M = torch.tensor(np.stack([c.M for c in candidates]))
    T = torch.tensor(np.stack([c.T for c in candidates]))
    with torch.no_grad():
        f = _torch_ghmm_predictor(torch, M, T, X, task)
        return ((f - Y) ** 2).sum(dim=(2, 3)).mean(dim=1).numpy()


def fit_ghmm_samples(
    model: GHMM,
    task: str,
    *,
    seeds=(0, 1, 2, 3, 4, 5, 6, 7),
    steps: int = 1500,
    batch_size: int = 4096,
    lr: float = 0.05,
    data_seed: int = 0,
    references: dict | None = None,
) -> FitResult:
    """E5: fit $(\\hat M,\\hat T)$ (unit-norm means, Birkhoff-mixture transition) to fresh sampled triples of ``model`` with
    the squared loss of ``task`` (Adam with a cosine decay of ``lr`` to 0, float64; all seeds see the same batches, seed ``s`` draws its initial
    logits with ``torch.Generator`` seeded by ``s``). The returned losses are the held-out losses of
    :func:`ghmm_sample_loss`. ``steps=0`` returns the initialization."""
    import time

    torch = require("torch", extra="trained")

    task = _check_task(task, _GHMM_TASKS)
    if steps < 0:
        raise ValueError(f"steps must be >= 0, got {steps}")
    if not seeds:
        raise ValueError("need at least one seed")
    d, k = model.M.shape
    perms = _permutation_matrices(torch, k)
    L_M, L_T = _init_logits(torch, seeds, [(d, k), (len(perms),)])
    norm = 1.0 if model.norm is None else float(model.norm)
    opt = torch.optim.Adam([L_M, L_T], lr=lr)
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=max(steps, 1))
    rng = np.random.default_rng(data_seed)

    def params():
        return norm * L_M / L_M.norm(dim=1, keepdim=True), _birkhoff(torch, L_T, perms)

    start = time.perf_counter()
    for _ in range(steps):
        X, Y = (torch.tensor(a) for a in _ghmm_batch(model, rng, batch_size, task))
        M, T = params()
        loss = ((_torch_ghmm_predictor(torch, M, T, X, task) - Y) ** 2).sum(dim=(2, 3)).mean(dim=1)
        opt.zero_grad()
        loss.sum().backward()
        opt.step()
        sched.step()
    seconds = time.perf_counter() - start
    with torch.no_grad():
        M, T = params()
    fitted = [GHMM(m, t, norm=model.norm, validate=False) for m, t in zip(M.numpy(), T.numpy(), strict=True)]
    return FitResult(
        fitted, ghmm_sample_loss(model, fitted, task), _distances(fitted, model, references), seconds
    )
