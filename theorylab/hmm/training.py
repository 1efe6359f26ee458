"""Masked-prediction tasks on HMM samples for the training harness, and the read-out of trained predictors.

``MaskedPredictionTask(model, "x2x3|x1")`` samples stationary sequences and presents the given token as input
and the target tokens as one class $x_{t_2}d+x_{t_3}$ (loss ``"ce"``): the cross-entropy minimizer is the
conditional pmf, i.e. exactly the optimal squared-loss predictor $E[e_{x_2}\\otimes e_{x_3}\\mid x_1]$ of eq.
(2.35). Every position of a ``[B, T]`` batch is an independent sample (the predictor sees one token). This
module imports torch only inside the functions that need it.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from theorylab._extras import require
from theorylab.hmm.compare import relabeling_distance
from theorylab.hmm.models import HMM
from theorylab.hmm.predictors import optimal_predictor, parse_task
from theorylab.hmm.recovery import recover_from_predictor
from theorylab.hmm.sampling import sample

__all__ = [
    "MaskedPredictionTask",
    "network_predictor",
    "empirical_predictor",
    "learned_predictors",
    "ReadoutResult",
    "readout_errors",
    "triple_readout_experiment",
]


@dataclass(frozen=True)
class MaskedPredictionTask:
    """The task ``targets | given`` on samples of the discrete ``model`` (Task protocol of theorylab.nn)."""

    model: HMM
    task: str
    name: str = field(init=False)
    vocab_size: int = field(init=False)
    n_outputs: int = field(init=False)
    loss: str = "ce"

    def __post_init__(self) -> None:
        if not isinstance(self.model, HMM):
            raise TypeError("MaskedPredictionTask needs a discrete HMM")
        targets, given = parse_task(self.task)
        object.__setattr__(self, "name", f"hmm[{self.task}]")
        object.__setattr__(self, "vocab_size", self.model.d)
        object.__setattr__(self, "n_outputs", self.model.d ** len(targets))

    def encode(self, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(given token, target class) for sequences ``x`` of shape (n, L)."""
        targets, given = parse_task(self.task)
        cls = np.zeros(x.shape[0], dtype=np.int64)
        for t in targets:
            cls = cls * self.model.d + x[:, t - 1]
        return x[:, given - 1].astype(np.int64), cls

    def sample_batch(self, rng: np.random.Generator, batch: int, T: int):
        from theorylab.nn.tasks import Batch

        targets, given = parse_task(self.task)
        x = sample(self.model, rng, batch * T, max(*targets, given))
        inputs, cls = self.encode(x)
        return Batch(inputs.reshape(batch, T), cls.reshape(batch, T), np.ones((batch, T), dtype=bool))


def network_predictor(net, d: int, n_targets: int) -> np.ndarray:
    """The predictor array ``f[j] = softmax(net(j))`` reshaped to ``(d,) * (1 + n_targets)``."""
    torch = require("torch", extra="trained")

    with torch.no_grad():
        out = net(torch.arange(d, dtype=torch.long).reshape(d, 1)).float()
    p = torch.softmax(out[:, 0, :], dim=-1).cpu().numpy().astype(float)
    return p.reshape((d,) * (1 + n_targets))


def empirical_predictor(task: MaskedPredictionTask, inputs: np.ndarray, classes: np.ndarray) -> np.ndarray:
    """Conditional frequency table of the target class given the input token (the exact-statistics
    estimator)."""
    d = task.model.d
    counts = np.zeros((d, task.n_outputs))
    np.add.at(counts, (inputs.ravel(), classes.ravel()), 1.0)
    counts /= np.maximum(counts.sum(axis=1, keepdims=True), 1.0)
    n_targets = int(round(np.log(task.n_outputs) / np.log(d)))
    return counts.reshape((d,) * (1 + n_targets))


