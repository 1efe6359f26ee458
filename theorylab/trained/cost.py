r"""Cost and memory of a full-size training on a device, before running it.

The seeds of a training run in stacks of :func:`stack_size` (the harness's CUDA rule, one stack after another). A
stack's step costs $\max(t_{\rm device}, t_{\rm launch}) + t_{\rm host}$ (host sampling serial; with the prefetching
feed it overlaps: $\max$ of all three). $t_{\rm device}$ = model FLOPs / (peak x efficiency) + attention-score
memory traffic (the explicit path writes and reads the ``[S, B, H, T, T]`` scores ~14 times per layer per step,
forward and backward; the fused kernel never materialises them) + kernels x a per-kernel device floor (each kernel
pays its start-up besides its share of the work) + an unstacked LSTM's positions through cuDNN; $t_{\rm launch}$ =
kernels per step x the per-kernel host cost of eager PyTorch. Kernel counts per step (counted on the 19M baseline:
1,681, of which AdamW 816): forward + backward ~6 per parameter tensor + per layer 16 (explicit attention) or 4
(fused); the per-tensor AdamW 8 per tensor, the fused one ~4 in all; clipping 3 per tensor (per-tensor norms) or 1
per tensor (multi-tensor norms). The efficiency constants of :class:`DeviceProfile` are calibrated on an H100
(stated there); measured step times replace the estimates where the run store has them
(:mod:`theorylab.trained.calibration`).

Three harnesses (``code``): ``before`` (eager, per-tensor optimiser, explicit attention, serial host sampling, all
seeds in one stack), ``fused`` (fused attention, fused AdamW, multi-tensor clipping, prefetching feed) and ``after``
(``fused`` plus the whole step captured as a CUDA graph for AdamW trainings, :mod:`theorylab.nn.graphs`). A
captured step costs the host one replay, three batch copies and a rate fill ($5 \times$ the launch cost). Held-out
evaluations (``eval_every``) are eager forwards: per batch, a third of an eager step's kernels or FLOPs. Trainings
that a check loads from another check's checkpoint (:mod:`theorylab.trained.checkpoints`) are not counted again.
"""

from __future__ import annotations

from dataclasses import dataclass

CODES = (
    "before",
    "fused",
    "after",
)  # the harness before the CUDA fast paths, with them, and with CUDA graphs
GRAPH_HOST_LAUNCHES = 5  # host work of a replay: the graph launch, three batch copies, the learning-rate fill


@dataclass(frozen=True)
class DeviceProfile:
    """A device for the cost model: dense bf16 peak, memory bandwidth, usable memory, and the efficiency constants
    calibrated on one H100 80GB HBM3 (2026-11-27, torch 2.11; ``docs/gpu.md``):

    - ``matmul_efficiency`` 0.08: the fraction of peak that a training step of a model of width >= 512 reaches on
      its model FLOPs, kernel floors aside (smaller widths scale it down). The 19M baseline's single seed took
      12.2-16.3 ms per step (MFU 0.062-0.083); 0.08 plus its ~770 kernels at ``graph_kernel_s`` gives 14.2 ms. (It
      was 0.55, an assumption: 8-12x optimistic.)
    - ``vmap_sdpa_efficiency`` 0.65: a stack of more than one seed whose attention is the fused kernel reaches this
      fraction of the single-seed efficiency: 8 stacked 19M seeds took 152.8 ms against 8 x 12.2 on one machine
      (0.64), stacks of 2 took 47.6 ms against 2 x 16.3 on another (0.68). Stacks on the explicit path pay no such
      penalty: 8 stacked seeds with explicit attention took 131.9 ms, the model gives 130.
    - ``graph_kernel_s`` 2 µs: device time per kernel of a replayed CUDA graph, added to the arithmetic; the
      single-seed Dyck LM of the verifier (6 layers, d = 512, 1,024 tokens per step) took 2.99 ms, the model gives
      2.95 with it.
    - ``launch_s`` 28 µs: host time per kernel of an eager step (Python dispatch and autograd included): the
      harness before the fast paths took 43.2 ms (47.5 in a second run) for the 19M single seed's 1,544 kernels
      (the model's count; 1,681 counted on the CPU), launch-bound; the model gives 43.9.
    - ``cudnn_position_s`` 6 µs: one position of one LSTM layer through cuDNN, forward and backward (~3 kernels
      at the graph floor; an assumption: no unstacked LSTM training has been timed on a GPU yet).
    """

    name: str
    peak_flops: float
    mem_bandwidth: float
    memory_bytes: float
    launch_s: float = 28e-6
    matmul_efficiency: float = 0.08
    vmap_sdpa_efficiency: float = 0.65
    host_cores: int = 16
    graph_kernel_s: float = 2e-6
    cudnn_position_s: float = 6e-6


DEVICES: dict[str, DeviceProfile] = {
    "h100-sxm": DeviceProfile("NVIDIA H100 SXM", 989e12, 3.35e12, 80e9),
    "h100-pcie": DeviceProfile("NVIDIA H100 PCIe", 756e12, 2.0e12, 80e9),
    "h200": DeviceProfile("NVIDIA H200", 989e12, 4.8e12, 141e9),
    "a100": DeviceProfile("NVIDIA A100", 312e12, 2.0e12, 80e9),
}


def profile_for(device: str) -> DeviceProfile:
    """``cuda`` means an H100 SXM (989 TFLOP/s); a key of :data:`DEVICES` or a CUDA device name picks another."""
    key = device.lower()
    if key in ("cuda", "gpu"):
        return DEVICES["h100-sxm"]
    if key in DEVICES:
        return DEVICES[key]
    for k, prof in DEVICES.items():
        if prof.name.lower() in key or k.replace("-", " ") in key:
            return prof
    if "h100" in key:
        return DEVICES["h100-pcie" if "pcie" in key else "h100-sxm"]
    raise ValueError(f"unknown device {device!r}; known: cuda, {', '.join(DEVICES)}")


def _model_shape(config) -> dict:
    """Parameter tensors, parameters and layers of ``config``'s model, built on the meta device (no memory)."""
    from theorylab._extras import require

    torch = require("torch", extra="trained")
    from theorylab.nn.models import _BACKEND

    with torch.device("meta"):
        model = config.build(0)
    params = [p for p in model.parameters()]
    inner = getattr(config, "config", config)
    return {
        "tensors": len(params),
        "trainable_tensors": sum(p.requires_grad for p in params),
        "params": sum(p.numel() for p in params),
        "layers": getattr(inner, "n_layers", 1),
        "heads": getattr(inner, "n_heads", 0),
        "d_model": getattr(inner, "d_model", getattr(inner, "hidden", getattr(inner, "d_hidden", 512))),
        "transformer": type(inner).__name__ == "TransformerConfig",
        "lstm": type(inner).__name__ == "LSTMConfig",
        "fused_ok": type(inner).__name__ == "TransformerConfig"
        and _BACKEND["mode"] != "explicit"
        and inner.attention == "softmax"
        and inner.pos != "alibi"
        and not inner.uniform_attention
        and type(config).__name__ != "AttentionSharpening",
    }


def _flops_per_token(config, T: int, params: int) -> float:
    fpt = getattr(config, "flops_per_token", None)
    return float(fpt(T)) if callable(fpt) else 6.0 * params


def kernels_per_step(shape: dict, T: int, code: str, clip: bool, optimizer: str, cudnn: bool = False) -> int:
    """Kernel launches of one training step (see the module docstring for the counts). ``cudnn``: an unstacked
    LSTM whose recurrence is one ``torch.lstm`` call per step (its positions run inside cuDNN, counted apart)."""
    fused = code in ("fused", "after")
    n, L = shape["tensors"], shape["layers"]
    k = 6 * n + 20
    if shape["transformer"]:
        k += L * (4 if fused and shape["fused_ok"] else 16)
    if shape["lstm"]:
        k += 8 if cudnn else 12 * T * L  # weight casts and the cuDNN calls, or the loop over positions
    per_opt = 8 if optimizer == "adamw" else 3
    k += 4 if fused else per_opt * shape["trainable_tensors"]
    if clip:
        k += (shape["tensors"] + 4) if fused else 3 * shape["tensors"] + 4
    return k


def stack_size(training, code: str = "after") -> int:
    """Seeds per vmapped stack on CUDA: the harness's rule (:func:`theorylab.nn.train.auto_stack_size`) for
    ``fused`` and ``after``; before the fast paths the harness stacked every seed."""
    if code == "before":
        return training.n_seeds
    from theorylab._extras import require
    from theorylab.nn.train import auto_stack_size

    torch = require("torch", extra="trained")
    return auto_stack_size(training.config, training.budget, training.n_seeds, torch.device("cuda"))