@dataclass(frozen=True)
class ReadoutResult:
    """Per sample size ``n``: errors (max abs entry) of the predictor and of the read-out parameters after
    relabeling, for the trained network (worst over seeds) and for the empirical frequency table."""

    n: int
    predictor_error: float
    emission_error: float
    transition_error: float
    table_predictor_error: float
    table_emission_error: float
    table_transition_error: float
    seconds: float


def readout_errors(model: HMM, W: np.ndarray, task: str = "x2x3|x1") -> tuple[float, float]:
    """Read $(O, T)$ out of the (learned or exact) triple predictor array ``W`` with Jennrich + ALS and return the
    max abs errors (emission, transition) against ``model`` after the best relabeling (inf if the read-out
    fails)."""
    return _readout(W, model, task)


def _readout(W: np.ndarray, model: HMM, task: str) -> tuple[float, float]:
    try:
        rec = recover_from_predictor(W, model.k, task, refine=True, validate=False)
    except (np.linalg.LinAlgError, ValueError):
        return float("inf"), float("inf")
    rel = relabeling_distance(model, rec)
    return rel.emission_error, rel.transition_error


def learned_predictors(
    model: HMM,
    task: str,
    *,
    n: int | None = None,
    steps: int = 300,
    batch_size: int = 2048,
    lr: float = 2e-2,
    hidden: int = 64,
    seeds=(0, 1),
    device: str = "cpu",
) -> tuple[list[np.ndarray], float]:
    """Train a one-hidden-layer MLP on one-hot given tokens with cross-entropy on sampled ``task`` examples
    (``n`` fixed samples per seed, or fresh batches when ``n`` is None; all seeds in one vmapped harness call)
    and return the learned predictor arrays (one per seed) and the training time in seconds."""
    from theorylab.nn.models import MLPConfig
    from theorylab.nn.train import Budget, train

    t = MaskedPredictionTask(model, task)
    n_targets = len(parse_task(task)[0])
    cfg = MLPConfig(
        vocab_size=model.d, n_outputs=t.n_outputs, context=1, d_embed=None, d_hidden=hidden, n_layers=1
    )
    budget = Budget(
        steps=steps,
        batch_size=batch_size if n is None else min(batch_size, int(n)),
        seq_len=1,
        lr=lr,
        schedule="cosine",
        fixed_dataset=None if n is None else int(n),
        eval_batches=0,
    )
    res = train(t, cfg, budget, seeds=seeds, device=device, progress=False)
    return [network_predictor(net, model.d, n_targets) for net in res.models], float(res.seconds)


def triple_readout_experiment(
    model: HMM,
    sizes,
    *,
    task: str = "x2x3|x1",
    steps: int = 300,
    batch_size: int = 2048,
    lr: float = 2e-2,
    hidden: int = 64,
    seeds=(0, 1),
    device: str = "cpu",
) -> list[ReadoutResult]:
    """For each sample size ``n``: train the MLP predictor on ``n`` sampled triples (:func:`learned_predictors`),
    read $(O, T)$ out of the learned predictor with Jennrich + ALS, and compare with the frequency-table
    estimator on the same number of samples (seed 0's fixed dataset)."""
    from theorylab.nn.tasks import sample_fixed_dataset

    t = MaskedPredictionTask(model, task)
    exact = optimal_predictor(model, task)
    results = []
    for n in sizes:
        n = int(n)
        preds, seconds = learned_predictors(
            model,
            task,
            n=n,
            steps=steps,
            batch_size=batch_size,
            lr=lr,
            hidden=hidden,
            seeds=seeds,
            device=device,
        )
        errs = [(float(np.max(np.abs(W - exact))), *_readout(W, model, task)) for W in preds]
        worst = np.max(np.array(errs), axis=0)
        data = sample_fixed_dataset(t, np.random.default_rng([seeds[0], 2]), n, 1)
        table = empirical_predictor(t, data.inputs, data.targets)
        terr = (float(np.max(np.abs(table - exact))), *_readout(table, model, task))
        results.append(ReadoutResult(n, *map(float, worst), *terr, seconds))
    return results