def estimate_training(
    training, device: DeviceProfile, code: str = "after", host_sample_s: float = 0.0
) -> dict:
    """Seconds, step time and MFU of ``training`` (a :class:`~theorylab.trained.catalog.Training`) on ``device``
    with the harness ``code`` (see :data:`CODES`). The seeds train in stacks of :func:`stack_size`, one stack after
    another; ``step_ms`` and ``mfu`` are one stack's. ``host_sample_s``: seconds to sample one step's batches of all
    seeds on the host (measured by the caller; serial before, overlapped after)."""
    if code not in CODES:
        raise ValueError(f"code must be one of {CODES}, got {code!r}")
    b = training.budget
    shape = _model_shape(training.config)
    S = stack_size(training, code)
    groups = -(-training.n_seeds // S)
    B, T = b.batch_size, b.seq_len
    fpt = _flops_per_token(training.config, T, shape["params"])
    step_flops = fpt * S * B * T
    fused = code in ("fused", "after")
    fused_attention = shape["transformer"] and fused and shape["fused_ok"]
    eff = device.matmul_efficiency * max(min(1.0, shape["d_model"] / 512), 1 / 32)
    if S > 1 and fused_attention:
        eff *= device.vmap_sdpa_efficiency
    compute_s = step_flops / (device.peak_flops * eff)
    traffic_s = 0.0
    if shape["transformer"] and not fused_attention:
        traffic_s = 14 * 4 * S * B * shape["heads"] * T * T * shape["layers"] / device.mem_bandwidth
    cudnn = shape["lstm"] and fused and S == 1
    rnn_s = T * shape["layers"] * device.cudnn_position_s if cudnn else 0.0
    kernels = kernels_per_step(shape, T, code, b.grad_clip is not None, b.optimizer, cudnn)
    eager_launch_s = kernels * device.launch_s
    graph = code == "after" and b.optimizer == "adamw"
    launch_s = GRAPH_HOST_LAUNCHES * device.launch_s if graph else eager_launch_s
    floor_s = kernels * device.graph_kernel_s
    device_s = compute_s + traffic_s + rnn_s + floor_s  # each kernel: its start-up plus its share of the work
    host_sample_s *= S / training.n_seeds  # one stack's batches
    if fused:  # seeds sampled in parallel threads (half efficiency: the GIL), overlapped with the device
        host_sample_s /= max(1.0, min(S, device.host_cores) / 2)
        step_s = max(device_s, launch_s, host_sample_s)
    else:
        step_s = max(device_s, launch_s) + host_sample_s
    steps = b.steps * training.repeats
    evals = (b.steps // b.eval_every) * b.eval_batches * training.repeats if b.eval_every else 0
    eval_s = groups * evals * max((compute_s + traffic_s) / 3, eager_launch_s / 3)
    return {
        "label": training.label,
        "steps": steps,
        "stack": S,
        "groups": groups,
        "step_ms": 1e3 * step_s,
        "seconds": groups * steps * step_s + eval_s,
        "eval_seconds": eval_s,
        "flops": step_flops * steps * groups,
        "mfu": step_flops / step_s / device.peak_flops,
        "bound": max(
            ("compute", compute_s),
            ("attention traffic", traffic_s),
            ("cuDNN recurrence", rnn_s),
            ("graph kernels" if graph else "kernels", floor_s),
            ("launches", launch_s),
            ("host", host_sample_s),
            key=lambda kv: kv[1],
        )[0],
        "memory_bytes": memory_estimate(training, code, shape),
    }


def memory_estimate(training, code: str = "after", shape: dict | None = None) -> float:
    """Peak device bytes of a training (its largest stack, :func:`stack_size`), from the meta-device model: fp32
    weights, gradients and two AdamW moments (16 bytes per parameter per seed) plus bf16 activations kept for
    backward. Transformers: per token and layer 34 d + 5 H T bytes (Korthikanti et al. 2022; the 5 H T score term
    vanishes with the fused kernel); other models: 2 x 4 x 8 widths per token."""
    shape = shape or _model_shape(training.config)
    b = training.budget
    S, B, T = stack_size(training, code), b.batch_size, b.seq_len
    weights = 16 * shape["params"] * S
    d, H, L = shape["d_model"], shape["heads"], shape["layers"]
    if shape["transformer"]:
        per_token = L * (34 * d + (0 if code in ("fused", "after") and shape["fused_ok"] else 5 * H * T))
    else:
        per_token = 64 * d * max(L, 1)
    return float(weights + per_token * S * B * T)


def estimate_check(trainings, device: DeviceProfile, code: str = "after", host_seconds: float = 0.0,
                   host_sample=None) -> dict:  # fmt: skip
    """Sum of :func:`estimate_training` over a check's trainings, plus its host work."""
    host_sample = host_sample or {}
    rows = [
        estimate_training(t, device, code, _host_for(host_sample.get(t.label, 0.0), code)) for t in trainings
    ]
    train_s = sum(r["seconds"] for r in rows)
    return {
        "trainings": rows,
        "train_seconds": train_s,
        "host_seconds": host_seconds,
        "seconds": train_s + host_seconds,
        "flops": sum(r["flops"] for r in rows),
        "memory_bytes": max((r["memory_bytes"] for r in rows), default=0.0),
    }


def _host_for(measured, code: str) -> float:
    """The host seconds of ``code``: a (per-seed loop, vectorised) pair picks the vectorised sampler for "after"."""
    if isinstance(measured, tuple):
        return measured[1] if code == "after" else measured[0]
    return float(measured)


def host_sample_seconds(training, reps: int = 2, vectorised: bool = True) -> float:
    """Seconds this machine's host takes to sample one step's batches (all seeds): the numpy sampler, measured;
    ``vectorised``: through the task's multi-seed ``sample_batches`` where it has one (else the per-seed loop)."""
    import time

    import numpy as np

    b = training.budget
    if b.fixed_dataset is not None:
        return 0.0  # minibatches are index draws from a dataset sampled once
    rng = np.random.default_rng(0)
    best = float("inf")
    for _ in range(reps):
        t0 = time.perf_counter()
        if vectorised and hasattr(training.task, "sample_batches"):  # the multi-seed sampler the feed uses
            training.task.sample_batches([rng] * training.n_seeds, b.batch_size, b.seq_len)
        else:
            for _ in range(training.n_seeds):
                training.task.sample_batch(rng, b.batch_size, b.seq_len)
        best = min(best, time.perf_counter() - t0)
    return best
